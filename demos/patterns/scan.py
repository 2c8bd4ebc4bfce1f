"""Prefix sums (scans) on the GPU, as chapter 4c builds them: one block, then any length.

An inclusive scan of ``x`` is ``y[i] = x[0] + ... + x[i]`` (``numpy.cumsum``); an
exclusive scan leaves ``x[i]`` out (``y[0] = 0``). One block scans its ``block``
elements in shared memory with the work-efficient up-sweep and down-sweep:
about 2 additions per element and ``2 log2(block)`` barriers, where the simpler
doubling scan does ``log2(block)`` additions per element.
:func:`block_scan_kernel` makes that kernel; a longer array is scanned in three
launches (:func:`inclusive_scan`): each block scans its part and writes its total,
the totals are scanned the same way (recursively, when there are more blocks than
a block holds), and :func:`add_offsets_kernel` adds to every element of block b
the sum of the blocks before it.

The chapter's model answers (``demos/checks/answers/``) are these kernels as a
student writes them; the benchmark (:mod:`demos.patterns.scan_bench`) times them
against ``cupy.cumsum``.
"""

from __future__ import annotations

import functools
import inspect
import math
import types
from typing import Any

import numpy as np
from numba import cuda, int32

from demos.patterns.simulator import python_function

__all__ = [
    "BLOCK",
    "BLOCK_NAMES",
    "add_offsets_kernel",
    "block_name",
    "block_of",
    "block_scan_kernel",
    "inclusive_scan",
    "scan_plan",
    "sweep_steps",
    "scan_adds",
    "with_constants",
]

BLOCK = 256  # elements (and threads) per block of the course's scan: a power of two
#: What a chapter cell may call its scan's block size: chapter 4c's name (its stencil has its own,
#: so that changing one leaves the other alone), then the plain name (the exercises' kernels).
BLOCK_NAMES = ("SCAN_BLOCK", "BLOCK")


def _check_block(block: Any) -> int:
    if isinstance(block, bool) or not isinstance(block, (int, np.integer)):
        raise TypeError(f"block must be an int, not {type(block).__name__}")
    if not 32 <= block <= 1024 or block & (block - 1):
        raise ValueError(f"block must be a power of two from 32 to 1,024, not {block}")
    return int(block)


@functools.cache
def block_scan_kernel(block: int = BLOCK) -> Any:
    """``kernel[blocks, block](values, out, totals)``: each block's inclusive scan and total."""
    block = _check_block(block)

    @cuda.jit
    def kernel(values, out, totals):
        s = cuda.shared.array(block, int32)
        t = cuda.threadIdx.x
        i = cuda.blockIdx.x * block + t
        own = values[i] if i < values.shape[0] else 0  # zeros past the end change no sum
        s[t] = own
        cuda.syncthreads()
        d = 1
        while d < block:  # up-sweep: s[t] becomes the sum of its 2d-element subtree
            if (t + 1) % (2 * d) == 0:
                s[t] += s[t - d]
            cuda.syncthreads()
            d *= 2
        if t == block - 1:
            totals[cuda.blockIdx.x] = s[t]
            s[t] = 0
        cuda.syncthreads()
        d = block // 2
        while d > 0:  # down-sweep: pass each left subtree's prefix down, exclusive
            if (t + 1) % (2 * d) == 0:
                left = s[t - d]
                s[t - d] = s[t]
                s[t] += left
            cuda.syncthreads()
            d //= 2
        if i < values.shape[0]:
            out[i] = s[t] + own  # exclusive + own value = inclusive

    return kernel


@cuda.jit
def add_offsets_kernel(out, scanned_totals):
    """Add to every element of block b the sum of blocks 0 .. b - 1 (``scanned_totals[b - 1]``)."""
    i = cuda.grid(1)
    b = cuda.blockIdx.x
    if b > 0 and i < out.shape[0]:
        out[i] += scanned_totals[b - 1]


def inclusive_scan(
    values: Any, block: int = BLOCK, scan_kernel: Any = None, add_kernel: Any = None
) -> Any:
    """``numpy.cumsum(values)`` of int32 *values* with the kernels: host in, host out; device
    arrays in, a device array out (nothing synchronised: time it with CUDA events).

    *scan_kernel* and *add_kernel* replace the course's kernels (a student's, with the same
    *block*).
    """
    if getattr(values, "ndim", None) != 1:
        raise ValueError("values must be a 1-D array")
    if np.dtype(values.dtype) != np.int32:
        raise TypeError(
            f"values must be int32 (the kernels' shared arrays are), not {values.dtype}"
        )
    if values.shape[0] == 0:
        return values.copy()
    run = scan_plan(values.shape[0], block, scan_kernel, add_kernel)
    if isinstance(values, np.ndarray):
        return run(cuda.to_device(values)).copy_to_host()
    return run(values)


