"""``python -m demos cluster dask --scheduler lsf`` through LSF's commands, played by a stand-in.

No LSF can be installed here, so tests/slurm/fake-lsf (the launch tests' bsub,
bjobs and bkill) runs each job script as a background process. What this
checks is the course's side: dask-jobqueue's ``LSFCluster`` submits through
``bsub`` a script the stand-in accepts, two jobs' workers compute the sum and
the mat-vec that one node computes, and ``bkill`` ends both jobs afterwards.
Whether a real LSF accepts the GPU request is not tested.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

FAKE_LSF = Path(__file__).resolve().parent / "slurm" / "fake-lsf"


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@pytest.mark.skipif(os.name != "posix", reason="the LSF stand-in is a bash script")
def test_lsf_cluster_runs_two_jobs_and_ends_them(tmp_path: Path) -> None:
    lsf_dir, bin_dir = tmp_path / "lsf", tmp_path / "bin"
    lsf_dir.mkdir()
    bin_dir.mkdir()
    for command in ("bsub", "bjobs", "bkill"):
        (lsf_dir / command).symlink_to(FAKE_LSF)
        # dask-jobqueue submits its jobs at the same time, and the stand-in numbers jobs
        # by reading and rewriting a file: one at a time, as a real LSF would (-o: the
        # job that bsub leaves running does not keep the lock).
        wrapper = bin_dir / command
        wrapper.write_text(f'#!/bin/sh\nexec flock -o "$HOME/.lsf.lock" {lsf_dir / command} "$@"\n')
        wrapper.chmod(0o755)
    env = {**os.environ, "HOME": str(tmp_path), "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    proc = subprocess.run(
        [sys.executable, "-m", "demos", "cluster", "dask", "--scheduler", "lsf", "--jobs", "2",
         "--gpus-per-job", "0", "--memory", "1GB", "--time", "5", "--timeout", "90",
         "--log-directory", str(tmp_path / "logs"), "--example", "sum", "matvec",
         "--size", "3000", "--columns", "2000"],
        capture_output=True, text=True, timeout=180, cwd=tmp_path, env=env, check=False,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert output.count(": OK") == 2, output
    jobs = set(re.findall(r"^  part \d/2 on \S+, job (\d+),", output, flags=re.M))
    assert len(jobs) == 2, output
    pids = [int(p.read_text()) for p in (tmp_path / ".fake-lsf").glob("*.pid")]
    assert len(pids) == 2
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = [pid for pid in pids if alive(pid)]
    for pid in left:  # do not leave them running if the assertion below fails
        os.killpg(pid, 9)
    assert left == [], "bkill did not end the jobs"
