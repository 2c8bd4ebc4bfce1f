"""One GPU per process: a pool of workers, each pinned to one device.

CUDA reads ``CUDA_VISIBLE_DEVICES`` once, when a process first initialises it,
so the variable must be set in the worker before anything touches CUDA. We use
one single-worker pool per device, with an initializer that sets it, and the
"spawn" start method so no CUDA state is inherited from the parent. Inside each
worker its GPU is then device 0. Without GPUs the workers run NumPy.

On a cluster the scheduler has already chosen this job's GPUs and says which in
``CUDA_VISIBLE_DEVICES`` (e.g. ``2,3``, or MIG UUIDs such as ``MIG-4f2...``).
Worker *i* must get the *i*-th entry of that list, never the number *i*:
``CUDA_VISIBLE_DEVICES=1`` in a job that was given GPUs 2 and 3 would run on
another job's GPU.
"""

from __future__ import annotations

import multiprocessing as mp
import os
from concurrent.futures import ProcessPoolExecutor

from demos import hardware
from demos.multigpu.splitting import split_ranges
from demos.multigpu.workload import sum_of_squares

VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"


def visible_devices(n_gpus: int, inherited: str | None = None) -> list[str]:
    """The ``CUDA_VISIBLE_DEVICES`` entries of this process's ``n_gpus`` GPUs, in CUDA's order.

    ``inherited`` defaults to this process's own variable. Unset means "all GPUs",
    numbered 0..n_gpus-1; otherwise its entries (indices or UUIDs) are kept as
    they are, so a child process sees exactly the GPUs the scheduler gave us.
    """
    if inherited is None:
        inherited = os.environ.get(VISIBLE_ENV)
    if inherited is None:
        return [str(i) for i in range(n_gpus)]
    entries = [e.strip() for e in inherited.split(",") if e.strip()]
    return entries[:n_gpus]


def worker_devices(n_workers: int, n_gpus: int, inherited: str | None = None) -> list[str | None]:
    """The device each worker is pinned to: entry *i* of the visible list, or None without GPUs.

    More workers than GPUs is refused: two processes on one GPU would only compete
    for it, and the point of the example is one GPU per process.
    """
    if n_workers < 1:
        raise ValueError(f"n_workers must be at least 1, not {n_workers}")
    if not n_gpus:
        return [None] * n_workers
    devices = visible_devices(n_gpus, inherited)
    if n_workers > len(devices):
        raise ValueError(
            f"{n_workers} workers but only {len(devices)} GPU(s) visible "
            f"({VISIBLE_ENV}={','.join(devices)}): one GPU per process; ask for fewer workers"
        )
    return devices[:n_workers]


def default_workers() -> int:
    """One worker per GPU; two CPU workers show the same pattern on a machine without GPUs."""
    return hardware.gpu_count() or 2


def _pin_to_device(device: str | None) -> None:
    if device is not None:
        os.environ[VISIBLE_ENV] = device


def run_per_device(n: int, n_workers: int | None = None) -> tuple[float, list[dict]]:
    """Sum of squares of ``n`` elements, one chunk per worker process; returns (total, reports).

    Each report says which ``CUDA_VISIBLE_DEVICES`` its worker ran with (``visible``).
    """
    devices = worker_devices(n_workers or default_workers(), hardware.gpu_count())
    ctx = mp.get_context("spawn")
    pools = [
        ProcessPoolExecutor(1, mp_context=ctx, initializer=_pin_to_device, initargs=(device,))
        for device in devices
    ]
    try:
        parts = split_ranges(n, len(devices))
        futures = [pool.submit(sum_of_squares, s.start, s.stop) for pool, s in zip(pools, parts)]
        reports = [f.result() for f in futures]
    finally:
        for pool in pools:
            pool.shutdown()
    return sum(r["sum"] for r in reports), reports
