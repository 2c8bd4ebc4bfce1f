"""demos.grading.sealed: what a student's function can touch is not what the grader reads.

Each test plays the student's function directly (no kernel): it uses the
objects :mod:`demos.grading.serve` makes, then attacks their records the way
the grader's source gate would refuse (private attributes), and the report
the grader reads must still tell what happened.
"""

from __future__ import annotations

import numpy as np
import pytest

from demos.grading import serve


def _monitor_on_device(xp, windows, threshold):
    """The instructor's answer: one transfer, every window's work on the device."""
    alarms, loudest = xp.zeros((), dtype=xp.int64), xp.zeros(())
    for window in windows:
        x = xp.asarray(window)
        level = xp.sqrt((x * x).mean(axis=1).max())
        alarms += level > threshold
        loudest = xp.where(level > loudest, level, loudest)
    return [float(v) for v in xp.asnumpy(xp.stack([alarms, loudest]))]


def _monitor_on_host(xp, windows, threshold):
    """NumPy on the host, with throw-away device operations to look busy."""
    levels = []
    for window in windows:
        x = xp.asarray(window)
        x = (x + 0) * 1 - 0
        levels.append(float(np.sqrt((np.asarray(window) ** 2).mean(axis=1)).max()))
    return [sum(level > threshold for level in levels), max(levels)]


def _windows() -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    return [rng.normal(size=(3, 16)) for _ in range(4)]


def test_the_counting_modules_record_survives_resets_through_private_attributes() -> None:
    made = serve._Made()
    xp = made.counting_module({})
    x = xp.asarray(np.ones(4))
    float(x.sum())
    float(x.max())
    xp.counter.reset()  # the student's snapshot
    x._counter.reset()  # the live counter (the gate refuses this in a student's cell)
    x._counter.uploads = -10
    x._counter.transfers.clear()
    assert made.reports[0]()["syncs"] == 2 and made.reports[0]()["uploads"] == 1
    with pytest.raises(AttributeError):
        xp.counter = None
    assert not hasattr(xp, "_module")  # nothing of the live module hangs on what is handed over


@pytest.mark.parametrize(
    "monitor, host_reads", [(_monitor_on_device, 0), (_monitor_on_host, 4)], ids=["device", "host"]
)
def test_host_arrays_tell_work_on_the_host(monitor, host_reads: int) -> None:
    made = serve._Made()
    xp = made.counting_module({})
    windows = made.host_arrays({"arrays": _windows()})
    levels = [np.sqrt((w * w).mean(axis=1)).max() for w in _windows()]
    expected = [sum(level > 1.0 for level in levels), max(levels)]
    assert monitor(xp, windows, 1.0) == pytest.approx(expected)  # the same numbers either way
    report = made.reports[0]()
    assert report["host_reads"] == host_reads and report["uploads"] == 4


def test_the_devices_log_is_kept_out_of_the_students_reach() -> None:
    made = serve._Made()
    devs = made.devices({"count": 2})
    pieces = []
    for device, piece in zip(devs, np.array_split(np.arange(6.0), 2)):
        with device:
            pieces.append(device.asarray(piece))
    devs[0].asnumpy(pieces[0])
    assert [type(d).__name__ for d in devs] == ["SimulatedDevice"] * 2
    devs[0].log.events.clear()
    devs[0].log.events.append(("to_device", 1))
    for device in devs:
        device.received.clear()
    report = made.reports[0]()
    assert report["events"] == [["to_device", 0], ["to_device", 1], ["to_host", 0]]
    assert [np.concatenate(r).tolist() for r in report["received"]] == [[0, 1, 2], [3, 4, 5]]


def test_a_watch_inside_the_graders_watch_hides_nothing_from_it() -> None:
    from demos.grading.watch import watch
    from demos.profiling.sync_counter import counting_module

    with watch() as outer:
        with watch() as inner:  # a student's own watch, as the visible tests use one
            counting_module()  # course code
    assert "demos.profiling.sync_counter.counting_module" in outer.course_calls
    assert set(inner.course_calls) <= set(outer.course_calls)
    assert not outer.profiler_removed
