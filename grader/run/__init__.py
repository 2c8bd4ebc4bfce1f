"""Running a class: ``python -m grader autograde`` and ``status``.

Its one job is grading many students safely: the run's settings
(:mod:`~grader.run.settings`), the pool of workers and the gradebook merge
(:mod:`~grader.run.batch`), one student in a course copy of their own
(:mod:`~grader.run.one_student`), the solution checked first
(:mod:`~grader.run.setup_check`), the grade records, locks and stops, and the
same work as a Slurm array (:mod:`~grader.run.slurm`).
"""
