"""The distance-matrix measurements of chapters 3, 4 and 4a, live, in the layout of their reference.

Each ``measure_*`` function times one comparison on this machine and returns a
flat dict; the matching ``reference_*`` function reads the same quantities
from ``demos/results/distance.json`` (the H200 reference sweep), so that
:func:`demos.live.side_by_side` can print them in two columns. Every GPU
result is checked against NumPy before it is timed.
"""

from __future__ import annotations

import contextlib
import io
import statistics
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from demos import hardware
from demos.benchmarks.record import wall_times
from demos.live import Expect, Reference, Row, Table, reference

SWEEP_SIZES = (16, 64, 256, 1024, 4096)
KERNELS = ("naive", "coalesced", "tiled", "symmetric", "best")


def _best_ms(fn: Callable[[], Any], repeats: int = 5) -> float:
    """Fastest of *repeats* wall-clock calls after one warm-up, in milliseconds (steady state)."""
    fn()
    return min(wall_times(fn, repeats=repeats)) * 1e3


def _sweep_reference() -> tuple[Reference | None, dict[tuple[str, int], dict[str, float]]]:
    ref = reference("distance.json")
    runs: dict[tuple[str, int], dict[str, float]] = {}
    if ref is not None:
        for run in ref.values.get("results", {}).get("runs", []):
            runs[(run["backend"], int(run["n"]))] = {
                kind: run[kind]["median_s"] * 1e3
                for kind in ("host_to_host", "device")
                if kind in run
            }
    return ref, runs


def _with_values(ref: Reference | None, values: dict[str, Any]) -> Reference | None:
    if ref is None:
        return None
    return Reference(values=values, machine=ref.machine, date=ref.date, source=ref.source)


def crossover(times: dict[str, dict[int, float]]) -> int | None:
    """The smallest n from which CuPy beats NumPy host to host (and stays ahead), or None."""
    cupy, numpy = times.get("cupy", {}), times.get("numpy", {})
    common = sorted(set(cupy) & set(numpy))
    for k, n in enumerate(common):
        if all(cupy[m] < numpy[m] for m in common[k:]):
            return n
    return None


def _flatten(times: dict[str, dict[int, float]]) -> dict[str, Any]:
    flat: dict[str, Any] = {"crossover_n": crossover(times), "times_ms": times}
    for backend, by_n in times.items():
        for n, ms in by_n.items():
            flat[f"{backend}_{n}_ms"] = ms
    return flat


def measure_sweep(sizes: tuple[int, ...] = SWEEP_SIZES, repeats: int = 3) -> dict[str, Any]:
    """NumPy, and CuPy where there is a GPU, host to host per size: chapter 3's crossover."""
    from demos.demo_numpy import distance_matrix as numpy_distance

    rng = np.random.default_rng(0)
    times: dict[str, dict[int, float]] = {"numpy": {}}
    cupy_distance = None
    if hardware.cupy_available():
        from demos.demo_cupy import distance_matrix as cupy_distance

        times["cupy"] = {}
    for n in sizes:
        points = rng.random((n, 3))
        times["numpy"][n] = _best_ms(lambda p=points: numpy_distance(p), repeats)
        if cupy_distance is not None:
            got = cupy_distance(points)
            np.testing.assert_allclose(got[:8], numpy_distance(points)[:8], rtol=1e-6, atol=1e-9)
            times["cupy"][n] = _best_ms(lambda p=points: cupy_distance(p), repeats)
    return _flatten(times)


def reference_sweep() -> Reference | None:
    ref, runs = _sweep_reference()
    times: dict[str, dict[int, float]] = {}
    for (backend, n), kinds in runs.items():
        if backend in ("numpy", "cupy") and "host_to_host" in kinds:
            times.setdefault(backend, {})[n] = kinds["host_to_host"]
    return _with_values(ref, _flatten(times))


