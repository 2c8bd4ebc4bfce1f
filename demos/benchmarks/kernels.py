"""``python -m demos bench kernels``: the Numba CUDA kernels timed against the memory's write floor.

This is the sweep that chose ``numba_cuda.BEST`` and the tuned kernels' block
and rows-per-thread defaults. For each dtype's target problem
(:data:`demos.benchmarks.sizes.KERNEL_PROBLEMS`, d = 3) it times every kernel
and "best", and with ``--sweep`` the tuning grid of rows/pairs/quads. Each
record names the kernel that *ran* (the dispatcher's plan; e.g. quads on
float64 runs pairs) and whether its result matched the reference on sampled rows.

On a GPU the kernels are timed with CUDA events (``cupyx.profiler.benchmark``)
and over 10 back-to-back launches, which hides Python's launch overhead; three
write floors are timed alike: CuPy filling the matrix, ``cudaMemsetAsync`` of
the same bytes, and a device-to-device copy. Bandwidth = bytes written / time.
In the CUDA simulator (no GPU) the same records are made with the wall clock at
small sizes: the timings mean nothing there, but every kernel and tuning runs
and is checked, which is what the test of this command relies on.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from demos import gpu_timer, hardware, shipped_results
from demos.benchmarks import record, sizes
from demos.distance import numba_cuda, reference
from demos.kernel_testing import to_host

SAMPLED_ROWS = sizes.SPOT_CHECK_ROWS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--float32-n", type=int, default=sizes.KERNEL_PROBLEMS["float32"], help="points, float32")
    add("--float64-n", type=int, default=sizes.KERNEL_PROBLEMS["float64"], help="points, float64")
    add("--sweep", choices=("none", "grid", "full"), default="grid", help="tuning grid to time")
    add(
        "--blocks",
        type=sizes.int_list,
        help="threads per block of the tuning grid (overrides --sweep)",
    )
    add("--rows-per-thread", type=sizes.int_list, help="rows per thread of the tuning grid")
    add("--repeats", type=int, default=20, help="timed launches per kernel")
    add("--output", type=Path, default=record.DEFAULT_OUTPUT_DIR, help="folder for the JSON")
    add("--seed", type=int, default=0)


def tuning_grid(args: argparse.Namespace) -> list[tuple[str, int, int]]:
    """(kernel, threads per block, rows per thread) to time besides the defaults."""
    if args.sweep == "none" and not (args.blocks or args.rows_per_thread):
        return []
    full = args.sweep == "full"
    blocks = args.blocks or (sizes.KERNEL_BLOCKS_FULL if full else sizes.KERNEL_BLOCKS)
    rows = args.rows_per_thread or (
        sizes.KERNEL_ROWS_PER_THREAD_FULL if full else sizes.KERNEL_ROWS_PER_THREAD
    )
    return [(k, b, r) for k in ("rows", "pairs", "quads") for b in blocks for r in rows]


class Timer:
    """CUDA events on a GPU (median of single launches, and back to back); wall clock otherwise."""

    def __init__(self, repeats: int) -> None:
        self.repeats = repeats
        self.on_gpu = hardware.cupy_available() and not hardware.simulator_enabled()

    def __call__(self, fn: Callable[[], Any]) -> tuple[float, float]:
        if not self.on_gpu:
            from numba import cuda

            def call_and_wait() -> None:
                fn()
                cuda.synchronize()

            call_and_wait()
            median = float(np.median(record.wall_times(call_and_wait, repeats=self.repeats)))
            return median, median
        import cupy as cp

        single = float(np.median(record.gpu_times(fn, (), self.repeats)))
        launches = 10 if single < 0.02 else 2
        with gpu_timer.span(cp) as burst:
            for _ in range(launches):
                fn()
        return single, burst.seconds() / launches


def _check(d_out: Any, points: np.ndarray, rng: np.random.Generator) -> bool:
    """Sampled rows (first, last, random) of the result against the float64 reference."""
    n = len(points)
    rows = np.unique(np.r_[0, n - 1, rng.integers(0, n, SAMPLED_ROWS)])
    host = to_host(d_out)
    rtol, atol = reference.tolerance(points.dtype)
    expected = reference.reference_rows(points, rows)
    return bool(np.allclose(host[rows].astype(np.float64), expected, rtol=rtol, atol=atol))


def run_kernels(problems: dict[str, int], grid: list, repeats: int, seed: int) -> list[dict]:
    """One record per (kernel or floor, tuning) and dtype; see the module docstring."""
    from numba import cuda

    rng = np.random.default_rng(seed)
    timer = Timer(repeats)
    records: list[dict[str, Any]] = []

    def measure(label: str, dtype: str, n: int, fn: Callable, **extra: Any) -> dict[str, Any]:
        single, back_to_back = timer(fn)
        nbytes = n * n * np.dtype(dtype).itemsize
        entry = dict(label=label, dtype=dtype, n=n, seconds=single, **extra)
        entry.update(seconds_back_to_back=back_to_back, write_tb_per_s=nbytes / back_to_back / 1e12)
        records.append(entry)
        print(
            f"{label:34s} {dtype:8s} n={n:6d} {single * 1e3:9.3f} ms  b2b "
            f"{back_to_back * 1e3:9.3f} ms  {entry['write_tb_per_s']:6.3f} TB/s"
            + (f"  ran={extra['ran']} correct={extra['correct']}" if "ran" in extra else ""),
            flush=True,
        )
        return entry

    runs = [(k, None, None) for k in (*numba_cuda.KERNELS, "best")] + list(grid)
    for dtype, n in problems.items():
        points = rng.random((n, 3)).astype(dtype)
        d_x = cuda.to_device(points)
        d_out = cuda.device_array((n, n), dtype=dtype)
        if timer.on_gpu:
            _floors(measure, dtype, n, d_out)
        for kernel, block, rpt in runs:
            label = kernel if block is None else f"{kernel} block={block} rows={rpt}"
            options = dict(kernel=kernel, block=block, rows_per_thread=rpt)
            plan = numba_cuda.plan_launch(d_x, out=d_out, **options)

            def launch(d_x=d_x, d_out=d_out, options=options) -> None:
                numba_cuda.distance_matrix_device(d_x, out=d_out, **options)

            try:
                launch()
                correct = _check(d_out, points, rng)
                measure(
                    label,
                    dtype,
                    n,
                    launch,
                    kernel=kernel,
                    ran=plan.kernel,
                    block=block,
                    rows_per_thread=rpt,
                    correct=correct,
                )
            except Exception as exc:  # noqa: BLE001 - keep sweeping; the failure is recorded
                print(f"{label} failed: {type(exc).__name__}: {exc}"[:300], flush=True)
                error = f"{type(exc).__name__}: {exc}"
                records.append(dict(label=label, dtype=dtype, n=n, kernel=kernel, error=error))
    return records


def _floors(measure: Callable, dtype: str, n: int, d_out: Any) -> None:
    """What writing n*n values costs without computing them: the bar a kernel is held to."""
    import cupy as cp

    c_out = cp.asarray(d_out)
    nbytes = c_out.nbytes
    source = cp.empty_like(c_out)
    measure("cupy fill (write floor)", dtype, n, lambda: c_out.fill(1))
    measure(
        "cudaMemsetAsync (write floor)",
        dtype,
        n,
        lambda: cp.cuda.runtime.memsetAsync(c_out.data.ptr, 0, nbytes, 0),
    )
    measure("cupy copy (bytes written)", dtype, n, lambda: c_out.__setitem__(Ellipsis, source))


def best_by_dtype(records: list[dict[str, Any]]) -> dict[str, str]:
    """The fastest correct kernel (default tuning) per dtype: what ``numba_cuda.BEST`` says."""
    best: dict[str, str] = {}
    for dtype in {r["dtype"] for r in records}:
        candidates = [
            r
            for r in records
            if r["dtype"] == dtype
            and r.get("correct")
            and r.get("block") is None
            and r.get("kernel") in numba_cuda.KERNELS
            and r["ran"] == r["kernel"]
        ]
        if candidates:
            best[dtype] = min(candidates, key=lambda r: r["seconds_back_to_back"])["kernel"]
    return best


def main(args: argparse.Namespace) -> int:
    if not (hardware.has_gpu() or hardware.simulator_enabled()):
        raise SystemExit(
            f"bench kernels needs a CUDA GPU or the simulator: {hardware.no_gpu_reason()}"
        )
    problems = {"float32": args.float32_n, "float64": args.float64_n}
    records = run_kernels(problems, tuning_grid(args), args.repeats, args.seed)
    results = {
        "records": records,
        "best_by_dtype": best_by_dtype(records),
        "shipped_best": dict(numba_cuda.BEST),
        "timing": "cuda-events" if Timer(1).on_gpu else "wall-clock (simulator: not a timing)",
    }
    path = record.write_result(
        Path(args.output) / "distance_kernels.json",
        "distance",
        results,
        sources=["demos/benchmarks/kernels.py", "demos/distance"],
        mode="kernels",
        problems=problems,
        sweep=args.sweep,
        repeats=args.repeats,
    )
    print(f"fastest per dtype: {results['best_by_dtype']} (shipped: {results['shipped_best']})")
    print(f"wrote {path}")
    return 0


def markdown_table(result: dict[str, Any], dtype: str = "float32") -> str:
    """BENCHMARKS.md's kernel table for *dtype* from a ``distance_kernels.json`` payload."""
    records = [
        r
        for r in result["results"]["records"]
        if r["dtype"] == dtype and r.get("block") is None and "error" not in r
    ]
    floor = min(r["seconds_back_to_back"] for r in records if "memset" in r["label"].lower())
    lines = [
        "| kernel | ran | back-to-back time | write bandwidth | x floor | correct |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in records:
        seconds = r["seconds_back_to_back"]
        time_text = f"{seconds * 1e3:.3f} ms"
        ran = r.get("ran", "-")
        correct = {True: "yes", False: "NO", None: "-"}[r.get("correct")]
        lines.append(
            f"| {r['label']} | {ran} | {time_text} | {r['write_tb_per_s']:.2f} TB/s "
            f"| {seconds / floor:.2f} | {correct} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":  # python -m demos.benchmarks.kernels RESULT.json [DTYPE]
    import sys

    payload = shipped_results.read_json(sys.argv[1])
    print(markdown_table(payload, *sys.argv[2:3]))
