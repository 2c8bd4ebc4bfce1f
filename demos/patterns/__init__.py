"""Kernel patterns of chapter 4b: histograms (races, atomics, privatisation) and reductions.

:mod:`demos.patterns.kernels` holds the kernels, :mod:`demos.patterns.simulator`
teaches the CUDA simulator warp shuffles and counts memory accesses,
:mod:`demos.patterns.reports` turns a counted run into plain numbers (for the
chapter's checks and the ``kernel_patterns`` assignment), :mod:`demos.patterns.sizes`
holds the sizes the chapter's cells and checks share, and
:mod:`demos.patterns.bench` measures everything on a GPU against the bandwidth bound.
"""

from demos.patterns.simulator import enable_warp_shuffles as _enable_warp_shuffles

_enable_warp_shuffles()  # no-op on a GPU