def scan_plan(
    n: int,
    block: int = BLOCK,
    scan_kernel: Any = None,
    add_kernel: Any = None,
    empty: Any = None,
) -> Any:
    """A function ``values -> out``, the inclusive scan of *n* int32 device values, with every
    buffer allocated once here (so that a timed call allocates nothing).

    Level 0 scans the values in blocks and writes one total per block; level 1
    scans those totals the same way, and so on until one block holds them all.
    Then, from the top down, every block of a level gets the scanned totals of
    the blocks before it added (``add_kernel``). *empty* (size -> int32 device
    array) defaults to Numba's ``cuda.device_array``.
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    block = _check_block(block)
    scan_kernel = scan_kernel or block_scan_kernel(block)
    add_kernel = add_kernel or add_offsets_kernel
    empty = empty or (lambda size: cuda.device_array(size, np.int32))
    levels = []  # (blocks, out, totals) from the values up to a single block
    size = n
    while True:
        blocks = math.ceil(size / block)
        levels.append((blocks, empty(size), empty(blocks)))
        if blocks == 1:
            break
        size = blocks

    def run(values: Any) -> Any:
        x = values
        for blocks, out, totals in levels:
            scan_kernel[blocks, block](x, out, totals)
            x = totals
        for (blocks, out, _), (_, scanned, _) in reversed(list(zip(levels, levels[1:]))):
            add_kernel[blocks, block](out, scanned)
        return levels[0][1]

    return run


def sweep_steps(values: Any) -> list[tuple[str, np.ndarray]]:
    """The shared array of one block after each step of the work-efficient scan, on the host
    (for the chapter to print): ``(what the step did, the array)``, ending with the inclusive
    scan. The length must be a power of two."""
    x = np.array(values, dtype=np.int64)
    size = len(x)
    if size < 2 or size & (size - 1):
        raise ValueError(f"need a power of two of at least 2 values, not {size}")
    s, steps = x.copy(), [("loaded", x.copy())]
    d = 1
    while d < size:
        for t in range(2 * d - 1, size, 2 * d):  # the threads with (t + 1) % (2 d) == 0
            s[t] += s[t - d]
        steps.append((f"up-sweep, d = {d}", s.copy()))
        d *= 2
    s[-1] = 0
    steps.append(("total saved, last set to 0", s.copy()))
    d = size // 2
    while d > 0:
        for t in range(2 * d - 1, size, 2 * d):
            s[t - d], s[t] = s[t], s[t] + s[t - d]
        steps.append((f"down-sweep, d = {d}", s.copy()))
        d //= 2
    steps.append(("+ own value: inclusive", s + x))
    return steps


def scan_adds(n: int, method: str) -> int:
    """Additions a scan of *n* elements makes: ``"sequential"`` (n - 1), ``"work-efficient"``
    (about 2 n), ``"doubling"`` (Hillis-Steele: n log2 n less the missing partners)."""
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    if method == "sequential":
        return n - 1
    steps = math.ceil(math.log2(n)) if n > 1 else 0
    if method == "work-efficient":
        return 2 * (2**steps - 1)
    if method == "doubling":
        return sum(n - 2**k for k in range(steps))
    raise ValueError(f"unknown method {method!r}: sequential, work-efficient or doubling")


def block_name(kernel: Any, names: tuple[str, ...] = BLOCK_NAMES) -> str | None:
    """Which of *names* is the module-level block size of *kernel*: the first its code reads,
    else the first its module defines; None when it has none of them."""
    fn = python_function(kernel)
    read = [name for name in names if name in fn.__code__.co_names]
    defined = [name for name in names if name in fn.__globals__]
    return (read or defined or [None])[0]


def block_of(kernel: Any) -> int | None:
    """The block a scan kernel was compiled for: the ``block`` it closes over (the course's
    kernels) or the module-level ``SCAN_BLOCK`` (or ``BLOCK``) it reads (a chapter cell's), if a
    power of two from 32 to 1,024; else None."""
    fn = python_function(kernel)
    closure = inspect.getclosurevars(fn).nonlocals
    name = block_name(kernel)
    value = closure["block"] if "block" in closure else fn.__globals__.get(name or "")
    try:
        return _check_block(value)
    except (TypeError, ValueError):
        return None


def with_constants(kernel: Any, **constants: int) -> Any:
    """*kernel* compiled again from its Python source with module-level constants replaced
    (``BLOCK=32``, ``RADIUS=2``): a new kernel, so that a check can try a student's kernel with
    another block size or stencil radius than the one written."""
    fn = python_function(kernel)
    scope = dict(fn.__globals__, **constants)
    again = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    return cuda.jit(again)
