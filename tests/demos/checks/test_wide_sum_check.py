"""Chapter 4b's sum with more bytes in flight: right answers pass, each usual mistake is named.

Why: the lesson is *how* the sum reads, not only its total. In the simulator a
kernel that adds each value before loading the next, drops the last part-filled
group or lets many threads add into one block sum still often gets the right
number; the check watches the order of each thread's loads and uses, the reads
of every value and the writes of every block sum. These tests hold it to naming
each fault in words the student can act on, and to accepting a correct kernel
written differently from the model answer.
"""

from __future__ import annotations

import numpy as np
import pytest

import demos.patterns  # noqa: F401  (the simulator's own shared buffers and shuffles)
from demos.checks import answer_source, inflight_checks, passes
from demos.patterns import inflight, loadtrace
from helpers import notebook_cell

MODEL = answer_source("wide_sum")
LOOP = """    for start in range(cuda.grid(1), n, LOADS * stride):
        for k in range(LOADS):  # LOADS loads, none waiting for another
            i = start + k * stride  # a warp's k-th loads are neighbours: coalesced
            got[k] = values[i] if i < n else float32(0)  # the last group may pass the end
        for k in range(LOADS):  # only now use them
            acc += got[k]
"""
assert LOOP in MODEL


def _kernel(source: str):
    return notebook_cell(source, "wide_sum")


def _verdict(source: str, capsys) -> tuple[bool, str]:
    ok = passes("wide_sum", _kernel(source))
    return ok, capsys.readouterr().out


def test_the_model_answer_passes_and_counts_its_loads_in_flight(capsys) -> None:
    ok, said = _verdict(MODEL, capsys)
    assert ok, said
    assert "LOADS = 1, 3, 4" in said and "up to 4 loads in flight" in said


def test_the_kernel_the_benchmark_measures_passes_the_students_check(capsys) -> None:
    """demos.patterns.inflight.wide_sum is the model answer as the library keeps it."""
    assert passes("wide_sum", inflight.wide_sum), capsys.readouterr().out
    assert inflight.loads_of(inflight.wide_sum) == inflight.LOADS == 4


MISTAKES = {
    "the tail dropped": (
        """    for start in range(cuda.grid(1), n - (LOADS - 1) * stride, LOADS * stride):
        for k in range(LOADS):
            got[k] = values[start + k * stride]
        for k in range(LOADS):
            acc += got[k]
""",
        "was never read",
    ),
    "a group read again by the next": (
        """    for start in range(cuda.grid(1), n, stride):
        for k in range(LOADS):
            i = start + k * stride
            got[k] = values[i] if i < n else float32(0)
        for k in range(LOADS):
            acc += got[k]
""",
        "the next starts at i + LOADS * stride",
    ),
    "the loads in one dependent chain": (
        """    for start in range(cuda.grid(1), n, LOADS * stride):
        for k in range(LOADS):
            i = start + k * stride
            if i < n:
                acc += values[i]
""",
        "one dependent chain",
    ),
    "a run of LOADS neighbours per thread": (
        """    for start in range(cuda.grid(1) * LOADS, n, LOADS * stride):
        for k in range(LOADS):
            i = start + k
            got[k] = values[i] if i < n else float32(0)
        for k in range(LOADS):
            acc += got[k]
""",
        "lie 4 elements apart",
    ),
    "past the end without a guard": (
        """    for start in range(cuda.grid(1), n, LOADS * stride):
        for k in range(LOADS):
            got[k] = values[start + k * stride]
        for k in range(LOADS):
            acc += got[k]
""",
        "load i + k * stride only where it is < values.shape[0]",
    ),
}


@pytest.mark.parametrize("mistake", sorted(MISTAKES))
def test_each_mistake_in_the_loop_gets_its_own_sentence(mistake: str, capsys) -> None:
    loop, words = MISTAKES[mistake]
    ok, said = _verdict(MODEL.replace(LOOP, loop), capsys)
    assert not ok and said.startswith("✗ wide_sum:"), said
    assert words in said, said


def test_many_threads_adding_into_one_block_sum_is_named_a_race(capsys) -> None:
    combine = MODEL.index("    acc = warp_reduce_sum(acc)")
    racy = MODEL[:combine] + "    partial[cuda.blockIdx.x] += acc  # every thread\n"
    ok, said = _verdict(racy, capsys)
    assert not ok and "written 64 times" in said and "let one thread write" in said, said


