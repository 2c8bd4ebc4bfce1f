"""Dask workers as batch jobs: chapter 6's examples on the GPUs of several nodes.

``python -m demos cluster dask --jobs 4 --gpus-per-job 2 ...`` asks the batch
system (Slurm through dask-jobqueue's ``SLURMCluster``, LSF through
``LSFCluster``) for *jobs* jobs of *gpus-per-job* GPUs each. The scheduler
places them on whatever nodes are free; in each job one Dask worker process
starts per GPU. The scheduler of the Dask cluster runs here, in this process,
and every worker connects back to it over the network.

One worker per GPU: the batch system tells each job which GPUs it got in
``CUDA_VISIBLE_DEVICES`` (e.g. ``2,3``), shared by the job's workers. Before a
worker's first task touches CUDA, :func:`demos.cluster.work.pin_to_gpu` narrows
the variable to the worker's own entry: its index in the job, which
distributed's worker command appends to the worker's name (``...-0``, ``...-1``).

Every wait has a time limit, and the jobs are cancelled at the end, also after
an error or Ctrl-C. Without a GPU the workers compute with NumPy, which is how
the course's tests run this under a real Slurm on one machine.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import sys
import time
from typing import Any

from demos.cluster import schedulers, work

SCHEDULERS = {"slurm": "sbatch", "lsf": "bsub"}
MEMORY_GB_PER_WORKER = 16  # host memory: a worker's slab of the chapter's mat-vec is 3 GB
#: dask-jobqueue's own header lines for what the course's description asks instead
#: (name, partition or queue, account, tasks, cores, memory, run time).
OWN_LINES = {
    "slurm": (
        *("#SBATCH -J ", "#SBATCH -p ", "#SBATCH -A ", "#SBATCH -n ", "#SBATCH -t "),
        *("#SBATCH --cpus-per-task=", "#SBATCH --mem="),
    ),
    "lsf": (
        *("#BSUB -J ", "#BSUB -q ", "#BSUB -P ", "#BSUB -n ", "#BSUB -W ", "#BSUB -M "),
        '#BSUB -R "span[hosts=1]"',
    ),
}


class ClusterError(RuntimeError):
    """A problem the user can fix (no batch system, jobs that never start); said in one line."""


def detect_scheduler() -> str:
    """'slurm' or 'lsf', whichever submit command is on PATH."""
    for name, command in SCHEDULERS.items():
        if shutil.which(command):
            return name
    raise ClusterError(
        "neither Slurm (sbatch) nor LSF (bsub) is on PATH: run this on a cluster's login node, "
        "or pass --scheduler with --dry-run to see the job script"
    )


def minutes(text: str) -> int:
    """Run time from ``HH:MM`` or a number of minutes, as bin/gpu-jupyter's ``--time`` takes it."""
    hours, _, mins = text.rpartition(":")
    try:
        total = int(hours or 0) * 60 + int(mins)
        valid = total >= 1 and (not hours or 0 <= int(mins) < 60)
    except ValueError:
        valid = False
    if not valid:
        raise ClusterError(f"--time must be HH:MM or minutes, not {text!r}")
    return total


