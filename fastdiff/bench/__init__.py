"""Benchmark tooling: ``fastdiff bench``, synthetic dumps, timing and plots.

Nothing on the compare path imports this package.
"""
