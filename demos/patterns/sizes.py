"""Sizes shared by chapter 4b's cells and the checks of its "your turn" cells.

The checks themselves are in :mod:`demos.checks.pattern_checks`; the notebook and
the checks read the number of bins and the block size from here, so a kernel
compiled with the notebook's constants fits the launch the check makes.
"""

from __future__ import annotations

N_BINS = 16  # histogram bins; the checks' values lie in 0 .. N_BINS - 1
THREADS = 64  # threads per block of the warp-sum check: two warps
