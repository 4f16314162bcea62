"""`tfhadoop demo`: the product end to end on the embedded cluster, each step timed.

cluster up -> a Skein application on YARN (with its logs) -> a Hive table on HDFS -> the table as
TFRecord shards on HDFS through the tfhadoop Spark data source -> the shards read back as
tf.Examples by the Python library -> a model trained on those shards on YARN (parameter server +
workers), SavedModel on HDFS -> cluster down (unless it was already running or --keep).
"""
from __future__ import annotations

import time
import uuid
from contextlib import contextmanager

from tfhadoop.errors import CommandError


def register(subparsers) -> None:
    p = subparsers.add_parser("demo", help="run the main job end to end on the embedded cluster",
                              description=(__doc__ or "").split("\n\n", 1)[1])
    p.add_argument("--state-dir", help="embedded cluster state dir (default ~/.tfhadoop/cluster)")
    p.add_argument("--rows", type=int, default=20000, help="rows in the demo Hive table (default 20000)")
    p.add_argument("--keep", action="store_true", help="leave the cluster running afterwards")
    p.add_argument("--workers", type=int, default=2, help="training workers on YARN (default 2)")
    p.add_argument("--no-train", action="store_true", help="stop after the export (skip training)")
    p.add_argument("--secure", action="store_true",
                   help="on the Kerberized embedded cluster (`cluster up --secure`, its own state dir): every "
                        "step runs as its test user, logged in from that user's keytab")
    p.set_defaults(func=run)


@contextmanager
def _step(title: str):
    print(f"\n== {title}", flush=True)
    t0 = time.monotonic()
    yield
    print(f"   done in {time.monotonic() - t0:.1f} s", flush=True)


def run(args) -> int:
    """Quiet unless -v: Java (Spark, Skein, Hadoop), TensorFlow and library logs go to a log file
    named at the end (also when a step fails); stdout keeps the steps and their results."""
    from tfhadoop.trainer import console

    log = None
    try:
        with console.quiet(args.verbose, "demo") as log:
            return _run(args, log)
    finally:
        if log:
            print(f"\nJava, Spark, Skein and TensorFlow logs: {log}", flush=True)


def _run(args, log: str | None) -> int:
    from tfhadoop import hadoop
    from tfhadoop.yarn.embedded import ClusterOptions, EmbeddedCluster

    state_dir = args.state_dir
    if args.secure and not state_dir:
        from tfhadoop.yarn.secure import secure_state_dir

        state_dir = secure_state_dir()
    cluster = EmbeddedCluster(state_dir)
    was_running = cluster.is_running()
    t_all = time.monotonic()
    with _step("embedded Hadoop cluster up" + (" (Kerberos)" if args.secure else "")):
        info = cluster.up(ClusterOptions(secure=True) if args.secure else None)
        print(f"   HDFS {info['fs_default']}, YARN RM UI http://{info['rm_webapp']}"
              + (" (already running)" if was_running else f", daemons ready in {info['start_seconds']:.1f} s"))
        if args.secure and not info.get("secure"):
            raise CommandError(f"the cluster in {cluster.state_dir} runs without Kerberos: stop it or pick "
                               "another --state-dir for --secure")
    try:
        hadoop.use_cluster(cluster.state_dir)
        home = info["fs_default"]
        if info.get("secure"):
            home += "/user/" + _kerberos_login(info)
        _skein_hello(args.verbose, log)
        spark, table = _hive_round_trip(args.rows)
        dataset = _tfrecord_export(spark, table, args.rows, home)
        if not args.no_train:
            _train(dataset, args.workers, args.verbose, log)
    finally:
        if not (args.keep or was_running):
            with _step("embedded Hadoop cluster down"):
                cluster.down()
    print(f"\ndemo finished in {time.monotonic() - t_all:.1f} s")
    return 0


def _kerberos_login(info: dict) -> str:
    """Log in as the secure cluster's test user from its keytab, as `--principal/--keytab` does
    (a private ticket cache; Skein, Spark and the HDFS client use it); its short name."""
    import os

    from tfhadoop import kerberos

    os.environ["KRB5_CONFIG"] = info["krb5_conf"]
    kerberos.login_from_keytab(info["principal"], info["keytab"])
    kerberos.prepare_skein_env()
    print(f"   logged in as {info['principal']} (keytab {info['keytab']}); realm {info['realm']}")
    return info["principal"].split("@")[0].split("/")[0]


def _skein_hello(verbose: bool, log: str | None) -> None:
    import skein

    from tfhadoop.trainer import console
    from tfhadoop.yarn.logs import application_logs

    with _step("a YARN application through Skein"):
        spec = skein.ApplicationSpec(
            name="tfhadoop-demo-hello", queue="default", max_attempts=1,
            master=skein.Master(resources=skein.Resources(memory=256, vcores=1)),
            services={"hello": skein.Service(resources=skein.Resources(memory=256, vcores=1, gpus=1),
                                             script='echo "hello from YARN container $CONTAINER_ID"')})
        with console.skein_client(verbose, log) as client:
            app_id = client.submit(spec)
            print(f"   submitted {app_id}")
            while (report := client.application_report(app_id)).state not in ("FINISHED", "FAILED", "KILLED"):
                time.sleep(0.5)
        print(f"   {app_id}: {report.state} / {report.final_status}")
        if report.final_status != "SUCCEEDED":
            raise CommandError(f"the demo application {app_id} ended {report.final_status}: {report.diagnostics}")
        hello = [line for line in application_logs(app_id).splitlines() if line.startswith("hello from YARN")]
        print(f"   its log says: {hello[0] if hello else '(nothing)'}")


