"""What `tfhadoop cluster up` can choose about the embedded cluster: its sizes, ports and security.
The defaults here are the one source of truth for the CLI, the demo, the tests and the benches."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ClusterOptions:
    """Sizes and fixed ports of the embedded cluster (0 = a free port)."""

    node_managers: int = 2
    gpus_per_node: int = 2
    nm_memory_mb: int = 8192
    nm_vcores: int = 8
    namenode_port: int = 0
    jvm_heap: str = "1536m"
    secure: bool = False  # Kerberos: see tfhadoop.yarn.secure
    permissions: bool = False  # HDFS permission checks without Kerberos (always on with secure)
    token_renew_seconds: int = 120
    nm_expiry_s: float = 15  # a NodeManager silent this long is LOST (YARN's default: 600)
    # An HDFS file's close takes one NameNode call instead of ~0.5 s (docs/tfhdfs.md): with
    # dfs.namenode.file.close.num-committed-allowed 1 (Hadoop's default: 0), which HDFS applies
    # only to files replicated above its minimum (1), hence 2 DataNodes and 2 replicas.
    datanodes: int = 2  # also every file's replication
    close_committed_allowed: int = 1
