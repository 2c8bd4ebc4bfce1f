"""The one-machine cluster (tests/slurm/) for the launcher's end-to-end test modules:
one per module, and no job left behind by a test for the next one to wait on."""

from __future__ import annotations

import subprocess

import pytest
from local_cluster import LocalCluster

from helpers import needs_local_slurm


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    needs_local_slurm()
    with LocalCluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


@pytest.fixture(autouse=True)
def _no_jobs_left(request: pytest.FixtureRequest):
    """A failed test must not leave jobs that make the next one wait for cores."""
    yield
    if "cluster" in request.fixturenames:
        running = request.getfixturevalue("cluster")
        for job in running.squeue(check=False).split():
            subprocess.run(["scancel", job], env=running.env, check=False)
