"""The benchmarks page is what ``tools/docs/render.py`` makes from the result files.

Every table and quoted figure of ``docs/benchmarks.md`` is rendered from
``demos/results/`` and ``grader/results/``, so one check replaces a test per
table: the committed page must equal its rendering. The other tests show that
the check has teeth (a changed result changes the page; a claim the data no
longer supports stops the rendering) and that the rounding is as documented.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from helpers import ROOT

TOOLS = ROOT / "tools" / "docs"


def _module(name: str) -> ModuleType:
    """A module of tools/docs/ (a folder of scripts, not a package), imported by path."""
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    spec = importlib.util.spec_from_file_location(f"docs_{name}", TOOLS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_pages_are_their_rendering() -> None:
    proc = subprocess.run(
        [sys.executable, str(TOOLS / "render.py"), "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]


def _copy_results(dest: Path) -> None:
    for folder in ("demos/results", "grader/results"):
        shutil.copytree(ROOT / folder, dest / folder)
    (dest / "docs").mkdir()


def test_a_re_measured_result_changes_the_page(tmp_path: Path) -> None:
    render = _module("render")
    _copy_results(tmp_path)
    before, _ = render.render_all(tmp_path)
    path = tmp_path / "demos" / "results" / "matmul_h200.json"
    run = json.loads(path.read_text())
    run["results"]["kernels"][0]["ms"] = 123.456
    path.write_text(json.dumps(run))
    after, unquoted = render.render_all(tmp_path)
    page = tmp_path / "docs" / "benchmarks.md"
    assert "| naive | 123.5 ms |" in after[page] and "| naive | 123.5 ms |" not in before[page]
    assert unquoted == []


def test_a_result_file_no_page_quotes_is_reported(tmp_path: Path) -> None:
    render = _module("render")
    _copy_results(tmp_path)
    (tmp_path / "demos" / "results" / "newbench_h100.json").write_text('{"benchmark": "newbench"}')
    _, unquoted = render.render_all(tmp_path)
    assert unquoted == ["demos/results/newbench_h100.json"]


def test_a_claim_the_data_no_longer_supports_stops_the_rendering(tmp_path: Path) -> None:
    render = _module("render")
    _copy_results(tmp_path)
    path = tmp_path / "demos" / "results" / "inflight_h200.json"
    run = json.loads(path.read_text())
    run["results"]["sweep"][0]["fraction_of_copy"] = 2.0  # faster than cupy.sum
    path.write_text(json.dumps(run))
    with pytest.raises(sys.modules["figures"].ClaimError, match="short of the library's sum"):
        render.render_all(tmp_path)


def test_an_incomplete_grading_run_is_never_quoted() -> None:
    figures = _module("figures")
    run = {"complete": False, "graded_notebooks": 3, "total_notebooks": 10}
    with pytest.raises(ValueError, match="incomplete"):
        figures.complete_run(run)


def test_incomplete_grading_runs_are_named_so() -> None:
    """A partial result's file says so in its name, so it never passes for a finished run."""
    for path in (ROOT / "grader" / "results").rglob("grading-bench-*.json"):
        complete = json.loads(path.read_text()).get("complete", True)
        assert complete == (not path.stem.endswith("-incomplete")), path.name


@pytest.mark.parametrize(
    "seconds, text",
    [(2.1958e-05, "22 us"), (0.00814, "8.14 ms"), (5.971, "5.97 s"), (0.0009996, "1 ms")],
)
def test_durations_keep_three_significant_digits_in_the_nearest_unit(seconds, text) -> None:
    assert _module("formats").duration(seconds) == text


def test_a_spread_collapses_when_both_ends_round_alike() -> None:
    figures = _module("figures")
    assert figures.spread([1.11, 3.24]) == "1.1 to 3.2"
    assert figures.spread([0.91, 0.94]) == "0.9"


def test_every_share_of_the_copys_rate_is_written_by_one_filter() -> None:
    """The scan, occupancy, bytes-in-flight and kernel-patterns tables all write a kernel's
    rate against the device copy through ``copy_share``, whichever name its record uses."""
    copy_share = _module("formats").copy_share
    assert copy_share({"fraction_of_copy": 0.655}) == "66 %"
    assert copy_share({"fraction_of_copy_bandwidth": 0.0012}, 1) == "0.1 %"
    templates = (TOOLS / "templates" / "benchmarks").glob("*.md.j2")
    by_hand = [t.name for t in templates if "fraction_of_copy | percent" in t.read_text()]
    assert by_hand == []
