"""Chapter 4c's checks: each typical mistake gets its own words, each correct alternative passes.

Why: a scan or stencil with a missing barrier gives right numbers in the
simulator, so a check that only compared results would pass kernels that fail
on a GPU; and a check that demanded the model answer's exact form would reject a
right kernel written another way. The mistakes below are the ones a student
makes (exclusive for inclusive, a barrier inside the `if`, the total taken after
it was cleared, the offset of the block itself, a halo never loaded or loaded
from outside the array, neighbours still read from global memory); the
alternatives are right kernels in other forms (the doubling scan, accepted with
a remark on its work; a warp-shuffle scan; the right halo loaded by the last
threads; indices written out by hand or clamped into the array).
"""

from __future__ import annotations

import re

import pytest

from demos.checks import answer_source, passes
from helpers import notebook_cell

# the tables below write the block size as plain BLOCK (the exercises' name, and an older copy of
# the chapter's); the chapter's own SCAN_BLOCK and STENCIL_BLOCK are in test_block_names.py
SCAN = answer_source("block_scan").replace("SCAN_BLOCK", "BLOCK")
ADD = answer_source("add_offsets")
STENCIL = answer_source("stencil_shared").replace("STENCIL_BLOCK", "BLOCK")
_UP_STEP = """            s[t] += s[t - d]
        cuda.syncthreads()  # every thread, also those that added nothing"""
_HALO = """    if t < RADIUS:  # the first RADIUS threads load the halo on both sides
        left = i - RADIUS
        tile[t] = x[left] if left >= 0 else float32(0)
        right = i + BLOCK
        tile[t + BLOCK + RADIUS] = x[right] if right < n else float32(0)
"""

_LOOPED_SCAN = """
from numba import cuda, int32
BLOCK = 64
@cuda.jit
def block_scan(values, out, totals):
    s = cuda.shared.array(BLOCK, int32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    s[t] = values[i] if i < values.shape[0] else 0
    cuda.syncthreads()
{body}
    if i < values.shape[0]:
        out[i] = s[t]
    if t == BLOCK - 1:
        totals[cuda.blockIdx.x] = s[t]
"""
DOUBLING = _LOOPED_SCAN.format(
    body="""    d = 1
    while d < BLOCK:
        v = s[t - d] if t >= d else 0
        cuda.syncthreads()
        s[t] += v
        cuda.syncthreads()
        d *= 2"""
)
DOUBLING_RACY = _LOOPED_SCAN.format(
    body="""    d = 1
    while d < BLOCK:
        if t >= d:
            s[t] += s[t - d]
        cuda.syncthreads()
        d *= 2"""
)
SERIAL = _LOOPED_SCAN.format(
    body="""    if t == 0:
        for k in range(1, BLOCK):
            s[k] += s[k - 1]
    cuda.syncthreads()"""
)

SHARED_OFFSET = """
from numba import cuda, int32
@cuda.jit
def add_offsets(out, scanned_totals):
    off = cuda.shared.array(1, int32)
    i, b = cuda.grid(1), cuda.blockIdx.x
    if cuda.threadIdx.x == 0:
        off[0] = scanned_totals[b - 1] if b > 0 else 0
    if i < out.shape[0]:
        out[i] += off[0]
"""
STEPS_SCAN = SCAN.replace("BLOCK = 64", "BLOCK = 64\nSTEPS = 6").replace(
    "    d = 1\n    while d < BLOCK:", "    for d in [1 << k for k in range(STEPS)]:"
)  # log2(BLOCK) typed in: stays 6 when the check compiles BLOCK = 128
STUB = re.sub(r"    d = 1\n.*(?=    if i < values)", "", SCAN, flags=re.S).replace(" + own", "")
_TOTAL = "        totals[cuda.blockIdx.x] = s[t]  # the block's sum, before the root is cleared\n"
_BORDER = "out[i] = tile[t + RADIUS]  # the border keeps its value"

