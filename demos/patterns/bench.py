"""``python -m demos bench patterns``: histograms and sums on one GPU, against the bandwidth bound.

Both patterns read their input once, so the fastest they can go is the time to
read it: bytes read / device memory bandwidth. The bandwidth is measured here
too, with a device-to-device copy (``cupy`` ``copyto``: each byte read once and
written once, so the copy's bytes moved / time). Each kernel's record carries
its *read* bandwidth, bytes read / time, and its fraction of that bound.

Writes ``patterns.json`` (layout: :mod:`demos.benchmarks.record`).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

from demos import hardware
from demos.benchmarks import record
from demos.gpu_timer import event_ms
from demos.live import Expect, Row, Table
from demos.patterns import kernels
from demos.patterns.copy_share import copy_share_rows, find

N_BINS = 256


def copy_bandwidth(
    cp: Any, nbytes: int, time_ms: Callable[[Callable[[], Any]], float] | None = None
) -> dict[str, float]:
    """Device-to-device copy: bytes moved (read + written) per second.

    *cp* is CuPy (or NumPy, for a test on the CPU with its own *time_ms*);
    timed with CUDA events unless *time_ms* is given.
    """
    src = cp.ones(nbytes // 4, dtype=cp.float32)
    dst = cp.empty_like(src)
    timer = time_ms or (lambda fn: event_ms(cp, fn))
    ms = timer(lambda: cp.copyto(dst, src))
    return {"bytes": float(nbytes), "ms": ms, "bytes_moved_per_s": 2 * nbytes / (ms / 1e3)}


def _record(name: str, ms: float, nbytes: int, bound: float, **extra: Any) -> dict[str, Any]:
    rate = nbytes / (ms / 1e3)
    return {
        "name": name,
        "ms": ms,
        "read_bytes_per_s": rate,
        "fraction_of_copy_bandwidth": rate / bound,
        **extra,
    }


def histograms(cp: Any, n: int, bound: float, max_blocks: int) -> list[dict[str, Any]]:
    rng = cp.random.default_rng(0)
    inputs = {
        "uniform": rng.integers(0, N_BINS, n, dtype=cp.int32),
        "skewed (90% in bin 0)": cp.where(
            rng.random(n) < 0.9, 0, rng.integers(0, N_BINS, n)
        ).astype(cp.int32),
    }
    blocks, threads = kernels.launch_config(n, max_blocks)
    out = []
    for label, values in inputs.items():
        expected = cp.bincount(values, minlength=N_BINS).get()
        bins = cp.zeros(N_BINS, cp.int32)
        for method, kernel in (
            ("racy", kernels.histogram_racy),
            ("global_atomic", kernels.histogram_global_atomic),
            ("shared", kernels.histogram_shared_kernel(N_BINS)),
        ):

            def launch(kernel=kernel, values=values, bins=bins) -> None:
                bins.fill(0)
                kernel[blocks, threads](values, bins)

            ms = event_ms(cp, launch)
            counts = bins.get()
            out.append(
                _record(
                    method,
                    ms,
                    values.nbytes,
                    bound,
                    input=label,
                    n=n,
                    correct=bool((counts == expected).all()),
                    counted=int(counts.sum()),
                    blocks=blocks,
                    threads=threads,
                )
            )
        ms = event_ms(cp, lambda values=values: cp.bincount(values, minlength=N_BINS))
        out.append(
            _record("cupy.bincount", ms, values.nbytes, bound, input=label, n=n, correct=True)
        )
    return out


def _cccl_reduce(cp: Any, values: Any) -> tuple[Callable[[], Any], Any] | str:
    """A cuda.compute (CCCL) sum of *values*, or the reason it cannot run here."""
    try:
        import cuda.compute as cc
    except Exception as exc:  # noqa: BLE001  (not installed, or an older cuda-cccl)
        return f"cuda.compute is not available: {exc}"
    try:
        result = cp.zeros(1, values.dtype)
        h_init = np.zeros(1, values.dtype)
        reducer = cc.make_reduce_into(values, result, cc.OpKind.PLUS, h_init)
        scratch = cp.empty(reducer(None, values, result, values.size, h_init), np.uint8)
        return (lambda: reducer(scratch, values, result, values.size, h_init)), result
    except Exception as exc:  # noqa: BLE001  (the API moved between releases: say so, don't fail)
        return f"cuda.compute is installed but its reduce_into failed: {exc!r}"[:300]


def reductions(cp: Any, n: int, bound: float, max_blocks: int) -> list[dict[str, Any]]:
    values = cp.random.default_rng(1).random(n, dtype=cp.float32)
    expected = float(values.astype(cp.float64).sum())
    blocks, threads = kernels.launch_config(n, max_blocks)
    partial = cp.zeros(blocks, cp.float32)
    out = []
    for method, kernel in (
        ("tree (shared memory)", kernels.tree_sum_kernel("float32")),
        ("warp shuffles", kernels.warp_sum_kernel("float32")),
    ):
        ms = event_ms(cp, lambda kernel=kernel: kernel[blocks, threads](values, partial))
        got = float(partial.astype(cp.float64).sum())
        out.append(
            _record(
                method,
                ms,
                values.nbytes,
                bound,
                n=n,
                blocks=blocks,
                correct=bool(abs(got - expected) <= 1e-4 * abs(expected)),
            )
        )
    ms = event_ms(cp, lambda: values.sum())
    got = float(values.sum())
    out.append(
        _record(
            "cupy.sum",
            ms,
            values.nbytes,
            bound,
            n=n,
            correct=bool(abs(got - expected) <= 1e-4 * abs(expected)),
        )
    )
    cccl = _cccl_reduce(cp, values)
    if isinstance(cccl, str):
        out.append({"name": "cuda.compute reduce_into", "skipped": cccl})
    else:
        call, result = cccl
        ms = event_ms(cp, call)
        got = float(result.get()[0])
        out.append(
            _record(
                "cuda.compute reduce_into",
                ms,
                values.nbytes,
                bound,
                n=n,
                correct=bool(abs(got - expected) <= 1e-4 * abs(expected)),
            )
        )
    return out


def input_size() -> int:
    """float32 values to reduce: 2**28 (1 GB, far beyond any cache), less on a GPU with under
    32 GB."""
    memory = hardware.gpu_memory_bytes() or 32 * 2**30
    n = 2**28
    while n > 2**22 and 4 * n > memory / 32:
        n //= 2
    return n


def run(quick: bool = False) -> dict[str, Any]:
    cp = hardware.require_cupy("the kernel-patterns benchmark")
    n = 2**20 if quick else input_size()
    sms = hardware.multiprocessors()
    max_blocks = 8 * sms  # enough resident blocks to keep every multiprocessor busy
    bandwidth = copy_bandwidth(cp, 4 * n)
    bound = bandwidth["bytes_moved_per_s"]
    return {
        "copy_bandwidth": bandwidth,
        "max_blocks": max_blocks,
        "histogram": histograms(cp, n // 4 if not quick else n, bound, max_blocks),
        "reduction": reductions(cp, n, bound, max_blocks),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    record.add_gpu_bench_arguments(parser, "patterns")


def main(args: argparse.Namespace) -> int:
    return record.run_gpu_bench(
        args, "patterns", "The kernel-patterns benchmark", run, ["demos/patterns"]
    )


# ------------------------------------------------------------ what chapter 4b shows, live
INPUTS = ("uniform", "skewed (90% in bin 0)")
HISTOGRAM_METHODS = ("racy", "global_atomic", "shared", "cupy.bincount")
REDUCTIONS = ("tree (shared memory)", "warp shuffles", "cupy.sum")

RACY_TABLE = Table(
    "A histogram without atomics: increments lost to the race",
    tuple(
        Row(
            f"{label}: counted",
            lambda r, i=label: find(r["histogram"], "racy", i)["counted"],
            "",
            0,
        )
        for label in INPUTS
    )
    + (Row("values", lambda r: find(r["histogram"], "racy", INPUTS[0])["n"], "", 0),),
    Expect(
        "threads that read, add and write the same bin at once lose counts",
        lambda r: all(
            find(r["histogram"], "racy", i)["counted"] < find(r["histogram"], "racy", i)["n"]
            for i in INPUTS
        ),
        "By chance no two threads collided in this run.",
    ),
)

HISTOGRAM_TABLE = Table(
    "Histograms of 256 bins against the bandwidth bound (GPU time; TB/s of input read)",
    (
        Row(
            "device copy, bytes moved",
            lambda r: r["copy_bandwidth"]["bytes_moved_per_s"] / 1e12,
            "TB/s",
            2,
        ),
        *(
            Row(
                f"{i.split()[0]}, {m}",
                lambda r, i=i, m=m: find(r["histogram"], m, i)["ms"],
                "ms",
                3,
            )
            for i in INPUTS
            for m in HISTOGRAM_METHODS
        ),
    ),
    Expect(
        "counting in shared memory first is much faster than atomics on global memory",
        lambda r: all(
            find(r["histogram"], "shared", i)["ms"] < find(r["histogram"], "global_atomic", i)["ms"]
            for i in INPUTS
        ),
        "This GPU's L2 cache resolves global atomics unusually fast.",
    ),
)

REDUCTION_TABLE = Table(
    "Sums of float32 values against the bandwidth bound (GPU time)",
    (
        Row("values", lambda r: find(r["reduction"], "cupy.sum")["n"], "", 0),
        *(
            Row(name, lambda r, m=name: find(r["reduction"], m)["ms"], "ms", 3)
            for name in REDUCTIONS
        ),
        *copy_share_rows("reduction", REDUCTIONS, "fraction_of_copy_bandwidth"),
    ),
    Expect(
        "the library's sum is at least as fast as the hand-written kernels",
        lambda r: (
            find(r["reduction"], "cupy.sum")["ms"]
            <= 1.1 * min(find(r["reduction"], m)["ms"] for m in REDUCTIONS[:2])
        ),
        "The course's kernels suit this GPU's number of multiprocessors particularly well.",
    ),
)
