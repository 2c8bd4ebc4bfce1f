"""The grading benchmark's figures in README.md and BENCHMARKS.md come from its recorded JSON.

Each figure the prose quotes is computed here from ``grader/results/`` and
looked up in the prose as the prose rounds it (a number with its unit, not the
sentence around it), so the wording can change and a re-measured run shows up
as a stale figure. The runs themselves are ``python -m grader bench``; that
the partial students of a class really score partially is tested by running
it (tests/grader/test_grader_bench.py).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from helpers import ROOT

RESULTS = ROOT / "grader" / "results"
CLASS_OF_200 = ["simt", "cupy_port", "numba_distance", "multigpu", "cnn"]
ON_CPU = "-".join(CLASS_OF_200) + "-20students-2w-2cores"
ON_GPU = "-".join(CLASS_OF_200) + "-200students-16w-16cores"
ALL_SEVEN = "-".join([*CLASS_OF_200, "profiling", "kernel_patterns"]) + "-200students-16w-16cores"


def _bench(name: str, folder: str = "") -> dict:
    """A recorded run the prose quotes: always one that graded its whole class.

    A run stopped early (``"complete": false``, written as ``...-incomplete.json``)
    is never quoted as a finished one; runs from before the key were all complete.
    """
    result = json.loads((RESULTS / folder / f"grading-bench-{name}.json").read_text())
    assert result.get("complete", True) is True, f"{name}: an incomplete run is quoted"
    if "complete" in result:
        assert result["graded_notebooks"] == result["total_notebooks"], name
    return result


def test_incomplete_runs_are_named_so() -> None:
    """A partial result's file says so in its name, so it never passes for a finished run."""
    for path in RESULTS.rglob("grading-bench-*.json"):
        complete = json.loads(path.read_text()).get("complete", True)
        assert complete == (not path.stem.endswith("-incomplete")), path.name


def _prose(path: Path) -> str:
    return re.sub(r"\s+", " ", path.read_text())


def assert_quoted(prose: str, *figures: str) -> None:
    """Each figure (``"372 s"``, ``"2/10"``, ``"77.7 %"``) stands in the prose as a whole."""
    missing = [f for f in figures if not re.search(rf"(?<![\w.]){re.escape(f)}(?!\w)", prose)]
    assert missing == [], f"not quoted: {missing}"


def _scores(kind: dict) -> str:
    """One kind's score as the prose writes it (every notebook of a kind scored alike)."""
    assert len(kind["scores"]) == 1, kind["scores"]
    return f"{kind['scores'][0]:g}/10"


def test_the_class_of_20_without_a_gpu() -> None:
    result = _bench(ON_CPU)
    assert result["hardware"]["cores"] == 2 and result["hardware"]["gpus"] == "none"
    runs = result["assignments"]
    readme = _prose(ROOT / "README.md")
    assert f"grader/results/grading-bench-{ON_CPU}.json" in readme
    serial = [runs[a]["serial_nbgrader_seconds_per_notebook"] for a in CLASS_OF_200[:-1]]
    assert max(serial) - min(serial) <= 0.2, serial  # "about" one figure for the four
    kinds = runs["simt"]["by_kind"]
    assert kinds["memory"]["not_graded"] == kinds["memory"]["count"]
    assert any(f.startswith("memory: ") for f in kinds["memory"]["flags"])
    assert kinds["hostile"]["flagged"] == kinds["hostile"]["count"]
    assert_quoted(
        readme,
        f"{result['wall_seconds']:.0f} s",
        f"{result['workers']} workers",
        f"{sum(serial) / len(serial):.1f} s",
        f"{runs['cnn']['serial_nbgrader_seconds_per_notebook']:.1f} s",
        *(_scores(kinds[k]) for k in ("good", "partial", "looping", "hostile")),
    )
    assert_quoted(_prose(ROOT / "BENCHMARKS.md"), f"{result['wall_seconds']:.0f} s")


