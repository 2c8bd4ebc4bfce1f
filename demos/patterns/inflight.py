"""A sum kernel's loads per iteration and its launch: what chapter 4b's bytes-in-flight sweep
varies.

The chapter's ``wide_sum`` kernel issues ``LOADS`` independent loads per loop
iteration. ``LOADS`` is a module constant, not an argument, because Numba
compiles a global as a constant: the loop over the loads is then unrolled and
the values live in registers. To run the same kernel with other ``LOADS``,
:func:`with_loads` compiles its Python source again with the constant
replaced. The block size is a launch parameter; :func:`blocks_for` sizes the
grid so that every multiprocessor holds as many threads as it can, whatever the
block size, so that a sweep compares loads in flight, not occupancy.

:data:`wide_sum` is the course's kernel, the one ``python -m demos bench
inflight`` measures; the chapter's model answer (``demos/checks/answers/``) is
the same kernel as a student would write it.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

from numba import cuda, float32

from demos.patterns.simulator import python_function
from demos.patterns.warp_reduce import warp_reduce_sum

__all__ = ["LOADS", "MAX_LOADS", "blocks_for", "loads_of", "wide_sum", "with_loads"]

MAX_LOADS = 64  # more would spill the registers of any GPU; a LOADS beyond it is a typo
LOADS = 4  # the course kernel's loads per thread and iteration (with_loads compiles others)


@cuda.jit
def wide_sum(values, partial):
    """One partial sum per block; each thread keeps LOADS coalesced loads on their way at once."""
    shared = cuda.shared.array(32, float32)  # one slot per warp: blocks of up to 1,024 threads
    t = cuda.threadIdx.x
    lane, warp = t % 32, t // 32
    n, stride = values.shape[0], cuda.gridsize(1)
    got = cuda.local.array(LOADS, float32)  # registers: unrolled, since LOADS is a constant
    acc = float32(0)
    for start in range(cuda.grid(1), n, LOADS * stride):
        for k in range(LOADS):  # independent loads; a warp's k-th ones are neighbours
            i = start + k * stride
            got[k] = values[i] if i < n else float32(0)  # the last group may pass the end
        for k in range(LOADS):
            acc += got[k]
    acc = warp_reduce_sum(acc)  # the warp's sum, in lane 0
    if lane == 0:
        shared[warp] = acc
    cuda.syncthreads()
    if warp == 0:  # the first warp sums the warps' sums
        acc = shared[lane] if lane < cuda.blockDim.x // 32 else float32(0)
        acc = warp_reduce_sum(acc)
        if lane == 0:
            partial[cuda.blockIdx.x] = acc


def loads_of(kernel: Any) -> int | None:
    """The ``LOADS`` constant a kernel reads (a module-level int from 1 to MAX_LOADS), or None."""
    names = inspect.getclosurevars(python_function(kernel))
    value = names.globals.get("LOADS")
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_LOADS:
        return value
    return None


def with_loads(kernel: Any, loads: int) -> Any:
    """*kernel* compiled again from its Python source with ``LOADS = loads`` (a new kernel).

    Raises ValueError when the kernel reads no module-level ``LOADS`` or *loads*
    is out of range.
    """
    if not isinstance(loads, int) or not 1 <= loads <= MAX_LOADS:
        raise ValueError(f"loads must be an int from 1 to {MAX_LOADS}, not {loads!r}")
    fn = python_function(kernel)
    if loads_of(kernel) is None:
        raise ValueError(
            f"{fn.__name__} reads no module-level constant LOADS (an int from 1 to {MAX_LOADS})"
        )
    scope = dict(fn.__globals__, LOADS=loads)
    again = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    return cuda.jit(again)


def blocks_for(threads: int, multiprocessors: int, threads_per_multiprocessor: int) -> int:
    """Blocks of *threads* that fill every multiprocessor: as many as one holds, on each.

    Raises ValueError for a block that is no multiple of 32 (a warp) or larger
    than a multiprocessor holds.
    """
    if threads % 32 or not 32 <= threads <= min(1024, threads_per_multiprocessor):
        raise ValueError(
            f"threads per block must be a multiple of 32 from 32 to "
            f"{min(1024, threads_per_multiprocessor)}, not {threads}"
        )
    if multiprocessors < 1:
        raise ValueError(f"need at least one multiprocessor, not {multiprocessors}")
    return multiprocessors * (threads_per_multiprocessor // threads)