MISTAKES = {
    "block_scan": [
        (SCAN.replace("out[i] = s[t] + own", "out[i] = s[t]"), "you wrote the exclusive scan"),
        (SCAN.replace(_UP_STEP, "            s[t] += s[t - d]"), "between the same two barriers"),
        (
            SCAN.replace(_UP_STEP, "            s[t] += s[t - d]\n            cuda.syncthreads()"),
            "Keep the barriers outside every `if`",
        ),
        (
            SCAN.replace("    s[t] = own\n    cuda.syncthreads()", "    s[t] = own"),
            "thread 0 wrote s[0]",
        ),
        (
            SCAN.replace(
                "totals[cuda.blockIdx.x] = s[t]  # the block's sum, before the root is cleared\n"
                "        s[t] = 0",
                "s[t] = 0\n        totals[cuda.blockIdx.x] = s[t]",
            ),
            "totals[0] is 0",
        ),
        (SCAN.replace("BLOCK = 64", "BLOCK = 48"), "BLOCK = 48 is no power of two"),
        (SCAN.replace("if i < values.shape[0] else 0", ""), "outside an array"),
        (DOUBLING_RACY, "between the same two barriers"),
        (SERIAL, "one thread adds everything in turn"),
        (
            SCAN.replace(
                "left = s[t - d]\n            s[t - d] = s[t]\n            s[t] += left",
                "s[t - d] = s[t]\n            s[t] += s[t - d]",
            ),
            "as if every s[t] were 0 after the down-sweep",
        ),
        (
            SCAN.replace(
                _TOTAL,
                "        if i < values.shape[0]:\n            totals[cuda.blockIdx.x] = s[t]\n",
            ),
            "This last block is part-filled",
        ),
        (
            SCAN.replace(
                "    if t == BLOCK - 1:\n" + _TOTAL + "        s[t] = 0\n    cuda.syncthreads()\n",
                "    if t == 0:\n        totals[cuda.blockIdx.x] = s[BLOCK - 1]\n"
                "        s[BLOCK - 1] = 0\n",
            ),
            "also after the last element is cleared",
        ),
        (SCAN.replace("cuda.blockIdx.x * BLOCK + t", "t"), "Thread t of block b owns"),
        (STUB, "out holds the values themselves; nothing was scanned yet"),
        (SCAN.replace("int32", "int8"), "did not fit the array it was stored in"),
        (
            SCAN.replace("(BLOCK, int32)", "(BLOCK, float32)").replace(
                "import cuda, int32", "import cuda, float32"
            ),
            "float32 is exact only up to 2**24",
        ),
        (STEPS_SCAN, "your kernel also reads STEPS = 6"),
    ],
    "add_offsets": [
        (
            ADD.replace("scanned_totals[b - 1]  #", "scanned_totals[b]  #").replace(
                "if b > 0 and", "if"
            ),
            "block 0 got scanned_totals[0] added",
        ),
        (
            ADD.replace("scanned_totals[b - 1]  #", "scanned_totals[b]  #"),
            "which includes its own total",
        ),
        (ADD.replace(" and i < out.shape[0]", ""), "outside an array"),
        (ADD.replace("b > 0 and ", ""), "a thread read scanned_totals[-1]"),
        (ADD.replace("out[i] += scanned", "out[i] = scanned"), "was replaced by the offset"),
        (ADD.replace("b = cuda.blockIdx.x", "b = i // 32"), "no fixed block size works"),
        (SHARED_OFFSET, "wait with cuda.syncthreads() before reading it"),
    ],
    "stencil_shared": [
        (STENCIL.replace(_HALO, ""), "A halo cell was never loaded"),
        (
            STENCIL.replace(
                "tile[t + BLOCK + RADIUS] = x[right] if right < n else float32(0)\n", "pass\n"
            ),
            "tile[65] (line 10) before any thread of the block had set it",
        ),
        (
            STENCIL.replace("tile[t] = x[left] if left >= 0 else float32(0)", "tile[t] = x[left]"),
            "a thread read x[-1], outside the array",
        ),
        (
            STENCIL.replace(
                "    cuda.syncthreads()  # the whole tile", "    pass  # the whole tile"
            ).replace(
                "    t = cuda.threadIdx.x\n", "    t = cuda.threadIdx.x\n    cuda.syncthreads()\n"
            ),
            "Wait with cuda.syncthreads() after loading the tile",
        ),
        (
            STENCIL.replace("left = i - RADIUS\n", "left = i - 1\n")
            .replace("tile[t] = x[left]", "tile[0] = x[left]")
            .replace("tile[t + BLOCK + RADIUS] =", "tile[BLOCK + 1] ="),
            "Your kernel passed with RADIUS = 1",
        ),
        (
            STENCIL.replace("out[i] = tile[t + RADIUS]  # the border", "out[i] = 0  # the border"),
            "on the array's border",
        ),
        (
            STENCIL.replace("acc += tile[t + k]", "acc += x[i - RADIUS + k]"),
            "times from global memory",
        ),
        (
            STENCIL.replace("tile[t + k]", "tile[t + k + 1]"),
            "neighbours tile[t] to tile[t + 2 * RADIUS]",
        ),
        (
            STENCIL.replace("left = i - RADIUS\n", "left = i\n"),
            "at the edge of its block",
        ),
        (STENCIL.replace("if i < RADIUS or", "if i <= RADIUS or"), "it kept its value x[1]"),
        (STENCIL.replace(_BORDER, "pass"), "It lies on the array's border, where out[i] = x[i]"),
        (
            STENCIL.replace("RADIUS = 1  #", "RADIUS = 1\nWIDTH = 2 * RADIUS + 1  #").replace(
                "float32(2 * RADIUS + 1)", "float32(WIDTH)"
            ),
            "your kernel also reads WIDTH = 3",
        ),
    ],
}
CASES = [(name, source, words) for name, cases in MISTAKES.items() for source, words in cases]


