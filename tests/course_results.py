"""The figures in demos/results/ the chapters quote, read for the tests of tests/docs/.

Measured runs of the reference H200 (distance, profiling, patterns, matmul, CNN,
multi-GPU results) and the published peaks of gpu_specs.json, each by the path a
chapter's prose or claim refers to.
"""

from __future__ import annotations

import json
from typing import Any

from helpers import ROOT

RESULTS = ROOT / "demos" / "results"


def result(name: str) -> dict[str, Any]:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def at(name: str, *path: str) -> Any:
    """The value at *path* in demos/results/NAME."""
    value = result(name)
    for key in path:
        value = value[key]
    return value


def distance_run(backend: str, n: int, kind: str, stat: str = "median_s") -> float:
    for run in result("distance.json")["results"]["runs"]:
        if run["backend"] == backend and run["n"] == n:
            return run[kind][stat]
    raise KeyError(f"distance.json has no {backend} run at n={n}")


def spec(gpu: str = "NVIDIA H200") -> dict[str, Any]:
    """Published figures (demos/results/gpu_specs.json, with their source)."""
    return result("gpu_specs.json")["gpus"][gpu]


def copy_tb_per_s() -> float:
    """The reference H200's device-to-device copy, bytes moved per second (patterns_h200.json)."""
    return result("patterns_h200.json")["results"]["copy_bandwidth"]["bytes_moved_per_s"] / 1e12


def chunked() -> dict[str, Any]:
    return result("distance_chunked.json")["results"]


def ncu_row(kernel: str) -> dict[str, Any]:
    return next(r for r in result("ncu_kernels_h200.json")["results"] if r["kernel"] == kernel)


def profiling(part: str) -> dict[str, Any]:
    return result("profiling_h200.json")["results"][part]


def syncs() -> tuple[float, float, int]:
    """(ms syncing every step, ms syncing once, steps) of chapter 4a's sync run."""
    run = profiling("syncs")
    return run["sync_every_step_ms"], run["sync_once_ms"], run["steps"]


def overlap_per_block() -> tuple[float, float, int]:
    """(compute ms, copy ms, chunks) per chunk of the one-stream overlap run."""
    run = profiling("overlap")
    chunks, one = run["chunks"], run["1_streams"]
    return one["compute_ms"] / chunks, one["copy_ms"] / chunks, chunks


def two_stream_model_ms() -> float:
    """Chapter 4a's model of the two-stream run, c + t + (chunks - 1) max(c, t), from the
    one-stream run's per-chunk times."""
    compute, copy, chunks = overlap_per_block()
    return compute + copy + (chunks - 1) * max(compute, copy)


def reduction(name: str) -> dict[str, Any]:
    return next(
        r for r in result("patterns_h200.json")["results"]["reduction"] if r["name"] == name
    )


def chapter6_sum_tb_per_s() -> float:
    n = 750_000_000
    seconds = result("multigpu_h200.json")["results"]["reduce"]["times_s"][str(n)]["1"]
    return 4 * n / seconds / 1e12


def write_tb_per_s(backend: str, n: int = 16384) -> float:
    return 8 * n * n / distance_run(backend, n, "device") / 1e12


def cnn(name: str, batch: int, precision: str) -> float:
    for run in result(name)["results"]:
        if run["device"] == "gpu" and run["batch_size"] == batch and run["precision"] == precision:
            return run["images_per_second"]
    raise KeyError(f"{name} has no GPU run at batch {batch}, {precision}")


def matmul(name: str) -> dict[str, Any]:
    kernels = result("matmul_h200.json")["results"]["kernels"]
    return next(k for k in kernels if k["name"] == name)


def inflight(threads: int, loads: int) -> dict[str, Any]:
    """One setting of chapter 4b's bytes-in-flight sweep (inflight_h200.json)."""
    sweep = result("inflight_h200.json")["results"]["sweep"]
    return next(r for r in sweep if r["threads"] == threads and r["loads"] == loads)
