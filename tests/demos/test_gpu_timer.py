"""demos.gpu_timer, with a stand-in for CuPy's events: what is timed, and in which unit."""

from __future__ import annotations

import types

import pytest

from demos import gpu_timer


def _fake_cupy(clock: list[float]) -> types.SimpleNamespace:
    """Events that read *clock* (milliseconds) when recorded, as CUDA events read the GPU's."""

    class Event:
        def __init__(self) -> None:
            self.at: float | None = None
            self.stream = "unset"

        def record(self, stream=None) -> None:
            self.at, self.stream = clock[0], stream

        def synchronize(self) -> None:
            assert self.at is not None, "waited for an event never recorded"

    def get_elapsed_time(start: Event, end: Event) -> float:
        return end.at - start.at

    return types.SimpleNamespace(
        cuda=types.SimpleNamespace(Event=Event, get_elapsed_time=get_elapsed_time)
    )


def test_each_call_is_timed_between_its_own_events_in_seconds() -> None:
    clock = [0.0]
    durations = iter([5.0, 1.0, 2.0, 3.0])  # ms: the warm-up call first

    def work() -> None:
        clock[0] += next(durations)

    cp = _fake_cupy(clock)
    assert gpu_timer.event_seconds(cp, work, repeats=3, warmup=1) == pytest.approx(
        [0.001, 0.002, 0.003]
    )


def test_event_ms_is_the_median_in_milliseconds_and_span_uses_the_stream() -> None:
    clock = [0.0]
    durations = iter([9.0, 4.0, 1.0, 7.0])

    def work() -> None:
        clock[0] += next(durations)

    cp = _fake_cupy(clock)
    assert gpu_timer.event_ms(cp, work, repeats=3) == pytest.approx(4.0)
    with gpu_timer.span(cp, stream="s1") as timed:
        clock[0] += 2.5
    assert timed.seconds() == pytest.approx(0.0025) and timed.end.stream == "s1"
