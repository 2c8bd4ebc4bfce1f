"""Tests of the cluster launch script ``bin/gpu-jupyter``.

Option checking, ``--help`` and the generated LSF/Slurm job scripts are tested
as text. The end-to-end tests run the script against a REAL Slurm (slurmctld +
slurmd for this one machine) reached through a REAL sshd on 127.0.0.1: the
"login node" and the "compute node" are both this machine; LSF, which cannot
be installed, is played by the bsub/bjobs/bkill stand-in ``tests/slurm/fake-lsf``
on the same machine. They need root and
the Debian packages ``slurm-wlm munge openssh-server`` (CI installs them) and
skip with the missing piece named otherwise.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "slurm"))
from local_cluster import LocalCluster, missing_requirements  # noqa: E402

SCRIPT = Path(__file__).resolve().parents[1] / "bin" / "gpu-jupyter"


def run_script(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


# ---------------------------------------------------------------- no cluster needed


def test_help_lists_every_option() -> None:
    result = run_script("--help")
    assert result.returncode == 0
    for option in ("--scheduler", "--cores", "--gpus", "--mem", "--time", "--module",
                   "--conda-env", "--venv", "--workdir", "--local-port", "--queue",
                   "--timeout", "--dry-run"):
        assert option in result.stdout, option


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpus", "two"], "--gpus must be a whole number"),
        (["--gpus", "-1"], "--gpus must be a whole number"),
        (["--cores", "0"], "--cores must be a whole number >= 1"),
        (["--time", "1:75"], "minutes must be below 60"),
        (["--time", "2h"], "--time must be HH:MM or a number of minutes"),
        (["--mem", "lots"], "--mem must be a size"),
        (["--scheduler", "pbs"], "--scheduler must be 'slurm' or 'lsf'"),
        (["--local-port", "80"], "--local-port must be a number from 1024"),
        (["--timeout", "soon"], "--timeout must be a number of seconds"),
        (["--queue", "gpu;rm -rf ~"], "characters a queue name cannot have"),
        (["--frobnicate"], "unknown option"),
        ([], "no login host given"),
    ],
)
def test_bad_values_are_refused_before_connecting(args: list[str], message: str) -> None:
    # The host does not exist: a refusal must come before any SSH attempt.
    host = [] if not args else ["nobody@host.invalid"]
    result = run_script(*args, *host)
    assert result.returncode == 2
    assert message in result.stderr
    assert "connecting" not in result.stderr


def test_lsf_job_script_has_what_bsub_accepts() -> None:
    result = run_script("--dry-run", "--scheduler", "lsf", "--cores", "8", "--gpus", "2",
                        "--mem", "32G", "--time", "90", "--queue", "gpu_a100",
                        "--module", "cuda/12.4", "--conda-env", "gpu course", "me@login")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    bsub = [line for line in out.splitlines() if line.startswith("#BSUB")]
    assert bsub == [
        "#BSUB -J gpu-jupyter",
        "#BSUB -n 8",
        '#BSUB -R "span[hosts=1]"',
        '#BSUB -R "rusage[mem=32768MB]"',
        "#BSUB -M 32768MB",
        '#BSUB -gpu "num=2"',
        "#BSUB -W 1:30",
        "#BSUB -q gpu_a100",
        "#BSUB -o .gpu-jupyter/job-%J.out",
        "#BSUB -e .gpu-jupyter/job-%J.out",
    ]
    # bsub reads #BSUB lines only from a script given on stdin.
    assert "bsub < .gpu-jupyter/session-DRYRUN.job" in out
    assert "bkill JOBID" in out
    assert "module load cuda/12.4" in out
    assert r"conda activate gpu\ course" in out
    assert "#SBATCH" not in out


def test_slurm_job_script_and_cpu_only_job() -> None:
    result = run_script("--dry-run", "--scheduler", "slurm", "--gpus", "0", "--time", "00:45",
                        "--mem", "8000M", "--partition", "short", "me@login")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "#SBATCH --time=0:45:00" in out
    assert "#SBATCH --mem=8000M" in out
    assert "#SBATCH --partition=short" in out
    assert "gres" not in out  # --gpus 0 asks for no GPU
    assert "sbatch --parsable" in out
    # Security properties of the job side.
    assert "umask 077" in out
    assert "--ip=127.0.0.1" in out
    assert "JUPYTER_TOKEN_FILE" in out
    assert "--IdentityProvider.token" not in out and "--token" not in out


def test_local_port_in_use_is_refused_before_submitting() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_script("--local-port", str(port), "nobody@host.invalid")
    assert result.returncode == 1
    assert f"local port {port} is already in use" in result.stderr
    assert "connecting" not in result.stderr


# ----------------------------------------------------------- helpers


def api_status(port: int, token: str | None) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/status")
    if token is not None:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_for(pattern: str, log: Path, process: subprocess.Popen, seconds: float) -> re.Match:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        match = re.search(pattern, log.read_text())
        if match:
            return match
        if process.poll() is not None:
            pytest.fail(f"the launch script exited early ({process.returncode}):\n{log.read_text()}")
        time.sleep(0.3)
    pytest.fail(f"no {pattern!r} after {seconds}s:\n{log.read_text()}")


# ----------------------------------------------------------- real Slurm + sshd


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    missing = missing_requirements()
    if missing:
        pytest.skip(missing)
    with LocalCluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


def launch(cluster: LocalCluster, log: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(cluster.short_tmp)}
    with log.open("w") as out:
        return subprocess.Popen(
            [str(SCRIPT), "--ssh-config", str(cluster.ssh_config), *args, "testlogin"],
            stdout=out, stderr=subprocess.STDOUT, text=True, env=env,
        )


def job_alive(cluster: LocalCluster, scheduler: str, job_id: str) -> bool:
    if scheduler == "slurm":
        return job_id in cluster.squeue().split()
    pid = int((cluster.home / ".fake-lsf" / f"{job_id}.pid").read_text())
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("scheduler", ["slurm", "lsf"])
def test_end_to_end(cluster: LocalCluster, tmp_path: Path, scheduler: str) -> None:
    """Slurm is real; LSF is the bsub/bjobs/bkill stand-in in tests/slurm/fake-lsf."""
    log = tmp_path / "launch.log"
    local_port = free_port()
    # Slurm: the scheduler is detected on the login node (sbatch is found first).
    choice = ["--scheduler", "lsf"] if scheduler == "lsf" else []
    process = launch(cluster, log, *choice, "--gpus", "0", "--cores", "1", "--mem", "500M",
                     "--time", "10", "--timeout", "60", "--venv", sys.prefix,
                     "--workdir", str(tmp_path), "--local-port", str(local_port))
    job_id = None
    try:
        ready = wait_for(r"JupyterLab is ready: (http://127\.0\.0\.1:(\d+)/lab\?token=(\w+))",
                         log, process, 75)
        job_id = re.search(r"submitted job (\d+)", log.read_text()).group(1)
        if scheduler == "slurm":
            assert "scheduler: slurm" in log.read_text()
        port, token = int(ready.group(2)), ready.group(3)
        assert port == local_port and len(token) >= 32
        assert api_status(port, token) == 200
        assert api_status(port, None) in (401, 403)
        assert api_status(port, "0" * 48) in (401, 403)
        assert job_alive(cluster, scheduler, job_id)

        # Nothing secret is world-readable, and the token is on no command line.
        state = cluster.home / ".gpu-jupyter"
        assert state.stat().st_mode & 0o077 == 0
        for path in state.glob("*"):
            assert path.stat().st_mode & 0o077 == 0, path
        assert (state / f"job-{job_id}.out").exists()
        command_lines = subprocess.run(["ps", "-eo", "args"], capture_output=True,
                                       text=True, check=True).stdout
        assert token not in command_lines
    finally:
        process.send_signal(signal.SIGINT)
        try:
            rc = process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert rc == 130, log.read_text()
    assert job_id is not None
    assert f"cancelling job {job_id}" in log.read_text()
    deadline = time.monotonic() + 20
    while job_alive(cluster, scheduler, job_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not job_alive(cluster, scheduler, job_id)
    assert not port_open(local_port)
    assert not list((cluster.home / ".gpu-jupyter").glob("session-*"))  # token file removed


def test_rejected_submission_is_reported(cluster: LocalCluster, tmp_path: Path) -> None:
    log = tmp_path / "launch.log"
    process = launch(cluster, log, "--scheduler", "slurm", "--gpus", "0", "--cores", "1",
                     "--mem", "100M", "--partition", "no_such_partition")
    assert process.wait(timeout=30) == 1
    text = log.read_text()
    assert "the job was not accepted by slurm" in text
    assert "partition" in text.lower()


def test_job_that_dies_is_reported(cluster: LocalCluster, tmp_path: Path) -> None:
    log = tmp_path / "launch.log"
    before = set(cluster.squeue().split())
    process = launch(cluster, log, "--scheduler", "slurm", "--gpus", "0", "--cores", "1",
                     "--mem", "100M", "--venv", str(tmp_path / "no-such-venv"), "--timeout", "60")
    assert process.wait(timeout=60) == 1, log.read_text()
    text = log.read_text()
    assert "job ended before JupyterLab started" in text
    assert "no-such-venv" in text  # the job's log is shown
    assert set(cluster.squeue().split()) <= before


def test_queue_wait_past_timeout_cancels_the_job(cluster: LocalCluster, tmp_path: Path) -> None:
    log = tmp_path / "launch.log"
    # A job held by Slurm never starts, like one waiting in a busy queue.
    cluster.hold_new_jobs(True)
    try:
        process = launch(cluster, log, "--scheduler", "slurm", "--gpus", "0", "--cores", "1",
                         "--mem", "100M", "--timeout", "3")
        assert process.wait(timeout=40) == 1, log.read_text()
    finally:
        cluster.hold_new_jobs(False)
    text = log.read_text()
    job_id = re.search(r"submitted job (\d+)", text).group(1)
    assert "did not start within 3s" in text
    assert job_id not in cluster.squeue()


def test_ctrl_c_while_submitting_leaves_no_job(cluster: LocalCluster, tmp_path: Path) -> None:
    """Interrupted before the job id reached the laptop: the job is still cancelled."""
    log = tmp_path / "launch.log"
    before = set(cluster.squeue().split())
    process = launch(cluster, log, "--gpus", "0", "--cores", "1",
                     "--mem", "100M", "--venv", sys.prefix, "--timeout", "60")
    # Printed just before the submission starts; the signal's trap runs only when
    # the submitting ssh returns, before its answer (the job id) is read.
    wait_for(r"scheduler: slurm", log, process, 20)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=30) == 130, log.read_text()
    deadline = time.monotonic() + 15
    while set(cluster.squeue().split()) - before and time.monotonic() < deadline:
        time.sleep(0.5)
    assert set(cluster.squeue().split()) <= before, log.read_text()
    assert not list((cluster.home / ".gpu-jupyter").glob("session-*"))
