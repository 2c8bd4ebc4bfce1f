"""Kernel patterns of chapters 4b to 4d: histograms (races, atomics, privatisation),
reductions, scans and stencils, occupancy and the roofline.

:mod:`demos.patterns.kernels` holds the kernels, :mod:`demos.patterns.simulator`
teaches the CUDA simulator warp shuffles and counts memory accesses,
:mod:`demos.patterns.reports` turns a counted run into plain numbers (for
chapter 4b's checks and the ``kernel_patterns`` assignment), :mod:`demos.patterns.sizes`
holds the sizes its cells and checks share, and
:mod:`demos.patterns.bench` measures everything on a GPU against the bandwidth bound.
Chapter 4c's prefix sums and halo stencil are :mod:`demos.patterns.scan` and
:mod:`demos.patterns.stencil` (timed by :mod:`demos.patterns.scan_bench`); chapter 4d's
are :mod:`demos.patterns.occupancy` and :mod:`demos.patterns.roofline`.
"""

from demos.patterns.simulator import enable_warp_shuffles as _enable_warp_shuffles

_enable_warp_shuffles()  # no-op on a GPU
