"""The benchmark suites: ``headline`` (``make bench``: the commands behind the current figures in
BENCHMARKS.md that fit in 20 minutes on a 2-core host) and ``rest`` (``make bench-all`` runs both).
One embedded cluster serves every bench of a run (each bench finds it through $TFHADOOP_STATE_DIR;
bench_chaos starts its own), and each bench's wall time is printed with the total.

    .venv/bin/python -m bench.suite headline|rest|all [--smoke] [--only NAME,...] [--dry-run]

``--smoke``: each bench's smallest configuration (does it still run? no figures to report).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

from bench.common import ROOT, bench_cluster, log


@dataclass(frozen=True)
class Bench:
    module: str
    args: tuple[str, ...]  # the configuration of the current figure
    smoke: tuple[str, ...]  # the smallest configuration that runs every part
    # Minutes ``args`` take on the quiet 2-core host: the recorded run's duration where the history
    # gives one, else the sum of its recorded parts (jobs' wall times, timed rounds) plus start-up.
    minutes: float


TMP = tempfile.gettempdir()  # the root disk, as in the recorded runs

HEADLINE = [
    # 4 variants x 3 rounds of 6-11 s each (history: 2026-11-21 07:53) + table and Spark start
    Bench("bench_export", ("--rows", "1000000"), ("--rows", "20000", "--repeat", "1"), 2.5),
    Bench("bench_spark_tfrecord", ("--rows", "1000000", "--repeat", "5"), ("--rows", "20000", "--repeat", "1"), 1.5),
    Bench("bench_native_arrow", ("--rows", "100000", "--parquet-mb", "1000", "--parquet-dir", f"{TMP}/bench-arrow"),
          ("--rows", "2000", "--parquet-mb", "20", "--parquet-dir", f"{TMP}/bench-arrow"), 1),
    Bench("bench_tfhdfs", ("--mb", "256", "--repeat", "3"), ("--mb", "8", "--repeat", "1"), 1),
    # the 1M-parameter model: the headline row (the small model's ceiling is Spark's own transport)
    Bench("bench_predict", ("--rows", "200000", "--naive-rows", "50000", "--hidden", "1024"),
          ("--rows", "4000", "--naive-rows", "1000", "--hidden", "1024"), 3.5),
    # b16 and c2 only: the trainer-vs-PSS `fit` headline (the full table is in ``rest``)
    Bench("bench_trainer_steps", ("--records", "600000", "--epochs", "3", "--skip", "overhead,a,b1,b16_1,wa,wb16,c1,wc2"),
          ("--records", "8000", "--epochs", "2", "--skip", "overhead,a,b1,b16_1,wa,wb16,c1,wc2"), 3.5),
    # issue 32's three ratios on the default export in one run: 5.3-5.8 min a run (2026-11-27 19:52-20:09)
    Bench("bench_trainer_peers", ("--from-export", "--records", "200000", "--epochs", "3", "--skip", "a"),
          ("--from-export", "--records", "20000", "--epochs", "2", "--task-records", "1000", "--skip", "a"), 5.5),
]

REST = [
    # four jobs of 54-64 s (history: 2026-11-23) + the dataset
    Bench("bench_allreduce", ("--epochs", "3", "--parts", "throughput"), ("--epochs", "1", "--parts", "throughput"), 4.5),
    # issue 30 §6: 60k records, 1 PS + 1 worker (one run, 2026-11-27 19:45; its duration was not recorded)
    Bench("bench_ragged", ("--records", "60000",), ("--records", "4000", "--epochs", "2"), 4),
    Bench("bench_python_records", ("--hdfs",),
          ("--small-mb", "1", "--large-mb", "2", "--examples", "2000", "--repeat", "1", "--hdfs", "--hdfs-mb", "4"), 1.5),
    Bench("bench_predict", ("--rows", "200000", "--naive-rows", "50000"), ("--rows", "4000", "--naive-rows", "1000"), 3.5),
    Bench("bench_trainer_steps", ("--records", "600000", "--epochs", "3"),
          ("--records", "8000", "--epochs", "2"), 11),
    Bench("bench_trainer_peers", ("--records", "2400000", "--epochs", "2", "--workers", "1,2,4"),
          ("--records", "8000", "--epochs", "2", "--workers", "1"), 24),
    Bench("bench_task_overhead", ("--tasks", "600", "--repeat", "7"), ("--tasks", "20", "--repeat", "2"), 2),
    Bench("bench_task_offsets", (), ("--records", "20000", "--shard-sizes", "10000,20000"), 4),
    # the default export's own output (issue 32): 2.2 min (history: 2026-11-27 11:45)
    Bench("bench_task_offsets", ("--from-export", "--records", "1000000", "--shard-sizes", "1000000,100000"),
          ("--from-export", "--records", "20000", "--shard-sizes", "20000"), 2.5),
    Bench("bench_split_index", ("--rows", "4000000", "--repeat", "2", "--nested-mb", "256"),
          ("--rows", "20000", "--repeat", "1", "--nested-mb", "170"), 6),
    Bench("bench_allreduce", ("--parts", "preemption,goodput", "--goodput-epochs", "80", "--preempt-every", "120"),
          ("--parts", "preemption", "--preemption-epochs", "40"), 25),
    Bench("bench_trainer", (), ("--epochs", "3", "--ps-epochs", "3", "--no-bracket", "--preempt-every", "20", "--ps-kill-after", "10"), 16),
    Bench("bench_chaos", ("--seed", "12", "--epochs", "100"), ("--seed", "12", "--epochs", "10", "--horizon", "120"), 19),
]

SUITES = {"headline": HEADLINE, "rest": REST, "all": HEADLINE + REST}


def command(b: Bench, smoke: bool) -> list[str]:
    return [sys.executable, "-m", f"bench.{b.module}", *(b.smoke if smoke else b.args)]


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("suite", choices=sorted(SUITES))
    ap.add_argument("--smoke", action="store_true", help="each bench's smallest configuration")
    ap.add_argument("--only", default="", help="comma list of bench modules to run (e.g. bench_export)")
    ap.add_argument("--dry-run", action="store_true", help="print the commands and the recorded minutes")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    benches = [b for b in SUITES[args.suite] if not only or b.module in only]
    if args.dry_run:
        for b in benches:
            print(f"{b.minutes:5.1f} min  " + " ".join(command(b, args.smoke)[1:]))
        print(f"{sum(b.minutes for b in benches):5.1f} min in all, estimated from the recorded runs on the quiet host, "
              "plus ~1 min to start the cluster (not for --smoke)")
        return 0
    failed, took = [], {}
    t_all = time.perf_counter()
    with bench_cluster():  # one cluster for all; the benches find it through $TFHADOOP_STATE_DIR
        for b in benches:
            cmd = command(b, args.smoke)
            log("==", " ".join(cmd[1:]))
            t0 = time.perf_counter()
            rc = subprocess.run(cmd, cwd=ROOT).returncode
            took[b.module + (" " + " ".join(b.smoke if args.smoke else b.args))] = time.perf_counter() - t0
            log(f"== {b.module}: exit {rc} after {took[list(took)[-1]] / 60:.1f} min")
            if rc:
                failed.append(b.module)
    print(f"\n{args.suite}{' (smoke)' if args.smoke else ''}: {(time.perf_counter() - t_all) / 60:.1f} min "
          f"in all, cluster start included")
    for name, secs in took.items():
        print(f"{secs / 60:6.1f} min  {name}")
    if failed:
        print("FAILED:", ", ".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
