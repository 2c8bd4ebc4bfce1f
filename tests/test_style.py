"""The code's shape, checked: ruff clean and formatted, small modules, only the product committed.

The style rules live in ``[tool.ruff]`` of pyproject.toml; ruff comes with the
``test`` extra. Ruff runs over the whole tree as ``ruff check .`` does, skipping
what git ignores (tests/test_tree.py keeps code out of .gitignore) and notebooks
(pyproject.toml says why). The other checks keep promises the README makes to maintainers.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

MAX_MODULE_LINES = 400
GPU_NODE_TOOLS = sorted((ROOT / "tools" / "gpu-node").glob("*.sh"))


def ruff() -> str:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if found is None:
        pytest.skip("ruff is not installed (it comes with the 'test' extra)")
    return found


def tracked_files(*patterns: str) -> list[str]:
    """Files git tracks (matching ``patterns``, all without), relative to the root."""
    proc = subprocess.run(
        ["git", "ls-files", "--", *patterns], cwd=ROOT, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        pytest.skip("not a git checkout (or nothing committed)")
    return proc.stdout.split()


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=" ".join)
def test_ruff_is_clean(command):
    proc = subprocess.run(
        [ruff(), *command, "."], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def test_ruff_sees_every_tracked_python_file():
    proc = subprocess.run(
        [ruff(), "check", "--show-files", "."], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    seen = {Path(line).resolve() for line in proc.stdout.splitlines() if line.strip()}
    unseen = [name for name in tracked_files("*.py") if (ROOT / name).resolve() not in seen]
    assert unseen == []


def sized_files() -> list[Path]:
    """The Python modules of demos/, grader/, tools/ and tests/, and every file in bin/ (the
    launcher, its sourced parts, its job script template); notebooks are not counted."""
    folders = ("demos", "grader", "tools", "tests")
    files = [p for folder in folders for p in (ROOT / folder).rglob("*.py")]
    files += [p for p in (ROOT / "bin").rglob("*") if p.is_file() and not p.name.startswith(".")]
    return [p for p in files if "__pycache__" not in p.parts]


def test_no_module_or_script_is_over_the_limit():
    """Split along the seams when one grows past it (grader/batch.py and one_student.py,
    bin/gpu-jupyter and gpu-jupyter.d/, a test module by what it tests with what its
    parts share in a helpers module), never squeezed."""
    names = {str(p.relative_to(ROOT)) for p in sized_files()}
    assert {
        "demos/hardware.py",
        "bin/gpu-jupyter",
        "bin/gpu-jupyter.d/job.sh.in",
        "tests/test_style.py",
    } <= names
    sizes = {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sized_files()
    }
    assert {p: n for p, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def test_readme_layout_lists_every_top_level_folder():
    folders = {name.split("/")[0] for name in tracked_files() if "/" in name}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([^`/]+)/` \|", readme, flags=re.MULTILINE))
    assert folders - listed == set()


@pytest.mark.parametrize("script", GPU_NODE_TOOLS, ids=lambda p: p.name)
def test_gpu_node_tool_parses_and_explains_itself(script):
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0
    if script.name == "common.sh":
        return  # sourced by the others
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2  # no output folder: usage, and nothing run
    assert f"tools/gpu-node/{script.name} OUTDIR" in proc.stderr


def test_gpu_node_tools_speak_only_of_the_product():
    """Tools for a cluster's GPU node: no machine pool, no package side-loading, no patches."""
    banned = re.compile(
        # (character classes keep these words out of the repository, this line included)
        r"\blen[t]\b|devic[e] tool|\bcarr(y|ied)\b|\.wh[l]|whee[l]|shi[m]|row_stac[k]|\$OU[T]\b",
        re.I,
    )
    for path in [*GPU_NODE_TOOLS, ROOT / "tests" / "conftest.py", ROOT / ".gitignore"]:
        hits = [
            line for line in path.read_text(encoding="utf-8").splitlines() if banned.search(line)
        ]
        assert hits == [], f"{path.name}: {hits}"


def test_results_hold_no_logs_with_foreign_paths_or_terminal_colours():
    for path in (ROOT / "demos" / "results").rglob("*"):
        if path.suffix in (".json", ".txt", ".csv", ".md"):
            text = path.read_text(encoding="utf-8")
            assert "\x1b[" not in text, path
            assert not re.search(r"(/tmp|/root|/home|/work|/opt)/", text), path
