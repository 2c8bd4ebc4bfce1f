"""End-to-end tests of ``bin/gpu-jupyter`` against a REAL Slurm reached through a REAL sshd.

Slurm (slurmctld + slurmd for this one machine) is reached through an sshd on
127.0.0.1: the "login node" and the "compute node" are both this machine. The
script runs as an unprivileged "laptop" user whose cluster account has another
name, with host keys checked, like a student's. LSF, which cannot be installed,
is played by the bsub/bjobs/bkill stand-in ``tests/slurm/fake-lsf``. These tests
need root (to start the daemons and create the users) and the Debian packages
``slurm-wlm munge openssh-server`` (CI installs them); they skip with the missing
piece named otherwise. One cluster serves the whole module (tests/bin/conftest.py).
"""

from __future__ import annotations

import os
import pty
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from gpu_jupyter_helpers import (
    FAST,
    READY,
    SCRIPT,
    SMALL_JOB,
    Launch,
    api_status,
    as_user,
    assert_ended,
    control_folders,
    job_alive,
    port_open,
    tcp_listeners,
    tunnel_master_pid,
    wait_until,
)
from local_cluster import LocalCluster


@pytest.mark.parametrize("scheduler", ["slurm", "lsf"])
def test_end_to_end(cluster: LocalCluster, tmp_path: Path, scheduler: str) -> None:
    """Slurm is real; LSF is the bsub/bjobs/bkill stand-in in tests/slurm/fake-lsf."""
    # Slurm: the scheduler is detected on the login node (sbatch is found first).
    choice = ["--scheduler", "lsf"] if scheduler == "lsf" else []
    known_hosts = cluster.laptop.home / ".ssh" / "known_hosts"
    node = socket.gethostname().split(".")[0]
    node_was_known = node in known_hosts.read_text()
    launch = Launch(cluster, tmp_path / "launch.log", *choice, *SMALL_JOB, "--venv", sys.prefix)
    port, token, job_id = launch.ready()
    text = launch.text()
    if scheduler == "slurm":
        assert "scheduler: slurm" in text
    # The login shell's "Quota 95" was not taken for the node; the node's new
    # host key was accepted visibly, with the cluster account's name.
    assert f"JupyterLab runs on {node}" in text
    assert node in known_hosts.read_text()
    assert node_was_known or "host key is accepted and remembered" in text
    assert len(token) >= 32
    assert api_status(port, token) == 200
    assert api_status(port, None) in (401, 403)
    assert api_status(port, "0" * 48) in (401, 403)
    assert job_alive(cluster, scheduler, job_id)

    # Nothing secret is world-readable, and the token is on no command line,
    # not even in part (the session's file names).
    state = cluster.home / ".gpu-jupyter"
    assert state.stat().st_mode & 0o077 == 0
    for path in state.glob("*"):
        assert path.stat().st_mode & 0o077 == 0, path
        assert token[:6] not in path.name
    assert (state / f"job-{job_id}.out").exists()
    command_lines = subprocess.run(
        ["ps", "-eo", "args"], capture_output=True, text=True, check=True
    ).stdout
    assert token not in command_lines

    # A neighbour on the node finds nothing to squat or reach: JupyterLab has
    # no TCP port, and its Unix socket lies in a folder only the student enters.
    status = (state / f"job-{job_id}.status").read_text()
    lab_pid = re.search(r"pid=(\d+)", status).group(1)
    sock = re.search(r"sock=(\S+)", status).group(1)
    assert not tcp_listeners(int(lab_pid))
    probe = as_user(
        cluster.neighbour,
        "import socket, sys\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n    s.connect(sys.argv[1])\nexcept PermissionError:\n"
        "    print('refused')\n"
        "try:\n    open(sys.argv[1] + '.squat', 'w')\nexcept PermissionError:\n"
        "    print('refused')\n",
        sock,
    )
    assert probe.stdout.split() == ["refused", "refused"], probe

    if scheduler == "lsf":
        # UNKWN (the host lost contact) is not "gone": the session goes on.
        forced = cluster.home / ".fake-lsf" / f"{job_id}.stat"
        forced.write_text("UNKWN\n")
        launch.wait_for(r"no clear answer from lsf", 20)
        forced.unlink()
        assert launch.process.poll() is None
        assert api_status(port, token) == 200

    assert launch.stop() == 130, launch.text()
    assert f"cancelling job {job_id} (Ctrl-C)" in launch.text()
    assert_ended(cluster, job_id, port, scheduler)


