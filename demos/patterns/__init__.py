"""Kernel patterns of chapter 4b: histograms (races, atomics, privatisation) and reductions.

:mod:`demos.patterns.kernels` holds the kernels, :mod:`demos.patterns.simulator`
teaches the CUDA simulator warp shuffles and counts memory accesses (for the
chapter's checks and the ``kernel_patterns`` assignment), and
:mod:`demos.patterns.bench` measures everything on a GPU against the bandwidth bound.
"""

from demos.patterns.simulator import enable_warp_shuffles as _enable_warp_shuffles

_enable_warp_shuffles()  # no-op on a GPU
