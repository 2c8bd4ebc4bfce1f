"""The LSF and Slurm job scripts ``bin/gpu-jupyter --dry-run`` prints, tested as text.

What bsub and sbatch read (#BSUB, #SBATCH lines), and the job side's security and
idle-culling choices. No cluster needed.
"""

from __future__ import annotations

from pathlib import Path

from gpu_jupyter_helpers import (
    run_script,
)


def test_lsf_job_script_has_what_bsub_accepts() -> None:
    result = run_script(
        "--dry-run",
        "--scheduler",
        "lsf",
        "--cores",
        "8",
        "--gpus",
        "2",
        "--gpu-type",
        "NVIDIAA100_SXM4_80GB",
        "--mem",
        "32G",
        "--time",
        "90",
        "--queue",
        "gpu_a100",
        "--account",
        "course42",
        "--reservation",
        "lab",
        "--constraint",
        "avx512",
        "--sched-arg=-x",
        "--module",
        "cuda/12.4",
        "--conda-env",
        "gpu course",
        "me@login",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    bsub = [line for line in out.splitlines() if line.startswith("#BSUB")]
    # In deploy/session.yml's order (the launcher's copy of it: scheduler_options.sh).
    assert bsub == [
        '#BSUB -R "span[hosts=1]"',
        "#BSUB -J gpu-jupyter",
        "#BSUB -n 8",
        '#BSUB -gpu "num=2:gmodel=NVIDIAA100_SXM4_80GB"',
        '#BSUB -R "rusage[mem=32768MB]"',
        "#BSUB -M 32768MB",
        "#BSUB -W 1:30",
        "#BSUB -q gpu_a100",
        "#BSUB -P course42",
        "#BSUB -U lab",
        '#BSUB -R "select[avx512]"',
        "#BSUB -o .gpu-jupyter/job-%J.out",
        "#BSUB -e .gpu-jupyter/job-%J.out",
        "#BSUB -x",
    ]
    # bsub reads #BSUB lines only from a script given on stdin.
    # The session's tag and the warning 10 minutes before the limit: the launcher's own.
    assert "bsub -Jd gpuj-DRYRUN -wa USR1 -wt 10 < .gpu-jupyter/session-DRYRUN.job" in out
    assert "bkill JOBID" in out
    assert "module load cuda/12.4" in out
    assert r"conda activate gpu\ course" in out
    assert "#SBATCH" not in out


def test_lsf_rusage_gpu_syntax() -> None:
    """Sites without LSB_GPU_NEW_SYNTAX ask for GPUs as a resource."""
    result = run_script(
        "--dry-run", "--scheduler", "lsf", "--gpus", "2", "--lsf-gpu-syntax", "rusage", "me@login"
    )
    assert result.returncode == 0, result.stderr
    assert '#BSUB -R "rusage[ngpus_excl_p=2]"' in result.stdout
    assert "-gpu" not in result.stdout


def test_slurm_job_script_and_cpu_only_job() -> None:
    result = run_script(
        "--dry-run",
        "--scheduler",
        "slurm",
        "--gpus",
        "0",
        "--time",
        "00:45",
        "--mem",
        "8000M",
        "--partition",
        "short",
        "--idle-timeout",
        "30",
        "--venv",
        "~/gpu course/.venv",
        "me@login",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "#SBATCH --time=0:45:00" in out
    # Warned 10 minutes (at most half the limit) before it; tagged to be found again.
    assert "sbatch --parsable --comment=gpuj-DRYRUN --signal=B:USR1@600 " in out
    assert "trap warn USR1" in out
    assert "#SBATCH --mem=8000M" in out
    assert "#SBATCH --partition=short" in out
    assert "gres" not in out  # --gpus 0 asks for no GPU
    assert "sbatch --parsable" in out
    # ~ is the home directory on the cluster, expanded there, not on this machine.
    assert r'. "$HOME"/gpu\ course/.venv/bin/activate' in out
    assert str(Path.home()) not in out
    # Security properties of the job side: a Unix socket in the private folder,
    # no TCP port, the token from a private file.
    assert "umask 077" in out
    assert '--ServerApp.sock="$sock"' in out and "--ServerApp.sock_mode=0600" in out
    assert "--ip" not in out and "--port" not in out
    assert "JUPYTER_TOKEN_FILE" in out
    assert "--IdentityProvider.token" not in out and "--token" not in out
    # Idle culling: kernels, terminals, then the server itself after 30 minutes.
    for option in (
        "--ServerApp.shutdown_no_activity_timeout=1800",
        "--MappingKernelManager.cull_idle_timeout=1800",
        "--TerminalManager.cull_inactive_timeout=1800",
    ):
        assert option in out
    # In a copy of the course, JupyterLab starts in student mode (the shipped settings)
    # with the course's own extension (jupyter/data/labextensions).
    assert 'JUPYTER_CONFIG_PATH="$PWD/jupyter/student:$PWD/jupyter/common' in out
    assert 'JUPYTER_PATH="$PWD/jupyter/data' in out


def test_slurm_scheduler_options() -> None:
    result = run_script(
        "--dry-run",
        "--scheduler",
        "slurm",
        "--gpus",
        "2",
        "--gpu-type",
        "h100",
        "--account",
        "course42",
        "--reservation",
        "lab_monday",
        "--qos",
        "debug",
        "--constraint",
        "ib&(a100|h100)",
        "--sched-arg",
        "--exclusive",
        "--sched-arg=--mail-type=END",
        "me@login",
    )
    assert result.returncode == 0, result.stderr
    sbatch = [line for line in result.stdout.splitlines() if line.startswith("#SBATCH")]
    for line in (
        "#SBATCH --gres=gpu:h100:2",
        "#SBATCH --account=course42",
        "#SBATCH --reservation=lab_monday",
        "#SBATCH --qos=debug",
        "#SBATCH --constraint=ib&(a100|h100)",
        "#SBATCH --exclusive",
        "#SBATCH --mail-type=END",
    ):
        assert line in sbatch, line
    # Raw arguments come last, so that they can override the script's own choices.
    assert sbatch[-2:] == ["#SBATCH --exclusive", "#SBATCH --mail-type=END"]
