"""Benchmarks for attncore: run `python -m benchmarks.harness --help`."""
