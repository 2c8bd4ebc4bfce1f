"""One GPU per process: a pool of workers, each pinned to one device.

CUDA reads ``CUDA_VISIBLE_DEVICES`` once, when a process first initialises it,
so the variable must be set in the worker before anything touches CUDA. We use
one single-worker pool per device, with an initializer that sets it, and the
"spawn" start method so no CUDA state is inherited from the parent. Inside each
worker its GPU is then device 0. Without GPUs the workers run NumPy.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from concurrent.futures import ProcessPoolExecutor

from demos import hardware
from demos.multigpu.splitting import split_ranges
from demos.multigpu.workload import sum_of_squares


def _pin_to_device(device: int | None) -> None:
    if device is not None:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(device)


def run_per_device(n: int, n_workers: int | None = None) -> tuple[float, list[dict]]:
    """Sum of squares of ``n`` elements, one chunk per worker process; returns (total, reports).

    By default one worker per GPU; without GPUs, two CPU workers show the same pattern.
    """
    n_gpus = hardware.gpu_count()
    n_workers = n_workers or n_gpus or 2
    if n_gpus and n_workers > n_gpus:
        raise ValueError(f"{n_workers} workers but only {n_gpus} GPU(s): one GPU per process")
    ctx = mp.get_context("spawn")
    pools = [
        ProcessPoolExecutor(1, mp_context=ctx, initializer=_pin_to_device, initargs=(w if n_gpus else None,))
        for w in range(n_workers)
    ]
    try:
        futures = [pool.submit(sum_of_squares, s.start, s.stop) for pool, s in zip(pools, split_ranges(n, n_workers))]
        reports = [f.result() for f in futures]
    finally:
        for pool in pools:
            pool.shutdown()
    return sum(r["sum"] for r in reports), reports
