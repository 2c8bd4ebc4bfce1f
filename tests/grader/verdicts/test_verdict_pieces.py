"""The pieces of out-of-kernel verdicts, one by one: the wire, kernel checking, the runner."""

from __future__ import annotations

import json

import numpy as np
import pytest

from demos.grading import wire
from grader.verdicts import api
from grader.verdicts.hidden_tests import split_hidden
from grader.verdicts.kernel_runner import KernelRunner
from grader.verdicts.kernel_source import NotAKernel, kernel_definition
from grader.verdicts.originality import fingerprint, matches_course_code
from grader.verdicts.student_source import defined_names, is_kernel_definition, reads_name

SAXPY = """\
@cuda.jit
def saxpy(a, x, y, out):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < out.shape[0]:
        out[i] = a * x[i] + y[i]
"""


# --- the wire ---------------------------------------------------------------------------
def test_plain_data_crosses_the_wire_unchanged() -> None:
    value = {
        "a": [1, 2.5, "x", None, True],
        "t": (1, 2),
        "arr": np.arange(6.0).reshape(2, 3),
        "s": np.float32(1.5),
        "nan": float("nan"),
    }
    back = wire.loads(wire.dumps(value))
    assert back["a"] == [1, 2.5, "x", None, True] and back["t"] == (1, 2)
    assert back["arr"].dtype == np.float64 and back["arr"].shape == (2, 3)
    assert isinstance(back["s"], np.float32) and np.isnan(back["nan"])


def test_objects_that_are_not_data_arrive_opaque_and_equal_nothing() -> None:
    class Always:
        def __eq__(self, other: object) -> bool:
            return True

    class Zero(float):
        def __sub__(self, other: object) -> float:
            return 0.0

    back = wire.loads(wire.dumps({"always": Always(), "zero": Zero(3.0)}))
    assert isinstance(back["always"], wire.Opaque) and back["always"] != back["always"]
    assert isinstance(back["zero"], wire.Opaque)
    assert isinstance(wire.loads(wire.dumps({"$make": "forged"})), wire.Opaque)


@pytest.mark.parametrize(
    "text",
    [
        "not json",
        json.dumps({"$ndarray": "AAAA", "$kind": "host"}),
        json.dumps({"$ndarray": "", "$kind": "pickle"}),
        json.dumps({"$float": "__import__('os')"}),
        "[" * 100 + "]" * 100,
    ],
)
def test_malformed_replies_are_refused(text: str) -> None:
    with pytest.raises(wire.WireError):
        wire.loads(text)


def test_object_arrays_never_cross() -> None:
    import base64
    import io

    buffer = io.BytesIO()
    np.save(buffer, np.array([object()], dtype=object), allow_pickle=True)
    text = json.dumps({"$ndarray": base64.b64encode(buffer.getvalue()).decode(), "$kind": "host"})
    with pytest.raises(wire.WireError):
        wire.loads(text)


# --- kernels the grader may run ------------------------------------------------------------
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


def test_an_unfinished_kernel_is_a_kernel_that_raises() -> None:
    stub = '@cuda.jit\ndef k(x):\n    raise NotImplementedError("not done yet")\n'
    kernel = kernel_definition("k", [stub])
    with KernelRunner() as runner:
        runner.request(op="define", source=kernel.as_plain())
        reply = runner.request(op="launch", kernel="k", grid=[1], block=[2], args=[np.zeros(2)])
    assert reply["error"].startswith("NotImplementedError")
    with pytest.raises(NotAKernel, match="built-in error"):
        kernel_definition("k", ["@cuda.jit\ndef k(x):\n    raise SystemExit\n"])


def test_a_kernel_rebound_later_is_not_a_kernel() -> None:
    with pytest.raises(NotAKernel):
        kernel_definition("saxpy", [SAXPY, "saxpy = other"])
    with pytest.raises(NotAKernel, match="decorated"):
        kernel_definition("f", ["def f(x):\n    return x\n"])


def test_the_runner_runs_a_checked_kernel_in_the_simulator() -> None:
    out = api.GuardedOutput((5,), np.float32, pad=4)
    with KernelRunner() as runner:
        assert runner.request(
            op="define", source=kernel_definition("saxpy", [SAXPY]).as_plain()
        ) == {"ok": True}
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


def test_a_kernel_that_never_ends_is_stopped() -> None:
    endless = "@cuda.jit\ndef spin(x):\n    while True:\n        x[0] = 1\n"
    with KernelRunner(timeout=3) as runner:
        runner.request(op="define", source=kernel_definition("spin", [endless]).as_plain())
        with pytest.raises(RuntimeError, match="did not finish"):
            runner.request(op="launch", kernel="spin", grid=[1], block=[1], args=[np.zeros(1)])


# --- reading the student's source -------------------------------------------------------------
def test_hidden_part_is_split_from_the_visible_one() -> None:
    visible, hidden = split_hidden(
        "a = 1\n### BEGIN HIDDEN TESTS\nb = 2\n### END HIDDEN TESTS\nc = 3"
    )
    assert visible == "a = 1\nc = 3" and hidden == "b = 2"
    assert split_hidden("a = 1") == ("a = 1", None)


def test_names_and_references_come_from_the_source() -> None:
    sources = ["import numpy as np\ndef fast(xp):\n    return slow(xp)\n", "X = 1"]
    assert {"np", "fast", "X"} <= defined_names(sources)
    assert reads_name(sources, "fast", "slow") and not reads_name(sources, "fast", "other")


def test_a_renamed_copy_of_course_code_is_recognised() -> None:
    from pathlib import Path

    import demos

    answer = (
        Path(demos.__file__).parent / "checks" / "answers" / "histogram_shared.py"
    ).read_text()
    renamed = answer.replace("local", "mine").replace("values", "vals")
    assert fingerprint(renamed) == fingerprint(answer)
    assert matches_course_code(renamed)
    assert not matches_course_code(SAXPY)


def test_checks_accept_only_real_truth_values() -> None:
    api.check(True, "x")
    api.check(np.bool_(True), "x")
    for fake in (1, "yes", [1], wire.Opaque("Always")):
        with pytest.raises(api.GradingFailure):
            api.check(fake, "x")
    with pytest.raises(api.GradingFailure, match="not an array of numbers"):
        api.assert_close(wire.Opaque("Always"), np.zeros(3), "the result")


def test_a_renamed_copy_of_a_course_function_is_flagged_whatever_the_verdict() -> None:
    from pathlib import Path

    import demos
    from grader.verdicts.context import Submission
    from grader.verdicts.hidden_tests import judge

    answer = (
        Path(demos.__file__).parent / "checks" / "answers" / "nearest_neighbour.py"
    ).read_text()
    copied = answer.replace("nearest_neighbour", "closest").replace("x2", "norms")
    submission = Submission(
        ask_kernel=lambda request: {"defined": True, "course_code": False},
        student_sources=[copied],
        given_sources=[],
        runner=KernelRunner(),
    )
    verdict = judge("grading.check(not grading.is_course_code(closest), 'own')", "t", submission)
    assert verdict.passed and "closest has the structure of code the course ships" in verdict.flag
    honest = Submission(
        ask_kernel=lambda request: {"defined": True, "course_code": False},
        student_sources=["def closest(x):\n    return x.argmin(axis=1)\n"],
        given_sources=[],
        runner=KernelRunner(),
    )
    verdict = judge("grading.check(not grading.is_course_code(closest), 'own')", "t", honest)
    assert verdict.passed and verdict.flag is None
