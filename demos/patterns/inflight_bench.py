"""``python -m demos bench inflight``: a sum's read rate by block size and loads per thread.

Chapter 4b's tree and warp-shuffle sums read well below the device copy's rate
although every multiprocessor is full: each load asks for 4 bytes,
and by Little's law the read rate is the bytes in flight over the memory's
latency. The ``wide_sum`` kernel (:data:`demos.patterns.inflight.wide_sum`, the
chapter's "your turn") issues ``LOADS`` independent loads per iteration. This
benchmark runs it for every ``LOADS`` of :data:`LOADS` and every block size of
:data:`THREADS`, with as many blocks as fill every multiprocessor
(:func:`demos.patterns.inflight.blocks_for`), so that only the bytes in flight
change. A GPU with less bandwidth per multiprocessor (an H100) needs fewer
bytes in flight (bandwidth times latency) and nears its copy's rate with one
load per thread once every multiprocessor is full, so
the sweep also runs every ``LOADS`` on part-filled multiprocessors (a share
:data:`PART_FILLS` of each one's threads, blocks of 256): fewer threads carry
fewer loads, and more loads per thread visibly win back the rate on any GPU.
Each sum is first checked against a float64 sum of the same values, then
timed with CUDA events (:mod:`demos.gpu_timer`); each record holds the read rate
and its fraction of the device copy's rate (measured here, as in ``bench
patterns``) and of the memory bandwidth the maker publishes
(``demos/results/gpu_specs.json``). ``cupy.sum`` is the library's yardstick.

Writes ``inflight.json`` (layout: :mod:`demos.benchmarks.record`); the
chapter's reference is that file from an H200, shipped as
``demos/results/inflight_h200.json``. The core, :func:`measure`, takes the array
module and the timer, so the tests run it on NumPy in the simulator.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from demos import gpu_timer, hardware, live, shipped_results
from demos.benchmarks import record
from demos.live import Expect, Row, Table
from demos.patterns import bench, inflight

LOADS = (1, 2, 4, 8)  # independent loads per thread and iteration
THREADS = (128, 256, 512, 1024)  # threads per block
PART_FILLS = (0.25, 0.125)  # shares of each multiprocessor's threads for the part-filled rows
PART_THREADS = 256  # block size of the part-filled rows (the smallest of THREADS if not in it)
QUICK_N = 2**20
SOURCES = ["demos/patterns/inflight.py", "demos/patterns/inflight_bench.py"]
REFERENCE = "inflight_h200.json"
MAKE_REFERENCE = (
    "python -m demos bench inflight --output DIR, then copy DIR/inflight.json to "
    f"demos/results/{REFERENCE}"
)
TOLERANCE = 1e-4  # relative error of a float32 sum of up to 2^28 values, against float64


def published_peak(gpu: str) -> float | None:
    """The memory bandwidth (bytes/s) the maker publishes for *gpu*, from gpu_specs.json, or None.

    The H100 entry is the SXM board's; a PCIe board (less bandwidth) gets None.
    """
    specs = shipped_results.load("gpu_specs.json") or {}
    for name, entry in specs.get("gpus", {}).items():
        if gpu.startswith(name) and "PCIe" not in gpu:
            return entry["memory_bandwidth_tb_per_s"] * 1e12
    return None


def _record(ms: float, nbytes: int, copy: float, peak: float | None, **extra: Any) -> dict:
    rate = nbytes / (ms / 1e3)
    return {
        **extra,
        "ms": ms,
        "read_bytes_per_s": rate,
        "fraction_of_copy": rate / copy,
        "fraction_of_peak": rate / peak if peak else None,
    }


def measure(
    xp: Any,
    time_ms: Callable[[Callable[[], Any]], float],
    n: int,
    kernel: Any,
    *,
    loads: Sequence[int] = LOADS,
    threads: Sequence[int] = THREADS,
    multiprocessors: int,
    threads_per_multiprocessor: int,
    peak: float | None = None,
    device: Callable[[Any], Any] = lambda a: a,
    part_fills: Sequence[float] = PART_FILLS,
) -> dict[str, Any]:
    """Check, then time, *kernel* (``kernel[blocks, t](values, partial)``, with a LOADS constant)
    for every LOADS and block size on *n* float32 values of the array module *xp*, on full
    multiprocessors (``fill`` 1) and, with blocks of :func:`part_threads`, on each share of
    *part_fills* of their threads.

    *device* turns an array into what the kernel is launched with (a Numba
    device array on a GPU, cheaper to launch than a CuPy one).
    """
    values = xp.random.default_rng(0).random(n, dtype=xp.float32)
    exact = float(values.astype(xp.float64).sum())
    nbytes = int(values.nbytes)
    copy = bench.copy_bandwidth(xp, nbytes, time_ms)
    rate = copy["bytes_moved_per_s"]
    sweep = []
    shapes = [(size, 1.0) for size in threads] + [(part_threads(threads), f) for f in part_fills]
    for per_thread in loads:
        compiled = inflight.with_loads(kernel, per_thread)
        for size, fill in shapes:
            blocks = blocks_for_fill(size, fill, multiprocessors, threads_per_multiprocessor)
            partial = xp.zeros(blocks, xp.float32)
            args = (device(values), device(partial))

            def launch(compiled=compiled, blocks=blocks, size=size, args=args) -> None:
                compiled[blocks, size](*args)

            launch()  # compiles, and gives the sum to check before anything is timed
            error = abs(float(partial.astype(xp.float64).sum()) - exact) / abs(exact)
            sweep.append(
                _record(
                    time_ms(launch),
                    nbytes,
                    rate,
                    peak,
                    threads=size,
                    loads=per_thread,
                    fill=fill,
                    blocks=blocks,
                    relative_error=error,
                    correct=bool(error <= TOLERANCE),
                )
            )
    error = abs(float(values.sum()) - exact) / abs(exact)
    library = _record(time_ms(lambda: values.sum()), nbytes, rate, peak, name=f"{xp.__name__}.sum")
    library.update(relative_error=error, correct=bool(error <= TOLERANCE))
    return {
        "n": n,
        "dtype": "float32",
        "bytes": nbytes,
        "multiprocessors": multiprocessors,
        "threads_per_multiprocessor": threads_per_multiprocessor,
        "copy_bandwidth": copy,
        "published_peak_bytes_per_s": peak,
        "sweep": sweep,
        "library": library,
        "all_correct": all(r["correct"] for r in [*sweep, library]),
    }


def part_threads(threads: Sequence[int]) -> int:
    """The block size of the part-filled rows: :data:`PART_THREADS` if swept, else the smallest."""
    return PART_THREADS if PART_THREADS in threads else min(threads)


def blocks_for_fill(
    threads: int, fill: float, multiprocessors: int, threads_per_multiprocessor: int
) -> int:
    """Blocks of *threads* that take a share *fill* (0 < fill <= 1) of every multiprocessor's
    threads: at least one block on each. ``fill`` 1 is :func:`inflight.blocks_for`."""
    if not 0 < fill <= 1:
        raise ValueError(f"fill must be a share of a multiprocessor, 0 < fill <= 1, not {fill}")
    full = inflight.blocks_for(threads, multiprocessors, threads_per_multiprocessor)
    return multiprocessors * max(1, round(full // multiprocessors * fill))


def run(
    quick: bool = False,
    kernel: Any = None,
    loads: Sequence[int] = LOADS,
    threads: Sequence[int] = THREADS,
) -> dict[str, Any]:
    """:func:`measure` on this machine's GPU: CuPy arrays, CUDA events, the course's wide_sum
    unless *kernel* is given; 2^28 values (1 GB), fewer on a GPU with under 32 GB."""
    cp = hardware.require_cupy("the bytes-in-flight benchmark")
    from numba import cuda

    properties = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    result = measure(
        cp,
        lambda fn: gpu_timer.event_ms(cp, fn),
        QUICK_N if quick else bench.input_size(),
        kernel if kernel is not None else inflight.wide_sum,
        loads=loads,
        threads=threads,
        multiprocessors=int(properties["multiProcessorCount"]),
        threads_per_multiprocessor=int(properties["maxThreadsPerMultiProcessor"]),
        peak=published_peak(live.gpu_name()),
        device=cuda.as_cuda_array,
    )
    result["kernel"] = "the course's" if kernel is None else "yours"
    return result


def add_arguments(parser: argparse.ArgumentParser) -> None:
    record.add_gpu_bench_arguments(parser, "inflight")


def main(args: argparse.Namespace) -> int:
    return record.run_gpu_bench(
        args, "inflight", "The bytes-in-flight benchmark", lambda quick: run(quick), SOURCES
    )


# ------------------------------------------------------------ what chapter 4b shows, live
def reference() -> live.Reference | None:
    """The shipped H200 result, or None after saying that it has not been measured yet."""
    found = live.reference(REFERENCE, "results")
    if found is None:
        print(
            f"The H200 reference for this table (demos/results/{REFERENCE}) has not been "
            f"measured yet. To make it on a GPU node: {MAKE_REFERENCE}."
        )
    return found


def _config(result: dict[str, Any], threads: int, loads: int, fill: float = 1.0) -> dict[str, Any]:
    for r in result["sweep"]:
        if r["threads"] == threads and r["loads"] == loads and r.get("fill", 1.0) == fill:
            return r
    raise KeyError((threads, loads, fill))


def _cell(r: dict[str, Any]) -> str:
    text = f"{r['read_bytes_per_s'] / 1e9:,.0f} GB/s = {100 * r['fraction_of_copy']:.0f} % of copy"
    peak = r.get("fraction_of_peak")
    return (
        text
        + (f", {100 * peak:.0f} % of peak" if peak else "")
        + ("" if r["correct"] else " WRONG")
    )


def _faster_with_more_loads(
    result: dict[str, Any], threads: int, loads: Sequence[int], fill: float = 1.0
) -> bool:
    if 1 not in loads or max(loads) == 1:
        raise KeyError("nothing to compare")
    rate = [_config(result, threads, n, fill)["read_bytes_per_s"] for n in (1, max(loads))]
    return rate[1] > 1.1 * rate[0]


def _share(fill: float) -> str:
    """0.25 as "1/4": the part-filled rows' labels."""
    return f"1/{round(1 / fill)}" if round(1 / fill) * fill == 1 else f"{fill:g}"


