"""Streams by hand: CuPy or its stand-in, a chunk of work, and what a timeline says overlapped.

A chapter cell that builds a pipeline of streams needs CuPy on a GPU and the
course's stand-in (:mod:`demos.cupy_standin`) without one, under the same
names (:func:`gpu_modules`). The work of one chunk is an element-wise kernel
whose cost is set by its iterations (:func:`make_work`). On a GPU the copies
and kernels are timed with CUDA events on the stream each ran on
(:class:`demos.profiling.timeline.EventTimeline`), and :func:`read_overlap`
says whether a copy of one chunk ran while another chunk's kernel did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from demos import cupy_standin, hardware
from demos import cupy_standin_streams as standin_streams
from demos.profiling.timeline import Interval, overlap_time

#: The names a pipeline's steps carry in its timeline.
COPY_IN, KERNEL, COPY_OUT = "copy in", "kernel", "copy out"


def gpu_modules() -> tuple[Any, Any]:
    """``(cupy, cupyx)`` where CuPy runs on a GPU; the stand-ins (no clock, a log) otherwise."""
    if hardware.cupy_available():
        import cupy
        import cupyx

        return cupy, cupyx
    return cupy_standin.module, standin_streams.cupyx


def work_numpy(x: np.ndarray, iterations: int) -> np.ndarray:
    """What one chunk's kernel computes, in NumPy float32: the reference of every check."""
    v = np.asarray(x, np.float32).copy()
    for _ in range(iterations):
        v = v * np.float32(0.999) + np.float32(0.001)
    return v


def first_wrong_chunk(
    result: np.ndarray, data: np.ndarray, iterations: int, columns: int = 2048
) -> int | None:
    """The first row (chunk) of *result* that is not ``work_numpy`` of *data*'s row, or None.

    Checked on the first, the last and evenly spread columns (at most *columns*): the work
    is element-wise, so a chunk computed wrongly, or never copied back, shows in any column,
    while NumPy on the whole of a GPU-sized batch (thousands of iterations over millions of
    elements) would take minutes.
    """
    width = data.shape[-1]
    picked = np.unique(np.linspace(0, width - 1, min(columns, width)).astype(np.intp))
    expected = work_numpy(data[..., picked], iterations)
    close = np.isclose(np.asarray(result)[..., picked], expected, rtol=1e-4, atol=1e-5)
    wrong = np.argwhere(~close)
    return int(wrong[0][0]) if len(wrong) else None


def make_work(cp: Any, iterations: int) -> Callable[[Any], Any]:
    """``work(x)``: one kernel on the current stream, a new device array out, *iterations*
    multiply-adds per element (on the stand-in, NumPy's, logged as one kernel)."""
    if cp is cupy_standin.module:

        def standin_work(x: Any) -> Any:
            if not isinstance(x, cupy_standin.DeviceArray):  # as CuPy's kernel refuses it
                raise TypeError(
                    f"Unsupported type {type(x)}: work(x) runs on the GPU and takes a device "
                    "array; copy the chunk in first"
                )
            data = x._data  # the stand-in's own look at its array: not a transfer
            out = cupy_standin.DeviceArray(np.full(data.shape, np.nan, np.float32))
            standin_streams.issue(
                KERNEL, lambda: np.copyto(out._data, work_numpy(data, iterations))
            )
            return out

        return standin_work
    from demos.profiling.bench import _work_kernel

    kernel = _work_kernel(cp)

    def gpu_work(x: Any) -> Any:
        y = cp.empty_like(x)
        kernel(x, np.float32(0), np.int32(iterations), y)
        return y

    return gpu_work


@dataclass(frozen=True)
class Overlap:
    """What a timeline of copies and kernels on several streams shows."""

    streams: int  # lanes that ran copies or kernels
    null_stream: bool  # some of it ran on the default stream
    copy_ms: float
    kernel_ms: float
    hidden_ms: float  # copy time during which a kernel of another stream ran
    span_ms: float

    @property
    def overlapped(self) -> bool:
        """A quarter of the copy time hidden is more than timing noise: the streams overlapped."""
        return self.hidden_ms > 0.25 * self.copy_ms

    def sentence(self) -> str:
        share = self.hidden_ms / self.copy_ms if self.copy_ms else 0.0
        return (
            f"{self.hidden_ms:.2f} of {self.copy_ms:.2f} ms of copies ran while a kernel of "
            f"another stream did ({share:.0%}), over {self.streams} stream(s), "
            f"in {self.span_ms:.2f} ms"
        )


def read_overlap(intervals: Sequence[Interval]) -> Overlap:
    """How much copy time of each stream ran under kernels of the *other* streams."""
    lanes = sorted({iv.lane for iv in intervals})
    copies = [iv for iv in intervals if iv.name in (COPY_IN, COPY_OUT)]
    kernels = [iv for iv in intervals if iv.name == KERNEL]
    hidden = sum(
        overlap_time(
            [iv for iv in copies if iv.lane == lane], [iv for iv in kernels if iv.lane != lane]
        )
        for lane in lanes
    )
    span = max(iv.end for iv in intervals) - min(iv.start for iv in intervals) if intervals else 0.0
    return Overlap(
        streams=len(lanes),
        null_stream="default stream" in lanes,
        copy_ms=sum(iv.duration for iv in copies),
        kernel_ms=sum(iv.duration for iv in kernels),
        hidden_ms=hidden,
        span_ms=span,
    )


def is_pinned(cp: Any, host: np.ndarray) -> bool:
    """Whether *host* lies in page-locked memory (CuPy asks the driver; the stand-in its type)."""
    if isinstance(host, standin_streams.PinnedArray):
        return True
    if cp is cupy_standin.module or not isinstance(host, np.ndarray):
        return False
    try:
        attributes = cp.cuda.runtime.pointerGetAttributes(host.ctypes.data)
    except Exception:  # noqa: BLE001 - pageable memory unknown to an older driver raises
        return False
    return int(attributes.type) == 1  # cudaMemoryTypeHost: page-locked host memory
