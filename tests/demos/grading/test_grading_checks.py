"""What the assignments' tests are built from (demos.grading), one piece at a time.

The stand-in for CuPy must fail NumPy-only code the way CuPy does, and the
watchers must see kernel launches, course code and forbidden helpers. The real
``nbgrader autograde`` runs are in tests/exercises/test_cheating.py and
tests/grader/verdicts/test_verdict_attacks.py; the hidden tests' side is in
tests/grader/verdicts/, the screening before grading in tests/grader/test_screen.py.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from numba import cuda

from demos import cupy_standin, grading

xp = cupy_standin.module


# --- the CuPy-like stand-in -------------------------------------------------------------
def test_standin_arrays_are_not_numpy_arrays() -> None:
    a = xp.asarray(np.arange(6.0).reshape(2, 3))
    assert not isinstance(a, np.ndarray) and isinstance(a, xp.ndarray)
    assert grading.get_array_module(a) is xp and grading.get_array_module(np.ones(2)) is np
    np.testing.assert_array_equal(a.get(), np.arange(6.0).reshape(2, 3))
    np.testing.assert_array_equal(grading.to_numpy(a.T), np.arange(6.0).reshape(2, 3).T)


def test_standin_refuses_implicit_conversion_like_cupy() -> None:
    a = xp.asarray(np.ones((2, 2)))
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(a)
    host = np.empty((2, 2))
    with pytest.raises(TypeError):
        host[:] = a
    with pytest.raises(TypeError, match="mixed"):
        a + np.ones((2, 2))


def test_numpy_functions_dispatch_to_the_standin_like_cupy() -> None:
    x = xp.asarray(np.arange(6.0).reshape(3, 2))
    norms = np.einsum("ij,ij->i", x, x)  # CuPy's __array_function__ does the same
    assert isinstance(norms, xp.ndarray)
    np.testing.assert_allclose(norms.get(), [1.0, 13.0, 41.0])
    assert isinstance(np.sin(x), xp.ndarray) and isinstance(x @ x.T, xp.ndarray)
    total = xp.sum(x)
    assert isinstance(total, xp.ndarray) and float(total) == 15.0  # 0-d, like CuPy
    out = xp.empty((3, 2), dtype=xp.result_type(x, x))
    out[0:2] = x[0:2]
    out[2] = np.array([7.0, 8.0])  # host data into a device array is a copy, as in CuPy
    np.testing.assert_array_equal(out.get()[2], [7.0, 8.0])


def test_numba_performance_warnings_are_silenced_once_a_test_asks_for_inputs() -> None:
    # not at import: the grader's own process imports demos.grading.wire
    code = (
        "import warnings, demos.grading\n"
        "demos.grading.rng('a visible test')\n"
        "from numba.core.errors import NumbaPerformanceWarning\n"
        "warnings.warn(NumbaPerformanceWarning("
        "'Grid size 1 will likely result in GPU under-utilization'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr == ""


# --- own work ------------------------------------------------------------------------------
@cuda.jit
def _fill(out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i] = i


def test_watch_records_launches_course_code_and_forbidden_calls() -> None:
    from demos import simt

    out = np.zeros(10)
    with grading.watch(forbidden=(np.array_split,)) as seen:
        _fill[2, 8](out)
        simt.blocks_for(10, 8)
        np.array_split(out, 3)
        np.concatenate([out, out])
    assert [(launch.kernel, launch.grid, launch.block) for launch in seen.launches] == [
        (_fill, (2, 1, 1), (8, 1, 1))
    ]
    assert seen.launches[0].threads == (16, 1, 1)
    assert "demos.simt.blocks_for" in seen.course_calls
    assert seen.forbidden_calls == ["array_split"]
    np.testing.assert_array_equal(out, np.arange(10))


def test_course_code_is_recognised() -> None:
    from demos import demo_numba_gpu, simt
    from demos.distance import generic

    assert grading.is_course_code(simt.blocks_for)
    assert grading.is_course_code(generic.distance_matrix)
    assert grading.is_course_code(demo_numba_gpu.distance_matrix)  # a kernel
    assert not grading.is_course_code(_fill)
    assert not grading.is_course_code(lambda: None)
    assert not grading.is_course_code(grading.expect)  # the grading helpers are not "the answer"


def test_the_standin_is_a_tool_not_course_code() -> None:
    """Arithmetic on stand-in arrays runs the stand-in and its stream log: neither is an answer."""
    a = xp.asarray(np.arange(6.0).reshape(2, 3))
    with grading.watch() as seen:
        with xp.cuda.Stream(non_blocking=True):
            b = xp.exp(xp.minimum(a @ a.T - 0.5 * xp.einsum("ik,ik->i", a, a)[:, None], 0.0))
        grading.to_numpy(b.mean(axis=1))
    assert seen.course_calls == []


def test_guard_band_sees_writes_outside_the_output() -> None:
    guarded = grading.GuardedOutput((4, 5), pad=2)
    assert guarded.inner.shape == (4, 5)
    assert guarded.canaries_intact()
    np.testing.assert_array_equal(guarded.values(), np.full((4, 5), guarded.CANARY))
    _fill_rows[1, 4](guarded.inner)
    assert guarded.canaries_intact()
    np.testing.assert_array_equal(guarded.values()[:, 0], np.arange(4))
    guarded.device[0, 0] = 1.0  # outside the real region
    assert not guarded.canaries_intact()


@cuda.jit
def _fill_rows(out):
    i = cuda.grid(1)
    if i < out.shape[0]:
        out[i, 0] = i


# --- devices --------------------------------------------------------------------------------
def test_device_log_tells_overlap_from_waiting() -> None:
    devs = grading.devices(3)
    assert len(devs) == 3 and len({id(d.log) for d in devs}) == 1
    on = []
    for d in devs:
        with d:
            on.append(d.asarray(np.ones(2)))
    [d.asnumpy(a) for d, a in zip(devs, on)]
    assert devs[0].log.started_all_before_waiting()

    serial = grading.devices(3)
    for d in serial:
        with d:
            d.asnumpy(d.asarray(np.ones(2)))
    assert not serial[0].log.started_all_before_waiting()


# --- the stand-in behaves like CuPy where grading depends on it -------------------------------
_CUPY_BEHAVIOUR = {
    # what NumPy-only student code does with a GPU array, and what CuPy answers
    "np.asarray": (lambda xp, a: np.asarray(a), "TypeError"),
    "np.einsum": (lambda xp, a: np.einsum("ij,ij->i", a, a), "device array"),
    "np.concatenate": (lambda xp, a: np.concatenate([a, a]), "device array"),
    "np.sin": (lambda xp, a: np.sin(a), "device array"),
    "store into a NumPy array": (
        lambda xp, a: np.empty(a.shape).__setitem__(slice(None), a),
        "TypeError",
    ),
    "store NumPy into it": (
        lambda xp, a: a.__setitem__(slice(None), np.ones(a.shape)),
        "ValueError",
    ),
    "add a NumPy array": (lambda xp, a: a + np.ones(a.shape), "TypeError"),
    "add a scalar": (lambda xp, a: a + 1.0, "device array"),
    "float of a sum": (lambda xp, a: float(xp.sum(a)), "float"),
    "matmul": (lambda xp, a: a @ a.T, "device array"),
    "get": (lambda xp, a: a.get(), "ndarray"),
}


def _behaviour(xp, case) -> str:
    try:
        result = case(xp, xp.asarray(np.arange(6.0).reshape(3, 2)))
    except (TypeError, ValueError) as error:
        return type(error).__name__
    return "device array" if isinstance(result, xp.ndarray) else type(result).__name__


@pytest.mark.parametrize("name", sorted(_CUPY_BEHAVIOUR))
def test_standin_answers_as_cupy_does(name: str, device_xp) -> None:
    """The stand-in answers as the table says; on a GPU, so does CuPy (the table is true)."""
    case, expected = _CUPY_BEHAVIOUR[name]
    assert _behaviour(device_xp, case) == expected
