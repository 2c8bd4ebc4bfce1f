"""The GPU-node notebook tools: what fails a chapter, and the live tables they collect.

Why: on a GPU node `tools/gpu-node/notebooks.sh` is what tells an instructor
that every chapter runs as a student sees it: no red boxes (stderr output), no
terminal colour codes, no raw dicts. Its checker and its table maker are
tested here, and chapters 0 and 2 (the first a new student meets; the whole
course is executed by nbval in CI, which ignores stderr) and 4a (whose checks
run the CuPy stand-in's streams and graphs) and 4c (whose checks watch the simulator's shared
memory) are run through them on the CPU.
The tools are the instructor's: the student edition ships without them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from demos import live
from helpers import ROOT, instructor_tools

TOOLS = ROOT / "tools" / "gpu-node"
pytestmark = instructor_tools


def _tool(name: str, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(TOOLS / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )


def test_live_tables_put_each_machine_beside_the_reference(tmp_path, monkeypatch, capsys) -> None:
    table = live.Table(
        "Two ways",
        (live.Row("fast", "fast", "ms", 2),),
        live.Expect("fast is fast", lambda r: r["fast"] < 1, "because of the test."),
    )
    ref = live.Reference({"fast": 1.0}, "NVIDIA H200", "2026-11-22", "x")
    for machine, value in (("h200", 0.5), ("h100", 2.0)):
        folder = tmp_path / machine
        folder.mkdir()
        monkeypatch.setenv(live.LOG_ENV, str(folder / "02-simt-model.jsonl"))
        live.side_by_side(table, ref, lambda v=value: {"fast": v}, need="cpu")
        live.side_by_side(table, None, None, need="numba", no_live="needs a profiler run")
    capsys.readouterr()
    first = json.loads((tmp_path / "h200" / "02-simt-model.jsonl").read_text().splitlines()[0])
    assert first["lesson_holds"] is True and first["rows"][0]["live"] == 0.5
    done = _tool("live_tables.py", str(tmp_path / "h200"), str(tmp_path / "h100"))
    assert done.returncode == 0, done.stderr
    assert "| fast | 0.5 ms | 2 ms | 1 ms |" in done.stdout
    assert "holds live" in done.stdout and "does not hold live" in done.stdout
    assert "reference only: needs a profiler run" in done.stdout


def test_output_check_finds_red_boxes_colour_codes_and_raw_dicts(tmp_path) -> None:
    notebook = nbformat.v4.new_notebook()
    quiet = nbformat.v4.new_code_cell("print('fine')")
    quiet.outputs = [nbformat.v4.new_output("stream", name="stdout", text="fine\n")]
    noisy = nbformat.v4.new_code_cell("x")
    noisy.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text="NumbaPerformanceWarning: Grid\n"),
        nbformat.v4.new_output("stream", name="stdout", text="\x1b[1mModel\x1b[0m\n"),
        nbformat.v4.new_output("stream", name="stdout", text="{'pid': 1, 'sum': 2.0}\n"),
    ]
    notebook.cells = [quiet, noisy]
    path = tmp_path / "run.ipynb"
    nbformat.write(notebook, path)
    done = _tool("check_outputs.py", str(path))
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and all("cell 1" in line for line in lines)
    assert "stderr" in lines[0] and "colour codes" in lines[1] and "raw dict" in lines[2]


@pytest.mark.slow
@pytest.mark.parametrize(
    "chapter",
    [
        "00-getting-started",
        "02-simt-model",
        "04a-profiling-and-asynchrony",
        "04c-scans-and-stencils",
    ],
)
def test_chapter_runs_without_stderr_or_raw_output(chapter: str, tmp_path: Path) -> None:
    executed = tmp_path / f"{chapter}.ipynb"
    source = str(ROOT / "course" / f"{chapter}.ipynb")
    run = _tool("execute_notebook.py", source, str(executed), "300", timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    check = _tool("check_outputs.py", str(executed))
    assert check.returncode == 0, (
        f"{chapter} shows what a student takes for an error:\n{check.stdout}"
    )
