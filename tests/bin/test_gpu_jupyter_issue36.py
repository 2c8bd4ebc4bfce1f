"""Issue 36, the launcher's half: ``bin/gpu-jupyter`` against the REAL local Slurm and sshd.

- the token never reaches another user of the laptop when the tunnel reconnects
  (the port keeper holds the port while the ssh is gone), even after the
  launcher was killed;
- a submission whose answer is lost (slurmctld stalled) is found once Slurm
  answers again, and a job created after the launcher gave up ends by itself;
  the same on LSF's stand-in (tests/slurm/fake-lsf), with its warning signal;
- the scheduler's warning before the run-time limit reaches the student (in
  tests/bin/test_gpu_jupyter_time_limit.py, with JupyterLab in a browser);
- a second window's Ctrl-C only detaches; a changed host key is reported once.

Same cluster as tests/bin/test_gpu_jupyter_on_cluster.py (tests/bin/conftest.py).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from gpu_jupyter_helpers import (
    SMALL_JOB,
    Launch,
    api_status,
    assert_ended,
    control_folders,
    job_alive,
    tunnel_master_pid,
    wait_until,
)
from local_cluster import LocalCluster

# Another user of the laptop: binds the port as soon as it is free (with
# SO_REUSEADDR, as the tester did) and records what it receives.
SQUATTER = """
import socket, sys, time
port, seconds = int(sys.argv[1]), float(sys.argv[2])
end = time.monotonic() + seconds
while time.monotonic() < end:
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("127.0.0.1", port))
        s.listen()
    except OSError:
        s.close()
        time.sleep(0.005)
        continue
    print("bound", flush=True)
    s.settimeout(0.5)
    while time.monotonic() < end:
        try:
            connection, _ = s.accept()
        except OSError:
            continue
        connection.settimeout(2)
        try:
            print(repr(connection.recv(65536)), flush=True)
        except OSError:
            pass
        connection.close()
    break
