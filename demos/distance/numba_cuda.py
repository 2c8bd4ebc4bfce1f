"""The Numba CUDA distance matrix: choose a kernel from a table, launch it, say which one ran.

The kernels live in :mod:`demos.distance.cuda_teaching` (naive, coalesced,
tiled, symmetric: what chapter 4 shows) and :mod:`demos.distance.cuda_tuned`
(rows, pairs, quads: the write-bound case). This module holds one
:class:`KernelSpec` per kernel (how to build it, its launch grid, what it needs
and what runs instead when that is missing), and the public API:

* :func:`distance_matrix` (NumPy in, NumPy out);
* :func:`distance_matrix_device` (device arrays in and out, asynchronous,
  nothing copied), which accepts Numba device arrays and CuPy arrays;
* :func:`plan_launch`, which answers which kernel a call would run and why, so
  that a substitution (quads on float64 data, symmetric with two point sets, ...)
  is never silent: ``strict=True`` turns it into an error.

Small calls are dominated by Python, not by the GPU: at n = 256 the kernel takes
a few microseconds. So the plan (kernel, grid, compiled code) is cached per
problem shape, inputs are not scanned for NaN on the device (a pass and a sync),
and on a real GPU the compiled kernel is launched directly with the arrays'
addresses (:mod:`demos.distance.cuda_launch`) instead of through Numba's
argument conversion, which rebuilds a Numba view of every CuPy array per call.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import cuda

from demos import hardware
from demos.distance import cuda_launch, cuda_tuned
from demos.distance.cuda_teaching import (
    SYM_ROWS,
    SYM_TILE,
    TILE,
    coalesced_kernel,
    naive_kernel,
    symmetric_kernel_for,
    tiled_kernel_for,
)
from demos.distance.cuda_tuned import ROWS_MAX_D, Layout, layout_of
from demos.validation import check_output, check_pair, require_device, require_host

__all__ = [
    "BEST",
    "KERNELS",
    "best_kernel",
    "coalesced_kernel",
    "distance_matrix",
    "distance_matrix_device",
    "launch_config",
    "naive_kernel",
    "plan_launch",
    "rows_per_thread_for",
    "tiled_kernel_for",
]

# "best" per dtype, from the H200 sweep (python -m demos bench kernels): 16-byte stores
# of four float32 win for float32; for float64 the plain 8-byte stores of "rows" win
# (16-byte pairs of float64 measured slower there).
BEST = {"float32": "quads", "float64": "rows"}
ROWS_BLOCK = 128  # "rows"/"pairs"/"quads": threads per block, all along the columns
ROWS_PER_THREAD = {"rows": 16, "pairs": 32, "quads": 32}  # 16..128 are within 5% for pairs/quads
BLOCKS_PER_SM_AT_LEAST = 4  # a launch with fewer blocks per multiprocessor leaves SMs idle
MAX_GRID_Y = 65535  # CUDA's limit on gridDim.y (and z)
ALIGNMENT = 16  # the widest store (quads) needs 16-byte aligned output
WHAT = "The Numba CUDA distance matrix"


@dataclass(frozen=True)
class Problem:
    """What decides the kernel and its launch: sizes, dtype, and the output's layout."""

    n: int
    m: int
    d: int
    dtype: np.dtype
    same_points: bool  # one point set: D is symmetric
    out: Layout


@dataclass(frozen=True)
class KernelSpec:
    """One kernel: how to build it, its launch grid, what it needs, and what runs instead."""

    build: Callable[[np.dtype, int, int], Any]  # (dtype, d, rows per thread) -> kernel
    grid: Callable[[Problem, tuple[int, ...], int], tuple[int, ...]]  # (problem, block, rpt)
    block: tuple[int, ...] | None  # compiled-in block shape, or None where callers choose
    lanes: int = 1  # output columns per store (the output is viewed wider)
    max_d: int | None = None  # most coordinates the kernel keeps in registers
    symmetric: bool = False  # takes (x, out) and needs one point set
    fallback: str | None = None

    def missing(self, problem: Problem) -> str | None:
        """Why this kernel cannot run *problem*, or None when it can."""
        if self.symmetric and not problem.same_points:
            return "two different point sets give no symmetric matrix"
        if self.max_d is not None and problem.d > self.max_d:
            return f"{problem.d} coordinates would not fit in registers (at most {self.max_d})"
        if self.lanes > 1 and cuda_tuned.widened(problem.out, self.lanes) is None:
            return (
                f"a {problem.dtype.name} output of {problem.m} columns at this address cannot be "
                f"stored {self.lanes} columns at a time"
            )
        return None


