"""Benchmarks of the book's heavy numerics (not tests): ``python -m benchmarks.lmm``,
``python -m benchmarks.concepts``; ``python -m benchmarks.report`` renders ``book/performance.md``
from the JSON files in ``benchmarks/results/``.
"""
