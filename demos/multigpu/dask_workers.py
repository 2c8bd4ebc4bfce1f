"""One GPU per process with Dask: the same function on a cluster of workers.

With dask-cuda and GPUs, ``LocalCUDACluster`` starts one worker per GPU and
pins it: it sets ``CUDA_VISIBLE_DEVICES`` for each worker from the list the
scheduler gave this job, so a worker never lands on another job's GPU. As with
the process pool, there is at most one worker per GPU. Otherwise a plain
``LocalCluster`` of CPU workers runs exactly the same code with NumPy, which is
how CI checks it.
"""

from __future__ import annotations

from demos import hardware
from demos.multigpu.process_pool import visible_devices, worker_devices
from demos.multigpu.splitting import split_ranges
from demos.multigpu.workload import sum_of_squares


def make_cluster(n_workers: int | None = None):
    """(cluster, description): dask-cuda's cluster when possible, else CPU workers.

    ``n_workers`` defaults to one per GPU (two CPU workers without GPUs); more
    workers than GPUs is refused with the reason.
    """
    n_gpus = hardware.gpu_count()
    if n_gpus:
        worker_devices(n_workers or n_gpus, n_gpus)  # raises a clear error for too many workers
        try:
            from dask_cuda import LocalCUDACluster

            devices = ",".join(visible_devices(n_gpus)[: n_workers or n_gpus])
            cluster = LocalCUDACluster(CUDA_VISIBLE_DEVICES=devices)
            return cluster, "dask_cuda.LocalCUDACluster (one worker per GPU)"
        except ImportError:
            pass
    from dask.distributed import LocalCluster

    n_workers = n_workers or 2
    cluster = LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None
    )
    return cluster, f"dask.distributed.LocalCluster with {n_workers} CPU workers (no dask-cuda/GPU)"


def run_on_cluster(n: int, n_workers: int | None = None) -> tuple[float, list[dict], str]:
    """Sum of squares of ``n`` elements, one chunk per Dask worker; (total, reports, cluster
    kind)."""
    from dask.distributed import Client

    cluster, kind = make_cluster(n_workers)
    try:
        with Client(cluster) as client:
            workers = list(client.scheduler_info()["workers"])
            parts = split_ranges(n, len(workers))
            futures = [
                client.submit(sum_of_squares, s.start, s.stop, workers=[w], pure=False)
                for w, s in zip(workers, parts)
            ]
            reports = client.gather(futures)
    finally:
        cluster.close()
    return sum(r["sum"] for r in reports), reports, kind
