"""``tfhadoop status|follow|jobs|logs|kill|stop APP`` for training applications."""
from __future__ import annotations

import json
import sys

from tfhadoop.errors import CommandError


def _client():
    from tfhadoop import hadoop
    from tfhadoop.yarn.client import skein_client

    hadoop.use_cluster()
    return skein_client(log=False)


def _report(client, app_id: str):
    try:
        return client.application_report(app_id)
    except Exception as exc:
        raise CommandError(f"no application {app_id} on this cluster") from exc


def _live(client, app_id: str) -> dict:
    """Progress, workers and containers of a running job from its key-value store."""
    from tfhadoop.trainer import protocol
    from tfhadoop.trainer.follow import kv_value

    try:
        app = client.connect(app_id, wait=False)
    except Exception:  # noqa: BLE001 - the master is not up (yet, or any more)
        return {}
    containers = []
    try:
        # every service of the application: naming one its spec lacks (tensorboard without
        # --tensorboard) makes Skein refuse the whole call
        for c in app.get_containers():
            containers.append({"service": c.service_name, "id": c.id, "yarn": c.yarn_container_id,
                               "host": c.yarn_node_http_address, "state": str(c.state)})
    except Exception:  # noqa: BLE001 - gone meanwhile
        pass
    page, board = app.kv.get(protocol.KV_PAGE), app.kv.get(protocol.KV_TENSORBOARD)
    return {"page": page.decode() if page else None, "tensorboard": board.decode() if board else None,
            "progress": kv_value(app, protocol.KV_PROGRESS), "workers_alive": kv_value(app, protocol.KV_WORKERS_ALIVE),
            "events": kv_value(app, protocol.KV_EVENTS), "containers": containers}  # events: the recent tail


def job_status(client, conf, app_id: str) -> dict:
    """Everything known about a training job, running or finished: YARN's report, the live
    key-value store while it runs, and the durable files of its job directory."""
    from tfhadoop.trainer import jobdir, protocol

    report = _report(client, app_id)
    entry = jobdir.lookup(conf.default_fs, app_id) or {}
    job_dir = entry.get("job_dir")
    out = {"app": app_id, "name": report.name, "state": str(report.state), "final_status": str(report.final_status),
           "queue": report.queue, "diagnostics": report.diagnostics, "job": entry.get("job") or {}, "job_dir": job_dir,
           "events": [], "metrics": None, "result": None, "progress": None, "containers": []}
    if str(report.state) == "RUNNING":
        out.update({k: v for k, v in _live(client, app_id).items() if v})
    if job_dir:
        out["events"] = jobdir.merged(jobdir.events(job_dir, app_id), out["events"] or [])
        metrics = jobdir.metrics(job_dir)
        out["metrics"] = metrics if metrics and metrics.get("app") in (None, app_id) else None
        out["result"] = jobdir.result(job_dir, app_id)
        out["samples"] = jobdir.samples(job_dir, app_id)
        state = None
        if out["progress"] is None and str(report.state) in protocol.FINAL_STATES:
            state = jobdir.latest_state(job_dir)
            if state:
                out["progress"] = {"epoch": state.get("epoch"), "steps": state.get("steps"), "checkpoint": True}
        # the epochs trained (with their eval loss): the metrics of a finished job, else its checkpoint's
        out["history"] = (out["metrics"] or {}).get("epochs") or (state or {}).get("history") or []
    return out


def status(args) -> int:
    if getattr(args, "follow", False):
        return follow_cmd(args)
    from tfhadoop import hadoop
    from tfhadoop.trainer.console import format_event, metrics_lines
    from tfhadoop.trainer.submit import tracking_url

    with _client() as client:
        conf = hadoop.load_conf()
        st = job_status(client, conf, args.app)
        url = tracking_url(client, conf, args.app)
    print(f"{st['app']} {st['name']} {st['state']} {st['final_status']} queue={st['queue']}")
    print(f"tracking URL {url}")
    if st.get("page"):
        print(f"job page {st['page']}")
    if st["job_dir"]:
        job = st["job"]
        print(f"job: model {job.get('model')}, data {job.get('data')}, workers {job.get('workers')}, "
              f"ps {job.get('ps')}; job dir {st['job_dir']}")
        print(f"TensorBoard: tfhadoop tensorboard {st['app']}")
    if st.get("tensorboard"):  # --tensorboard: served by a container of the job while it runs
        print(f"TensorBoard of the job (its container): {st['tensorboard']}")
    p = st["progress"]
    if p:
        if p.get("checkpoint"):
            print(f"progress: last checkpoint at epoch {p['epoch']}, step {p['steps']}")
        else:
            print(f"progress: epoch {p['epoch']}, {p['examples']}/{p['expected']} examples, step {p['steps']}, "
                  f"{p['examples_per_s']} examples/s, workers alive {st.get('workers_alive')}")
    for c in st["containers"]:
        print(f"  {c['service']:6} {c['id']:10} {c['state']:9} {c['yarn']} on {c['host']}")
    from tfhadoop.trainer.resources import latest_resources, lines

    used = latest_resources(st.get("samples") or [])
    if used:
        print("resources (latest sample):")
        for line in lines(used, st["job"]):
            print("  " + line)
    if st["events"]:
        print("events:")
        for e in st["events"]:
            print("  " + format_event(e))
    for line in metrics_lines(st["metrics"]):
        print(line)
    if st["state"] in ("FINISHED", "FAILED", "KILLED"):
        result = st["result"] or {}
        diag = result.get("diagnostics") or st["diagnostics"]
        if diag:
            print(f"diagnostics: {diag}")
    if getattr(args, "html", None):
        from tfhadoop.trainer.report import render

        with open(args.html, "w") as f:
            f.write(render(st))
        print(f"report written to {args.html}")
    return 0


