"""The Open OnDemand app (deploy/ondemand/gpu-course) runs its session under a real Slurm.

OnDemand itself (a Ruby on Rails portal) cannot run here, so this test does
what it does with an app: renders submit.yml.erb and the template's ERB files
with Ruby for the student's form values, stages the template in the student's
home, wraps it in a job script like OnDemand's "basic" template (a stand-in
below: helpers, before.sh sourced, script.sh forked, after.sh sourced, the
connection file written) and submits it with sbatch as the student, with the
options and the environment submit.yml names. Then JupyterLab must answer at
OnDemand's /node/<host>/<port>/ path with the app's token only, in the
students' mode, in the student's own copy of the notebooks (a solved exercise
left as it was); the time-limit signal, sent to the job script as Slurm's
--signal=B: sends it, must reach JupyterLab and end nothing; and scancel must
leave no job. Slurm is the one-machine cluster of the launch tests
(tests/slurm/local_cluster.py).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from deploy_helpers import (
    APP,
    Session,
    assert_students_mode,
    make_edition,
    needs_ruby,
    render_erb,
    write_site,
)
from local_cluster import LocalCluster

from helpers import needs_local_slurm

pytestmark = [pytest.mark.slow, needs_ruby]

# What OnDemand's "basic" batch_connect template does around an app's scripts,
# in the order its documentation gives: helpers, host, before.sh, script.sh in
# the background, after.sh, the connection file for the app's view, then wait.
OOD_BASIC_STAND_IN = r"""#!/bin/bash
cd "$1" || exit 1
port_used() { (exec 3<>"/dev/tcp/${1%:*}/${1#*:}") 2>/dev/null; }
find_port() {
    local port
    while :; do
        port=$(shuf -i 20000-60000 -n 1)
        port_used "$1:$port" || { echo "$port"; return; }
    done
}
create_passwd() { tr -cd '[:alnum:]' < /dev/urandom | head -c "${1:-32}"; }
wait_until_port_used() {
    local i
    for ((i = 0; i < ${2:-30} * 2; i++)); do port_used "$1" && return 0; sleep 0.5; done
    return 1
}
clean_up() { [[ -n "$SCRIPT_PID" ]] && pkill -P "$SCRIPT_PID"; pkill -P $$; exit "${1:-0}"; }
host=$(hostname)
[[ -e before.sh ]] && source before.sh
./script.sh &
SCRIPT_PID=$!
[[ -e after.sh ]] && source after.sh
(umask 077; printf 'host: %s\nport: %s\npassword: %s\n' "$host" "$port" "$password" \
    > connection.yml)