@pytest.mark.parametrize(("name", "source", "words"), CASES, ids=[c[2][:30] for c in CASES])
def test_a_mistake_fails_with_words_that_name_it(name, source, words, capsys) -> None:
    assert passes(name, notebook_cell(source, name)) is False
    said = capsys.readouterr().out
    assert said.startswith(f"✗ {name}:") and words in said, said


HALF_THREADS = """
from numba import cuda, int32
BLOCK = 64
@cuda.jit
def block_scan(values, out, totals):
    s = cuda.shared.array(BLOCK, int32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * cuda.blockDim.x + t
    own = values[i] if i < values.shape[0] else 0
    s[t] = own
    cuda.syncthreads()
    d, active = 1, BLOCK // 2
    while active > 0:  # thread t < active combines the pair it is given
        if t < active:
            s[d * (2 * t + 2) - 1] += s[d * (2 * t + 1) - 1]
        cuda.syncthreads()
        d *= 2
        active //= 2
    if t == 0:
        totals[cuda.blockIdx.x] = s[BLOCK - 1]
        s[BLOCK - 1] = 0
    cuda.syncthreads()
    active = 1
    while active < BLOCK:
        d //= 2
        if t < active:
            a, b = d * (2 * t + 1) - 1, d * (2 * t + 2) - 1
            left = s[a]
            s[a] = s[b]
            s[b] += left
        cuda.syncthreads()
        active *= 2
    if i < values.shape[0]:
        out[i] = s[t] + own
"""

WARP_SHUFFLE_SCAN = """
from numba import cuda, int32
BLOCK = 64
@cuda.jit
def block_scan(values, out, totals):
    warp_sums = cuda.shared.array(32, int32)
    t = cuda.threadIdx.x
    lane, warp, i = t % 32, t // 32, cuda.blockIdx.x * BLOCK + t
    v = values[i] if i < values.shape[0] else 0
    d = 1
    while d < 32:  # each warp scans its 32 values in registers
        other = cuda.shfl_up_sync(0xFFFFFFFF, v, d)
        if lane >= d:
            v += other
        d *= 2
    if lane == 31:
        warp_sums[warp] = v
    cuda.syncthreads()
    if warp == 0:  # the first warp scans the warps' sums
        w = warp_sums[lane] if lane < BLOCK // 32 else 0
        d = 1
        while d < 32:
            other = cuda.shfl_up_sync(0xFFFFFFFF, w, d)
            if lane >= d:
                w += other
            d *= 2
        if lane < BLOCK // 32:
            warp_sums[lane] = w
    cuda.syncthreads()
    if warp > 0:
        v += warp_sums[warp - 1]
    if i < values.shape[0]:
        out[i] = v
    if t == BLOCK - 1:
        totals[cuda.blockIdx.x] = v
"""

