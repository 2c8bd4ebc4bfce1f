"""Intake: submissions filed, screened and compared before anything is graded.

Its one job is what comes in: ``python -m grader collect`` files downloads
under safe student ids (:mod:`~grader.intake.commands.collect`), ``screen`` flags what
needs a human look (:mod:`~grader.intake.commands.screen`), ``similarity`` finds
near-copies (:mod:`~grader.intake.commands.similarity`); who handed in what is
:mod:`~grader.intake.commands.submissions`. It runs no student code.
"""
