"""``python -m grader autograde --slurm`` against the real one-machine Slurm of the launch tests.

Two students as a job array (one task each, two at a time): the
solution gets full marks, the blank notebook nothing, both merged into the
course gradebook by the submitting process.
"""

from __future__ import annotations

import json

import pytest
from local_cluster import LocalCluster
from nbgrader_driver import (
    assert_all_succeeded,
    hand_in,
    make_course,
    run_grader,
    run_nbgrader,
    scores,
)

from helpers import needs_local_slurm

pytestmark = pytest.mark.slow


def test_slurm_job_array_grades_and_merges(tmp_path_factory: pytest.TempPathFactory) -> None:
    needs_local_slurm()
    root = make_course(tmp_path_factory.mktemp("slurmgrade"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", "simt"]]))
    hand_in(root, "alice", "simt", root / "solutions" / "simt" / "simt.ipynb")
    hand_in(root, "bob", "simt", root / "exercises" / "simt" / "simt.ipynb")
    with LocalCluster(tmp_path_factory.mktemp("cluster")) as cluster:
        proc = run_grader(
            root,
            ["autograde", "simt", "--slurm", "--workers", "2", "--wall", "120"],
            env=cluster.env,
            timeout=400,
        )
    assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
    assert scores(root)[("simt", "alice")] == (10, 10)
    assert scores(root)[("simt", "bob")] == (0, 10)
    summary = json.loads((root / "grading" / "simt" / "summary.json").read_text())
    assert [o["status"] for o in summary] == ["graded", "graded"]
    assert list((root / "grading" / "simt").glob("slurm-*_1.out")), "not an array job"
    assert (root / "autograded" / "bob" / "simt" / "simt.ipynb").is_file()
