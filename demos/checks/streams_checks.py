"""Checks for chapter 4a's streams and graphs built by hand: what overlapped, what a graph replays.

On a GPU, :func:`streamed_work` runs the student's pipeline with CUDA events
recorded on each stream against one common start, and says from them whether
copies of one chunk ran while kernels of another did. Without a GPU nothing can
overlap or be timed, so the same function runs on the CuPy stand-in, which logs
what was issued on which stream, from which host memory and where the host
waited: the check reads that structure (the causes of overlap) and says that the
overlap itself is measured only on a GPU. Where the host waited is judged by one
rule on both (:func:`host_waits`): on a GPU from a log of the steps and the
waits in the host's order (:mod:`demos.asynchrony.waits`), because a timeline
alone lets a wrong wait pass whenever the streams happen to finish in time; the
whole GPU verdict is a function of what was recorded (:func:`gpu_verdict`).
:func:`capture_steps` launches the student's CUDA graph and compares what it
did with NumPy, on either.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from demos import cupy_standin
from demos import cupy_standin_streams as standin_streams
from demos.asynchrony.overlap import (
    COPY_IN,
    COPY_OUT,
    KERNEL,
    first_wrong_chunk,
    gpu_modules,
    is_pinned,
    make_work,
    read_overlap,
)
from demos.asynchrony.waits import HOST, JOIN, RECORD, WAIT, StepsInOrder, recorded
from demos.checks._harness import CheckFailed
from demos.profiling.timeline import EventTimeline, from_records

_NULL = (
    "went to the default (null) stream, which runs one thing at a time: issue each chunk "
    "inside `with streams[k % n_streams]:` and pass that stream to set() and get()"
)
_PAGEABLE = (
    "pageable host memory, which no copy engine can reach while a kernel runs: stage the data "
    "in cupyx.empty_pinned buffers and copy from and into those"
)
_WAIT = "Issue every chunk first, then wait once, after the loop (s.synchronize() for each stream)"


def _host_result(out: Any, data: np.ndarray, iterations: int) -> None:
    if isinstance(out, cupy_standin.DeviceArray) or type(out).__module__.startswith("cupy"):
        raise CheckFailed(
            "you returned a device array: copy each chunk's result into a pinned host array "
            "(y.get(out=host_out[k], stream=s, blocking=False)) and return that."
        )
    got = np.asarray(out)
    if got.shape != data.shape:
        raise CheckFailed(f"the result has shape {got.shape}, expected {data.shape}.")
    k = first_wrong_chunk(got, data, iterations)
    if k is not None:
        raise CheckFailed(
            f"chunk {k} of the result is wrong: is work(x) applied to chunk {k} and its result "
            "copied into row k, are a chunk's copy in, kernel and copy out all on its stream "
            "(with its own device array and pinned rows), and do you wait for every stream "
            "before returning?"
        )


def _read_log(log: list[standin_streams.Op], chunks: int, n_streams: int) -> None:
    """The causes of overlap in what the stand-in saw issued: raise with the first one missing."""
    issued = [op for op in log if op.kind in (COPY_IN, KERNEL, COPY_OUT)]
    kernels = [op for op in issued if op.kind == KERNEL]
    if len(kernels) != chunks:
        raise CheckFailed(f"work(x) ran {len(kernels)} times for {chunks} chunks: once per chunk.")
    on_null = [op for op in issued if op.stream == "null stream"]
    if on_null:
        raise CheckFailed(f"{len(on_null)} of {len(issued)} copies and kernels {_NULL}.")
    used = {op.stream for op in kernels[:n_streams]}
    if len(used) < n_streams:
        raise CheckFailed(
            f"the first {n_streams} chunks went to {len(used)} stream(s): a stream runs its work "
            "in order, so chunks on one stream cannot overlap. Make n_streams streams and give "
            "chunk k the stream k % n_streams."
        )
    steps = zip(*([op for op in issued if op.kind == kind] for kind in (COPY_IN, KERNEL, COPY_OUT)))
    for k, chunk in enumerate(steps):
        if len({op.stream for op in chunk}) > 1:
            raise CheckFailed(
                f"chunk {k}'s copy in, kernel and copy out went to "
                f"{', '.join(op.stream for op in chunk)}: only one stream keeps them in order, so "
                "a step may start before the one it needs is done. Issue all three on the "
                "chunk's stream."
            )
    for op in issued:
        if op.kind != KERNEL and not op.pinned:
            way = "from" if op.kind == COPY_IN else "into"
            raise CheckFailed(f"a {op.kind} went {way} {_PAGEABLE}.")
    for op in issued:
        if op.kind != KERNEL and not op.asynchronous:
            how = (
                "x.set(host_in[k], stream=s)"
                if op.kind == COPY_IN
                else "y.get(out=host_out[k], stream=s, blocking=False)"
            )
            raise CheckFailed(f"a {op.kind} made the host wait for it: write {how}.")
    _waits_in_loop(log)
    _shared_buffers(issued)
    _waited_for_all(log, {op.stream for op in issued})


_STEPS = (COPY_IN, KERNEL, COPY_OUT)


def _waits_in_loop(log: Sequence[Any]) -> None:
    """Raise if the host waited between issuing the first step and the last: each wait lets the
    GPU run dry, and a wait after every chunk serialises them (nothing can overlap)."""
    at = [k for k, op in enumerate(log) if op.kind in _STEPS]
    waits = [k for k in range(at[0], at[-1]) if log[k].kind == WAIT] if at else []
    if not waits:
        return
    first = log[waits[0]]
    before = [op for op in log[: waits[0]] if op.kind in _STEPS]
    chunk = sum(op.kind == before[-1].kind for op in before) - 1
    call = getattr(first, "call", "")
    how = f"{call} for {first.stream}" if call else f"for {first.stream}"
    raise CheckFailed(
        f"the host waited {len(waits)} time(s) before the last chunk was issued, the first "
        f"{how} after chunk {chunk}'s {before[-1].kind} (a synchronize, a blocking copy or a "
        "value read on the host, inside the loop): each wait lets the GPU run dry, and one after "
        f"every chunk runs the chunks one after another, with nothing to overlap. {_WAIT}."
    )


def host_waits(log: Sequence[Any]) -> None:
    """The verdict on where the host waited, from *log* alone: steps (``copy in``, ``kernel``,
    ``copy out``) and waits (``sync``) with their streams, in the order the host made them.
    None between the first step and the last; after the last, waits for every stream used."""
    _waits_in_loop(log)
    _waited_for_all(log, {op.stream for op in log if op.kind in _STEPS})


def _shared_buffers(issued: list[standin_streams.Op]) -> None:
    """Memory that two chunks' copies share while neither waits: one may overwrite the other's."""
    for kind in (COPY_IN, COPY_OUT):
        hosts = [op.host for op in issued if op.kind == kind and op.host is not None]
        if len(set(hosts)) < len(hosts):
            where = "from" if kind == COPY_IN else "into"
            raise CheckFailed(
                f"several chunks copy {where} the same pinned host buffer, and nothing waits "
                "between them: a later chunk's data can overwrite it before an earlier copy is "
                "done. Give every chunk its own row of a pinned array (host_in[k], host_out[k])."
            )
    streams_of: dict[int, set[str]] = {}
    for op in issued:
        if op.kind == COPY_IN and op.device is not None:
            streams_of.setdefault(op.device, set()).add(op.stream)
    if any(len(streams) > 1 for streams in streams_of.values()):
        raise CheckFailed(
            "chunks on different streams copy into the same device array: one stream's copy can "
            "overwrite it while another stream's kernel still reads it. Make the device array "
            "inside the loop (or one per stream)."
        )


def _known_done(log: Sequence[Any]) -> dict[str, int]:
    """For each stream, the place in *log* before which all its work is known done once the
    host's last wait returns. A host wait for a stream at k makes it k (an event's wait: where the
    event was recorded); a stream that waited (``wait_event``) at j for an event recorded on
    another at r, and is itself known done past j, makes the other r; :data:`HOST`'s entry
    stands for a wait for the whole device."""
    done: dict[str, int] = {}
    records: dict[str, tuple[str, int]] = {}
    joins: list[tuple[str, int, str, int]] = []
    for k, op in enumerate(log):
        event = getattr(op, "event", "")
        if op.kind == RECORD:
            records[event] = (op.stream, k)
        elif op.kind == JOIN and event in records:
            joins.append((op.stream, k, *records[event]))
        elif op.kind == WAIT:
            stream, at = records.get(event, (op.stream, k))  # an event's: where recorded
            done[stream] = max(done.get(stream, -1), at)
    grown = True
    while grown:  # a stream that waited for one that waited for a third: follow the chain
        grown = False
        for waiter, j, source, r in joins:
            if max(done.get(waiter, -1), done.get(HOST, -1)) > j and done.get(source, -1) < r:
                done[source], grown = r, True
    return done


def _waited_for_all(log: Sequence[Any], used: set[str]) -> None:
    """The host waited, after the last step was issued, for every stream that got work:
    directly, through an event recorded after its last step, or through a stream that waited
    for such an event (``wait_event``) before the host waited for it."""
    last = {op.stream: k for k, op in enumerate(log) if op.kind in _STEPS}
    done = _known_done(log)
    missing = sorted(
        stream for stream in used if max(done.get(stream, -1), done.get(HOST, -1)) <= last[stream]
    )
    if missing:
        after = log[max(last.values()) :] if last else log
        waited = {op.stream for op in after if op.kind == WAIT}
        said = ", ".join(sorted(waited)) if waited else "nothing"
        calls = sorted({op.call for op in after if op.kind == WAIT and getattr(op, "call", "")})
        through = f" (through {', '.join(calls)})" if calls else ""
        raise CheckFailed(
            f"after the loop the host waited for {said}{through}, not for "
            f"{', '.join(missing)}: the array you return may still be filling (on a GPU it "
            "can come out right by luck, when those streams happen to finish first). Wait for "
            "every stream you used (s.synchronize() for each, an event recorded on each after "
            "its last chunk, one stream made to wait for the others' events with wait_event "
            "and then waited for, or cp.cuda.Device().synchronize(); the default stream does "
            "not wait for streams made with non_blocking=True)."
        )


def _read_timeline(records: list[dict[str, Any]], chunks: int) -> None:
    counts = {name: sum(r["name"] == name for r in records) for name in (COPY_IN, KERNEL, COPY_OUT)}
    if any(count != chunks for count in counts.values()):
        raise CheckFailed(
            f"the timeline has {counts} for {chunks} chunks: wrap each chunk's upload, kernel and "
            'download in `with timeline.step("copy in", s):` (and "kernel", "copy out").'
        )


def streamed_work(fn: Callable[[np.ndarray, Callable, int, Any], Any]) -> str:
    """*fn(data, work, n_streams, timeline)*: every row of *data* copied in, worked on and copied
    back on its own stream, pinned and asynchronous, the host waiting once at the end."""
    cp, _ = gpu_modules()
    rng = np.random.default_rng(11)
    if cp is cupy_standin.module:
        chunks, n_streams, iterations = 7, 3, 4
        data = rng.random((chunks, 96), dtype=np.float32)
        work = make_work(cp, iterations)
        timeline = EventTimeline(use_gpu=False)
        with standin_streams.watch() as log:
            out = fn(data, work, n_streams, timeline)
        _host_result(out, data, iterations)
        _read_timeline(timeline.records(), chunks)
        _read_log(list(log), chunks, n_streams)
        return (
            f"{chunks} chunks on {n_streams} streams, pinned and asynchronous, one wait at the "
            "end: all that overlap needs. Whether they overlapped is measured on a GPU only "
            "(no GPU here, so nothing was timed)."
        )
    return _on_gpu(fn, cp, rng)


def _on_gpu(fn: Callable, cp: Any, rng: np.random.Generator) -> str:
    from demos.asynchrony.streams_bench import calibrated_iterations

    chunks, n_streams, elements = 8, 4, 2**22
    data = rng.random((chunks, elements), dtype=np.float32)
    iterations = calibrated_iterations(cp, elements)
    work = make_work(cp, iterations)
    # compiles and fills the memory pools, with other data: memory the pool hands out again
    # then holds values that are not this run's results
    fn(data[::-1].copy(), work, n_streams, EventTimeline(use_gpu=True))
    cp.cuda.Device().synchronize()
    timeline = EventTimeline(use_gpu=True)
    # the steps and the host's waits, in the host's order (through the student's own names too)
    with recorded(cp, namespace=getattr(fn, "__globals__", None)) as log:
        out = fn(data, work, n_streams, StepsInOrder(timeline, log, cp))
        # the end of every row, read before any wait: a row still filling differs from its final
        ends = np.array(out[:, -16:], copy=True) if isinstance(out, np.ndarray) else None
    cp.cuda.Device().synchronize()
    _host_result(out, data, iterations)
    if ends is not None and not np.array_equal(ends, out[:, -16:]):
        raise CheckFailed(
            "the array you returned was still filling when your function returned: some "
            "chunk's copy came later. Wait for every stream you used after the loop "
            "(s.synchronize() for each stream)."
        )
    return gpu_verdict(timeline.records(), log, chunks, n_streams, is_pinned(cp, out))


def gpu_verdict(
    records: list[dict[str, Any]], log: Sequence[Any], chunks: int, n_streams: int, pinned: bool
) -> str:
    """The GPU run's verdict from what was recorded alone: the timeline's *records* (CUDA events
    per step and stream), the host's *log* of steps and waits (:mod:`demos.asynchrony.waits`)
    and whether the result lies in *pinned* memory. Raises with the first problem."""
    _read_timeline(records, chunks)
    seen = read_overlap(from_records(records))
    first = {r["lane"] for r in [r for r in records if r["name"] == KERNEL][:n_streams]}
    if not seen.null_stream and len(first) < n_streams:
        raise CheckFailed(
            f"the first {n_streams} chunks ran on {len(first)} stream(s): a stream runs its work "
            "in order, so chunks on one stream cannot overlap. Make n_streams streams and give "
            "chunk k the stream k % n_streams."
        )
    host_waits(log)  # the same rule as without a GPU: luck in the timing passes no wrong wait
    if seen.overlapped:
        return f"copies and kernels of different chunks overlapped: {seen.sentence()}."
    if seen.null_stream:
        cause = f"some of the work {_NULL}"
    elif seen.streams < 2:
        cause = "everything ran on one stream; give chunk k the stream k % n_streams"
    elif not pinned:
        cause = f"the result was copied into {_PAGEABLE}"
    else:
        cause = (
            "the GPU sat idle between chunks: the host waited inside the loop, or its own work "
            "there (filling pinned memory from data, Python) took longer than a chunk's GPU "
            "work. Fill the pinned input before the loop, issue every chunk, then wait once, "
            "after the loop"
        )
    raise CheckFailed(f"nothing overlapped ({seen.sentence()}): {cause}.")


def _expected_steps(x0: np.ndarray, steps: int) -> np.ndarray:
    v = x0.copy()
    for _ in range(steps):
        v = v * np.float32(0.5) + np.float32(1.0)
    return v


def capture_steps(fn: Callable[[Any, int], Any]) -> str:
    """*fn(x, steps)* captures *steps* times ``x *= 0.5; x += 1`` (in place) into a CUDA graph
    and returns it: the capture runs nothing, each launch runs all of it."""
    with standin_streams.watch():  # no capture left over from an earlier try (stand-in only)
        return _launch_captured(fn)


def _launch_captured(fn: Callable[[Any, int], Any]) -> str:
    cp, _ = gpu_modules()
    x0 = np.linspace(-1.0, 1.0, 1000, dtype=np.float32)
    x = cp.asarray(x0)
    steps = 5
    graph = fn(x, steps)
    cp.cuda.Device().synchronize()
    after_capture = x.get()
    if not np.array_equal(after_capture, x0):
        raise CheckFailed(
            "x changed before the check launched your graph: the work ran instead of being "
            "captured (issue it between stream.begin_capture() and stream.end_capture(), inside "
            "`with stream:`), or you launched the graph yourself (return it unlaunched)."
        )
    if not hasattr(graph, "launch"):
        raise CheckFailed(f"return the graph that end_capture() gives, not {type(graph).__name__}.")
    for launches in (1, 2):
        graph.launch()
        cp.cuda.Device().synchronize()
        got = x.get()
        if np.array_equal(got, x0):
            raise CheckFailed(
                "launching the graph left x unchanged: the graph must write into x itself, and "
                "`x = x * 0.5 + 1` makes a new array each time; update x in place (x *= 0.5, "
                "then x += 1)."
            )
        want = _expected_steps(x0, steps * launches)
        if not np.allclose(got, want, rtol=1e-5, atol=1e-6):
            done = next(
                (k for k in range(1, 4 * steps) if np.allclose(got, _expected_steps(x0, k))), None
            )
            said = f"{done} steps" if done else "something else"
            raise CheckFailed(
                f"after {launches} launch(es) x holds {said}, expected {steps * launches} steps "
                "(each step: x *= 0.5, then x += 1)."
            )
    return f"{steps} steps captured once, replayed by each launch of the graph."