def test_the_class_of_200_on_one_h200() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text()
    prose = _prose(ROOT / "BENCHMARKS.md")
    readme = _prose(ROOT / "README.md")
    result = _bench(ON_GPU)
    assert result["students"] == 200 and result["workers"] == 16
    assert result["hardware"]["cores"] == 16 and "H200" in result["hardware"]["gpus"]
    assert result["hardware"]["sandbox"] == "bwrap+uid"
    assert list(result["assignments"]) == CLASS_OF_200
    for assignment, run in result["assignments"].items():
        row = next(line for line in text.splitlines() if line.startswith(f"| {assignment} |"))
        cells = [cell.strip() for cell in row.split("|")]
        assert cells[2] == ("yes" if run["gpu"] else "hidden"), row
        assert cells[3] == f"{run['by_kind']['good']['mean_seconds']:.1f} s", row
        assert cells[4] == f"{run['serial_nbgrader_seconds_per_notebook']:.1f} s", row
        assert cells[5] == f"{run['notebook_seconds']:.0f} s", row
        for kind, column in (("good", 6), ("partial", 7), ("hostile", 10)):
            assert cells[column].split(",")[0] == _scores(run["by_kind"][kind]).split("/")[0]
    wall, runs = result["wall_seconds"], result["assignments"].values()
    seconds = sum(r["notebook_seconds"] for r in runs)
    looping = [r["by_kind"]["looping"] for r in runs]
    spent = sum(k["count"] * k["mean_seconds"] for k in looping)
    alone = seconds / result["workers"]
    serial = result["estimated_serial_seconds"]
    assert_quoted(
        prose,
        f"{wall:.0f} s",
        f"{wall / 60:.1f} minutes",
        f"{result['cpu_busy_percent']:.1f} %",
        f"{sum(k['count'] for k in looping)} of the 1000",
        f"{100 * spent / seconds:.0f} %",
        f"{min(k['mean_seconds'] for k in looping):.0f} to",
        f"{max(k['mean_seconds'] for k in looping):.0f} s",
        f"{alone:.0f} s",
        f"{wall - alone:.0f} s",
        f"{serial / 60:.0f} minutes",
        f"{result['speedup_vs_serial_estimate']:.1f} times",
    )
    assert_quoted(readme, f"{wall / 60:.1f} minutes", f"{serial / 60:.0f} minutes")


def test_cnn_without_and_with_the_gpu() -> None:
    without = _bench(ON_GPU)["assignments"]["cnn"]["by_kind"]["good"]["mean_seconds"]
    earlier = _bench("cnn-with-gpu-200students-16w-16cores")
    assert "H200" in earlier["hardware"]["gpus"]
    with_gpu = earlier["assignments"]["cnn"]["by_kind"]["good"]["mean_seconds"]
    assert_quoted(_prose(ROOT / "README.md"), f"{without:.1f} s", f"{with_gpu:.1f} s")
    assert_quoted(_prose(ROOT / "BENCHMARKS.md"), f"{with_gpu:.1f} s")


def test_the_sandbox_box_before_and_after() -> None:
    prose = _prose(ROOT / "BENCHMARKS.md")
    text = (ROOT / "BENCHMARKS.md").read_text()
    cpu_before, cpu_after = _bench(ON_CPU), _bench(ON_CPU, "sandbox-box/after")
    gpu = {
        when: _bench("-".join(CLASS_OF_200) + "-40students-16w-16cores", f"sandbox-box/{when}")
        for when in ("before", "after")
    }
    assert gpu["after"]["hardware"]["gpus"] == gpu["before"]["hardware"]["gpus"] == "NVIDIA H200"
    serial = [
        r["assignments"]["simt"]["serial_nbgrader_seconds_per_notebook"]
        for r in (cpu_after, cpu_before)
    ]
    seconds = {
        w: sum(a["notebook_seconds"] for a in r["assignments"].values()) for w, r in gpu.items()
    }
    assert_quoted(
        prose,
        f"{cpu_after['wall_seconds']:.0f} s",
        f"{cpu_before['wall_seconds']:.0f} s",
        f"{serial[0]:.2f} s",
        f"{serial[1]:.2f} s",
        f"{gpu['after']['wall_seconds']:.0f} s",
        f"{gpu['before']['wall_seconds']:.0f} s",
        f"{seconds['after']:.0f} against {seconds['before']:.0f} notebook-seconds",
        f"{100 * (seconds['after'] / seconds['before'] - 1):.0f} %",
    )
    for assignment in CLASS_OF_200:
        before, after = (gpu[w]["assignments"][assignment]["by_kind"]["good"] for w in gpu)
        row = f"| {assignment} | {before['mean_seconds']:.1f} s | {after['mean_seconds']:.1f} s |"
        assert row in text, row


