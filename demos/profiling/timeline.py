"""A timeline of GPU work from CUDA events, and what to read off it (idle gaps, overlap).

Nsight Systems draws such timelines from a capture, but not everywhere (on the
H200 node the reference results come from, it could not turn its capture into
a report), so the course records its own: a CUDA event before and after each
named step, on the stream the step runs on. Events are timestamps taken *by
the GPU* when it reaches them in its queue, so the intervals show when the GPU
worked, not when Python asked for the work. Each step is also an NVTX range
(through ``cupyx.profiler.time_range``), so the same code shows up named in
Nsight Systems or PyTorch's profiler wherever those can record.

Without a GPU the recorder uses the host clock and says so in every record
(``"clock": "host"``): those intervals are when Python ran the step.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from demos import gpu_timer


@dataclass(frozen=True)
class Interval:
    """One named step on one lane (a stream, or "host") from *start* to *end*, in milliseconds."""

    name: str
    lane: str
    start: float
    end: float

    @property
    def duration(self) -> float:
        return self.end - self.start


def _merged(intervals: Sequence[Interval]) -> list[tuple[float, float]]:
    """The union of the intervals as sorted, disjoint (start, end) pairs."""
    merged: list[list[float]] = []
    for iv in sorted(intervals, key=lambda iv: iv.start):
        if merged and iv.start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], iv.end)
        else:
            merged.append([iv.start, iv.end])
    return [(a, b) for a, b in merged]


def busy_time(intervals: Sequence[Interval]) -> float:
    """Milliseconds during which at least one interval runs (overlaps counted once)."""
    return sum(b - a for a, b in _merged(intervals))


def idle_gaps(intervals: Sequence[Interval]) -> list[tuple[float, float]]:
    """The (start, end) gaps between the first start and the last end where nothing runs."""
    merged = _merged(intervals)
    return [(a_end, b_start) for (_, a_end), (b_start, _) in itertools.pairwise(merged)]


def overlap_time(first: Sequence[Interval], second: Sequence[Interval]) -> float:
    """Milliseconds during which something of *first* and something of *second* run at once."""
    total, a, b = 0.0, _merged(first), _merged(second)
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def from_records(records: Sequence[dict[str, Any]]) -> list[Interval]:
    """Intervals from JSON records ``{"name", "lane", "start_ms", "end_ms"}`` (as the recorder
    writes)."""
    return [
        Interval(r["name"], r["lane"], float(r["start_ms"]), float(r["end_ms"])) for r in records
    ]


class EventTimeline:
    """Record named steps with CUDA events (GPU clock) or the host clock (no GPU).

    Usage::

        timeline = EventTimeline()
        with timeline.step("matmul"):        # on the current stream
            ...
        records = timeline.records()         # synchronises once, at the end
    """

    def __init__(self, use_gpu: bool | None = None) -> None:
        from demos import hardware

        self.gpu = hardware.cupy_available() if use_gpu is None else use_gpu
        self._steps: list[tuple[str, str, Any, Any]] = []
        self._origin: Any = None
        if self.gpu:
            import cupy as cp

            self._cp = cp
            self._origin = cp.cuda.Event()
            self._origin.record()
        else:
            self._origin = time.perf_counter()

    @contextlib.contextmanager
    def step(self, name: str, stream: Any = None) -> Iterator[None]:
        """Time the work queued inside this block (on *stream*, default the current one) as
        *name*."""
        if not self.gpu:
            start = time.perf_counter()
            yield
            self._steps.append((name, "host", start, time.perf_counter()))
            return
        from cupyx.profiler import time_range

        stream = stream or self._cp.cuda.get_current_stream()
        # an NVTX range: named in Nsight Systems where it records
        with time_range(name), gpu_timer.span(self._cp, stream) as timed:
            yield
        lane = "default stream" if stream.ptr == 0 else f"stream {stream.ptr:#x}"
        self._steps.append((name, lane, timed.start, timed.end))

    def records(self) -> list[dict[str, Any]]:
        """All steps as JSON-ready dicts, times in ms from the timeline's creation."""
        out = []
        for name, lane, start, end in self._steps:
            if self.gpu:
                a = gpu_timer.seconds_between(self._cp, self._origin, start) * 1e3
                b = gpu_timer.seconds_between(self._cp, self._origin, end) * 1e3
            else:
                a, b = (start - self._origin) * 1e3, (end - self._origin) * 1e3
            out.append(
                {
                    "name": name,
                    "lane": lane,
                    "start_ms": a,
                    "end_ms": b,
                    "clock": "gpu" if self.gpu else "host",
                }
            )
        return out


def summary(intervals: Sequence[Interval]) -> dict[str, float]:
    """Span, busy time, idle time and the largest gap, in ms (the numbers a timeline is read
    for)."""
    if not intervals:
        return {"span_ms": 0.0, "busy_ms": 0.0, "idle_ms": 0.0, "largest_gap_ms": 0.0}
    span = max(iv.end for iv in intervals) - min(iv.start for iv in intervals)
    gaps = idle_gaps(intervals)
    return {
        "span_ms": span,
        "busy_ms": busy_time(intervals),
        "idle_ms": sum(b - a for a, b in gaps),
        "largest_gap_ms": max((b - a for a, b in gaps), default=0.0),
    }


def plot(intervals: Sequence[Interval], title: str = "") -> Any:
    """A Gantt chart of the intervals, one row per lane; returns the matplotlib figure."""
    from demos.plots import pyplot

    plt = pyplot()
    lanes = list(dict.fromkeys(iv.lane for iv in intervals))
    names = list(dict.fromkeys(iv.name for iv in intervals))
    colours = {n: plt.get_cmap("tab10")(k % 10) for k, n in enumerate(names)}
    fig, ax = plt.subplots(figsize=(9, 0.6 + 0.5 * len(lanes)))
    for iv in intervals:
        ax.barh(
            lanes.index(iv.lane),
            iv.duration,
            left=iv.start,
            color=colours[iv.name],
            edgecolor="black",
            linewidth=0.3,
        )
    ax.set_yticks(range(len(lanes)), lanes)
    ax.set_xlabel("time (ms)")
    ax.set_title(title)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[n]) for n in names]
    ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    fig.tight_layout()
    plt.close(fig)  # shown where the caller displays it, not a second time when the cell ends
    return fig


__all__ = [
    "EventTimeline",
    "Interval",
    "busy_time",
    "from_records",
    "idle_gaps",
    "overlap_time",
    "plot",
    "summary",
]
