"""Children of the master and of allreduce workers: started without fork handlers (gRPC's can
abort a forked child), and killed by the kernel when their parent dies."""
import os
import signal
import subprocess
import sys
import textwrap
import time

from tfhadoop.trainer import children, protocol

SLEEPER = [sys.executable, "-c", "from tfhadoop.trainer.children import die_with_parent; "
           "die_with_parent(); import time; time.sleep(60)"]


def run_script(code: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=60, **kw)


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


def test_spawn_runs_no_fork_handlers():
    """A ``preexec_fn`` would make CPython fork (running every at-fork handler, gRPC's included)."""
    done = run_script("""
        import os, sys
        from tfhadoop.trainer import children
        forks = []
        os.register_at_fork(before=lambda: forks.append(1))
        child = children.spawn([sys.executable, "-c", "pass"])
        assert child.wait() == 0
        print("forks", len(forks))
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["forks", "0"]


def test_child_dies_with_its_parent():
    done = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import os, signal, sys, time
        from tfhadoop.trainer import children
        child = children.spawn({SLEEPER!r})
        print(child.pid, flush=True)
        time.sleep(2)  # the child's die_with_parent has run
        os.kill(os.getpid(), signal.SIGKILL)
    """)], stdout=subprocess.PIPE, text=True)
    assert done.stdout is not None
    child = int(done.stdout.readline())
    assert done.wait(timeout=30) == -signal.SIGKILL
    deadline = time.time() + 10
    while not gone(child) and time.time() < deadline:
        time.sleep(0.1)
    try:
        assert gone(child), "the child outlived its parent"
    finally:
        if not gone(child):
            os.kill(child, signal.SIGKILL)


def test_child_of_a_parent_already_gone_exits():
    env = {**os.environ, protocol.ENV_PARENT_PID: "1" if os.getppid() != 1 else "2"}
    assert subprocess.run(SLEEPER, env=env, timeout=30).returncode == 1


def test_child_not_started_by_spawn_runs_on():
    env = {k: v for k, v in os.environ.items() if k != protocol.ENV_PARENT_PID}
    code = "from tfhadoop.trainer.children import die_with_parent; die_with_parent(); print('ran')"
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=30).stdout == "ran\n"


def test_exit_description_names_the_signal():
    assert children.exit_description(-6) == "killed by SIGABRT"
    assert children.exit_description(-9) == "killed by SIGKILL"
    assert children.exit_description(3) == "exited with 3"


def test_exit_error_calls_a_crash_signal_a_native_crash_and_anything_else_unknown():
    assert children.exit_error("coordinator", -11) == {"type": "NativeCrash",
                                                       "message": "coordinator killed by SIGSEGV"}
    assert children.exit_error("coordinator", -6, " (see its log)")["message"] == "coordinator killed by SIGABRT (see its log)"
    assert children.exit_error("coordinator", -9)["type"] == "unknown"  # a kill: the OOM killer, a user
    assert children.exit_error("coordinator", 1)["type"] == "unknown"
