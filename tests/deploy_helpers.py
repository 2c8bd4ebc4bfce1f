"""Helpers shared by the tests of deploy/ (the course hub and the Open OnDemand app).

``deploy/course_session.py`` is imported from here (deploy/ is no package);
the OnDemand app's ERB files are rendered with Debian's Ruby the way OnDemand
renders them (the file's name set, the form's values as methods), and a
student edition for the jobs is built into the one-machine cluster's shared
folder, where its test users can read it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

DEPLOY = ROOT / "deploy"
APP = DEPLOY / "ondemand" / "gpu-course"
if not DEPLOY.is_dir():
    pytest.skip(
        "deploy/ (the course hub and OnDemand app) is instructor material, not in this edition",
        allow_module_level=True,
    )
sys.path[:0] = [str(DEPLOY), str(DEPLOY / "jupyterhub")]
import render_schedulers  # noqa: E402 (deploy/ is on the path now)
from course_session import Request, Session  # noqa: E402

__all__ = [
    "APP",
    "DEPLOY",
    "ROOT",
    "Request",
    "Session",
    "make_edition",
    "needs_ruby",
    "render_erb",
    "render_schedulers",
    "write_site",
]

RUBY = shutil.which("ruby")
needs_ruby = pytest.mark.skipif(
    RUBY is None, reason="renders the OnDemand app's ERB with Ruby: apt-get install ruby"
)

# Renders one ERB file as OnDemand does: ERB with trim mode "-", the file's own
# name (course.rb is found beside it) and the form's values as the context.
_RENDER = """
require "erb"
require "json"
require "ostruct"
path, values = ARGV[0], JSON.parse(STDIN.read)
erb = ERB.new(File.read(path), trim_mode: "-")
erb.filename = path
print erb.result(OpenStruct.new(values).instance_eval { binding })
"""


def render_erb(path: Path, values: dict[str, str], site: Path) -> str:
    """The text OnDemand makes of the ERB file *path* for the form's *values*."""
    result = subprocess.run(
        [RUBY, "-e", _RENDER, str(path)],
        input=json.dumps(values),
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "GPU_COURSE_SITE": str(site)},
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def write_site(path: Path, **settings: object) -> Path:
    """A site file (JSON is YAML) with *settings*."""
    path.write_text(json.dumps(settings, indent=1))
    return path


def make_edition(folder: Path) -> Path:
    """A student edition in *folder*, using this checkout's course environment."""
    sys.path.insert(0, str(ROOT / "tools"))
    import build_student_edition

    edition = build_student_edition.build(folder)
    (edition / ".venv").symlink_to(ROOT / ".venv")  # same pins: nothing to install
    return edition


def assert_students_mode(lab_page: str, formgrader_status: int) -> None:
    """A server's /lab page and its /formgrader status show the students' mode.

    The page's configuration has nbgrader's instructor plugins off and the
    course's own extension (Validate only on exercises) loaded; the Formgrader's
    server extension is off, so its page does not exist.
    """
    match = re.search(
        r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
        lab_page,
        flags=re.DOTALL,
    )
    assert match, lab_page[:2000]
    config = json.loads(match.group(1))
    disabled = config["disabledExtensions"]
    assert "@jupyter/nbgrader:formgrader" in disabled
    assert "@jupyter/nbgrader:create-assignment" in disabled
    loaded = {extension["name"] for extension in config["federated_extensions"]}
    assert "@gpu-course/validate-scope" in loaded
    assert formgrader_status == 404
