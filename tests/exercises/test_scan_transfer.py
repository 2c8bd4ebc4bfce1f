"""Real ``nbgrader autograde`` of the ``scan_transfer`` assignment (stream compaction), on CPU.

The solution gets full marks, the blank release nothing, two other right answers
full marks. Typical mistakes lose the part they break (``>=`` for ``>``, an
inclusive rank as the place, unset shared flags, a scan that reads every earlier
flag, a count by one thread); cheats the CUDA simulator would pass (NumPy inside
a kernel, an atomic counter, a chain without barriers, hard-coded answers) get
nothing for their kernel. The hidden tests run every kernel in the grader's own
simulator, so a GPU grader gives the same scores. The quick tests show, without
nbgrader, that the counted launches (:mod:`demos.grading.compaction`) see each fault.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbgrader_driver import assert_all_succeeded, hand_in, make_course, run_nbgrader, scores

from demos.grading.compaction import (
    compact_report,
    count_report,
    exclusive_offsets,
    expected_counts,
    readings,
)
from grader.sandbox.flags import FLAGS_ENV
from helpers import ROOT

ASSIGNMENT = "scan_transfer"

_HEAD = {
    "scan-count": "@cuda.jit\ndef count_kernel(values, counts):\n",
    "scan-compact": "@cuda.jit\ndef compact_kernel(values, offsets, out):\n",
}


def _kernel(grade_id: str, body: str) -> str:
    return _HEAD[grade_id] + body


COUNT_BY_BARRIER = _kernel(  # cuda.syncthreads_count: a barrier that counts
    "scan-count",
    "    i = cuda.blockIdx.x * BLOCK + cuda.threadIdx.x\n"
    "    flag = 0\n"
    "    if i < values.shape[0] and values[i] > THRESHOLD:\n"
    "        flag = 1\n"
    "    total = cuda.syncthreads_count(flag)\n"
    "    if cuda.threadIdx.x == 0:\n"
    "        counts[cuda.blockIdx.x] = total\n",
)
COUNT_BY_TREE = _kernel(  # chapter 4b's tree, on keep flags
    "scan-count",
    "    flags = cuda.shared.array(BLOCK, int32)\n"
    "    me = cuda.threadIdx.x\n"
    "    i = cuda.blockIdx.x * BLOCK + me\n"
    "    flags[me] = 1 if i < values.shape[0] and values[i] > THRESHOLD else 0\n"
    "    cuda.syncthreads()\n"
    "    width = BLOCK // 2\n"
    "    while width > 0:\n"
    "        if me < width:\n"
    "            flags[me] += flags[me + width]\n"
    "        cuda.syncthreads()\n"
    "        width //= 2\n"
    "    if me == 0:\n"
    "        counts[cuda.blockIdx.x] = flags[0]\n",
)
COMPACT_DOUBLE_BUFFER = _kernel(  # adds at distance 1, 2, 4, ... between two buffers
    "scan-compact",
    "    a = cuda.shared.array(BLOCK, int32)\n"
    "    b = cuda.shared.array(BLOCK, int32)\n"
    "    t = cuda.threadIdx.x\n"
    "    i = cuda.blockIdx.x * BLOCK + t\n"
    "    v = float32(0)\n"
    "    flag = 0\n"
    "    if i < values.shape[0]:\n"
    "        v = values[i]\n"
    "        if v > THRESHOLD:\n"
    "            flag = 1\n"
    "    a[t] = flag\n"
    "    cuda.syncthreads()\n"
    "    d = 1\n"
    "    src = 0\n"
    "    while d < BLOCK:\n"
    "        if src == 0:\n"
    "            b[t] = a[t] + a[t - d] if t >= d else a[t]\n"
    "        else:\n"
    "            a[t] = b[t] + b[t - d] if t >= d else b[t]\n"
    "        cuda.syncthreads()\n"
    "        src = 1 - src\n"
    "        d *= 2\n"
    "    inclusive = a[t] if src == 0 else b[t]\n"
    "    if flag == 1:\n"
    "        out[offsets[cuda.blockIdx.x] + inclusive - 1] = v\n",
)
COMPACT_WORK_EFFICIENT = _kernel(  # chapter 4c's scan: up-sweep, clear the total, down-sweep
    "scan-compact",
    "    rank = cuda.shared.array(BLOCK, int32)\n"
    "    t = cuda.threadIdx.x\n"
    "    i = cuda.blockIdx.x * BLOCK + t\n"
    "    value = float32(0)\n"
    "    keep = 0\n"
    "    if i < values.shape[0]:\n"
    "        value = values[i]\n"
    "        if value > THRESHOLD:\n"
    "            keep = 1\n"
    "    rank[t] = keep\n"
    "    cuda.syncthreads()\n"
    "    span = 1\n"
    "    while span < BLOCK:\n"
    "        j = (t + 1) * 2 * span - 1\n"
    "        if j < BLOCK:\n"
    "            rank[j] = rank[j] + rank[j - span]\n"
    "        cuda.syncthreads()\n"
    "        span *= 2\n"
    "    if t == BLOCK - 1:\n"
    "        rank[t] = 0\n"
    "    cuda.syncthreads()\n"
    "    span = BLOCK // 2\n"
    "    while span >= 1:\n"
    "        j = (t + 1) * 2 * span - 1\n"
    "        if j < BLOCK:\n"
    "            left = rank[j - span]\n"
    "            rank[j - span] = rank[j]\n"
    "            rank[j] = rank[j] + left\n"
    "        cuda.syncthreads()\n"
    "        span //= 2\n"
    "    if keep == 1:\n"
    "        out[offsets[cuda.blockIdx.x] + rank[t]] = value\n",
)
COMPACT_BY_VOTES = _kernel(  # warp votes give ranks in a warp; the warps' totals in shared
    "scan-compact",
    "    warp_totals = cuda.shared.array(WARPS, int32)\n"
    "    t = cuda.threadIdx.x\n"
    "    i = cuda.blockIdx.x * BLOCK + t\n"
    "    v = float32(0)\n"
    "    keep = False\n"
    "    if i < values.shape[0]:\n"
    "        v = values[i]\n"
    "        keep = v > THRESHOLD\n"
    "    votes = cuda.ballot_sync(0xFFFFFFFF, keep)\n"
    "    if t % 32 == 0:\n"
    "        warp_totals[t // 32] = cuda.popc(votes)\n"
    "    cuda.syncthreads()\n"
    "    before = cuda.popc(votes & cuda.lanemask_lt())\n"
    "    for w in range(t // 32):\n"
    "        before += warp_totals[w]\n"
    "    if keep:\n"
    "        out[offsets[cuda.blockIdx.x] + before] = v\n",
)

COUNT_AT_LEAST = COUNT_BY_TREE.replace("values[i] > THRESHOLD", "values[i] >= THRESHOLD")
COMPACT_AT_LEAST = COMPACT_DOUBLE_BUFFER.replace("v > THRESHOLD", "v >= THRESHOLD")
COMPACT_INCLUSIVE = COMPACT_DOUBLE_BUFFER.replace("+ inclusive - 1] = v", "+ inclusive] = v")
COMPACT_QUADRATIC = _kernel(  # every thread adds up all the flags before its own
    "scan-compact",
    "    flags = cuda.shared.array(BLOCK, int32)\n"
    "    t = cuda.threadIdx.x\n"
    "    i = cuda.blockIdx.x * BLOCK + t\n"
    "    v = float32(0)\n"
    "    flag = 0\n"
    "    if i < values.shape[0]:\n"
    "        v = values[i]\n"
    "        if v > THRESHOLD:\n"
    "            flag = 1\n"
    "    flags[t] = flag\n"
    "    cuda.syncthreads()\n"
    "    before = 0\n"
    "    for k in range(t):\n"
    "        before += flags[k]\n"
    "    if flag == 1:\n"
    "        out[offsets[cuda.blockIdx.x] + before] = v\n",
)
COUNT_UNSET_PADDING = COUNT_BY_TREE.replace(  # threads past the end set no flag: the tree
    # adds garbage on a GPU (the simulator's shared memory starts as garbage too, not zeros)
    "    flags[me] = 1 if i < values.shape[0] and values[i] > THRESHOLD else 0\n",
    "    if i < values.shape[0]:\n        flags[me] = 1 if values[i] > THRESHOLD else 0\n",
)
COUNT_ONE_THREAD = _kernel(  # thread 0 walks the whole tile
    "scan-count",
    "    if cuda.threadIdx.x == 0:\n"
    "        start = cuda.blockIdx.x * BLOCK\n"
    "        total = 0\n"
    "        for i in range(start, min(start + BLOCK, values.shape[0])):\n"
    "            if values[i] > THRESHOLD:\n"
    "                total += 1\n"
    "        counts[cuda.blockIdx.x] = total\n",
)

COMPACT_BY_NUMPY = _kernel(  # NumPy's compaction inside a "kernel": runs only in the simulator
    "scan-compact",
    "    if cuda.grid(1) == 0:\n"
    "        kept = values[values > THRESHOLD]\n"
    "        out[: kept.shape[0]] = kept\n",
)
COMPACT_BY_ATOMIC_COUNTER = _kernel(  # places in the order threads arrive (in order only when
    # the threads run one at a time, as in the simulator)
    "scan-compact",
    "    taken = cuda.shared.array(1, int32)\n"
    "    t = cuda.threadIdx.x\n"
    "    if t == 0:\n"
    "        taken[0] = 0\n"
    "    cuda.syncthreads()\n"
    "    i = cuda.blockIdx.x * BLOCK + t\n"
    "    if i < values.shape[0]:\n"
    "        v = values[i]\n"
    "        if v > THRESHOLD:\n"
    "            out[offsets[cuda.blockIdx.x] + cuda.atomic.add(taken, 0, 1)] = v\n",
)
COMPACT_RACY_CHAIN = _kernel(  # each thread adds its neighbour's running total, no barrier
    "scan-compact",
    "    running = cuda.shared.array(BLOCK, int32)\n"
    "    t = cuda.threadIdx.x\n"
    "    i = cuda.blockIdx.x * BLOCK + t\n"
    "    v = float32(0)\n"
    "    flag = 0\n"
    "    if i < values.shape[0]:\n"
    "        v = values[i]\n"
    "        if v > THRESHOLD:\n"
    "            flag = 1\n"
    "    running[t] = flag\n"
    "    if t > 0:\n"
    "        running[t] += running[t - 1]\n"
    "    cuda.syncthreads()\n"
    "    if flag == 1:\n"
    "        out[offsets[cuda.blockIdx.x] + running[t] - 1] = v\n",
)


def hard_coded_counts(visible_counts: np.ndarray) -> str:
    """A count kernel that writes the visible test's answers and reads nothing."""
    table = ", ".join(str(int(c)) for c in visible_counts)
    return _kernel(
        "scan-count",
        "    if cuda.threadIdx.x == 0:\n"
        f"        answers = ({table})\n"
        "        counts[cuda.blockIdx.x] = answers[cuda.blockIdx.x]\n",
    )


