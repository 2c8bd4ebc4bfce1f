"""The nbgrader integration: the pieces nbgrader itself loads and runs.

Its one job is grading one notebook inside ``nbgrader autograde`` (plain or
started by ``python -m grader``): the preprocessors named in
``nbgrader_config.py`` (:mod:`~grader.integration.preprocessors`,
:mod:`~grader.integration.restore_cells`, :mod:`~grader.integration.feedback`),
the per-cell time limits measured on the solution
(:mod:`~grader.integration.cell_budgets`) and nbgrader's autograde for one
student in a worker process (:mod:`~grader.integration.autograde_one`).
"""
