"""JupyterHub for a class: students log in and get the course in a Slurm or LSF job.

Start it as root on a host that can submit jobs (``sudo`` runs the scheduler's
commands as the student), from the course environment:

    export GPU_COURSE_SITE=/etc/gpu-course/site.yml
    .venv/bin/jupyterhub -f deploy/jupyterhub/jupyterhub_config.py

Everything a site chooses is in its site file (deploy/site.example.yml); this
file only wires the course's pieces into JupyterHub: unix accounts through PAM
(members of one group), the course spawner (course_spawner.py), the hub's state
in a private folder, and jupyterhub-idle-culler, which stops servers idle for
the session's idle time (the spawner then cancels their job). A site that
needs more (another authenticator, TLS) names a Python file of its own in
``hub: extra_config``, loaded last.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from course_session import Session, site_file  # noqa: E402
from course_spawner import spawner_for  # noqa: E402

c = get_config()  # noqa: F821 (JupyterHub's config loader provides it)
session = Session(site_file())
hub = session.settings.get("hub", {})

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
c.BatchSpawnerBase.exec_prefix = hub.get("exec_prefix", "sudo -E -u {username}")
c.Spawner.start_timeout = int(hub.get("start_timeout", 600))  # waiting in the queue
c.Spawner.http_timeout = 120  # a cold Python environment on shared storage is slow

# ------------------------------------------------------------ idle culling
idle_seconds = session.job_environment()["COURSE_IDLE_SECONDS"]
c.JupyterHub.services = [
    {
        "name": "idle-culler",
        "command": [
            sys.executable,
            "-m",
            "jupyterhub_idle_culler",
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