#: name -> (replaced cells by grade id, expected score out of 10, why)
def submissions(visible_counts: np.ndarray) -> dict[str, tuple[dict[str, str], float, str]]:
    """Every case, with the visible test's counts for the hard-coded one."""
    return {
        "other-scans": (
            {"scan-count": COUNT_BY_BARRIER, "scan-compact": COMPACT_DOUBLE_BUFFER},
            10.0,
            "syncthreads_count and a double-buffered scan are right too",
        ),
        "chapter-scan": (
            {"scan-compact": COMPACT_WORK_EFFICIENT},
            10.0,
            "chapter 4c's work-efficient scan, as the chapter teaches it, is right too",
        ),
        "tree-and-votes": (
            {"scan-count": COUNT_BY_TREE, "scan-compact": COMPACT_BY_VOTES},
            10.0,
            "a tree count and warp-vote ranks are right too",
        ),
        "at-least": (
            {"scan-count": COUNT_AT_LEAST, "scan-compact": COMPACT_AT_LEAST},
            6.0,
            ">= keeps the readings at the threshold: both 'how' parts (2 + 4), no values",
        ),
        "inclusive": (
            {"scan-compact": COMPACT_INCLUSIVE},
            4.0,
            "an inclusive rank as the place: Part 1 (4) only",
        ),
        "quadratic": (
            {"scan-compact": COMPACT_QUADRATIC},
            6.0,
            "right values (4 + 2), but each thread reads all the flags before it",
        ),
        "unset-padding": (
            {"scan-count": COUNT_UNSET_PADDING},
            6.0,
            "the last tile's count adds garbage: Part 2 (6) only",
        ),
        "one-thread-count": (
            {"scan-count": COUNT_ONE_THREAD},
            8.0,
            "right counts (2), not in parallel (0), Part 2 (6)",
        ),
        "numpy-in-kernel": (
            {"scan-compact": COMPACT_BY_NUMPY},
            4.0,
            "NumPy's compaction where a kernel belongs: Part 1 (4) only",
        ),
        "atomic-counter": (
            {"scan-compact": COMPACT_BY_ATOMIC_COUNTER},
            4.0,
            "in order only in the simulator: Part 1 (4) only",
        ),
        "racy-chain": (
            {"scan-compact": COMPACT_RACY_CHAIN},
            4.0,
            "a chain without barriers, right only one thread at a time: Part 1 (4) only",
        ),
        "hard-coded": (
            {"scan-count": hard_coded_counts(visible_counts)},
            6.0,
            "the visible test's counts written out: Part 2 (6) only",
        ),
    }


