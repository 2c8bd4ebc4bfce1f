"""Chapter 6 beyond one node under a real Slurm: Dask workers as jobs, and MPI ranks from srun.

The one-machine Slurm of the launch tests (tests/slurm/local_cluster.py) stands
in for a cluster: two batch jobs on its one node stand in for two nodes. A
student (an unprivileged user, as on a cluster) runs the commands chapter 6
shows; each must compute the sum and the mat-vec in two jobs (or ranks) and
agree with the one-node NumPy answer, and leave no job behind. Every wait has
a time limit and the Slurm of the test is torn down, jobs cancelled, at the end.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from local_cluster import LocalCluster

from helpers import needs_local_slurm

pytestmark = pytest.mark.slow

EXAMPLES = ("--example", "sum", "matvec", "--size", "4000", "--columns", "3000")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    needs_local_slurm()
    with LocalCluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


def as_student(cluster: LocalCluster, *command: str, timeout: float) -> str:
    """Run *command* as the cluster's student; its output (stdout and stderr), checked."""
    student = cluster.student
    proc = subprocess.run(
        list(command),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=student.env(SLURM_CONF=str(cluster.slurm_conf)),
        check=False,
        **student.popen_args(),
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    return output


def assert_no_job_left(cluster: LocalCluster, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while cluster.squeue().split() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert cluster.squeue().split() == [], "jobs left running"


def checked_examples(output: str, workers: str) -> list[str]:
    """The examples the output reports as run by two *workers* and agreeing with one node."""
    blocks = re.findall(rf"^(.+), 2 {workers}:\n((?:  .*\n)+)", output, flags=re.M)
    assert blocks, output
    done = []
    for title, lines in blocks:
        assert lines.rstrip().endswith(": OK"), (title, lines)
        assert len(re.findall(r"^  part \d/2 on ", lines, flags=re.M)) == 2, lines
        done.append(title.split(",")[0])
    return done


def test_dask_workers_in_two_slurm_jobs_agree_with_one_node(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    logs = cluster.student.home / "dask-logs"
    output = as_student(
        cluster,
        sys.executable, "-m", "demos", "cluster", "dask", "--jobs", "2", "--gpus-per-job", "0",
        "--memory", "1GB", "--time", "5", "--partition", cluster.partition,
        "--log-directory", str(logs), "--timeout", "90", *EXAMPLES,
        timeout=240,
    )  # fmt: skip
    assert checked_examples(output, "Dask workers") == ["sum of squares of 4", "mat-vec"]
    jobs = set(re.findall(r"^  part \d/2 on \S+, job (\d+),", output, flags=re.M))
    assert len(jobs) == 2, f"the two workers ran in {len(jobs)} Slurm job(s):\n{output}"
    assert len(list(logs.glob("*.err"))) == 2  # each job wrote its log where asked
    assert_no_job_left(cluster)  # the command cancelled its jobs


def test_a_refused_job_is_reported_at_once(cluster: LocalCluster) -> None:
    student = cluster.student
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "demos", "cluster", "dask", "--partition", "nosuch",
         "--gpus-per-job", "0", "--memory", "1GB", "--timeout", "90", "--example", "sum"],
        capture_output=True, text=True, timeout=120, check=False,
        env=student.env(SLURM_CONF=str(cluster.slurm_conf)), **student.popen_args(),
    )  # fmt: skip
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "slurm refused a job" in proc.stderr and "invalid partition" in proc.stderr.lower()
    assert "Traceback" not in proc.stderr
    assert time.monotonic() - start < 60  # not the 90 s wait for workers
    assert_no_job_left(cluster)


def test_mpi_ranks_from_srun_agree_with_one_node(cluster: LocalCluster) -> None:
    output = as_student(
        cluster,
        "srun", "--mpi=pmi2", "-n", "2", "-t", "3", sys.executable, "-m", "demos", "cluster",
        "mpi", *EXAMPLES,
        timeout=180,
    )  # fmt: skip
    assert checked_examples(output, "MPI ranks") == ["sum of squares of 4", "mat-vec"]
    assert_no_job_left(cluster)


def test_srun_without_pmi_is_explained(cluster: LocalCluster) -> None:
    student = cluster.student
    proc = subprocess.run(
        ["srun", "-n", "2", "-t", "3", sys.executable, "-m", "demos", "cluster", "mpi",
         "--example", "sum", "--size", "1000"],
        capture_output=True, text=True, timeout=120, check=False,
        env=student.env(SLURM_CONF=str(cluster.slurm_conf)), **student.popen_args(),
    )  # fmt: skip
    assert proc.returncode != 0
    assert proc.stderr.count("MPI sees each alone") == 1, proc.stderr
    assert "srun --mpi=pmi2 -n 2" in proc.stderr
    assert_no_job_left(cluster)
