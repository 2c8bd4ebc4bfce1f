"""grader.verdicts.kernel_source and kernel_runner: which kernels the grader runs, and how."""

from __future__ import annotations

import numpy as np
import pytest

from grader.verdicts import api
from grader.verdicts.kernel_runner import KernelRunner
from grader.verdicts.kernel_source import NotAKernel, kernel_definition
from grader.verdicts.student_source import is_kernel_definition

SAXPY = """\
@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]
"""


def test_a_plain_kernel_is_accepted_with_its_device_functions_and_constants() -> None:
    sources = [
        "@cuda.jit(device=True)\ndef sq(v):\n    return v * v\n",
        "@cuda.jit\ndef k(x, out):\n    i = cuda.grid(1)\n"
        "    if i < x.size:\n        out[i] = sq(x[i]) + N\n",
    ]
    kernel = kernel_definition("k", sources, ["N = 3"])
    assert list(kernel.functions) == ["sq", "k"] and kernel.device == {"sq"}
    assert kernel.constants == {"N": 3}
    assert is_kernel_definition("k", sources) and not is_kernel_definition("N", sources)


@pytest.mark.parametrize(
    "body, reason",
    [
        ("    import os\n", "Import"),
        ("    x.__class__\n", "not allowed"),
        ("    open('/etc/passwd')\n", "cannot be called"),
        ("    f = lambda: 0\n", "Lambda"),
        ("    x.fill(0)\n", "not allowed"),
        ("    [i for i in range(3)]\n", "ListComp"),
        ("    getattr(x, 'shape')\n", "cannot be called"),
        ("    cuda.to_device(x)\n", "not allowed"),
        ("    np.save('f', x)\n", "not allowed"),
        ("    with cuda.defer_cleanup():\n        pass\n", "With"),
    ],
)
def test_anything_beyond_a_kernel_is_refused(body: str, reason: str) -> None:
    with pytest.raises(NotAKernel, match=reason):
        kernel_definition("k", ["@cuda.jit\ndef k(x, out):\n" + body])


def test_an_unfinished_kernel_is_a_kernel_that_raises(sandboxed_runner: KernelRunner) -> None:
    stub = '@cuda.jit\ndef k(x):\n    raise NotImplementedError("not done yet")\n'
    kernel = kernel_definition("k", [stub])
    runner = sandboxed_runner
    runner.define(kernel)
    reply = runner.request(op="launch", kernel="k", grid=[1], block=[2], args=[np.zeros(2)])
    assert reply["error"].startswith("NotImplementedError")
    with pytest.raises(NotAKernel, match="built-in error"):
        kernel_definition("k", ["@cuda.jit\ndef k(x):\n    raise SystemExit\n"])


def test_a_kernel_rebound_later_is_not_a_kernel() -> None:
    with pytest.raises(NotAKernel):
        kernel_definition("saxpy", [SAXPY, "saxpy = other"])
    with pytest.raises(NotAKernel, match="decorated"):
        kernel_definition("f", ["def f(x):\n    return x\n"])


def test_the_runner_runs_a_checked_kernel_in_the_simulator(
    sandboxed_runner: KernelRunner,
) -> None:
    out = api.GuardedOutput((5,), np.float32, pad=4)
    runner = sandboxed_runner
    assert runner.define(kernel_definition("saxpy", [SAXPY])) == {"ok": True}
    reply = runner.request(
        op="launch",
        kernel="saxpy",
        grid=[1, 1, 1],
        block=[8, 1, 1],
        args=[np.float32(2), np.ones(5, np.float32), np.arange(5, dtype=np.float32), out.inner],
    )
    buffer = reply["guarded"][0]
    assert np.array_equal(buffer[4:9], 2 + np.arange(5, dtype=np.float32))
    assert np.all(buffer[:4] == out.CANARY) and np.all(buffer[9:] == out.CANARY)


def test_a_kernel_that_never_ends_is_stopped(sandboxed_runner: KernelRunner) -> None:
    endless = "@cuda.jit\ndef spin(x):\n    while True:\n        x[0] = 1\n"
    runner = sandboxed_runner
    runner.timeout = 3
    runner.define(kernel_definition("spin", [endless]))
    with pytest.raises(RuntimeError, match="did not finish"):
        runner.request(op="launch", kernel="spin", grid=[1], block=[1], args=[np.zeros(1)])


def test_the_runner_refuses_to_start_outside_a_sandbox() -> None:
    with pytest.raises(RuntimeError, match="no sandbox"):
        KernelRunner().define(kernel_definition("saxpy", [SAXPY]))
