"""Child process of test_task_fn.py: the trainer's task function (step.build_task_fn) scheduled
by a real ClusterCoordinator over an in-process PS and worker, on a local uncompressed shard.
Prints ``RESULT {json}``: per-closure examples per task, the tracing count, a short-shard error."""
from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("GRPC_FAIL_FAST", "use_caller")

import numpy as np
import tf_keras

from tfhadoop.connectors.example import encode_example
from tfhadoop.connectors.tfrecord_writer import write_records
from tfhadoop.trainer import step
from tfhadoop.trainer.server import in_process_ps_cluster
from tfhadoop.trainer.tasks import Task

SPEC = {"features": {"x": {"type": "FixedLenFeature", "shape": [4], "dtype": "float32"},
                     "y": {"type": "FixedLenFeature", "shape": [], "dtype": "float32"}}}
RECORDS, BATCH = 500, 16


def main() -> None:
    path = os.path.join(sys.argv[1], "part-00000.tfrecord")
    rng = np.random.default_rng(0)
    examples = [encode_example({"x": list(map(float, rng.normal(size=4))), "y": [float(i)]}) for i in range(RECORDS)]
    write_records(path, iter(examples))
    offsets = np.cumsum([0] + [len(e) + 16 for e in examples]).tolist()  # TFRecord framing: 12 + data + 4
    strategy, coordinator, servers = in_process_ps_cluster()
    with strategy.scope():
        model = tf_keras.Sequential([tf_keras.Input((4,), name="x"), tf_keras.layers.Dense(1)])
        model.compile(optimizer=tf_keras.optimizers.SGD(0.01), loss="mse")
        model.optimizer.build(model.trainable_variables)
    task_fn = step.build_task_fn(strategy, model, SPEC, "y", BATCH, None)

    def task(start, count, indexed=True):  # indexed: start at the record's offset; else skip from the shard start
        return Task(id=start, path=path, start=start, count=count, offset=offsets[start] if indexed else 0,
                    skip=0 if indexed else -1)

    groups = [[task(0, 16)], [task(100, 5), task(37, 40, indexed=False)], [task(480, 20), task(3, 1), task(250, 33)],
              [task(7, 100)]] * 3
    results = [task_fn.schedule(coordinator, g) for g in groups]
    closures = [[int(n) for n in r.fetch()[0]] for r in results]
    losses = [[float(v) for v in r.fetch()[1]] for r in results]
    short = task_fn.schedule(coordinator, [task(490, 30)])  # the shard has 10 left
    short_in_group = task_fn.schedule(coordinator, [task(0, 16), task(490, 30)])  # the same, in a group
    try:
        short.fetch()
        short_error = None
    except Exception as e:  # noqa: BLE001 - reported to the test
        short_error = f"{type(e).__name__}: {e}"[:300]
    try:
        short_in_group.fetch()
        short_group_error = None
    except Exception as e:  # noqa: BLE001 - reported to the test
        short_group_error = f"{type(e).__name__}: {e}"[:300]
    print("RESULT " + json.dumps({"closures": closures, "expected": [[t.count for t in g] for g in groups],
                                  "losses_finite": bool(np.all(np.isfinite(sum(losses, [])))),
                                  "traces": task_fn.tracing_count(), "short_error": short_error,
                                  "short_group_error": short_group_error}), flush=True)
    del servers
    os._exit(0)  # the coordinator's threads hold remote handles


if __name__ == "__main__":
    main()
