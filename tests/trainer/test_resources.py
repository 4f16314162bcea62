"""Issue 31 §2: what a container's processes use, read from /proc (a real child process holding a
known amount of memory and burning CPU), the status lines and hints, and the job page's table."""
from __future__ import annotations

import subprocess
import sys
import time

from tfhadoop.trainer import resources

HOLD_MB = 200


def test_a_process_tree_s_memory_and_cpu_are_measured():
    """A child that holds HOLD_MB and spins: the tree of this process counts it (its RSS within
    the peak), and its CPU time grows."""
    code = (f"import time\nb = bytearray({HOLD_MB} << 20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
            "print('ready', flush=True)\nt = time.time()\nwhile time.time() - t < 30: pass\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        use = resources.Usage()
        assert child.pid in resources.tree(use.pid)
        time.sleep(1.0)
        r = use.sample()
        assert r["peak_rss_mb"] >= HOLD_MB and r["rss_mb"] >= HOLD_MB, r
        assert r["cpu_pct"] > 0, r  # the child spins (how much of a core it gets depends on the host's load)
        own_cpu, own_rss = resources.usage(child.pid)
        assert own_rss >= HOLD_MB << 20 and own_cpu > 0
    finally:
        child.kill()
        child.wait()
    after = use.sample()
    assert after["rss_mb"] < after["peak_rss_mb"] and after["peak_rss_mb"] >= HOLD_MB  # the peak stays


def test_hints_and_status_lines():
    assert "raise --worker-memory" in resources.hint(950, 1024, "--worker-memory")
    assert resources.hint(500, 1024, "--worker-memory") == ""
    assert resources.hint(100, 2048, "--ps-memory") == "far below what it asked: --ps-memory 256m would do"
    used = {"worker/0": {"peak_rss_mb": 980.0, "avg_rss_mb": 700.0, "avg_cpu_pct": 150.0},
            "ps/0": {"peak_rss_mb": 300.0, "avg_rss_mb": 250.0, "avg_cpu_pct": 20.0}}
    lines = resources.lines(used, {"worker_memory": "1g", "ps_memory": "1g"})
    assert lines == [
        "ps:0: memory peak 300 MB of 1024 MB asked (29 %), average 250 MB; CPU average 20 % of a core",
        "worker:0: memory peak 980 MB of 1024 MB asked (96 %), average 700 MB; CPU average 150 % of a core; "
        "near its limit: YARN kills a container over it; raise --worker-memory"]
    samples = [{"loss": 1.0}, {"resources": used}, {"loss": 0.5}]
    assert resources.latest_resources(samples) == used and resources.latest_resources([]) == {}


def test_the_job_page_shows_peak_memory_next_to_what_was_asked():
    from tfhadoop.trainer.report import render

    used = {"worker/0": {"container": "worker_0", "peak_rss_mb": 812.0, "avg_rss_mb": 700.0, "avg_cpu_pct": 95.0}}
    page = render({"app": "a1", "job": {"worker_memory": "1g"}, "samples": [{"resources": used}]})
    assert "<td>worker:0</td><td>worker_0</td><td>812 MB</td><td>1g</td><td>700 MB</td><td>95 %</td>" in page
    assert "no samples yet" in render({"app": "a1", "job": {}, "samples": []})
