"""Child processes of the master and of an allreduce worker: started without fork handlers, and
gone when their parent dies.

Both parents hold gRPC channels (Skein's client) and threads that may be inside gRPC at any
moment. ``fork()`` runs gRPC's ``pthread_atfork`` handlers, and a child forked while another
thread is in gRPC can abort before its ``exec`` (a CI run saw "coordinator exited with -6").
CPython starts a child without ``fork()`` (vfork/exec, no fork handlers) unless it is given a
``preexec_fn``; so the child, not a ``preexec_fn``, asks the kernel to kill it with its parent
(``PR_SET_PDEATHSIG``), first thing, and exits if its parent already changed (the parent died
between the spawn and the ``prctl``).
"""
from __future__ import annotations

import os
import signal
import subprocess

from tfhadoop.trainer import protocol

PR_SET_PDEATHSIG = 1


def spawn(argv: list[str], env: dict | None = None, **popen) -> subprocess.Popen:
    """Start ``argv`` (a child that calls ``die_with_parent`` first) as a child of this process."""
    env = dict(os.environ if env is None else env)
    env[protocol.ENV_PARENT_PID] = str(os.getpid())
    return subprocess.Popen(argv, env=env, **popen)


def die_with_parent() -> None:
    """In a child started by ``spawn``: SIGKILL when the parent dies (Linux); exit now if it already has."""
    parent = os.environ.pop(protocol.ENV_PARENT_PID, None)
    if parent is None:
        return  # not started by spawn (a test, a user): nothing to follow
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the coordinator's own parent check remains
        pass
    if os.getppid() != int(parent):
        os._exit(1)


# Signals a process gets from its own fault (TensorFlow's C++ runtime), not from a kill.
CRASH_SIGNALS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT)


def exit_error(what: str, returncode: int, where: str = "") -> dict:
    """The error of a child that ended with ``returncode`` and left no error of its own: a
    NATIVE_CRASH_ERROR when a crash signal killed it (the master restarts it once from the
    checkpoint: the same crash twice in a row fails the job), else "unknown"."""
    crashed = -returncode in CRASH_SIGNALS  # Signals are ints: -11 is SIGSEGV's
    return {"type": protocol.NATIVE_CRASH_ERROR if crashed else "unknown",
            "message": f"{what} {exit_description(returncode)}{where}"}


def exit_description(returncode: int) -> str:
    """``exited with 3`` or ``killed by SIGABRT``: a child's end in words."""
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exited with {returncode}"
