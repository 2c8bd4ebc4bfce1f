"""One MPI rank per GPU, across nodes: chapter 6's examples split by rank.

Inside a Slurm allocation (``salloc``/``sbatch`` with, say, 2 nodes of 4 GPUs)::

    srun --mpi=pmi2 -n 8 python -m demos cluster mpi --example matvec
    mpiexec -n 8 python -m demos cluster mpi --example matvec      # MPICH's launcher, same

Every rank computes part ``rank`` of ``size`` with the same functions the Dask
workers use (:func:`demos.cluster.work.run_part`), on the GPU of its
*node-local* rank; rank 0 gathers the parts and checks the answer against the
one-node NumPy result. Ranks find each other through the launcher's process
management interface (PMI). Slurm gives it to MPI only when asked (``--mpi=pmi2``,
or ``MpiDefault`` in slurm.conf): without it every rank starts as a world of
its own, which this script notices and reports instead of computing N copies.
"""

from __future__ import annotations

import argparse
import os
import sys

from demos.cluster import work

# Set by srun for every task: how many it started, and which one this is.
LAUNCHED_TASKS_ENV = "SLURM_STEP_NUM_TASKS"
TASK_ENV = "SLURM_PROCID"


def alone_but_launched_with_others(world_size: int) -> int | None:
    """The number of tasks srun started when MPI sees this one alone (no PMI), else None."""
    launched = int(os.environ.get(LAUNCHED_TASKS_ENV, "1") or 1)
    return launched if world_size == 1 and launched > 1 else None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    work.add_problem_arguments(parser)


def main(args: argparse.Namespace) -> int:
    try:
        problems = work.problems_from(args)
        from mpi4py import MPI
    except ValueError as error:
        print(f"python -m demos cluster mpi: {error}", file=sys.stderr)
        return 2
    except ImportError:
        print(
            "python -m demos cluster mpi: mpi4py is not installed "
            "(pip install 'gpu-course-demos[mpi]', or ./course.sh install)",
            file=sys.stderr,
        )
        return 2
    from demos.multigpu.mpi_sum import node_local_rank

    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    launched = alone_but_launched_with_others(size)
    if launched:
        if os.environ.get(TASK_ENV, "0") == "0":
            print(
                f"python -m demos cluster mpi: srun started {launched} tasks, but MPI sees each "
                "alone: this Slurm does not connect MPI's ranks by default. Use "
                f"'srun --mpi=pmi2 -n {launched} ...' (srun --mpi=list shows what it offers), "
                "or mpiexec inside the allocation.",
                file=sys.stderr,
            )
        return 2
    local_rank, _ = node_local_rank(comm)
    all_ok = True
    for problem in problems:
        try:
            report = work.run_part(problem, rank, size, gpu_slot=local_rank)
            error = None
        except Exception as exc:  # one rank's error must not leave the others waiting
            report, error = None, f"rank {rank}: {type(exc).__name__}: {exc}"
        reports = comm.gather((report, error), root=0)
        if rank == 0:
            errors = [e for _, e in reports if e]
            if errors:
                print("\n".join(errors), file=sys.stderr)
                ok = False
            else:
                parts = [r for r, _ in reports]
                ok, line = work.compare_with_one_node(problem, work.combine(problem, parts))
                print(f"\n{problem.describe()}, {size} MPI ranks:")
                for part in parts:
                    print("  " + work.describe_report(part))
                print(f"  {line}: {'OK' if ok else 'MISMATCH'}", flush=True)
            all_ok &= ok
    return 0 if comm.bcast(all_ok, root=0) else 1
