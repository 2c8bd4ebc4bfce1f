"""The job the one-GPU-per-process examples share: a seeded chunk's sum of squares.

The data is generated inside the worker from (seed, start, stop), so nothing big
crosses process boundaries, and any split of the index range gives the same total.
"""

from __future__ import annotations

import os

import numpy as np

from demos import hardware


def chunk_values(start: int, stop: int, xp=np):
    """The values of elements ``start:stop``: a smooth function of the index."""
    i = xp.arange(start, stop, dtype=xp.float64)
    return xp.sin(i * 1e-3)


def sum_of_squares(start: int, stop: int) -> dict:
    """Sum of squares of elements ``start:stop`` on this worker's GPU, or NumPy without one."""
    if hardware.cupy_available():
        import cupy as cp

        total = float((chunk_values(start, stop, cp) ** 2).sum().get())
        where = f"GPU {cp.cuda.runtime.getDeviceProperties(0)['name'].decode()}"
    else:
        total = float((chunk_values(start, stop) ** 2).sum())
        where = "CPU (NumPy)"
    return {
        "pid": os.getpid(),
        "visible": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "where": where,
        "sum": total,
    }


def reference(n: int) -> float:
    return float((chunk_values(0, n) ** 2).sum())
