"""The tfhdfs TensorFlow filesystem plugin on the embedded cluster, through TensorFlow's own APIs."""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
import uuid

import pytest

tf = pytest.importorskip("tensorflow")

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def base(hadoop_cluster):
    """A fresh hdfs://namenode:port/dir for this module, with the plugin registered."""
    import tfhadoop.tfhdfs  # noqa: F401  (registers hdfs://)

    url = hadoop_cluster.hdfs_url(f"/tfhadoop-tests/tfhdfs-{uuid.uuid4().hex[:8]}")
    tf.io.gfile.makedirs(url)
    yield url
    tf.io.gfile.rmtree(url)


def test_register_is_idempotent(base):
    import tfhadoop.tfhdfs as tfhdfs

    tfhdfs.register()
    tfhdfs.register()
    assert tf.io.gfile.isdir(base)


def test_gfile_operations(base):
    d = f"{base}/ops"
    tf.io.gfile.mkdir(d)
    tf.io.gfile.makedirs(f"{d}/a/b/c")
    assert tf.io.gfile.isdir(f"{d}/a/b/c")
    with tf.io.gfile.GFile(f"{d}/f.txt", "w") as f:
        f.write("hello ")
    with tf.io.gfile.GFile(f"{d}/f.txt", "a") as f:  # appendable file
        f.write("world")
    with tf.io.gfile.GFile(f"{d}/f.txt", "rb") as f:
        assert f.read() == b"hello world"
        f.seek(6)
        assert f.read(3) == b"wor"
    st = tf.io.gfile.stat(f"{d}/f.txt")
    assert st.length == 11 and not st.is_directory
    assert abs(st.mtime_nsec / 1e9 - time.time()) < 600
    assert tf.io.gfile.stat(d).is_directory
    assert tf.io.gfile.exists(f"{d}/f.txt") and not tf.io.gfile.exists(f"{d}/nope")
    assert not tf.io.gfile.isdir(f"{d}/f.txt")
    assert sorted(tf.io.gfile.listdir(d)) == ["a", "f.txt"]
    # copy (TensorFlow's default: our read + write), with and without overwrite
    tf.io.gfile.copy(f"{d}/f.txt", f"{d}/g.txt")
    with pytest.raises(tf.errors.AlreadyExistsError):
        tf.io.gfile.copy(f"{d}/f.txt", f"{d}/g.txt")
    with tf.io.gfile.GFile(f"{d}/h.txt", "w") as f:
        f.write("other")
    tf.io.gfile.copy(f"{d}/h.txt", f"{d}/g.txt", overwrite=True)
    assert tf.io.gfile.GFile(f"{d}/g.txt").read() == "other"
    # rename over an existing file replaces it (the checkpoint saver's temp-then-rename)
    tf.io.gfile.rename(f"{d}/f.txt", f"{d}/g.txt", overwrite=True)
    assert tf.io.gfile.GFile(f"{d}/g.txt").read() == "hello world"
    assert not tf.io.gfile.exists(f"{d}/f.txt")
    with pytest.raises(tf.errors.AlreadyExistsError):  # TF checks first without overwrite
        tf.io.gfile.rename(f"{d}/h.txt", f"{d}/g.txt")
    assert sorted(tf.io.gfile.glob(f"{d}/*.txt")) == [f"{d}/g.txt", f"{d}/h.txt"]
    tf.io.gfile.remove(f"{d}/h.txt")
    assert not tf.io.gfile.exists(f"{d}/h.txt")
    walked = {top: (sorted(dirs), sorted(files)) for top, dirs, files in tf.io.gfile.walk(d)}
    assert walked[d] == (["a"], ["g.txt"]) and walked[f"{d}/a/b/c"] == ([], [])
    # paths are cleaned, the NameNode address kept
    assert tf.io.gfile.exists(f"{d}//a/./b/../b/c")
    tf.io.gfile.rmtree(d)
    assert not tf.io.gfile.exists(d)