def measure_share(n: int = 4096, repeats: int = 10) -> dict[str, Any]:
    """CuPy at size *n*: GPU time (events), host-to-host time, and the copy of the result back."""
    cp = hardware.require_cupy("the transfer lesson")
    from demos.benchmarks.record import gpu_times
    from demos.distance.cupy_backend import distance_matrix, distance_matrix_device

    points = np.random.default_rng(0).random((n, 3))
    x = cp.asarray(points)
    result = distance_matrix_device(x)
    host = np.empty((n, n))
    host.fill(0.0)
    device_ms = statistics.median(gpu_times(distance_matrix_device, (x,), repeats)) * 1e3
    d2h_ms = statistics.median(gpu_times(lambda: cp.asnumpy(result, out=host), (), repeats)) * 1e3
    h2h_ms = _best_ms(lambda: distance_matrix(points), repeats=5)
    want = ((points[:4, None, :] - points[None, :, :]) ** 2).sum(-1)
    np.testing.assert_allclose(host[:4], want, rtol=1e-9, atol=1e-12)
    return {
        "n": n,
        "d2h_mb": host.nbytes / 1e6,
        "device_ms": device_ms,
        "d2h_ms": d2h_ms,
        "host_to_host_ms": h2h_ms,
        "device_share": device_ms / h2h_ms,
    }


def reference_share(n: int = 4096) -> Reference | None:
    ref, runs = _sweep_reference()
    kinds = runs.get(("cupy", n))
    if ref is None or not kinds:
        return None
    d2h = next((t for t in ref.values["results"].get("transfers", []) if int(t["n"]) == n), None)
    return _with_values(
        ref,
        {
            "n": n,
            "d2h_mb": d2h["d2h_bytes"] / 1e6 if d2h else None,
            "device_ms": kinds["device"],
            "d2h_ms": d2h["d2h"]["median_s"] * 1e3 if d2h else None,
            "host_to_host_ms": kinds["host_to_host"],
            "device_share": kinds["device"] / kinds["host_to_host"],
        },
    )


def measure_kernels(
    n: int, kernels: tuple[str, ...] = KERNELS, repeats: int = 10
) -> dict[str, Any]:
    """GPU milliseconds (CUDA events) of chapter 4's kernels on n float64 points, device arrays."""
    from numba import cuda

    from demos.distance.numba_cuda import distance_matrix_device
    from demos.gpu_timer import event_stats, numba_events

    points = np.random.default_rng(0).random((n, 3))
    d_points = cuda.to_device(points)
    out = cuda.device_array((n, n))
    want = ((points[:16, None, :] - points[None, :, :]) ** 2).sum(-1)
    result: dict[str, Any] = {"n": n, "dtype": "float64"}
    for name in kernels:
        distance_matrix_device(d_points, out=out, kernel=name, strict=name != "best")
        np.testing.assert_allclose(out[:16].copy_to_host(), want, rtol=1e-9, atol=1e-12)
        launch = partial(distance_matrix_device, d_points, out=out, kernel=name)
        ms = event_stats(numba_events(), launch, repeats)["median_ms"]
        result[f"{name}_ms"] = ms
        result[f"{name}_tb_per_s"] = 8 * n * n / (ms / 1e3) / 1e12
    return result


def reference_kernels(n: int) -> Reference | None:
    ref, runs = _sweep_reference()
    values: dict[str, Any] = {"n": n, "dtype": "float64"}
    for name in KERNELS:
        kinds = runs.get((f"numba-cuda-{name}", n))
        if kinds and "device" in kinds:
            values[f"{name}_ms"] = kinds["device"]
            values[f"{name}_tb_per_s"] = 8 * n * n / (kinds["device"] / 1e3) / 1e12
    return _with_values(ref, values) if len(values) > 2 else None