"""


class Tab:
    """A JupyterLab tab left open: polls the API with the token, a cookie and an XSRF header."""

    def __init__(self, port: int, token: str) -> None:
        self.url = f"http://127.0.0.1:{port}/api/status"
        self.headers = {
            "Authorization": f"token {token}",
            "Cookie": f"_xsrf=x{token[:8]}; username-127-0-0-1-{port}=secret-cookie",
            "X-XSRFToken": f"x{token[:8]}",
        }
        self.codes: list[int] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.poll, daemon=True)
        self.thread.start()

    def poll(self) -> None:
        while not self.stop.is_set():
            request = urllib.request.Request(self.url, headers=self.headers)
            try:
                with urllib.request.urlopen(request, timeout=5) as response:
                    self.codes.append(response.status)
            except urllib.error.HTTPError as error:
                self.codes.append(error.code)
            except OSError:
                self.codes.append(0)
            time.sleep(0.1)

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


def test_neighbour_cannot_take_the_port_during_a_reconnect(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """The tunnel's ssh dies with a tab open and a neighbour waiting for the port:
    the port stays the student's, nothing reaches the neighbour, the tab recovers."""
    launch = Launch(cluster, tmp_path / "launch.log", *SMALL_JOB, "--venv", sys.prefix)
    port, token, job_id = launch.ready()
    tab = Tab(port, token)
    squatter = subprocess.Popen(
        [sys.executable, "-c", SQUATTER, str(port), "20"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=cluster.neighbour.env(),
        **cluster.neighbour.popen_args(),
    )
    try:
        time.sleep(0.5)  # the squatter tries already
        subprocess.run(["kill", "-9", str(tunnel_master_pid(cluster, job_id))], check=True)
        launch.wait_for(r"tunnel reconnected|ready again at a new address", 40)
        time.sleep(1)  # the tab keeps polling its address meanwhile
        squatter.terminate()
        received = squatter.communicate(timeout=30)[0]
        assert received == "", received  # never bound: nothing (token, cookie) reached it
        count = len(tab.codes)
        wait_until(lambda: 200 in tab.codes[count:], 15, "the open tab to work again")
    finally:
        tab.close()
        squatter.kill()
        squatter.wait()
    assert "taken" not in launch.text() and "new address" not in launch.text()
    assert f"127.0.0.1:{port}/lab?token={token}" in launch.text().split("tunnel reconnected")[-1]
    assert launch.stop() == 130, launch.text()
    assert_ended(cluster, job_id, port)


def test_killed_launcher_keeps_the_port_through_a_drop(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """The launcher is killed, then the network drops: its port keeper still holds
    the port (a tab may be open); the same command run again takes it over."""
    first = Launch(cluster, tmp_path / "first.log", *SMALL_JOB, "--venv", sys.prefix)
    port, token, job_id = first.ready()
    tab = Tab(port, token)
    squatter = subprocess.Popen(
        [sys.executable, "-c", SQUATTER, str(port), "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=cluster.neighbour.env(),
        **cluster.neighbour.popen_args(),
    )
    try:
        first.stop(signal.SIGKILL)
        subprocess.run(["kill", "-9", str(tunnel_master_pid(cluster, job_id))], check=True)
        time.sleep(7)  # longer than the keeper's own checks
        again = Launch(cluster, tmp_path / "again.log", *SMALL_JOB, "--venv", sys.prefix)
        assert again.ready() == (port, token, job_id)
        assert "taking over the tunnel" in again.text()
        count = len(tab.codes)
        wait_until(lambda: 200 in tab.codes[count:], 15, "the open tab to work again")
        squatter.terminate()
        received = squatter.communicate(timeout=30)[0]
        assert received == "", received
    finally:
        tab.close()
        squatter.kill()
        squatter.wait()
    assert again.stop() == 130, again.text()
    assert_ended(cluster, job_id, port)


def test_lost_submission_answer_is_found(cluster: LocalCluster, tmp_path: Path) -> None:
    """slurmctld stalls across the submission: sbatch times out, Slurm creates the
    job once it resumes, and the launcher finds it by its tag and goes on with it."""
    before = set(cluster.squeue().split())
    assert cluster.slurmctld is not None
    cluster.slurmctld.send_signal(signal.SIGSTOP)
    try:
        launch = Launch(cluster, tmp_path / "launch.log", *SMALL_JOB, "--venv", sys.prefix)
        launch.wait_for(r"did not confirm the submission", 90)
    finally:
        cluster.slurmctld.send_signal(signal.SIGCONT)
    port, token, job_id = launch.ready()
    assert "the job was created after all" in launch.text()
    assert set(cluster.squeue().split()) - before == {job_id}  # one job, not two
    assert api_status(port, token) == 200
    assert launch.stop() == 130, launch.text()
    assert_ended(cluster, job_id, port)


def test_job_created_after_the_launcher_gave_up_ends_at_once(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """Slurm stays stalled past the search: the launcher says so in a sentence; the
    job Slurm creates later ends by itself without a traceback."""
    before = set(cluster.squeue().split())
    assert cluster.slurmctld is not None
    cluster.slurmctld.send_signal(signal.SIGSTOP)
    try:
        launch = Launch(
            cluster,
            tmp_path / "launch.log",
            *SMALL_JOB,
            "--venv",
            sys.prefix,
            env={"GPU_JUPYTER_CANCEL_WINDOW": "3"},
        )
        assert launch.process.wait(timeout=120) == 1, launch.text()
    finally:
        cluster.slurmctld.send_signal(signal.SIGCONT)
    text = launch.text()
    assert "slurm did not answer for 3s, so no session was started" in text
    assert "Traceback" not in text
    logs = cluster.home / ".gpu-jupyter"

    def ghost_ended() -> bool:
        given_up = [p for p in logs.glob("job-*.out") if "given up by its" in p.read_text()]
        return bool(given_up) and not set(cluster.squeue(check=False).split()) - before

    wait_until(ghost_ended, 60, "the late job to end by itself")
    for log in logs.glob("job-*.out"):
        if "given up by its launcher" in log.read_text():
            assert "Traceback" not in log.read_text()


def test_second_window_detaches_and_nothing_is_left_in_tmp(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    first = Launch(cluster, tmp_path / "first.log", *SMALL_JOB, "--venv", sys.prefix)
    port, token, job_id = first.ready()
    second = Launch(cluster, tmp_path / "second.log", "--attach", job_id)
    second_port, second_token, _ = second.ready()
    assert second_token == token and second_port != port
    assert "Ctrl-C here only detaches" in second.text()
    assert second.stop() == 130, second.text()
    assert f"detached: job {job_id} is left running" in second.text()
    assert job_alive(cluster, "slurm", job_id)
    assert api_status(port, token) == 200  # the first window's session goes on
    assert first.stop() == 130, first.text()
    assert_ended(cluster, job_id, port)
    assert control_folders(cluster) == []


def test_changed_host_key_is_reported_once(cluster: LocalCluster, tmp_path: Path) -> None:
    known_hosts = cluster.laptop.home / ".ssh" / "known_hosts"
    saved = known_hosts.read_text()
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    wrong = " ".join(Path(f"{other}.pub").read_text().split()[:2])
    names = {cluster.hostname, socket.gethostname()}
    kept = [line for line in saved.splitlines() if line.split(" ", 1)[0] not in names]
    known_hosts.write_text("".join(f"{line}\n" for line in kept + [f"{n} {wrong}" for n in names]))
    before = set(cluster.squeue().split())
    try:
        launch = Launch(cluster, tmp_path / "launch.log", *SMALL_JOB, "--venv", sys.prefix)
        assert launch.process.wait(timeout=90) == 1, launch.text()
    finally:
        known_hosts.write_text(saved)
    text = launch.text()
    assert text.count("REMOTE HOST IDENTIFICATION HAS CHANGED") == 1, text
    assert "changed since your last connection" in text and "ssh-keygen -R" in text
    assert "JupyterLab is ready" not in text
    wait_until(lambda: not set(cluster.squeue().split()) - before, 30, "the job to be cancelled")


def test_lsf_lost_submission_answer_is_found(cluster: LocalCluster, tmp_path: Path) -> None:
    """bsub fails although LSF took the job: the launcher finds it by its description
    (bsub -Jd) and goes on with that one job."""
    lose = cluster.lsf_setting("lose-answer")
    try:
        launch = Launch(
            cluster, tmp_path / "launch.log", "--scheduler", "lsf", *SMALL_JOB, "--new",
            "--venv", sys.prefix,
        )  # fmt: skip
        port, token, job_id = launch.ready()
    finally:
        lose.unlink()
    assert "lsf did not confirm the submission" in launch.text()
    assert "the job was created after all" in launch.text()
    assert (cluster.home / ".fake-lsf" / f"{job_id}.desc").read_text().startswith("gpuj-")
    assert api_status(port, token) == 200
    assert launch.stop() == 130, launch.text()
    assert_ended(cluster, job_id, port, "lsf")


def test_lsf_warning_before_the_time_limit(cluster: LocalCluster, tmp_path: Path) -> None:
    """bsub -wa USR1 -wt 1: the stand-in signals the job a (shortened) minute before
    its -W limit; the launcher says so and the session goes on until the limit."""
    minute = cluster.lsf_setting("minute", "15\n")  # seconds in an LSF minute
    try:
        launch = Launch(
            cluster, tmp_path / "launch.log", "--scheduler", "lsf", *SMALL_JOB[:-4],
            "--time", "3", "--timeout", "60", "--new", "--venv", sys.prefix,
            env={"GPU_JUPYTER_WARN_LEAD": "60"},
        )  # fmt: skip
        port, token, job_id = launch.ready()
        launch.wait_for(r"your session ends in 1 minute: save your work", 60)
    finally:
        minute.unlink()
    assert api_status(port, token) == 200  # the warning stops nothing
    log = (cluster.home / ".gpu-jupyter" / f"job-{job_id}.out").read_text()
    assert "the run-time limit is near" in log
    assert launch.process.wait(timeout=60) == 1, launch.text()  # the limit ends it
    assert "the job ended" in launch.text()
    assert_ended(cluster, job_id, port, "lsf")
