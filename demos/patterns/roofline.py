"""A roofline of the course's own kernels: chapter 4d.

A kernel that does ``F`` operations and must move at least ``B`` bytes between
the GPU's memory (DRAM) and its chip cannot run faster than the slower of two
limits: ``F / peak_rate`` and ``B / bandwidth``. Per second, that is at most
``min(peak_rate, intensity x bandwidth)`` operations, where the *arithmetic
intensity* ``F / B`` is the kernel's operations per byte. Drawn on log-log axes
(intensity across, operations per second up) the bound is a slope that meets a
flat roof at the *ridge point* ``peak_rate / bandwidth``: left of it a kernel is
memory-bound, right of it compute-bound.

The bytes counted here are the least a kernel must move: every input read
once, every output written once (:func:`dram_bytes`); the operations are the
problem's own (:func:`operations`), whatever shortcuts a kernel takes. The
points come from the course's benchmark results, in the layout of
``demos/results/patterns_h200.json`` (sums, histograms), ``matmul_h200.json``
and chapter 4's distance kernels (:mod:`demos.lessons.distance_live`); the
roofs from the published peaks in ``gpu_specs.json`` (:func:`roofs`).
"""

from __future__ import annotations

from typing import Any

from demos import shipped_results

__all__ = [
    "KERNELS",
    "compare_prediction",
    "dram_bytes",
    "intensity",
    "operations",
    "plot",
    "points",
    "roofs",
]

KERNELS = ("sum", "histogram", "distance", "matmul")
DISTANCE_N = 16384  # chapter 4's reference size for its kernels (float64 points)
DISTANCE_KERNELS = ("naive", "coalesced", "tiled", "best")


def _known(kernel: str, n: int) -> None:
    if kernel not in KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; choose one of {KERNELS}")
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, not {n!r}")


def operations(kernel: str, n: int) -> float:
    """The problem's arithmetic: one addition per value for a sum or a histogram (its additions
    are integer), 8 per entry of an n x n distance matrix of 3-D points, 2 n^3 for an n x n
    matrix product."""
    _known(kernel, n)
    return {"sum": n, "histogram": n, "distance": 8 * n * n, "matmul": 2 * n**3}[kernel]


def dram_bytes(kernel: str, n: int, itemsize: int) -> float:
    """The least DRAM traffic: inputs read once, outputs written once (a histogram's 256 bins and
    a sum's few partial sums are left out: they stay in the cache)."""
    _known(kernel, n)
    return (
        itemsize
        * {"sum": n, "histogram": n, "distance": n * n + 3 * n, "matmul": 3 * n * n}[kernel]
    )


def intensity(kernel: str, n: int, itemsize: int) -> float:
    """Operations per byte of the least DRAM traffic."""
    return operations(kernel, n) / dram_bytes(kernel, n, itemsize)


# ------------------------------------------------------------ the roofs of a GPU
def roofs(gpu: str) -> dict[str, Any] | None:
    """Published peaks of *gpu* (a driver's name, "NVIDIA H100 80GB HBM3"): bandwidth in bytes/s,
    float32 and float64 operations/s, and the board they belong to; None for a GPU not listed."""
    specs = (shipped_results.load("gpu_specs.json") or {}).get("gpus", {})
    for family, entry in specs.items():
        if not gpu.startswith(family):
            continue
        boards = entry.get("memory_bandwidth_tb_per_s_by_board", {})
        kind = "PCIe" if "PCIe" in gpu else "NVL" if "NVL" in gpu else "SXM"
        board = next((b for b in boards if b.endswith(kind)), None)
        if board is None or board not in entry.get("tflops", {}):
            return None
        rates = entry["tflops"][board]
        return {
            "board": board,
            "bandwidth": boards[board] * 1e12,
            "float32": rates["fp32"] * 1e12,
            "float64": rates["fp64"] * 1e12,
        }
    return None


# ------------------------------------------------------------ points from benchmark results
def _point(label: str, kernel: str, n: int, itemsize: int, seconds: float, **extra: Any) -> dict:
    return {
        "label": label,
        "kernel": kernel,
        "precision": "float64" if itemsize == 8 else "float32",
        "intensity": intensity(kernel, n, itemsize),
        "ops_per_s": operations(kernel, n) / seconds,
        **extra,
    }


