"""Where the host waited while it issued a pipeline of streams: one log, in the host's order.

A pipeline of streams overlaps only if the host issues every chunk before it
waits, and its result is whole only if the host then waits for every stream it
used. A timeline of CUDA events shows when the GPU worked, not when the host
waited, and on a fast GPU a pipeline that waits for one stream only can still
come out right by luck. So the streams check records the host's side too: each
step the student's code opens in the check's timeline (:class:`StepsInOrder`:
copy in, kernel or copy out, on its stream) and each call that made the host
wait (:func:`recorded`: a stream's, an event's or the device's ``synchronize``,
the runtime's, a blocking ``get``), in the order they happened, with the events
recorded and the streams made to wait for them (``wait_event``): a wait for one
stream that waited for the others' events waits for theirs too. The verdict is
then a function of that log alone, the same on CuPy and on the stand-in
(:mod:`demos.checks.streams_checks`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from demos.cupy_standin_streams import HOST, JOIN, RECORD, WAIT

__all__ = ["HOST", "JOIN", "RECORD", "WAIT", "Entry", "StepsInOrder", "lane", "recorded"]


@dataclass(frozen=True)
class Entry:
    """A step opened (its name), a wait (:data:`WAIT`), an event recorded (:data:`RECORD`) or a
    stream made to wait for one (:data:`JOIN`), on a stream; a wait names its call, and the
    entries about an event name the event."""

    kind: str
    stream: str
    call: str = ""
    event: str = ""


def _event_name(event: Any) -> str:
    return f"event {id(event):#x}"


def lane(stream: Any) -> str:
    """A stream's name in the log: ``null stream`` for the default one, else its handle."""
    ptr = int(getattr(stream, "ptr", 0) or 0)
    return "null stream" if ptr == 0 else f"stream {ptr:#x}"


class StepsInOrder:
    """A timeline that also logs each step, in the order the host opens them."""

    def __init__(self, timeline: Any, log: list[Entry], cp: Any) -> None:
        self._timeline, self._log, self._cp = timeline, log, cp

    @contextlib.contextmanager
    def step(self, name: str, stream: Any = None) -> Iterator[None]:
        self._log.append(Entry(name, lane(stream or self._cp.cuda.get_current_stream())))
        with self._timeline.step(name, stream):
            yield

    def __getattr__(self, name: str) -> Any:
        return getattr(self._timeline, name)


class _Patches:
    """Attributes replaced for the length of one run, every one put back after it."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        self._made: list[tuple[Any, Any]] = []  # (original, replacement)

    def replace(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        """Replace *owner.name* by *make(original)*; an owner that refuses is left as it is."""
        if owner is None or not hasattr(owner, name):
            return
        own = name in getattr(owner, "__dict__", {})
        original = owner.__dict__[name] if own else getattr(owner, name)
        replacement = make(getattr(owner, name))
        try:
            setattr(owner, name, replacement)
        except (AttributeError, TypeError):  # an extension type that allows no new attribute
            return
        self._made.append((original, replacement))
        if own:
            self._undo.append(lambda: setattr(owner, name, original))
        else:
            self._undo.append(lambda: delattr(owner, name))

    def rebind(self, namespace: dict[str, Any] | None) -> None:
        """Replace, in *namespace* too, each name bound to a replaced original: a student who
        wrote ``from cupy.cuda.runtime import deviceSynchronize`` before the check holds the
        original, which the attribute's replacement alone would not see called."""
        for key, value in list((namespace or {}).items()):
            for original, replacement in self._made:
                if value is original:
                    namespace[key] = replacement
                    self._undo.append(
                        lambda key=key, value=value: namespace.__setitem__(key, value)
                    )
                    break

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()


@contextlib.contextmanager
def recorded(
    cp: Any, log: list[Entry] | None = None, namespace: dict[str, Any] | None = None
) -> Iterator[list[Entry]]:
    """Log into *log* (yielded) every wait of the host made through *cp* (CuPy or the
    stand-in) inside the block: the call returned, so the host waited for that stream (or, for
    the device and the runtime's ``deviceSynchronize``, for all of them). A wait made inside
    another (a blocking ``get`` that synchronises its stream) is logged once. The names of
    *namespace* (the student's globals) bound to a call that is watched are watched too."""
    log = [] if log is None else log
    cuda, depth, events = cp.cuda, [0], {}

    def current() -> str:
        return lane(cuda.get_current_stream())

    def waiting(original: Callable, call: str, on: Callable[..., str | None]) -> Callable:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            outer = depth[0] == 0
            depth[0] += 1
            try:
                result = original(*args, **kwargs)
            finally:
                depth[0] -= 1
            stream = on(*args, **kwargs) if outer else None
            if isinstance(stream, Entry):
                log.append(stream)
            elif stream is not None:
                log.append(Entry(WAIT, stream, call))
            return result

        return wrapper

    def recording(original: Callable) -> Callable:
        def record(self: Any, stream: Any = None) -> Any:
            result = original(self, stream) if stream is not None else original(self)
            events[id(self)] = lane(stream) if stream is not None else current()
            log.append(Entry(RECORD, events[id(self)], event=_event_name(self)))
            return result

        return record

    def joining(original: Callable) -> Callable:
        def wait_event(self: Any, event: Any) -> Any:
            result = original(self, event)
            log.append(Entry(JOIN, lane(self), event=_event_name(event)))
            return result

        return wait_event

    def event_wait(event: Any) -> Entry:
        return Entry(WAIT, events.get(id(event), "an event"), "event.synchronize()",
                     _event_name(event))  # fmt: skip

    def blocking_get(self: Any, stream: Any = None, *args: Any, **kwargs: Any) -> str | None:
        blocking = kwargs.get("blocking", args[2] if len(args) > 2 else True)
        return (lane(stream) if stream is not None else current()) if blocking else None

    patches = _Patches()
    for cls in (cuda.Stream, getattr(cuda, "ExternalStream", None)):
        patches.replace(
            cls, "synchronize", lambda f: waiting(f, "stream.synchronize()", lambda s: lane(s))
        )
        patches.replace(cls, "wait_event", joining)
    patches.replace(cuda.Event, "record", recording)
    patches.replace(
        cuda.Event, "synchronize", lambda f: waiting(f, "event.synchronize()", event_wait)
    )
    device_sync = waiting(cuda.Device.synchronize, "Device().synchronize()", lambda *_: HOST)
    patches.replace(
        cuda, "Device", lambda base: type("Device", (base,), {"synchronize": device_sync})
    )
    runtime = getattr(cuda, "runtime", None)
    patches.replace(
        runtime,
        "deviceSynchronize",
        lambda f: waiting(f, "runtime.deviceSynchronize()", lambda *_: HOST),
    )
    patches.replace(
        runtime,
        "streamSynchronize",
        lambda f: waiting(f, "runtime.streamSynchronize()", lambda ptr: lane(_Ptr(ptr))),
    )
    patches.replace(
        getattr(cp, "ndarray", None), "get", lambda f: waiting(f, "a blocking get()", blocking_get)
    )
    patches.rebind(namespace)
    try:
        yield log
    finally:
        patches.restore()


@dataclass(frozen=True)
class _Ptr:
    ptr: int
