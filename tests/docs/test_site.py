"""The documentation site builds with Sphinx and MyST, warnings counted as errors.

A broken cross-reference, a heading level skipped, a page missing from the
table of contents or a Markdown error fails here rather than on the published site.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import ROOT


def test_the_docs_site_builds_without_a_warning(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html"]
        + ["-d", str(tmp_path / "doctrees"), str(ROOT / "docs"), str(tmp_path / "html")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    pages = {p.stem for p in (tmp_path / "html").glob("*.html")}
    assert {"index", "students", "instructors", "cluster", "benchmarks", "changelog"} <= pages
