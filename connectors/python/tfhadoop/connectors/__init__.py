"""TFRecord and tf.Example for Python and the Hadoop side (the JVM half lives in connectors/src)."""
