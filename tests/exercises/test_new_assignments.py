"""Real ``nbgrader autograde`` of the ``profiling`` and ``kernel_patterns`` assignments, on CPU.

The instructor's solutions must get full marks, the released blanks nothing,
and submissions that cut corners what a fair grader gives: the course
package's own kernels score 0, and so do chapter 4b's model answers pasted in
(the assignment asks for other kernels), a histogram without the shared-memory
step keeps only its correctness points, a block maximum that starts from the
sum's 0 loses its part, a monitor that still waits for the GPU in every
iteration (a ``float``, a print, an ``if`` on a device value) loses the
synchronisation points, and timeline answers built on the course's timeline
code, or on chapter 4a's two-stream formula where any plan is asked for,
score nothing. Without a GPU the kernels run in
Numba's CUDA simulator and the array module is NumPy behind a counter; the
hidden tests count the same things on a GPU grader, so the scores are the same.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbgrader_driver import (
    ASSIGNMENTS,
    NEW_ASSIGNMENTS,
    assert_all_succeeded,
    hand_in,
    make_course,
    page_text,
    run_nbgrader,
    scores,
)

from helpers import ROOT

pytestmark = pytest.mark.slow

# Solution cells replaced by a shortcut: (assignment, grade_id) -> source.
COURSE_KERNELS = {
    (
        "kernel_patterns",
        "pat-histogram",
    ): "from demos.patterns.kernels import histogram_shared_kernel\n"
    "histogram_kernel = histogram_shared_kernel(N_BINS)\n",
    ("kernel_patterns", "pat-max"): "from demos.patterns.kernels import tree_sum_kernel\n"
    "block_max_kernel = tree_sum_kernel('float32')\n",
}


def _chapter_answer(name: str, renamed: str) -> str:
    """A model answer of chapter 4b as a student would paste it: imports dropped, kernel renamed."""
    answers = ROOT / "demos" / "checks" / "answers"
    source = (answers / f"{name}.py").read_text()
    kept = [line for line in source.splitlines() if not line.startswith(("from ", "import "))]
    return "\n".join(kept).replace(f"def {name}(", f"def {renamed}(")


CHAPTER_ANSWERS = {
    ("kernel_patterns", "pat-histogram"): _chapter_answer("histogram_shared", "histogram_kernel"),
    ("kernel_patterns", "pat-max"): _chapter_answer("block_sum_kernel", "block_max_kernel"),
}
NO_SHARED_MEMORY = {
    ("kernel_patterns", "pat-histogram"): "@cuda.jit\n"
    "def histogram_kernel(values, weights, totals):\n"
    "    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):\n"
    "        v = values[i]\n"
    "        if v >= LOW and v < HIGH:\n"
    "            cuda.atomic.add(totals, min(int((v - LOW) / WIDTH), N_BINS - 1), weights[i])\n",
}


def _block_max(start: str, tree_barrier: str) -> str:
    """A block-maximum tree kernel with the given start value and the tree's barrier line."""
    return (
        "@cuda.jit\n"
        "def block_max_kernel(values, maxima):\n"
        "    best = cuda.shared.array(BLOCK, float32)\n"
        "    t = cuda.threadIdx.x\n"
        f"    mine = {start}\n"
        "    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):\n"
        "        mine = max(mine, values[i])\n"
        "    best[t] = mine\n"
        "    cuda.syncthreads()\n"
        "    s = BLOCK // 2\n"
        "    while s > 0:\n"
        "        if t < s:\n"
        "            best[t] = max(best[t], best[t + s])\n"
        f"{tree_barrier}\n"
        "        s //= 2\n"
        "    if t == 0:\n"
        "        maxima[cuda.blockIdx.x] = best[0]\n"
    )


