"""Benchmarks of what users run (python -m benchmarks.bench); not part of the installed package."""
