"""The course hub of the hub tests (tests/deploy/test_hub*.py): JupyterHub as a site runs it.

JupyterHub runs as root with the course's configuration (deploy/jupyterhub) and a
site file with the documented defaults, behind Debian's configurable-http-proxy,
against the one-machine Slurm of the launch tests (tests/slurm/local_cluster.py);
the cluster's unix users log in with passwords through PAM. ``running_hub`` is
the body of a module's fixture.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from deploy_helpers import DEPLOY, make_edition, write_site
from local_cluster import LocalCluster, User

from helpers import free_port, needs_local_slurm

requests = pytest.importorskip("requests", reason="comes with jupyterhub (the 'test' extra)")
PROXY = shutil.which("configurable-http-proxy")
HUB = Path(sys.executable).parent / "jupyterhub"
# Short enough for a test, long enough for a student who is being tested.
IDLE_MINUTES = 0.35
FORM = {"cores": "1", "gpus": "0", "memory_gb": "1", "hours": "1"}


def job_logs(user: User) -> str:
    """The end of *user*'s session logs, for a failure's report."""
    return "".join(
        f"\n--- {log.name}\n{log.read_text(errors='replace')[-1500:]}"
        for log in sorted(user.home.glob(".gpu-course-hub-*.log"))
    )


class Hub:
    """The running hub: its URL, an admin token for the test, its log, its students."""

    def __init__(
        self, cluster: LocalCluster, state: Path, idle_minutes: float, scheduler: str = "slurm"
    ) -> None:
        self.cluster, self.state, self.idle_minutes = cluster, state, idle_minutes
        # "lsf": the cluster's LSF stand-in (tests/slurm/fake-lsf) in place of Slurm.
        self.scheduler = scheduler
        self.url = f"http://127.0.0.1:{free_port()}"
        self.token = secrets.token_hex(24)
        self.log = state / "jupyterhub.log"
        self.passwords = {u.name: secrets.token_urlsafe(12) for u in self.students}
        self.group = f"{cluster.student.name}g"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        """Passwords and a group for the students, the site file, then JupyterHub itself."""
        subprocess.run(["groupadd", self.group], check=True)
        for user in self.students:
            self.admit(user)
        cluster, state = self.cluster, self.state
        self.site = write_site(
            state / "site.yml",
            scheduler=self.scheduler,
            edition=str(make_edition(cluster.shared / "edition")),
            choices={"partitions": [cluster.partition]},
            idle_minutes=self.idle_minutes,
            hub={
                "bind_url": self.url,
                "state_dir": str(state / "hub"),
                "allowed_group": self.group,
                # exec_prefix and keep_environment (SLURM_CONF): the documented defaults.
                "start_timeout": 120,
                "extra_config": str(self._test_config(state / "test_config.py")),
            },
        )
        self.launch()

    def admit(self, user: User) -> None:
        """A password for *user* and the course's group."""
        self.passwords.setdefault(user.name, secrets.token_urlsafe(12))
        subprocess.run(
            ["chpasswd"], input=f"{user.name}:{self.passwords[user.name]}\n", text=True,
            check=True,
        )  # fmt: skip
        subprocess.run(["usermod", "-aG", self.group, user.name], check=True)

    def launch(self) -> None:
        """JupyterHub itself (again, after a stop: the same site, ports and state)."""
        with self.log.open("a") as out:
            self.process = subprocess.Popen(
                [str(HUB), "-f", str(DEPLOY / "jupyterhub" / "jupyterhub_config.py")],
                cwd=self.state,
                env={
                    "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin:/usr/sbin:/sbin"
                    + (f":{self.cluster.lsf_bin}" if self.scheduler == "lsf" else ""),
                    "LANG": "C.UTF-8",
                    "GPU_COURSE_SITE": str(self.site),
                    "SLURM_CONF": str(self.cluster.slurm_conf),  # a site's is in /etc/slurm
                    # Debian's proxy keeps its modules there; a node.js from elsewhere
                    # (this image's) does not look there by itself.
                    "NODE_PATH": "/usr/share/nodejs",
                },
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while not self._answers():
            assert self.process.poll() is None, self.log.read_text()[-4000:]
            assert time.monotonic() < deadline, self.log.read_text()[-4000:]
            time.sleep(0.5)

    @property
    def students(self) -> list[User]:
        return [self.cluster.student, self.cluster.neighbour]

    def _test_config(self, path: Path) -> Path:
        """What the test adds to the site's hub: free ports, its Slurm, an admin token."""
        path.write_text(
            f"c.JupyterHub.hub_port = {free_port()}\n"
            f"c.ConfigurableHTTPProxy.api_url = 'http://127.0.0.1:{free_port()}'\n"
            # Servers report their activity often, so that a busy one is never culled.
            "c.Spawner.environment = {'JUPYTERHUB_ACTIVITY_INTERVAL': '5'}\n"
            # A stalled controller: settled within seconds here (90 s by default).
            "c.CourseSpawnerMixin.submit_recovery_seconds = 6\n"
            "c.CourseSpawnerMixin.submit_poll_interval = 2\n"
            "c.JupyterHub.last_activity_interval = 5\n"
            "c.JupyterHub.services.append({'name': 'test', 'api_token': "
            f"{self.token!r}}})\n"
            "c.JupyterHub.load_roles.append({'name': 'test', 'services': ['test'], "
            "'scopes': ['admin:users', 'admin:servers', 'list:users']})\n"
        )
        path.chmod(0o600)  # the admin token
        return path

    def _answers(self) -> bool:
        try:
            return requests.get(f"{self.url}/hub/api", timeout=5).status_code == 200
        except requests.ConnectionError:
            return False

    def api(self, method: str, path: str, body: dict | None = None) -> requests.Response:
        return requests.request(
            method,
            f"{self.url}/hub/api{path}",
            headers={"Authorization": f"token {self.token}"},
            json=body,
            timeout=30,
        )

    def login(self, user: User) -> requests.Session:
        """A browser-like session logged in as *user* (the login form, with its XSRF token)."""
        session = requests.Session()
        session.get(f"{self.url}/hub/login", timeout=30)
        reply = session.post(
            f"{self.url}/hub/login",
            data={
                "username": user.name,
                "password": self.passwords[user.name],
                "_xsrf": session.cookies.get("_xsrf", path="/hub/"),
            },
            timeout=30,
        )
        assert reply.status_code == 200 and "jupyterhub-hub-login" in session.cookies, reply.text
        return session

    def wait_ready(self, user: User, seconds: float = 150) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            server = self.api("GET", f"/users/{user.name}").json()["servers"].get("", {})
            if server.get("ready"):
                return
            assert server.get("pending") or server, self.log.read_text()[-3000:] + job_logs(user)
            time.sleep(1)
        raise AssertionError(f"no server for {user.name}:\n" + self.log.read_text()[-4000:])

    def jobs_of(self, user: User) -> list[str]:
        if self.scheduler == "lsf":  # the stand-in's unfinished jobs of the hub
            result = subprocess.run(
                ["runuser", "-u", user.name, "--", str(self.cluster.lsf_bin / "bjobs"),
                 "-noheader", "-o", "jobid", "-J", "gpu-course-hub*"],
                capture_output=True, text=True, check=False,
            )  # fmt: skip
            return result.stdout.split()
        result = subprocess.run(
            ["squeue", "-h", "-u", user.name, "-o", "%i"],
            capture_output=True,
            text=True,
            env=self.cluster.env,
            check=True,
        )
        return result.stdout.split()

    def wait_no_job(self, user: User, seconds: float = 90) -> None:
        deadline = time.monotonic() + seconds
        while self.jobs_of(user) and time.monotonic() < deadline:
            time.sleep(1)
        assert not self.jobs_of(user), self.log.read_text()[-4000:]

    def spawn_failure(self, user: User, seconds: float = 120) -> str:
        """What the hub tells *user* about a spawn that fails (its progress page's event)."""
        deadline = time.monotonic() + seconds
        while self.api("GET", f"/users/{user.name}").json()["servers"]:
            assert time.monotonic() < deadline, self.log.read_text()[-4000:]
            time.sleep(1)
        reply = self.api("GET", f"/users/{user.name}/server/progress")
        events = [
            json.loads(line[5:]) for line in reply.text.splitlines() if line.startswith("data:")
        ]
        assert events and events[-1].get("failed"), reply.text
        return events[-1]["message"]

    def stop_server(self, user: User) -> None:
        reply = self.api("DELETE", f"/users/{user.name}/server")
        assert reply.status_code in (202, 204), reply.text
        self.wait_no_job(user, seconds=60)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        subprocess.run(["groupdel", self.group], check=False)


def running_hub(
    tmp_path_factory: pytest.TempPathFactory,
    idle_minutes: float = IDLE_MINUTES,
    scheduler: str = "slurm",
) -> Iterator[Hub]:
    """A cluster and the hub on it, for one test module (a fixture's body)."""
    needs_local_slurm()
    if PROXY is None:
        pytest.skip("no configurable-http-proxy: apt-get install node-configurable-http-proxy")
    with LocalCluster(tmp_path_factory.mktemp("cluster")) as cluster:
        running = Hub(cluster, tmp_path_factory.mktemp("hub"), idle_minutes, scheduler)
        try:
            running.start()
            yield running
        finally:
            running.stop()


def culler_processes(hub: Hub) -> list[int]:
    """The idle cullers *hub* started (and any it left behind), not another test's hub's.

    JupyterHub starts its services in its own working directory, which is the
    hub's state folder here, so the folder tells one hub's culler from another's
    when tests run side by side.
    """
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and b"idle_culler" in (entry / "cmdline").read_bytes()
                and Path(os.readlink(entry / "cwd")) == hub.state.resolve()
            ):
                found.append(int(entry.name))
        except OSError:
            pass
    return found
