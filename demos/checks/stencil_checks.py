"""The check of chapter 4c's shared-memory stencil (``stencil_shared``): a tile plus its halo.

The student's kernel loads its block's elements and ``RADIUS`` more on each side
into shared memory, waits, and averages the neighbours from there. The check runs
it in the simulator, counted (:func:`~demos.checks.counted_runs.counted_run`), with
the student's ``RADIUS`` and once more with a larger one (a halo written for a
radius of 1 only is caught), in blocks of 32 on lengths with a part-filled last
block. It names what went wrong where: a race (no barrier between loading the
tile and reading it), a halo cell read before any thread set it, a read before
the start or past the end of the array (the simulator's NumPy would wrap a
negative index silently; a GPU reads whatever lies there), a wrong output at a
block's edge (the halo) or at the array's border (the first and last RADIUS
elements keep their value), or neighbours read from global memory instead of
the tile.

Any RADIUS from 1 to the block size works (the first RADIUS threads load the
halo, so a block needs at least RADIUS threads); the runs in the simulator use
blocks of 32, or RADIUS + 1 where that is more. The chapter calls the block size
``STENCIL_BLOCK`` (its scan has a ``SCAN_BLOCK`` of its own); a kernel that reads
a plain ``BLOCK`` is checked the same way, and the messages use its name.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from demos.checks._harness import (
    SENTINEL,
    CheckFailed,
    GuardedInput,
    GuardedOutput,
    compare,
    launch,
    on_gpu,
    require_shared_memory,
)
from demos.checks.block_names import in_its_words
from demos.checks.counted_runs import counted_run, fixed_constants, raise_sync_problems
from demos.patterns import scan, stencil
from demos.patterns.simulator import python_function

CHECK_BLOCK = 32
#: What a chapter cell may call its stencil's block size: chapter 4c's name, then the plain one.
BLOCK_NAMES = ("STENCIL_BLOCK", "BLOCK")
_OUTSIDE = (
    "The tile has BLOCK + 2 * RADIUS cells: thread t's own element is tile[t + RADIUS], its "
    "neighbours tile[t] to tile[t + 2 * RADIUS]; x is read only where the index is inside it "
    "(0 elsewhere), and out written only where i < n."
)
_ADVICE = {
    "read": "Wait with cuda.syncthreads() after loading the tile and before reading the "
    "neighbours: they were loaded by other threads.",
    "uninitialised": "A halo cell was never loaded: the first RADIUS threads of the block also "
    "load tile[t] = x[i - RADIUS] and tile[t + BLOCK + RADIUS] = x[i + BLOCK] (0 outside the "
    "array).",
    "write": "Each tile cell is loaded by one thread: its own element at tile[t + RADIUS], the "
    "halo by the first RADIUS threads.",
    "barriers": "Keep cuda.syncthreads() outside every `if`, so that every thread reaches it.",
}


def _constant(kernel: Any, name: str, low: int, high: int) -> int | None:
    value = python_function(kernel).__globals__.get(name)
    if isinstance(value, int) and not isinstance(value, bool) and low <= value <= high:
        return value
    return None


def _block_name(kernel: Any) -> str:
    return scan.block_name(kernel, BLOCK_NAMES) or BLOCK_NAMES[0]


def _recompiled(kernel: Any, block: int, radius: int) -> tuple[Any, tuple[str, ...]]:
    """*kernel* compiled with its block size = *block* and RADIUS = *radius*, and every other
    module constant it reads that equals its block + 2 * RADIUS (the tile's size, ``TILE``)
    following them; the names changed."""
    fn = python_function(kernel)
    name = _block_name(kernel)
    tile = fn.__globals__.get(name, 0) + 2 * fn.__globals__.get("RADIUS", 0)
    names = {name: block, "RADIUS": radius}
    for other in fn.__code__.co_names:
        value = fn.__globals__.get(other)
        if other not in names and type(value) is int and value == tile:
            names[other] = block + 2 * radius
    return scan.with_constants(kernel, **names), tuple(names)


def _simulated_block(radius: int) -> int:
    """The block of the simulated runs: 32 threads, or RADIUS + 1 where the halo needs more."""
    return max(CHECK_BLOCK, radius + 1)


def _outside_reads(log: Any, n: int) -> list[int]:
    return sorted(k[1][0] for k in log.reads if k[0] == "x" and not 0 <= k[1][0] < n)


def _diagnose(
    out: np.ndarray, x: np.ndarray, expected: np.ndarray, radius: int, block: int, what: str
) -> None:
    wrong = np.flatnonzero(~np.isclose(out, expected, rtol=1e-5, atol=1e-6))
    if not wrong.size:
        return
    n, k = len(out), int(wrong[0])
    t, b = k % block, k // block
    where = f"out[{k}] (block {b}, thread {t})"
    said = (
        f"{what}: {where} is {float(out[k]):.6g}, expected {float(expected[k]):.6g} "
        f"({wrong.size} of {n} wrong)"
    )
    border = k < radius or k >= n - radius
    if out[k] == SENTINEL:
        keep = " It lies on the array's border, where out[i] = x[i]." if border else ""
        raise CheckFailed(
            f"{said}: no thread wrote it. Every thread with i < n writes out[i].{keep}"
        )
    if not border and out[k] == x[k]:
        raise CheckFailed(
            f"{said}: it kept its value x[{k}] as if on the border, but only the first and last "
            f"RADIUS = {radius} elements are: i < RADIUS or i >= n - RADIUS."
        )
    if border:
        raise CheckFailed(
            f"{said}. It lies on the array's border (the first and last RADIUS = {radius} "
            "elements), which has no full neighbourhood: there out[i] = x[i]."
        )
    if t < radius or t >= block - radius:
        raise CheckFailed(
            f"{said}. It is at the edge of its block, where the neighbours come from the halo: "
            "are tile[0 .. RADIUS - 1] and the RADIUS cells after the block's own loaded with the "
            "elements left and right of the block?"
        )
    raise CheckFailed(
        f"{said}. out[i] is the mean of x[i - RADIUS] .. x[i + RADIUS], read from the tile at "
        "tile[t] .. tile[t + 2 * RADIUS]."
    )


def _run(kernel: Any, radius: int, block: int, n: int, seed: int) -> float:
    """One counted launch in blocks of *block*; the most reads of one input element."""
    x = np.random.default_rng(seed).random(n).astype(np.float32)
    blocks = math.ceil(n / block)
    what = f"RADIUS = {radius}, BLOCK = {block}, n = {n} ({blocks} blocks)"
    out = np.full(n, SENTINEL, np.float32)
    log, _ = counted_run(kernel, blocks, block, {"x": x, "out": out}, what, _OUTSIDE)
    raise_sync_problems(log, what, _ADVICE)
    outside = _outside_reads(log, n)
    if outside:
        raise CheckFailed(
            f"{what}: a thread read x[{outside[0]}], outside the array of {n} elements "
            f"({len(outside)} read(s) outside in all; NumPy wraps a negative index, a GPU reads "
            "whatever "
            "memory lies there). Load a halo cell only where its index is inside the array, "
            "and 0 elsewhere."
        )
    _diagnose(out, x, stencil.reference(x, radius), radius, block, what)
    inside = range(radius, n - radius)  # a border element may be read once more (out[i] = x[i])
    most = max(
        (c for key, c in log.reads.items() if key[0] == "x" and key[1][0] in inside), default=0
    )
    tiles = 1 + math.ceil(2 * radius / block)  # the tiles an element lies in: own, and halos
    if most > tiles:
        raise CheckFailed(
            f"{what}: right values, but an element of x was read {most} times from global "
            "memory. Each element is loaded once into its block's tile (and once more as a "
            "neighbouring block's halo); read the neighbours from the tile."
        )
    return most


@in_its_words(BLOCK_NAMES)
def stencil_shared(kernel: Any) -> str:
    """Right means with the student's RADIUS and a larger one, edges and borders included; no
    race; each input read from global memory at most twice."""
    require_shared_memory(
        kernel,
        "load the block's elements and their halo into cuda.shared.array, wait with "
        "cuda.syncthreads(), then read the neighbours from the tile.",
    )
    name = _block_name(kernel)
    block = _constant(kernel, name, 1, 1024)
    written = python_function(kernel).__globals__.get("RADIUS")
    if block is None or written is None:
        raise CheckFailed(
            "the kernel needs the constants BLOCK (threads per block, 1 to 1,024) and RADIUS "
            "(neighbours on each side, 1 to BLOCK) above it: the tile's length "
            "BLOCK + 2 * RADIUS must be known when the kernel is compiled."
        )
    radius = _constant(kernel, "RADIUS", 1, block)
    if radius is None:
        raise CheckFailed(
            f"RADIUS = {written!r}: a radius is a whole number from 1 to BLOCK (= {block} here). "
            "The first RADIUS threads of a block load the halo, so a block needs at least RADIUS "
            "threads; any such radius works, a larger one needs a larger BLOCK."
        )
    simulated = kernel
    if block > 2 * CHECK_BLOCK:  # the simulator is slow: a large BLOCK is compiled smaller
        smaller = _simulated_block(radius)
        if smaller < block:
            simulated, block = _recompiled(kernel, smaller, radius)[0], smaller
    for seed, n in enumerate((3 * block + 5, block, 2 * radius + 3)):
        _run(simulated, radius, block, n, seed)
    wider = radius + 1
    other, changed = _recompiled(kernel, _simulated_block(wider), wider)
    try:
        _run(other, wider, _simulated_block(wider), 4 * _simulated_block(wider) - 27, 9)
    except CheckFailed as problem:
        raise CheckFailed(
            f"{problem} Your kernel passed with RADIUS = {radius}: does all of it follow RADIUS "
            "(a halo of RADIUS cells on each side, loaded by the first RADIUS threads)?"
            f"{fixed_constants(kernel, 'RADIUS', *(c for c in changed if c != 'RADIUS'))}"
        ) from None
    if on_gpu():
        _on_the_gpu(kernel, radius)
    return (
        f"right means with RADIUS = {radius} and {wider}, at block edges and the array's borders, "
        "part-filled last blocks included; no race, and each element of x read from global "
        "memory at most twice away from the borders (its own block's tile and a neighbour's "
        "halo)."
    )


def _on_the_gpu(kernel: Any, radius: int) -> None:
    """The compiled kernel on the GPU with its own BLOCK, input and output guarded."""
    block = _constant(kernel, _block_name(kernel), 1, 1024)
    n = 100_003
    x = np.random.default_rng(15).random(n).astype(np.float32)
    source = GuardedInput(x)
    out = GuardedOutput((n,), np.float32)
    what = f"on the GPU, BLOCK = {block}, n = {n:,}"
    launch(kernel, math.ceil(n / block), block, source.view, out.view, what=what)
    compare(out.fetch(what), stencil.reference(x, radius), what, rtol=1e-5, atol=1e-6)