def _row_chunks(lanes: int) -> Callable[[Problem, tuple[int, ...], int], tuple[int, ...]]:
    """Grid of the tuned kernels: columns (in stores of *lanes*) along x, row chunks along y."""

    def grid(problem: Problem, block: tuple[int, ...], rows_per_thread: int) -> tuple[int, ...]:
        columns = math.ceil(problem.m / lanes)
        y = min(math.ceil(problem.n / rows_per_thread), MAX_GRID_Y)  # the kernel loops past it
        return math.ceil(columns / block[0]), y

    return grid


def _tuned(build: Callable, lanes: int, fallback: str) -> KernelSpec:
    return KernelSpec(build, _row_chunks(lanes), None, lanes, ROWS_MAX_D, fallback=fallback)


SPECS: dict[str, KernelSpec] = {
    "naive": KernelSpec(lambda *_: naive_kernel, lambda p, b, r: (p.n, p.m), (1, 1)),
    "coalesced": KernelSpec(
        lambda *_: coalesced_kernel,
        lambda p, b, r: (math.ceil(p.m / b[0]), math.ceil(p.n / b[1])),
        None,
    ),
    "tiled": KernelSpec(
        lambda dtype, *_: tiled_kernel_for(dtype),
        lambda p, b, r: (math.ceil(p.m / TILE), math.ceil(p.n / TILE)),
        (TILE, TILE),
    ),
    "symmetric": KernelSpec(
        lambda dtype, *_: symmetric_kernel_for(dtype),
        lambda p, b, r: (math.ceil(p.n / SYM_TILE),) * 2,
        (SYM_TILE, SYM_ROWS),
        symmetric=True,
        fallback="tiled",
    ),
    "rows": _tuned(cuda_tuned.rows_kernel_for, 1, "tiled"),
    "pairs": _tuned(cuda_tuned.pairs_kernel_for, 2, "rows"),
    "quads": _tuned(cuda_tuned.quads_kernel_for, 4, "pairs"),
}
KERNELS = tuple(SPECS)


def best_kernel(dtype: Any = np.float32) -> str:
    """The fastest kernel for *dtype* on the H200 sweep (:data:`BEST`)."""
    return BEST[np.dtype(dtype).name]


@dataclass(frozen=True)
class Launch:
    """What a call runs: the kernel (after any fallback), why, and its launch configuration."""

    requested: str
    kernel: str
    reasons: tuple[str, ...]  # one sentence per substitution, empty when none
    grid: tuple[int, ...]
    block: tuple[int, ...]
    rows_per_thread: int | None
    out_view: Layout | None = None  # the output as a pairs/quads kernel stores it (address 0)

    @property
    def substituted(self) -> bool:
        """True when another kernel than the one asked for ("best": the dtype's best) runs."""
        return bool(self.reasons)


def _check_name(kernel: str) -> str:
    if kernel != "best" and kernel not in SPECS:
        raise ValueError(f"unknown kernel {kernel!r}; choose one of {KERNELS + ('best',)}")
    return kernel


def _choose(requested: str, problem: Problem) -> tuple[str, tuple[str, ...]]:
    """Follow the fallback chain from *requested* until a kernel can run *problem*."""
    name = best_kernel(problem.dtype) if requested == "best" else requested
    reasons: list[str] = []
    while (reason := SPECS[name].missing(problem)) is not None:
        fallback = SPECS[name].fallback
        reasons.append(f"{name} cannot run ({reason}): {fallback} runs instead")
        name = fallback
    return name, tuple(reasons)


