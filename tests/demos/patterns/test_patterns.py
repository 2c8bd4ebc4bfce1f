"""Chapter 4b's kernels and the counted checks that grade them.

The kernels must be right (against NumPy), and the counting must tell the
patterns apart: a global-atomic histogram makes one atomic per value, the
privatised one at most one per bin and block; a tree sum uses a barrier per
step, the shuffle sum almost none. The chapter's model answers must pass its
checks and the stubs fail them. Runs in the simulator here, on the GPU there.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import demos.patterns  # noqa: F401  (adds warp shuffles to the simulator)
from demos import grading, hardware
from demos.patterns import kernels, reports
from helpers import ROOT


@pytest.mark.parametrize("method", ["global_atomic", "shared"])
def test_histogram_matches_bincount(method: str, rng: np.random.Generator) -> None:
    values = rng.integers(0, 16, 700).astype(np.int32)
    np.testing.assert_array_equal(
        kernels.histogram(values, 16, method, max_blocks=3), np.bincount(values, minlength=16)
    )


@pytest.mark.parametrize("method", kernels.SUM_METHODS)
def test_sum_matches_numpy(method: str, rng: np.random.Generator) -> None:
    x = rng.random(1500).astype(np.float32)
    assert kernels.reduce_sum(x, method, max_blocks=3) == pytest.approx(
        float(x.sum(dtype=np.float64)), rel=1e-5
    )


def test_bad_input_gets_one_clear_sentence() -> None:
    with pytest.raises(ValueError, match="unknown histogram method"):
        kernels.histogram(np.zeros(4, np.int32), 4, "fast")
    with pytest.raises(TypeError, match="must be integers"):
        kernels.histogram(np.zeros(4), 4)
    with pytest.raises(ValueError, match="1-D"):
        kernels.reduce_sum(np.zeros((2, 2), np.float32))
    with pytest.raises(TypeError, match="float32 or float64"):
        kernels.reduce_sum(np.zeros(3, np.int64))


def test_counting_tells_the_histograms_apart(rng: np.random.Generator) -> None:
    values = rng.integers(0, 8, 300).astype(np.int32)
    atomic = reports.histogram_report(
        kernels.histogram_global_atomic, values, 8, blocks=2, threads=32
    )
    shared = reports.histogram_report(
        kernels.histogram_shared_kernel(8), values, 8, blocks=2, threads=32
    )
    for report in (atomic, shared):
        np.testing.assert_array_equal(report["counts"], np.bincount(values, minlength=8))
        assert report["fewest_reads_of_a_value"] == report["most_reads_of_a_value"] == 1
        assert report["plain_writes_to_bins"] == 0
    assert atomic["atomics_on_bins"] == len(values) and atomic["shared_arrays"] == 0
    assert shared["most_atomics_per_bin_and_block"] == 1 and shared["atomics_on_bins"] <= 2 * 8
    assert shared["shared_arrays"] > 0


def test_counting_sees_plain_writes_of_the_racy_kernel(rng: np.random.Generator) -> None:
    values = rng.integers(0, 8, 100).astype(np.int32)
    report = reports.histogram_report(kernels.histogram_racy, values, 8, blocks=1, threads=32)
    assert report["plain_writes_to_bins"] == len(values) and report["atomics_on_bins"] == 0


def test_counting_tells_the_sums_apart(rng: np.random.Generator) -> None:
    x = rng.random(900).astype(np.float32)
    tree = reports.block_sum_report(
        kernels.tree_sum_kernel("float32"), x, blocks=2, threads=kernels.BLOCK
    )
    warp = reports.block_sum_report(
        kernels.warp_sum_kernel("float32"), x, blocks=2, threads=kernels.BLOCK
    )
    expected = reports.expected_block_sums(x, 2, kernels.BLOCK)
    for report in (tree, warp):
        np.testing.assert_allclose(report["partial"], expected, rtol=1e-5)
        assert report["most_reads_of_a_value"] == 1 and report["writes_to_partial"] == 2
    assert tree["barriers_per_thread"] == math.log2(kernels.BLOCK) + 1
    assert warp["barriers_per_thread"] == 1


def test_a_value_read_twice_is_seen(rng: np.random.Generator) -> None:
    @cuda.jit
    def reads_twice(values, partial):
        i = cuda.grid(1)
        if i < values.shape[0]:
            cuda.atomic.add(partial, 0, values[i] + values[i] * 0)

    report = reports.block_sum_report(
        reads_twice, rng.random(40).astype(np.float32), blocks=1, threads=64
    )
    assert report["most_reads_of_a_value"] == 2 and report["atomics"] == 40


def test_course_kernels_and_wrappers_are_recognised() -> None:
    assert grading.is_course_kernel(kernels.histogram_shared_kernel(16))
    assert grading.is_course_kernel(kernels.tree_sum_kernel("float32"))

    @cuda.jit
    def own(values, bins):
        for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
            cuda.atomic.add(bins, values[i], 1)

    assert not grading.is_course_kernel(own)

    def wrapper(v):
        return kernels.reduce_sum(v)

    assert grading.uses_course_code(wrapper)
    assert not grading.uses_course_code(lambda v: sum(v))


@pytest.mark.gpu
def test_bench_runs_quick_on_a_gpu(tmp_path: Path) -> None:
    from demos.patterns import bench

    results = bench.run(quick=True)
    assert all(r["correct"] for r in results["histogram"] if r["name"] != "racy")
    assert all(r.get("correct", True) for r in results["reduction"])
    assert hardware.cupy_available()


_COUNT_WITH_COMPILED_KERNELS = """
import json
import numpy as np
import demos
from demos import hardware
from demos.patterns import kernels, reports
assert not hardware.simulator_enabled()
values = np.random.default_rng(5).integers(0, 16, 300).astype(np.int32)
hist = reports.histogram_report(kernels.histogram_shared_kernel(16), values, 16, 2, 64)
sums = reports.block_sum_report(kernels.warp_sum_kernel("float32"), np.ones(500, np.float32), 2, 256)
print(json.dumps({"hist": {k: v for k, v in hist.items() if k != "counts"}, "counts": hist["counts"].tolist(),
                  "sums": sums["partial"].tolist(), "barriers": sums["barriers_per_thread"]}))
