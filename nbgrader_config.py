"""nbgrader settings for this course; the repository root is the course directory.

Instructors edit the assignments in ``solutions/`` (nbgrader's "source") and
release them into ``exercises/`` with ``nbgrader generate_assignment``; the
README's instructors section lists the whole workflow. Grading needs no GPU:
the notebooks fall back to NumPy and Numba's CUDA simulator (see demos/grading/).
"""

from pathlib import Path

from demos import manifest

c = get_config()  # noqa: F821  (provided by nbgrader when it reads this file)

c.CourseDirectory.course_id = "gpu-python"
c.CourseDirectory.root = str(Path(__file__).resolve().parent)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"

# Stop a student's cell after this many seconds (an endless loop scores 0 for
# that notebook and the rest of the batch is still graded). The assignments
# need a few seconds per cell, even in the CUDA simulator.
c.Execute.timeout = 60
c.Execute.interrupt_on_timeout = True
# Once the last cell has run, stop the kernel at once rather than asking it to
# exit: a notebook's outputs are all in by then, and a kernel that has loaded
# Keras or CUDA takes one to two seconds to wind down, per notebook graded.
c.Execute.shutdown_kernel = "immediate"

# Autograde with the grader's preprocessors (grader/integration/), one job each:
# - preprocessors.GuardedExecute replaces nbgrader's Execute: the kernel always runs
#   in the grading sandbox (also for plain `nbgrader autograde`, with the default
#   limits; `python -m grader autograde` sets its own); it runs only the visible
#   tests, while the hidden tests run in this (the grader's) process and ask the
#   kernel only to run the student's code and send back plain data (grader/verdicts/),
#   so no student code can decide a verdict; each cell gets the time limit measured
#   on the solution; the seconds by phase are written for `python -m grader bench`;
# - stderr.StderrNotCounted: stderr output such as a NumbaPerformanceWarning no
#   longer scores a correct test cell 0;
# - grades.SaveAutoGradesWithFlags replaces SaveAutoGrades: a cell whose hidden test
#   could not be applied goes to manual grading.
# Before grading, nbgrader puts back the locked cells (hidden tests included) as
# the instructor wrote them; grader/integration/restore_cells.py does the same but warns
# "checksum ... has changed" only for cells a student really changed.
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "grader.integration.restore_cells.RestoreCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.Autograde.autograde_preprocessors = [
    "grader.integration.preprocessors.GuardedExecute",
    "grader.integration.stderr.StderrNotCounted",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "grader.integration.grades.SaveAutoGradesWithFlags",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# `python -m grader autograde` (grader/) reads the `Grader` section (nbgrader itself
# ignores it): every setting of grader.run.settings.Grader, e.g.
# `c.Grader.workers = 4` or `c.Grader.memory_bytes = "8G"`, the same as its flag
# (`--workers 4`, `--memory 8G`), which wins over what is set here; the settings and
# their defaults are listed in docs/instructors.md.
# Assignments whose tests need no GPU are graded with the GPUs hidden from the
# notebook, as on a grader without one (those marked ``without_gpu`` in the course
# manifest, demos/course.toml):
# - cnn: its tests check the model's structure and one forward pass against NumPy,
#   the same on any device;
# - simt, numba_distance, kernel_patterns, scan_transfer: the grader decides their kernels' hidden
#   tests in its own CUDA simulator on every machine (grader.verdicts), so the
#   notebook's visible tests run in the simulator too and every grader gives
#   exactly the same points.
# Many notebooks starting CUDA and compiling for it at once on one GPU grade several
# times slower.
c.Grader.without_gpu = [a.name for a in manifest.course().assignments.values() if a.without_gpu]

# What students see in place of the instructor's solution.
c.ClearSolutions.code_stub = {
    "python": "# YOUR CODE HERE: replace this line with your solution\n"
    'raise NotImplementedError("this part of the exercise is not done yet")',
}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Feedback must not reveal the hidden tests, neither their source nor the
# source quoted in a failing assertion's traceback.
c.GenerateFeedback.preprocessors = [
    "nbgrader.preprocessors.GetGrades",
    "nbconvert.preprocessors.CSSHTMLHeaderPreprocessor",
    "grader.integration.feedback.FeedbackWithoutHiddenTests",
]

# `nbgrader zip_collect <assignment>` (README, instructors): files in
# downloaded/<assignment>/archive/ (or inside zip files there) named
# <student>_<notebook>.ipynb, e.g. alice_cupy_port.ipynb, are filed as
# submitted/<student>/<assignment>/<notebook>.ipynb. Student ids: no underscores.
c.FileNameCollectorPlugin.named_regexp = (
    r".*/(?P<student_id>[A-Za-z0-9.\-]+)_(?P<file_id>[^/]+\.ipynb)$"
)
