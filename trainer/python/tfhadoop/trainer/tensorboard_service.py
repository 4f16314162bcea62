"""``--tensorboard``: TensorBoard as a container of the job (a Skein service of its own).

The container runs ``python -m tfhadoop.trainer.tensorboard_service``: TensorBoard on
``<checkpoint dir>/tensorboard`` started as ``tfhadoop tensorboard`` starts it
(``tensorboard_cli.start``: the tfhdfs plugin, so it reads HDFS with the application's delegation
tokens, which YARN gives every container of the application as it gives the roles), its URL
published under ``protocol.KV_TENSORBOARD`` for the job page and ``status``. Its heartbeat thread
publishes what it uses (``res/tensorboard/0``) like a role's.

It is not a training role: no slot, no replacement, no hang detection, and its loss never fails
the job (``allow_failures``). The master only watches it (:class:`TensorBoardWatch`): its URL once
it serves (``tensorboard_up``) and its end while the job runs (``tensorboard_lost``, saying that
training goes on and how to look at the same files without it).
"""
from __future__ import annotations

import os
import sys

from tfhadoop.trainer import protocol

SERVICE = protocol.TENSORBOARD_SERVICE
ENDED_STATES = ("FAILED", "KILLED", "SUCCEEDED")


def service(job, env: dict, files: dict, job_file: str):
    """The Skein service: one instance, started with the application, never restarted; it ships
    ``job.json`` (where the event files are) and the job's environment and code."""
    import skein

    from tfhadoop.trainer.spec import mebibytes

    return skein.Service(instances=1, max_restarts=0, allow_failures=True, env=env,
                         script=f"{job.python} -m tfhadoop.trainer.tensorboard_service",
                         files={**files, protocol.JOB_FILE: skein.File(source=job_file, type="file")},
                         resources=skein.Resources(memory=mebibytes(job.tensorboard_memory), vcores=1))


class TensorBoardWatch:
    """The job master's view of the TensorBoard container: events only, never a state of the job.
    ``enabled``: the job asked for it (``--tensorboard``); otherwise every call does nothing."""

    def __init__(self, app, events, enabled: bool):
        self.app, self.events, self.enabled = app, events, enabled
        self.url: str | None = None
        self.seen: set[str] = set()  # ended containers already reported

    def observe(self) -> None:
        """One look, each round of the master: a new URL is ``tensorboard_up``; the container
        ended is ``tensorboard_lost`` (its URL withdrawn from the key-value store)."""
        if not self.enabled:
            return
        try:
            raw = self.app.kv.get(protocol.KV_TENSORBOARD)
            ended = [c for c in self.app.get_containers(services=[SERVICE], states=list(ENDED_STATES))
                     if getattr(c, "service_name", SERVICE) == SERVICE and c.id not in self.seen]
        except Exception as exc:  # noqa: BLE001 - TensorBoard is not worth a failed round; next round looks again
            print(f"cannot look at the TensorBoard container: {exc}", flush=True)
            return
        if raw and raw.decode() != self.url and not ended:
            self.url = raw.decode()
            self.events.add(protocol.EventKind.TENSORBOARD_UP, role=SERVICE, url=self.url)
        for c in ended:
            self.seen.add(c.id)
            self.app.kv.discard(protocol.KV_TENSORBOARD)
            self.url = None
            self.events.add(protocol.EventKind.TENSORBOARD_LOST, role=SERVICE, container=c.id,
                            yarn_container=c.yarn_container_id, state=str(c.state), diagnostics=c.exit_message,
                            note="not a training role: training goes on without TensorBoard (not restarted); "
                                 "`tfhadoop tensorboard APP` serves the same event files, `tfhadoop logs APP` "
                                 "shows why it ended")


def serve(app, job) -> str:
    """Start TensorBoard on ``job``'s event files (none yet is fine: it reads them as the
    coordinator writes them), publish its URL and, from a heartbeat thread, what this container
    uses; the URL. Raises CommandError (TensorBoard not installed, no port)."""
    from tfhadoop.trainer.role import heartbeat, node_host
    from tfhadoop.trainer.tensorboard_cli import start

    container = os.environ.get(protocol.ENV_SKEIN_CONTAINER_ID, "")
    heartbeat(app, protocol.kv_heartbeat(SERVICE, 0), container, protocol.HEARTBEAT_S,
              protocol.kv_resources(SERVICE, 0))
    logdir = protocol.job_file(job.checkpoint_dir, protocol.TENSORBOARD_DIR)
    url = start(logdir, "0.0.0.0", 0, public_host=node_host())
    app.kv[protocol.KV_TENSORBOARD] = url.encode()
    print(f"TensorBoard of {logdir} at {url}", flush=True)
    return url


def main() -> int:
    import threading

    import skein

    from tfhadoop.errors import CommandError
    from tfhadoop.trainer.spec import JobSettings

    protocol.tf_environment()
    job = JobSettings.load()
    app = skein.ApplicationClient.from_current()
    try:
        serve(app, job)
    except CommandError as exc:  # TensorBoard missing from the containers' environment, ...
        print(f"tensorboard: {exc}", file=sys.stderr, flush=True)
        return 1
    threading.Event().wait()  # serves until the application ends (YARN kills the container)
    return 0


if __name__ == "__main__":
    sys.exit(main())
