"""Running the launch script ``bin/gpu-jupyter`` in tests, shared by the tests in tests/bin/.

As text (``run_script``: options, ``--help``, ``--dry-run`` job scripts), and as
the unprivileged laptop user against the one-machine cluster of tests/slurm/
(``Launch``), with the checks on what a session leaves behind: its job, its
port, its session files and tunnels.
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
from local_cluster import LocalCluster

from helpers import ROOT

SCRIPT = ROOT / "bin" / "gpu-jupyter"
PARTS = SCRIPT.parent / "gpu-jupyter.d"  # sourced by it, and the job script template
READY = r"JupyterLab is ready: (http://127\.0\.0\.1:(\d+)/lab\?token=(\w+))"
# Short intervals keep the tests fast; the defaults (30 s for squeue/bjobs) are
# what a class on a shared login node needs.
FAST = {
    "GPU_JUPYTER_CHECK_INTERVAL": "1",
    "GPU_JUPYTER_SCHED_INTERVAL": "2",
    "GPU_JUPYTER_CANCEL_WINDOW": "60",
}
SMALL_JOB = ("--gpus", "0", "--cores", "1", "--mem", "500M", "--time", "10", "--timeout", "60")


def run_script(
    *args: str, timeout: float = 20, env: dict | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False, env=env
    )


def api_status(port: int, token: str | None) -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/status")
    if token is not None:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def wait_until(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.3)
    pytest.fail(f"timed out after {seconds}s waiting for {what}")


class Launch:
    """One run of the launch script as the laptop user, its output in a file."""

    def __init__(
        self,
        cluster: LocalCluster,
        log: Path,
        *args: str,
        host: str = "testlogin",
        env: dict[str, str] | None = None,
        **popen: object,
    ) -> None:
        self.log = log
        self.started = time.monotonic()
        with log.open("w") as out:
            self.process = subprocess.Popen(
                [str(SCRIPT), "--ssh-config", str(cluster.ssh_config), *args, host],
                stdout=out,
                stderr=subprocess.STDOUT,
                text=True,
                env=cluster.laptop.env(**{**FAST, **(env or {})}),
                **cluster.laptop.popen_args(),
                **popen,
            )

    def text(self) -> str:
        return self.log.read_text()

    def wait_for(self, pattern: str, seconds: float = 75) -> re.Match:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            match = re.search(pattern, self.text())
            if match:
                return match
            if self.process.poll() is not None:
                pytest.fail(
                    f"the launch script exited early ({self.process.returncode}):\n" + self.text()
                )
            time.sleep(0.3)
        pytest.fail(f"no {pattern!r} after {seconds}s:\n{self.text()}")

    def ready(self) -> tuple[int, str, str]:
        """(local port, token, job id) once the script says it is ready."""
        match = self.wait_for(READY)
        print(f"ready after {time.monotonic() - self.started:.1f}s")
        job_id = re.search(r"(?:submitted|attaching to) job (\d+)", self.text()).group(1)
        return int(match.group(2)), match.group(3), job_id

    def stop(self, sig: int = signal.SIGINT, seconds: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


def job_alive(cluster: LocalCluster, scheduler: str, job_id: str) -> bool:
    if scheduler == "slurm":
        return job_id in cluster.squeue().split()
    pid = int((cluster.home / ".fake-lsf" / f"{job_id}.pid").read_text())
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def assert_ended(cluster: LocalCluster, job_id: str, port: int, scheduler: str = "slurm") -> None:
    wait_until(lambda: not job_alive(cluster, scheduler, job_id), 30, f"job {job_id} to end")
    wait_until(lambda: not port_open(port), 15, f"port {port} to close")

    # The job's own exit removes its session files: give it a moment after the cancel.
    def session_files() -> list[Path]:
        return list((cluster.home / ".gpu-jupyter").glob("session-*"))

    wait_until(lambda: not session_files(), 15, f"no session files left, not {session_files()}")
    assert not list((cluster.laptop.home / ".gpu-jupyter" / "tunnels").glob(f"job-{job_id}.*"))


def control_folders(cluster: LocalCluster) -> list[Path]:
    """The launcher's login-connection folders (/tmp/gpuj.*) that the laptop user owns."""
    return [p for p in Path("/tmp").glob("gpuj.*") if p.stat().st_uid == cluster.laptop.uid]


def tunnel_master_pid(cluster: LocalCluster, job_id: str) -> int:
    """The process id of the ssh connection that carries job_id's tunnel."""
    tunnels = cluster.laptop.home / ".gpu-jupyter" / "tunnels"
    (ctl,) = tunnels.glob(f"job-{job_id}[.]*ctl")  # job-ID.PID.ctl (job-ID.ctl before issue 36)
    check = subprocess.run(
        ["ssh", "-S", str(ctl), "-O", "check", "x"], capture_output=True, text=True, check=False
    )
    return int(re.search(r"pid=(\d+)", check.stderr).group(1))


def tcp_listeners(pid: int) -> list[str]:
    """The listening TCP sockets (as /proc/net lines) that process pid holds."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd)
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                found.append(line)
    return found


def as_user(user, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=user.env(),
        check=False,
        timeout=30,
        **user.popen_args(),
    )
