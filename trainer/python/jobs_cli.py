"""``tfhadoop status|logs|kill APP`` for training applications."""
from __future__ import annotations

import json
import sys

from tfhadoop.cli import CommandError


def _client():
    import skein

    from tfhadoop import hadoop

    hadoop.use_cluster()
    return skein.Client()


def status(args) -> int:
    from tfhadoop import hadoop

    with _client() as client:
        try:
            report = client.application_report(args.app)
        except Exception as exc:
            raise CommandError(f"no application {args.app}: {exc}") from exc
        print(f"{report.id} {report.name} {report.state} {report.final_status} queue={report.queue}")
        from tfhadoop.trainer.job import tracking_url

        print(f"tracking URL {tracking_url(client, hadoop.load_conf(), args.app)}")
        if str(report.state) == "RUNNING":
            app = client.connect(args.app, wait=False)
            for key in ("progress", "workers_alive", "metrics"):
                if key in app.kv:
                    print(f"{key}: {app.kv[key].decode()}")
            events = json.loads(app.kv["events"].decode()) if "events" in app.kv else []
        else:
            events = []
            if report.diagnostics:
                print(f"diagnostics: {report.diagnostics}")
        for e in events:
            print(json.dumps(e))
    return 0


def logs(args) -> int:
    from tfhadoop.yarn.logs import application_logs

    text = application_logs(args.app)
    if args.role:
        # `yarn logs` prints one block per container; Skein names containers <service>_<n> in the
        # AM log, and each role's output starts with "<role>:<slot> serving".
        role, _, slot = args.role.partition(":")
        blocks = text.split("Container: ")
        wanted = [b for b in blocks if f"{role}:{slot or ''}" in b and " serving at " in b] if role != "chief" else \
            [b for b in blocks if "tfhadoop.trainer.master" in b or "event:" in b]
        text = "Container: " + "Container: ".join(wanted) if wanted else ""
        if not text:
            raise CommandError(f"no logs of {args.role} in {args.app}")
    sys.stdout.write(text)
    return 0


def kill(args) -> int:
    with _client() as client:
        client.kill_application(args.app)
    print(f"killed {args.app}")
    return 0


def register_status(subparsers) -> None:
    p = subparsers.add_parser("status", help="state, progress and events of a training application")
    p.add_argument("app")
    p.set_defaults(func=status)


def register_logs(subparsers) -> None:
    p = subparsers.add_parser("logs", help="logs of a training application")
    p.add_argument("app")
    p.add_argument("--role", help="only this role's container, e.g. worker:1, ps:0 or chief")
    p.set_defaults(func=logs)


def register_kill(subparsers) -> None:
    p = subparsers.add_parser("kill", help="kill a training application")
    p.add_argument("app")
    p.set_defaults(func=kill)
