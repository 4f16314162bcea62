"""One member of a local 2-process MWMS ring for test_allreduce_commit.py (not a test itself):
``python commit_share_child.py RANK WORK CHECKPOINT_STEPS [COMMIT_STEPS]`` with TF_CONFIG set;
with COMMIT_STEPS this member first commits variable i = i + 1 everywhere and a ledger at that step. Prints one JSON line: each variable's values and the state restore_commit gave."""
import json
import os
import sys

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def adam_linear():
    import tf_keras

    model = tf_keras.Sequential([tf_keras.Input((4,), name="x"), tf_keras.layers.Dense(1)])
    model.compile(optimizer=tf_keras.optimizers.Adam(0.01), loss="mse")
    return model


def main():
    import tensorflow as tf

    from tfhadoop.trainer.allreduce import optimizer_variables, restore_commit
    from tfhadoop.trainer.commit import LocalCommits
    from tfhadoop.trainer.training_common import build_model

    rank, work, checkpoint_steps = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    model = build_model(strategy, adam_linear, "adam_linear")
    variables = list(model.variables) + list(optimizer_variables(model.optimizer))
    if len(sys.argv) > 4:
        import numpy as np

        steps = int(sys.argv[4])
        LocalCommits(work).write([np.full(v.shape, i + 1.0) for i, v in enumerate(variables)],
                                 {"epoch": 1, "steps": steps, "history": [{"epoch": 0}],
                                  "ledger": {"epoch": 1, "expected": 10, "done": {"3": 5}}})
    state = restore_commit(tf, strategy, 1, rank, LocalCommits(work), variables, checkpoint_steps)
    print(json.dumps({"rank": rank, "state": state, "names": [v.name for v in variables],
                      "values": [v.numpy().tolist() for v in variables]}), flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
