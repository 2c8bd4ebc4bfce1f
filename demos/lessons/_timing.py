"""GPU timing with CUDA events, shared by the lessons that launch kernels."""

from __future__ import annotations

import statistics
from collections.abc import Callable

from numba import cuda


def event_times(launch: Callable[[], None], repeats: int = 10) -> dict[str, float]:
    """Median and min milliseconds of *launch* on the GPU, after one warm-up call (compilation)."""
    launch()
    cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, stop = cuda.event(), cuda.event()
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        times.append(cuda.event_elapsed_time(start, stop))
    return {"median_ms": statistics.median(times), "min_ms": min(times), "repeats": repeats}
