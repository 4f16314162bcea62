"""What `tfhadoop train` and `tfhadoop follow` print: one live progress line (a tqdm bar on a
terminal, a line every ``LINE_EVERY_S`` otherwise), each event as it happens, and the end. The
Java, TensorFlow and Skein logs go to a log file named at the end, unless ``-v``."""
from __future__ import annotations

import contextlib
import os
import sys
import time

from tfhadoop.trainer import protocol

LINE_EVERY_S = 15  # without a terminal: a progress line at most this often (and at each epoch's end)
QUIET_EVENTS = {protocol.EventKind.FIRST_PROGRESS}  # timing details: in the log and on the job page, not on the console


def log_path(command: str = "train") -> str:
    """A fresh log file under ~/.tfhadoop/logs for this command's driver and library logs."""
    folder = os.path.join(os.path.expanduser("~"), ".tfhadoop", "logs")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"{command}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log")


def skein_client(verbose: bool, log: str | None):
    """The Skein driver: its Java logs appended to ``log`` (quiet) or on the terminal (``-v``); the
    embedded cluster's shared driver keeps its own log, which ``log`` names.

    Skein opens a ``log=`` path with mode "w", wiping what the command logged before (a second
    driver would wipe the first's), so the driver inherits stdout and stderr pointed at the log."""
    from tfhadoop.yarn.client import shared_driver_log
    from tfhadoop.yarn.client import skein_client as new_client

    with fds_to(log, (1, 2)):
        client = new_client(log=None, log_level="info" if verbose else "warn")
    shared_log = shared_driver_log(client)
    if log and shared_log:  # that driver's Java logs are its own: say where
        with open(log, "a") as out:
            out.write(f"Skein: the embedded cluster's shared driver at {client.address}; its log: {shared_log}\n")
    return client


def route_logging(verbose: bool, log: str | None) -> None:
    """Python library logs (hdfs, skein, tensorflow) to the log file unless ``-v``."""
    import logging

    if verbose or not log:
        return
    root = logging.getLogger()
    for h in list(root.handlers):
        root.removeHandler(h)
    handler = logging.FileHandler(log)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)


def stderr_to(log: str | None):
    """Send file descriptor 2 (TensorFlow's C++ logs, Java warnings) to ``log`` for a while."""
    return fds_to(log, (2,))


@contextlib.contextmanager
def fds_to(log: str | None, fds=(2,)):
    """Append file descriptors ``fds`` (1 stdout, 2 stderr) to ``log`` for a while; processes
    started meanwhile keep writing there. No-op without a log."""
    if not log:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in fds}
    with open(log, "ab") as f:
        for fd in fds:
            os.dup2(f.fileno(), fd)
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        for fd, copy in saved.items():
            os.dup2(copy, fd)
            os.close(copy)


@contextlib.contextmanager
def quiet(verbose: bool, command: str):
    """The whole command quiet unless ``-v``: Python logs and fd 2 (the JVMs started meanwhile
    inherit it, with their log4j console output) to a fresh log file; yields its path (None: -v)."""
    log = None if verbose else log_path(command)
    route_logging(verbose, log)
    with stderr_to(log):
        yield log


def format_event(e: dict) -> str:
    skip = ("event", "time", "cluster", "app", "diagnostics", "seq")
    detail = ", ".join(f"{k}={v}" for k, v in e.items() if k not in skip and v not in (None, "", [], {}))
    diag = f" ({str(e['diagnostics'])[:160]})" if e.get("diagnostics") and e["event"] != protocol.EventKind.FINISHED else ""
    return f"{time.strftime('%H:%M:%S', time.localtime(e.get('time', time.time())))} {e['event']}: {detail}{diag}"


def eta_seconds(p: dict, job: dict) -> float | None:
    rate = p.get("examples_per_s") or 0
    if rate <= 0:
        return None
    if job.get("steps"):
        return max(job["steps"] - p["steps"], 0) * job.get("batch_size", 64) / rate
    epochs = job.get("epochs") or 1
    left = (epochs - p["epoch"]) * p["expected"] - p["examples"]
    return max(left, 0) / rate


def progress_text(p: dict, alive, job: dict) -> str:
    epochs = job.get("epochs")
    eta = eta_seconds(p, job)
    eta_s = f", ETA {int(eta // 60)}:{int(eta % 60):02d}" if eta is not None else ""
    of_epochs = f"/{epochs}" if epochs else ""
    of_steps = f"/{job['steps']}" if job.get("steps") else ""
    return (f"epoch {p['epoch'] + 1}{of_epochs}, step {p['steps']}{of_steps}, {p['examples_per_s']:.0f} examples/s, "
            f"workers {alive if alive is not None else '?'}/{job.get('workers', '?')}{eta_s}")


