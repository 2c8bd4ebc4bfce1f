"""The check of chapter 4b's "your turn" sum with more bytes in flight (``wide_sum``).

The student's kernel issues ``LOADS`` independent loads per iteration of a
grid-stride loop, then combines the block's sums as ``warp_sum`` did. A right
total is not enough: the check runs the kernel in the simulator, compiled again
with several ``LOADS`` (:func:`demos.patterns.inflight.with_loads`) and blocks of
several sizes, on lengths that leave a part-filled last group, and reads what
:mod:`demos.patterns.loadtrace` counted: each value read exactly once (a
dropped or doubled tail is named with its index), no race in the combine, a
warp's k-th loads on neighbouring elements (coalesced), and ``LOADS`` loads
waiting at once in some thread (each value added before the next load is one
dependent chain: one load in flight, whatever ``LOADS`` says).
"""

from __future__ import annotations

import dis
import inspect
import re
from typing import Any

import numpy as np

from demos import hardware
from demos.checks._harness import (
    CheckFailed,
    GuardedInput,
    GuardedOutput,
    launch,
    on_gpu,
    warp_error_text,
)
from demos.patterns import inflight, loadtrace
from demos.patterns.simwarp import WarpError

BLOCKS = 2  # the simulated launches: two blocks of each size
THREADS = (64, 32, 128)  # the first with every LOADS, the others with the student's own
OTHER_LOADS = (1, 3)  # tried besides the student's LOADS: none at all, and an odd one
RTOL = 1e-5  # float32 sums of at most a few thousand values in [0, 1)

_RACE_ADVICE = {
    "write": "Two threads wrote one shared slot between the same barriers: only lane 0 of "
    "each warp stores, in its own slot shared[warp].",
    "read": "The first warp read the warps' sums while others were still writing them: "
    "cuda.syncthreads() between the two, reached by every thread.",
    "uninitialised": "Each slot the first warp reads must be written first: lane 0 of each "
    "warp stores (=, not +=) its sum in shared[warp], and lanes past the last warp use 0.",
}


def _lengths(grid_threads: int, loads: int) -> tuple[int, ...]:
    """Lengths with a part-filled last group: one full group and a bit, two groups less one."""
    group = grid_threads * loads
    return (group + 37, 2 * group - 1)


def _run(kernel: Any, values: np.ndarray, threads: int, what: str, loads: int) -> dict[str, Any]:
    try:
        report, log = loadtrace.run_wide_sum(kernel, values, BLOCKS, threads)
    except WarpError as exc:
        raise CheckFailed(f"{what}: {warp_error_text(exc)}") from None
    except IndexError as exc:
        raise CheckFailed(
            f"{what}: a thread read outside values ({warp_error_text(exc)}). The last group "
            "passes the end: load i + k * stride only where it is < values.shape[0], and use "
            "0 for the others."
        ) from None
    for kind, sentence in log.problems():
        advice = _RACE_ADVICE.get(kind, "")
        buffer = _load_buffer_in_shared(kernel, log, kind, loads)
        if buffer:
            advice = (
                f"{buffer} is a cuda.shared.array: one array for the whole block, so every "
                f"thread loads into the same {buffer}[k]. The loads waiting for their use belong "
                f"in each thread's own registers: {buffer} = cuda.local.array(LOADS, float32); "
                "shared memory is only for the warps' sums."
            )
        raise CheckFailed(f"{what}: {sentence} {advice}".strip())
    return report


def _load_buffer_in_shared(kernel: Any, log: Any, kind: str, loads: int) -> str | None:
    """The name of the shared array the first *kind* race is on, when it is the load buffer
    (made with LOADS elements, or stored from ``values[...]``), else None."""
    races = log.shared.races.get(kind, {})
    site = next(iter(races), (None, None, None))[1]
    made = log.shared._classes.get(site)
    if made is None:
        return None
    name = made._course_shared[1].partition(" (")[0]
    code, offset = site
    before = [i for i in dis.get_instructions(code) if i.offset <= offset][-8:]
    sized = any(i.argval == "LOADS" for i in before)
    source = _source(kernel)
    stored = re.search(rf"\b{re.escape(name)}\[[^\]]*\]\s*=\s*values\[", source)
    return name if sized or stored else None