wait "$SCRIPT_PID" || clean_up 1
clean_up
"""
FORM = {
    "cores": "1",
    "gpus": "0",
    "memory_gb": "1",
    "hours": "1",
    "partition": "",
    "account": "",
    "reservation": "",
    "gpu_type": "",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    needs_local_slurm()
    with LocalCluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


def stage(template: Path, staged: Path, values: dict[str, str], site: Path) -> None:
    """The app's template in the session's folder, its ERB files rendered, links followed."""
    shutil.copytree(template, staged)  # symlinks=False: start-course.sh becomes a file
    for erb in staged.glob("*.erb"):
        erb.with_suffix("").write_text(render_erb(template / erb.name, values, site))
        erb.with_suffix("").chmod(erb.stat().st_mode)
        erb.unlink()


def get(url: str, token: str | None = None) -> tuple[int, str]:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"token {token}")
    try:
        with urllib.request.urlopen(request, timeout=20) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, ""


def redirect(url: str, token: str) -> str:
    """Where the server sends a request for *url* (its default page, for the base URL)."""

    class Keep(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        urllib.request.build_opener(Keep).open(request, timeout=20)
    except urllib.error.HTTPError as error:
        return error.headers.get("Location", "")
    return ""


def assert_warned_on_signal(cluster: LocalCluster, job_id: str, url: str, token: str) -> None:
    """The time-limit signal, sent to the job script as Slurm's --signal=B: sends it,
    reaches JupyterLab (which then warns) and ends nothing."""
    status, before = get(url, token)
    assert status == 200 and json.loads(before)["warned"] is False, before
    signal = ["scancel", "--signal=USR1", "--batch", job_id]
    subprocess.run(signal, env=cluster.env, check=True, timeout=30)
    deadline = time.monotonic() + 20
    while not json.loads(get(url, token)[1] or "{}").get("warned"):
        assert time.monotonic() < deadline, get(url, token)
        time.sleep(0.5)
    warn = int(Session(None).job_environment()["COURSE_WARN_SECONDS"])
    assert warn - 30 <= json.loads(get(url, token)[1])["seconds_left"] <= warn
    time.sleep(2)
    assert get(url.replace("gpu-course/time-limit", "api/status"), token)[0] == 200
    assert job_id in cluster.squeue()


def test_ondemand_session_under_slurm(cluster: LocalCluster) -> None:
    student = cluster.student
    edition = make_edition(cluster.shared / "edition")
    site = write_site(
        cluster.shared / "site.yml",
        scheduler="slurm",
        edition=str(edition),
        choices={"partitions": [cluster.partition]},
        ondemand={"origin": "https://ondemand.example.edu"},
    )
    values = {**FORM, "partition": cluster.partition}
    submit = yaml.safe_load(render_erb(APP / "submit.yml.erb", values, site))["script"]
    # The student solved an exercise in an earlier session: it must stay as it is.
    solved = student.home / "gpu-course" / "exercises" / "simt" / "simt.ipynb"
    solved.parent.mkdir(parents=True)
    solved.write_text('{"my": "work"}')
    staged = student.home / "ondemand" / "session-1"
    stage(APP / "template", staged, values, site)
    job_script = staged / "job.sh"
    job_script.write_text(OOD_BASIC_STAND_IN)
    subprocess.run(["chown", "-R", f"{student.uid}:{student.gid}", str(student.home)], check=True)

    # copy_environment: false -> sbatch --export=NAMES: the job gets those and no more.
    environment = submit["job_environment"]
    sbatch = subprocess.run(
        [
            "sbatch",
            "--parsable",
            f"--job-name={submit['job_name']}",
            f"--export={','.join(environment)}",
            f"--output={staged / 'output.log'}",
            *submit["native"],
            str(job_script),
            str(staged),
        ],
        env=student.env(SLURM_CONF=str(cluster.slurm_conf), **environment),
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
        **student.popen_args(),
    )
    assert sbatch.returncode == 0, sbatch.stderr
    job_id = sbatch.stdout.strip().split(";")[0]
    try:
        connection = staged / "connection.yml"
        deadline = time.monotonic() + 180
        while not connection.exists() and time.monotonic() < deadline:
            assert job_id in cluster.squeue(), (staged / "output.log").read_text()
            time.sleep(0.5)
        state = subprocess.run(
            ["squeue", "-h", "-j", job_id, "-o", "%T %r"], env=cluster.env, capture_output=True
        )
        log = staged / "output.log"
        assert connection.exists(), (state.stdout, log.exists() and log.read_text()[-3000:])
        time.sleep(0.5)  # written in one printf; let it land
        info = yaml.safe_load(connection.read_text())
        assert connection.stat().st_mode & 0o077 == 0
        settings = staged / "course_lab_config"
        assert settings.stat().st_mode & 0o077 == 0
        assert (settings / "jupyter_server_config.py").stat().st_mode & 0o077 == 0
        base = f"http://127.0.0.1:{info['port']}/node/{info['host']}/{info['port']}/"
        token = str(info["password"])
        assert len(token) == 32

        # Only with the token, and only under OnDemand's proxy path.
        assert get(base + "api/status", token)[0] == 200
        assert get(base + "api/status")[0] == 403
        assert get(base + "api/status", "x" * 32)[0] == 403
        assert get(f"http://127.0.0.1:{info['port']}/api/status", token)[0] == 404
        assert redirect(base, token).startswith(
            base[base.index("/node/") :] + "lab/tree/course/README.md"
        )
        status, page = get(base + "lab", token)
        assert status == 200
        assert_students_mode(page, get(base + "formgrader", token)[0])
        # The student's own copy: chapters and exercises copied, their work kept.
        status, listing = get(base + "api/contents/course", token)
        assert status == 200 and "02-simt-model.ipynb" in listing
        assert solved.read_text() == '{"my": "work"}'
        workspace = student.home / "gpu-course"
        assert (workspace / "course" / "02-simt-model.ipynb").stat().st_uid == student.uid
        assert os.stat(workspace / "exercises" / "cupy_port").st_mode & 0o077 == 0
        # The view's button opens the course index and logs in with the token.
        view = render_erb(APP / "view.html.erb", {**info, "port": str(info["port"])}, site)
        link = re.search(r'href="(/node/[^"]+)"', view).group(1)
        assert (
            link == f"/node/{info['host']}/{info['port']}/lab/tree/course/README.md?token={token}"
        )
        with urllib.request.urlopen(f"http://127.0.0.1:{info['port']}{link}", timeout=20) as page:
            assert page.status == 200
            cookie = page.headers.get("Set-Cookie", "")  # JupyterLab's login, for this path only
            assert cookie.startswith("username-") and f"Path=/node/{info['host']}/" in cookie
        assert_warned_on_signal(cluster, job_id, base + "gpu-course/time-limit", token)
    finally:
        subprocess.run(["scancel", job_id], env=cluster.env, check=False)
    deadline = time.monotonic() + 30
    while job_id in cluster.squeue() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert job_id not in cluster.squeue()
