"""JupyterHub for a class: students log in and get the course in a Slurm or LSF job.

Start it as root on a host that can submit jobs (``runuser``, from util-linux,
runs the scheduler's commands as the student; no sudo is needed), from the
course environment:

    export GPU_COURSE_SITE=/etc/gpu-course/site.yml
    .venv/bin/jupyterhub -f deploy/jupyterhub/jupyterhub_config.py

Everything a site chooses is in its site file (deploy/site.example.yml); this
file only wires the course's pieces into JupyterHub: unix accounts through PAM
(members of one group), the course spawner (course_spawner.py), the hub's state
in a private folder, and jupyterhub-idle-culler, which stops servers idle for
the session's idle time (the spawner then cancels their job) and ends with the
hub (idle_culler.py). Students' servers outlive a restart of the hub
(``cleanup_servers = False``): their jobs go on and the new hub finds them. At
start, the hub checks that a student can run the course environment's Python
and stops with what to fix when one cannot. A site that
needs more (another authenticator, TLS) names a Python file of its own in
``hub: extra_config``, loaded last.
"""

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from course_session import Session, site_file  # noqa: E402
from course_spawner import spawner_for  # noqa: E402
from jupyterhub.spawner import Spawner  # noqa: E402

c = get_config()  # noqa: F821 (JupyterHub's config loader provides it)
session = Session(site_file())
hub = session.settings.get("hub", {})
DEFAULT_KEEP = [
    "PATH",
    "SLURM_CONF",
    "LSF_ENVDIR",
    "LSF_SERVERDIR",
    "LSF_BINDIR",
    "LSF_LIBDIR",
    "LSF_LOGDIR",
]


def check_environment(venv: Path, user: str) -> None:
    """Stop the hub, saying what to fix, when *user* (no student) cannot run the course's Python.

    A course environment made with a Python in the installer's home (pyenv,
    conda) links to an interpreter students cannot read: every spawn would end
    with status 126.
    """
    python = venv / "bin" / "python"
    probe = subprocess.run(
        ["runuser", "-u", user, "--", str(python), "-c", "import jupyterhub, batchspawner"],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",
    )
    if probe.returncode == 0:
        return
    closed = []
    targets = [python, python.resolve()]
    config = venv / "pyvenv.cfg"
    if config.is_file():
        for line in config.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home":
                targets.append(Path(value.strip()))
    for target in targets:
        for folder in [*reversed(target.parents), target]:
            try:
                if folder.is_dir() and not folder.stat().st_mode & 0o001:
                    closed.append(str(folder))
            except OSError:
                pass
    what = (
        "chmod o+x " + " ".join(dict.fromkeys(closed)) + " (or install the course with a "
        "Python outside a private home, e.g. /usr/bin/python3 or one under /opt)"
        if closed
        else "make the environment and the Python it links to readable by students"
    )
    sys.exit(
        f"gpu-course hub: students cannot run the course environment's Python {python} "
        f"(as {user}: exit {probe.returncode}: {probe.stderr.strip()[-300:]}). Fix: {what}."
    )


if os.geteuid() == 0 and hub.get("check_environment", True):
    check_environment(
        Path(session.job_environment()["COURSE_VENV"]), hub.get("check_user", "nobody")
    )

# ------------------------------------------------------------ the hub itself
# Files the hub makes, and the jobs it submits (the scheduler passes the umask
# on), are private: a job's log in the student's home is theirs alone.
os.umask(0o077)
c.JupyterHub.bind_url = hub.get("bind_url", "http://:8000")
if hub.get("hub_ip"):
    c.JupyterHub.hub_ip = hub["hub_ip"]
state = Path(hub.get("state_dir", "/var/lib/gpu-course-hub"))
state.mkdir(mode=0o700, parents=True, exist_ok=True)
state.chmod(0o700)  # the database and the cookie secret: root only
c.JupyterHub.db_url = f"sqlite:///{state / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(state / "jupyterhub_cookie_secret")
c.ConfigurableHTTPProxy.pid_file = str(state / "proxy.pid")

# ------------------------------------------------------------ who logs in
c.JupyterHub.authenticator_class = "pam"
if hub.get("allowed_group"):
    c.PAMAuthenticator.allowed_groups = {hub["allowed_group"]}
c.Authenticator.admin_users = set(hub.get("admin_users") or [])

# ------------------------------------------------------------ the servers
c.JupyterHub.spawner_class = spawner_for(session.scheduler)
c.Spawner.default_url = session.settings["mode"]["default_url"]
# runuser (util-linux) as root keeps the hub's environment for sbatch/squeue/scancel.
c.BatchSpawnerBase.exec_prefix = hub.get("exec_prefix", "runuser -u {username} --")
# The scheduler's own variables (where its commands are, a configuration outside
# /etc/slurm, LSF's folders) reach its commands and the job; a site names more in
# its site file. JupyterHub keeps no PATH by itself: bsub in LSF's bin folder would
# not be found.
c.Spawner.env_keep = [
    *Spawner.env_keep.default(),
    *hub.get("keep_environment", DEFAULT_KEEP),
]
c.Spawner.start_timeout = int(hub.get("start_timeout", 600))  # waiting in the queue
c.Spawner.http_timeout = 120  # a cold Python environment on shared storage is slow

# A restart of the hub (an update, a crash) leaves the students' servers running.
c.JupyterHub.cleanup_servers = bool(hub.get("cleanup_servers", False))

# ------------------------------------------------------------ idle culling
idle_seconds = session.job_environment()["COURSE_IDLE_SECONDS"]
c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [
            sys.executable,
            str(HERE / "idle_culler.py"),
            f"--timeout={idle_seconds}",
            f"--cull-every={max(5, min(60, int(idle_seconds) // 2))}",
        ],
    }
]
c.JupyterHub.load_roles = [
    {
        "name": "idle-culler",
        "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
        "services": ["idle-culler"],
    }
]

if hub.get("extra_config"):
    load_subconfig(hub["extra_config"])  # noqa: F821 (JupyterHub's config loader provides it)