def test_the_seven_assignments_for_200_students() -> None:
    result = _bench(ALL_SEVEN)
    runs = result["assignments"]
    students, workers = result["students"], result["workers"]
    assert len(runs) == 7 and students == 200 and workers == 16
    assert result["hardware"]["gpus"].startswith("NVIDIA H") and result["hardware"]["cores"] == 16
    assert result["hardware"]["sandbox"] == "bwrap+uid"
    assert result["wall_seconds"] < 600  # the target: 200 students x 7 assignments in 10 minutes
    for run in runs.values():
        kinds = run["by_kind"]
        assert kinds["good"]["scores"] == kinds["looping"]["scores"] == [10.0]
        assert len(kinds["partial"]["scores"]) == 1 and 0 < kinds["partial"]["scores"][0] < 10
        assert kinds["memory"]["not_graded"] == kinds["memory"]["count"]
        assert kinds["hostile"]["flagged"] == kinds["hostile"]["count"]
    good = {a: r["by_kind"]["good"]["mean_seconds"] for a, r in runs.items()}
    others = [v for a, v in good.items() if a not in ("kernel_patterns", "cnn")]
    looping = [r["by_kind"]["looping"] for r in runs.values()]
    phases = [r["by_kind"]["good"]["mean_phase_seconds"] for r in runs.values()]
    seconds = sum(r["notebook_seconds"] for r in runs.values())
    looping_seconds = sum(k["count"] * k["mean_seconds"] for k in looping)
    started = result["first_started_seconds"]
    first, last = next(iter(started)), list(started)[-1]

    def spread(name: str) -> str:
        low, high = (f"{f(p[name] for p in phases):.1f}" for f in (min, max))
        return low if low == high else f"{low} to {high}"

    assert_quoted(
        _prose(ROOT / "BENCHMARKS.md"),
        f"{result['wall_seconds']:.1f} s",
        f"{result['wall_seconds'] / 60:.1f} minutes",
        f"{result['cpu_busy_percent']:.1f} %",
        f"{good['kernel_patterns']:.1f} s in kernel_patterns",
        f"{good['cnn']:.1f} s in cnn",
        f"{min(others):.1f} to {max(others):.1f} s",
        f"{spread('start')} s to start",
        f"{spread('hidden_tests')} s of hidden",
        f"{spread('grader_cpu')} CPU-seconds",
        f"{sum(k['count'] for k in looping)} looping notebooks",
        f"{min(k['mean_seconds'] for k in looping):.1f} to "
        f"{max(k['mean_seconds'] for k in looping):.1f} s",
        f"{100 * looping_seconds / seconds:.0f} %",
        f"{seconds:.0f} notebook-seconds",
        f"{seconds / workers:.0f} s",
        f"{result['wall_seconds'] - seconds / workers:.0f} s",
        f"{students * 7} notebooks",
        f"{first}'s first notebook started at {started[first]:.1f} s",
        f"kernel_patterns at {started['kernel_patterns']:.1f} s",
        f"cnn at {started['cnn']:.1f} s",
        f"{last}'s first at {started[last]:.1f} s",
    )
    assert_quoted(
        _prose(ROOT / "README.md"),
        f"{result['wall_seconds']:.1f} s",
        f"{result['wall_seconds'] / 60:.1f} minutes",
        f"classes of {students}",
        f"{students * 7} notebooks",
    )
