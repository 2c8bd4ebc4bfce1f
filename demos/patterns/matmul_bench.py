"""``python -m demos bench matmul``: the naive and the tiled matrix multiply on one GPU, and cuBLAS.

Square float32 matrices, c = a @ b. Each product is first checked against a
float64 product of the same matrices (the largest error relative to the largest
entry), then timed with CUDA events (:mod:`demos.gpu_timer`). The record of each
kernel carries its time, its rate in TFLOPS (2 n^3 operations) and the global
loads per output the kernel makes by construction
(:func:`~demos.patterns.matmul.global_loads_per_output`); ``cupy.matmul``
(cuBLAS) is the library's yardstick.

Writes ``matmul.json`` (layout: :mod:`demos.benchmarks.record`); the chapter's
reference is that file from an H200, shipped as ``demos/results/matmul_h200.json``.
The measuring core, :func:`measure`, takes the array module and the timer, so
the tests run it on a CPU with NumPy and the simulator at tiny sizes.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import numpy as np

from demos import gpu_timer, hardware, live
from demos.benchmarks import record
from demos.kernel_testing import to_host
from demos.live import Expect, Row, Table
from demos.patterns import matmul, reports

N = 4096  # the reference size: 64 MB per matrix, a few milliseconds per product on an H200
QUICK_N = 512
SOURCES = ["demos/patterns/matmul.py"]  # the kernels measured
REFERENCE = "matmul_h200.json"
MAKE_REFERENCE = (
    "python -m demos bench matmul --output DIR, then copy DIR/matmul.json to "
    f"demos/results/{REFERENCE}"
)
TOLERANCE = 1e-3  # largest error / largest entry of c: float32 sums of n products
NAIVE, TILED, LIBRARY = "naive", "tiled (shared memory)", "cupy.matmul (cuBLAS)"


def _record(name: str, ms: float, n: int, error: float, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "ms": ms,
        "tflops": 2 * n**3 / (ms / 1e3) / 1e12,
        "max_relative_error": error,
        "correct": bool(error <= TOLERANCE),
        **extra,
    }


def measure(
    xp: Any, time_ms: Callable[[Callable[[], Any]], float], n: int, tiled: Any = None
) -> dict[str, Any]:
    """Check, then time, the naive kernel, a tiled kernel (the course's, or *tiled* with its own
    TILE) and ``xp.matmul`` on n x n float32 matrices of the array module *xp*."""
    rng = xp.random.default_rng(0)
    a = rng.random((n, n), dtype=xp.float32)
    b = rng.random((n, n), dtype=xp.float32)
    exact = to_host(a.astype(xp.float64) @ b.astype(xp.float64))
    scale = float(np.abs(exact).max())
    c = xp.zeros((n, n), dtype=xp.float32)

    def error() -> float:
        return float(np.abs(to_host(c).astype(np.float64) - exact).max()) / scale

    tile = matmul.TILE if tiled is None else matmul.tile_of(tiled)
    kernels = (
        (NAIVE, "naive", matmul.naive_matmul_kernel("float32"), matmul.TILE),
        (TILED, "tiled", tiled if tiled is not None else matmul.tiled_matmul_kernel(tile), tile),
    )
    records = []
    for name, method, kernel, edge in kernels:
        grid, block = matmul.launch_config(n, n, edge)

        def launch(kernel=kernel, grid=grid, block=block) -> None:
            kernel[grid, block](a, b, c)

        c.fill(0)
        launch()  # compiles, and gives the product to check before anything is timed
        wrong = error()
        records.append(
            _record(
                name,
                time_ms(launch),
                n,
                wrong,
                tile=edge,
                grid=list(grid),
                block=list(block),
                global_loads_per_output=matmul.global_loads_per_output(n, method, edge),
            )
        )
    c.fill(0)
    xp.matmul(a, b, out=c)
    wrong = error()
    records.append(_record(LIBRARY, time_ms(lambda: xp.matmul(a, b, out=c)), n, wrong))
    return {
        "n": n,
        "dtype": "float32",
        "tile": tile,
        "tiled_kernel": "the course's" if tiled is None else "yours",
        "kernels": records,
        "tiled_speedup_over_naive": records[0]["ms"] / records[1]["ms"],
    }


def run(quick: bool = False, tiled: Any = None) -> dict[str, Any]:
    """:func:`measure` on this machine's GPU: CuPy arrays, CUDA events."""
    cp = hardware.require_cupy("the matrix-multiply benchmark")
    return measure(cp, lambda fn: gpu_timer.event_ms(cp, fn), QUICK_N if quick else N, tiled)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    record.add_gpu_bench_arguments(parser, "matmul")


