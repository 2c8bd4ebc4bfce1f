"""The ``scan_transfer`` submissions tests/exercises/test_scan_transfer.py grades: right
answers written other ways, typical mistakes and cheats, each with the score a fair grader
gives it and why.

Each is the source of one or two of the assignment's answer cells (by grade id).
"""

from __future__ import annotations

import numpy as np

from demos.grading.compaction import expected_counts, readings

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
