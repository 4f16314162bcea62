"""Child processes that a test interrupts with Ctrl-C (SIGINT) as a user at a terminal would.

A suite started in the background (``cmd &`` in a script, nohup) has SIGINT ignored, children
inherit that, and Python then installs no KeyboardInterrupt: the child would go on after the test's
Ctrl-C (seen: `tfhadoop tensorboard` still serving 30 s after it). The child restores it itself,
first thing. A ``preexec_fn`` doing it would make CPython ``fork()`` the test process, whose gRPC
threads (Skein clients, TensorFlow) are in flight: gRPC's at-fork handlers then ran in the child
and aborted it before its ``exec`` (a CI run saw `cluster up` end -6 with "Epoll1Poller ...
epoll_wait error: Bad file descriptor"). Without one, CPython starts it with vfork/exec and no
fork handlers, as trainer/children.py does for the master's children."""
from __future__ import annotations

import sys

# Run as `python -c _LAUNCH module args...`: Ctrl-C raises KeyboardInterrupt, then `python -m module args...`.
_LAUNCH = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
           "sys.argv = sys.argv[1:]; runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)")


def interruptible(module: str, *args: str) -> list[str]:
    """The argv of ``python -m module args...`` that Ctrl-C interrupts, whatever this process ignores."""
    return [sys.executable, "-c", _LAUNCH, module, *args]
