"""Trying the grader on notebooks whose grades are known in advance.

Its one job is proving the grader: ``python -m grader bench`` times grading
synthetic classes (:mod:`~grader.trials.bench`, from
:mod:`~grader.trials.synthetic_class`) and ``python -m grader selftest``
grades each assignment's solution and blank release with real nbgrader
(:mod:`~grader.trials.selftest`).
"""
