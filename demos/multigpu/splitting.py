"""Cutting work into per-device pieces.

Every multi-GPU example starts the same way: split an index range into nearly
equal contiguous parts, one per device. Keeping that logic here, free of any GPU
library, lets the tests check it with NumPy arrays standing in for devices.
"""

from __future__ import annotations

import numpy as np


def split_ranges(n: int, parts: int) -> list[slice]:
    """``parts`` contiguous slices covering ``range(n)``, sizes differing by at most one."""
    if not isinstance(n, (int, np.integer)) or n < 0:
        raise ValueError(f"n must be a non-negative integer, got {n!r}")
    if not isinstance(parts, (int, np.integer)) or parts < 1:
        raise ValueError(f"parts must be a positive integer, got {parts!r}")
    bounds = np.linspace(0, n, parts + 1).round().astype(int)
    return [slice(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def device_count_for(work_size: int, available: int, crossover: int) -> int:
    """How many devices to use for *work_size* elements.

    Each extra device adds a launch and a synchronisation, a fixed cost of a few
    microseconds. It only pays when every device gets at least *crossover*
    elements, the size where one device's run time is about that fixed cost.
    Below that, one device wins, which is why a small sum is slower on 4 GPUs.
    """
    if available < 1:
        raise ValueError(f"need at least one device, got {available}")
    if crossover < 1:
        raise ValueError(f"crossover must be positive, got {crossover}")
    return int(max(1, min(available, work_size // crossover)))


def matvec_split(matrix: np.ndarray, vector: np.ndarray, parts: int) -> np.ndarray:
    """Mat-vec computed slab by slab (rows split), as the GPUs do it; NumPy reference."""
    if matrix.ndim != 2 or vector.ndim != 1 or matrix.shape[1] != vector.shape[0]:
        raise ValueError(f"shapes do not fit a mat-vec: {matrix.shape} @ {vector.shape}")
    return np.concatenate([matrix[s] @ vector for s in split_ranges(matrix.shape[0], parts)])


def sum_split(vector: np.ndarray, parts: int) -> np.floating:
    """Sum computed as partial sums per device, combined at the end; NumPy reference."""
    if vector.ndim != 1:
        raise ValueError(f"expected a 1-D vector, got shape {vector.shape}")
    partial = [vector[s].sum(dtype=np.float64) for s in split_ranges(vector.shape[0], parts)]
    return np.float64(sum(partial))