def points(
    patterns: dict[str, Any] | None,
    matmul: dict[str, Any] | None,
    distance: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """Roofline points from results in the layout of the course's benchmarks (any may be None):
    ``bench patterns``'s, ``bench matmul``'s and distance_live's kernel timings."""
    found = []
    if patterns:
        for r in patterns.get("reduction", []):
            if "ms" in r and r.get("correct", True):
                found.append(_point(f"sum: {r['name']}", "sum", r["n"], 4, r["ms"] / 1e3))
        for r in patterns.get("histogram", []):
            if r.get("input") == "uniform" and r["name"] in ("shared", "global_atomic"):
                name = "shared memory" if r["name"] == "shared" else "global atomics"
                found.append(_point(f"histogram: {name}", "histogram", r["n"], 4, r["ms"] / 1e3))
    if matmul:
        n = matmul["n"]
        for r in matmul["kernels"]:
            found.append(_point(f"matmul: {r['name']}", "matmul", n, 4, r["ms"] / 1e3))
            loads = r.get("global_loads_per_output")
            if loads:  # the same run, counted on the loads the kernel issues (chapter 4b)
                issued = 2 * n**3 / (loads * 4 * n * n)
                found.append(
                    {
                        **found[-1],
                        "label": f"{found[-1]['label']}, loads issued",
                        "intensity": issued,
                        "issued": True,
                    }
                )
    if distance:
        n = distance["n"]
        size = 8 if distance.get("dtype", "float64") == "float64" else 4
        for name in DISTANCE_KERNELS:
            if f"{name}_ms" in distance:
                found.append(
                    _point(f"distance: {name}", "distance", n, size, distance[f"{name}_ms"] / 1e3)
                )
    return found


def reference_points() -> list[dict[str, Any]]:
    """The points of the H200 reference runs shipped in demos/results/ (those that exist)."""
    from demos.lessons import distance_live

    def results(name: str) -> dict[str, Any] | None:
        data = shipped_results.load(name)
        return data.get("results") if data else None

    distance = distance_live.reference_kernels(DISTANCE_N)
    return points(
        results("patterns_h200.json"),
        results("matmul_h200.json"),
        distance.values if distance else None,
    )


def measure() -> list[dict[str, Any]]:
    """The same kernels timed on this machine's GPU (CuPy and numba-cuda; a few seconds)."""
    from demos.lessons import distance_live
    from demos.patterns import bench, matmul_bench

    return points(
        bench.run(),
        matmul_bench.run(),
        distance_live.measure_kernels(DISTANCE_N, DISTANCE_KERNELS, repeats=3),
    )


# ------------------------------------------------------------ the plot and the prediction
MARKERS = {"sum": "o", "histogram": "s", "distance": "^", "matmul": "D"}


def plot(panels: list[tuple[str, list[dict[str, Any]], dict[str, Any] | None]]) -> Any:
    """One log-log roofline per (title, points, roofs); returns the matplotlib figure."""
    import matplotlib.pyplot as plt
    import numpy as np

    figure, axes = plt.subplots(1, len(panels), figsize=(9 * len(panels), 5), squeeze=False)
    x = np.logspace(-2, 4, 200)
    for ax, (title, found, roof) in zip(axes[0], panels):
        if roof:
            for precision, style in (("float32", "-"), ("float64", "--")):
                ax.plot(
                    x,
                    np.minimum(roof[precision], x * roof["bandwidth"]) / 1e9,
                    "k" + style,
                    lw=1,
                    label=f"{precision} roof ({roof['board']})",
                )
        colours: dict[str, Any] = {}
        for p in found:
            hollow = p.get("issued")
            base = p["label"].removesuffix(", loads issued")
            colour = colours.setdefault(base, plt.cm.tab20(len(colours) % 20))
            ax.plot(
                p["intensity"],
                p["ops_per_s"] / 1e9,
                MARKERS[p["kernel"]],
                color=colour,
                mfc="none" if hollow else colour,
                ms=8,
                label=p["label"],
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (operations per byte)")
        ax.set_ylabel("achieved GFLOP/s (G operations per second)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    figure.tight_layout()
    return figure


def ridge(roof: dict[str, Any], precision: str = "float32") -> float:
    """Operations per byte where the slope meets the flat roof."""
    return roof[precision] / roof["bandwidth"]


def compare_prediction(predicted: dict[str, Any], found: list[dict[str, Any]], roof: dict) -> None:
    """Print, per kernel, its intensity, the ridge point of its precision, what the roofline
    says (memory- or compute-bound) and the student's *predicted* {kernel: True if memory-bound}."""
    print(
        f"Ridge points ({roof['board']}): float32 {ridge(roof):.1f}, "
        f"float64 {ridge(roof, 'float64'):.1f} operations per byte"
    )
    print(f"  {'kernel':10s}{'intensity':>11s}{'bound by':>12s}{'you said':>12s}")
    for kernel in KERNELS:
        mine = [p for p in found if p["kernel"] == kernel and not p.get("issued")]
        if not mine:
            continue
        p = mine[0]
        memory = p["intensity"] < ridge(roof, p["precision"])
        guess = predicted.get(kernel)
        said = "-" if guess is None else ("memory" if guess else "compute")
        mark = "" if guess is None else ("  ✓" if bool(guess) == memory else "  ✗")
        print(
            f"  {kernel:10s}{p['intensity']:>11.2f}{'memory' if memory else 'compute':>12s}"
            f"{said:>12s}{mark}"
        )


def panels() -> list[tuple[str, list[dict[str, Any]], dict[str, Any] | None]]:
    """What the chapter plots: this GPU's kernels against its roofs (where there is a GPU and
    the measurement works) and the H200 reference's against the H200's."""
    from demos import live

    shown = [("reference: NVIDIA H200 (demos/results/)", reference_points(), roofs("NVIDIA H200"))]
    if not live.live_possible("gpu"):
        print("No GPU here: the plot shows the H200 reference alone.")
        return shown
    here = live.gpu_name()
    try:
        found = measure()
    except Exception as exc:  # noqa: BLE001  (say what failed in one line; the reference stays)
        print(f"The live measurement failed here ({type(exc).__name__}: {str(exc)[:200]}).")
        return shown
    mine = roofs(here)
    if mine is None:
        print(f"gpu_specs.json lists no published peaks for {here}: its panel has no roofs.")
    return [(f"your GPU: {here}", found, mine), *shown]
