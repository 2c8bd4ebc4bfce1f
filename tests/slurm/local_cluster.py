"""A throw-away one-machine "cluster" for the launch-script tests.

Starts munged (unless one already answers), slurmctld and slurmd for this host
with the configuration in ``slurm.conf.in``, and an sshd on a free port of
127.0.0.1 that accepts only a freshly generated key (``sshd_config.in``). The
ssh client configuration it writes maps every host name (the login node
``testlogin`` and the compute node, i.e. this machine's name) to that sshd.
Every daemon is started in the foreground as our child and stopped by its PID.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from string import Template

HERE = Path(__file__).resolve().parent
TOOLS = ("sbatch", "squeue", "scancel", "scontrol", "sinfo", "slurmctld", "slurmd",
         "munged", "munge", "sshd", "ssh", "ssh-keygen", "runuser")


def missing_requirements() -> str | None:
    """Why the real-Slurm tests cannot run here, or None when they can."""
    if os.name != "posix" or os.geteuid() != 0:
        return "needs root to start slurmctld/slurmd/munged/sshd (CI runs as root)"
    missing = [tool for tool in TOOLS
               if not (shutil.which(tool) or Path("/usr/sbin", tool).exists())]
    if missing:
        return ("missing " + ", ".join(missing)
                + ": apt-get install slurm-wlm munge openssh-server openssh-client")
    if not Path("/etc/munge/munge.key").exists():
        return "no /etc/munge/munge.key (reinstall the munge package)"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _sbin(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


class LocalCluster:
    """Context manager: the running daemons, and helpers to query Slurm."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.hostname = socket.gethostname().split(".")[0]
        self.partition = "course"
        self.processes: list[subprocess.Popen] = []
        # ssh's ControlPath must fit in a Unix socket name (~100 bytes).
        self.short_tmp = Path(tempfile.mkdtemp(prefix="gj", dir="/tmp"))
        self.slurm_conf = root / "slurm.conf"
        self.ssh_config = root / "ssh_config"
        self.env = {**os.environ, "SLURM_CONF": str(self.slurm_conf)}
        # The SSH sessions get this as their home: the launcher's files land
        # here, not in root's real home, and its .profile puts the LSF
        # stand-in (bsub/bjobs/bkill) on the PATH of login shells.
        self.home = root / "home"

    # -------------------------------------------------------------- start/stop
    def __enter__(self) -> LocalCluster:
        try:
            self._start_munge()
            self._start_slurm()
            self._start_sshd()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for job in self.squeue().split():
            subprocess.run(["scancel", job], env=self.env, check=False)
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        shutil.rmtree(self.short_tmp, ignore_errors=True)

    def _spawn(self, args: list[str], log: str) -> subprocess.Popen:
        with (self.root / log).open("w") as out:
            process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=self.env)
        self.processes.append(process)
        return process

    def _wait(self, what: str, ready, seconds: float = 20) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if ready():
                return
            for process in self.processes:
                if process.poll() is not None:
                    raise RuntimeError(f"{process.args[0]} exited while waiting for {what}: "
                                       + self._logs())
            time.sleep(0.3)
        raise RuntimeError(f"timed out waiting for {what}: " + self._logs())

    def _logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}"
                         for p in sorted(self.root.glob("*.log")))

    def _munge_answers(self) -> bool:
        munge = subprocess.run(["munge", "-n"], capture_output=True, check=False)
        return munge.returncode == 0

    def _start_munge(self) -> None:
        if self._munge_answers():
            return
        for folder in ("/run/munge", "/var/log/munge", "/var/lib/munge"):
            Path(folder).mkdir(parents=True, exist_ok=True)
            shutil.chown(folder, "munge", "munge")
        self._spawn(["runuser", "-u", "munge", "--", _sbin("munged"), "--foreground",
                     "--force"], "munged.log")
        self._wait("munged", self._munge_answers)

    def _start_slurm(self) -> None:
        for folder in ("state", "spool"):
            (self.root / folder).mkdir()
        values = {
            "host": self.hostname, "root": str(self.root), "partition": self.partition,
            "ctld_port": _free_port(), "slurmd_port": _free_port(),
            "cpus": os.cpu_count() or 1, "first_job_id": random.randrange(10_000, 1_000_000),
        }
        template = Template((HERE / "slurm.conf.in").read_text())
        self.slurm_conf.write_text(template.substitute(values))
        self._spawn([_sbin("slurmctld"), "-D", "-i", "-f", str(self.slurm_conf)],
                    "slurmctld.log")
        self._spawn([_sbin("slurmd"), "-D", "-f", str(self.slurm_conf)], "slurmd.log")

        def idle() -> bool:
            sinfo = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True,
                                   text=True, env=self.env, check=False)
            return sinfo.returncode == 0 and "idle" in sinfo.stdout
        self._wait("the Slurm node to become idle", idle, seconds=30)

    def _start_sshd(self) -> None:
        key = self.root / "client_key"
        host_key = self.root / "host_key"
        for path in (key, host_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)],
                           check=True)
        authorized = self.root / "authorized_keys"
        authorized.write_text(Path(f"{key}.pub").read_text())
        authorized.chmod(0o600)
        lsf_bin = self.home / "lsf-bin"
        lsf_bin.mkdir(parents=True)
        for command in ("bsub", "bjobs", "bkill"):
            (lsf_bin / command).symlink_to(HERE / "fake-lsf")
        (self.home / ".profile").write_text(f'PATH="$PATH:{lsf_bin}"\n')
        port = _free_port()
        values = {"port": port, "root": str(self.root), "slurm_conf": str(self.slurm_conf),
                  "home": str(self.home)}
        sshd_config = self.root / "sshd_config"
        sshd_config.write_text(Template((HERE / "sshd_config.in").read_text()).substitute(values))
        self.ssh_config.write_text(Template((HERE / "ssh_config.in").read_text()).substitute(
            {"port": port, "key": str(key)}))
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        self._spawn([_sbin("sshd"), "-D", "-e", "-f", str(sshd_config)], "sshd.log")

        def answers() -> bool:
            probe = subprocess.run(["ssh", "-F", str(self.ssh_config), "testlogin", "true"],
                                   capture_output=True, check=False, timeout=20)
            return probe.returncode == 0
        self._wait("sshd", answers)

    # --------------------------------------------------------------- queries
    def squeue(self) -> str:
        """The ids of the jobs Slurm knows, one per line."""
        result = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True,
                                env=self.env, check=True)
        return result.stdout

    def hold_new_jobs(self, hold: bool) -> None:
        """Partition DOWN: jobs are accepted but wait, like in a full queue."""
        subprocess.run(["scontrol", "update", f"PartitionName={self.partition}",
                        f"State={'DOWN' if hold else 'UP'}"], env=self.env, check=True)
