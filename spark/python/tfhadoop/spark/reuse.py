"""The dataset ``Trainer.fit`` trains on: exported from a table or DataFrame, or an earlier export
of the same source reused.

"Unchanged source with the same options" is a fingerprint: a SHA-256 over the DataFrame's
canonical plan (a table name is read as ``spark.table(name)``, so both spellings agree), every
input file's path, size and modification time, and the export options. ``fit`` records it in the manifest (``fit.fingerprint``); a later ``fit``
whose fingerprint matches a complete export's manifest trains on that export instead of
writing a new one. A source whose rows cannot be pinned down by its files (in-memory rows, an
RDD, a UDF, a nondeterministic expression) has no fingerprint and is exported every time.
"""
from __future__ import annotations

import hashlib
import json
import re
import uuid

from tfhadoop.connectors.dataset import MANIFEST
from tfhadoop.errors import CommandError
from tfhadoop.spark.export import ExportOptions, parse_splits, run_export
from tfhadoop.spark.export_options import parse_pad

# Leaves whose rows are fixed by the files they read (or by the plan text itself, as a range).
_PINNED_LEAVES = {"LogicalRelation", "HiveTableRelation", "Range", "OneRowRelation"}
# Plan nodes and expressions whose output the plan text does not pin down.
_UNPINNED = re.compile(r'"class"\s*:\s*"[\w.]*\.(PythonUDF|ScalaUDF|ScalaUDAF|PythonUDAF|Rand|Randn|Uuid|Shuffle|'
                       r'MonotonicallyIncreasingID|CurrentTimestamp|Now|CurrentDate|InputFileName)"')
# Export options of ``fit`` (named as ``tfhadoop export``'s flags); the rest are fixed by fit.
FIT_EXPORT_OPTIONS = ("split", "split_key", "shards", "records_per_shard", "compression", "exact_columns", "pad")


def _files_state(spark, paths: list[str]) -> list:
    """[(path, size, modification time)] of ``paths``, one listing per parent directory."""
    jvm = spark._jvm
    conf = spark._jsc.hadoopConfiguration()
    by_parent = {}
    for p in paths:
        by_parent.setdefault(p.rsplit("/", 1)[0], set()).add(p)
    out = []
    for parent, wanted in sorted(by_parent.items()):
        path = jvm.org.apache.hadoop.fs.Path(parent)
        fs = path.getFileSystem(conf)
        seen = {}
        for st in fs.listStatus(path):
            seen[st.getPath().toString()] = (st.getLen(), st.getModificationTime())
        for p in sorted(wanted):
            if p not in seen:  # listing and inputFiles spell the URL differently: ask for the file itself
                st = fs.getFileStatus(jvm.org.apache.hadoop.fs.Path(p))
                seen[p] = (st.getLen(), st.getModificationTime())
            out.append([p, *seen[p]])
    return out


def _plan_text(df) -> str | None:
    """The DataFrame's analyzed plan, canonicalized (expression ids normalized), or None when the
    plan reads something its text and files do not pin down."""
    plan = df._jdf.queryExecution().analyzed()
    leaves = plan.collectLeaves()
    for i in range(leaves.size()):
        if leaves.apply(i).getClass().getSimpleName() not in _PINNED_LEAVES:
            return None
    try:
        if _UNPINNED.search(plan.toJSON()):
            return None
    except Exception:  # noqa: BLE001 - a node without a JSON form: cannot tell, so no reuse
        return None
    return re.sub(r"#\d+L?", "", plan.canonicalized().toString())


def fingerprint(df, options: dict) -> str | None:
    """SHA-256 of the DataFrame's plan, its input files (path, size, mtime) and the export
    options; None when the source cannot be fingerprinted (exported every time)."""
    text = _plan_text(df)
    if text is None:
        return None
    files = sorted(df.inputFiles())
    if not files and "Range" not in text and "OneRowRelation" not in text:
        return None
    state = {"plan": text, "files": _files_state(df.sparkSession, files), "options": options,
             "version": 1}
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()


