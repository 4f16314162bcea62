"""YARN side of tfhadoop: the embedded Hadoop cluster and Skein applications."""
