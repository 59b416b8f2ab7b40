"""Benchmarks of stm against hand-written floors and peer libraries.

Run ``python -m bench`` (a few minutes) or ``python -m bench --quick`` (under a
minute). Results go to ``bench/results.json``, ``bench/RESULTS.md`` and
``bench/scale.png``. Every ratio compares scenarios timed in the same run,
interleaved round by round, so machine noise hits them alike.
"""