def test_error_codes_name_the_path(base):
    missing = f"{base}/missing/file"
    cases = [
        (tf.errors.NotFoundError, lambda: tf.io.gfile.GFile(missing, "rb").read()),
        (tf.errors.NotFoundError, lambda: tf.io.gfile.stat(missing)),
        (tf.errors.NotFoundError, lambda: tf.io.gfile.remove(missing)),
        (tf.errors.NotFoundError, lambda: tf.io.gfile.listdir(missing)),
        (tf.errors.NotFoundError, lambda: tf.io.gfile.rmtree(missing)),
        (tf.errors.NotFoundError, lambda: tf.io.gfile.GFile(missing, "w").write("x")),  # no parent
        (tf.errors.NotFoundError, lambda: tf.io.gfile.mkdir(missing)),  # no parent
    ]
    for exc, op in cases:
        with pytest.raises(exc) as info:
            op()
        assert missing in str(info.value), info.value
    tf.io.gfile.mkdir(base)  # TensorFlow's mkdir ignores the AlreadyExists our create_dir reports
    d = f"{base}/errs"
    tf.io.gfile.makedirs(d)
    with tf.io.gfile.GFile(f"{d}/f", "w") as f:
        f.write("x")
    with pytest.raises(tf.errors.NotFoundError, match="errs"):
        tf.io.gfile.listdir(f"{d}/f")  # a file: TensorFlow's listdir asks is_directory first
    with pytest.raises(tf.errors.FailedPreconditionError, match="errs"):
        tf.io.gfile.remove(d)  # a directory
    assert tf.io.gfile.exists(f"{d}/f")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_namenode_is_unavailable_within_seconds(base):
    url = f"hdfs://127.0.0.1:{_free_port()}/x"
    start = time.monotonic()
    with pytest.raises(tf.errors.UnavailableError, match=f"{url}.*refused"):
        tf.io.gfile.exists(url)
    assert time.monotonic() - start < 90  # bounded retry, not hdfs-native's ~175 s default (margin for a slow host)


def test_default_fs_path(base, hadoop_cluster):
    full = f"{base}/default-fs.txt"
    path = full[len(hadoop_cluster.default_fs.rstrip("/")):]
    assert path.startswith("/tfhadoop-tests/")
    with tf.io.gfile.GFile(f"hdfs://{path}", "w") as f:  # hdfs:///tfhadoop-tests/...
        f.write("via fs.defaultFS")
    assert tf.io.gfile.GFile(full).read() == "via fs.defaultFS"
    assert "default-fs.txt" in tf.io.gfile.listdir(f"hdfs://{path.rsplit('/', 1)[0]}")


