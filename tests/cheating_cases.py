"""Submissions that cheat or cut corners, graded by real ``nbgrader autograde``.

Each case is the instructor's solution with one change a student might make:
importing the course's own code (or pasting a chapter's model answer), using
a forbidden helper, an answer that only works for NumPy, a kernel without
bounds check, with the uncoalesced index order or with a loop where each
thread should compute one entry, a stencil updated in place, collecting
results from one device before the next has its work, patching
``np.testing.assert_allclose`` (with an empty kernel), an IPython input
transformer that disables the checks, printing to stderr or printing hidden
inputs. Every case must get what a fair grader gives, the same on a
CPU grader as on a GPU one (the checks run the same way on both), and no
feedback may show hidden inputs. All cases run in one nbgrader batch, under
a course secret, to keep this quick: the module-scoped ``batch`` fixture of
tests/exercises/test_cheating.py calls :func:`grade_batch` once, for its score and
feedback tests.
The kernel assignments' cases are in tests/cheating_kernel_cases.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from cheating_kernel_cases import KERNEL_CASES, KERNEL_CELL_SCORES
from nbgrader_driver import assert_all_succeeded, hand_in, make_course, run_nbgrader

CELL_TIMEOUT = 60
SECRET = "a secret only the grader knows"


def _solution(root: Path, assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(root / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)


def _replace(nb: nbformat.NotebookNode, grade_id: str, source: str) -> nbformat.NotebookNode:
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    cell.source = source
    return nb


#: (student, assignment, {grade_id: new source}, expected score). Full marks are 10 everywhere.
CASES = [
    *KERNEL_CASES,
    # multigpu: 3 (weighted_split) + 4 (smooth) + 3 (moments)
    (  # even pieces, not by speed; the later parts are graded against the student's own split
        "multi-array-split",
        "multigpu",
        {
            "multi-split": (
                "def weighted_split(array, speeds):\n    return np.array_split(array, len(speeds))"
            )
        },
        7,
    ),
    (
        "multi-one-at-a-time",
        "multigpu",
        {
            "multi-smooth": (
                "def smooth_on_devices(array, devs, speeds):\n"
                "    padded, out, lo = np.pad(array, 1, mode='edge'), [], 0\n"
                "    for device, piece in zip(devs, weighted_split(array, speeds)):\n"
                "        hi = lo + len(piece)\n"
                "        with device:\n"
                "            w = device.asarray(padded[lo:hi + 2])\n"
                "            out.append(device.asnumpy((w[:-2] + w[1:-1] + w[2:]) / 3))\n"
                "        lo = hi\n"
                "    return np.concatenate(out)"
            ),
            "multi-moments": (
                "def moments_on_devices(array, devs, speeds):\n"
                "    parts = []\n"
                "    for device, piece in zip(devs, weighted_split(array, speeds)):\n"
                "        with device:\n"
                "            x = device.asarray(piece)\n"
                "            parts.append((len(piece), float(device.asnumpy(x.mean())),\n"
                "                          float(device.asnumpy(((x - x.mean()) ** 2).sum()))))\n"
                "    n = sum(p[0] for p in parts)\n"
                "    mean = sum(k * m for k, m, _ in parts) / n\n"
                "    squares = sum(s + k * (m - mean) ** 2 for k, m, s in parts)\n"
                "    return mean, squares / n"
            ),
        },
        3,
    ),
    (  # the shortcut E[x^2] - E[x]^2 loses every digit for data around 1e8
        "multi-naive-variance",
        "multigpu",
        {
            "multi-moments": (
                "def moments_on_devices(array, devs, speeds):\n"
                "    sums = []\n"
                "    for device, piece in zip(devs, weighted_split(array, speeds)):\n"
                "        with device:\n"
                "            x = device.asarray(piece)\n"
                "            sums.append(device.xp.stack([x.sum(), (x * x).sum()]))\n"
                "    host = sum(d.asnumpy(s) for d, s in zip(devs, sums))\n"
                "    total, squares = float(host[0]), float(host[1])\n"
                "    mean = total / len(array)\n"
                "    return mean, squares / len(array) - mean * mean"
            )
        },
        7,
    ),
    # cnn: 2 (conv_params) + 4 (structure) + 4 (forward)
    ("cnn-course-code", "cnn", {"cnn-model": "from demos.cnn.model import build_model"}, 2),
    (  # chapter 5's network written out: another model for other images
        "cnn-chapter-model",
        "cnn",
        {
            "cnn-model": (
                "def build_model():\n"
                "    return keras.Sequential([\n"
                "        keras.Input(shape=(32, 32, 3)),\n"
                "        layers.Conv2D(32, 3, activation='relu'), layers.MaxPooling2D(2),\n"
                "        layers.Conv2D(64, 3, activation='relu'), layers.MaxPooling2D(2),\n"
                "        layers.Conv2D(64, 3, activation='relu'), layers.Flatten(),\n"
                "        layers.Dense(64, activation='relu'), layers.Dense(10)])"
            )
        },
        2,
    ),
    (  # the bias counted whether there is one or not: the model itself is right
        "cnn-bias-always",
        "cnn",
        {
            "cnn-params": (
                "def conv_params(kernel_size, in_channels, filters, use_bias=True):\n"
                "    if isinstance(kernel_size, int):\n"
                "        kernel_size = (kernel_size, kernel_size)\n"
                "    kh, kw = kernel_size\n"
                "    return filters * (kh * kw * in_channels + 1)"
            )
        },
        8,
    ),
]
#: Each case's score cell by cell: the same table must hold on a CPU and on a GPU grader,
#: so a grader with a GPU can neither move points between cells nor add any.
CELL_SCORES = {
    **KERNEL_CELL_SCORES,
    "multi-array-split": {"multi-test-split": 0, "multi-test-smooth": 4, "multi-test-moments": 3},
    "multi-one-at-a-time": {"multi-test-split": 3, "multi-test-smooth": 0, "multi-test-moments": 0},
    "multi-naive-variance": {
        "multi-test-split": 3,
        "multi-test-smooth": 4,
        "multi-test-moments": 0,
    },
    "cnn-course-code": {"cnn-test-params": 2, "cnn-test-structure": 0, "cnn-test-forward": 0},
    "cnn-chapter-model": {"cnn-test-params": 2, "cnn-test-structure": 0, "cnn-test-forward": 0},
    "cnn-bias-always": {"cnn-test-params": 0, "cnn-test-structure": 4, "cnn-test-forward": 4},
}

# A correct answer that writes to stderr: nbgrader scores a graded cell with
# stderr output 0, so the visible reader_blocks check (2 points) is lost until
# the grading pipeline's stderr preprocessor is configured. The hidden tests
# never let student output through, so that is all it can lose here.
STDERR_CASE = (
    "simt-stderr",
    "simt",
    {
        "simt-reader-blocks": (
            "import sys\n"
            "def reader_blocks(element, n, threads_per_block):\n"
            "    print('debugging', file=sys.stderr)\n"
            "    near = [t for t in (element - 1, element, element + 1) if 0 <= t < n]\n"
            "    return sorted({t // threads_per_block for t in near})"
        )
    },
)


def grade_batch(tmp: Path) -> Path:
    """A course copy in *tmp* with every case handed in and graded, the stderr case too, and
    the feedback of the two cases whose pages the tests read; graded under :data:`SECRET`."""
    root = make_course(tmp)
    assignments = sorted({case[1] for case in CASES})
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", a] for a in assignments]))
    for student, assignment, changes, _ in [*CASES, (*STDERR_CASE, None)]:
        nb = _solution(root, assignment)
        for grade_id, source in changes.items():
            _replace(nb, grade_id, source)
        hand_in(root, student, assignment, nbformat.writes(nb))
    steps = [["autograde", a, s] for s, a, *_ in [*CASES, STDERR_CASE]]
    steps += [
        ["generate_feedback", "simt", "simt-prints-inputs"],
        ["generate_feedback", "simt", "simt-disables-checks"],
    ]
    os.environ["COURSE_GRADING_SECRET"] = SECRET
    try:
        assert_all_succeeded(run_nbgrader(root, steps, timeout=CELL_TIMEOUT))
    finally:
        del os.environ["COURSE_GRADING_SECRET"]
    return root
