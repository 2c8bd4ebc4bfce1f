"""The code's shape, checked: ruff clean and formatted, small modules, only the product committed.

The style rules live in ``[tool.ruff]`` of pyproject.toml; ruff comes with the
``test`` extra. Ruff runs over the whole tree as ``ruff check .`` does, skipping
what git ignores (tests/test_tree.py keeps code out of .gitignore) and notebooks
(pyproject.toml says why). The other checks keep promises docs/developers.md makes to
maintainers, and the README's layout table true.
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
    """The Python modules of demos/, grader/, tools/, tests/ and deploy/ (the hub, its spawner),
    and every file in bin/ (the launcher, its sourced parts, its job script template);
    notebooks are not counted."""
    folders = ("demos", "grader", "tools", "tests", "deploy")
    files = [p for folder in folders for p in (ROOT / folder).rglob("*.py")]
    files += [p for p in (ROOT / "bin").rglob("*") if p.is_file() and not p.name.startswith(".")]
    return [p for p in files if "__pycache__" not in p.parts]


LONG_MODULE_REASON = re.compile(r"^\W*Longer than 400 lines: \S.{20,}", re.MULTILINE)


def long_modules_without_a_reason(files: list[Path], root: Path = ROOT) -> dict[str, int]:
    """The files over MAX_MODULE_LINES that do not say why they are long (path -> lines)."""
    missing = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES and not LONG_MODULE_REASON.search(text):
            missing[str(path.relative_to(root))] = lines
    return missing


def test_a_module_over_the_limit_says_why():
    """One job per module is the rule, size only the prompt to look: a module may grow past
    MAX_MODULE_LINES when its one job does not split along a seam, and then it says so in a
    line starting "Longer than 400 lines:" for the reviewer to weigh (docs/developers.md)."""
    names = {str(p.relative_to(ROOT)) for p in sized_files()}
    assert {
        "demos/hardware.py",
        "deploy/jupyterhub/course_spawner.py",
        "bin/gpu-jupyter",
        "bin/gpu-jupyter.d/job.sh.in",
        "tests/test_style.py",
    } <= names
    assert long_modules_without_a_reason(sized_files()) == {}


def test_the_reason_rule_catches_a_long_module_and_accepts_a_stated_reason(tmp_path):
    body = "x = 1\n" * (MAX_MODULE_LINES + 1)
    silent, reasoned, short_reason = (tmp_path / f"{name}.py" for name in ("a", "b", "c"))
    silent.write_text(body, encoding="utf-8")
    reasoned.write_text(
        "# Longer than 400 lines: one table of cases that reads best in one place.\n" + body,
        encoding="utf-8",
    )
    short_reason.write_text("# Longer than 400 lines: yes\n" + body, encoding="utf-8")
    found = long_modules_without_a_reason([silent, reasoned, short_reason], root=tmp_path)
    assert set(found) == {"a.py", "c.py"}


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
