"""``tfhadoop train``: submit a training job (flags or a YAML job spec) and follow it to the end."""
from __future__ import annotations

import argparse
from dataclasses import fields

from tfhadoop.errors import CommandError
from tfhadoop.trainer.spec import REMOVED, JobSettings, JobSpec, default_of, flag

# The flags not made from JobSpec's fields: how the command runs, not what the job is.
RUN_FLAGS = ("spec", "detach", "no_validate")


def spec_flags(parser) -> None:
    """One flag per JobSpec field (``--no-<name>`` for a setting on by default, ``--<name>`` for one
    off by default), with the field's help, type and default: ``spec.py`` is their one source."""
    for f in fields(JobSpec):
        default = default_of(f)
        if isinstance(default, bool):
            if default:
                parser.add_argument(flag("no_" + f.name), dest=f.name, action="store_false", default=None,
                                    help=f"turn off (default on): {f.metadata['help']}")
            else:
                parser.add_argument(flag(f.name), dest=f.name, action="store_true", default=None,
                                    help=f"turn on (default off): {f.metadata['help']}")
            continue
        kind = f.metadata.get("flag_type") or {"int": int, "float": float}.get(str(f.type).split(" |")[0], str)
        shown = f" (default {default})" if isinstance(default, int | float | str) and default is not None else ""
        parser.add_argument(flag(f.name), type=kind, action="append" if isinstance(default, list) else None,
                            default=None, help=f.metadata["help"] + shown)
    for name in REMOVED:  # refused with the reason, not as an unknown flag
        parser.add_argument(flag(name), help=argparse.SUPPRESS)


def register(subparsers) -> None:
    p = subparsers.add_parser("train", help="train a model on YARN (parameter servers + workers)",
                              description=__doc__)
    p.add_argument("spec", nargs="?", help="YAML job spec; flags override its keys")
    spec_flags(p)
    p.add_argument("--detach", action="store_true", help="print the application id and return")
    p.add_argument("--no-validate", action="store_true",
                   help="skip the submit-time model check (import, build, one forward pass on a batch)")
    p.set_defaults(func=run)


def job_from_args(args) -> JobSettings:
    """The YAML spec's keys, overridden by the flags given, checked."""
    data = {}
    if args.spec:
        import yaml

        with open(args.spec) as f:
            data = {k.replace("-", "_"): v for k, v in (yaml.safe_load(f) or {}).items()}
    for name in [f.name for f in fields(JobSpec)] + list(REMOVED):
        if getattr(args, name, None) is not None:
            data[name] = getattr(args, name)
    missing = [k for k in ("model", "data", "checkpoint_dir", "export_dir") if not data.get(k)]
    if missing:
        raise CommandError("missing " + ", ".join(flag(k) for k in missing))
    return JobSpec.from_dict(data)


def run(args) -> int:
    from dataclasses import asdict

    from tfhadoop import hadoop
    from tfhadoop.trainer import console
    from tfhadoop.trainer.submit import submit, tracking_url
    from tfhadoop.trainer.validate import validate_job
    from tfhadoop.yarn.client import require_yarn_command

    job = job_from_args(args)
    conf = hadoop.use_cluster()
    require_yarn_command()  # the submit needs it: said before the checks, which take a while
    log = None if args.verbose else console.log_path()
    console.route_logging(args.verbose, log)
    with console.stderr_to(log):  # TensorFlow's and Java's start-up lines, unless -v
        # The checks first: a mistake is reported before the Skein driver (a JVM) even starts.
        job, manifest = validate_job(job, conf, model=not args.no_validate, notice=lambda text: print(text, flush=True))
        client = console.skein_client(args.verbose, log)
    with client:  # one driver for submit and follow
        with console.stderr_to(log):
            app_id = submit(job, client=client, manifest=manifest)
        print(f"application {app_id}\ntracking URL {tracking_url(client, conf, app_id)}", flush=True)
        if args.detach:
            print(f"detached: tfhadoop follow {app_id} | status {app_id} | kill {app_id}")
            return 0
        return follow_to_end(app_id, asdict(job), client, log)


def follow_to_end(app_id: str, job: dict, client, log: str | None) -> int:
    """Follow with the console display; Ctrl-C detaches (the job keeps running); the summary.
    ``job``: the job's record (``asdict`` of its settings, or a registry entry's, any version)."""
    from tfhadoop.trainer import console
    from tfhadoop.trainer.follow import follow

    display = console.Display(job)
    try:
        state = follow(app_id, job["checkpoint_dir"], client=client, display=display)
    except KeyboardInterrupt:
        display.close()
        print(f"\ndetached from {app_id}; it keeps running: tfhadoop follow {app_id} | kill {app_id}")
        return 0
    return console.summary(state, job, app_id, log)
