"""MPI with mpi4py: every rank sums its chunk, one Allreduce combines.

Run with ``mpirun -n 2 python -m demos.multigpu.mpi_sum [--n N] [--cuda-aware]``.
Each rank uses the GPU of its *node-local* rank (``local % n_gpus``) when CuPy
finds GPUs: with 2 nodes of 4 GPUs, global ranks 4..7 are local ranks 0..3 of the
second node, and the global rank would leave GPUs idle or pile ranks onto one. The
local rank comes from a shared-memory sub-communicator, which every MPI library
provides. CuPy's device numbers count only the GPUs in ``CUDA_VISIBLE_DEVICES``,
so the scheduler's choice of GPUs is respected. A CUDA-aware MPI can read
CuPy buffers directly (``--cuda-aware``); by default the partial sum is copied
to the host first, which works with any MPI (a non-CUDA-aware MPI crashes on
device pointers). Without a GPU the ranks use NumPy.
Rank 0 checks the result against a single-process NumPy reference.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from demos.multigpu.splitting import split_ranges
from demos.multigpu.workload import chunk_values, reference


def node_local_rank(comm) -> tuple[int, int]:
    """(rank, size) of this process among the ranks on the same node."""
    from mpi4py import MPI

    local = comm.Split_type(MPI.COMM_TYPE_SHARED)
    try:
        return local.Get_rank(), local.Get_size()
    finally:
        local.Free()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument(
        "--cuda-aware", action="store_true", help="pass CuPy buffers to MPI directly"
    )
    args = parser.parse_args(argv)
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    local_rank, _ = node_local_rank(comm)
    part = split_ranges(args.n, size)[rank]
    xp, where = np, "CPU"
    try:
        import cupy as cp

        if cp.is_available():
            device = local_rank % cp.cuda.runtime.getDeviceCount()
            cp.cuda.Device(device).use()
            xp, where = cp, f"GPU {device}"
    except Exception:
        pass
    local = (chunk_values(part.start, part.stop, xp) ** 2).sum(keepdims=True)
    total = np.zeros(1) if (xp is np or not args.cuda_aware) else xp.zeros(1)
    if xp is not np and not args.cuda_aware:
        local, mode = xp.asnumpy(local), "staged through host"
    else:
        mode = "CUDA-aware (device buffers)" if xp is not np else "host buffers"
        if xp is not np:
            xp.cuda.get_current_stream().synchronize()  # MPI does not know CUDA streams
    comm.Allreduce(local, total, op=MPI.SUM)
    total = float(total[0])
    print(
        f"rank {rank}/{size} (node-local {local_rank}) on {where}: "
        f"elements {part.start}:{part.stop}",
        flush=True,
    )
    if rank == 0:
        expected = reference(args.n)
        ok = np.isclose(total, expected, rtol=1e-9)
        print(
            f"MPI total {total:.6f} ({mode}); NumPy reference {expected:.6f}; "
            f"{'OK' if ok else 'MISMATCH'}"
        )
        return 0 if ok else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
