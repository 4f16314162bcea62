"""TensorFlow training that runs inside the YARN application."""