class Display:
    """Progress and events of one job on ``out``."""

    def __init__(self, job: dict, out=None, tty: bool | None = None):
        self.job, self.out = job, out or sys.stdout
        self.tty = self.out.isatty() if tty is None and hasattr(self.out, "isatty") else bool(tty)
        self.bar, self.last_line, self.last_epoch = None, 0.0, None

    def progress(self, p: dict, alive) -> None:
        text = progress_text(p, alive, self.job)
        if self.tty:
            from tqdm import tqdm

            total = self._total(p)
            if self.bar is None:
                self.bar = tqdm(total=total, file=self.out, unit="ex", leave=False, dynamic_ncols=True,
                                bar_format="{bar:20} {percentage:3.0f}% {postfix}")
            self.bar.total = total
            self.bar.n = min(self._done(p), total)
            self.bar.set_postfix_str(text, refresh=True)
            return
        now = time.monotonic()
        if now - self.last_line >= LINE_EVERY_S or p["epoch"] != self.last_epoch:
            print(text, file=self.out, flush=True)
            self.last_line, self.last_epoch = now, p["epoch"]

    def _total(self, p: dict) -> int:
        if self.job.get("steps"):
            return self.job["steps"]
        return (self.job.get("epochs") or 1) * max(p.get("expected", 1), 1)

    def _done(self, p: dict) -> int:
        if self.job.get("steps"):
            return p["steps"]
        return p["epoch"] * p.get("expected", 0) + p.get("examples", 0)

    def event(self, e: dict) -> None:
        if e.get("event") not in QUIET_EVENTS:
            self.note(format_event(e))

    def note(self, line: str) -> None:
        if self.bar is not None:
            self.bar.write(line, file=self.out)
        else:
            print(line, file=self.out, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def metrics_lines(metrics: dict | None, shown: int = 10) -> list[str]:
    """The training metrics of ``metrics.json`` as `train`, `follow` and `status` print them: the
    mean loss of each epoch (numbered from 1, as the progress line does; the first and last
    ``shown // 2`` of a longer run) and the eval split's metrics."""
    metrics = metrics or {}
    epochs = [e for e in metrics.get("epochs") or [] if e.get("mean_loss") is not None]
    lines = []
    if epochs:
        losses = [f"{e['epoch'] + 1} {e['mean_loss']:.4g}" for e in epochs]
        if len(losses) > shown:
            losses = [*losses[:shown // 2], "...", *losses[-(shown // 2):]]
        lines.append("train loss per epoch: " + ", ".join(losses) + ("" if metrics.get("eval") else " (no eval split)"))
    if metrics.get("eval"):
        lines.append("eval metrics: " + ", ".join(f"{k} {v:.4g}" for k, v in metrics["eval"].items()))
    return lines


def summary(state: dict, job: dict, app_id: str, log: str | None, out=None) -> int:
    """The end of a job: final metrics and where the model, checkpoints and logs are; exit code."""
    out = out or sys.stdout
    ok = state["final_status"] == "SUCCEEDED"
    for line in metrics_lines(state.get("metrics")):
        print(line, file=out)
    where = (f"checkpoints, events.jsonl, metrics.json and tensorboard/ in {job['checkpoint_dir']}\n"
             f"container logs: tfhadoop logs {app_id}" + (f"; client log: {log}" if log else ""))
    for e in state.get("events") or []:  # --mlflow-tracking-uri: where the run is, or why it is not
        if e.get("event") == protocol.EventKind.MLFLOW_LOGGED:
            where += f"\nMLflow run {e.get('url')}"
        elif e.get("event") == protocol.EventKind.MLFLOW_FAILED:
            print(f"warning: the job was not logged to MLflow at {e.get('uri')}: {e.get('error')}", file=sys.stderr)
    if not ok:
        diag = (state.get("result") or {}).get("diagnostics") or state.get("diagnostics")
        print(f"training {state['final_status']} ({state['state']}): {diag}", file=sys.stderr)
        print(where, file=out)
        return 1
    print(f"training SUCCEEDED: SavedModel at {job['export_dir']}\n{where}", file=out)
    return 0
