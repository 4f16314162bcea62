"""`tfhadoop tensorboard` as a user runs it, for the tests: a subprocess whose URL line is waited
for (bounded, with its output as the diagnosis), and TensorBoard's HTTP API read as the browser does."""
from __future__ import annotations

import contextlib
import json
import queue
import signal
import subprocess
import threading
import urllib.parse
import urllib.request

from tests.terminal import interruptible
from tests.waiting import wait_for


@contextlib.contextmanager
def serve(*argv: str, env: dict | None = None, timeout: float = 180):
    """Start ``tfhadoop tensorboard *argv`` (in ``env``); yield the URL it prints. On leaving,
    Ctrl-C (SIGINT) must stop it with status 0 within 30 s."""
    proc = subprocess.Popen(interruptible("tfhadoop", "tensorboard", *argv), env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    err: list[str] = []
    assert proc.stdout is not None and proc.stderr is not None
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()  # type: ignore[union-attr]
    threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True).start()  # type: ignore[arg-type]

    def url():
        with contextlib.suppress(queue.Empty):
            line = lines.get_nowait().strip()
            assert line.startswith("http://"), f"the first line is not the URL: {line!r}; stderr: {''.join(err)[-3000:]}"
            return line
        assert proc.poll() is None, f"tfhadoop tensorboard exited {proc.returncode}: {''.join(err)[-3000:]}"
        return None

    try:
        address = wait_for(url, timeout, "the URL line of tfhadoop tensorboard",
                           diagnose=lambda: f"stderr so far: {''.join(err)[-3000:]}")
        yield address
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0, ''.join(err)[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def get(url: str, path: str, **params):
    """The JSON of ``path`` under TensorBoard's ``url``."""
    query = f"?{urllib.parse.urlencode(params)}" if params else ""
    with urllib.request.urlopen(url.rstrip("/") + path + query, timeout=30) as response:
        return json.loads(response.read())


def tags(url: str) -> dict:
    """{run: {tag, ...}} of the scalars TensorBoard has loaded so far."""
    return {run: set(t) for run, t in get(url, "/data/plugin/scalars/tags").items()}


def scalars(url: str, run: str, tag: str) -> list[tuple[int, float]]:
    """(step, value) of one scalar series, as TensorBoard serves it to its plots."""
    return [(step, value) for _, step, value in get(url, "/data/plugin/scalars/scalars", run=run, tag=tag)]


def wait_loaded(url: str, expected: dict, timeout: float = 120) -> dict:
    """Wait until TensorBoard has loaded every run and tag of ``expected`` ({run: {tag, ...}})."""
    seen: dict = {}

    def loaded():
        seen.update(tags(url))
        return all(want <= seen.get(run, set()) for run, want in expected.items())

    wait_for(loaded, timeout, f"TensorBoard to load {expected}", interval=1.0, diagnose=lambda: f"loaded so far: {seen}")
    return seen