def main(args: argparse.Namespace) -> int:
    return record.run_gpu_bench(args, "matmul", "The matrix-multiply benchmark", run, SOURCES)


# ------------------------------------------------------------ what chapter 4b shows, live
def reference() -> live.Reference | None:
    """The shipped H200 result, or None after saying that it has not been measured yet."""
    return live.reference_or_explain(REFERENCE, MAKE_REFERENCE, "results")


def _kernel(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in result["kernels"] if r["name"] == name)


TABLE = Table(
    "Matrix multiply, n x n float32 (GPU time; TFLOPS = 2 n^3 operations per second)",
    (
        Row("n", "n", "", 0),
        Row("tile edge (threads per block: its square)", "tile", "", 0),
        *(Row(name, lambda r, m=name: _kernel(r, m)["ms"], "ms", 3) for name in (NAIVE, TILED)),
        Row(LIBRARY, lambda r: _kernel(r, LIBRARY)["ms"], "ms", 3),
        *(
            Row(f"{name}, TFLOPS", lambda r, m=name: _kernel(r, m)["tflops"], "", 1)
            for name in (NAIVE, TILED, LIBRARY)
        ),
        Row("tiled speed-up over naive", "tiled_speedup_over_naive", "x", 1),
        *(
            Row(
                f"global loads per element of c, {name}",
                lambda r, m=name: _kernel(r, m)["global_loads_per_output"],
                "",
                0,
            )
            for name in (NAIVE, TILED)
        ),
    ),
    Expect(
        "the tiled kernel is faster than the naive one",
        lambda r: _kernel(r, TILED)["ms"] < _kernel(r, NAIVE)["ms"],
        "The naive kernel's repeated loads are served by this GPU's caches almost as fast as "
        "shared memory serves the tiles; the tiled kernel saves loads, not arithmetic.",
    ),
)


def compare_loads(
    naive: Any,
    tiled: Any,
    predicted_naive: Any,
    predicted_tiled: Any,
    predicted_speedup: Any = None,
    inner: int = N,
) -> dict[str, float]:
    """Count, in the simulator, the global loads per element of c of both kernels on one block
    of c with k = 4 tiles; print them, what they make at k = *inner*, and the predictions."""
    tile = matmul.tile_of(tiled)
    small = 4 * tile
    a = np.ones((tile, small), np.float32)
    b = np.ones((small, tile), np.float32)
    counted = {
        "naive": reports.matmul_report(naive, a, b, tile)["loads_per_output"],
        "tiled": reports.matmul_report(tiled, a, b, tile)["loads_per_output"],
    }
    predicted = {"naive": predicted_naive, "tiled": predicted_tiled}
    print(f"Global loads (elements of a and b) per element of c, TILE = {tile}:")
    print(f"  {'':8s}{f'counted, k = {small}':>20s}{f'at k = {inner}':>14s}{'you predicted':>16s}")
    for method in ("naive", "tiled"):
        at_inner = matmul.global_loads_per_output(inner, method, tile)
        guess = predicted[method]
        guess = f"{guess:,.0f}" if isinstance(guess, (int, float)) else str(guess or "-")
        print(f"  {method:8s}{counted[method]:>20,.0f}{at_inner:>14,}{guess:>16s}")
    if predicted_speedup is not None:
        print(
            f"You predicted the tiled kernel {predicted_speedup}x as fast as the naive one: "
            "compare the row 'tiled speed-up over naive' below."
        )
    return counted