MAX_FROM_ZERO = {  # the block sum's start value: wrong for values that are all negative
    ("kernel_patterns", "pat-max"): _block_max("float32(0)", "        cuda.syncthreads()"),
}
# What the simulator computes right and a GPU does not: the histogram adds to a shared bin
# with a plain += (lost updates), the tree's barrier sits inside the if (a hang).
RACES = {
    ("kernel_patterns", "pat-histogram"): "@cuda.jit\n"
    "def histogram_kernel(values, weights, totals):\n"
    "    block_totals = cuda.shared.array(N_BINS, float32)\n"
    "    for b in range(cuda.threadIdx.x, N_BINS, cuda.blockDim.x):\n"
    "        block_totals[b] = float32(0)\n"
    "    cuda.syncthreads()\n"
    "    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):\n"
    "        v = values[i]\n"
    "        if v >= LOW and v < HIGH:\n"
    "            block_totals[min(int((v - LOW) / WIDTH), N_BINS - 1)] += weights[i]\n"
    "    cuda.syncthreads()\n"
    "    for b in range(cuda.threadIdx.x, N_BINS, cuda.blockDim.x):\n"
    "        cuda.atomic.add(totals, b, block_totals[b])\n",
    # the barrier inside the if: threads past the half never reach it
    ("kernel_patterns", "pat-max"): _block_max(
        "float32(-math.inf)", "            cuda.syncthreads()"
    ),
}
STILL_SYNCING = {
    ("profiling", "prof-fast"): "def fast_monitor(xp, windows, threshold):\n"
    "    return slow_monitor(xp, windows, threshold)\n",
}
COURSE_TIMELINE = {  # the course's timeline code for the peak, chapter 4a's pipeline model pasted
    ("profiling", "prof-peak"): "from demos.profiling import timeline as _t\n"
    "def peak_concurrency(intervals):\n"
    "    steps = _t.from_records([{'name': 's', 'lane': 'a', 'start_ms': s, 'end_ms': e}\n"
    "                             for s, e in intervals])\n"
    "    instants = sorted([(iv.start, 1) for iv in steps] + [(iv.end, -1) for iv in steps])\n"
    "    most, time, running, since = 0, 0.0, 0, 0.0\n"
    "    for t, change in instants:\n"
    "        if running and running == most:\n"
    "            time += t - since\n"
    "        running += change\n"
    "        if running > most:\n"
    "            most, time = running, 0.0\n"
    "        since = t\n"
    "    return most, time\n",
    ("profiling", "prof-predict"): "def predict_timeline(plan):\n"
    "    compute, copy = plan[0][1], plan[1][1]\n"
    "    blocks = len(plan) // 2\n"
    "    end = compute + copy + (blocks - 1) * max(compute, copy)\n"
    "    return [(0.0, end)] * len(plan)\n",
}
ONE_ASNUMPY = {  # another right answer: the levels stay on the device, one transfer, NumPy after
    ("profiling", "prof-fast"): "def fast_monitor(xp, windows, threshold):\n"
    "    levels = []\n"
    "    for window in windows:\n"
    "        x = xp.asarray(window)\n"
    "        levels.append(xp.max(xp.sqrt(xp.mean(x ** 2, axis=1))))\n"
    "    levels = xp.asnumpy(xp.stack(levels))\n"
    "    above = np.flatnonzero(levels > threshold)\n"
    "    if len(above) == 0:\n"
    "        return 0, 0.0, -1\n"
    "    k = int(above[np.argmax(levels[above])])\n"
    "    return len(above), float(levels[k]), k\n",
}
IF_ON_THE_DEVICE = {  # right numbers, but an if on a device value in every iteration
    ("profiling", "prof-fast"): "def fast_monitor(xp, windows, threshold):\n"
    "    alarms, loudest, index = xp.zeros(()), xp.zeros(()), xp.full((), -1.0)\n"
    "    for k, window in enumerate(windows):\n"
    "        x = xp.asarray(window)\n"
    "        level = xp.sqrt((x * x).mean(axis=1)).max()\n"
    "        if level > threshold:\n"
    "            alarms += 1\n"
    "            index = xp.where(level > loudest, k, index)\n"
    "            loudest = xp.maximum(loudest, level)\n"
    "    host = xp.asnumpy(xp.stack([alarms, loudest, index]))\n"
    "    return int(host[0]), float(host[1]), int(host[2])\n",
}
# student -> (assignment, replaced cells, expected score out of 10)
SHORTCUTS = {
    "carl": ("kernel_patterns", COURSE_KERNELS, 0.0),
    "dora": ("kernel_patterns", NO_SHARED_MEMORY, 7.0),  # histogram correct (2) + the whole max (5)
    "hana": ("kernel_patterns", MAX_FROM_ZERO, 5.0),  # the histogram (5), the max 0
    "jade": ("kernel_patterns", CHAPTER_ANSWERS, 0.0),  # the chapter's answers solve other problems
    "ivan": ("kernel_patterns", RACES, 4.0),  # right values (2 + 2), both "how" parts 0
    "emil": ("profiling", STILL_SYNCING, 6.0),  # right numbers (2) + timelines (4), syncs 0
    "fay": ("profiling", COURSE_TIMELINE, 6.0),  # monitor (6); course code, chapter's formula 0
    "gus": ("profiling", ONE_ASNUMPY, 10.0),  # a different right answer gets full marks
    "kim": ("profiling", IF_ON_THE_DEVICE, 6.0),  # right numbers (2) + timelines (4), syncs 0
}


