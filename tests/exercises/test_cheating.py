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
from helpers import ROOT

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
    # simt: 2 (reader_blocks) + 4 (heat_step) + 4 (diffuse)
    (
        "simt-course-code",
        "simt",
        {
            "simt-launch": (
                "from demos.simt import blocks_for\n"
                "def diffuse(u, r, steps, threads_per_block=32):\n"
                "    current = cuda.to_device(u)\n"
                "    following = cuda.device_array_like(current)\n"
                "    for _ in range(steps):\n"
                "        heat_step[blocks_for(u.shape[0], threads_per_block), threads_per_block]"
                "(current, r, following)\n"
                "        current, following = following, current\n"
                "    return current.copy_to_host()"
            )
        },
        6,
    ),
    (  # diffuse runs the unguarded kernel too: both kernel parts are lost
        "simt-no-bounds-check",
        "simt",
        {
            "simt-kernel": (
                "@cuda.jit\n"
                "def heat_step(u, r, out):\n"
                "    i = cuda.grid(1)\n"
                "    left = u[i - 1] if i > 0 else u[i]\n"
                "    right = u[i + 1] if i < u.shape[0] - 1 else u[i]\n"
                "    out[i] = u[i] + r * (left - 2 * u[i] + right)"
            )
        },
        2,
    ),
    (  # right values, but one thread walks the whole rod: the partial grid shows it
        "simt-loop-in-kernel",
        "simt",
        {
            "simt-kernel": (
                "@cuda.jit\n"
                "def heat_step(u, r, out):\n"
                "    if cuda.grid(1) == 0:\n"
                "        last = u.shape[0] - 1\n"
                "        for i in range(u.shape[0]):\n"
                "            left = u[i - 1] if i > 0 else u[i]\n"
                "            right = u[i + 1] if i < last else u[i]\n"
                "            out[i] = u[i] + r * (left - 2 * u[i] + right)"
            )
        },
        6,
    ),
    (
        "simt-numpy-launch",
        "simt",
        {
            "simt-launch": (
                "def diffuse(u, r, steps, threads_per_block=32):\n"
                "    for _ in range(steps):\n"
                "        padded = np.pad(u, 1, mode='edge')\n"
                "        u = (u + r * (padded[:-2] - 2 * u + padded[2:])).astype(u.dtype)\n"
                "    return u.copy()"
            )
        },
        6,
    ),
    (  # one device array read and written by the same step: neighbours already overwritten
        "simt-in-place",
        "simt",
        {
            "simt-launch": (
                "def diffuse(u, r, steps, threads_per_block=32):\n"
                "    blocks = (u.shape[0] + threads_per_block - 1) // threads_per_block\n"
                "    current = cuda.to_device(u)\n"
                "    for _ in range(steps):\n"
                "        heat_step[blocks, threads_per_block](current, r, current)\n"
                "    return current.copy_to_host()"
            )
        },
        6,
    ),
    (
        "simt-disables-checks",
        "simt",
        {
            "simt-reader-blocks": (
                "def reader_blocks(element, n, threads_per_block):\n"
                "    return [0]\n"
                "get_ipython().input_transformers_post.append(\n"
                "    lambda lines: [l.replace('assert ', 'assert True or ')"
                ".replace('grading.expect(', 'print(')\n"
                "                   for l in lines])"
            )
        },
        8,  # the transformer changes nothing the grader decides: reader_blocks (2) fails alone
    ),
    # Prints what it is given: the visible calls' arguments may show, hidden ones must not.
    (
        "simt-prints-inputs",
        "simt",
        {
            "simt-reader-blocks": (
                "import os\n"
                "print('SECRET IN ENVIRONMENT:', 'COURSE_GRADING_SECRET' in os.environ)\n"
                "print('PROBE SEED:', grading.seed_for('probe'))\n"
                "def reader_blocks(element, n, threads_per_block):\n"
                "    print('ARGS:', element, n, threads_per_block)\n"
                "    return sorted({t // 32 for t in (element - 1, element, element + 1)"
                " if 0 <= t < n})"
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
    # numba_distance: 5 (l1_kernel) + 5 (grid_for and batched_l1)
    (  # chapter 4's model answer pasted and renamed: another metric, and 2-D where 3-D is asked
        "numba-chapter-kernel",
        "numba_distance",
        {
            "numba-kernel": "@cuda.jit\n"
            + (ROOT / "demos/checks/answers/coalesced_distance_kernel.py")
            .read_text()
            .split("@cuda.jit\n")[1]
            .replace("coalesced_distance_kernel", "l1_kernel")
        },
        0,
    ),
    (
        "numba-course-grid",
        "numba_distance",
        {
            "numba-launch": (
                "from demos.checks.answers.coalesced_grid import coalesced_grid\n"
                "def grid_for(shape, block=(32, 4)):\n"
                "    s, m, n = shape\n"
                "    return (*coalesced_grid(m, n, block), s), (block[0], block[1], 1)\n"
                "def batched_l1(a, b, block=(32, 4)):\n"
                "    out = np.empty((a.shape[0], a.shape[1], b.shape[1]), dtype=a.dtype)\n"
                "    grid, threads = grid_for(out.shape, block)\n"
                "    l1_kernel[grid, threads](a, b, out)\n"
                "    return out"
            )
        },
        5,
    ),
    (  # the patched assert changes no verdict: an empty kernel leaves every distance unset
        "numba-patched-assert",
        "numba_distance",
        {
            "numba-kernel": (
                "np.testing.assert_allclose = lambda *args, **kwargs: None\n"
                "@cuda.jit\n"
                "def l1_kernel(a, b, out):\n"
                "    pass"
            )
        },
        0,
    ),
    (  # rows on x: uncoalesced, and with the grid of Part 2 (columns on x) entries are missed
        "numba-uncoalesced",
        "numba_distance",
        {
            "numba-kernel": (
                "@cuda.jit\n"
                "def l1_kernel(a, b, out):\n"
                "    row, col, pair = cuda.grid(3)\n"
                "    if pair < out.shape[0] and row < out.shape[1] and col < out.shape[2]:\n"
                "        total = 0.0\n"
                "        for k in range(a.shape[2]):\n"
                "            total += abs(a[pair, row, k] - b[pair, col, k])\n"
                "        out[pair, row, col] = total"
            )
        },
        0,
    ),
    (  # right numbers, but the first thread of each row computes the whole row
        "numba-loop-columns",
        "numba_distance",
        {
            "numba-kernel": (
                "@cuda.jit\n"
                "def l1_kernel(a, b, out):\n"
                "    first, row, pair = cuda.grid(3)\n"
                "    if first == 0 and pair < out.shape[0] and row < out.shape[1]:\n"
                "        for col in range(out.shape[2]):\n"
                "            total = 0.0\n"
                "            for k in range(a.shape[2]):\n"
                "                total += abs(a[pair, row, k] - b[pair, col, k])\n"
                "            out[pair, row, col] = total"
            )
        },
        5,
    ),
    (
        "numba-numpy-matrix",
        "numba_distance",
        {
            "numba-launch": (
                "def grid_for(shape, block=(32, 4)):\n"
                "    s, m, n = shape\n"
                "    return (math.ceil(n / block[0]), math.ceil(m / block[1]), s), (*block, 1)\n"
                "def batched_l1(a, b, block=(32, 4)):\n"
                "    return np.abs(a[:, :, None, :] - b[:, None, :, :]).sum(axis=-1)"
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
        "simt-test-reader-blocks": 2,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 0,
    },
    "simt-no-bounds-check": {
        "simt-test-reader-blocks": 2,
        "simt-test-kernel": 0,
        "simt-test-launch-size": 0,
    },
    "simt-loop-in-kernel": {
        "simt-test-reader-blocks": 2,
        "simt-test-kernel": 0,
        "simt-test-launch-size": 4,
    },
    "simt-numpy-launch": {
        "simt-test-reader-blocks": 2,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 0,
    },
    "simt-in-place": {
        "simt-test-reader-blocks": 2,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 0,
    },
    "simt-disables-checks": {
        "simt-test-reader-blocks": 0,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 4,
    },
    "simt-prints-inputs": {
        "simt-test-reader-blocks": 0,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 4,
    },
    "cupy-course-code": {"cupy-test-affinities": 0, "cupy-test-density": 0},
    "cupy-numpy-only": {"cupy-test-affinities": 0, "cupy-test-density": 0},
    "cupy-numpy-buffer": {"cupy-test-affinities": 5, "cupy-test-density": 0},
    "cupy-whole-matrix": {"cupy-test-affinities": 5, "cupy-test-density": 0},
    "numba-chapter-kernel": {"numba-test-kernel": 0, "numba-test-launch": 0},
    "numba-course-grid": {"numba-test-kernel": 5, "numba-test-launch": 0},
    "numba-patched-assert": {"numba-test-kernel": 0, "numba-test-launch": 0},
    "numba-uncoalesced": {"numba-test-kernel": 0, "numba-test-launch": 0},
    "numba-loop-columns": {"numba-test-kernel": 0, "numba-test-launch": 5},
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
    # The three visible calls print their arguments; the 27 hidden calls print into the void.
    assert re.findall(r"ARGS: \d+ \d+ \d+", text) == [
        "ARGS: 5 100 32",
        "ARGS: 31 100 32",
        "ARGS: 0 1 32",
    ]
    assert "reader_blocks is wrong for a hidden input" in text
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
    # The hidden calls' arguments were never printed into the notebook: only the three visible ones.
    assert len(re.findall(r"ARGS: \d+ \d+ \d+", text)) == 3


def test_feedback_says_what_failed_not_how_it_was_tested(batch: Path) -> None:
    """The input transformer changed nothing the grader decides; its part fails with a sentence."""
    text = page_text(batch / "feedback" / "simt-disables-checks" / "simt" / "simt.html")
    assert "reader_blocks is wrong for a hidden input" in text
    assert "BEGIN HIDDEN TESTS" not in text and "rng.integers" not in text
