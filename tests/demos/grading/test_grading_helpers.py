"""Unit tests of demos.grading, the helpers the assignments and the grader use."""

from __future__ import annotations

import sys

import nbformat
import numpy as np
import pytest

from demos import grading, hardware


def test_array_module_matches_cupy_availability() -> None:
    expected = "cupy" if hardware.cupy_available() else "numpy"
    assert grading.array_module().__name__ == expected


def test_get_array_module_answers_numpy_for_numpy_arrays() -> None:
    assert grading.get_array_module(np.zeros(3), np.ones(2)) is np


def test_get_array_module_works_without_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes 'import cupy' fail
    assert grading.get_array_module(np.zeros(3)) is np


def test_to_numpy_copies_plain_arrays() -> None:
    data = np.arange(4.0)
    np.testing.assert_array_equal(grading.to_numpy(data), data)
    assert isinstance(grading.to_numpy([1, 2]), np.ndarray)


def test_simulated_device_requires_being_current() -> None:
    first, second = grading.SimulatedDevice(0), grading.SimulatedDevice(1)
    with pytest.raises(RuntimeError, match="copying to device 1 while no device is current"):
        second.asarray(np.ones(2))
    with first:
        first.asarray(np.ones(2))
        with pytest.raises(RuntimeError, match="device 0 is current"):
            second.asarray(np.ones(2))
        with second:
            second.asarray(np.zeros(3))
        first.asarray(np.ones(1))  # back to the outer device
    assert [len(a) for a in first.received] == [2, 1]
    assert [len(a) for a in second.received] == [3]


def test_simulated_device_copies_data() -> None:
    device = grading.SimulatedDevice(0)
    host = np.arange(3.0)
    with device:
        on_device = device.asarray(host)
    host[0] = 99.0
    assert on_device[0] == 0.0
    back = device.asnumpy(on_device)
    back[1] = -1.0
    assert on_device[1] == 1.0


@pytest.mark.nogpu
def test_devices_without_gpu_are_several_stand_ins() -> None:
    devices = grading.devices()
    assert len(devices) == grading.SIMULATED_DEVICE_COUNT >= 2
    assert [d.index for d in devices] == list(range(len(devices)))
    assert all(d.xp is grading.cupy_standin.module for d in devices)


@pytest.mark.gpu
def test_devices_with_gpu_are_cupy_devices() -> None:
    import cupy

    devices = grading.devices()
    assert len(devices) == hardware.gpu_count()
    for device in devices:
        with device:
            array = device.asarray(np.arange(4.0))
            assert array.device.id == device.index
            assert isinstance(array, cupy.ndarray)
            np.testing.assert_array_equal(device.asnumpy(array * 2), np.arange(4.0) * 2)


def test_feedback_preprocessor_removes_hidden_source_and_traceback() -> None:
    pytest.importorskip(
        "nbgrader", reason="the preprocessor plugs into nbgrader (a course dependency)"
    )
    cell = nbformat.v4.new_code_cell(
        "assert f(1) == 2\n### BEGIN HIDDEN TESTS\nassert f(12345) == 67890\n### END HIDDEN TESTS"
    )
    cell.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "t",
        "points": 1,
        "solution": False,
        "locked": True,
    }
    cell.outputs = [
        nbformat.v4.new_output(
            "error",
            ename="AssertionError",
            evalue="",
            traceback=["---> 3 assert f(12345) == 67890"],
        )
    ]
    visible = nbformat.v4.new_code_cell("print('no hidden tests here')")
    visible.outputs = [
        nbformat.v4.new_output("error", ename="ValueError", evalue="x", traceback=["line 1"])
    ]
    nb = nbformat.v4.new_notebook(cells=[cell, visible])
    from grader.integration.feedback import FeedbackWithoutHiddenTests

    preprocessor = FeedbackWithoutHiddenTests()
    nb, _ = preprocessor.preprocess(nb, {})
    text = nbformat.writes(nb)
    assert "12345" not in text
    assert "assert f(1) == 2" in text
    assert nb.cells[0].outputs[0]["traceback"][0] == "AssertionError: "
    assert nb.cells[1].outputs[0]["traceback"] == [
        "line 1"
    ]  # cells without hidden tests keep theirs


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        grading.nope  # noqa: B018
