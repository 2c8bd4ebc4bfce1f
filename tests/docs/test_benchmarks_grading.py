"""BENCHMARKS.md's figures of the seven-assignment grading run come from its recorded JSON."""

from __future__ import annotations

import json
import re

from helpers import ROOT

ALL_SEVEN = "simt-cupy_port-numba_distance-multigpu-cnn-profiling-kernel_patterns"
RESULT = ROOT / "grader" / "results" / f"grading-bench-{ALL_SEVEN}-60students-16w-16cores.json"


def _prose() -> str:
    return re.sub(r"\s+", " ", (ROOT / "BENCHMARKS.md").read_text())


def test_seven_assignment_run_figures_come_from_the_json() -> None:
    result = json.loads(RESULT.read_text())
    prose = _prose()
    runs = result["assignments"]
    assert len(runs) == 7 and result["students"] == 60 and result["workers"] == 16
    assert "H200" in result["hardware"]["gpus"] and result["hardware"]["cores"] == 16
    assert f"took {result['wall_seconds']:.1f} s" in prose
    assert f"the CPUs {result['cpu_busy_percent']:.1f} % busy" in prose
    good = {a: r["by_kind"]["good"]["mean_seconds"] for a, r in runs.items()}
    assert f"{good['kernel_patterns']:.1f} s in kernel_patterns" in prose
    assert f"{good['cnn']:.1f} s in cnn" in prose
    others = [v for a, v in good.items() if a not in ("kernel_patterns", "cnn")]
    assert f"{min(others):.1f} to {max(others):.1f} s elsewhere" in prose
    looping = [r["by_kind"]["looping"]["mean_seconds"] for r in runs.values()]
    assert f"after {min(looping):.1f} to {max(looping):.1f} s" in prose
    assert f"take about {result['wall_seconds'] * 200 / 60:.0f} s" in prose
    assert all(r["by_kind"]["good"]["scores"] == [10.0] for r in runs.values())
    assert all(
        r["by_kind"]["memory"]["not_graded"] == r["by_kind"]["memory"]["count"]
        for r in runs.values()
    )