def _block_for(name: str, spec: KernelSpec, block: Any) -> tuple[int, ...]:
    if spec.block is not None:
        given = None if block is None else tuple(int(b) for b in np.atleast_1d(block))
        if given not in (None, spec.block) and not (name == "naive" and given == (1,)):
            if name == "naive":
                raise ValueError("the naive kernel is always launched with blocks of one thread")
            raise ValueError(
                f"the {name} kernel has its block shape {spec.block} compiled in, got {block}"
            )
        return spec.block
    if name == "coalesced":
        return (32, 8) if block is None else tuple(int(b) for b in np.atleast_1d(block))
    threads = ROWS_BLOCK if block is None else int(np.prod(block))
    return (threads,)


def rows_per_thread_for(name: str, n: int, column_blocks: int, multiprocessors: int) -> int:
    """Rows each thread of a tuned kernel walks, chosen for the GPU it runs on.

    More rows per thread share each thread's column point and index arithmetic
    over more outputs (:data:`ROWS_PER_THREAD`, from the H200 sweep, where 16 to
    128 are within 5 %), but fewer rows per thread make more blocks. A GPU with
    more multiprocessors, or a smaller matrix, needs more blocks to give each
    multiprocessor :data:`BLOCKS_PER_SM_AT_LEAST` of them: the rows per thread
    shrink until it does. *multiprocessors* 0 (not known: no GPU) keeps the table.
    """
    best = ROWS_PER_THREAD[name]
    if multiprocessors < 1:
        return best
    row_chunks = math.ceil(BLOCKS_PER_SM_AT_LEAST * multiprocessors / max(1, column_blocks))
    return max(1, min(best, n // row_chunks))


@functools.lru_cache(maxsize=512)
def _plan(requested: str, problem: Problem, block: Any, rows_per_thread: int | None) -> Launch:
    """The launch for *problem*, cached: a repeated call of one shape costs a dict lookup."""
    name, reasons = _choose(requested, problem)
    spec = SPECS[name]
    blk = _block_for(name, spec, block)
    rpt = None
    if spec.max_d:
        column_blocks = math.ceil(math.ceil(problem.m / spec.lanes) / blk[0])
        sms = hardware.multiprocessors()
        rpt = int(rows_per_thread or rows_per_thread_for(name, problem.n, column_blocks, sms))
    if (rpt is not None and rpt < 1) or min(blk) < 1:
        raise ValueError(f"rows_per_thread and block must be >= 1, got {rows_per_thread}, {block}")
    view = cuda_tuned.widened(problem.out, spec.lanes) if spec.lanes > 1 else None
    grid = tuple(spec.grid(problem, blk, rpt))
    return Launch(requested, name, reasons, grid, blk, rpt, view and view._replace(pointer=0))


def _problem(x: Any, y: Any, out: Layout, same: bool) -> Problem:
    """The cache key of a call: only the output address's alignment matters, not the address."""
    aligned_out = out._replace(pointer=out.pointer % ALIGNMENT)
    return Problem(x.shape[0], y.shape[0], x.shape[1], np.dtype(x.dtype), same, aligned_out)


def launch_config(
    kernel: str,
    n: int,
    m: int,
    block: tuple[int, ...] | int | None = None,
    *,
    dtype: Any = np.float32,
    d: int = 3,
    rows_per_thread: int | None = None,
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(grid, block) of *kernel* on a contiguous n x m output, without running anything.

    *block* overrides the default block shape where the kernel allows it
    ("coalesced": any (bx, by); "rows"/"pairs"/"quads": threads per block). The
    tiled and symmetric kernels have their tile sizes compiled in, and "naive"
    always uses one thread per block, as in the original course.
    """
    dtype = np.dtype(dtype)
    out = Layout(0, (n, m), (m * dtype.itemsize, dtype.itemsize), dtype)
    plan = _plan(_check_name(kernel), Problem(n, m, d, dtype, n == m, out), block, rows_per_thread)
    return plan.grid, plan.block


def plan_launch(
    x: Any,
    y: Any = None,
    out: Any = None,
    *,
    kernel: str = "best",
    block: tuple[int, ...] | int | None = None,
    rows_per_thread: int | None = None,
) -> Launch:
    """The :class:`Launch` that :func:`distance_matrix_device` would make for these arrays.

    *out* defaults to a fresh C-contiguous (n, m) array (aligned, as allocators give).
    """
    x, y = check_pair(x, y, names=("x", "y"))
    n, m, dtype = x.shape[0], y.shape[0], np.dtype(x.dtype)
    layout = (
        Layout(0, (n, m), (m * dtype.itemsize, dtype.itemsize), dtype)
        if out is None
        else layout_of(check_output(out, n, m, dtype))
    )
    return _plan(_check_name(kernel), _problem(x, y, layout, y is x), block, rows_per_thread)


def distance_matrix_device(
    x: Any,
    y: Any = None,
    out: Any = None,
    *,
    kernel: str = "best",
    block: tuple[int, ...] | int | None = None,
    rows_per_thread: int | None = None,
    strict: bool = False,
) -> Any:
    """Squared distances of device arrays into a device array, asynchronously.

    *x* (n, d) and *y* (m, d, default *x*) are Numba device arrays or CuPy
    arrays; the result is written to *out* (shape (n, m), input dtype) when
    given, else to a new array of the inputs' library (CuPy for CuPy inputs).
    Nothing is synchronised or copied back: time it with CUDA events, or
    synchronise before reading the result. NaN inputs are not looked for (that
    would cost a pass over the data and a sync). *kernel* names a kernel of
    :data:`KERNELS` or "best" (per dtype); when it cannot run this problem the
    fallback of its :class:`KernelSpec` runs, unless *strict* makes that an
    error. :func:`plan_launch` tells which kernel runs and why.
    """
    x, y = check_pair(x, y, names=("x", "y"))
    require_device(x, y, out, backend=WHAT + " on device")
    n, m, dtype = x.shape[0], y.shape[0], np.dtype(x.dtype)
    if out is None:
        out = _empty_like_inputs(x, (n, m), dtype)
    else:
        check_output(out, n, m, dtype)
    out_layout = layout_of(out)
    plan = _plan(_check_name(kernel), _problem(x, y, out_layout, y is x), block, rows_per_thread)
    if strict and plan.substituted:
        raise ValueError("; ".join(plan.reasons))
    spec = SPECS[plan.kernel]
    compiled = spec.build(dtype, x.shape[1], plan.rows_per_thread or 1)
    if plan.out_view is not None:
        out_layout = plan.out_view._replace(pointer=out_layout.pointer)
    arrays = (x, out) if spec.symmetric else (x, y, out)
    if not cuda_launch.launch(compiled, plan, arrays, out_layout, spec.lanes):
        target = cuda_tuned.wide_view(out, spec.lanes) if spec.lanes > 1 else out
        args = (x, target) if spec.symmetric else (x, y, target)
        compiled[plan.grid, plan.block](*args)
    return out


def _empty_like_inputs(x: Any, shape: tuple[int, int], dtype: np.dtype) -> Any:
    """A new output in the inputs' library: CuPy's pool for CuPy inputs (no cudaMalloc per call)."""
    if type(x).__module__.split(".")[0] == "cupy":
        import cupy

        return cupy.empty(shape, dtype=dtype)
    return cuda.device_array(shape, dtype=dtype)


def distance_matrix(
    points: np.ndarray,
    other: np.ndarray | None = None,
    *,
    kernel: str = "best",
    block: tuple[int, ...] | int | None = None,
) -> np.ndarray:
    """Host in, host out: copy to the GPU, run *kernel*, copy the matrix back.

    Raises :class:`demos.hardware.GPUUnavailableError` when there is no GPU and
    the CUDA simulator is off (``NUMBA_ENABLE_CUDASIM=1`` runs it on the CPU).
    """
    if not hardware.simulator_enabled():
        hardware.require_gpu(WHAT)
    x, y = check_pair(points, other)
    require_host(x, y, backend=WHAT)
    d_x = cuda.to_device(np.ascontiguousarray(x))
    d_y = d_x if y is x else cuda.to_device(np.ascontiguousarray(y))
    d_out = distance_matrix_device(d_x, d_y, kernel=kernel, block=block)
    return d_out.copy_to_host()
