"""Kernels that make the mistakes Numba's CUDA simulator hides, as a student writes them, and
their right variants: shared by the tests of demos/patterns/ (the instrumented simulator and
the chapter checks' messages).

Each is source text, made into a kernel by :func:`defined` the way a notebook
cell (or the trusted grader) makes one: exec'd, not imported from ``demos``.
"""

from __future__ import annotations


def defined(source: str, name: str) -> object:
    """A kernel as a notebook cell (or the trusted grader) makes it: exec'd, not from ``demos``."""
    namespace: dict[str, object] = {"__name__": "student_cell"}
    exec("import numpy as np\nfrom numba import cuda, float32, float64, int32", namespace)  # noqa: S102
    exec(compile(source, f"<{name}>", "exec"), namespace)  # noqa: S102 - test kernels
    return namespace[name]


# -- kernels with the mistakes (as a student writes them) and their right variants

RACY_SHARED_HISTOGRAM = """
from demos.patterns.sizes import N_BINS
@cuda.jit
def histogram_shared(values, bins):
    local = cuda.shared.array(N_BINS, int32)
    t = cuda.threadIdx.x
    for b in range(t, N_BINS, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        local[values[i]] += 1
    cuda.syncthreads()
    for b in range(t, N_BINS, cuda.blockDim.x):
        cuda.atomic.add(bins, b, local[b])
"""

UNZEROED_SHARED_HISTOGRAM = """
from demos.patterns.sizes import N_BINS
@cuda.jit
def histogram_shared(values, bins):
    local = cuda.shared.array(N_BINS, int32)
    t = cuda.threadIdx.x
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(local, values[i], 1)
    cuda.syncthreads()
    for b in range(t, N_BINS, cuda.blockDim.x):
        cuda.atomic.add(bins, b, local[b])
"""

ONE_PER_THREAD_SHARED_HISTOGRAM = """
from demos.patterns.sizes import N_BINS
@cuda.jit
def histogram_shared(values, bins):
    local = cuda.shared.array(N_BINS, int32)
    t = cuda.threadIdx.x
    if t < N_BINS:
        local[t] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    if i < values.shape[0]:
        cuda.atomic.add(local, values[i], 1)
    cuda.syncthreads()
    if t < N_BINS and local[t] > 0:
        cuda.atomic.add(bins, t, local[t])
"""

INC_HISTOGRAM = """
@cuda.jit
def histogram_atomic(values, bins):
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        cuda.atomic.inc(bins, values[i], values.shape[0])
"""

ONE_PER_THREAD_HISTOGRAM = """
@cuda.jit
def histogram_atomic(values, bins):
    i = cuda.grid(1)
    if i < values.shape[0]:
        cuda.atomic.add(bins, values[i], 1)
"""

TREE = """
THREADS = 64
@cuda.jit
def block_sum_kernel(values, partial):
    cache = cuda.shared.array(THREADS, float64)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    cache[t] = values[i] if i < values.size else 0.0
    cuda.syncthreads()
    step = THREADS // 2
    while step > 0:
        if t < step:
            cache[t] += cache[t + step]
{barrier}
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = cache[0]
"""
BARRIER_INSIDE_IF = TREE.format(barrier="            cuda.syncthreads()")
BARRIER_AFTER_IF = TREE.format(barrier="        cuda.syncthreads()")
NO_BARRIER_IN_LOOP = TREE.format(barrier="        pass")

TILED = """
TILE = 8
@cuda.jit
def tiled_distance_kernel(x, y, out):
    {arrays}
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    {loop}
        i = bi * TILE + ty
        j = bj * TILE + tx
        {early_return}
        if ty == 0 and j < y.shape[0]:
            for k in range(3):
                ys[tx, k] = y[j, k]
        if tx == 0 and i < x.shape[0]:
            for k in range(3):
                xs[ty, k] = x[i, k]
        cuda.syncthreads()
        if i < out.shape[0] and j < out.shape[1]:
            acc = 0.0
            for k in range(3):
                d = xs[ty, k] - ys[tx, k]
                acc += d * d
            out[i, j] = acc
        cuda.syncthreads()
"""
_TWO_LINES = (
    "xs = cuda.shared.array((TILE, 3), float64)\n    ys = cuda.shared.array((TILE, 3), float64)"
)
_ONE_TILE = "for bi, bj in ((cuda.blockIdx.y, cuda.blockIdx.x),):"
TILED_EARLY_RETURN = TILED.format(
    arrays=_TWO_LINES,
    loop=_ONE_TILE,
    early_return="if i >= out.shape[0] or j >= out.shape[1]:\n            return",
)
TILED_ONE_LINE = TILED.format(
    arrays="xs, ys = cuda.shared.array((TILE, 3), float64), cuda.shared.array((TILE, 3), float64)",
    loop=_ONE_TILE,
    early_return="",
)
TILED_GRID_STRIDE = TILED.format(
    arrays=_TWO_LINES,
    loop="for bi in range(cuda.blockIdx.y, (out.shape[0] + TILE - 1) // TILE, cuda.gridDim.y):\n"
    "      for bj in range(cuda.blockIdx.x, (out.shape[1] + TILE - 1) // TILE, cuda.gridDim.x):",
    early_return="",
)

COALESCED_GRID_STRIDE = """
@cuda.jit
def coalesced_distance_kernel(x, y, out):
    j0, i0 = cuda.grid(2)
    sj, si = cuda.gridsize(2)
    for i in range(i0, out.shape[0], si):
        for j in range(j0, out.shape[1], sj):
            acc = 0.0
            for k in range(x.shape[1]):
                d = x[i, k] - y[j, k]
                acc += d * d
            out[i, j] = acc
"""

# The shuffle loop is written out here, not demos.patterns.warp_reduce.warp_reduce_sum: these
# cases vary the loop itself (a butterfly, half the lanes), which the shared function cannot.
WARP_SUM = """
BLOCK = 64
WARPS = BLOCK // 32
@cuda.jit
def warp_sum(values, partial):
    shared = cuda.shared.array(WARPS, float32)
    t = cuda.threadIdx.x
    lane, warp = t % 32, t // 32
    acc = float32(0)
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        acc += values[i]
    offset = 16
    while offset > 0:
        {shuffle}
        offset //= 2
    if lane == 0:
        shared[warp] = acc
    cuda.syncthreads()
    if t == 0:
        total = float32(0)
        for w in range(WARPS):
            total += shared[w]
        partial[cuda.blockIdx.x] = total
"""
BUTTERFLY = WARP_SUM.format(shuffle="acc += cuda.shfl_xor_sync(0xFFFFFFFF, acc, offset)")
HALF_WARP_SHUFFLE = WARP_SUM.format(
    shuffle="if lane < 16:\n            acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)"
)