def table(
    loads: Sequence[int] = LOADS,
    threads: Sequence[int] = THREADS,
    part_fills: Sequence[float] = PART_FILLS,
) -> Table:
    """What the chapter's sweep cell shows, for these LOADS, block sizes and part fills. The
    lesson is judged where it shows on any GPU: on the emptiest multiprocessors of the sweep."""
    part = part_threads(threads)
    emptiest = min(part_fills, default=1.0)
    return Table(
        "A sum's read rate by block size and LOADS (GPU time; full multiprocessors, then "
        "part-filled ones)",
        (
            Row("values (float32)", "n", "", 0),
            Row(
                "device copy, bytes moved",
                lambda r: r["copy_bandwidth"]["bytes_moved_per_s"] / 1e9,
                "GB/s",
                0,
            ),
            Row("published peak", lambda r: r["published_peak_bytes_per_s"] / 1e9, "GB/s", 0),
            *(
                Row(f"{t} threads, LOADS = {n}", lambda r, t=t, n=n: _cell(_config(r, t, n)))
                for t in threads
                for n in loads
            ),
            *(
                Row(
                    f"{part} threads on {_share(f)} of each SM, LOADS = {n}",
                    lambda r, f=f, n=n: _cell(_config(r, part, n, f)),
                )
                for f in part_fills
                for n in loads
            ),
            Row("the library's sum", lambda r: f"{r['library']['name']}: {_cell(r['library'])}"),
            Row("every sum right (against float64)", "all_correct"),
        ),
        Expect(
            f"more loads in flight read faster: with blocks of {part} threads on "
            f"{_share(emptiest)} of each multiprocessor's threads, LOADS = {max(loads)} beats "
            "LOADS = 1",
            lambda r: _faster_with_more_loads(r, part, loads, emptiest),
            "The compiler may have unrolled the LOADS = 1 loop itself and kept several loads on "
            "their way, or this GPU has so little bandwidth per multiprocessor that even these "
            "few threads keep enough bytes in flight.",
        ),
    )


