"""Spark side of tfhadoop: sessions with the tfhadoop jar, Hive support, and the export job."""
