"""``python -m demos bench distance``: every distance-matrix backend over a range of sizes.

Chapter 3's claim, measured: the GPU loses below a few hundred points (launch
and transfer overheads) and wins by orders of magnitude above. To make that
story honest the benchmark separates three numbers for GPU backends:

* host -> host: NumPy in, NumPy out, what a drop-in user sees (wall clock);
* device compute only, timed with CUDA events by ``cupyx.profiler.benchmark``;
* the host -> device and device -> host copies on their own.

Extra modes: ``--ops`` (per-operation breakdown: einsum, matmul, element-wise
ops, NumPy vs CuPy), ``--memory N`` (peak GPU memory of the drop-in vs the lean
version), ``--chunked GB`` (streaming a matrix larger than the device budget),
``--compat`` (the original course's ``measurements*.json``). Backends that cannot
run on this machine are skipped with the reason printed, never faked.
"""

from __future__ import annotations

import argparse
import importlib
import math
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from demos import hardware
from demos.benchmarks import record

DEFAULT_SIZES = (64, 256, 1024, 4096)
CUDA_KERNELS = ("naive", "coalesced", "tiled", "symmetric", "best")
DEFAULT_BACKENDS = (
    "numpy",
    "cupy",
    "cupy-lean",
    "numba-cpu",
    "numba-cpu-parallel",
    *(f"numba-cuda-{k}" for k in CUDA_KERNELS),
)
CHECK_MAX_N = 2048  # results up to this size are checked against NumPy float64


@dataclass
class Backend:
    """How to run one backend: host->host always, device->device for GPU backends."""

    host: Callable[[np.ndarray], np.ndarray]
    device: Callable[[Any, Any], Any] | None = None  # (d_points, d_out) -> d_out


def _gpu_reason() -> str | None:
    return None if hardware.cupy_available() else hardware.cupy_status()[1]


def make_backend(name: str) -> Backend:
    """Import and wrap backend *name*; raises RuntimeError/ImportError saying why it cannot."""
    if name == "numpy":
        from demos.distance import numpy_backend

        return Backend(numpy_backend.distance_matrix)
    if name in ("numba-cpu", "numba-cpu-parallel"):
        numba_cpu = importlib.import_module("demos.distance.numba_cpu")
        fn = (
            numba_cpu.distance_matrix_serial
            if name == "numba-cpu"
            else numba_cpu.distance_matrix_parallel
        )
        return Backend(fn)
    if name.startswith("cupy") or name.startswith("numba-cuda"):
        reason = _gpu_reason()
        if reason:
            raise RuntimeError(f"needs a CUDA GPU ({reason})")
        import cupy as cp

        from demos.distance import cupy_backend
    if name == "cupy":
        return Backend(
            cupy_backend.distance_matrix, lambda d, out: cupy_backend.distance_matrix_gpu(d)
        )
    if name == "cupy-lean":
        return Backend(
            lambda p: cp.asnumpy(cupy_backend.distance_matrix_lean(cp.asarray(p))),
            lambda d, out: cupy_backend.distance_matrix_lean(d, out=out),
        )
    if name.startswith("numba-cuda-"):
        kernel = name.removeprefix("numba-cuda-")
        numba_cuda = importlib.import_module("demos.distance.numba_cuda")
        known = tuple(getattr(numba_cuda, "KERNELS", ())) + ("best",)
        if kernel not in known:
            raise RuntimeError(f"unknown kernel {kernel!r}; demos.distance.numba_cuda has {known}")
        return Backend(
            lambda p: numba_cuda.distance_matrix(p, kernel=kernel),
            lambda d, out: numba_cuda.distance_matrix_device(d, kernel=kernel, out=out),
        )
    raise RuntimeError(f"unknown backend {name!r}; known: {', '.join(DEFAULT_BACKENDS)}")


