"""One warp reduction for the whole course (issue 38, "one place per kernel").

Why: the warp's sum by shuffles was written out five times (two model answers, the
chapter's kernels, the bytes-in-flight sum, the tests), so a fix reached some of them.
Now each calls :func:`demos.patterns.warp_reduce.warp_reduce_sum`; these tests hold
every user to it, show that the simulator runs it as Python also where it is a
compiled device function (a GPU machine: the checks count accesses in the simulator
there too), and that a model answer that calls it is still printed whole.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

import demos.patterns  # noqa: F401  (the simulator's own shared buffers and shuffles)
from demos.checks import course_version, show_answer
from demos.patterns import inflight, kernels, warp_reduce
from demos.patterns.simulator import python_function, simulated
from helpers import notebook_cell

USERS = {
    "answer warp_sum": lambda: course_version("warp_sum"),
    "answer wide_sum": lambda: course_version("wide_sum"),
    "kernels.warp_sum_kernel": lambda: kernels.warp_sum_kernel("float32"),
    "inflight.wide_sum": lambda: inflight.wide_sum,
}


def test_every_warp_reduction_of_the_course_calls_the_one_function() -> None:
    for name, kernel in USERS.items():
        code = python_function(kernel()).__code__
        assert "warp_reduce_sum" in code.co_names, name
        assert "shfl_down_sync" not in code.co_names, f"{name} writes its own shuffles"


class CompiledDeviceFunction:
    """What ``cuda.jit(device=True)`` gives on a GPU machine: callable only from a kernel."""

    targetoptions = {"device": True}

    def __init__(self, fn) -> None:
        self.py_func = fn

    def __call__(self, *args):
        raise TypeError("a device function cannot be called from Python")


KERNEL = """
from numba import float32
@cuda.jit
def total(values, out):
    lane = cuda.threadIdx.x
    acc = reduce(values[lane])
    if lane == 0:
        out[0] = acc
"""


def test_the_simulator_runs_a_compiled_device_function_as_python() -> None:
    kernel = notebook_cell(KERNEL, "total")
    compiled = CompiledDeviceFunction(python_function(warp_reduce.warp_reduce_sum))
    python_function(kernel).__globals__["reduce"] = compiled
    values = np.arange(32, dtype=np.float32)
    out = np.zeros(1, np.float32)
    simulated(kernel)[1, 32](values, out)
    cuda.synchronize()
    assert out[0] == values.sum()
    assert python_function(kernel).__globals__["reduce"] is compiled  # the kernel is untouched


def test_a_model_answer_is_shown_with_the_shared_function(capsys) -> None:
    show_answer("warp_sum")
    shown = capsys.readouterr().out
    assert "def warp_sum(" in shown and "demos/patterns/warp_reduce.py" in shown
    assert "cuda.shfl_down_sync(FULL_MASK, value, offset)" in shown
    show_answer("row_norms")  # imports a course helper, not a shared kernel: printed alone
    assert "# ---" not in capsys.readouterr().out
