"""``python -m demos cluster dask --scheduler lsf`` through LSF's commands, played by a stand-in.

No LSF can be installed here, so tests/slurm/fake-lsf (the launch tests' bsub,
bjobs and bkill) runs each job script as a background process. What this
checks is the course's side: dask-jobqueue's ``LSFCluster`` submits through
``bsub`` a script the stand-in accepts, two jobs' workers compute the sum and
the mat-vec that one node computes, ``bkill`` ends both jobs afterwards, and
the workers of a job of several GPUs each keep their own entry of the job's
GPU list. Whether a real LSF accepts the GPU request is not tested.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from local_cluster import alive

from helpers import ROOT

FAKE_LSF = ROOT / "tests" / "slurm" / "fake-lsf"


def fake_lsf_env(tmp_path: Path) -> dict[str, str]:
    """An environment whose bsub, bjobs and bkill are the stand-in's, with their own HOME."""
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
    return {**os.environ, "HOME": str(tmp_path), "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def run_dask_on_lsf(tmp_path: Path, *options: str) -> str:
    """``python -m demos cluster dask --scheduler lsf ...`` through the stand-in; its output."""
    proc = subprocess.run(
        [sys.executable, "-m", "demos", "cluster", "dask", "--scheduler", "lsf", "--memory", "1GB",
         "--time", "5", "--timeout", "90", "--log-directory", str(tmp_path / "logs"), *options],
        capture_output=True, text=True, timeout=180, cwd=tmp_path, env=fake_lsf_env(tmp_path),
        check=False,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    return output


def assert_jobs_ended(tmp_path: Path, count: int) -> None:
    pids = [int(p.read_text()) for p in (tmp_path / ".fake-lsf").glob("*.pid")]
    assert len(pids) == count
    deadline = time.monotonic() + 30
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = [pid for pid in pids if alive(pid)]
    for pid in left:  # do not leave them running if the assertion below fails
        os.killpg(pid, 9)
    assert left == [], "the jobs did not end"


pytestmark = pytest.mark.skipif(os.name != "posix", reason="the LSF stand-in is a bash script")


def test_lsf_cluster_runs_two_jobs_and_ends_them(tmp_path: Path) -> None:
    output = run_dask_on_lsf(
        tmp_path, "--jobs", "2", "--gpus-per-job", "0", "--example", "sum", "matvec",
        "--size", "3000", "--columns", "2000",
    )  # fmt: skip
    assert output.count(": OK") == 2, output
    jobs = set(re.findall(r"^  part \d/2 on \S+, job (\d+),", output, flags=re.M))
    assert len(jobs) == 2, output
    assert_jobs_ended(tmp_path, 2)


def test_each_worker_of_a_job_keeps_its_own_gpu(tmp_path: Path) -> None:
    """One job of two GPUs: two workers, each narrowed to its entry of the job's list.

    The stand-in ignores the GPU request, so the job's list is set by hand, as LSF
    or Slurm would set it; the entries name no real GPU, so NumPy computes.
    """
    output = run_dask_on_lsf(
        tmp_path, "--jobs", "1", "--gpus-per-job", "2",
        "--prologue", "export CUDA_VISIBLE_DEVICES=5,7", "--example", "sum", "--size", "4000",
    )  # fmt: skip
    assert ": OK" in output, output
    parts = re.findall(
        r"^  part (\d)/2 on \S+, job (\d+), pid \d+, CUDA_VISIBLE_DEVICES=(\S+),",
        output,
        flags=re.M,
    )
    assert sorted(visible for _, _, visible in parts) == ["5", "7"], output
    assert len({job for _, job, _ in parts}) == 1, output
    assert_jobs_ended(tmp_path, 1)