def _source(kernel: Any) -> str:
    try:
        return inspect.getsource(getattr(kernel, "py_func", None) or kernel.fn)
    except (OSError, TypeError, AttributeError):
        return ""


def _reads(report: dict[str, Any], what: str) -> None:
    reads = report["reads"]
    never, twice = np.flatnonzero(reads == 0), np.flatnonzero(reads > 1)
    if never.size:
        i = int(never[0])
        raise CheckFailed(
            f"{what}: values[{i}] was never read ({never.size} of {reads.size} values "
            "dropped). The last group is only partly inside the array: keep looping while its "
            "first index is < n and load each i + k * stride that is < n."
        )
    if twice.size:
        i = int(twice[0])
        raise CheckFailed(
            f"{what}: values[{i}] was read {int(reads[i])} times ({twice.size} values read more "
            "than once). One iteration reads i, i + stride, ..., i + (LOADS - 1) * stride, so "
            "the next starts at i + LOADS * stride."
        )


def _combine(report: dict[str, Any], values: np.ndarray, what: str) -> None:
    total, expected = float(report["partial"].astype(np.float64).sum()), float(values.sum())
    if np.isclose(total, expected, rtol=RTOL):
        total = expected  # right: only the writes below can still be wrong
    elif np.isnan(total):
        raise CheckFailed(
            f"{what}: the block sums add up to nan. A value was used before anything was stored "
            "in it: an element of a cuda.local.array (or shared array) read before it was "
            "written holds garbage on a GPU (NaN here; the simulator's zeros would hide it). "
            "Store every got[k] (got[k] = values[i], or 0 past the end) before adding it."
        )
    elif report.get("reused_loads"):
        i, times = next(iter(sorted(report["reused_loads"].items())))
        raise CheckFailed(
            f"{what}: the block sums add up to {total:.4f}, the values to {expected:.4f}: "
            f"values[{i}] was read once but added {times + 1} times "
            f"({len(report['reused_loads'])} values like it). In the last, part-filled group a "
            "got[k] that was not loaded again still holds the previous iteration's value: set "
            "got[k] = 0 where i >= n (got[k] = values[i] if i < n else float32(0))."
        )
    writes = report["most_writes_to_a_block_sum"]
    if writes > 1:
        raise CheckFailed(
            f"{what}: one block sum in partial was written {writes} times. `partial[b] += acc` "
            "from many threads is a read, an add and a write that a GPU interleaves, losing "
            "sums (the simulator runs one thread at a time, so it looks right). Combine in the "
            "block first, as in warp_sum, and let one thread write partial[cuda.blockIdx.x]."
        )
    if not np.isclose(total, expected, rtol=RTOL):
        raise CheckFailed(
            f"{what}: the block sums add up to {total:.4f}, the values to {expected:.4f}. Is "
            "every warp's sum combined, with each warp's lane 0 in shared[warp]?"
        )


def _shape_of_loads(report: dict[str, Any], loads: int, what: str) -> None:
    gap = report["lane_gap"]
    if gap is not None and gap != 1:
        raise CheckFailed(
            f"{what}: neighbouring threads' k-th loads lie {gap} elements apart, so each load "
            f"of a warp touches {min(gap, 8)} times the 32-byte sectors it needs (chapter 4's "
            "coalescing). Let thread i load i, i + stride, i + 2 * stride, ... with stride = "
            "cuda.gridsize(1): a warp's k-th loads are then neighbours."
        )
    if loads > 1 and report["loads_in_flight"] < loads:
        raise CheckFailed(
            f"{what}: no thread ever had more than {report['loads_in_flight']} load(s) "
            f"waiting, although LOADS = {loads}: as written, each value is added before the "
            "next is loaded, one dependent chain. The compiler may move such loads up by "
            "itself, but nothing promises it (a guarded load, such as one under `if i < n`, "
            "it often cannot), and this exercise is about saying it in the code: load all "
            "LOADS values into registers first (got[k] = values[...] for every k), then add "
            "them, so that the loads are independent and all on their way at once."
        )


