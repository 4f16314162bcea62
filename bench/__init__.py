"""Benchmarks: our code and the peer side by side in one run, the ratio printed (BENCHMARKS.md).
Run each from the repository root as ``python -m bench.<name>``; ``python -m bench.suite`` runs the
headline suite (``make bench``) or all of them (``make bench-all``)."""