def job_directives(args: argparse.Namespace, cores: int, memory: str) -> list[str]:
    """The job's batch options from the course's scheduler description (deploy/session.yml).

    Its words for the course's every job, the name, cores, GPUs, memory, run time,
    partition and account, each option with its values (dask-jobqueue puts them
    after its own header, whose lines for the same things are skipped: OWN_LINES).
    LSF has two ways to ask for GPUs, as bin/gpu-jupyter's ``--lsf-gpu-syntax``
    says: ``-gpu "num=N"`` where the site enables LSB_GPU_NEW_SYNTAX, else a resource.
    """
    from dask.utils import parse_bytes

    description = schedulers.description()
    values = {
        "job_name": description["job_names"]["dask"],
        "cores": cores,
        "gpus": args.gpus_per_job,
        "memory_mb": -(-parse_bytes(memory) // 2**20),
        "walltime": schedulers.walltime(minutes(args.time)),
        "partition": args.queue,
        "account": args.account,
    }
    gpus = "gpus_rusage" if args.scheduler == "lsf" and args.lsf_gpu_syntax == "rusage" else "gpus"
    keys = ("always", "job_name", "cores", gpus, "memory", "time", "partition", "account")
    table = description["scheduler_options"][args.scheduler]
    return schedulers.option_lines(schedulers.words(table, keys, values))


def job_options(args: argparse.Namespace) -> dict[str, Any]:
    """dask-jobqueue's keyword arguments for one job, from the command line."""
    workers = max(1, args.gpus_per_job)
    cores = args.cores or workers
    if cores < workers:
        raise ClusterError(
            f"--cores {cores} is fewer than the {workers} workers of a job (one per GPU)"
        )
    memory = args.memory or f"{MEMORY_GB_PER_WORKER * workers}GiB"
    return {
        "cores": cores,
        "processes": workers,
        "memory": memory,  # also each worker's memory limit
        "python": args.python,
        "interface": args.interface,
        "log_directory": args.log_directory,
        "job_script_prologue": list(args.prologue),
        "job_directives_skip": list(OWN_LINES[args.scheduler]),
        "job_extra_directives": job_directives(args, cores, memory) + list(args.job_arg),
        "death_timeout": 60,  # workers stop when this process (their scheduler) is gone
    }


def job_script(args: argparse.Namespace) -> str:
    """The batch script one job would run, made without submitting or starting anything."""
    job = _job_class(args.scheduler, [])
    return job(
        scheduler="tcp://SCHEDULER:8786", name="dask-worker", **job_options(args)
    ).job_script()


def _job_class(scheduler: str, failures: list[str]):
    """dask-jobqueue's job class for *scheduler*, noting why a submission failed in *failures*.

    dask-jobqueue submits in the background and only logs a refused job (a wrong
    partition, say); noted here, the wait for the workers stops at once and says why.
    """
    if scheduler == "slurm":
        from dask_jobqueue.slurm import SLURMJob as Job
    else:
        from dask_jobqueue.lsf import LSFJob as Job

    class NotingJob(Job):
        async def start(self) -> None:
            try:
                await super().start()
            except Exception as error:
                text = str(error)
                failures.append(text.partition("stderr:")[2].strip() or text)
                raise

    return NotingJob


def make_cluster(args: argparse.Namespace, failures: list[str]):
    """An unscaled ``SLURMCluster`` or ``LSFCluster`` (its scheduler runs in this process)."""
    if args.scheduler == "slurm":
        from dask_jobqueue import SLURMCluster as Cluster
    else:
        from dask_jobqueue import LSFCluster as Cluster
    return Cluster(
        job_cls=_job_class(args.scheduler, failures),
        scheduler_options={"dashboard_address": None},
        **job_options(args),
    )


def wait_for_workers(client, n_workers: int, failures: list[str], args) -> None:
    """Return once *n_workers* workers are connected; a clear error when jobs fail or wait."""
    deadline = time.monotonic() + args.timeout
    while (have := len(client.scheduler_info(n_workers=-1)["workers"])) < n_workers:
        if failures:
            raise ClusterError(f"{args.scheduler} refused a job: {failures[0]}")
        if time.monotonic() > deadline:
            raise ClusterError(
                f"only {have} of {n_workers} workers started within {args.timeout:.0f} s: the "
                "jobs may still be queued (see squeue/bjobs), or failed (see their logs in "
                f"{args.log_directory or 'the job output files'}); they are cancelled now"
            )
        time.sleep(0.5)


def worker_slots(names: list[Any], per_job: int) -> dict[Any, int]:
    """Each worker's place in its job: the ``-<i>`` distributed appends when a job has several."""
    if per_job == 1:
        return {name: 0 for name in names}
    return {name: int(str(name).rsplit("-", 1)[1]) for name in names}


def run_problem(client, problem: work.Problem, per_job: int, timeout: float) -> list[dict]:
    """One part of *problem* per worker, pinned to its worker; the reports, in part order."""
    from dask.distributed import wait

    workers = client.scheduler_info(n_workers=-1)["workers"]
    slots = worker_slots([info["name"] for info in workers.values()], per_job)
    addresses = sorted(workers, key=lambda a: str(workers[a]["name"]))
    futures = [
        client.submit(
            work.run_part,
            problem,
            part,
            len(addresses),
            slots[workers[address]["name"]],
            workers=[address],
            allow_other_workers=False,
            pure=False,
        )
        for part, address in enumerate(addresses)
    ]
    _, not_done = wait(futures, timeout=timeout)
    if not_done:
        raise ClusterError(f"{len(not_done)} of {len(futures)} parts unfinished after {timeout} s")
    return client.gather(futures)


def run(args: argparse.Namespace, problems: list[work.Problem]) -> bool:
    """Start the jobs, run every problem over their workers, check each; True when all agree."""
    from dask.distributed import Client

    per_job = max(1, args.gpus_per_job)
    failures: list[str] = []
    cluster = make_cluster(args, failures)
    all_ok = True
    try:
        # A refused job is reported by wait_for_workers; keep the library's traceback out.
        for name in ("tornado.application", "asyncio", "distributed.deploy.spec"):
            logging.getLogger(name).setLevel(logging.CRITICAL)
        cluster.scale(jobs=args.jobs)
        print(
            f"submitted {args.jobs} {args.scheduler} job(s) of {per_job} worker(s); "
            f"waiting up to {args.timeout:.0f} s for them to start",
            flush=True,
        )
        with Client(cluster) as client:
            start = time.monotonic()
            wait_for_workers(client, args.jobs * per_job, failures, args)
            print(
                f"{args.jobs * per_job} workers ready after {time.monotonic() - start:.1f} s",
                flush=True,
            )
            for problem in problems:
                reports = run_problem(client, problem, per_job, args.timeout)
                ok, line = work.compare_with_one_node(problem, work.combine(problem, reports))
                all_ok &= ok
                print(f"\n{problem.describe()}, {len(reports)} Dask workers:")
                for report in reports:
                    print("  " + work.describe_report(report))
                print(f"  {line}: {'OK' if ok else 'MISMATCH'}", flush=True)
    except BaseException:
        # The reason is already on its way up; a worker whose job was refused trips the
        # library's own check while closing, which would only hide it.
        with contextlib.suppress(Exception):
            cluster.close()  # cancels every job it submitted (scancel / bkill)
        raise
    cluster.close()  # cancels every job it submitted (scancel / bkill)
    return all_ok


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scheduler", choices=sorted(SCHEDULERS), help="batch system (default: detected)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="batch jobs to start (default 2)")
    parser.add_argument(
        "--gpus-per-job",
        type=int,
        default=1,
        help="GPUs per job, one Dask worker each; 0: a CPU-only job with one worker (default 1)",
    )
    parser.add_argument(
        "--cores", type=int, default=None, help="CPU cores per job (default: one per worker)"
    )
    parser.add_argument(
        "--memory",
        default=None,
        help=f"memory per job, e.g. 64GiB (default: {MEMORY_GB_PER_WORKER}GiB per worker)",
    )
    parser.add_argument(
        "--time", default="00:30", help="run-time limit per job, HH:MM or minutes (default 00:30)"
    )
    parser.add_argument(
        "--queue", "--partition", dest="queue", default=None, help="Slurm partition / LSF queue"
    )
    parser.add_argument("--account", default=None, help="Slurm account / LSF project charged")
    parser.add_argument(
        "--interface",
        default=None,
        help="network interface the workers and scheduler talk over, e.g. ib0 (default: any)",
    )
    parser.add_argument(
        "--python",
        default=sys.executable,
        help="the course environment's Python on the compute nodes (default: this one)",
    )
    parser.add_argument(
        "--prologue",
        action="append",
        default=[],
        help="a shell line the job runs first, e.g. 'module load cuda' (repeatable)",
    )
    parser.add_argument(
        "--job-arg",
        action="append",
        default=[],
        help="another batch option for each job, e.g. --job-arg=--constraint=h100 (repeatable)",
    )
    parser.add_argument(
        "--lsf-gpu-syntax",
        choices=("new", "rusage"),
        default="new",
        help='LSF GPU request: -gpu "num=N" (new) or -R "rusage[ngpus_excl_p=N]"',
    )
    parser.add_argument(
        "--log-directory",
        default=os.path.expanduser("~/.cache/gpu-course/dask-logs"),
        help="where the jobs write their output (default ~/.cache/gpu-course/dask-logs)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=300,
        help="seconds to wait for the jobs to start, and for each example (default 300)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="print one job's batch script; submit nothing"
    )
    work.add_problem_arguments(parser)


def main(args: argparse.Namespace) -> int:
    try:
        if args.jobs < 1 or args.gpus_per_job < 0:
            raise ClusterError("--jobs must be at least 1 and --gpus-per-job at least 0")
        problems = work.problems_from(args)
        args.scheduler = args.scheduler or detect_scheduler()
        if args.dry_run:
            print(job_script(args))
            return 0
        if args.log_directory:
            os.makedirs(args.log_directory, exist_ok=True)
        return 0 if run(args, problems) else 1
    except (ClusterError, ValueError) as error:
        print(f"python -m demos cluster dask: {error}", file=sys.stderr)
        return 2
    except ImportError as error:
        missing = (error.name or "").split(".")[0] or "a package it needs"
        print(
            f"python -m demos cluster dask: {missing} is not installed "
            "(pip install gpu-course-demos, or ./course.sh install)",
            file=sys.stderr,
        )
        return 2
