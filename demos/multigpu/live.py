"""Chapter 6 measured on the GPUs this node has (1, 2, 4 or 8), beside the reference curve.

The scenarios are those of ``python -m demos bench multigpu`` at the reference
sizes (they fit one GPU with 16 GB), timed on 1 GPU and on every power of two
up to the node's count. With one GPU the chapter shows the one-GPU figures next
to the reference and says what more GPUs would show.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from demos import hardware
from demos.benchmarks import sizes
from demos.live import Expect, Reference, Row, Table, reference

REPEATS = 3
SCENARIOS = ("matvec", "reduce", "lorenz")
#: The sums the chapter tabulates: a few million values per GPU, and hundreds of millions.
REDUCE_SIZES = (10_000_000, 30_000_000, 750_000_000)


def gpu_counts(available: int | None = None) -> list[int]:
    """1, 2, 4, 8: the GPU counts up to what this node has (none without CuPy on a GPU)."""
    if available is None:
        available = hardware.gpu_count() if hardware.cupy_available() else 0
    return [g for g in (1, 2, 4, 8) if g <= available]


def what_more_gpus_show(counts: list[int]) -> str:
    """One sentence for a node with fewer than two GPUs."""
    if len(counts) > 1:
        return f"Measured on {counts[-1]} GPUs of this node: the speedups are yours."
    return (
        "This node has one GPU, so only the 1-GPU figures are measured here; with two or more "
        "the same cell times every power of two up to their number and the speedups appear "
        "beside the reference's."
    )


def measure(scenario: str, counts: list[int] | None = None) -> dict[str, Any]:
    """Time *scenario* ("matvec", "reduce" or "lorenz") on 1 .. all GPUs of this node."""
    from demos.multigpu import bench

    counts = counts or gpu_counts()
    if not counts:
        raise hardware.GPUUnavailableError("chapter 6's measurements need CuPy on a CUDA GPU")
    if scenario == "matvec":
        return bench.bench_matvec(counts, REPEATS)
    if scenario == "reduce":
        return bench.bench_reduce(counts, REPEATS, sizes=list(REDUCE_SIZES))
    if scenario == "lorenz":
        return bench.bench_lorenz(counts, sizes.LORENZ_TRAJECTORIES, sizes.LORENZ_STEPS, REPEATS)
    raise ValueError(f"scenario must be one of {SCENARIOS}, not {scenario!r}")


def reference_of(scenario: str) -> Reference | None:
    """The scenario's part of ``demos/results/multigpu_h200.json``."""
    return reference("multigpu_h200.json", "results", scenario)


def _all_counts() -> list[str]:
    ref = reference("multigpu_h200.json", "parameters")
    known = [str(g) for g in (ref.values.get("gpu_counts", []) if ref else [])]
    mine = [str(g) for g in gpu_counts()]
    return sorted(set(known) | set(mine), key=int)


def rows(scenario: str) -> list[Row]:
    """Time and speedup per GPU count, for every count measured here or in the reference."""
    counts = _all_counts()
    if scenario == "reduce":
        out = []
        for n in REDUCE_SIZES:
            for g in counts:
                out.append(
                    Row(
                        f"{n / 1e6:g} M values, {g} GPU(s)",
                        lambda r, n=n, g=g: r["times_s"][str(n)][g] * 1e6,
                        "µs",
                        1,
                    )
                )
        return out
    out = [Row(f"{g} GPU(s)", lambda r, g=g: r["times_s"][g] * 1e3, "ms", 2) for g in counts]
    out += [Row(f"speedup on {g} GPUs", f"speedup.{g}", "x", 2) for g in counts if g != "1"]
    return out


def figures(results: dict[str, Any], counts: list[int]) -> list[Path]:
    """The chapter's scaling figures drawn from live *results* (PNG files in a temporary folder)."""
    from demos.benchmarks.record import environment_record
    from demos.multigpu import plots

    result = {
        "benchmark": "multigpu",
        "environment": environment_record(),
        "parameters": {"gpu_counts": counts},
        "results": results,
    }
    return plots.plot(result, Path(tempfile.mkdtemp()))


def _most(times: dict[str, Any]) -> str:
    return max(times, key=int)


TITLES = {
    "matvec": "Mat-vec, 10,000 x 300,000 float32, rows split over the GPUs",
    "reduce": "Sum of float32 values split over the GPUs (CUDA graph per call)",
    "lorenz": "Lorenz ensemble: 8,388,608 trajectories x 1,000 RK4 steps, split over the GPUs",
}


def _scales(r: dict[str, Any]) -> bool | None:
    """Speedup on the most GPUs above 60% of ideal; None with one GPU (nothing to compare)."""
    if len(r["times_s"]) < 2:
        return None
    most = _most(r["times_s"])
    return r["speedup"][most] > 0.6 * int(most)


def _sum_crosses_over(r: dict[str, Any]) -> bool | None:
    """Small sums: one GPU at least as fast; 750 M values: the most GPUs clearly faster."""
    small, large = r["times_s"]["10000000"], r["times_s"]["750000000"]
    if len(large) < 2:
        return None
    most = _most(large)
    return large[most] < 0.8 * large["1"] and small["1"] <= 1.2 * small[most]


EXPECTS = {
    "matvec": Expect(
        "reading a large matrix scales with the GPUs",
        _scales,
        "The GPUs of this node share a PCIe switch or were busy with other work.",
    ),
    "reduce": Expect(
        "a few million values per GPU: one GPU wins; hundreds of millions: more GPUs win",
        _sum_crosses_over,
        "Launch and synchronisation costs differ on this node's GPUs and driver.",
    ),
    "lorenz": Expect(
        "independent trajectories scale with the GPUs",
        _scales,
        "The ensemble is too small per GPU on this node for the launch cost to disappear.",
    ),
}


def table(scenario: str) -> Table:
    """The chapter's table for *scenario*, with a row per GPU count measured here or there."""
    return Table(TITLES[scenario], tuple(rows(scenario)), EXPECTS[scenario])
