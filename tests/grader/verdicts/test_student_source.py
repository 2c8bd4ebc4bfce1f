"""grader.verdicts.student_source: what the student's source defines and reads."""

from __future__ import annotations

from grader.verdicts.student_source import defined_names, reads_name


def test_names_and_references_come_from_the_source() -> None:
    sources = ["import numpy as np\ndef fast(xp):\n    return slow(xp)\n", "X = 1"]
    assert {"np", "fast", "X"} <= defined_names(sources)
    assert reads_name(sources, "fast", "slow") and not reads_name(sources, "fast", "other")