def follow_cmd(args) -> int:
    from tfhadoop import hadoop
    from tfhadoop.trainer import console, jobdir, protocol
    from tfhadoop.trainer.train_cli import follow_to_end

    conf = hadoop.use_cluster()
    entry = jobdir.lookup(conf.default_fs, args.app)
    if not entry:
        raise CommandError(f"{args.app} is not a training job submitted by {protocol.user()} "
                           "(not in the job registry)")
    log = None if args.verbose else console.log_path()
    console.route_logging(args.verbose, log)
    with console.skein_client(args.verbose, log) as client:
        _report(client, args.app)
        return follow_to_end(args.app, entry["job"], client, log)


def jobs(args) -> int:
    """This user's running training jobs, or with ``--all`` every job with its outcome, duration
    and final metrics (``history``); ``--html FILE`` writes the same as a page."""
    from tfhadoop import hadoop
    from tfhadoop.trainer import history
    from tfhadoop.yarn.client import require_yarn_command

    conf = hadoop.use_cluster()
    require_yarn_command()  # before the registry on HDFS: a missing command is the first thing to fix
    with _client() as client:
        def report_of(app_id: str):
            try:
                return client.application_report(app_id)
            except Exception:  # noqa: BLE001 - the RM forgot it (restarted cluster)
                return None

        table = history.rows(conf.default_fs, report_of)
    shown = table if args.all else [r for r in table if not history.finished(r)]
    shown = shown[:args.limit]
    if args.html:
        with open(args.html, "w") as f:
            f.write(history.html_page(shown))
        print(f"wrote {args.html} ({len(shown)} jobs)")
    if not shown:
        print("no training jobs" if args.all or not table else
              f"no running training jobs ({len(table)} finished: tfhadoop jobs --all)")
        return 0
    print(history.text_table(shown))
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
        report = _report(client, args.app)
        if str(report.state) in ("FINISHED", "FAILED", "KILLED"):
            print(f"{args.app} had already finished: {report.state}, final status {report.final_status}")
            return 0
        client.kill_application(args.app)
    print(f"killed {args.app}")
    return 0


def stop(args) -> int:
    """Ask a running job to end after the epoch in progress: it checkpoints, evaluates and
    exports as after its last epoch, and succeeds. A gentler ``kill``: nothing trained is lost."""
    import time

    from tfhadoop.trainer import protocol

    with _client() as client:
        report = _report(client, args.app)
        if str(report.state) in protocol.FINAL_STATES:
            raise CommandError(f"{args.app} has already finished: {report.state}, final status {report.final_status}")
        if str(report.state) != "RUNNING":
            raise CommandError(f"{args.app} is {report.state}: it has not started training; `tfhadoop kill` ends it")
        app = client.connect(args.app, wait=False)
        app.kv[protocol.KV_STOP] = json.dumps({"time": time.time(), "user": protocol.user()}).encode()
    print(f"{args.app}: training ends after the epoch in progress, then evaluates and exports "
          f"(`tfhadoop follow {args.app}` shows it)")
    return 0


def register_status(subparsers) -> None:
    p = subparsers.add_parser("status", help="state, progress and events of a training application")
    p.add_argument("app")
    p.add_argument("--html", metavar="FILE", help="also write the job page (a static HTML report) to FILE")
    p.add_argument("--follow", action="store_true", help="follow the job to its end, as `tfhadoop follow APP`")
    p.set_defaults(func=status)


def register_follow(subparsers) -> None:
    p = subparsers.add_parser("follow", help="follow a training job to its end (Ctrl-C detaches)")
    p.add_argument("app")
    p.set_defaults(func=follow_cmd)


def register_jobs(subparsers) -> None:
    p = subparsers.add_parser("jobs", help="this user's running training jobs (--all: finished ones too), newest first")
    p.add_argument("--all", action="store_true",
                   help="finished jobs too, each with its outcome, duration and final metrics")
    p.add_argument("--html", metavar="FILE", help="also write the list as an HTML page to FILE")
    p.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    p.set_defaults(func=jobs)


def register_logs(subparsers) -> None:
    p = subparsers.add_parser("logs", help="logs of a training application")
    p.add_argument("app")
    p.add_argument("--role", help="only this role's container, e.g. worker:1, ps:0 or chief")
    p.set_defaults(func=logs)


def register_kill(subparsers) -> None:
    p = subparsers.add_parser("kill", help="kill a training application")
    p.add_argument("app")
    p.set_defaults(func=kill)


def register_stop(subparsers) -> None:
    p = subparsers.add_parser("stop", help="end a training job after the epoch in progress (it still evaluates and "
                                           "exports, and succeeds)")
    p.add_argument("app")
    p.set_defaults(func=stop)
