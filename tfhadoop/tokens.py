"""Which NameNode address a process holding only delegation tokens must dial.

hdfs-native uses the HDFS token whose service equals the ``host:port`` it dials; Hadoop names
tokens by the NameNode's IP by default (``hadoop.security.token.service.use_ip``). The TF plugin
library decides (connectors/native/tfhdfs/src/tokens.rs) and this module asks it through ctypes,
without TensorFlow, so tfhadoop's Python HDFS client and TensorFlow dial the same address.
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

PLUGIN = Path(__file__).with_name("libtfhdfs.so")  # tfhadoop.tfhdfs loads the same file into TF
TOKEN_FILE_ENV = "HADOOP_TOKEN_FILE_LOCATION"


def dial_address(authority: str) -> str | None:
    """``ip:port`` to dial for NameNode ``authority`` (``host:port``) when this process's token
    file names it only by IP; None to dial ``authority`` as it is (no token file, a token for the
    host name, or no plugin library built)."""
    if not os.environ.get(TOKEN_FILE_ENV) or not PLUGIN.exists():
        return None
    lib = ctypes.CDLL(str(PLUGIN))
    fn = lib.tfhdfs_token_dial_address
    fn.restype, fn.argtypes = ctypes.c_size_t, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    out = ctypes.create_string_buffer(512)
    return out.value.decode() if fn(authority.encode(), out, len(out)) else None
