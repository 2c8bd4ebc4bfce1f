"""The distance-matrix backends over sizes, and chapter 3's per-operation breakdown.

For GPU backends three numbers keep the story honest (chapter 3: the GPU loses
below a few hundred points, and wins by orders of magnitude above):

* host -> host: NumPy in, NumPy out, what a drop-in user sees (wall clock);
* device compute only, with CUDA events (:func:`demos.benchmarks.record.gpu_times`);
* the host -> device and device -> host copies on their own.

Backends come from :func:`demos.distance.backend`; those that cannot run here
are skipped with the reason recorded, never faked. Every result up to
:data:`~demos.benchmarks.sizes.CHECK_MAX_N` points is checked against the reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from demos import hardware
from demos.benchmarks import record
from demos.benchmarks.sizes import CHECK_MAX_N, OPS_STEPS
from demos.distance import Backend, backend, reference

# the original course's measurements.json names its four columns after these backends
COMPAT_NAMES = {"numpy": "numpy", "cupy": "cupy", "numba-cpu": "cpu", "numba-cuda-naive": "gpu"}


def runnable(names: list[str]) -> tuple[dict[str, Backend], dict[str, str]]:
    """The backends that can be timed here, and for the others the reason they cannot."""
    found: dict[str, Backend] = {}
    skipped: dict[str, str] = {}
    for name in names:
        try:
            entry = backend(name)
        except ValueError as exc:
            skipped[name] = str(exc)
            continue
        reason = entry.unavailable()
        if reason is None and entry.needs == "cuda" and hardware.simulator_enabled():
            reason = f"{name} would run in the CUDA simulator, whose timings mean nothing"
        if reason:
            skipped[name] = reason
        else:
            found[name] = entry
    for name, reason in skipped.items():
        print(f"skipping {name}: {reason}")
    return found, skipped


def run_sweep(
    sizes: list[int], names: list[str], repeats: int, dtype: Any, seed: int, progress: bool = True
) -> dict[str, Any]:
    """Time every runnable backend at every size; the ``results`` of ``distance.json``."""
    from tqdm.auto import tqdm

    rng = np.random.default_rng(seed)
    found, skipped = runnable(names)
    runs: list[dict[str, Any]] = []
    transfers: list[dict[str, Any]] = []
    on_gpu = any(b.device is not None for b in found.values())
    bar = tqdm(
        total=len(sizes) * len(found), desc="bench distance", unit="run", disable=not progress
    )
    for n in sizes:
        points = rng.random((n, 3), dtype=np.float64).astype(dtype)
        if on_gpu:
            transfers.append(time_transfers(points, repeats))
        for name, entry in found.items():
            bar.set_postfix_str(f"{name} n={n}")
            try:
                runs.append(run_one(entry, points, repeats))
            except Exception as exc:  # noqa: BLE001 - e.g. out of memory: record it, go on
                print(f"{name} failed at n={n}: {type(exc).__name__}: {exc}")
                runs.append({"backend": name, "n": n, "error": f"{type(exc).__name__}: {exc}"})
            bar.update()
    bar.close()
    return {"runs": runs, "transfers": transfers, "skipped": skipped}


def run_one(entry: Backend, points: np.ndarray, repeats: int) -> dict[str, Any]:
    """One backend at one size: checked, then timed host to host and (GPU) on the device."""
    n = points.shape[0]
    result = entry.host(points)  # warm-up: JIT compilation, cuBLAS handles, memory pools
    run: dict[str, Any] = {"backend": entry.name, "n": n, "dtype": str(points.dtype)}
    if n <= CHECK_MAX_N:
        run["max_abs_error"] = reference.max_error(result, points)
        rtol, atol = reference.tolerance(points.dtype)
        # points in the unit cube: no squared distance exceeds d, the number of coordinates
        if run["max_abs_error"] > atol + rtol * points.shape[1]:
            raise AssertionError(
                f"{entry.name} is wrong at n={n}: max abs error {run['max_abs_error']:.3g}"
            )
    del result
    run["host_to_host"] = record.summarize(record.wall_times(entry.host, points, repeats=repeats))
    if entry.device is not None:
        import cupy as cp

        d_points = cp.asarray(points)
        # no out=: each backend allocates its result (from CuPy's pool: no GPU time) as its
        # users would; the drop-in would otherwise add a copy into out to its time
        times = record.gpu_times(entry.device, (d_points,), repeats)
        run["device"] = record.summarize(times)
        del d_points
        cp.get_default_memory_pool().free_all_blocks()
    return run


def time_transfers(points: np.ndarray, repeats: int) -> dict[str, Any]:
    """Copy times of the input to the GPU and of the (n, n) result back (pageable host memory)."""
    import cupy as cp

    n = points.shape[0]
    d_result = cp.zeros((n, n), dtype=points.dtype)
    host_result = np.empty((n, n), dtype=points.dtype)
    h2d = record.gpu_times(cp.asarray, (points,), repeats)
    d2h = record.gpu_times(lambda a: cp.asnumpy(a, out=host_result), (d_result,), repeats)
    del d_result
    cp.get_default_memory_pool().free_all_blocks()
    return {
        "n": n,
        "h2d_bytes": points.nbytes,
        "d2h_bytes": host_result.nbytes,
        "h2d": record.summarize(h2d),
        "d2h": record.summarize(d2h),
    }


def run_ops(sizes: list[int], repeats: int, seed: int) -> list[dict[str, Any]]:
    """Microseconds per step (einsum row norms, matmul, element-wise combine), NumPy vs CuPy."""
    from demos.distance import generic

    rng = np.random.default_rng(seed)
    rows = []
    for n in sizes:
        x = rng.random((n, 3))
        x2, xy = generic.row_norms(x), generic.inner_products(x, x)
        steps = {
            "einsum": (generic.row_norms, (x,)),
            "matmul": (generic.inner_products, (x, x)),
            "ops": (generic.combine, (x2, xy, x2)),
        }
        assert tuple(steps) == OPS_STEPS
        row: dict[str, Any] = {"n": n}
        for step, (fn, args) in steps.items():
            fn(*args)
            row[f"np.{step}"] = 1e6 * float(np.mean(record.wall_times(fn, *args, repeats=repeats)))
        if hardware.cupy_available():
            import cupy as cp

            for step, (fn, args) in steps.items():
                d_args = tuple(cp.asarray(a) for a in args)
                row[f"cp.{step}"] = 1e6 * float(np.mean(record.gpu_times(fn, d_args, repeats)))
                del d_args
            cp.get_default_memory_pool().free_all_blocks()
        rows.append(row)
    return rows


def compat_measurements(runs: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The original course's ``measurements.json``: mean host->host seconds per size."""
    table: dict[str, dict[str, float]] = {}
    for run in runs:
        if run["backend"] in COMPAT_NAMES and "host_to_host" in run:
            column = COMPAT_NAMES[run["backend"]]
            table.setdefault(str(run["n"]), {})[column] = run["host_to_host"]["mean_s"]
    return table


def compat_ops(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The original course's ``measurements_ops.json``: microseconds per step and size."""
    return {str(row["n"]): {k: v for k, v in row.items() if k != "n"} for row in rows}
