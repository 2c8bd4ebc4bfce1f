"""Timing work on the GPU with CUDA events: one timer for every benchmark and lesson.

The host's clock measures what the host waits for; the GPU's own time is
measured by two CUDA events recorded on a stream around the work, read once
the second has happened. :func:`span` brackets any block of queued work
(one launch, a burst of launches, a copy) on a stream; :func:`event_seconds`
and :func:`event_ms` time a function call by call. Callers pass the CuPy
module (``cp``), or :func:`numba_events` where the work is Numba's and CuPy may
be missing, so importing this module needs neither CuPy nor a GPU.
"""

from __future__ import annotations

import contextlib
import statistics
import types
from collections.abc import Callable, Iterator
from typing import Any


class EventSpan:
    """A start and an end CUDA event; :meth:`seconds` is the GPU time between them."""

    def __init__(self, cp: Any) -> None:
        self._cp = cp
        self.start, self.end = cp.cuda.Event(), cp.cuda.Event()

    def seconds(self) -> float:
        """Seconds from start to end, waiting for the end event to happen first."""
        return seconds_between(self._cp, self.start, self.end)


def seconds_between(cp: Any, start: Any, end: Any) -> float:
    """GPU seconds from event *start* to event *end* (both recorded), after *end* has happened."""
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 1e3


def numba_events() -> Any:
    """Numba's CUDA events with CuPy's names, to pass as ``cp`` where CuPy may be missing.

    The events are on Numba's default stream, where Numba launches its kernels.
    """
    from numba import cuda

    def get_elapsed_time(start: Any, end: Any) -> float:
        return start.elapsed_time(end)  # ms, as CuPy's (the simulator's: 0, with a warning)

    return types.SimpleNamespace(
        cuda=types.SimpleNamespace(Event=cuda.event, get_elapsed_time=get_elapsed_time)
    )


@contextlib.contextmanager
def span(cp: Any, stream: Any = None) -> Iterator[EventSpan]:
    """Events around the work queued inside the block, on *stream* (default: the current one)."""
    timed = EventSpan(cp)
    # no stream argument for the current one: Numba's events refuse None, CuPy's take either
    on = () if stream is None else (stream,)
    timed.start.record(*on)
    yield timed
    timed.end.record(*on)


def event_seconds(
    cp: Any, fn: Callable[[], Any], repeats: int = 20, warmup: int = 1
) -> list[float]:
    """GPU seconds of each of *repeats* calls of *fn*, after *warmup* calls (compiling, caching)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        with span(cp) as timed:
            fn()
        times.append(timed.seconds())
    return times


def event_ms(cp: Any, fn: Callable[[], Any], repeats: int = 20) -> float:
    """Median GPU milliseconds per call of *fn*, timed with CUDA events around each call."""
    return statistics.median(event_seconds(cp, fn, repeats)) * 1e3


def event_stats(cp: Any, fn: Callable[[], Any], repeats: int = 10) -> dict[str, float]:
    """``{"median_ms", "min_ms", "repeats"}`` of *fn*'s calls after one warm-up (compiling)."""
    times = [s * 1e3 for s in event_seconds(cp, fn, repeats)]
    return {"median_ms": statistics.median(times), "min_ms": min(times), "repeats": repeats}