def test_embedded_cluster_without_hadoop_conf_dir(base, hadoop_cluster):
    """A process with no HADOOP_CONF_DIR reaches the embedded cluster through hdfs:/// and still
    looks embedded to tfhadoop (the import does not export HADOOP_CONF_DIR)."""
    if hadoop_cluster.state_dir is None:
        pytest.skip("external cluster (HADOOP_CONF_DIR)")
    env = {k: v for k, v in os.environ.items() if k not in ("HADOOP_CONF_DIR", "HADOOP_HOME")}
    env["TFHADOOP_STATE_DIR"] = str(hadoop_cluster.state_dir)
    path = base[len(hadoop_cluster.default_fs.rstrip("/")):]
    code = (
        "import os, sys, tensorflow as tf, tfhadoop.tfhdfs\n"
        "assert 'HADOOP_CONF_DIR' not in os.environ\n"
        "print(sorted(tf.io.gfile.listdir('hdfs://' + sys.argv[1])) is not None, tf.io.gfile.isdir('hdfs://' + sys.argv[1]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "True True", out.stderr[-3000:]


@pytest.mark.parametrize("compression", ["", "GZIP"])
def test_tfrecord_write_read(base, compression):
    path = f"{base}/records-{compression or 'none'}.tfrecord"
    records = [os.urandom(i * 131 % 9000) for i in range(2000)] + [os.urandom(5 << 20)]
    with tf.io.TFRecordWriter(path, options=compression or None) as w:
        for r in records:
            w.write(r)
    read = [t.numpy() for t in tf.data.TFRecordDataset(path, compression_type=compression)]
    assert read == records
    # several files in parallel through tf.data's interleave
    ds = tf.data.TFRecordDataset([path, path], compression_type=compression, num_parallel_reads=2)
    assert sum(1 for _ in ds) == 2 * len(records)


def test_checkpoint_and_manager(base):
    v = tf.Variable(tf.range(1000, dtype=tf.float32))
    step = tf.Variable(0, dtype=tf.int64)
    ckpt = tf.train.Checkpoint(v=v, step=step)
    prefix = ckpt.save(f"{base}/ckpt/model")
    v.assign(tf.zeros(1000))
    ckpt.restore(prefix).assert_consumed()
    assert v.numpy()[999] == 999.0

    mgr = tf.train.CheckpointManager(ckpt, f"{base}/managed", max_to_keep=2)
    for i in range(4):
        step.assign(i)
        mgr.save()  # each save renames temp files over the state file
    assert len(mgr.checkpoints) == 2
    step.assign(-1)
    fresh = tf.train.Checkpoint(v=tf.Variable(tf.zeros(1000)), step=tf.Variable(0, dtype=tf.int64))
    fresh.restore(tf.train.latest_checkpoint(f"{base}/managed")).assert_consumed()
    assert int(fresh.step.numpy()) == 3
    names = tf.io.gfile.listdir(f"{base}/managed")
    assert "checkpoint" in names and not any("ckpt-1." in n for n in names), names


def test_saved_model(base):
    class Doubler(tf.Module):
        def __init__(self):
            self.k = tf.Variable(2.0)

        @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        def __call__(self, x):
            return x * self.k

    tf.saved_model.save(Doubler(), f"{base}/saved")
    loaded = tf.saved_model.load(f"{base}/saved")
    assert loaded(tf.constant([1.0, 3.0])).numpy().tolist() == [2.0, 6.0]


def test_summary_writer(base):
    logdir = f"{base}/logs"
    writer = tf.summary.create_file_writer(logdir)
    with writer.as_default():
        for i in range(5):
            # the core summary op (tf.summary.scalar needs TensorBoard, not installed here)
            tf.summary.write("loss", tf.constant(1.0 / (i + 1)), step=i)
    writer.flush()  # hsync: durable, and the NameNode knows the length
    (events,) = tf.io.gfile.glob(f"{logdir}/events.out.tfevents.*")
    assert tf.io.gfile.stat(events).length > 0
    writer.close()  # readers (hdfs-native) see the data of a file once it is closed
    steps = [
        e.step
        for e in tf.compat.v1.train.summary_iterator(events)
        if any(val.tag == "loss" for val in e.summary.value)
    ]
    assert steps == [0, 1, 2, 3, 4]


# --- many threads on one TF_RandomAccessFile: the plugin's table called directly (ctypes
# releases the GIL), which tf.io.gfile cannot do (a GFile has one position).

class _PluginOps(ctypes.Structure):
    _fields_ = [
        ("scheme", ctypes.c_char_p),
        ("fs_abi", ctypes.c_int), ("fs_api", ctypes.c_int), ("fs_size", ctypes.c_size_t),
        ("fs_ops", ctypes.POINTER(ctypes.c_void_p)),
        ("raf_abi", ctypes.c_int), ("raf_api", ctypes.c_int), ("raf_size", ctypes.c_size_t),
        ("raf_ops", ctypes.POINTER(ctypes.c_void_p)),
        ("wf_abi", ctypes.c_int), ("wf_api", ctypes.c_int), ("wf_size", ctypes.c_size_t),
        ("wf_ops", ctypes.c_void_p),
        ("rom_abi", ctypes.c_int), ("rom_api", ctypes.c_int), ("rom_size", ctypes.c_size_t),
        ("rom_ops", ctypes.c_void_p),
    ]


class _PluginInfo(ctypes.Structure):
    _fields_ = [
        ("num_schemes", ctypes.c_size_t),
        ("ops", ctypes.POINTER(_PluginOps)),
        ("alloc", ctypes.c_void_p),
        ("free", ctypes.c_void_p),
    ]


def test_many_threads_read_one_file(base):
    import tfhadoop.tfhdfs as tfhdfs

    data = os.urandom(8 << 20)
    path = f"{base}/shared.bin"
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(data)
    framework = ctypes.CDLL(os.path.join(tf.sysconfig.get_lib(), "libtensorflow_framework.so.2"))
    framework.TF_NewStatus.restype = ctypes.c_void_p
    framework.TF_GetCode.argtypes = [ctypes.c_void_p]
    framework.TF_Message.argtypes = [ctypes.c_void_p]
    framework.TF_Message.restype = ctypes.c_char_p
    plugin = ctypes.CDLL(str(tfhdfs.LIBRARY))
    info = _PluginInfo()
    plugin.TF_InitPlugin(ctypes.byref(info))
    ops = info.ops[0]
    assert ops.scheme == b"hdfs"
    new_raf = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p)(ops.fs_ops[2])
    read = ctypes.CFUNCTYPE(
        ctypes.c_int64, ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_void_p
    )(ops.raf_ops[1])
    cleanup = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(ops.raf_ops[0])
    fs = ctypes.c_void_p(0)
    raf = ctypes.c_void_p(0)
    st = framework.TF_NewStatus()
    new_raf(ctypes.addressof(fs), path.encode(), ctypes.addressof(raf), st)
    assert framework.TF_GetCode(st) == 0, framework.TF_Message(st)
    errors = []

    def worker(seed: int):
        import random

        rnd = random.Random(seed)
        status = framework.TF_NewStatus()
        buf = ctypes.create_string_buffer(1 << 20)
        offset = rnd.randrange(0, len(data) - (4 << 20))
        for i in range(40):
            # half the threads read sequentially (the streaming path), half at random offsets
            if seed % 2 == 0 or i % 3 == 0:
                offset = rnd.randrange(0, len(data))
            n = rnd.randrange(1, 1 << 20)
            got = read(ctypes.addressof(raf), offset, n, buf, status)
            want = data[offset:offset + n]
            code = framework.TF_GetCode(status)
            if got != len(want) or buf.raw[:got] != want or code != (0 if len(want) == n else 11):
                errors.append((seed, offset, n, got, code))
                return
            offset += got
            if offset >= len(data):
                offset = 0

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cleanup(ctypes.addressof(raf))
    assert errors == []


