"""A throw-away one-machine "cluster" for the launch-script tests.

Starts munged (unless one already answers; it stays running, the host's service
shared by every cluster of a run), slurmctld and slurmd for this host with the
configuration in ``slurm.conf.in``, and an sshd on a free port of
127.0.0.1 (``sshd_config.in``). Three unix users are created for the run and
removed after it (``cluster_users.py``), so that nothing runs as root the way a
student never would:

- ``laptop``: runs the launch script, with its own key, ``known_hosts`` (the
  login node only: the compute node's key is new to it) and ssh configuration;
- ``student``: the account on the cluster (a different name than the laptop's),
  whose login shell prints a ``Quota 95`` line like many clusters do;
- ``neighbour``: another user of the same compute node.

Every daemon is started in the foreground as our child and stopped by its PID.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from string import Template
from typing import Self

from cluster_users import User, add_user, remove_user

HERE = Path(__file__).resolve().parent
TOOLS = (
    "sbatch",
    "squeue",
    "scancel",
    "scontrol",
    "sinfo",
    "slurmctld",
    "slurmd",
    "munged",
    "munge",
    "sshd",
    "ssh",
    "ssh-keygen",
    "runuser",
    "useradd",
    "userdel",
)


def missing_requirements() -> str | None:
    """Why the real-Slurm tests cannot run here, or None when they can."""
    if os.name != "posix" or os.geteuid() != 0:
        return "needs root to start slurmctld/slurmd/munged/sshd and create users (CI runs as root)"
    missing = [
        tool for tool in TOOLS if not (shutil.which(tool) or Path("/usr/sbin", tool).exists())
    ]
    if missing:
        return (
            "missing "
            + ", ".join(missing)
            + ": apt-get install slurm-wlm munge openssh-server openssh-client"
        )
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
    """Context manager: the running daemons, the users, and helpers to query Slurm."""

    def __init__(self, root: Path) -> None:
        self.root = root  # daemon logs and state, root only
        self.hostname = socket.gethostname().split(".")[0]
        self.partition = "course"
        self.processes: list[subprocess.Popen] = []
        self.slurmctld: subprocess.Popen | None = None
        # Short (Unix socket names) and readable by the test users: their homes
        # and the Slurm configuration live here.
        self.shared = Path(tempfile.mkdtemp(prefix="gj", dir="/tmp"))
        self.shared.chmod(0o755)
        self.slurm_conf = self.shared / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.slurm_conf)}
        tag = self.shared.name[-4:].lower()
        self.laptop = User(f"gjl{tag}", self.shared / "laptop")
        self.student = User(f"gjs{tag}", self.shared / "student")
        self.neighbour = User(f"gjn{tag}", self.shared / "neighbour")
        self.ssh_config = self.laptop.home / "ssh_config"

    @property
    def home(self) -> Path:
        """The student's home on the cluster: where the launcher's files land."""
        return self.student.home

    @property
    def lsf_bin(self) -> Path:
        """The folder of the LSF stand-in's bsub, bjobs and bkill (on the student's PATH)."""
        return self.student.home / "lsf-bin"

    def lsf_setting(self, name: str, content: str = "") -> Path:
        """A setting of the LSF stand-in (fake-lsf's header: minute, lose-answer, ID.stat)."""
        folder = self.student.home / ".fake-lsf"
        folder.mkdir(exist_ok=True)
        shutil.chown(folder, self.student.uid, self.student.gid)
        (folder / name).write_text(content)
        return folder / name

    # -------------------------------------------------------------- start/stop
    def __enter__(self) -> Self:
        try:
            self._make_users()
            self._open_course_files()
            self._start_munge()
            self._start_slurm()
            self._start_sshd()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        if self.slurmctld is not None and self.slurmctld.poll() is None:
            self.slurmctld.send_signal(18)  # SIGCONT, in case a test left it stopped
        for job in self.squeue(check=False).split():
            # a pending array shows as 123_[0-2%1], which scancel does not take: its id does
            subprocess.run(["scancel", job.split("_")[0]], env=self.env, check=False)
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        for user in (self.laptop, self.student, self.neighbour):
            remove_user(user)
        _release_opened_folders()
        shutil.rmtree(self.shared, ignore_errors=True)

    def _spawn(self, args: list[str], log: str) -> subprocess.Popen:
        with (self.root / log).open("a") as out:
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
                    raise RuntimeError(
                        f"{process.args[0]} exited while waiting for {what}: " + self._logs()
                    )
            time.sleep(0.3)
        raise RuntimeError(f"timed out waiting for {what}: " + self._logs())

    def _logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted(self.root.glob("*.log"))
        )

    def _make_users(self) -> None:
        for user in (self.laptop, self.student, self.neighbour):
            add_user(user)
        # The student's login shell says something first, as many clusters do.
        lsf_bin = self.lsf_bin
        lsf_bin.mkdir()
        for command in ("bsub", "bjobs", "bkill"):
            (lsf_bin / command).symlink_to(HERE / "fake-lsf")
        (self.student.home / ".profile").write_text(
            f'echo "Quota 95"\nPATH="$PATH:{lsf_bin}"\nexport SLURM_CONF={self.slurm_conf}\n'
        )
        (self.student.home / ".bashrc").write_text(
            f'echo "Quota 95"\nexport SLURM_CONF={self.slurm_conf}\n'
        )

    def _open_course_files(self) -> None:
        """The test users need to run the launcher and the course's Python: let
        them through the folders above (x only); the modes come back when the last
        cluster on this machine stops (:func:`_release_opened_folders`)."""
        targets = (
            Path(sys.prefix),
            Path(sys.base_prefix),
            Path(sys.executable).resolve(),
            Path(__file__).resolve().parents[2],
        )
        with _opened_folders() as record:
            record["holders"].append(os.getpid())
            for target in targets:
                for folder in [target, *target.parents]:
                    mode = folder.stat().st_mode & 0o7777
                    if not mode & 0o001:
                        record["modes"].setdefault(str(folder), mode)
                        folder.chmod(mode | 0o001)

    def _start_munge(self) -> None:
        if self._munge_answers():
            return
        for folder in ("/run/munge", "/var/log/munge", "/var/lib/munge"):
            Path(folder).mkdir(parents=True, exist_ok=True)
            shutil.chown(folder, "munge", "munge")
        # munged is the host's, shared by every cluster of a test run (several start at
        # once under pytest-xdist): it is left running, not stopped with this cluster,
        # or a cluster ending first would cut the others' authentication.
        with (self.root / "munged.log").open("a") as out:
            subprocess.Popen(
                ["runuser", "-u", "munge", "--", _sbin("munged"), "--foreground", "--force"],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )
        self._wait("munged", self._munge_answers)

    def _munge_answers(self) -> bool:
        munge = subprocess.run(["munge", "-n"], capture_output=True, check=False)
        return munge.returncode == 0

    def _start_slurm(self) -> None:
        (self.root / "state").mkdir()
        (self.shared / "spool").mkdir(mode=0o755)
        values = {
            "host": self.hostname,
            "root": str(self.root),
            "partition": self.partition,
            "spool": str(self.shared / "spool"),
            "ctld_port": _free_port(),
            "slurmd_port": _free_port(),
            "cpus": os.cpu_count() or 1,
            "first_job_id": random.randrange(10_000, 1_000_000),
        }
        template = Template((HERE / "slurm.conf.in").read_text())
        self.slurm_conf.write_text(template.substitute(values))
        self.slurm_conf.chmod(0o644)
        self.start_slurmctld()
        self._spawn([_sbin("slurmd"), "-D", "-f", str(self.slurm_conf)], "slurmd.log")
        self._wait("the Slurm node to become idle", self._idle, seconds=30)

    def _idle(self) -> bool:
        sinfo = subprocess.run(
            ["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=self.env, check=False
        )
        return sinfo.returncode == 0 and "idle" in sinfo.stdout

    def start_slurmctld(self) -> None:
        self.slurmctld = self._spawn(
            [_sbin("slurmctld"), "-D", "-i", "-f", str(self.slurm_conf)], "slurmctld.log"
        )

    def _start_sshd(self) -> None:
        laptop_key = self.laptop.home / ".ssh" / "id_ed25519"
        host_key = self.root / "host_key"
        for path in (laptop_key, host_key):
            subprocess.run(
                ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True
            )
        authorized = self.student.home / ".ssh" / "authorized_keys"
        authorized.write_text(Path(f"{laptop_key}.pub").read_text())
        port = _free_port()
        values = {"port": port, "root": str(self.root), "slurm_conf": str(self.slurm_conf)}
        sshd_config = self.root / "sshd_config"
        sshd_config.write_text(Template((HERE / "sshd_config.in").read_text()).substitute(values))
        node_blocks = "".join(
            f"Host {name}\n    HostName 127.0.0.1\n    Port {port}\n    HostKeyAlias {name}\n"
            for name in sorted({self.hostname, socket.gethostname()})
        )
        self.ssh_config.write_text(
            Template((HERE / "ssh_config.in").read_text()).substitute(
                {"port": port, "student": self.student.name, "node_blocks": node_blocks}
            )
        )
        # The laptop knows the login node's key (accepted once, long ago), not the node's.
        public = Path(f"{host_key}.pub").read_text().split()[:2]
        (self.laptop.home / ".ssh" / "known_hosts").write_text(f"testlogin {' '.join(public)}\n")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        self._spawn([_sbin("sshd"), "-D", "-e", "-f", str(sshd_config)], "sshd.log")
        for user in (self.laptop, self.student, self.neighbour):
            subprocess.run(["chown", "-R", f"{user.uid}:{user.gid}", str(user.home)], check=True)

        def answers() -> bool:
            probe = subprocess.run(
                ["ssh", "-F", str(self.ssh_config), "testlogin", "true"],
                capture_output=True,
                check=False,
                timeout=20,
                env=self.laptop.env(),
                **self.laptop.popen_args(),
            )
            return probe.returncode == 0

        self._wait("sshd", answers)

    # --------------------------------------------------------------- queries
    def squeue(self, check: bool = True) -> str:
        """The ids of the jobs Slurm knows that are not finished, one per line.

        A controller busy with a loaded machine sometimes answers a query with a
        time-out: asked again, it answers, so a few tries are made before failing.
        """
        for attempt in range(5):
            result = subprocess.run(
                ["squeue", "-h", "-o", "%i", "-t", "PD,R,CG,S,CF"],
                capture_output=True,
                text=True,
                env=self.env,
                check=False,
            )
            if result.returncode == 0:
                return result.stdout
            time.sleep(1 + attempt)
        if check:
            result.check_returncode()
        return result.stdout

    def hold_new_jobs(self, hold: bool) -> None:
        """Partition DOWN: jobs are accepted but wait, like in a full queue."""
        subprocess.run(
            [
                "scontrol",
                "update",
                f"PartitionName={self.partition}",
                f"State={'DOWN' if hold else 'UP'}",
            ],
            env=self.env,
            check=True,
        )


#: Folders the clusters opened for the test users, with their first modes and the
#: processes holding a cluster: test processes run side by side (pytest-xdist), and
#: one that closed /root again under another's running cluster broke its jobs.
_OPENED = Path("/run/gpu-course-test-opened-folders.json")


@contextlib.contextmanager
def _opened_folders() -> Iterator[dict]:
    """The shared record, locked, written back when the block ends."""
    with open(f"{_OPENED}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        record = json.loads(_OPENED.read_text()) if _OPENED.exists() else {}
        record.setdefault("modes", {})
        record["holders"] = [p for p in record.get("holders", []) if alive(p)]
        yield record
        _OPENED.write_text(json.dumps(record))


def alive(pid: int) -> bool:
    """Whether process *pid* exists (of any user)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _release_opened_folders() -> None:
    """This process's cluster is gone; the last one out restores the folders' modes."""
    with _opened_folders() as record:
        record["holders"] = [p for p in record["holders"] if p != os.getpid()]
        if not record["holders"]:
            for folder, mode in sorted(record["modes"].items(), reverse=True):
                with contextlib.suppress(OSError):
                    Path(folder).chmod(mode)
            record["modes"] = {}
