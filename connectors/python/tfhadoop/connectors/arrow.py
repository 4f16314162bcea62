"""Arrow tables <-> serialized tf.train.Example / SequenceExample: the public names, in one
place, of modules that each do one job:

- :mod:`.arrow_schema`: what records infer to, and how a record that does not fit is reported;
- :mod:`.arrow_codec`: records -> record batches in memory, native (Rust) or pure-Python;
- :mod:`.arrow_pure`: the pure-Python codec, the reference and the fallback;
- :mod:`.arrow_read`: TFRecord files -> tables and bounded-memory batch streams
  (:mod:`.arrow_framing` feeds the decoder, :mod:`.arrow_parallel` decodes files at once);
- :mod:`.arrow_write`: tables -> records, framed buffers or a TFRecord file.
"""
from __future__ import annotations

from tfhadoop.connectors.arrow_codec import examples_to_table, infer_schema
from tfhadoop.connectors.arrow_read import infer_schema_located, iter_record_batches, read_table, stream_schema
from tfhadoop.connectors.arrow_schema import SchemaDrift
from tfhadoop.connectors.arrow_write import table_to_examples, table_to_framed, write_table

__all__ = [
    "read_table",
    "iter_record_batches",
    "SchemaDrift",
    "stream_schema",
    "infer_schema_located",
    "write_table",
    "infer_schema",
    "examples_to_table",
    "table_to_examples",
    "table_to_framed",
]
