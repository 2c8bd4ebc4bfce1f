"""Submissions that cheat or cut corners, graded by real ``nbgrader autograde``.

Each case is the instructor's solution with one change a student might make:
importing the course's own code, using a forbidden helper, an answer that only
works for NumPy, a kernel without bounds check or with the uncoalesced index
order, collecting results from one device before the next has its work,
patching ``np.testing.assert_allclose`` (with an empty kernel), an IPython
input transformer that disables the checks, printing to stderr or printing
hidden inputs. Every case must get what a fair grader gives, the same on a
CPU grader as on a GPU one (the checks run the same way on both), and no
feedback may show hidden inputs. All cases run in one nbgrader batch, under
a course secret, to keep this quick.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from nbgrader_driver import (
    assert_all_succeeded,
    hand_in,
    make_course,
    page_text,
    run_nbgrader,
    scores,
)

from grader.bench import cell_scores

pytestmark = pytest.mark.slow

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
    # simt: 2 (global_index) + 4 (kernel) + 4 (launch)
    (
        "simt-course-code",
        "simt",
        {
            "simt-launch": (
                "from demos.simt import blocks_for\n"
                "def launch_saxpy(a, x, y, threads_per_block=32):\n"
                "    out = np.zeros_like(x)\n"
                "    saxpy[blocks_for(x.shape[0], threads_per_block), threads_per_block]"
                "(a, x, y, out)\n"
                "    return out"
            )
        },
        6,
    ),
    (
        "simt-no-bounds-check",
        "simt",
        {
            "simt-kernel": (
                "@cuda.jit\n"
                "def saxpy(a, x, y, out):\n"
                "    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x\n"
                "    out[i] = a * x[i] + y[i]"
            )
        },
        2,
    ),
    (
        "simt-numpy-launch",
        "simt",
        {
            "simt-launch": (
                "def launch_saxpy(a, x, y, threads_per_block=32):\n"
                "    return (a * x + y).astype(x.dtype)"
            )
        },
        6,
    ),
    (
        "simt-disables-checks",
        "simt",
        {
            "simt-global-index": (
                "def global_index(block_index, block_size, thread_index):\n"
                "    return 0\n"
                "get_ipython().input_transformers_post.append(\n"
                "    lambda lines: [l.replace('assert ', 'assert True or ')"
                ".replace('grading.expect(', 'print(')\n"
                "                   for l in lines])"
            )
        },
        8,  # the transformer changes nothing the grader decides: global_index (2) fails alone
    ),
    # Prints what it is given: the visible calls' arguments may show, hidden ones must not.
    (
        "simt-prints-inputs",
        "simt",
        {
            "simt-global-index": (
                "import os\n"
                "print('SECRET IN ENVIRONMENT:', 'COURSE_GRADING_SECRET' in os.environ)\n"
                "print('PROBE SEED:', grading.seed_for('probe'))\n"
                "def global_index(block_index, block_size, thread_index):\n"
                "    print('ARGS:', block_index, block_size, thread_index)\n"
                "    return block_index * 32 + thread_index"
            )
        },
        8,
    ),
    # cupy_port: 5 (gaussian_affinities) + 5 (kernel_density)
    (
        "cupy-course-code",
        "cupy_port",
        {
            "cupy-affinities": (
                "from demos.distance.generic import distance_matrix\n"
                "def gaussian_affinities(x, y, scales):\n"
                "    xp = get_array_module(x)\n"
                "    return xp.exp(-0.5 * distance_matrix(x / scales, y / scales))"
            )
        },
        0,
    ),
    (
        "cupy-numpy-only",
        "cupy_port",
        {
            "cupy-affinities": (
                "def gaussian_affinities(x, y, scales):\n"
                "    s = np.asarray(scales)\n"
                "    x, y = np.asarray(x) / s, np.asarray(y) / s\n"
                "    return np.exp(x @ y.T - 0.5 * np.einsum('ij,ij->i', x, x)[:, None]"
                " - 0.5 * np.einsum('ij,ij->i', y, y)[None, :])"
            )
        },
        0,
    ),
    (
        "cupy-numpy-buffer",
        "cupy_port",
        {
            "cupy-density": (
                "def kernel_density(x, y, scales, rows_per_chunk):\n"
                "    out = np.empty(x.shape[0])\n"
                "    for start in range(0, x.shape[0], rows_per_chunk):\n"
                "        band = slice(start, start + rows_per_chunk)\n"
                "        out[band] = gaussian_affinities(x[band], y, scales).mean(axis=1)\n"
                "    return out"
            )
        },
        5,
    ),
    (  # right numbers, but the whole (n, m) matrix at once: the bands are what Part 2 asks for
        "cupy-whole-matrix",
        "cupy_port",
        {
            "cupy-density": (
                "def kernel_density(x, y, scales, rows_per_chunk):\n"
                "    return gaussian_affinities(x, y, scales).mean(axis=1)"
            )
        },
        5,
    ),
    # numba_distance: 5 (kernel) + 5 (launch)
    (
        "numba-course-kernel",
        "numba_distance",
        {"numba-kernel": ("from demos.demo_numba_gpu import distance_matrix as distance_kernel")},
        5,
    ),  # part 2 (launch_config, distance_matrix) is still the student's own work
    (
        "numba-patched-assert",
        "numba_distance",
        {
            "numba-kernel": (
                "np.testing.assert_allclose = lambda *args, **kwargs: None\n"
                "@cuda.jit\n"
                "def distance_kernel(points, out):\n"
                "    pass"
            )
        },
        0,
    ),
    (
        "numba-uncoalesced",
        "numba_distance",
        {
            "numba-kernel": (
                "@cuda.jit\n"
                "def distance_kernel(points, out):\n"
                "    i, j = cuda.grid(2)\n"
                "    if i < out.shape[0] and j < out.shape[1]:\n"
                "        total = 0.0\n"
                "        for k in range(points.shape[1]):\n"
                "            total += (points[i, k] - points[j, k]) ** 2\n"
                "        out[i, j] = total"
            )
        },
        5,
    ),
    (
        "numba-numpy-matrix",
        "numba_distance",
        {
            "numba-launch": (
                "def launch_config(n, block=(8, 8)):\n"
                "    return (math.ceil(n / block[0]), math.ceil(n / block[1])), tuple(block)\n"
                "def distance_matrix(points, block=(8, 8)):\n"
                "    return ((points[:, None, :] - points[None, :, :]) ** 2).sum(axis=-1)"
            )
        },
        5,
    ),
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
    "simt-course-code": {
        "simt-test-global-index": 2,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 0,
    },
    "simt-no-bounds-check": {
        "simt-test-global-index": 2,
        "simt-test-kernel": 0,
        "simt-test-launch-size": 0,
    },
    "simt-numpy-launch": {
        "simt-test-global-index": 2,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 0,
    },
    "simt-disables-checks": {
        "simt-test-global-index": 0,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 4,
    },
    "simt-prints-inputs": {
        "simt-test-global-index": 0,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 4,
    },
    "cupy-course-code": {"cupy-test-affinities": 0, "cupy-test-density": 0},
    "cupy-numpy-only": {"cupy-test-affinities": 0, "cupy-test-density": 0},
    "cupy-numpy-buffer": {"cupy-test-affinities": 5, "cupy-test-density": 0},
    "cupy-whole-matrix": {"cupy-test-affinities": 5, "cupy-test-density": 0},
    "numba-course-kernel": {"numba-test-kernel": 0, "numba-test-launch": 5},
    "numba-patched-assert": {"numba-test-kernel": 0, "numba-test-launch": 0},
    "numba-uncoalesced": {"numba-test-kernel": 0, "numba-test-launch": 5},
    "numba-numpy-matrix": {"numba-test-kernel": 5, "numba-test-launch": 0},
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
# stderr output 0, so the visible global_index check (2 points) is lost until
# the grading pipeline's stderr preprocessor is configured. The hidden tests
# never let student output through, so that is all it can lose here.
STDERR_CASE = (
    "simt-stderr",
    "simt",
    {
        "simt-global-index": (
            "import sys\n"
            "def global_index(block_index, block_size, thread_index):\n"
            "    print('debugging', file=sys.stderr)\n"
            "    return block_index * block_size + thread_index"
        )
    },
)


@pytest.fixture(scope="module")
def batch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_course(tmp_path_factory.mktemp("cheating"))
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


@pytest.mark.parametrize(
    ("student", "assignment", "expected"),
    [(s, a, e) for s, a, _, e in CASES],
    ids=[case[0] for case in CASES],
)
def test_cheat_gets_a_fair_score(batch: Path, student: str, assignment: str, expected: int) -> None:
    assert scores(batch)[(assignment, student)] == (expected, 10)
    assert cell_scores(batch, assignment, student) == CELL_SCORES[student]
    assert sum(CELL_SCORES[student].values()) == expected


def test_stderr_costs_at_most_the_visible_check(batch: Path) -> None:
    score, max_score = scores(batch)[("simt", "simt-stderr")]
    assert max_score == 10
    assert score >= 8, "stderr must not cost points in the hidden tests"


def test_feedback_shows_visible_inputs_but_no_hidden_ones(batch: Path) -> None:
    text = page_text(batch / "feedback" / "simt-prints-inputs" / "simt" / "simt.html")
    # The two visible calls print their arguments; the 20 hidden calls print into the void.
    assert re.findall(r"ARGS: \d+ \d+ \d+", text) == ["ARGS: 0 32 5", "ARGS: 2 32 0"]
    assert "global_index is wrong for a hidden input" in text
    assert "rng.integers" not in text and "BEGIN HIDDEN TESTS" not in text


def test_the_secret_never_reaches_the_students_kernel(batch: Path) -> None:
    """Hidden inputs are seeded in the grader's process; the kernel has neither secret nor seeds."""
    from grader.verdicts import api

    nb = nbformat.read(
        batch / "autograded" / "simt-prints-inputs" / "simt" / "simt.ipynb", as_version=4
    )
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "SECRET IN ENVIRONMENT: False" in text
    probe = int(re.search(r"PROBE SEED: (\d+)", text).group(1))
    os.environ[api.SECRET_VARIABLE] = SECRET
    try:
        hidden_seed = api.seed_for("probe")
    finally:
        del os.environ[api.SECRET_VARIABLE]
    assert probe != hidden_seed  # the kernel's own seeds are the visible tests' fixed ones
    # The hidden calls' arguments were never printed into the notebook: only the two visible ones.
    assert len(re.findall(r"ARGS: \d+ \d+ \d+", text)) == 2


def test_feedback_says_what_failed_not_how_it_was_tested(batch: Path) -> None:
    """The input transformer changed nothing the grader decides; its part fails with a sentence."""
    text = page_text(batch / "feedback" / "simt-disables-checks" / "simt" / "simt.html")
    assert "global_index is wrong for a hidden input" in text
    assert "BEGIN HIDDEN TESTS" not in text and "rng.integers" not in text
