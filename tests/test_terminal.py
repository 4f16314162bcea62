"""tests.terminal: a child a test interrupts starts without fork handlers, and Ctrl-C stops it even
when the test process ignores SIGINT (a suite started in the background)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os, signal, subprocess
    from tests.terminal import interruptible
    forks = []
    os.register_at_fork(before=lambda: forks.append(1))
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as under `nohup` or `cmd &`: children inherit it
    child = subprocess.Popen(interruptible("http.server", "--bind", "127.0.0.1", "0"), text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    first = child.stdout.readline()  # "Serving HTTP on ...": it runs, past the launcher
    child.send_signal(signal.SIGINT)
    try:
        rest = child.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        child.kill()
        rest = "(still running 30 s after Ctrl-C) " + child.communicate()[0]
    print("forks", len(forks))
    print("first", first.strip())
    print("rest", rest.replace(chr(10), " | "))
""")


def test_an_interruptible_child_starts_without_fork_handlers_and_stops_on_ctrl_c():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    assert lines["forks"] == "0", "a preexec_fn made CPython fork: gRPC's at-fork handlers would run in the child"
    assert lines["first"].startswith("Serving HTTP on 127.0.0.1"), done.stdout
    # Stopped by Ctrl-C: http.server says so, or (SIGINT landing between its "Serving" line and
    # its try block, as on a busy host) the KeyboardInterrupt ends it with a traceback.
    rest = lines["rest"]
    assert "Keyboard interrupt received" in rest or rest.rstrip(" |").endswith("KeyboardInterrupt"), done.stdout
