"""Benchmark suites shipped with oodfs (TOML files in this folder)."""