def test_closing_the_terminal_cancels_the_job(cluster: LocalCluster) -> None:
    """The terminal window closes: SIGHUP, and every write fails afterwards."""
    master, slave = pty.openpty()
    os.fchown(slave, cluster.laptop.uid, cluster.laptop.gid)

    # A new session whose controlling terminal is the pty, then the script.
    take_terminal = (
        "import fcntl, os, sys, termios\n"
        "fcntl.ioctl(0, termios.TIOCSCTTY, 0)\n"
        "os.execv(sys.argv[1], sys.argv[1:])"
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            take_terminal,
            str(SCRIPT),
            "--ssh-config",
            str(cluster.ssh_config),
            *SMALL_JOB,
            "--venv",
            sys.prefix,
            "testlogin",
        ],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        env=cluster.laptop.env(**FAST),
        **cluster.laptop.popen_args(),
    )
    os.close(slave)
    output = b""
    deadline = time.monotonic() + 75
    try:
        while not re.search(READY.encode(), output) and time.monotonic() < deadline:
            try:
                output += os.read(master, 4096)
            except OSError:
                break
        match = re.search(READY.encode(), output)
        assert match, output.decode(errors="replace")
        port = int(match.group(2))
        job_id = re.search(rb"submitted job (\d+)", output).group(1).decode()
    finally:
        os.close(master)  # hang up
    rc = process.wait(timeout=60)
    assert rc == 129, f"exit {rc}:\n" + output.decode(errors="replace")
    assert_ended(cluster, job_id, port)


def test_tee_and_ctrl_c_cancel_the_job(cluster: LocalCluster, tmp_path: Path) -> None:
    """'gpu-jupyter ... | tee log' and Ctrl-C: tee dies first, writes get EPIPE."""
    log = cluster.laptop.home / "tee.log"
    command = (
        f"{SCRIPT} --ssh-config {cluster.ssh_config} {' '.join(SMALL_JOB)} "
        f"--venv {sys.prefix} testlogin 2>&1 | tee {log}"
    )
    shell = subprocess.Popen(
        ["bash", "-c", command],
        stdout=subprocess.DEVNULL,
        start_new_session=True,
        env=cluster.laptop.env(**FAST),
        **cluster.laptop.popen_args(),
    )
    wait_until(lambda: log.exists() and re.search(READY, log.read_text()), 75, "ready")
    text = log.read_text()
    port = int(re.search(READY, text).group(2))
    job_id = re.search(r"submitted job (\d+)", text).group(1)
    os.killpg(shell.pid, signal.SIGINT)  # Ctrl-C reaches the whole pipeline
    shell.wait(timeout=30)
    assert_ended(cluster, job_id, port)


def test_scheduler_stall_is_not_the_end(cluster: LocalCluster, tmp_path: Path) -> None:
    """slurmctld stops answering: the session goes on; a stop then still cancels."""
    launch = Launch(cluster, tmp_path / "launch.log", *SMALL_JOB, "--venv", sys.prefix)
    port, token, job_id = launch.ready()
    assert cluster.slurmctld is not None
    cluster.slurmctld.send_signal(signal.SIGSTOP)
    try:
        launch.wait_for(r"no clear answer from slurm", 40)
        time.sleep(4)
        assert launch.process.poll() is None, launch.text()
        assert api_status(port, token) == 200
        launch.process.send_signal(signal.SIGINT)  # stop while the controller still stalls
        launch.wait_for(r"cancelling job", 20)
        time.sleep(4)
    finally:
        cluster.slurmctld.send_signal(signal.SIGCONT)
    assert launch.process.wait(timeout=90) == 130, launch.text()
    assert f"job {job_id} cancelled" in launch.text()
    assert_ended(cluster, job_id, port)


