"""``bin/gpu-jupyter`` runs on the shells students have: bash 3.2 (macOS) and later.

The launcher and its sourced parts (``bin/gpu-jupyter.d/``) are checked as one
program: it parses, uses no bash 4 feature, is shellcheck-clean, behaves the same
in bash's 3.2 compatibility mode, and finds its parts through a link. No cluster needed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from gpu_jupyter_helpers import (
    PARTS,
    SCRIPT,
    run_script,
)


def _whole_launcher() -> str:
    """The launcher with its sourced parts (gpu-jupyter.d/*.sh) put in place: one program.

    shellcheck -x reads a sourced file only for its variables and functions, and
    each part alone uses the others' globals: the whole is what can be checked.
    """

    def part(match: re.Match) -> str:
        return (PARTS / match.group(1)).read_text()

    return re.sub(r'^\. "\$parts/([\w.]+)"$', part, SCRIPT.read_text(), flags=re.M)


# Bash 4 and later only: macOS ships bash 3.2, which has none of these.
BASH_4_ONLY = (
    "declare -A",  # associative arrays
    "local -A",
    "declare -n",  # namerefs (4.3)
    "local -n",
    "mapfile",
    "readarray",
    ",,}",  # ${var,,} and ${var^^}: case conversion
    "^^}",
    "@Q}",  # ${var@Q} (4.4)
    "&>>",
    "|&",
    ";&",  # case fall-through (also ;;&)
    "wait -n",
    "${!arr[",
    "coproc",
    "exec {",  # {fd}> automatic file descriptors (4.1)
    "[[ -v ",  # (4.2)
    "[-1]}",  # negative array indices (4.3)
    "EPOCHSECONDS",  # (5.0)
)


def test_script_is_shellcheck_clean_and_bash_32_compatible(tmp_path: Path) -> None:
    """No bash 3.2 can be installed here (Debian and PyPI have none): what is checked
    instead is that the launcher parses, uses none of the later features, and is
    shellcheck-clean as bash."""
    whole = tmp_path / "gpu-jupyter"
    whole.write_text(_whole_launcher())
    assert '. "$parts/' not in whole.read_text()
    assert subprocess.run(["bash", "-n", str(whole)], check=False).returncode == 0
    texts = {path.name: path.read_text() for path in (SCRIPT, *sorted(PARTS.iterdir()))}
    for name, text in texts.items():
        for later in BASH_4_ONLY:
            assert later not in text, (name, later)
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed (apt-get install shellcheck)")
    # The project's choices (bin/.shellcheckrc) apply to the whole as to bin/gpu-jupyter.
    shutil.copy(SCRIPT.parent / ".shellcheckrc", tmp_path / ".shellcheckrc")
    result = subprocess.run(
        ["shellcheck", "--shell=bash", str(whole)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout
    # The job script, as the cluster runs it (filled in from job.sh.in).
    dry = run_script("--dry-run", "--scheduler", "slurm", "--module", "cuda", "me@login")
    job = dry.stdout.split("# ---- submitted")[0].split("\n", 1)[1]
    (tmp_path / "job.sh").write_text(job)
    result = subprocess.run(
        ["shellcheck", str(tmp_path / "job.sh")], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--dry-run", "--gpus", "2", "--constraint", "ib&(a100|h100)", "--module", "cuda/12"],
        ["--dry-run", "--venv", "~/gpu course/.venv", "--sched-arg=--exclusive", "--time", "1:05"],
        ["--time", "1:75"],
        ["--constraint", "a100;reboot"],
        ["--sched-arg", "--comment=$(id)"],
    ],
)
def test_bash_32_compatibility_mode_changes_nothing(args: list[str]) -> None:
    """BASH_COMPAT=32: bash 5 behaves as 3.2 where the two differ in behaviour (not
    in syntax: that is test_script_is_shellcheck_clean_and_bash_32_compatible's)."""
    now = run_script(*args, "me@login")
    old = run_script(*args, "me@login", env={**os.environ, "BASH_COMPAT": "32"})
    assert (old.returncode, old.stdout, old.stderr) == (now.returncode, now.stdout, now.stderr)


def test_the_launcher_finds_its_parts_through_a_link(tmp_path: Path) -> None:
    """Linked from ~/bin, say: its parts are found next to the real file."""
    link = tmp_path / "gpu-jupyter"
    link.symlink_to(SCRIPT)
    result = subprocess.run(
        [str(link), "--dry-run", "--scheduler", "lsf", "me@login"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "#BSUB -J gpu-jupyter" in result.stdout