def _reference(points: np.ndarray) -> np.ndarray:
    x = points.astype(np.float64)
    return ((x[:, None, :] - x[None, :, :]) ** 2).sum(-1)


def _gpu_times(fn: Callable[..., Any], args: tuple, repeats: int) -> list[float]:
    """Seconds per call measured with CUDA events (device time, not host wall clock)."""
    from cupyx.profiler import benchmark

    result = benchmark(fn, args, n_repeat=repeats, n_warmup=2)
    return [float(t) for t in result.gpu_times[0]]


def run_sweep(
    sizes: list[int],
    backends: list[str],
    repeats: int,
    dtype: np.dtype,
    seed: int,
    progress: bool = True,
) -> dict[str, Any]:
    """Time every available backend at every size; returns the ``results`` of the JSON."""
    from tqdm.auto import tqdm

    rng = np.random.default_rng(seed)
    runnable: dict[str, Backend] = {}
    skipped: dict[str, str] = {}
    for name in backends:
        try:
            runnable[name] = make_backend(name)
        except Exception as exc:  # noqa: BLE001 - any failure: skip, say why
            skipped[name] = f"{type(exc).__name__}: {exc}"
            print(f"skipping {name}: {skipped[name]}")
    runs: list[dict[str, Any]] = []
    transfers: list[dict[str, Any]] = []
    gpu = any(b.device is not None for b in runnable.values())
    bar = tqdm(
        total=len(sizes) * len(runnable), desc="bench distance", unit="run", disable=not progress
    )
    for n in sizes:
        points = rng.random((n, 3), dtype=np.float64).astype(dtype)
        reference = _reference(points) if n <= CHECK_MAX_N else None
        if gpu:
            transfers.append(_time_transfers(points, repeats))
        for name, backend in runnable.items():
            bar.set_postfix_str(f"{name} n={n}")
            try:
                runs.append(_run_one(name, backend, points, reference, repeats))
            except Exception as exc:  # noqa: BLE001 - e.g. out of memory: record
                print(f"{name} failed at n={n}: {type(exc).__name__}: {exc}")
                runs.append({"backend": name, "n": n, "error": f"{type(exc).__name__}: {exc}"})
            bar.update()
    bar.close()
    return {"runs": runs, "transfers": transfers, "skipped": skipped}


def _run_one(
    name: str, backend: Backend, points: np.ndarray, reference: np.ndarray | None, repeats: int
):
    n = points.shape[0]
    result = backend.host(points)  # warm-up: JIT compilation, cuBLAS handles, memory pools
    entry: dict[str, Any] = {"backend": name, "n": n, "dtype": str(points.dtype)}
    if reference is not None:
        entry["max_abs_error"] = float(np.max(np.abs(result.astype(np.float64) - reference)))
        tol = 1e-3 if points.dtype == np.float32 else 1e-9
        if entry["max_abs_error"] > tol * max(1.0, float(reference.max())):
            raise AssertionError(
                f"{name} is wrong at n={n}: max abs error {entry['max_abs_error']:.3g}"
            )
    del result
    entry["host_to_host"] = record.summarize(record.wall_times(backend.host, points, repeats=repeats))
    if backend.device is not None:
        import cupy as cp

        d_points = cp.asarray(points)
        d_out = cp.empty((n, n), dtype=points.dtype)
        entry["device"] = record.summarize(_gpu_times(backend.device, (d_points, d_out), repeats))
        del d_points, d_out
        cp.get_default_memory_pool().free_all_blocks()
    return entry


def _time_transfers(points: np.ndarray, repeats: int) -> dict[str, Any]:
    """Copy times of the input to the GPU and of the (n, n) result back (pageable host memory)."""
    import cupy as cp

    n = points.shape[0]
    d_result = cp.zeros((n, n), dtype=points.dtype)
    host_result = np.empty((n, n), dtype=points.dtype)
    h2d = _gpu_times(cp.asarray, (points,), repeats)
    d2h = _gpu_times(lambda a: cp.asnumpy(a, out=host_result), (d_result,), repeats)
    del d_result
    cp.get_default_memory_pool().free_all_blocks()
    return {
        "n": n,
        "h2d_bytes": points.nbytes,
        "d2h_bytes": host_result.nbytes,
        "h2d": record.summarize(h2d),
        "d2h": record.summarize(d2h),
    }


