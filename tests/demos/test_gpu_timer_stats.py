"""demos.gpu_timer's summary of a timed call and its Numba clock (the lessons' kernels)."""

from __future__ import annotations

import types

import pytest

from demos import gpu_timer


def test_event_stats_gives_median_and_min_milliseconds_after_one_warm_up() -> None:
    clock = [0.0]
    durations = iter([50.0, 3.0, 1.0, 2.0])  # ms: the warm-up call (compiling) first

    class Event:
        def record(self, stream=None) -> None:
            self.at = clock[0]

        def synchronize(self) -> None:
            pass

    cp = types.SimpleNamespace(
        cuda=types.SimpleNamespace(Event=Event, get_elapsed_time=lambda a, b: b.at - a.at)
    )

    def work() -> None:
        clock[0] += next(durations)

    stats = gpu_timer.event_stats(cp, work, repeats=3)
    assert stats == {"median_ms": pytest.approx(2.0), "min_ms": pytest.approx(1.0), "repeats": 3}


def test_numba_events_time_numba_work_through_the_same_timer() -> None:
    import demos  # noqa: F401  (the CUDA simulator where there is no GPU)

    seconds = gpu_timer.event_seconds(gpu_timer.numba_events(), lambda: None, repeats=2)
    assert len(seconds) == 2  # the simulator's times are made up (-1 ms), a GPU's are real
    assert all(isinstance(s, float) for s in seconds)