def measure_cpu_cores(n: int, repeats: int = 5) -> dict[str, Any]:
    """NumPy, Numba on one core and on every usable core, in the steady state.

    The steady state: compiled, threads started, and the output written once
    before timing, so that the page faults of a fresh result (which many
    threads take in turn) are not what is measured.
    """
    import numba

    from demos.demo_numpy import distance_matrix as numpy_distance
    from demos.distance import numba_cpu

    threads = hardware.usable_cpu_count()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    x = np.random.default_rng(0).random((n, 3))
    yt = np.ascontiguousarray(x.T)
    out = np.empty((n, n))
    out.fill(0.0)
    serial = lambda: numba_cpu._rows_serial(x, yt, out)  # noqa: E731
    parallel = lambda: numba_cpu._rows_parallel(x, yt, out)  # noqa: E731
    parallel()
    np.testing.assert_allclose(out[:8], numpy_distance(x)[:8], rtol=1e-9, atol=1e-12)
    one, every = _best_ms(serial, repeats), _best_ms(parallel, repeats)
    return {
        "n": n,
        "threads": numba.get_num_threads(),
        "numpy_ms": _best_ms(lambda: numpy_distance(x), max(1, repeats // 2)),
        "one_core_ms": one,
        "all_cores_ms": every,
        "speedup": one / every,
    }


def reference_cpu_cores(n: int = 4096) -> Reference | None:
    ref, runs = _sweep_reference()
    one, every = runs.get(("numba-cpu", n)), runs.get(("numba-cpu-parallel", n))
    numpy = runs.get(("numpy", n))
    if ref is None or not (one and every and numpy):
        return None
    threads = ref.values.get("environment", {}).get("cpu_count")
    return _with_values(
        ref,
        {
            "n": n,
            "threads": threads,
            "numpy_ms": numpy["host_to_host"],
            "one_core_ms": one["host_to_host"],
            "all_cores_ms": every["host_to_host"],
            "speedup": one["host_to_host"] / every["host_to_host"],
        },
    )


def measure_ops(n: int = 4096, repeats: int = 5) -> dict[str, Any]:
    """Milliseconds per step (einsum, matmul, element-wise), NumPy vs CuPy, at size *n*."""
    from demos.benchmarks.distance_sweep import run_ops

    row = run_ops([n], repeats, seed=0)[0]
    return {k: (v / 1e3 if k != "n" else v) for k, v in row.items()}


def reference_ops(n: int = 4096) -> Reference | None:
    ref = reference("distance_ops.json")
    if ref is None:
        return None
    rows = ref.values.get("results", [])
    row = next((r for r in rows if int(r["n"]) == n), rows[-1] if rows else None)
    if row is None:
        return None
    return _with_values(ref, {k: (v / 1e3 if k != "n" else v) for k, v in row.items()})


SWEEP_TABLE = Table(
    "Where the GPU starts to win: NumPy vs CuPy, host to host (points in, matrix out)",
    (
        Row("CuPy beats NumPy from n =", "crossover_n", "", 0),
        *(
            Row(f"n = {n:5d}: {lib}", f"{lib}_{n}_ms", "ms", 3)
            for n in (16, 256, 1024, 4096)
            for lib in ("numpy", "cupy")
        ),
    ),
    Expect(
        "the GPU loses on a tiny matrix and wins on a large one",
        lambda r: r["numpy_16_ms"] < r["cupy_16_ms"] and r["cupy_4096_ms"] < r["numpy_4096_ms"],
        "On this node the host's copies or this CPU's speed move the crossover outside the sizes "
        "timed here.",
    ),
)

SHARE_TABLE = Table(
    "Where the time goes, CuPy host to host (float64)",
    (
        Row("n", "n", "", 0),
        Row("result copied back", "d2h_mb", "MB", 0),
        Row("computing on the GPU", "device_ms", "ms", 3),
        Row("copying the result back", "d2h_ms", "ms", 2),
        Row("host to host", "host_to_host_ms", "ms", 2),
        Row("GPU share of host to host", lambda r: 100 * r["device_share"], "%", 1),
    ),
    Expect(
        "computing is a small share of what a caller waits for",
        lambda r: r["device_share"] < 0.25,
        "This GPU is slow enough, or this host's copies fast enough, that computing is a large "
        "share here.",
    ),
)

LAUNCH_TABLE = Table(
    "Launch configuration: blocks of one thread vs 32 x 8 blocks (float64, GPU time)",
    (
        Row("n", "n", "", 0),
        Row("[(n, n), (1, 1)]", "naive_ms", "ms", 3),
        Row("32 x 8 blocks (coalesced)", "coalesced_ms", "ms", 3),
        Row("one thread per block / 32 x 8", lambda r: r["naive_ms"] / r["coalesced_ms"], "x", 0),
    ),
    Expect(
        "blocks of one thread waste 31 of every 32 lanes and are many times slower",
        lambda r: r["naive_ms"] > 5 * r["coalesced_ms"],
        "At this size the writes, not the lanes, set the time of both.",
    ),
)

TILED_TABLE = Table(
    "Shared-memory tiling vs the coalesced kernel (float64, GPU time)",
    (
        Row("n", "n", "", 0),
        Row("coalesced", "coalesced_ms", "ms", 3),
        Row("tiled", "tiled_ms", "ms", 3),
        Row("tiled / coalesced", lambda r: r["tiled_ms"] / r["coalesced_ms"], "x", 2),
    ),
    Expect(
        "tiling does not pay here: three coordinates per point are read from cache anyway",
        lambda r: r["tiled_ms"] > 0.9 * r["coalesced_ms"],
        "This GPU's caches serve the coordinates worse than its shared memory, so tiling pays "
        "a little.",
    ),
)

KERNELS_TABLE = Table(
    "Every kernel of the chapter at n = 16,384 float64: time and bandwidth of the writes",
    (
        *(Row(f"{name}", f"{name}_ms", "ms", 3) for name in KERNELS),
        *(Row(f"{name}, writes", f"{name}_tb_per_s", "TB/s", 2) for name in KERNELS),
    ),
    Expect(
        "the course's best kernel is the fastest",
        lambda r: r["best_ms"] <= 1.05 * min(r[f"{k}_ms"] for k in KERNELS),
        "On this GPU another kernel's launch shape happens to suit it better.",
    ),
)

CPU_TABLE = Table(
    "The CPU: NumPy, Numba on one core, Numba on all cores (float64, steady state)",
    (
        Row("n", "n", "", 0),
        Row("threads", "threads", "", 0),
        Row("NumPy", "numpy_ms", "ms", 2),
        Row("Numba, one core", "one_core_ms", "ms", 2),
        Row("Numba, all cores", "all_cores_ms", "ms", 2),
        Row("all cores / one core", "speedup", "x", 1),
    ),
    Expect(
        "all cores beat one core",
        lambda r: r["threads"] < 2 or r["speedup"] > 1.3,
        "This machine's cores are shared with other work right now.",
    ),
)

OPS_TABLE = Table(
    "Each step of the distance matrix, NumPy vs CuPy (float64)",
    (
        Row("n", "n", "", 0),
        *(
            Row(f"{lib} {step}", lambda r, k=f"{prefix}.{step}": r[k], "ms", 3)
            for prefix, lib in (("np", "NumPy"), ("cp", "CuPy"))
            for step in ("einsum", "matmul", "ops")
        ),
    ),
    Expect(
        "the matrix product and the element-wise step, where NumPy spends its time, are far "
        "faster on the GPU (the row norms are too small to matter on either)",
        lambda r: r["cp.matmul"] < r["np.matmul"] / 10 and r["cp.ops"] < r["np.ops"] / 10,
        "This node's CPU is unusually fast for these memory-bound steps.",
    ),
)


def memory_n() -> int:
    """Points for the memory lesson: 27,000 float64 (the drop-in's 17.5 GB peak) where a
    quarter of the GPU holds that peak, fewer on smaller GPUs."""
    memory = hardware.gpu_memory_bytes() or 80 * 2**30
    return min(27_000, int((memory / 4 / 3 / 8) ** 0.5))


def measure_memory(n: int | None = None) -> dict[str, Any]:
    """Peak GPU memory of the drop-in and of the lean version (CuPy's pool), float64."""
    from demos.benchmarks.distance_memory import run_memory

    with contextlib.redirect_stdout(io.StringIO()):
        return run_memory(n or memory_n(), np.dtype(np.float64), seed=0)


MEMORY_TABLE = Table(
    "Peak GPU memory of one distance matrix (float64), from CuPy's memory pool",
    (
        Row("n", "n", "", 0),
        Row("the result", lambda r: r["output_bytes"] / 1e9, "GB", 1),
        Row("drop-in: peak", lambda r: r["cupy"]["peak_bytes"] / 1e9, "GB", 1),
        Row("drop-in: peak / result", "cupy.peak_over_output", "x", 2),
        Row("lean: peak", lambda r: r["cupy-lean"]["peak_bytes"] / 1e9, "GB", 1),
        Row("lean: peak / result", "cupy-lean.peak_over_output", "x", 2),
    ),
    Expect(
        "the drop-in holds three matrices at its peak, the lean version one",
        lambda r: r["cupy"]["peak_over_output"] > 2.5 and r["cupy-lean"]["peak_over_output"] < 1.5,
        "This CuPy version fuses the element-wise steps differently.",
    ),
)
