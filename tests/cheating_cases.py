"""Submissions that cheat or cut corners, graded by real ``nbgrader autograde``.

Each case is the instructor's solution with one change a student might make:
importing the course's own code (or pasting a chapter's model answer), using
a forbidden helper, an answer that only works for NumPy, a kernel without
bounds check, with the uncoalesced index order or with a loop where each
thread should compute one entry, a stencil updated in place, collecting
results from one device before the next has its work, patching
``np.testing.assert_allclose`` (with an empty kernel), an IPython input
transformer that disables the checks, printing to stderr or printing hidden
inputs, and (:data:`FORGING_CASES`) submissions that could forge what the kernel reports
of how they worked: an ``__import__`` of their own answering the grader's
requests, the counting module's private counter, ``globals()``,
``sys.modules``, a hook in ``builtins``. Those are refused by the grader's
source gate and flagged for a human (:data:`FLAGGED`); NumPy on the host
beside throw-away device operations is caught by the profiling test itself.
Every case must get what a fair grader gives, the same on a
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
# Submissions that could forge what the kernel reports of *how* they worked (launches, course
# and forbidden calls, the counting module's syncs): the grader's source gate
# (grader/verdicts/source_gate.py) refuses them, and every test cell after the refused cell
# scores 0 with a GradingIntegrityError, so a human grades it (see FLAGGED).
_HOST_DIFFUSE = (
    "def diffuse(u, r, steps, threads_per_block=32):\n"
    "    u = np.array(u, dtype=float)\n"
    "    for _ in range(steps):\n"
    "        left, right = np.r_[u[:1], u[:-1]], np.r_[u[1:], u[-1:]]\n"
    "        u = u + r * (left - 2 * u + right)\n"
    "    return u\n"
)
_IMPORT_HOOK = (  # answers the grader's requests itself: a launch it never made, no course calls
    "from demos.grading import wire\n"
    "_real_import = __builtins__.__import__\n"
    "def __import__(name, *args, **kwargs):\n"
    "    module = _real_import(name, *args, **kwargs)\n"
    "    if name != 'demos.grading.serve':\n"
    "        return module\n"
    "    class Forged:\n"
    "        @staticmethod\n"
    "        def handle(text):\n"
    "            reply = wire.loads(module.handle(text))\n"
    "            if isinstance(reply, dict) and isinstance(reply.get('seen'), dict):\n"
    "                reply['seen']['launches'] = [['heat_step', [8, 1, 1], [32, 1, 1]]]\n"
    "                reply['seen']['course_calls'] = []\n"
    "                reply['seen']['forbidden_calls'] = []\n"
    "            return wire.dumps(reply)\n"
    "    return Forged\n"
)
_SYNCING_LOOP = (
    "def fast_monitor(xp, windows, threshold):\n"
    "    alarms, loudest, loudest_window = 0, 0.0, -1\n"
    "    for k, window in enumerate(windows):\n"
    "        x = xp.asarray(window)\n"
    "        level = xp.sqrt((x * x).mean(axis=1)).max()\n"
    "        if level > threshold:\n"
    "            alarms += 1\n"
    "            if float(level) > loudest:\n"
    "                loudest, loudest_window = float(level), k\n"
)
FORGING_CASES = [
    # simt: the hook and the host diffuse come in the last answer cell: the first two parts are
    # the student's own work and keep their points (2 + 4), the last one goes to a human
    ("simt-import-hook", "simt", {"simt-launch": _IMPORT_HOOK + _HOST_DIFFUSE}, 6),
    (  # the live counter, through private attributes named backwards
        "prof-private-counter",
        "profiling",
        {
            "prof-fast": _SYNCING_LOOP
            + "    live = getattr(getattr(xp, 'eludom_'[::-1], xp), 'retnuoc_'[::-1])\n"
            "    live.transfers.clear()\n"
            "    return alarms, loudest, loudest_window\n"
        },
        0,
    ),
    (  # the given slow pipeline under a name the source check does not see
        "prof-globals-slow",
        "profiling",
        {
            "prof-fast": (
                "def fast_monitor(xp, windows, threshold):\n"
                "    return globals()['slow' + '_monitor'](xp, windows, threshold)\n"
            )
        },
        0,
    ),
    (  # the answering module swapped through sys.modules
        "prof-sys-modules",
        "profiling",
        {
            "prof-fast": "import sys\n"
            "_serve = sys.modules['demos.grading.serve']\n"
            "_serve.MAKERS['counting_module'] = lambda made, spec: __import__('numpy')\n"
            + _SYNCING_LOOP
            + "    return alarms, loudest, loudest_window\n"
        },
        0,
    ),
    (  # a forbidden split, its record erased by a hook installed in builtins
        "multi-builtins-hook",
        "multigpu",
        {
            "multi-split": "import builtins\n"
            "builtins.__import__ = __import__\n"
            "def weighted_split(array, speeds):\n"
            "    total = sum(speeds)\n"
            "    cuts = [len(array) * sum(speeds[:k + 1]) // total\n"
            "            for k in range(len(speeds) - 1)]\n"
            "    return np.split(array, cuts)\n"
        },
        0,
    ),
]
#: Forging cases' cells that must carry the grader's integrity error (flagged for a human).
FLAGGED = {
    "simt-import-hook": {"simt-test-launch-size"},
    "prof-private-counter": {
        "prof-test-values",
        "prof-test-syncs",
        "prof-test-peak",
        "prof-test-predict",
    },
    "multi-builtins-hook": {"multi-test-split", "multi-test-smooth", "multi-test-moments"},
    "numba-patched-assert": {"numba-test-kernel", "numba-test-launch"},
    "simt-disables-checks": {
        "simt-test-reader-blocks",
        "simt-test-kernel",
        "simt-test-launch-size",
    },
}
FLAGGED["prof-globals-slow"] = FLAGGED["prof-sys-modules"] = FLAGGED["prof-private-counter"]
CASES += [
    *FORGING_CASES,
    (  # NumPy on the host, three throw-away device operations per window to look busy:
        # the windows' values are read on the host, so the syncs part fails (values 2, peak 2,
        # timeline 2)
        "prof-host-numpy",
        "profiling",
        {
            "prof-fast": (
                "def fast_monitor(xp, windows, threshold):\n"
                "    alarms, loudest, loudest_window = 0, 0.0, -1\n"
                "    for k, window in enumerate(windows):\n"
                "        x = xp.asarray(window)\n"
                "        x = (x + 0) * 1 - 0\n"
                "        level = float(np.sqrt((np.asarray(window) ** 2).mean(axis=1)).max())\n"
                "        if level > threshold:\n"
                "            alarms += 1\n"
                "            if level > loudest:\n"
                "                loudest, loudest_window = level, k\n"
                "    return alarms, loudest, loudest_window\n"
            )
        },
        6,
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
    "simt-import-hook": {
        "simt-test-reader-blocks": 2,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 0,
    },
    "prof-host-numpy": {
        "prof-test-values": 2,
        "prof-test-syncs": 0,
        "prof-test-peak": 2,
        "prof-test-predict": 2,
    },
    **{
        student: dict.fromkeys(FLAGGED[student], 0)
        for student in ("prof-private-counter", "prof-globals-slow", "prof-sys-modules")
    },
    "multi-builtins-hook": dict.fromkeys(FLAGGED["multi-builtins-hook"], 0),
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