"""  # noqa: E501


@pytest.mark.nogpu
def test_counts_are_the_same_for_compiled_kernels(tmp_path: Path) -> None:
    """On a GPU grader kernels are compiled dispatchers: the checks simulate their source all the
    same.

    Run here with the simulator switched off (kernels are then real, uncompiled
    ``CUDADispatcher`` objects, as on a GPU), the counts must be the simulator's.
    """
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "0"}
    proc = subprocess.run(
        [sys.executable, "-c", _COUNT_WITH_COMPILED_KERNELS],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    compiled = json.loads(proc.stdout.strip().splitlines()[-1])
    values = np.random.default_rng(5).integers(0, 16, 300).astype(np.int32)
    hist = reports.histogram_report(kernels.histogram_shared_kernel(16), values, 16, 2, 64)
    sums = reports.block_sum_report(
        kernels.warp_sum_kernel("float32"), np.ones(500, np.float32), 2, 256
    )
    assert compiled["counts"] == hist["counts"].tolist()
    assert compiled["hist"] == {k: v for k, v in hist.items() if k != "counts"}
    assert (
        compiled["sums"] == sums["partial"].tolist()
        and compiled["barriers"] == sums["barriers_per_thread"]
    )


_REPORTS_ON_EXEC_KERNELS = """
import json, sys
import numpy as np
import demos
from demos.patterns import reports
assert "demos.grading" not in sys.modules, "demos.patterns.reports must not import demos.grading"
namespace = {"__name__": "student_submission"}
exec('''
from numba import cuda, float32, int32
@cuda.jit
def histogram_kernel(values, bins):
    local = cuda.shared.array(16, int32)
    t = cuda.threadIdx.x
    for b in range(t, 16, cuda.blockDim.x):
        local[b] = 0
    cuda.syncthreads()
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        local[values[i]] += 1
    cuda.syncthreads()
    for b in range(t, 16, cuda.blockDim.x):
        cuda.atomic.add(bins, b, local[b])
@cuda.jit
def block_sum_kernel(values, partial):
    shared = cuda.shared.array(64, float32)
    t = cuda.threadIdx.x
    acc = float32(0)
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        acc += values[i]
    shared[t] = acc
    cuda.syncthreads()
    step = 32
    while step > 0:
        if t < step:
            shared[t] += shared[t + step]
            cuda.syncthreads()
        step //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = shared[0]
''', namespace)
values = np.random.default_rng(0).integers(0, 16, 300).astype(np.int32)
x = np.random.default_rng(1).random(500).astype(np.float32)
hist = reports.histogram_report(namespace["histogram_kernel"], values, 16, blocks=3, threads=64)
sums = reports.block_sum_report(namespace["block_sum_kernel"], x, blocks=3, threads=64)
expected = reports.expected_block_sums(x, 3, 64)
plain = (int, float, np.ndarray)
print(json.dumps({
    "types": sorted({type(v).__name__ for r in (hist, sums) for v in r.values()}),
    "plain": all(isinstance(v, plain) for r in (hist, sums) for v in r.values()),
    "hist": {k: v for k, v in hist.items() if k != "counts"},
    "sums": {k: v for k, v in sums.items() if k != "partial"},
    "counts_right": bool((hist["counts"] == np.bincount(values, minlength=16)).all()),
    "sums_right": bool(np.allclose(sums["partial"], expected, rtol=1e-5)),
    "module": namespace["histogram_kernel"].py_func.__module__,
}))
"""


def test_reports_see_races_in_kernels_built_from_source_in_another_process() -> None:
    """As the trusted grader uses them: its own process, kernels exec'd from a student's source
    (their module is not ``demos``), plain data back; the racy histogram and the barrier inside
    ``if t < step:`` give right numbers in the simulator and are seen all the same."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _REPORTS_ON_EXEC_KERNELS],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["plain"], seen["types"]
    assert seen["module"] == "student_submission"
    assert seen["counts_right"] and seen["sums_right"]  # the simulator's numbers look fine...
    assert seen["hist"]["racy_shared_writes"] > 0  # ...but a GPU loses counts
    assert seen["hist"]["blocks_with_uneven_barriers"] == 0
    assert seen["sums"]["blocks_with_uneven_barriers"] == 3  # ...and a GPU hangs
    assert seen["sums"]["fewest_barriers_per_thread"] == 1
    assert seen["sums"]["most_barriers_per_thread"] == 7
    assert seen["hist"]["threads_launched"] == seen["sums"]["threads_launched"] == 192
