"""grader.verdicts.hidden_tests: the hidden part of a test cell, and its verdict in the grader."""

from __future__ import annotations

from grader.verdicts.context import Submission
from grader.verdicts.hidden_tests import judge, split_hidden
from grader.verdicts.kernel_runner import KernelRunner
from helpers import ROOT


def test_hidden_part_is_split_from_the_visible_one() -> None:
    visible, hidden = split_hidden(
        "a = 1\n### BEGIN HIDDEN TESTS\nb = 2\n### END HIDDEN TESTS\nc = 3"
    )
    assert visible == "a = 1\nc = 3" and hidden == "b = 2"
    assert split_hidden("a = 1") == ("a = 1", None)


def test_a_renamed_copy_of_a_course_function_is_flagged_whatever_the_verdict() -> None:
    answer = (ROOT / "demos" / "checks" / "answers" / "nearest_neighbour.py").read_text()
    copied = answer.replace("nearest_neighbour", "closest").replace("x2", "norms")
    submission = Submission(
        ask_kernel=lambda request: {"defined": True, "course_code": False},
        student_sources=[copied],
        given_sources=[],
        runner=KernelRunner(),
    )
    verdict = judge("grading.expect(not grading.is_course_code(closest), 'own')", "t", submission)
    assert verdict.passed and "closest has the structure of code the course ships" in verdict.flag
    honest = Submission(
        ask_kernel=lambda request: {"defined": True, "course_code": False},
        student_sources=["def closest(x):\n    return x.argmin(axis=1)\n"],
        given_sources=[],
        runner=KernelRunner(),
    )
    verdict = judge("grading.expect(not grading.is_course_code(closest), 'own')", "t", honest)
    assert verdict.passed and verdict.flag is None


def _asking(answer) -> Submission:
    return Submission(
        ask_kernel=answer,
        student_sources=["def f(x):\n    return x\n"],
        given_sources=[],
        runner=KernelRunner(),
    )


def test_a_dead_kernel_or_an_os_error_is_the_machinerys_failure_not_a_verdict() -> None:
    from grader.verdicts.api import MachineryFailure

    def dead(request: dict) -> dict:
        raise MachineryFailure("the kernel stopped answering a hidden test (DeadKernelError)")

    def disk_full(request: dict) -> dict:
        raise OSError(28, "No space left on device")

    inside = "with grading.hidden_test('t', 'f') as rng:\n    grading.expect(f(1) == 1, 'wrong')"
    for answer in (dead, disk_full):
        for code in (inside, "grading.expect(f(1) == 1, 'wrong')"):
            verdict = judge(code, "t", _asking(answer))
            assert not verdict.passed and verdict.machinery, (answer, code, verdict)
            assert "fails for a hidden input" not in verdict.message
    # the student's own error is still the student's
    verdict = judge(inside, "t", _asking(lambda request: {"error": "ValueError: no"}))
    assert verdict.machinery is None and "fails for a hidden input (ValueError)" in verdict.message