ALTERNATIVES = [
    ("block_scan", DOUBLING, "the doubling (Hillis-Steele) scan"),
    ("block_scan", HALF_THREADS, "the work-efficient scan"),
    ("block_scan", SCAN.replace("BLOCK = 64", "BLOCK = 256"), "the work-efficient scan"),
    (
        "add_offsets",
        ADD.replace("i = cuda.grid(1)", "i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x"),
        "give numpy.cumsum",
    ),
    (
        "stencil_shared",
        STENCIL.replace(
            "        right = i + BLOCK\n"
            "        tile[t + BLOCK + RADIUS] = x[right] if right < n else float32(0)\n",
            "    if t >= BLOCK - RADIUS:  # the last RADIUS threads load the right halo\n"
            "        right = i + RADIUS\n"
            "        tile[t + 2 * RADIUS] = x[right] if right < n else float32(0)\n",
        ),
        "right means with RADIUS = 1 and 2",
    ),
    ("block_scan", WARP_SHUFFLE_SCAN, "a warp-shuffle scan"),
    # a size named once, as a GPU wants it: SIZE follows BLOCK when the check recompiles it
    (
        "block_scan",
        SCAN.replace("BLOCK = 64  #", "BLOCK = 64\nSIZE = BLOCK + 1  #").replace(
            "array(BLOCK, int32)", "array(SIZE, int32)"
        ),
        "the work-efficient scan",
    ),
    (
        "stencil_shared",
        STENCIL.replace("RADIUS = 1  #", "RADIUS = 2  #")
        .replace("x[i] if i < n else float32(0)", "x[min(i, n - 1)]")
        .replace("x[left] if left >= 0 else float32(0)", "x[max(left, 0)]")
        .replace("x[right] if right < n else float32(0)", "x[min(right, n - 1)]"),
        "right means with RADIUS = 2 and 3",
    ),
    # the template's border reads x: at RADIUS 5, x[96] is border, tile and halo (3 reads)
    (
        "stencil_shared",
        STENCIL.replace("RADIUS = 1  #", "RADIUS = 4  #").replace(_BORDER, "out[i] = x[i]"),
        "right means with RADIUS = 4 and 5",
    ),
]


@pytest.mark.parametrize(
    ("name", "source", "words"), ALTERNATIVES, ids=[a[2] for a in ALTERNATIVES]
)
def test_a_correct_alternative_passes(name, source, words, capsys) -> None:
    assert passes(name, notebook_cell(source, name)) is True, capsys.readouterr().out
    assert words in capsys.readouterr().out


# --- the checks' real-GPU branches: run on a GPU node (pytest -m gpu) -------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["block_scan", "add_offsets", "stencil_shared"])
def test_on_a_gpu_the_compiled_kernel_runs_too(name: str, capsys) -> None:
    """On a GPU each check also launches the compiled kernel with its own BLOCK on a length no
    block divides (outputs, and the stencil's input, inside guard bands): the model answer
    passes there, and a kernel that is right only for some block sizes fails."""
    from demos.checks._harness import on_gpu

    assert on_gpu(), "a GPU, but Numba runs the simulator"
    source = answer_source(name)
    assert passes(name, notebook_cell(source, name)) is True, capsys.readouterr().out
    capsys.readouterr()
    fixed = {
        # right for some block sizes only: the GPU's launch uses the kernel's own
        "block_scan": SCAN.replace("BLOCK = 64", "BLOCK = 256").replace(
            "if t == BLOCK - 1:", "if t == min(BLOCK, 128) - 1:"
        ),
        "add_offsets": ADD.replace("b = cuda.blockIdx.x", "b = i // 32"),
        "stencil_shared": STENCIL.replace("right = i + BLOCK", "right = i + 32"),
    }[name]
    assert passes(name, notebook_cell(fixed, name)) is False
    said = capsys.readouterr().out
    assert said.startswith(f"✗ {name}:"), said
