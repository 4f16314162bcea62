"""What `tfhadoop export` prints when it is done, from the manifest it wrote."""
from __future__ import annotations


def print_summary(manifest: dict, output: str) -> None:
    sizes = [f["records"] for f in manifest["files"]]
    print(f"exported {manifest['records']} records ({manifest['bytes'] / 1e6:.1f} MB) to {output} "
          f"in {manifest['export_seconds']:.1f} s: {len(sizes)} shards, {min(sizes)}..{max(sizes)} records each")
    for name, s in manifest["splits"].items():
        print(f"  {name}: {s['records']} records in {len(s['files'])} files")
    if manifest.get("rewritten_from"):
        print(f"  rewritten from a {manifest['rewritten_from']['compression']} dataset: records copied as they "
              "were, splits, parse spec and label kept")
    if manifest["compression"] == "none":
        print("  uncompressed, each shard with a record index: a trainer task starts at a byte offset. "
              "--compression gzip stores 3-5x less for tf.Examples of numeric features, but every task "
              "then decompresses its shard from the start")
    for name, loss in manifest.get("float32_loss", {}).items():
        if loss["changed"]:
            print(f"  float32: {loss['changed']} values of {name} changed (largest change {loss['max_change']:.6g}); "
                  f"--exact-columns {name} writes them exactly")
    for name, how in manifest.get("exact_columns", {}).items():
        print(f"  exact: {name} written as {'int64' if how == 'int64' else 'exact decimal text (bytes)'}")