def _read_manifest(spark, url: str) -> dict | None:
    jvm = spark._jvm
    root = jvm.org.apache.hadoop.fs.Path(url)
    fs = root.getFileSystem(spark._jsc.hadoopConfiguration())
    path = jvm.org.apache.hadoop.fs.Path(root, MANIFEST)
    if not fs.exists(path) or not fs.exists(jvm.org.apache.hadoop.fs.Path(root, "_SUCCESS")):
        return None
    stream = fs.open(path)
    try:  # one byte[] across py4j (a Python buffer passed to read() would come back unfilled)
        data = jvm.org.apache.commons.io.IOUtils.toByteArray(stream)
    finally:
        stream.close()
    return json.loads(bytes(data))


def _exists(spark, url: str) -> bool:
    path = spark._jvm.org.apache.hadoop.fs.Path(url)
    return path.getFileSystem(spark._jsc.hadoopConfiguration()).exists(path)


def default_dataset_dir(default_fs: str, user: str, fp: str | None) -> str:
    """Where ``fit`` exports when no ``dataset`` is given: one directory per fingerprint."""
    name = fp[:24] if fp else f"once-{uuid.uuid4().hex[:12]}"
    return f"{default_fs.rstrip('/')}/user/{user}/.tfhadoop/fit-datasets/{name}"


def export_options(opts: dict) -> dict:
    """fit's export options, normalized (the fingerprint must not depend on how they were spelled)."""
    unknown = sorted(set(opts) - set(FIT_EXPORT_OPTIONS))
    if unknown:
        raise CommandError(f"unknown export options: {', '.join(unknown)} (known: {', '.join(FIT_EXPORT_OPTIONS)})")
    split = opts.get("split")
    exact = opts.get("exact_columns") or ()
    if isinstance(exact, str):
        exact = [c.strip() for c in exact.split(",") if c.strip()]
    pad = dict(sorted(parse_pad(opts.get("pad")).items()))
    return {"splits": parse_splits(split) if isinstance(split, str) or split is None else dict(split),
            "split_key": opts.get("split_key"), "shards": opts.get("shards"),
            "records_per_shard": opts.get("records_per_shard"), "compression": opts.get("compression") or ExportOptions.compression,
            "exact_columns": tuple(exact), **({"pad": pad} if pad else {})}  # no pad: fingerprints as before


def export_or_reuse(spark, source, label: str, options: dict, dataset: str | None, default_fs: str, user: str,
                    notice=print) -> tuple[str, dict, bool]:
    """The dataset for ``source`` (a table name or a DataFrame): (URL, manifest, reused)."""
    opts = export_options(options)
    if isinstance(source, str):
        df, described = spark.table(source), {"table": source}
    else:
        df, described = source, {"dataframe": True}
    fp = fingerprint(df, {**opts, "label": label})
    url = dataset or default_dataset_dir(default_fs, user, fp)
    before = _read_manifest(spark, url) if _exists(spark, url) else None
    if fp and before and (before.get("fit") or {}).get("fingerprint") == fp:
        notice(f"reusing the export in {url}: the source and export options are unchanged")
        return url, before, True
    overwrite = False
    if _exists(spark, url):
        if before is None or "fit" not in before:
            raise CommandError(f"dataset {url} exists and was not written by Trainer.fit; give another dataset= "
                               "(fit replaces only its own exports)")
        overwrite = True
        notice(f"the source or export options changed since the export in {url}: exporting again")
    view = None
    if isinstance(source, str):
        where = {"table": source}
    else:
        view = f"tfhadoop_fit_{uuid.uuid4().hex[:12]}"
        df.createOrReplaceTempView(view)
        where = {"query": f"SELECT * FROM {view}"}
    try:
        manifest = run_export(spark, ExportOptions(output=url, label=label, overwrite=overwrite, **where, **opts),
                              manifest_extra={"fit": {"fingerprint": fp, "source": described}})
    finally:
        if view:
            spark.catalog.dropTempView(view)
    notice(f"exported {manifest['records']} records to {url}")
    return url, manifest, False