def test_warps_sharing_one_shared_slot_is_named_a_race(capsys) -> None:
    ok, said = _verdict(MODEL.replace("shared[warp] = acc", "shared[0] += acc"), capsys)
    assert not ok and "shared[warp]" in said, said


def test_a_kernel_that_ignores_loads_is_told_so(capsys) -> None:
    fixed = OTHER_CORRECT.replace(
        """        for k in range(LOADS):
            got[k] = values[i + k * stride]
        for k in range(LOADS):
            total += got[k]""",
        """        a = values[i]
        b = values[i + stride]
        total += a + b""",
    )
    ok, said = _verdict(fixed, capsys)
    assert not ok and "LOADS = 1" in said and "passed with your own LOADS = 2" in said, said


def test_a_kernel_without_a_loads_constant_is_told_to_name_one(capsys) -> None:
    ok, said = _verdict(MODEL.replace("LOADS = 4", "WIDTH = 4").replace("LOADS", "4"), capsys)
    assert not ok and "reads no constant LOADS" in said, said


OTHER_CORRECT = """
from numba import cuda, float32

LOADS = 2


@cuda.jit
def wide_sum(values, partial):
    tree = cuda.shared.array(1024, float32)  # a tree over the block, not warp shuffles
    t = cuda.threadIdx.x
    stride = cuda.gridsize(1)
    n = values.shape[0]
    i = cuda.grid(1)
    total = float32(0)
    got = cuda.local.array(LOADS, float32)
    while i + (LOADS - 1) * stride < n:  # whole groups: no test in the loads
        for k in range(LOADS):
            got[k] = values[i + k * stride]
        for k in range(LOADS):
            total += got[k]
        i += LOADS * stride
    while i < n:  # the rest, one at a time
        total += values[i]
        i += stride
    tree[t] = total
    cuda.syncthreads()
    step = cuda.blockDim.x // 2
    while step > 0:
        if t < step:
            tree[t] += tree[t + step]
        cuda.syncthreads()
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = tree[0]
"""


def test_a_differently_written_correct_kernel_passes(capsys) -> None:
    ok, said = _verdict(OTHER_CORRECT, capsys)
    assert ok, said
    assert "up to 2 loads in flight" in said


def test_the_stub_loop_keeps_one_load_in_flight_and_the_model_loads(rng) -> None:
    values = rng.random(600).astype(np.float32)
    model = _kernel(MODEL)
    plain = _kernel(MISTAKES["the loads in one dependent chain"][0].join(MODEL.split(LOOP)))
    for loads in (2, 4):
        counted = loadtrace.wide_sum_report(inflight.with_loads(model, loads), values, 2, 64)
        chained = loadtrace.wide_sum_report(inflight.with_loads(plain, loads), values, 2, 64)
        assert counted["loads_in_flight"] == loads and chained["loads_in_flight"] == 1
        assert counted["lane_gap"] == 1 and (counted["reads"] == 1).all()
        assert np.isclose(counted["partial"].sum(), values.astype(np.float64).sum(), rtol=1e-5)


def test_with_loads_refuses_what_it_cannot_compile() -> None:
    with pytest.raises(ValueError, match="from 1 to 64"):
        inflight.with_loads(_kernel(MODEL), 0)
    with pytest.raises(ValueError, match="no module-level constant LOADS"):
        inflight.with_loads(_kernel(OTHER_CORRECT.replace("LOADS", "WIDTH")), 2)
    with pytest.raises(ValueError, match="multiple of 32"):
        inflight.blocks_for(100, 132, 2048)
    assert inflight.blocks_for(256, 132, 2048) == 8 * 132


@pytest.mark.gpu
def test_on_a_gpu_the_compiled_kernel_is_checked_and_a_wrong_total_named() -> None:
    assert inflight_checks.on_gpu(), "a GPU, but Numba runs the simulator"
    assert passes("wide_sum", _kernel(MODEL))
    first_warp_only = MODEL.replace("acc = shared[lane] if", "acc = shared[0] if")
    with pytest.raises(inflight_checks.CheckFailed, match="the block sums add up to"):
        inflight_checks._on_the_gpu(_kernel(first_warp_only))