def wide_sum(kernel: Any) -> str:
    """Right totals with several LOADS and block sizes, tails included; each value read once, no
    race, coalesced, LOADS loads in flight."""
    own = inflight.loads_of(kernel)
    if own is None:
        raise CheckFailed(
            "the kernel reads no constant LOADS: define LOADS = 4 (an int) above the kernel and "
            "use it for the loads per iteration."
        )
    tried = [own, *sorted(set(OTHER_LOADS) - {own})]
    most_in_flight = 0
    for loads in tried:
        try:
            in_flight = _with_loads(kernel, loads, own)
        except CheckFailed as problem:
            if loads == own:
                raise
            raise CheckFailed(
                f"{problem} Your kernel passed with your own LOADS = {own}: does all of it follow "
                "LOADS (loops over range(LOADS)), with no fixed number of loads?"
            ) from None
        if loads == own:
            most_in_flight = in_flight
    if on_gpu():
        _on_the_gpu(kernel)
    return (
        f"right totals with LOADS = {', '.join(map(str, sorted(tried)))} and blocks of "
        f"{min(THREADS)} to {max(THREADS)} threads, part-filled last groups included; each value "
        f"read once, a warp's loads coalesced, and with your LOADS = {own} up to "
        f"{most_in_flight} loads in flight per thread (one chain would have 1)."
    )


def _with_loads(kernel: Any, loads: int, own: int) -> int:
    """Run the launches for one LOADS (more of them for the student's own); the most loads in
    flight seen."""
    rng = np.random.default_rng(12 + loads)
    most_in_flight = 0
    compiled = inflight.with_loads(kernel, loads)
    launches = [(THREADS[0], n) for n in _lengths(BLOCKS * THREADS[0], loads)]
    if loads == own:
        launches += [(t, n) for t in THREADS[1:] for n in _lengths(BLOCKS * t, loads)[:1]]
        launches.append((THREADS[0], 5))  # fewer values than threads
    for threads, n in launches:
        values = rng.random(n).astype(np.float32)
        what = f"LOADS = {loads}, {BLOCKS} blocks of {threads} threads, n = {n}"
        report = _run(compiled, values, threads, what, loads)
        _reads(report, what)
        _combine(report, values.astype(np.float64), what)
        if n >= BLOCKS * threads * loads:  # some thread has a whole group
            _shape_of_loads(report, loads, what)
            most_in_flight = max(most_in_flight, report["loads_in_flight"])
    return most_in_flight


def _on_the_gpu(kernel: Any) -> None:
    """The compiled kernel on the GPU, blocks of 256 and 1,024 threads, a length no launch
    divides."""
    n = 1_000_003
    values = np.random.default_rng(13).random(n).astype(np.float32)
    expected = float(values.astype(np.float64).sum())
    blocks = 2 * max(1, hardware.multiprocessors())
    for threads in (256, 1024):
        what = f"on the GPU, {blocks} blocks of {threads} threads, n = {n:,}"
        out = GuardedOutput((blocks,), np.float32, initial=np.zeros(blocks, np.float32))
        given = GuardedInput(values)  # NaN past the end: an unguarded load spoils the sum
        launch(kernel, blocks, threads, given.view, out.view, what=what)
        total = float(out.fetch(what).astype(np.float64).sum())
        if not np.isclose(total, expected, rtol=1e-4):
            raise CheckFailed(
                f"{what}: the block sums add up to {total:,.2f}, not {expected:,.2f}."
            )