def test_killed_script_then_same_command_attaches_and_tunnel_reconnects(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """Issue 36: after a SIGKILL the same command attaches instead of booking a
    second job, and the killed run's control folder in /tmp is cleaned."""
    first = Launch(cluster, tmp_path / "first.log", *SMALL_JOB, "--venv", sys.prefix)
    port, token, job_id = first.ready()
    first.stop(signal.SIGKILL)
    # The job and its tunnel outlive a killed script; so does its control folder.
    assert job_alive(cluster, "slurm", job_id)
    assert api_status(port, token) == 200
    assert len(control_folders(cluster)) == 1

    # --new books another job: the next start lists the session (refused by Slurm here).
    probe = Launch(cluster, tmp_path / "probe.log", "--new", "--partition", "no_such_partition")
    assert probe.process.wait(timeout=60) == 1
    text = probe.text()
    assert "your earlier sessions still in the queue" in text and job_id in text
    assert f"--attach {job_id}" in text
    assert f"orphaned tunnel from a killed run still serves 127.0.0.1:{port}" in text

    # The same command again attaches to the running job, on the same port.
    before = set(cluster.squeue().split())
    attached = Launch(cluster, tmp_path / "attach.log", *SMALL_JOB, "--venv", sys.prefix)
    new_port, new_token, attached_id = attached.ready()
    assert f"your session job {job_id} already runs: attaching to it" in attached.text()
    assert "taking over the tunnel" in attached.text()
    assert (new_port, new_token, attached_id) == (port, token, job_id)  # the same URL works
    assert set(cluster.squeue().split()) == before  # no second job
    assert len(control_folders(cluster)) == 1  # the killed run's is gone, this run's is there

    # The tunnel dies (network change, laptop asleep): it comes back on the same port.
    os.kill(tunnel_master_pid(cluster, job_id), signal.SIGKILL)
    attached.wait_for(r"tunnel reconnected", 40)
    assert api_status(port, token) == 200
    assert job_alive(cluster, "slurm", job_id)

    # Cancelled from outside: the script says so and closes the tunnel.
    subprocess.run(["scancel", job_id], env=cluster.env, check=True)
    assert attached.process.wait(timeout=60) == 1
    assert "cancelled from outside" in attached.text()
    assert_ended(cluster, job_id, port)
    assert control_folders(cluster) == []


def test_two_simultaneous_starts_and_a_local_squatter(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """Two starts in the same second get their own ports; a listener on the
    first port tried receives nothing (never a token)."""
    squatter = socket.socket()
    port = 8888
    while True:
        try:
            squatter.bind(("127.0.0.1", port))
            break
        except OSError:
            port += 1
    squatter.listen()
    received: list[bytes] = []

    def serve() -> None:
        squatter.settimeout(1)
        while not stop.is_set():
            try:
                connection, _ = squatter.accept()
            except OSError:
                continue
            with connection:
                connection.settimeout(2)
                try:
                    received.append(connection.recv(65536))
                except OSError:
                    received.append(b"")

    stop = threading.Event()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    launches = [
        Launch(cluster, tmp_path / f"launch{i}.log", *SMALL_JOB, "--venv", sys.prefix)
        for i in range(2)
    ]
    try:
        (port1, token1, job1), (port2, token2, job2) = (one.ready() for one in launches)
        assert port1 != port2 and port not in (port1, port2)
        assert api_status(port1, token1) == 200 and api_status(port2, token2) == 200
        assert api_status(port1, token2) in (401, 403)
        # A killed script's tunnel closes by itself when its job ends.
        assert launches[1].stop(signal.SIGKILL) == -signal.SIGKILL
        assert api_status(port2, token2) == 200
        subprocess.run(["scancel", job2], env=cluster.env, check=True)
        wait_until(lambda: not port_open(port2), 30, "the orphaned tunnel to close")
    finally:
        code = launches[0].stop()
        launches[1].stop(signal.SIGKILL)
        stop.set()
        thread.join()
        squatter.close()
    assert code == 130
    # Not a byte (so no request, no token) reached the squatter. Bare connects
    # without data can come from other programs on a shared machine probing ports.
    assert b"".join(received) == b""
    assert_ended(cluster, job1, port1)


def test_rejected_submission_is_reported(cluster: LocalCluster, tmp_path: Path) -> None:
    launch = Launch(
        cluster,
        tmp_path / "launch.log",
        "--scheduler",
        "slurm",
        "--gpus",
        "0",
        "--cores",
        "1",
        "--mem",
        "100M",
        "--partition",
        "no_such_partition",
    )
    assert launch.process.wait(timeout=30) == 1
    text = launch.text()
    assert "the job was not accepted by slurm" in text
    assert "partition" in text.lower()


def test_job_that_dies_is_reported(cluster: LocalCluster, tmp_path: Path) -> None:
    before = set(cluster.squeue().split())
    launch = Launch(
        cluster, tmp_path / "launch.log", *SMALL_JOB, "--venv", str(tmp_path / "no-such-venv")
    )
    assert launch.process.wait(timeout=60) == 1, launch.text()
    text = launch.text()
    assert "the job ended" in text
    assert "no-such-venv" in text  # the job's log is shown
    assert set(cluster.squeue().split()) <= before


def test_queue_wait_past_timeout_cancels_the_job(cluster: LocalCluster, tmp_path: Path) -> None:
    # A job held by Slurm never starts, like one waiting in a busy queue.
    cluster.hold_new_jobs(True)
    try:
        launch = Launch(
            cluster,
            tmp_path / "launch.log",
            "--gpus",
            "0",
            "--cores",
            "1",
            "--mem",
            "100M",
            "--timeout",
            "5",
        )
        assert launch.process.wait(timeout=40) == 1, launch.text()
    finally:
        cluster.hold_new_jobs(False)
    text = launch.text()
    job_id = re.search(r"submitted job (\d+)", text).group(1)
    assert re.search(rf"job {job_id} is waiting in the queue \(\w+\); waited \d+s", text)
    assert "did not start within 5s" in text
    assert job_id not in cluster.squeue()


def test_ctrl_c_while_submitting_leaves_no_job(cluster: LocalCluster, tmp_path: Path) -> None:
    """Interrupted before the job id reached the laptop: the job is still cancelled."""
    before = set(cluster.squeue().split())
    launch = Launch(cluster, tmp_path / "launch.log", *SMALL_JOB, "--venv", sys.prefix)
    # Printed just before the submission starts; the signal's trap runs only when
    # the submitting ssh returns, before its answer (the job id) is read.
    launch.wait_for(r"scheduler: slurm", 20)
    assert launch.stop() == 130, launch.text()
    wait_until(lambda: not set(cluster.squeue().split()) - before, 15, "no new job")
    assert not list((cluster.home / ".gpu-jupyter").glob("session-*"))