def _with_cells(source: Path, replacements: dict[str, str]) -> str:
    nb = nbformat.read(source, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in replacements:
            cell.source = replacements[grade_id]
    return nbformat.writes(nb)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_course(tmp_path_factory.mktemp("nbgrader-new"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", a] for a in NEW_ASSIGNMENTS]))
    for assignment in NEW_ASSIGNMENTS:
        hand_in(root, "alice", assignment, root / "solutions" / assignment / f"{assignment}.ipynb")
        hand_in(root, "bob", assignment, root / "exercises" / assignment / f"{assignment}.ipynb")
    for student, (assignment, replaced, _) in SHORTCUTS.items():
        cells = {grade_id: src for (a, grade_id), src in replaced.items() if a == assignment}
        source = root / "solutions" / assignment / f"{assignment}.ipynb"
        hand_in(root, student, assignment, _with_cells(source, cells))
    steps = [["autograde", a, s] for a in NEW_ASSIGNMENTS for s in ("alice", "bob")]
    steps += [["autograde", a, s] for s, (a, _, _) in SHORTCUTS.items()]
    steps += [["generate_feedback", a, "bob"] for a in NEW_ASSIGNMENTS]
    assert_all_succeeded(run_nbgrader(root, steps))
    return root


@pytest.mark.parametrize(
    "assignment", NEW_ASSIGNMENTS, ids=[f"assignment-{a}" for a in NEW_ASSIGNMENTS]
)
def test_solution_full_marks_and_blank_zero(graded: Path, assignment: str) -> None:
    found = scores(graded)
    assert found[(assignment, "alice")] == (10.0, 10.0)
    assert found[(assignment, "bob")] == (0.0, 10.0)


@pytest.mark.parametrize("student", sorted(SHORTCUTS))
def test_shortcuts_score_what_a_fair_grader_gives(graded: Path, student: str) -> None:
    assignment, _, expected = SHORTCUTS[student]
    assert scores(graded)[(assignment, student)] == (expected, 10.0)


def test_hidden_tests_are_seeded_and_hide_their_inputs() -> None:
    """Hidden inputs come from grading.hidden_test (course secret), and no message quotes them."""
    for assignment in ASSIGNMENTS + NEW_ASSIGNMENTS:
        nb = nbformat.read(
            ROOT / "solutions" / assignment / f"{assignment}.ipynb",
            as_version=4,
        )
        for cell in nb.cells:
            if not cell.metadata.get("nbgrader", {}).get("grade"):
                continue
            hidden = cell.source.split("### BEGIN HIDDEN TESTS")[1]
            assert "grading.hidden_test(" in hidden, cell.metadata["nbgrader"]["grade_id"]
            assert 'f"' not in hidden and "f'" not in hidden, (
                "messages must not format hidden values"
            )


@pytest.mark.parametrize(
    "assignment", NEW_ASSIGNMENTS, ids=[f"assignment-{a}" for a in NEW_ASSIGNMENTS]
)
def test_feedback_shows_no_hidden_test(graded: Path, assignment: str) -> None:
    text = page_text(graded / "feedback" / "bob" / assignment / f"{assignment}.html")
    assert "assert" in text, "the page should show the visible tests"
    assert "grading.hidden_test(" not in text and "is_course_code(" not in text
