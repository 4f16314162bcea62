"""The export's files on the Hadoop FileSystem (through the session's JVM, the configuration Spark
writes with): shard names part-NNNNN-of-MMMMM with their index sidecars, and the manifest."""
from __future__ import annotations

import re

from tfhadoop.connectors.dataset import COMPRESSION_SUFFIX
from tfhadoop.errors import CommandError
from tfhadoop.spark.export_options import ExportOptions


class DatasetFS:
    def __init__(self, spark, path: str):
        jvm = spark._jvm
        self.jvm = jvm
        self._conf = spark._jsc.hadoopConfiguration()
        self.root = jvm.org.apache.hadoop.fs.Path(path)
        self.fs = self.root.getFileSystem(self._conf)
        self.root = self.fs.makeQualified(self.root)

    def path(self, *parts):
        p = self.root
        for part in parts:
            p = self.jvm.org.apache.hadoop.fs.Path(p, part)
        return p

    def sibling(self, name):
        return self.jvm.org.apache.hadoop.fs.Path(self.root.getParent(), name)


def finalize_files(spark, target: str, split: str, stats, opts: ExportOptions, prefix: str | None = None) -> list:
    """Rename the data source's part files to part-NNNNN-of-MMMMM per directory; record counts.
    ``prefix``: the files' directory in the dataset (default: the split's)."""
    jvm = spark._jvm
    root = jvm.org.apache.hadoop.fs.Path(target)
    fs = root.getFileSystem(spark._jsc.hadoopConfiguration())
    fs.delete(jvm.org.apache.hadoop.fs.Path(root, "_SUCCESS"), False)
    counts = {}
    for row in stats:
        d = row.asDict()
        part_dir = f"{opts.partition_by}={_partition_dir_value(d[opts.partition_by])}" if opts.partition_by else ""
        counts[(part_dir, d["__pid"])] = d["__records"]
    by_dir = {}
    it = fs.listFiles(root, True)
    while it.hasNext():
        st = it.next()
        rel = st.getPath().toString()[len(fs.makeQualified(root).toString()) + 1:]
        name = rel.rsplit("/", 1)[-1]
        m = re.match(r"part-(\d+)-", name)
        if not m:
            continue
        by_dir.setdefault(rel.rsplit("/", 1)[0] if "/" in rel else "", []).append((int(m.group(1)), st))
    ext = ".tfrecord" + COMPRESSION_SUFFIX[opts.compression]
    out = []
    for part_dir, entries in sorted(by_dir.items()):
        entries.sort(key=lambda e: e[0])
        for i, (pid, st) in enumerate(entries):
            name = f"part-{i:05d}-of-{len(entries):05d}{ext}"
            dst = jvm.org.apache.hadoop.fs.Path(st.getPath().getParent(), name)
            if not fs.rename(st.getPath(), dst):
                raise CommandError(f"could not rename {st.getPath()} to {dst}")
            _rename_index(jvm, fs, st.getPath(), dst)
            rel = "/".join(p for p in (split if prefix is None else prefix, part_dir, name) if p)
            records = counts.get((part_dir, pid))
            if records is None:
                raise CommandError(f"no record count for {rel} (partition {pid}, dir {part_dir!r})")
            out.append({"path": rel, "records": records, "bytes": st.getLen(), "split": split or None})
    return out


def _rename_index(jvm, fs, src, dst) -> None:
    """The record-boundary index sidecar (.<file>.tfrindex) follows its data file's new name."""
    side = jvm.org.apache.hadoop.fs.Path(src.getParent(), "." + src.getName() + ".tfrindex")
    if fs.exists(side):
        to = jvm.org.apache.hadoop.fs.Path(dst.getParent(), "." + dst.getName() + ".tfrindex")
        if not fs.rename(side, to):
            raise CommandError(f"could not rename {side} to {to}")


def _partition_dir_value(v) -> str:
    """The directory value the data source writes for a partition value (Hive-style escaping)."""
    if v is None:
        return "__HIVE_DEFAULT_PARTITION__"
    from urllib.parse import quote

    return quote(str(v), safe=" !$&'()+,;@[]^`{}~")


def write_text(out: DatasetFS, path, text: str) -> None:
    stream = out.fs.create(path, True)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()


def read_text(fs: DatasetFS, path) -> str:
    """A small file's text (a manifest), read with the session's Hadoop configuration."""
    stream = fs.fs.open(path)
    try:
        return bytes(fs.jvm.org.apache.hadoop.io.IOUtils.readFullyToByteArray(stream)).decode()
    finally:
        stream.close()
