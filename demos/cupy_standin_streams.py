"""Streams, events, pinned memory and CUDA graphs for the CPU stand-in of CuPy: a log, no clock.

Without a GPU nothing overlaps and nothing can be timed, but *what a program
asked for* can still be read: which stream each copy and kernel went to,
whether a copy came from pinned (page-locked) host memory and was asynchronous,
and where the host waited. That is what makes copies overlap with kernels on a
GPU, so chapter 4a's checks read it from :data:`log` here and measure the
overlap itself only on a GPU. The stand-in never invents a time:
:func:`get_elapsed_time` refuses.

A stream capture (``begin_capture`` / ``end_capture``) records the work issued
on the capturing stream instead of running it, as CUDA does, and
:meth:`Graph.launch` runs the recording. As in CUDA, the legacy null stream
cannot be captured, the host may not wait while a capture is under way, and
work sent to the null stream during one is an error. Imports only NumPy.
"""

from __future__ import annotations

import contextlib
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

#: The kinds of log entry that are not work: the host waited (for a stream, an event or, on
#: :data:`HOST`, the whole device); an event was recorded on a stream; a stream was made to wait
#: for an event (``wait_event``). The GPU's recorder (:mod:`demos.asynchrony.waits`) logs the same.
WAIT, RECORD, JOIN, HOST = "sync", "record", "join", "host"


@dataclass(frozen=True)
class Op:
    """One thing issued: a copy, a kernel, a wait, an event recorded or waited for on a stream;
    the stream it went to, and how."""

    kind: str  # "copy in", "kernel", "array op", "copy out", "graph", WAIT, RECORD or JOIN
    stream: str  # "null stream", "stream 1", ... or HOST for a wait on the whole device
    pinned: bool | None = None  # copies: was the host side pinned memory?
    asynchronous: bool | None = None  # copies: did the host go on without waiting?
    host: int | None = None  # copies: the address of the host memory copied from or into
    device: int | None = None  # copies in: which device array was written (its id)
    event: str = ""  # RECORD, JOIN and an event's WAIT: which event


#: Everything issued inside the last :func:`watch`, in order.
log: list[Op] = []
_watching = [False]  # only inside watch(): a long session's work is not kept forever


_held: list[Any] = []  # the memory that logged copies name, kept alive so no address is reused


def _note(op: Op) -> None:
    if _watching[0]:
        log.append(op)


def hold(*memory: Any) -> None:
    """Keep *memory* alive until the :func:`watch` ends, so that its address (an
    :attr:`Op.host` or :attr:`Op.device`) names it alone in :data:`log`."""
    if _watching[0]:
        _held.extend(memory)


class PinnedArray(np.ndarray):
    """A host array in "page-locked" memory (``cupyx.empty_pinned``); its slices stay pinned."""


def empty_pinned(shape: Any, dtype: Any = float) -> PinnedArray:
    """Like ``cupyx.empty_pinned``: an uninitialised host array that copies can overlap from."""
    return np.empty(shape, dtype).view(PinnedArray)


def zeros_pinned(shape: Any, dtype: Any = float) -> PinnedArray:
    """Like ``cupyx.zeros_pinned``."""
    return np.zeros(shape, dtype).view(PinnedArray)


def empty_like_pinned(a: Any, dtype: Any = None) -> PinnedArray:
    """Like ``cupyx.empty_like_pinned``."""
    return empty_pinned(np.shape(a), dtype or a.dtype)


def zeros_like_pinned(a: Any, dtype: Any = None) -> PinnedArray:
    """Like ``cupyx.zeros_like_pinned``."""
    return zeros_pinned(np.shape(a), dtype or a.dtype)


class Graph:
    """The work recorded by a capture; :meth:`launch` runs all of it, in order."""

    def __init__(self, steps: list[Callable[[], None]]) -> None:
        self._steps = steps

    def launch(self, stream: Any = None) -> None:
        target = stream or get_current_stream()
        if target.capturing:
            raise RuntimeError("cannot launch a graph into a stream that is capturing")
        for step in self._steps:
            step()
        _note(Op("graph", target.name))

    @property
    def kernels(self) -> int:
        """How many operations the capture recorded."""
        return len(self._steps)


