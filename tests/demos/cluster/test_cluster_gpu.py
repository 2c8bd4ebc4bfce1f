"""Chapter 6 beyond one node on real GPUs: the parts run on the GPU, one GPU per rank.

Skipped without a GPU (conftest.py says why); the same commands without GPUs
are tested in test_cluster_units.py, test_cluster_lsf.py and test_cluster_slurm.py.
Each run is a fresh process, since a process is pinned to its GPU before CUDA starts.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

MPIEXEC = Path(sys.executable).with_name("mpiexec")  # the course environment's MPICH


def demos_mpi(*launcher: str) -> str:
    proc = subprocess.run(
        [*launcher, sys.executable, "-m", "demos", "cluster", "mpi", "--size", "20000",
         "--columns", "3000", "--steps", "200"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output[-4000:]
    assert output.count(": OK") == 3, output  # sum, mat-vec, Lorenz agree with NumPy
    return output


@pytest.mark.gpu
def test_every_example_runs_its_part_on_the_gpu() -> None:
    output = demos_mpi()
    assert len(re.findall(r", GPU .+: elements", output)) == 3, output


@pytest.mark.multigpu
@pytest.mark.skipif(not MPIEXEC.exists(), reason="no MPICH in this environment")
def test_two_ranks_use_two_gpus() -> None:
    output = demos_mpi(str(MPIEXEC), "-launcher", "fork", "-n", "2")
    sum_block = output.split("mat-vec")[0]
    visible = re.findall(r"CUDA_VISIBLE_DEVICES=(\S+), GPU", sum_block)
    assert len(visible) == 2 and len(set(visible)) == 2, output