def test_one_gigabyte_file(base):  # ~10 s on the 2-core host: not slow
    path = f"{base}/big.bin"
    chunk = os.urandom(8 << 20)
    want = hashlib.sha256()
    with tf.io.gfile.GFile(path, "wb") as f:
        for i in range(128):  # 1 GiB, each chunk distinct
            piece = i.to_bytes(8, "little") + chunk[8:]
            want.update(piece)
            f.write(piece)
    assert tf.io.gfile.stat(path).length == 1 << 30
    got = hashlib.sha256()
    with tf.io.gfile.GFile(path, "rb") as f:
        while piece := f.read(16 << 20):
            got.update(piece)
        f.seek((1 << 30) - 5)
        assert f.read() == chunk[-5:]
    assert got.hexdigest() == want.hexdigest()
    tf.io.gfile.remove(path)


def test_missing_library_says_run_make_native(base, tmp_path, monkeypatch):
    import tfhadoop.tfhdfs as tfhdfs

    monkeypatch.setattr(tfhdfs, "LIBRARY", tmp_path / "libtfhdfs.so")
    monkeypatch.setattr(tfhdfs, "_registered", False)
    with pytest.raises(ImportError, match="run `make native`"):
        tfhdfs.register()


_READ_THROUGH_RESTART = """
import json, sys, threading, time
import tensorflow as tf, tfhadoop.tfhdfs  # noqa: F401
paths, records = sys.argv[1:-1], int(sys.argv[-1])
passes, errors, reading, back = [], [], threading.Event(), []
def reader(path):  # a fresh open per pass, as a worker's task does; ends after a pass opened once the NameNode is back
    while True:
        opened = time.time()
        try:
            n = sum(1 for _ in tf.data.TFRecordDataset(path))
        except Exception as e:  # noqa: BLE001
            errors.append(f"{type(e).__name__}: {str(e)[:400]}")
            reading.set()  # the test goes on, and fails on the error
            return
        passes.append((opened, n))
        reading.set()
        if back and opened > back[0]:
            return
threads = [threading.Thread(target=reader, args=(p,), daemon=True) for p in paths * 3]
[t.start() for t in threads]
reading.wait()
print("reading", flush=True)
sys.stdin.readline()  # the test's line: the NameNode is back (or the test is gone)
back.append(time.time())
[t.join() for t in threads]
after = sum(opened > back[0] for opened, _ in passes)
print(json.dumps([len(passes), sorted({n for _, n in passes}), after, errors[:3]]))
"""


@pytest.mark.slow
def test_patient_readers_ride_out_a_namenode_restart(base, hadoop_cluster):
    """The trainer's roles (tfhdfs.ride_out_outages) keep reading through a NameNode restart: an
    open while it is down waits in hdfs-native, and one just after, when the NameNode is back in
    safe mode without the DataNode's block report ("SafeModeException: Zero blocklocations", not
    retried by hdfs-native), is retried by the plugin. Readers in a patient process open and read
    their files again and again across the restart: no error, every pass whole. The NameNode stops
    once the readers have read (observed, not timed), and each reader ends with a pass it opened
    after the NameNode came back."""
    if hadoop_cluster.embedded is None:
        pytest.skip("needs the embedded cluster (its NameNode is stopped and started)")
    import tfhadoop.tfhdfs as tfhdfs

    records, paths = 2000, [f"{base}/restart-{i}.tfrecord" for i in range(8)]
    for path in paths:
        with tf.io.TFRecordWriter(path) as w:
            for i in range(records):
                w.write(i.to_bytes(4, "little") * 50)
    outage_s = 10
    env = dict(os.environ, **{tfhdfs.PATIENT_ENV: "1", "TF_CPP_MIN_LOG_LEVEL": "2"})
    proc = subprocess.Popen([sys.executable, "-c", _READ_THROUGH_RESTART, *paths, str(records)], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 180)
        first = proc.stdout.readline() if ready else ""
        assert first.strip() == "reading", f"the readers never read a whole file: {first!r}; " + \
            (proc.stderr.read()[-3000:] if proc.poll() is not None else "still running after 180 s")
        hadoop_cluster.embedded.stop_namenode()
        try:
            time.sleep(outage_s)  # the outage's length: readers open and wait meanwhile
        finally:
            hadoop_cluster.embedded.start_namenode()
        out, err = proc.communicate("back\n", timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    passes, sizes, after, errors = json.loads(out.strip().splitlines()[-1])
    assert errors == [] and sizes == [records], (errors, sizes, err[-2000:])
    assert after >= len(paths) * 3, f"{after} passes opened after the NameNode came back, fewer than the readers"
    retried = err.count("(retrying in")
    print(f"{passes} passes; {retried} reads retried by the plugin after the restart")