# ------------------------------------------------------------------- per-op
def run_ops(sizes: list[int], repeats: int, seed: int) -> list[dict[str, Any]]:
    """Microseconds per step (einsum row norms, matmul, element-wise combine), NumPy vs CuPy."""
    from demos.distance import generic

    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        x = rng.random((n, 3))
        x2, xy = generic.row_norms(x), generic.inner_products(x, x)
        row: dict[str, Any] = {"n": n}
        steps = {
            "einsum": (generic.row_norms, (x,)),
            "matmul": (generic.inner_products, (x, x)),
            "ops": (generic.combine, (x2, xy, x2)),
        }
        for step, (fn, args) in steps.items():
            fn(*args)
            row[f"np.{step}"] = 1e6 * float(np.mean(record.wall_times(fn, *args, repeats=repeats)))
        if hardware.cupy_available():
            import cupy as cp

            for step, (fn, args) in steps.items():
                d_args = tuple(cp.asarray(a) for a in args)
                row[f"cp.{step}"] = 1e6 * float(np.mean(_gpu_times(fn, d_args, repeats)))
                del d_args
            cp.get_default_memory_pool().free_all_blocks()
        rows.append(row)
    return rows


# ------------------------------------------------------------------- memory
def run_memory(n: int, dtype: np.dtype, seed: int) -> dict[str, Any]:
    """Peak GPU memory (CuPy pool, via a MemoryHook) of the drop-in vs the lean version."""
    import cupy as cp

    from demos.distance import cupy_backend

    class PeakHook(cp.cuda.MemoryHook):
        """Tracks bytes handed out by CuPy's memory pool and their maximum."""

        name = "demos_peak_memory"

        def __init__(self) -> None:
            super().__init__()
            self.current = 0
            self.peak = 0

        def malloc_postprocess(self, **kwargs: Any) -> None:
            self.current += kwargs["mem_size"]
            self.peak = max(self.peak, self.current)

        def free_postprocess(self, **kwargs: Any) -> None:
            self.current -= kwargs["mem_size"]

    pool = cp.get_default_memory_pool()
    points = np.random.default_rng(seed).random((n, 3)).astype(dtype)
    output_bytes = n * n * np.dtype(dtype).itemsize
    versions = {
        "cupy": cupy_backend.distance_matrix_gpu,
        "cupy-lean": cupy_backend.distance_matrix_lean,
    }
    result: dict[str, Any] = {"n": n, "dtype": str(np.dtype(dtype)), "output_bytes": output_bytes}
    for name, fn in versions.items():
        pool.free_all_blocks()
        d_points = cp.asarray(points)
        hook = PeakHook()
        with hook:
            start = time.perf_counter()
            d_result = fn(d_points)
            cp.cuda.Device().synchronize()
            seconds = time.perf_counter() - start
        result[name] = {
            "peak_bytes": hook.peak,
            "peak_over_output": hook.peak / output_bytes,
            "pool_total_bytes": pool.total_bytes(),
            "seconds_first_call": seconds,
        }
        print(
            f"{name}: peak {hook.peak / 1e9:.2f} GB = {hook.peak / output_bytes:.2f} x the output"
        )
        del d_result, d_points
        pool.free_all_blocks()
    return result


