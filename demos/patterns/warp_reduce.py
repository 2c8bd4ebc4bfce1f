"""A warp's sum by shuffles: the one device function every course kernel with a warp reduction
calls (chapter 4b's kernels, the bytes-in-flight sum and the model answers of its "your turn"
cells), so that a fix to it reaches them all.

Five steps of ``cuda.shfl_down_sync`` halve the distance each time (16, 8, 4, 2, 1):
after them lane 0 holds the sum of the 32 lanes' values, in registers, with no shared
memory and no barrier. The other lanes hold partial sums nobody should use. All 32
lanes must call it (the full mask says so): a lane that skipped the call would leave
the others waiting for its value.

In the simulator a kernel that calls it runs it as Python like the kernel itself
(:func:`demos.patterns.simulator.simulated` does so on a GPU machine too), so the
checks count its shuffles as the kernel's own.
"""

from __future__ import annotations

from numba import cuda

FULL_MASK = 0xFFFFFFFF  # every lane of the warp takes part


@cuda.jit(device=True)
def warp_reduce_sum(value):
    """The sum of *value* over the 32 lanes of the warp, valid in lane 0."""
    offset = 16
    while offset > 0:
        value += cuda.shfl_down_sync(FULL_MASK, value, offset)
        offset //= 2
    return value