#: The visible count test's input: what a student who hard-codes answers sees.
VISIBLE_COUNTS = expected_counts(readings(np.random.default_rng(0), 300, 0.5, 0.4), 0.5, 128)
CASES = submissions(VISIBLE_COUNTS)


def _with_cells(source: Path, replacements: dict[str, str]) -> str:
    nb = nbformat.read(source, as_version=4)
    found = set()
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in replacements:
            cell.source = replacements[grade_id]
            found.add(grade_id)
    assert found == set(replacements), (
        "the solution's answer cells are not the ones this test knows"
    )
    return nbformat.writes(nb)


@pytest.fixture(scope="module")
def solution_names() -> dict:
    """The solution's set-up cell and kernels, run here (the kernels in the CUDA simulator)."""
    nb = nbformat.read(ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", as_version=4)
    cells = {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells}
    names: dict = {}
    for grade_id in ("scan-setup", "scan-count", "scan-compact"):
        exec(compile(cells[grade_id], grade_id, "exec"), names)  # noqa: S102  (the course's own)
    return names


def _report(names: dict, replaced: dict[str, str], kind: str) -> dict:
    """The counted launch of *kind* of the solution with *replaced* cells, on 2 blocks."""
    names = dict(names)
    for source in replaced.values():
        exec(compile(source, "case", "exec"), names)  # noqa: S102  (the test's own cases)
    block, threshold = names["BLOCK"], names["THRESHOLD"]
    values = readings(np.random.default_rng(7), block + 37, threshold, 0.5, ties=False)
    if kind == "count":
        return count_report(names["count_kernel"], values, threads=block)
    offsets = exclusive_offsets(expected_counts(values, threshold, block))
    return compact_report(names["compact_kernel"], values, offsets, threshold, threads=block)


#: case -> (report, field, what a right kernel has there): the field that gives the case away
GIVEAWAY = {
    "atomic-counter": ("compact", "atomics", 0),
    "racy-chain": ("compact", "racy_shared_reads", 0),
    "inclusive": ("compact", "outputs_written_by_another_thread", 0),
    "one-thread-count": ("count", "values_read_by_another_thread", 0),
    "unset-padding": ("count", "uninitialised_shared_reads", 0),
}


@pytest.mark.parametrize("case", sorted(GIVEAWAY))
def test_the_reports_see_what_a_gpu_would_get_wrong(solution_names: dict, case: str) -> None:
    """Each fault shows in its report's field, where the solution's kernels have the right value."""
    kind, field, right = GIVEAWAY[case]
    assert _report(solution_names, {}, kind)[field] == right
    try:
        report = _report(solution_names, CASES[case][0], kind)
    except IndexError:
        # The simulator's threads take turns in no fixed order: a chain that reads a
        # neighbour's slot before it is written gets garbage and writes out of range.
        assert case == "racy-chain"
        return
    assert report[field] != right


def test_a_loop_over_the_earlier_flags_reads_too_much_shared_memory(solution_names: dict) -> None:
    block = solution_names["BLOCK"]
    assert _report(solution_names, {}, "compact")["most_shared_reads_by_a_thread"] <= block // 2
    quadratic = _report(solution_names, CASES["quadratic"][0], "compact")
    assert quadratic["most_shared_reads_by_a_thread"] > block // 2


#: Graded one at a time, each with a flags file of its own: the right answers.
ALONE = ["alice", "otherscans", "treeandvotes"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_course(tmp_path_factory.mktemp("nbgrader-scan"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", ASSIGNMENT]]))
    solution = root / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    hand_in(root, "alice", ASSIGNMENT, solution)
    hand_in(root, "bob", ASSIGNMENT, root / "exercises" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    for name, (cells, _, _) in CASES.items():
        hand_in(root, name.replace("-", ""), ASSIGNMENT, _with_cells(solution, cells))
    others = [p.name for p in (root / "submitted").iterdir() if p.name not in ALONE]
    for flags, students in [*((s, [s]) for s in ALONE), ("others", others)]:
        os.environ[FLAGS_ENV] = str(root / f"flags-{flags}.jsonl")
        try:
            steps = [["autograde", ASSIGNMENT, s] for s in students]
            assert_all_succeeded(run_nbgrader(root, steps))
        finally:
            del os.environ[FLAGS_ENV]
    return root


def _flags(root: Path, student: str) -> set[str]:
    """The reasons the grader gave a human to look at *student*'s notebook."""
    path = root / f"flags-{student}.jsonl"
    lines = path.read_text().splitlines() if path.exists() else []
    return {json.loads(line)["reason"] for line in lines}


@pytest.mark.slow
def test_solution_full_marks_and_blank_zero(graded: Path) -> None:
    found = scores(graded)
    assert found[(ASSIGNMENT, "alice")] == (10.0, 10.0)
    assert found[(ASSIGNMENT, "bob")] == (0.0, 10.0)


@pytest.mark.slow
def test_only_a_kernel_shaped_like_course_code_goes_to_a_human(graded: Path) -> None:
    """The solution, a new right answer and chapter 4c's scan written as taught are not
    flagged. Chapter 4's block sum turned into a count is flagged for a look (its points
    stay): the copy check's promise."""
    assert _flags(graded, "alice") == set() and _flags(graded, "otherscans") == set()
    assert _flags(graded, "chapterscan") == set()
    assert _flags(graded, "treeandvotes") == {
        "count_kernel has the structure of code the course ships"
    }


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_submission_scores_what_a_fair_grader_gives(graded: Path, case: str) -> None:
    _, expected, why = CASES[case]
    got = scores(graded)[(ASSIGNMENT, case.replace("-", ""))]
    assert got == (expected, 10.0), f"{case}: {why}"