# ------------------------------------------------------------------- chunked
def run_chunked(
    gigabytes: float, fraction: float, block_rows: int | None, seed: int, progress: bool = True
) -> dict[str, Any]:
    """Stream a float64 matrix of *gigabytes* GB to host memory; GB/s vs the copy bandwidth."""
    from demos.distance.chunked import N_STREAMS, choose_block_rows, distance_matrix_chunked

    n = int(math.sqrt(gigabytes * 1e9 / 8))
    points = np.random.default_rng(seed).random((n, 3))
    on_gpu = hardware.cupy_available()
    result: dict[str, Any] = {
        "n": n,
        "matrix_bytes": n * n * 8,
        "device": "gpu" if on_gpu else "cpu",
    }
    if on_gpu and block_rows is None:
        import cupy as cp

        free, total = cp.cuda.runtime.memGetInfo()
        block_rows = choose_block_rows(n, 8, free * fraction, N_STREAMS)
        result.update(
            device_free_bytes=free, device_total_bytes=total, device_memory_fraction=fraction
        )
        result["device_budget_bytes"] = free * fraction
        result["bandwidth"] = _copy_bandwidth()
    distance_matrix_chunked(points[:64], block_rows=16)  # warm-up (kernels, pinned allocator)
    out = np.empty((n, n))
    timings = {}
    # fresh_out: a new array, its first-touch page faults included; reused_out: the same
    # array again, as when a caller recomputes into an existing buffer or memmap.
    for label in ("fresh_out", "reused_out"):
        if label == "reused_out":
            out.fill(np.nan)  # so the check below sees what the timed run wrote
        start = time.perf_counter()
        distance_matrix_chunked(
            points,
            out=out,
            block_rows=block_rows,
            device_memory_fraction=fraction,
            progress=progress,
        )
        timings[label] = time.perf_counter() - start
    seconds = timings["fresh_out"]
    rows = np.random.default_rng(seed + 1).choice(n, size=min(n, 8), replace=False)
    expected = ((points[rows, None, :] - points[None, :, :]) ** 2).sum(-1)
    result.update(
        block_rows=block_rows,
        blocks=math.ceil(n / block_rows) if block_rows else None,
        seconds=seconds,
        gb_per_s=n * n * 8 / seconds / 1e9,
        seconds_reused_out=timings["reused_out"],
        gb_per_s_reused_out=n * n * 8 / timings["reused_out"] / 1e9,
        sampled_rows_max_abs_error=float(np.max(np.abs(out[rows] - expected))),
        last_row_finite=bool(np.isfinite(out[-1]).all()),
    )
    print(
        f"chunked: {result['matrix_bytes'] / 1e9:.1f} GB in {seconds:.2f} s = "
        f"{result['gb_per_s']:.1f} GB/s "
        f"(into a reused array: {result['gb_per_s_reused_out']:.1f} GB/s)"
    )
    return result