TABLE = table()


def compare_prediction(
    predicted: dict[int, Any], block_size_matters: Any, result: dict[str, Any] | None
) -> None:
    """Print the predicted fractions of the copy's rate (blocks of 256) beside the measured ones
    (*result*: the live run, else the reference's values), and how much the block size moved
    them."""
    if result is None:
        print("Nothing measured here and no reference yet: keep your predictions for a GPU.")
        return
    print("Fraction of the device copy's rate, blocks of 256 threads:")
    print(f"  {'LOADS':>6s}{'you predicted':>16s}{'measured':>10s}")
    for loads, guess in sorted(predicted.items()):
        try:
            got = f"{_config(result, 256, loads)['fraction_of_copy']:.2f}"
        except KeyError:
            got = "-"
        said = f"{guess:.2f}" if isinstance(guess, (int, float)) else str(guess or "-")
        print(f"  {loads:>6d}{said:>16s}{got:>10s}")
    spreads = []
    full = [r for r in result["sweep"] if r.get("fill", 1.0) == 1.0]
    for loads in sorted({r["loads"] for r in full}):
        rates = [r["read_bytes_per_s"] for r in full if r["loads"] == loads]
        spreads.append(max(rates) / min(rates) - 1)
    if block_size_matters is None:
        guess = "set block_size_matters to True or False to compare"
    else:
        guess = f"you predicted that it {'matters' if block_size_matters else 'does not'}"
    most = 100 * max(spreads)
    print(f"The block size moved the rate by at most {most:.0f} % at any LOADS; {guess}.")
