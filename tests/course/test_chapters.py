"""The chapters' shared set-up and their hygiene: short first cells, working links, quiet start-up.

Why: a first cell of forty lines hides the lesson; a "Next" that is plain text
makes students hunt for files; TensorFlow's C++ start-up lines look like errors
to a newcomer. demos.notebook answers all three once, for every chapter.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from demos import notebook
from helpers import ROOT

CHAPTERS = sorted((ROOT / "course").glob("[0-9][0-9]*.ipynb"))
LINK = re.compile(r"\]\(([^)#\s]+\.(?:ipynb|md))\)")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_first_code_cell_is_at_most_ten_lines_and_uses_demos_notebook(path: Path) -> None:
    first = next(c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    assert len(first.source.splitlines()) <= 10, (
        f"{path.name}: first code cell has {len(first.source.splitlines())} lines"
    )
    assert "from demos.notebook import" in first.source


def _links() -> list[tuple[str, str]]:
    found = [
        (path.name, target)
        for path in CHAPTERS
        for cell in nbformat.read(path, as_version=4).cells
        if cell.cell_type == "markdown"
        for target in LINK.findall(cell.source)
    ]
    index = (ROOT / "course" / "README.md").read_text(encoding="utf-8")
    return found + [("README.md", target) for target in LINK.findall(index)]


@pytest.mark.parametrize("source, target", _links(), ids=lambda v: v)
def test_links_in_chapters_and_index_open_a_file(source: str, target: str) -> None:
    assert (ROOT / "course" / target).resolve().is_file(), (
        f"{source} links to {target}, which does not exist"
    )


@pytest.mark.parametrize(
    "path", [p for p in CHAPTERS if not p.name.startswith(("00", "01"))], ids=lambda p: p.stem
)
def test_every_technical_chapter_ends_with_linked_next_and_exercise(path: Path) -> None:
    last = nbformat.read(path, as_version=4).cells[-1].source
    assert re.search(r"\]\(\.\./exercises/\w+/\w+\.ipynb\)", last), (
        f"{path.name}: exercise is not a link"
    )


def test_setup_reports_the_machine_and_picks_simulator_sizes(capsys) -> None:
    env = notebook.setup()
    said = capsys.readouterr().out
    assert ("GPU found" in said) == env.on_gpu
    assert env.n_kernel == (24 if env.simulated else 4096)


def test_reference_helpers_read_the_shipped_measurements() -> None:
    host = notebook.distance_times("host_to_host")
    assert host["numpy"][4096] > host["cupy"][4096] > 0
    assert notebook.distance_transfer(4096, "d2h") > 0
    assert "H200" in notebook.reference_machine()


@pytest.mark.slow
def test_keras_imports_without_start_up_noise() -> None:
    code = "from demos.notebook import quiet_import; quiet_import('keras'); print('ok')"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert done.stdout.strip() == "ok", done.stderr
    assert "absl" not in done.stderr and "oneDNN" not in done.stderr, done.stderr
