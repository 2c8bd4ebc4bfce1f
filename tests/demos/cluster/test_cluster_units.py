"""Chapter 6 beyond one node, without a batch system: the splitting, the pinning, the job scripts.

The parts of every example, computed one after another in this process, must
give the one-node answer; each process of a node must get its own GPU from the
scheduler's list; the job scripts dask-jobqueue writes must ask Slurm and LSF
for what the options say. The same commands under a real Slurm are in
tests/demos/cluster/test_cluster_slurm.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scheduler_words import described

from demos.cluster import dask_jobs, links, mpi_ranks, work
from helpers import ROOT


def demos_command(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "demos", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=env,
        check=False,
    )


@pytest.mark.parametrize(
    "problem",
    [
        work.Problem("sum", 100_003),
        work.Problem("matvec", 301, columns=517),
        work.Problem("lorenz", 211, steps=150),
    ],
    ids=lambda p: p.example,
)
@pytest.mark.parametrize("parts", [1, 3])
def test_parts_in_any_order_give_the_one_node_answer(problem: work.Problem, parts: int) -> None:
    reports = [work.run_part(problem, part, parts) for part in reversed(range(parts))]
    assert sorted(r["elements"] for r in reports)[0][0] == 0
    ok, line = work.compare_with_one_node(problem, work.combine(problem, reports))
    assert ok, line


@pytest.mark.parametrize("example", work.EXAMPLES)
def test_more_processes_than_work_still_agree(example: str) -> None:
    problem = work.Problem(example, 3, columns=5, steps=10)
    reports = [work.run_part(problem, part, 5) for part in range(5)]
    assert sum(r["elements"][1] == r["elements"][0] for r in reports) == 2  # two idle parts
    ok, line = work.compare_with_one_node(problem, work.combine(problem, reports))
    assert ok, line


def test_a_wrong_answer_is_caught() -> None:
    problem = work.Problem("matvec", 40, columns=30)
    wrong = work.one_node(problem).copy()
    wrong[7] *= 1.01
    assert not work.compare_with_one_node(problem, wrong)[0]
    other = work.one_node(work.Problem("sum", 999))
    assert not work.compare_with_one_node(work.Problem("sum", 1000), other)[0]
    assert not work.compare_with_one_node(problem, wrong[:-1])[0]


def test_matrix_rows_do_not_depend_on_the_split() -> None:
    whole = work.matrix_rows(0, 50, 40)
    np.testing.assert_array_equal(
        np.vstack([work.matrix_rows(0, 17, 40), work.matrix_rows(17, 50, 40)]), whole
    )
    assert whole.dtype == np.float32 and whole.min() >= 0


@pytest.mark.parametrize(
    "bad",
    [
        dict(example="fft", size=10),
        dict(example="sum", size=0),
        dict(example="lorenz", size=5, steps=-1),
    ],
)
def test_bad_problems_are_refused(bad: dict) -> None:
    with pytest.raises(ValueError):
        work.Problem(**bad)


def test_each_process_gets_its_own_entry_of_the_schedulers_list(monkeypatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert work.pin_to_gpu(1) == "3"
    assert os.environ["CUDA_VISIBLE_DEVICES"] == "3"
    assert work.pin_to_gpu(0) == "3"  # already narrowed: a second task keeps its GPU
    uuids = ["MIG-aaa", "MIG-bbb", "MIG-ccc"]
    assert work.pin_to_gpu(2, uuids) == "MIG-ccc"
    with pytest.raises(ValueError, match="one GPU per process"):
        work.pin_to_gpu(2, ["4", "5"])
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert work.pin_to_gpu(3, []) is None  # no GPU: nothing to pin, NumPy runs
    assert "CUDA_VISIBLE_DEVICES" not in os.environ


def test_worker_slots_come_from_the_index_distributed_appends() -> None:
    assert dask_jobs.worker_slots(["SLURMCluster-0", "SLURMCluster-1"], 1) == {
        "SLURMCluster-0": 0,
        "SLURMCluster-1": 0,
    }
    slots = dask_jobs.worker_slots(["SLURMCluster-3-0", "SLURMCluster-3-1", "SLURMCluster-4-1"], 2)
    assert slots == {"SLURMCluster-3-0": 0, "SLURMCluster-3-1": 1, "SLURMCluster-4-1": 1}


@pytest.mark.parametrize(("text", "walltime"), [("90", "1:30"), ("0:45", "0:45"), ("600", "10:00")])
@pytest.mark.parametrize("scheduler", ["slurm", "lsf"])
def test_run_time_in_the_descriptions_words(text: str, walltime: str, scheduler: str) -> None:
    script = dask_jobs.job_script(argparse_namespace("--scheduler", scheduler, "--time", text))
    assert set(described(scheduler, "time", walltime=walltime)) <= set(script.splitlines())


@pytest.mark.parametrize("text", ["0", "1:75", "soon", "a:10"])
def test_bad_run_times_are_refused(text: str) -> None:
    with pytest.raises(dask_jobs.ClusterError, match="HH:MM or minutes"):
        dask_jobs.minutes(text)


def test_slurm_job_script_asks_for_the_gpus_and_starts_one_worker_per_gpu() -> None:
    proc = demos_command(
        "cluster", "dask", "--scheduler", "slurm", "--dry-run", "--gpus-per-job", "4",
        "--cores", "16", "--memory", "64GB", "--time", "01:00", "--partition", "gpu",
        "--account", "course42", "--prologue", "module load cuda", "--job-arg=--constraint=h100",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    script = proc.stdout
    # What deploy/session.yml says, in place of dask-jobqueue's own words for the same.
    lines = script.splitlines()
    lines = script.splitlines()
    for line in (
        *described("slurm", "always"),
        *described("slurm", "job_name", job_name="gpu-course-dask"),
        *described("slurm", "partition", partition="gpu"),
        *described("slurm", "account", account="course42"),
        *described("slurm", "cores", cores=16),
        *described("slurm", "gpus", gpus=4),
        *described("slurm", "memory", memory_mb=61036),  # 64 GB in MiB, rounded up
        *described("slurm", "time", walltime="1:00"),
        "#SBATCH --constraint=h100",
        "module load cuda",
    ):
        assert line in lines, (line, script)
    for own in ("#SBATCH -p ", "#SBATCH -A ", "#SBATCH -t ", "#SBATCH -J "):
        assert not any(line.startswith(own) for line in lines), own
    assert "--nworkers 4" in script and "--nthreads 4" in script
    assert (
        script.strip()
        .splitlines()[-1]
        .startswith(sys.executable + " -m distributed.cli.dask_worker")
    )


def test_lsf_job_script_asks_for_the_gpus_on_one_host() -> None:
    proc = demos_command(
        "cluster", "dask", "--scheduler", "lsf", "--dry-run", "--gpus-per-job", "2",
        "--queue", "gpu", "--account", "proj7", "--time", "30",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    for line in (
        *described("lsf", "partition", partition="gpu"),
        *described("lsf", "account", account="proj7"),
        *described("lsf", "cores", cores=2),
        *described("lsf", "always"),
        *described("lsf", "time", walltime="0:30"),
        *described("lsf", "gpus", gpus=2),
    ):
        assert line in lines, (line, proc.stdout)
    assert sum(line == '#BSUB -R "span[hosts=1]"' for line in lines) == 1  # dask's own skipped


def test_lsf_gpus_as_a_resource_where_the_new_syntax_is_off() -> None:
    args = argparse_namespace(
        "--scheduler", "lsf", "--gpus-per-job", "2", "--lsf-gpu-syntax", "rusage"
    )
    script = dask_jobs.job_script(args)
    assert set(described("lsf", "gpus_rusage", gpus=2)) <= set(script.splitlines())
    assert "-gpu" not in script


def test_a_cpu_only_job_asks_for_no_gpu() -> None:
    args = argparse_namespace("--scheduler", "slurm", "--gpus-per-job", "0")
    assert "--gres" not in dask_jobs.job_script(args)


def argparse_namespace(*argv: str):
    import argparse

    parser = argparse.ArgumentParser()
    dask_jobs.add_arguments(parser)
    return parser.parse_args(list(argv))


def test_too_few_cores_for_the_workers_is_refused() -> None:
    with pytest.raises(dask_jobs.ClusterError, match="fewer than the 4 workers"):
        dask_jobs.job_options(
            argparse_namespace("--scheduler", "lsf", "--gpus-per-job", "4", "--cores", "2")
        )


def test_without_a_batch_system_the_command_says_so() -> None:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent)}
    proc = demos_command("cluster", "dask", env=env)
    assert proc.returncode == 2
    assert "neither Slurm (sbatch) nor LSF (bsub) is on PATH" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_without_dask_jobqueue_the_command_says_what_to_install(monkeypatch, capsys) -> None:
    for name in ("dask_jobqueue", "dask_jobqueue.slurm", "dask_jobqueue.lsf"):
        monkeypatch.setitem(sys.modules, name, None)  # importing it raises ImportError
    args = argparse_namespace("--scheduler", "slurm", "--dry-run")
    assert dask_jobs.main(args) == 2
    error = capsys.readouterr().err
    assert "dask_jobqueue is not installed" in error and "./course.sh install" in error


def test_mpi_notices_ranks_that_cannot_see_each_other(monkeypatch) -> None:
    monkeypatch.setenv(mpi_ranks.LAUNCHED_TASKS_ENV, "4")
    assert mpi_ranks.alone_but_launched_with_others(1) == 4
    assert mpi_ranks.alone_but_launched_with_others(4) is None
    monkeypatch.delenv(mpi_ranks.LAUNCHED_TASKS_ENV)
    assert mpi_ranks.alone_but_launched_with_others(1) is None  # plain python: one rank is fine


def test_mpi_command_runs_as_one_rank_and_checks() -> None:
    proc = demos_command("cluster", "mpi", "--example", "sum", "--size", "50000")
    assert proc.returncode == 0, proc.stderr
    assert "1 MPI ranks" in proc.stdout and ": OK" in proc.stdout


def test_published_links_have_sources_and_the_network_is_the_slowest() -> None:
    data = json.loads((ROOT / "demos" / "results" / "interconnects.json").read_text())
    assert data["kind"] == "published specifications"
    assert all(link["source"].count("https://") >= 1 for link in data["links"].values())
    nvlink, pcie, network = links.published_links()
    assert nvlink.gb_per_s_each_way == 450 and network.gb_per_s_each_way == 50
    assert nvlink.gb_per_s_each_way > pcie.gb_per_s_each_way > network.gb_per_s_each_way
    assert links.seconds_to_send(12e9, network) == pytest.approx(0.24)
    assert "InfiniBand NDR" in links.table(12e9)


def test_a_part_given_a_slot_runs_pinned_to_that_gpu() -> None:
    """In a fresh process: pinning must come before CUDA starts, and must not touch this one."""
    code = (
        "from demos.cluster import work\n"
        "report = work.run_part(work.Problem('sum', 1000), 1, 2, gpu_slot=1)\n"
        "print(report['visible'], report['elements'])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": "5,7"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "7 (500, 1000)"