class Stream:
    """A stand-in CUDA stream: a name, a place in :data:`log`, and a capture that records."""

    _made = 0
    null: Stream

    def __init__(
        self,
        null: bool = False,
        non_blocking: bool = False,
        ptds: bool = False,
        priority: Any = None,
    ) -> None:
        if null:
            self.ptr, self.name = 0, "null stream"
        else:
            Stream._made += 1
            self.ptr, self.name = Stream._made, f"stream {Stream._made}"
        self.non_blocking = non_blocking
        self._recording: list[Callable[[], None]] | None = None

    @property
    def capturing(self) -> bool:
        return self._recording is not None

    def is_capturing(self) -> bool:
        return self.capturing

    def __enter__(self) -> Stream:
        _current.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _current.pop()

    def use(self) -> Stream:
        _current[0] = self
        return self

    def synchronize(self) -> None:
        _no_wait_while_capturing(f"{self.name}.synchronize()")
        _note(Op(WAIT, self.name))

    def wait_event(self, event: Event) -> None:
        """Later work on this stream waits for what *event* was recorded after."""
        if not self.capturing:
            _note(Op(JOIN, self.name, event=event.name))

    def begin_capture(self, mode: Any = None) -> None:
        if self.ptr == 0:
            raise RuntimeError(
                "cudaErrorStreamCaptureUnsupported: the null stream cannot be captured; "
                "capture on a stream you made, cp.cuda.Stream(non_blocking=True)"
            )
        self._recording = []
        _capturing.append(self)

    def end_capture(self) -> Graph:
        if self._recording is None:
            raise RuntimeError("cudaErrorIllegalState: end_capture() without begin_capture()")
        graph, self._recording = Graph(self._recording), None
        _capturing.remove(self)
        return graph

    def __repr__(self) -> str:
        return f"<stand-in CUDA {self.name}>"


Stream.null = Stream(null=True)
_current: list[Stream] = [Stream.null]
_capturing: list[Stream] = []  # streams between begin_capture and end_capture


def get_current_stream() -> Stream:
    return _current[-1]


def _no_wait_while_capturing(what: str) -> None:
    if _capturing:
        raise RuntimeError(
            f"cudaErrorStreamCaptureUnsupported: {what} while a stream capture is under way "
            "(a graph records work; the host cannot wait for it until it is launched)"
        )


def issue(kind: str, run: Callable[[], None], stream: Any = None, **how: Any) -> None:
    """Run *run* as work of *kind* on *stream* (default: the current one), or record it there
    when that stream is capturing; note it in :data:`log`."""
    target = stream or get_current_stream()
    if target.capturing:
        target._recording.append(run)
        return
    if target.ptr == 0 and any(not stream.non_blocking for stream in _capturing):
        raise RuntimeError(  # the legacy null stream waits for blocking streams: one captures
            "cudaErrorStreamCaptureImplicit: work sent to the null stream while a blocking stream "
            "was capturing: issue it inside `with stream:`"
        )
    run()
    _note(Op(kind, target.name, **how))


def capturing_stream() -> Stream | None:
    """The current stream when it is capturing (work issued now is recorded, not run)."""
    current = get_current_stream()
    return current if current.capturing else None


class Event:
    """A stand-in CUDA event: it can be recorded and waited for, but it holds no time."""

    _made = 0

    def __init__(self, block: bool = False, disable_timing: bool = False) -> None:
        Event._made += 1
        self.name = f"event {Event._made}"
        self.stream: str | None = None

    def record(self, stream: Any = None) -> None:
        self.stream = (stream or get_current_stream()).name
        _note(Op(RECORD, self.stream, event=self.name))

    def synchronize(self) -> None:
        _no_wait_while_capturing("Event.synchronize()")
        _note(Op(WAIT, self.stream or "null stream", event=self.name))

    def query(self) -> bool:
        return True


def get_elapsed_time(start: Event, end: Event) -> float:
    raise RuntimeError("the CPU stand-in has no GPU clock: event times are measured only on a GPU")


class Device:
    def __init__(self, device: int = 0) -> None:
        self.id = device

    def synchronize(self) -> None:
        _no_wait_while_capturing("Device.synchronize()")
        _note(Op(WAIT, HOST))


@contextlib.contextmanager
def watch() -> Iterator[list[Op]]:
    """Log what is issued inside the block (the null stream current at its start); yields
    :data:`log`."""
    log.clear()
    _forget_captures()
    _watching[0] = True
    try:
        yield log
    finally:
        _watching[0] = False
        _held.clear()
        _forget_captures()


def _forget_captures() -> None:
    """The null stream current and no capture under way (what a failed student cell left)."""
    _current[:] = [Stream.null]
    for stream in _capturing:
        stream._recording = None
    _capturing.clear()


#: ``cp.cuda`` of the stand-in.
cuda = types.SimpleNamespace(
    Stream=Stream,
    Event=Event,
    Device=Device,
    get_current_stream=get_current_stream,
    get_elapsed_time=get_elapsed_time,
    graph=types.SimpleNamespace(Graph=Graph),
    runtime=types.SimpleNamespace(deviceSynchronize=lambda: Device().synchronize()),
)

#: ``cupyx`` of the stand-in (its pinned-memory allocators).
cupyx = types.ModuleType("cupyx stand-in", "Pinned host memory for the CuPy stand-in.")
cupyx.empty_pinned = empty_pinned  # type: ignore[attr-defined]
cupyx.zeros_pinned = zeros_pinned  # type: ignore[attr-defined]
cupyx.empty_like_pinned = empty_like_pinned  # type: ignore[attr-defined]
cupyx.zeros_like_pinned = zeros_like_pinned  # type: ignore[attr-defined]
