"""A replacement worker that cannot come back at the lost worker's address (its port is taken on
the node) joins by a coordinated restart: the master moves the slot to the new address in the
cluster spec and restarts the coordinator from a fresh checkpoint (docs/design/trainer.md,
"Decision 2")."""
from __future__ import annotations

import json
import socket
import time

import pytest
from test_train_yarn import _app_id, _events, _metrics, _state_epoch, _train, _wait, dataset  # noqa: F401

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _hold(port: int, timeout: float) -> socket.socket:
    """A socket listening on ``port``, once the killed worker has let it go. SO_REUSEADDR: its
    closed connections may linger in TIME_WAIT; a listening socket still keeps others off."""
    deadline = time.monotonic() + timeout
    while True:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("", port))
            s.listen()
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_replacement_at_a_new_address_joins_by_coordinated_restart(hadoop_cluster, dataset):
    import skein

    epochs = 18
    run, proc = _train(hadoop_cluster, dataset, background=True, extra=["--workers", "2", "--epochs", str(epochs)])
    held = None
    try:
        app_id = _app_id(proc)
        _wait(lambda: (_state_epoch(run) or 0) >= 2 or proc.poll() is not None, 300, "two epochs")
        assert proc.poll() is None, proc.communicate()[1][-3000:]
        up = next(e for e in _events(run) if e["event"] == "cluster_up")
        old = up["cluster"]["worker"][up["slots"].index(1)]
        with skein.Client() as client:
            app = client.connect(app_id)
            container = json.loads(app.kv["up/worker/1"].decode())["container"]
            app.kill_container(container)
            held = _hold(int(old.rsplit(":", 1)[1]), 30)  # the replacement cannot have the port
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
        if held is not None:
            held.close()
    assert proc.returncode == 0, (out + err)[-4000:]
    events = _events(run)
    kinds = [e["event"] for e in events]
    lost = [e for e in events if e["event"] == "container_lost"]
    assert [(e["role"], e["slot"]) for e in lost] == [("worker", 1)], lost
    moved = [e for e in events if e["event"] == "worker_moved"]
    assert len(moved) == 1 and moved[0]["slot"] == 1 and moved[0]["old"] == old, moved
    new = moved[0]["new"]
    assert new != old and new.rsplit(":", 1)[0] == old.rsplit(":", 1)[0]  # same host, another port
    i_moved = kinds.index("worker_moved")
    assert "rescaled" in kinds[i_moved:], kinds
    restarted = [e for e in events[i_moved:] if e["event"] == "coordinator_started"]
    assert restarted and restarted[0]["cluster"]["worker"][up["slots"].index(1)] == new, restarted
    assert kinds.count("coordinator_failed") == 0, kinds
    resumed = next(e for e in events[events.index(restarted[0]):] if e["event"] == "first_wave")
    assert [e["examples"] for e in _metrics(run)["epochs"]] == [2400] * epochs  # exactly once per epoch
    t = lost[0]["time"]
    print(f"worker lost -> moved {moved[0]['time'] - t:.1f} s -> coordinator restarted "
          f"{restarted[0]['time'] - t:.1f} s -> training resumed with the replacement {resumed['time'] - t:.1f} s")
