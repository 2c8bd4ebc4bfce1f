"""``python -m demos bench scan``: chapter 4c's scan and stencil on one GPU, against a copy.

A scan reads every element once and writes one output per element, as a copy
does, so the device copy's rate (:func:`demos.patterns.bench.copy_bandwidth`,
bytes read and written per second) is its yardstick: each record carries the
bytes a one-pass kernel must move (input read, output written) per second and
that rate as a fraction of the copy's. The course's three-launch scan
(:func:`demos.patterns.scan.inclusive_scan`: scan the blocks, scan the totals,
add the offsets) reads and writes the array twice; ``cupy.cumsum`` (CUB) scans
in a single pass. The stencil runs with radius 1 and 8, reading every neighbour
from global memory or from a tile in shared memory. Every result is checked
against NumPy on the host before it is timed.

Writes ``scan.json`` (layout: :mod:`demos.benchmarks.record`); the chapter's
reference is that file from an H100, shipped as ``demos/results/scan_h100.json``.
:func:`measure` takes the array module and the timer, so the tests run it on a
CPU with NumPy and the simulator at tiny sizes.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np
from numba import cuda

from demos import gpu_timer, hardware, live
from demos.benchmarks import record
from demos.kernel_testing import to_host
from demos.live import Expect, Row, Table
from demos.patterns import scan, stencil
from demos.patterns.bench import copy_bandwidth
from demos.patterns.copy_share import copy_share_rows, find

N = 2**26  # the reference size: 256 MB of int32 or float32, far beyond any cache
QUICK_N = 2**20
RADII = (1, 8)  # a three-point stencil, and one that reuses each element 17 times
SOURCES = ["demos/patterns/scan.py", "demos/patterns/stencil.py"]
REFERENCE = "scan_h100.json"
MAKE_REFERENCE = (
    f"python -m demos bench scan --output DIR, then copy DIR/scan.json to demos/results/{REFERENCE}"
)
COURSE_SCAN, LIBRARY = "three launches (block scan, totals, add)", "cupy.cumsum"


def _rate(name: str, ms: float, n: int, itemsize: int, copy: float, **extra: Any) -> dict:
    moved = 2 * n * itemsize / (ms / 1e3)  # one read and one write per element, at least
    return {
        "name": name,
        "ms": ms,
        "bytes_moved_per_s": moved,
        "fraction_of_copy": moved / copy,
        **extra,
    }


def _numba_view(array: Any) -> Any:
    """A CuPy array as a Numba device array that does not synchronise at every launch (Numba
    otherwise waits for the array's stream before each kernel, a host pause the events would
    time); NumPy arrays (the simulator's) as they are."""
    if hasattr(array, "__cuda_array_interface__"):
        return cuda.as_cuda_array(array, sync=False)
    return array


def _scans(xp: Any, time_ms: Callable, n: int, copy: float, block_scan: Any, add: Any) -> list:
    values = xp.random.default_rng(0).integers(0, 4, n, dtype=xp.int32)  # sums fit in int32
    expected = np.cumsum(to_host(values), dtype=np.int64)
    block = scan.block_of(block_scan) if block_scan is not None else scan.BLOCK
    records = []
    three = scan.scan_plan(
        n, block, block_scan, add, lambda size: _numba_view(xp.empty(size, xp.int32))
    )
    values_view = _numba_view(values)
    for name, call in (
        (COURSE_SCAN, lambda: three(values_view)),
        (LIBRARY, lambda: xp.cumsum(values)),
    ):
        correct = bool(np.array_equal(to_host(call()), expected))
        records.append(_rate(name, time_ms(call), n, 4, copy, correct=correct, block=block))
    return records


def _stencils(xp: Any, time_ms: Callable, n: int, copy: float) -> list:
    x = xp.random.default_rng(1).random(n, dtype=xp.float32)
    records = []
    for radius in RADII:
        expected = stencil.reference(to_host(x), radius)
        for method in ("global", "shared"):
            out = xp.zeros(n, xp.float32)
            kernel = (
                stencil.stencil_global_kernel(radius)
                if method == "global"
                else stencil.stencil_shared_kernel(stencil.BLOCK, radius)
            )
            blocks = -(-n // stencil.BLOCK)

            def launch(kernel=kernel, x=_numba_view(x), out=_numba_view(out)) -> None:
                kernel[blocks, stencil.BLOCK](x, out)

            launch()
            correct = bool(np.allclose(to_host(out), expected, rtol=1e-5, atol=1e-6))
            records.append(
                _rate(
                    f"radius {radius}, {method}",
                    time_ms(launch),
                    n,
                    4,
                    copy,
                    radius=radius,
                    method=method,
                    correct=correct,
                )
            )
    return records


def measure(
    xp: Any,
    time_ms: Callable[[Callable[[], Any]], float],
    n: int,
    block_scan: Any = None,
    add: Any = None,
) -> dict[str, Any]:
    """Check, then time, the scans and the stencils on *n* elements of the array module *xp*.

    *block_scan* and *add* replace the course's scan kernels (the student's, with their BLOCK).
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, not {n}")
    copy = copy_bandwidth(xp, 4 * n, time_ms)
    return {
        "n": n,
        "copy_bandwidth": copy,
        "scan_kernels": "the course's" if block_scan is None and add is None else "yours",
        "scan": _scans(xp, time_ms, n, copy["bytes_moved_per_s"], block_scan, add),
        "stencil": _stencils(xp, time_ms, n, copy["bytes_moved_per_s"]),
    }


def run(quick: bool = False, block_scan: Any = None, add: Any = None) -> dict[str, Any]:
    """:func:`measure` on this machine's GPU: CuPy arrays, CUDA events."""
    cp = hardware.require_cupy("the scan and stencil benchmark")
    n = QUICK_N if quick else N
    return measure(cp, lambda fn: gpu_timer.event_ms(cp, fn), n, block_scan, add)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    record.add_gpu_bench_arguments(parser, "scan")


def main(args: argparse.Namespace) -> int:
    return record.run_gpu_bench(args, "scan", "The scan and stencil benchmark", run, SOURCES)


# ------------------------------------------------------------ what chapter 4c shows, live
def reference() -> live.Reference | None:
    """The shipped H200 result, or None after saying that it has not been measured yet."""
    return live.reference_or_explain(REFERENCE, MAKE_REFERENCE, "results")


def _copy_tb(r: dict[str, Any]) -> float:
    return r["copy_bandwidth"]["bytes_moved_per_s"] / 1e12


SCAN_TABLE = Table(
    "Inclusive scan of int32 values (GPU time; bytes read and written per second vs a copy)",
    (
        Row("values", "n", "", 0),
        Row("device copy, bytes moved", _copy_tb, "TB/s", 2),
        Row("scan kernels of the three launches", "scan_kernels", "", 0),
        Row("threads per block", lambda r: find(r["scan"], COURSE_SCAN)["block"], "", 0),
        *(
            Row(name, lambda r, m=name: find(r["scan"], m)["ms"], "ms", 3)
            for name in (COURSE_SCAN, LIBRARY)
        ),
        *copy_share_rows("scan", (COURSE_SCAN, LIBRARY), "fraction_of_copy"),
    ),
    Expect(
        "cupy.cumsum, one pass over the data, is faster than the three launches, which read and "
        "write the array twice",
        lambda r: find(r["scan"], LIBRARY)["ms"] < find(r["scan"], COURSE_SCAN)["ms"],
        "At this size the library's scan pays a set-up of its own that the three short "
        "launches do not.",
    ),
)

STENCIL_NAMES = tuple(f"radius {r}, {m}" for r in RADII for m in ("global", "shared"))
STENCIL_TABLE = Table(
    "1-D stencil (mean of 2 r + 1 neighbours), float32 (GPU time; share of the copy's rate)",
    (
        Row("values", "n", "", 0),
        *(
            Row(name, lambda r, m=name: find(r["stencil"], m)["ms"], "ms", 3)
            for name in STENCIL_NAMES
        ),
        *copy_share_rows("stencil", STENCIL_NAMES, "fraction_of_copy"),
    ),
    Expect(
        "in one dimension the L1 cache does the tile's work: the shared tile is no clear win at "
        "either radius (at least 0.85 of the global version's time at each)",
        lambda r: all(
            find(r["stencil"], f"radius {radius}, shared")["ms"]
            > 0.85 * find(r["stencil"], f"radius {radius}, global")["ms"]
            for radius in RADII
        ),
        "On this GPU the tile won clearly: its caches serve the repeated neighbour loads more "
        "slowly than shared memory serves the tile.",
    ),
)


def _guess(value: Any) -> str:
    if value is None:
        return "no guess"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return f"{100 * value:.0f} %" if 0 <= value <= 1.5 else f"{value} (a share is 0 to 1)"
    return repr(value)


def scan_shares(result: dict[str, Any] | None, predicted: dict[str, Any] | None = None) -> None:
    """Print, from *result* (live, or the reference's values), what the chapter's prose
    discusses about the scans: each one's share of the copy's rate beside the student's
    *predicted* shares (0 to 1, keyed by COURSE_SCAN and LIBRARY), and the library's lead."""
    if not result:
        print("Nothing to compare here: no GPU, and the reference has not been measured yet.")
        return
    predicted = predicted or {}
    for name in (COURSE_SCAN, LIBRARY):
        share = find(result["scan"], name)["fraction_of_copy"]
        print(
            f"{name}: {100 * share:.0f} % of the copy's rate (you predicted "
            f"{_guess(predicted.get(name))})"
        )
    course, library = find(result["scan"], COURSE_SCAN), find(result["scan"], LIBRARY)
    print(f"cupy.cumsum took {library['ms'] / course['ms']:.2f} of the three launches' time.")


def stencil_shares(result: dict[str, Any] | None, tile_helps: dict[int, Any] | None = None) -> None:
    """Print, from *result*, each stencil's share of the copy's rate and the tile's time over the
    global version's, beside the student's guess whether the tile helps (*tile_helps*, by
    radius: True or False)."""
    if not result:
        print("Nothing to compare here: no GPU, and the reference has not been measured yet.")
        return
    tile_helps = tile_helps or {}
    unknown = sorted(set(tile_helps) - set(RADII), key=str)
    if unknown:  # a guess the benchmark cannot answer: say so rather than drop it silently
        print(
            f"tile_helps has guesses for radius {', '.join(map(str, unknown))}, which the "
            f"benchmark does not run: it runs radius {' and '.join(map(str, RADII))} (RADII), so "
            "set tile_helps[r] for those."
        )
    for radius in RADII:
        g = find(result["stencil"], f"radius {radius}, global")
        s = find(result["stencil"], f"radius {radius}, shared")
        print(
            f"radius {radius}: from global memory {100 * g['fraction_of_copy']:.0f} % of the "
            f"copy's rate, from the tile {100 * s['fraction_of_copy']:.0f} %; the tile took "
            f"{s['ms'] / g['ms']:.2f} of the global version's time (you predicted it helps: "
            f"{_guess(tile_helps.get(radius))})."
        )
