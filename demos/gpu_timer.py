"""Timing work on the GPU with CUDA events: one timer for every benchmark and lesson.

The host's clock measures what the host waits for; the GPU's own time is
measured by two CUDA events recorded on a stream around the work, read once
the second has happened. :func:`span` brackets any block of queued work
(one launch, a burst of launches, a copy) on a stream; :func:`event_seconds`
and :func:`event_ms` time a function call by call. Callers pass the CuPy
module (``cp``), so importing this module needs neither CuPy nor a GPU.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable, Iterator
from typing import Any


class EventSpan:
    """A start and an end CUDA event; :meth:`seconds` is the GPU time between them."""

    def __init__(self, cp: Any) -> None:
        self._cp = cp
        self.start, self.end = cp.cuda.Event(), cp.cuda.Event()

    def seconds(self) -> float:
        """Seconds from start to end, waiting for the end event to happen first."""
        self.end.synchronize()
        return self._cp.cuda.get_elapsed_time(self.start, self.end) / 1e3


@contextlib.contextmanager
def span(cp: Any, stream: Any = None) -> Iterator[EventSpan]:
    """Events around the work queued inside the block, on *stream* (default: the current one)."""
    timed = EventSpan(cp)
    timed.start.record(stream)
    yield timed
    timed.end.record(stream)


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