def _hive_round_trip(rows: int):
    """The Hive table written and read back: (the Spark session, its name)."""
    from tfhadoop.spark.session import hive_session

    table = f"demo_features_{uuid.uuid4().hex[:6]}"
    with _step(f"Hive table {table} on HDFS (Spark + embedded metastore)"):
        spark = hive_session("tfhadoop-demo")
        spark.range(rows).selectExpr(
            "id", "cast(id % 7 as float) * 0.5 as x", "concat('user-', id % 100) as user",
            "array(cast(id as float), cast(id * 2 as float)) as emb", "cast(id % 7 > 3 as bigint) as label",
        ).write.format("parquet").saveAsTable(table)
        back = spark.sql(f"SELECT count(*) AS n, sum(label) AS positives FROM {table}").collect()[0]
        location = spark.sql(f"DESCRIBE FORMATTED {table}").filter("col_name = 'Location'").collect()[0].data_type
        print(f"   {back.n} rows ({back.positives} positive) at {location}")
        if back.n != rows:
            raise CommandError(f"Hive round trip returned {back.n} rows, expected {rows}")
    return spark, table


def _tfrecord_export(spark, table: str, rows: int, home: str) -> str:
    from tfhadoop.connectors.tfrecord import read_records
    from tfhadoop.spark.export import ExportOptions, parse_splits, run_export
    from tfhadoop.spark.session import tfhadoop_jar

    if tfhadoop_jar() is None:
        raise CommandError("jars/tfhadoop-*.jar is missing: run `make jars`")
    out = home.rstrip("/") + f"/datasets/{table}"
    with _step(f"tfhadoop export: Hive table -> sharded TFRecord dataset ({out})"):
        manifest = run_export(spark, ExportOptions(output=out, table=table, shards=4, overwrite=True,
                                                   splits=parse_splits("train=0.9,eval=0.1"), split_key="id"))
        spark.stop()
        for name, split in manifest["splits"].items():
            print(f"   {name}: {split['records']} records in {', '.join(split['files'])}")
    with _step("TensorFlow parses the shards with the manifest's parse spec (read by tfhadoop.connectors)"):
        import tensorflow as tf

        from tfhadoop.connectors.dataset import tf_example_spec

        records = list(read_records([f"{out}/{f['path']}" for f in manifest["files"]]))
        parsed = tf.io.parse_example(tf.constant(records), tf_example_spec(manifest["parse_spec"]))
        label = parsed["label"]
        if not isinstance(label, tf.Tensor):  # a scalar column: FixedLenFeature, so dense
            raise CommandError(f"the label parsed as a {type(label).__name__}, not a dense tensor")
        print(f"   {len(records)} Examples; features {sorted(parsed)}; "
              f"mean label {float(tf.reduce_mean(tf.cast(label, tf.float32))):.3f}")
        if len(records) != rows:
            raise CommandError(f"read {len(records)} records back, expected {rows}")
    return out


def _train(dataset: str, workers: int, verbose: bool, log: str | None) -> None:
    from dataclasses import asdict

    from tfhadoop import hadoop
    from tfhadoop.trainer import console
    from tfhadoop.trainer.follow import follow
    from tfhadoop.trainer.spec import JobSpec
    from tfhadoop.trainer.submit import submit
    from tfhadoop.trainer.validate import validate_job

    run = f"{dataset}-run-{uuid.uuid4().hex[:6]}"
    job = JobSpec(model="tfhadoop.trainer.demo_model:build", data=dataset, label="label", workers=workers,
                  ps=1, epochs=3, batch_size=64, task_records=500, worker_memory="1g", ps_memory="1g",
                  checkpoint_dir=f"{run}/checkpoints", export_dir=f"{run}/model", name="tfhadoop-demo-train").validate()
    with _step(f"tfhadoop train: 1 parameter server + {workers} workers on YARN, {job.epochs} epochs"):
        with console.skein_client(verbose, log) as client:
            def notice(text: str) -> None:
                print(f"   {text}")

            job, manifest = validate_job(job, hadoop.use_cluster(), notice=notice)  # paths qualified
            app_id = submit(job, client=client, notice=notice, manifest=manifest)
            print(f"   submitted {app_id}")
            state = follow(app_id, job.checkpoint_dir, client=client,
                           display=console.Display(asdict(job), _Indented(), tty=False))
        if state["final_status"] != "SUCCEEDED":
            diag = (state["result"] or {}).get("diagnostics") or state["diagnostics"]
            raise CommandError(f"training {app_id} ended {state['final_status']}: {diag}")
        metrics = state["metrics"] or {}
        print(f"   eval split: {', '.join(f'{k} {v:.3f}' for k, v in (metrics.get('eval') or {}).items())}")
        print(f"   SavedModel at {job.export_dir}; checkpoints, events.jsonl and tensorboard/ in {job.checkpoint_dir}")


class _Indented:
    """The trainer's progress lines, indented under the demo step."""

    def write(self, text: str) -> None:
        import sys

        sys.stdout.write("".join(f"   {line}" if line.strip() else line for line in text.splitlines(True)))

    def flush(self) -> None:
        import sys

        sys.stdout.flush()
