"""The course's own JupyterLab extension: its committed build is current and JupyterLab loads it.

The extension (source in ``jupyter/extensions/validate-scope``) shows nbgrader's
Validate button only on exercises and warns before a session's time limit. It
ships prebuilt in ``jupyter/data`` so that nobody needs Node.js; ``course.sh`` and
``bin/gpu-jupyter`` put that folder on ``JUPYTER_PATH``. What it does in a browser
is checked by tests/jupyter/test_browser.py and tests/bin/test_gpu_jupyter_time_limit.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

import pytest

from helpers import ROOT

SOURCE = ROOT / "jupyter" / "extensions" / "validate-scope"
DATA = ROOT / "jupyter" / "data"
BUILD = DATA / "labextensions" / "@gpu-course" / "validate-scope"
REBUILD = (
    "cd jupyter/extensions/validate-scope && npm ci && "
    'PATH="$PWD/../../../.venv/bin:$PATH" npm run build'
)


def test_build_is_the_build_of_the_committed_source():
    lines = (BUILD / "source.sha256").read_text(encoding="utf-8").splitlines()
    recorded = {name: digest for digest, name in (line.split("  ", 1) for line in lines)}
    sources = {"package.json", "tsconfig.json"} | {
        f"src/{p.name}" for p in (SOURCE / "src").iterdir()
    }
    assert sources <= set(recorded), f"source files the build does not know; rebuild: {REBUILD}"
    changed = sorted(
        name
        for name, digest in recorded.items()
        if hashlib.sha256((SOURCE / name).read_bytes()).hexdigest() != digest
    )
    assert not changed, f"changed since the committed build: {changed}; rebuild: {REBUILD}"
    built = json.loads((BUILD / "package.json").read_text(encoding="utf-8"))
    source = json.loads((SOURCE / "package.json").read_text(encoding="utf-8"))
    assert (built["name"], built["version"]) == (source["name"], source["version"])
    assert (BUILD / built["jupyterlab"]["_build"]["load"]).is_file()


def test_build_bundles_no_jupyterlab_code():
    """Only the course's few lines: JupyterLab's own packages come from the running app."""
    size = sum(p.stat().st_size for p in (BUILD / "static").iterdir())
    assert size < 20_000, f"the build has grown to {size} bytes"


def test_jupyterlab_started_as_course_sh_does_finds_it_enabled(tmp_path):
    pytest.importorskip("jupyterlab")
    env = {
        **os.environ,
        "JUPYTER_PATH": str(DATA),
        "JUPYTER_CONFIG_PATH": f"{ROOT / 'jupyter' / 'student'}:{ROOT / 'jupyter' / 'common'}",
        "JUPYTER_CONFIG_DIR": str(tmp_path),  # no settings of the developer's own
        "NO_COLOR": "1",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "jupyterlab.labextensions", "list"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    listing = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
    assert proc.returncode == 0, listing
    # "OK": its (empty) dependencies fit this JupyterLab, so it is loaded, not only listed
    assert re.search(r"@gpu-course/validate-scope v[\d.]+ enabled +OK", listing), listing
