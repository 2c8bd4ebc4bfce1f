"""The nbgrader integration: the pieces nbgrader itself loads and runs.

Its one job is grading one notebook inside ``nbgrader autograde`` (plain or
started by ``python -m grader``): the preprocessors named in
``nbgrader_config.py``, one concern each (:mod:`~grader.integration.preprocessors`
puts the execute preprocessor together from :mod:`~grader.integration.sandboxed_kernel`,
:mod:`~grader.integration.cell_limits`, :mod:`~grader.integration.phase_timings`,
:mod:`~grader.integration.hidden_test_cells` and :mod:`~grader.integration.kernel_requests`;
:mod:`~grader.integration.stderr`, :mod:`~grader.integration.grades`,
:mod:`~grader.integration.restore_cells`, :mod:`~grader.integration.feedback`),
the per-cell time limits measured on the solution
(:mod:`~grader.integration.cell_budgets`) and nbgrader's autograde for one
student in a worker process (:mod:`~grader.integration.autograde_one`).
"""
