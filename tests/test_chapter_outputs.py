"""Chapters run without a GPU show no red boxes, colour codes or raw dicts.

Why: a student's first output in chapter 0 was TensorFlow's start-up noise in a
red stderr box, and on a GPU node Numba's advice printed raw colour codes. The
GPU-node tool (tools/gpu-node/notebooks.sh) checks every chapter on a GPU with
the same checker; here the chapters a new student meets first run on the CPU
(the whole course is executed by nbval in CI, which ignores stderr).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools" / "gpu-node"


@pytest.mark.slow
@pytest.mark.parametrize("chapter", ["00-getting-started", "02-simt-model"])
def test_chapter_runs_without_stderr_or_raw_output(chapter: str, tmp_path: Path) -> None:
    executed = tmp_path / f"{chapter}.ipynb"
    run = subprocess.run(
        [
            sys.executable,
            str(TOOLS / "execute_notebook.py"),
            str(ROOT / "course" / f"{chapter}.ipynb"),
            str(executed),
            "300",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    check = subprocess.run(
        [sys.executable, str(TOOLS / "check_outputs.py"), str(executed)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert check.returncode == 0, (
        f"{chapter} shows what a student takes for an error:\n{check.stdout}"
    )
