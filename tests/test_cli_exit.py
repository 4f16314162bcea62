"""How the `tfhadoop` process ends (tfhadoop.cli.run): after a command that loaded TensorFlow it
skips Python's module teardown (~1 s) but not its exit handlers, its output or its exit code."""
from __future__ import annotations

import subprocess
import sys

# A command (cli.main replaced) that prints without flushing, registers an exit handler (as a
# keytab login does for its ticket cache) and leaves an object whose __del__ runs only in the
# interpreter's teardown. "tensorflow" in sys.modules stands for a command that imported it.
_COMMAND = """
import atexit, sys, types
from tfhadoop import cli
handler_file, teardown_file, load = sys.argv[1:4]

class Teardown:
    def __del__(self, _open=open, _path=teardown_file):  # late in the teardown, builtins are gone
        _open(_path, "w").write("module teardown ran")

def command(argv=None):
    global left
    if load == "tensorflow":
        sys.modules["tensorflow"] = types.ModuleType("tensorflow")
    atexit.register(lambda: open(handler_file, "w").write("exit handler ran"))
    left = Teardown()
    print("the command's last line")  # buffered: stdout is a pipe
    return 3

cli.main = command
cli.run()
"""


def _run(tmp_path, load):
    handler, teardown = tmp_path / f"handler-{load}", tmp_path / f"teardown-{load}"
    done = subprocess.run([sys.executable, "-c", _COMMAND, str(handler), str(teardown), load],
                          capture_output=True, text=True, timeout=120)
    return done, handler.exists(), teardown.exists()


def test_after_tensorflow_the_process_skips_teardown_but_keeps_handlers_output_and_code(tmp_path):
    done, handler_ran, teardown_ran = _run(tmp_path, "tensorflow")
    assert (done.returncode, done.stdout) == (3, "the command's last line\n"), done.stderr[-2000:]
    assert handler_ran, "the exit handlers did not run"
    assert not teardown_ran, "Python's module teardown ran: the quick exit was not taken"


def test_without_tensorflow_the_process_exits_as_usual(tmp_path):
    done, handler_ran, teardown_ran = _run(tmp_path, "nothing")
    assert (done.returncode, done.stdout) == (3, "the command's last line\n"), done.stderr[-2000:]
    assert handler_ran and teardown_ran
