"""grader.run.slurm_queue.why_stuck: when an array's waiting tasks deserve a line (no Slurm needed).

The reasons are squeue's own words (Slurm 22.05 spells a drained node out);
the array's own limit of tasks at once is never a reason to speak.
"""

from __future__ import annotations

from grader.run.slurm_queue import PENDING_BOUND, Task, why_stuck

DRAINED = "Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority"


def _tasks(*lines: tuple[str, str]) -> list[Task]:
    return [Task("42", state, reason, "/course/grading/simt") for state, reason in lines]


def test_an_array_that_runs_or_waits_its_turn_is_not_stuck() -> None:
    assert why_stuck(_tasks(("RUNNING", "None"), ("PENDING", DRAINED)), 1e6) is None
    assert why_stuck(_tasks(("PENDING", "JobArrayTaskLimit")), 1e6) is None
    assert why_stuck(_tasks(("PENDING", "Priority")), PENDING_BOUND - 1) is None


def test_a_drained_node_or_a_partition_down_is_said_at_once() -> None:
    assert why_stuck(_tasks(("PENDING", DRAINED)), 0) == DRAINED
    assert why_stuck(_tasks(("PENDING", "PartitionDown")), 0) == "PartitionDown"
    stuck = why_stuck(_tasks(("PENDING", "ReqNodeNotAvail, UnavailableNodes:n1")), 0)
    assert stuck == "ReqNodeNotAvail, UnavailableNodes:n1"


def test_no_resources_is_said_only_after_the_bound() -> None:
    assert why_stuck(_tasks(("PENDING", "Resources")), PENDING_BOUND / 2) is None
    stuck = why_stuck(_tasks(("PENDING", "Resources")), PENDING_BOUND + 5)
    assert stuck == f"Resources for {PENDING_BOUND + 5:.0f} s"
