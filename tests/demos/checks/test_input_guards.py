"""Kernels that read past the end of an input are caught on a GPU too (issue 37, item 1).

Why: in the simulator a read past the end of an array raises IndexError, but a
GPU raises nothing: the read finds whatever lies after the array, often zeros
from the allocation's rounding, and a sum that adds zeros is right. An H100 run
of the chapters' checks accepted an unguarded ``add_to_kernel`` that way. So
every check hands a kernel its inputs inside a band of NaN, which a stray read
carries into the result. These tests run kernels *as a GPU would*: a stand-in
launch that reads past the end of an array from the memory around it (zeros
beyond the allocation), so that they hold on a machine without a GPU. They also
check that the simulator's shared arrays, static and dynamic, start as garbage.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from numba import cuda

import demos.patterns  # noqa: F401  (the simulator's own shared buffers, shuffles and locals)
from demos.checks import course_version, inflight_checks, passes, pattern_checks
from demos.patterns.simulator import python_function, simulated
from helpers import notebook_cell


def _memory(array) -> tuple[np.ndarray, np.ndarray]:
    """(the array's elements, the whole allocation they lie in), as NumPy arrays."""
    view = np.asarray(getattr(array, "_ary", array))
    root = view
    while isinstance(root.base, np.ndarray):
        root = root.base
    return view, root


def read_like_a_gpu(array, index: tuple[int, ...]) -> float:
    """``array[index]`` as a GPU reads it: past the end, the allocation's next element, or zero
    beyond the allocation (where a small array's rounding usually leaves zeros)."""
    view, root = _memory(array)
    assert root.flags.c_contiguous
    start = view.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    flat = (start + sum(i * s for i, s in zip(index, view.strides, strict=True))) // view.itemsize
    return float(root.reshape(-1)[flat]) if 0 <= flat < root.size else 0.0


def _inside_nan(array) -> bool:
    """Whether the array lies in a larger allocation whose every other element is NaN."""
    view, root = _memory(array)
    return root.size > view.size and np.isnan(root).sum() == root.size - view.size


class SpyKernel:
    """The course's kernel, noting the arrays each launch of the check hands it."""

    def __init__(self, name: str) -> None:
        self.kernel = course_version(name)
        self.py_func = python_function(self.kernel)
        self.inputs: list = []

    def __getitem__(self, config):
        def run(*args):
            self.inputs.extend(args[:-1])  # every argument but the output
            self.kernel[config](*args)

        return run


@pytest.mark.parametrize(
    "name",
    [
        "naive_distance_kernel",
        "coalesced_distance_kernel",
        "tiled_distance_kernel",
        "block_sum_kernel",
    ],
)
def test_chapter_4_checks_hand_kernels_their_inputs_inside_nan(name, capsys) -> None:
    spy = SpyKernel(name)
    assert passes(name, spy), capsys.readouterr().out
    assert spy.inputs and all(_inside_nan(a) for a in spy.inputs)


class UnguardedOnAGpu:
    """A kernel whose loads have no bounds guard, run as a GPU runs it; *emulate(config, args)*
    computes its result with :func:`read_like_a_gpu`. Its Python source (for the checks' runs in
    the simulator) is the course's answer."""

    def __init__(self, name: str, emulate) -> None:
        self.py_func = python_function(course_version(name))
        self.emulate = emulate

    def __getitem__(self, config):
        return lambda *args: self.emulate(config, *args)


def _block_sum(config, values, partial) -> None:
    blocks, threads = config[0], config[1]
    for b in range(blocks):  # cache[t] = values[i], with no `if i < n`
        partial[b] = sum(read_like_a_gpu(values, (b * threads + t,)) for t in range(threads))


def test_block_sum_with_an_unguarded_load_is_refused_as_a_gpu_runs_it(capsys) -> None:
    ok = passes("block_sum_kernel", UnguardedOnAGpu("block_sum_kernel", _block_sum))
    said = capsys.readouterr().out
    assert not ok and "read past the end of an input" in said, said


def _wide_sum(config, values, partial) -> None:
    blocks, threads = config[0], config[1]
    stride, loads, n = blocks * threads, 4, values.shape[0]
    reads = math.ceil(n / (loads * stride)) * loads * stride  # every group whole: no `if i < n`
    view, _ = _memory(values)
    total = float(view.astype(np.float64).sum())
    total += sum(read_like_a_gpu(values, (i,)) for i in range(n, reads))
    partial[0] = total
    for b in range(1, partial.shape[0]):
        partial[b] = 0.0


def _matmul(config, a, b, c) -> None:
    tile = config[1][0]
    inner = math.ceil(a.shape[1] / tile) * tile  # whole tiles: no guard on k
    n, m = c.shape
    wide_a = np.array([[read_like_a_gpu(a, (i, k)) for k in range(inner)] for i in range(n)])
    tall_b = np.array([[read_like_a_gpu(b, (k, j)) for j in range(m)] for k in range(inner)])
    _memory(c)[0][...] = wide_a @ tall_b  # the output's own elements, in place


@pytest.mark.parametrize(
    ("name", "module", "emulate"),
    [("wide_sum", inflight_checks, _wide_sum), ("tiled_matmul", pattern_checks, _matmul)],
)
def test_the_gpu_runs_of_4b_refuse_unguarded_loads(name, module, emulate, monkeypatch, capsys):
    """The checks' own GPU launches (large sizes, compiled kernel) with loads past the end."""
    monkeypatch.setattr(module, "on_gpu", lambda: True)
    ok = passes(name, UnguardedOnAGpu(name, emulate))
    said = capsys.readouterr().out
    assert not ok and ("nan" in said.lower()), said


def test_the_gpu_stand_ins_accept_the_guarded_reads_of_a_right_answer(capsys) -> None:
    """The emulation is fair: a block sum that reads only inside its input passes."""

    def guarded(config, values, partial):
        blocks, threads = config[0], config[1]
        n = values.shape[0]
        for b in range(blocks):
            idx = [b * threads + t for t in range(threads)]
            partial[b] = sum(read_like_a_gpu(values, (i,)) for i in idx if i < n)

    assert passes("block_sum_kernel", UnguardedOnAGpu("block_sum_kernel", guarded))


PEEK_SHARED = """
from numba import cuda, float32, int32
@cuda.jit
def peek(out):
    f = cuda.shared.array(4, float32)
    i = cuda.shared.array(4, int32)
    d = cuda.shared.array(0, float32)
    out[0] = f[1]
    out[1] = i[1]
    out[2] = d[cuda.blockIdx.x]
    d[cuda.blockIdx.x + 1] = 1.0  # the next block must not see this
    out[3 + cuda.blockIdx.x] = d[cuda.blockIdx.x + 1]
"""


def test_the_simulator_fills_shared_arrays_as_garbage_static_and_dynamic() -> None:
    """An unset shared element reads NaN (floats) or 0x5A5A, also in dynamic shared memory,
    which a GPU does not carry from one block to the next."""
    out = np.zeros(5)
    simulated(notebook_cell(PEEK_SHARED, "peek"))[2, 1, 0, 64](out)
    cuda.synchronize()
    assert np.isnan(out[0]) and out[1] == 0x5A5A and np.isnan(out[2])
    assert out[3] == 1.0 and out[4] == 1.0
