"""Where the host waited in a pipeline of streams: the log of it, and the verdict read from it.

Why: on a GPU the streams check used to judge from the timeline and the result alone, and
both can come out right by luck: a pipeline that waits only for the last stream passed when
the other streams happened to finish first, and one that waited inside the loop passed when
something still overlapped. The GPU run now also logs the steps and the host's waits in the
host's order (:mod:`demos.asynchrony.waits`), and the verdict is a function of what was
recorded (:func:`gpu_verdict`). That function is tested here on synthetic timelines and logs,
and the recorder on the CPU stand-in, whose classes it patches as it patches CuPy's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from demos import cupy_standin
from demos import cupy_standin_streams as standin
from demos.asynchrony.waits import HOST, JOIN, RECORD, WAIT, Entry, StepsInOrder, recorded
from demos.checks import answer_source
from demos.checks._harness import CheckFailed
from demos.checks.streams_checks import gpu_verdict, host_waits
from demos.profiling.timeline import EventTimeline
from helpers import notebook_cell

CHUNKS, N_STREAMS = 8, 4
LANES = [f"stream {k + 1:#x}" for k in range(N_STREAMS)]
STEPS = ("copy in", "kernel", "copy out")


def _records(serial: bool = False) -> list[dict[str, Any]]:
    """A timeline of 8 chunks on 4 streams, each step 1 ms: staggered (copies of one chunk under
    the kernel of the one before) or one chunk after another."""
    out = []
    for k in range(CHUNKS):
        begin = 3.0 * k if serial else float(k)
        for j, name in enumerate(STEPS):
            out.append(
                {
                    "name": name,
                    "lane": LANES[k % N_STREAMS],
                    "start_ms": begin + j,
                    "end_ms": begin + j + 1,
                }
            )
    return out


def _issued(after_chunk: Callable[[int], list[Entry]] = lambda k: []) -> list[Entry]:
    log: list[Entry] = []
    for k in range(CHUNKS):
        log += [Entry(name, LANES[k % N_STREAMS]) for name in STEPS]
        log += after_chunk(k)
    return log


def _wait(lane: str, call: str = "stream.synchronize()") -> Entry:
    return Entry(WAIT, lane, call)


EVERY_STREAM = [_wait(lane) for lane in LANES]


def _joined(into: str = LANES[0], waited: str = LANES[0]) -> list[Entry]:
    """An event recorded on every stream, stream *into* made to wait for all of them
    (``wait_event``), then the host waiting for stream *waited*."""
    records = [Entry(RECORD, lane, event=f"event {k}") for k, lane in enumerate(LANES)]
    joins = [Entry(JOIN, into, event=f"event {k}") for k in range(N_STREAMS)]
    return [*records, *joins, _wait(waited)]


@pytest.mark.parametrize(
    "log",
    [
        _issued() + EVERY_STREAM,
        _issued() + [_wait(HOST, "Device().synchronize()")],
        _issued() + [_wait(lane, "event.synchronize()") for lane in reversed(LANES)],
        _issued() + [_wait(HOST, "runtime.deviceSynchronize()")],
        _issued() + _joined(),
        # a chain: stream 1 waits for stream 0's event, stream 2 for stream 1's, ...
        _issued()
        + [
            entry
            for k in range(1, N_STREAMS)
            for entry in (
                Entry(RECORD, LANES[k - 1], event=f"e{k}"),
                Entry(JOIN, LANES[k], event=f"e{k}"),
            )
        ]
        + [_wait(LANES[-1])],
    ],
    ids=["every-stream", "device", "events", "runtime", "joined", "joined-chain"],
)
def test_waiting_once_for_everything_after_the_loop_passes(log: list[Entry]) -> None:
    assert "overlapped" in gpu_verdict(_records(), log, CHUNKS, N_STREAMS, pinned=True)


@pytest.mark.parametrize(
    "log, words",
    [
        # the loop's last stream only: an overlapped timeline and a right result do not save it
        (
            _issued() + [_wait(LANES[-1])],
            f"waited for {LANES[-1]} (through stream.synchronize()), not for "
            f"{', '.join(LANES[:-1])}",
        ),
        # the last chunk's event only
        (_issued() + [_wait(LANES[-1], "event.synchronize()")], "through event.synchronize()"),
        # nothing at all
        (_issued(), "waited for nothing, not for"),
        # the default stream, which does not wait for non-blocking streams
        (
            _issued() + [_wait("null stream")],
            "waited for null stream (through stream.synchronize()), not for",
        ),
        # the chunk's stream after every chunk: serial, even where the timeline shows overlap
        (
            _issued(lambda k: [_wait(LANES[k % N_STREAMS])]),
            f"waited 7 time(s) before the last chunk was issued, the first "
            f"stream.synchronize() for {LANES[0]} after chunk 0's copy out",
        ),
        # all streams after every round of four chunks
        (
            _issued(lambda k: EVERY_STREAM if k % N_STREAMS == N_STREAMS - 1 else []),
            "waited 4 time(s) before the last chunk was issued",
        ),
        # a blocking copy back inside the loop
        (
            _issued(lambda k: [_wait(LANES[k % N_STREAMS], "a blocking get()")]) + EVERY_STREAM,
            "the first a blocking get() for",
        ),
        # the others' events joined into stream 0, but the host waits for stream 1
        (_issued() + _joined(waited=LANES[1]), f"not for {LANES[0]}, {', '.join(LANES[2:])}"),
        # events recorded in the first round (before the second round's work), joined at the end
        (
            [*_issued()[: 3 * N_STREAMS], *_joined()[: 2 * N_STREAMS], *_issued()[3 * N_STREAMS :]]
            + [_joined()[-1]],
            f"not for {', '.join(LANES[1:])}",
        ),
        # an event recorded in the first round, waited for by the host after the loop
        (
            [*_issued()[: 3 * N_STREAMS], Entry(RECORD, LANES[1], event="early")]
            + _issued()[3 * N_STREAMS :]
            + [*(_wait(lane) for lane in LANES if lane != LANES[1])]
            + [Entry(WAIT, LANES[1], "event.synchronize()", "early")],
            f"not for {LANES[1]}",
        ),
    ],
    ids=[
        "last-stream-only",
        "last-event-only",
        "no-wait",
        "null-stream",
        "sync-every-chunk",
        "sync-every-round",
        "blocking-get",
        "joined-other-stream-waited",
        "joined-early-events",
        "early-event-waited",
    ],
)
def test_a_wrong_wait_fails_even_when_the_timeline_overlapped(log: list[Entry], words: str) -> None:
    with pytest.raises(CheckFailed) as failed:
        gpu_verdict(_records(), log, CHUNKS, N_STREAMS, pinned=True)
    assert words in str(failed.value), str(failed.value)


def test_a_serial_timeline_with_the_right_waits_still_says_nothing_overlapped() -> None:
    with pytest.raises(CheckFailed, match="nothing overlapped .*the GPU sat idle"):
        gpu_verdict(_records(serial=True), _issued() + EVERY_STREAM, CHUNKS, N_STREAMS, True)
    with pytest.raises(CheckFailed, match="pageable host memory"):
        gpu_verdict(_records(serial=True), _issued() + EVERY_STREAM, CHUNKS, N_STREAMS, False)


def test_the_stand_ins_ops_read_the_same() -> None:
    ops = [standin.Op(name, "stream 1") for name in STEPS] + [standin.Op("sync", "stream 2")]
    with pytest.raises(CheckFailed, match="waited for stream 2, not for stream 1"):
        host_waits(ops)
    host_waits([*ops[:3], standin.Op("sync", "host")])


# The recorder, on the stand-in: the calls it patches there are the ones it patches in CuPy,
# around the model answer with its wait moved.

cp, cupyx = cupy_standin.module, standin.cupyx
ANSWER = answer_source("streamed_work")
FINAL_WAIT = (
    "    for s in streams:  # one wait per stream, after everything is queued\n"
    "        s.synchronize()\n"
)
COPY_OUT = "                y.get(out=host_out[k], stream=s, blocking=False)\n"
assert FINAL_WAIT in ANSWER and COPY_OUT in ANSWER


def _variant(after: str | None = None, in_loop: str = "") -> str:
    """The model answer with another wait after the loop, or one more inside it (after the
    chunk's copy back, on its stream)."""
    source = ANSWER if after is None else ANSWER.replace(FINAL_WAIT, after)
    return source.replace(COPY_OUT, COPY_OUT + in_loop)


def _run(source: str) -> list[Entry]:
    fn = notebook_cell(source, "streamed_work")
    data = np.random.default_rng(1).random((CHUNKS, 16), dtype=np.float32)
    with recorded(cp, namespace=fn.__globals__) as log:  # as the check calls it
        fn(data, lambda x: x * 2, N_STREAMS, StepsInOrder(EventTimeline(False), log, cp))
    return log


EVENT_EACH = (
    "    for s in streams:\n"
    "        e = cp.cuda.Event()\n"
    "        e.record(s)\n"
    "        e.synchronize()\n"
)


JOIN_CHAIN = (  # stream k waits for stream k + 1's last chunk; the host waits for the first
    "    for k in reversed(range(1, len(streams))):\n"
    "        e = cp.cuda.Event()\n"
    "        e.record(streams[k])\n"
    "        streams[k - 1].wait_event(e)\n"
    "    streams[0].synchronize()\n"
)


@pytest.mark.parametrize(
    "source, words",
    [
        (_variant(), None),
        (_variant(EVENT_EACH), None),
        (_variant(JOIN_CHAIN), None),
        # the wait taken by a name of the student's own, before the check patched anything
        (
            _variant("    device_sync()\n") + "device_sync = cp.cuda.runtime.deviceSynchronize\n",
            None,
        ),
        (_variant("    Device().synchronize()\n") + "Device = cp.cuda.Device\n", None),
        (
            _variant(JOIN_CHAIN.replace("streams[0].synchronize()", "streams[1].synchronize()")),
            "not for",
        ),  # fmt: skip  # fmt: skip
        (_variant("    cp.cuda.Device().synchronize()\n"), None),
        (_variant("    cp.cuda.runtime.deviceSynchronize()\n"), None),
        (_variant("    s.synchronize()\n"), "not for"),
        (
            _variant("    e = cp.cuda.Event()\n    e.record(s)\n    e.synchronize()\n"),
            "through event",
        ),
        (_variant(in_loop="                s.synchronize()\n"), "waited 7 time(s)"),
        (
            _variant(in_loop="                y.get(out=host_out[k], stream=s)\n"),
            "the first a blocking",
        ),
    ],
    ids=[
        "each-stream",
        "event-per-stream",
        "join-chain",
        "runtime-by-own-name",
        "device-by-own-name",
        "join-chain-wrong-wait",
        "device",
        "runtime",
        "last-stream-only",
        "last-event-only",
        "sync-in-loop",
        "blocking-get-in-loop",
    ],
)
def test_the_recorder_logs_steps_and_waits_in_the_hosts_order(
    source: str, words: str | None
) -> None:
    log = _run(source)
    assert [e.kind for e in log if e.kind != WAIT][:3] == list(STEPS)
    if words is None:
        host_waits(log)
    else:
        with pytest.raises(CheckFailed, match=re.escape(words)):
            host_waits(log)


def _patched_calls() -> tuple:
    return (
        cp.cuda.Stream.__dict__["synchronize"],
        cp.cuda.Event.__dict__["synchronize"],
        cp.cuda.Event.__dict__["record"],
        cp.cuda.Stream.__dict__["wait_event"],
        cp.cuda.Device,
        cp.cuda.runtime.deviceSynchronize,
        "get" in vars(cp.ndarray),
    )


def test_the_recorder_puts_the_students_own_names_back() -> None:
    namespace = {"device_sync": cp.cuda.runtime.deviceSynchronize, "Device": cp.cuda.Device}
    before = dict(namespace)
    with recorded(cp, namespace=namespace) as log:
        namespace["device_sync"]()
        namespace["Device"]().synchronize()
    assert [(e.kind, e.stream) for e in log] == [(WAIT, HOST), (WAIT, HOST)]
    assert namespace == before


def test_the_recorder_logs_a_nested_wait_once_and_puts_every_call_back() -> None:
    before = _patched_calls()
    s = cp.cuda.Stream(non_blocking=True)
    x = cp.asarray(np.arange(3.0))
    with recorded(cp) as log:
        x.get(out=cupyx.empty_pinned(3, np.float64), stream=s)  # blocking: synchronises s inside
        x.get(out=cupyx.empty_pinned(3, np.float64), stream=s, blocking=False)
    assert log == [Entry(WAIT, f"stream {s.ptr:#x}", "a blocking get()")]
    assert _patched_calls() == before
