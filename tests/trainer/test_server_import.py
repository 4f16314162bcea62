"""A server container imports TensorFlow without Keras (server.import_tensorflow): seconds of CPU
at every job start and every replacement. The process still serves, and may import Keras later."""
from __future__ import annotations

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import sys
    from tfhadoop.ports import free_port
    from tfhadoop.trainer import server

    server.import_tensorflow()
    print("loaded", sorted({m.split(".")[0] for m in sys.modules} & {"tf_keras", "keras", "pandas"}))
    port = free_port()
    srv = server.start({"ps": [f"localhost:{port}"]}, "ps", 0, port=port)
    print("target", srv.target)
    import tf_keras  # a later import in the same process is not blocked

    print("keras", type(tf_keras.optimizers.SGD()).__name__)
""")


def test_a_server_imports_tensorflow_without_keras_and_still_serves():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert "loaded []" in lines, done.stdout  # the old `import tensorflow` loaded tf_keras and pandas
    assert any(line.startswith("target grpc://localhost:") for line in lines), done.stdout
    assert "keras SGD" in lines, done.stdout
