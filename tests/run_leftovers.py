"""What a grading run left behind: processes that still work in its folders.

Shared by the tests that stop or kill ``python -m grader autograde`` (on one
machine or through the local Slurm) and then check that nothing outlives it.
"""

from __future__ import annotations

import os
from pathlib import Path


def run_processes(*folders: Path) -> list[str]:
    """Processes (not this one) that work in *folders*, or were given one in their
    environment or command line: ``pid: command line`` for each."""
    found = []
    marks = [str(f).encode() for f in folders]
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                cwd = os.readlink(entry / "cwd")
                cmdline = (entry / "cmdline").read_bytes()
                seen = (entry / "environ").read_bytes() + cmdline
                if any(cwd.startswith(str(f)) for f in folders) or any(m in seen for m in marks):
                    found.append(f"{entry.name}: {cmdline[:200]!r}")
        except OSError:
            pass
    return found