def _copy_bandwidth(nbytes: int = 2**30) -> dict[str, float]:
    """Device -> host and host -> device GB/s for pinned host memory (the ceiling for streaming)."""
    import cupy as cp
    import cupyx

    d = cp.zeros(nbytes // 8)
    pinned = cupyx.empty_pinned(d.shape, dtype=d.dtype)
    d2h = np.median(_gpu_times(lambda a: a.get(out=pinned), (d,), 5))
    h2d = np.median(_gpu_times(lambda a: d.set(a), (pinned,), 5))
    return {"d2h_pinned_gb_per_s": nbytes / d2h / 1e9, "h2d_pinned_gb_per_s": nbytes / h2d / 1e9}


# ------------------------------------------------------------------- compat
def compat_measurements(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The original course's ``measurements.json``: mean host->host seconds per size."""
    names = {"numpy": "numpy", "cupy": "cupy", "numba-cpu": "cpu", "numba-cuda-naive": "gpu"}
    table: dict[str, dict[str, float]] = {}
    for run in runs:
        if run["backend"] in names and "host_to_host" in run:
            table.setdefault(str(run["n"]), {})[names[run["backend"]]] = run["host_to_host"][
                "mean_s"
            ]
    return table


def compat_ops(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    return {str(row["n"]): {k: v for k, v in row.items() if k != "n"} for row in rows}


# ------------------------------------------------------------------- CLI
def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive integers, got {text!r}")
    return values


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sizes",
        type=_int_list,
        default=list(DEFAULT_SIZES),
        help="numbers of points, e.g. 64,256,1024",
    )
    parser.add_argument(
        "--backends", default=",".join(DEFAULT_BACKENDS), help="comma-separated backend names"
    )
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float64")
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions per measurement")
    parser.add_argument(
        "--output",
        type=Path,
        default=record.DEFAULT_OUTPUT_DIR,
        help="directory for the JSON files",
    )
    parser.add_argument(
        "--ops", action="store_true", help="also time einsum / matmul / element-wise ops separately"
    )
    parser.add_argument(
        "--compat",
        action="store_true",
        help="also write measurements.json and measurements_ops.json",
    )
    parser.add_argument(
        "--memory", type=int, metavar="N", help="peak GPU memory of cupy vs cupy-lean for N points"
    )
    parser.add_argument(
        "--chunked",
        type=float,
        metavar="GB",
        help="stream a float64 matrix of GB gigabytes to the host",
    )
    parser.add_argument(
        "--device-memory-fraction", type=float, default=0.5, help="device budget for --chunked"
    )
    parser.add_argument(
        "--block-rows", type=int, help="rows per block for --chunked (default: from the budget)"
    )
    parser.add_argument(
        "--no-sweep",
        action="store_true",
        help="skip the sweep over sizes (only --memory/--chunked)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-progress", action="store_true", help="no tqdm progress bar")


def main(args: argparse.Namespace) -> int:
    if args.repeats < 1:
        raise SystemExit("--repeats must be >= 1")
    output = Path(args.output)
    dtype = np.dtype(args.dtype)
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    written: list[Path] = []
    ops_rows = None
    common = {"repeats": args.repeats, "seed": args.seed}
    if not args.no_sweep:
        results = run_sweep(
            args.sizes, backends, args.repeats, dtype, args.seed, not args.no_progress
        )
        written.append(
            record.write_result(
                output / "distance.json",
                "distance",
                results,
                mode="sweep",
                sizes=args.sizes,
                backends=backends,
                dtype=str(dtype),
                **common,
            )
        )
        if args.ops or args.compat:
            ops_rows = run_ops(args.sizes, args.repeats, args.seed)
            written.append(
                record.write_result(
                    output / "distance_ops.json",
                    "distance",
                    ops_rows,
                    mode="ops",
                    sizes=args.sizes,
                    **common,
                )
            )
        if args.compat:
            written.append(
                record.write_json(
                    output / "measurements.json", compat_measurements(results["runs"])
                )
            )
            written.append(
                record.write_json(output / "measurements_ops.json", compat_ops(ops_rows))
            )
            if output.resolve() == record.REFERENCE_DIR.resolve():
                for name in ("measurements.json", "measurements_ops.json"):
                    shutil.copyfile(output / name, record.PACKAGE_DIR / name)
                    written.append(record.PACKAGE_DIR / name)
    if args.memory:
        if hardware.cupy_available():
            mem = run_memory(args.memory, dtype, args.seed)
            written.append(
                record.write_result(
                    output / "distance_memory.json",
                    "distance",
                    mem,
                    mode="memory",
                    n=args.memory,
                    dtype=str(dtype),
                )
            )
        else:
            print(f"skipping --memory: {_gpu_reason()}")
    if args.chunked:
        chunk = run_chunked(
            args.chunked,
            args.device_memory_fraction,
            args.block_rows,
            args.seed,
            not args.no_progress,
        )
        written.append(
            record.write_result(
                output / "distance_chunked.json",
                "distance",
                chunk,
                mode="chunked",
                gigabytes=args.chunked,
            )
        )
    for path in written:
        print(f"wrote {path}")
    return 0
