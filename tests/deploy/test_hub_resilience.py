"""The course hub when things go wrong, and a class at once (deploy/jupyterhub).

On the hub of tests/hub_helpers.py: slurmctld stopped across the students'
submissions (a sentence, then one job each: never a ghost job nor a second one);
a job that ends before its server starts (the student reads where its log is);
four students spawning and validating at once on one node, then a hub crash and
a restart (the servers stay, one idle culler); and a course environment students
cannot run (the hub stops at start and says what to fix).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from cluster_users import add_user, remove_user
from deploy_helpers import DEPLOY, write_site
from hub_helpers import FORM, HUB, Hub, culler_processes, requests, running_hub
from local_cluster import User

from helpers import solve_exercise

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory):
    # Idle culling is test_hub.py's: here no server is culled while others start.
    yield from running_hub(tmp_path_factory, idle_minutes=30)


@pytest.fixture
def hub(running: Hub) -> Hub:
    """The module's hub, with no student's server left by an earlier test."""
    for user in running.students:
        with contextlib.suppress(requests.RequestException, AssertionError):
            if running.api("GET", f"/users/{user.name}").json().get("servers"):
                running.stop_server(user)
    return running


def test_a_stalled_scheduler_books_no_second_job(hub: Hub) -> None:
    """slurmctld stops across the submissions: a sentence, then one job per student."""
    students = hub.students
    for student in students:
        hub.login(student)  # known to the hub from then on

    def spawn(student: User) -> requests.Response:
        return hub.api("POST", f"/users/{student.name}/server", FORM)

    def told(student: User, started: requests.Response) -> str:
        if started.status_code == 503:  # failed within the API's first wait
            return started.json()["message"]
        assert started.status_code in (201, 202), started.text
        return hub.spawn_failure(student)

    controller = hub.cluster.slurmctld
    assert controller is not None
    controller.send_signal(signal.SIGSTOP)
    try:
        with ThreadPoolExecutor(len(students)) as pool:
            replies = list(pool.map(spawn, students))
        messages = [told(s, r) for s, r in zip(students, replies, strict=True)]
    finally:
        controller.send_signal(signal.SIGCONT)
    for message in messages:
        assert "scheduler did not answer in time" in message, message
        assert "sbatch" not in message and "Socket" not in message, message
    # The submissions reach the queue now: a retry takes its job over (or, when the
    # hub's check has cancelled it first, books one): never a second job.
    with ThreadPoolExecutor(len(students)) as pool:
        retried = list(pool.map(spawn, students))
    assert all(r.status_code in (201, 202) for r in retried), [r.text for r in retried]
    for student in students:
        hub.wait_ready(student)
        assert len(hub.jobs_of(student)) == 1, hub.cluster.squeue()
    time.sleep(3)  # the background check's time to cancel what nobody took
    for student in students:
        assert len(hub.jobs_of(student)) == 1, hub.cluster.squeue()
        hub.api("DELETE", f"/users/{student.name}/server")
    for student in students:
        hub.wait_no_job(student, seconds=60)
    assert not hub.cluster.squeue().split()


def test_a_job_that_dies_says_where_its_log_is(hub: Hub) -> None:
    _, other = hub.students
    hub.login(other)
    blocker = other.home / "gpu-course"
    moved = other.home / "gpu-course.moved"
    if blocker.exists():
        blocker.rename(moved)
    blocker.write_text("not a folder: the job's set-up fails\n")
    try:
        started = hub.api("POST", f"/users/{other.name}/server", FORM)
        assert started.status_code in (201, 202, 500), started.text
        message = (
            started.json()["message"] if started.status_code == 500 else hub.spawn_failure(other)
        )
    finally:
        blocker.unlink()
        if moved.exists():
            moved.rename(blocker)
    assert re.search(rf"{re.escape(str(other.home))}/\.gpu-course-hub-\d+\.log", message), message
    assert "ended before its server started" in message
    assert "Unhandled error" not in message
    assert not hub.jobs_of(other)


def test_a_class_at_once_then_a_hub_crash(hub: Hub) -> None:
    """4 students spawn and Validate at once on one node; the hub crashes and comes back.

    Their kernels start in the same instant (ipc transport: no shared TCP ports);
    the servers outlive the hub (cleanup_servers off), and its culler dies with it.
    """
    tag = hub.cluster.shared.name[-4:].lower()
    extra = [User(f"gjc{i}{tag}", hub.cluster.shared / f"class{i}") for i in (1, 2)]
    # Four 1-core sessions on this small node: the partition shares its cores.
    subprocess.run(
        ["scontrol", "update", f"PartitionName={hub.cluster.partition}", "OverSubscribe=FORCE:4"],
        env=hub.cluster.env,
        check=True,
    )
    try:
        for user in extra:
            add_user(user)
            subprocess.run(["chown", "-R", f"{user.uid}:{user.gid}", str(user.home)], check=True)
            hub.admit(user)
        students = [*hub.students, *extra]
        sessions = {user.name: hub.login(user) for user in students}
        for user in students:
            started = hub.api("POST", f"/users/{user.name}/server", FORM)
            assert started.status_code in (201, 202), started.text
            # This node has 4000 MB for Slurm: the fourth 1 GB session would wait for
            # memory, so a waiting one asks for a little less.
            for job in subprocess.run(
                ["squeue", "-h", "-t", "PD", "-o", "%i"], capture_output=True, text=True,
                env=hub.cluster.env, check=True,
            ).stdout.split():  # fmt: skip
                subprocess.run(
                    ["scontrol", "update", f"JobId={job}", "MinMemoryNode=800"],
                    env=hub.cluster.env, check=False,
                )  # fmt: skip
        for user in students:
            hub.wait_ready(user, seconds=240)
            solve_exercise(user.home / "gpu-course" / "exercises" / "simt" / "simt.ipynb", "simt")

        def validate(user: User) -> dict:
            me = sessions[user.name]
            base = f"{hub.url}/user/{user.name}"
            assert me.get(f"{base}/lab", timeout=60).status_code == 200
            reply = me.post(
                f"{base}/assignments/validate",
                data={"path": "exercises/simt/simt.ipynb"},
                headers={"X-XSRFToken": me.cookies.get("_xsrf", path=f"/user/{user.name}/")},
                timeout=300,
            )
            assert reply.status_code == 200, reply.text[-2000:]
            return reply.json()

        with ThreadPoolExecutor(len(students)) as pool:
            results = list(pool.map(validate, students))
        for user, result in zip(students, results, strict=True):
            assert result["success"], f"{user.name}: {result['value']}"
            assert not result["value"].get("failed"), result["value"]
        jobs = {user.name: hub.jobs_of(user) for user in students}
        assert all(len(j) == 1 for j in jobs.values()), jobs

        # The hub crashes: its culler goes with it, the students' jobs stay.
        assert len(culler_processes(hub)) == 1
        assert hub.process is not None
        hub.process.kill()
        hub.process.wait()
        deadline = time.monotonic() + 15
        while culler_processes(hub) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not culler_processes(hub)
        hub.launch()
        assert len(culler_processes(hub)) == 1
        # A stop with SIGTERM (a restart) leaves the servers too.
        os.killpg(hub.process.pid, signal.SIGTERM)
        hub.process.wait(timeout=60)
        hub.launch()
        for user in students:
            assert hub.jobs_of(user) == jobs[user.name]
            hub.wait_ready(user, seconds=30)
            status = sessions[user.name].get(f"{hub.url}/user/{user.name}/api/status", timeout=60)
            assert status.status_code == 200, status.text[-1000:]
        for user in students:
            hub.stop_server(user)
    finally:
        subprocess.run(
            ["scontrol", "update", f"PartitionName={hub.cluster.partition}", "OverSubscribe=NO"],
            env=hub.cluster.env,
            check=False,
        )
        for user in extra:
            for job in subprocess.run(
                ["squeue", "-h", "-u", user.name, "-o", "%i"], capture_output=True, text=True,
                env=hub.cluster.env, check=False,
            ).stdout.split():  # fmt: skip
                subprocess.run(["scancel", job], env=hub.cluster.env, check=False)
            remove_user(user)


def test_the_hub_refuses_an_environment_students_cannot_run(tmp_path: Path) -> None:
    """A course venv behind a private folder (a Python in a home): the hub says what to fix."""
    if os.geteuid() != 0:
        pytest.skip("the hub's check runs as root")
    private = Path(tempfile.mkdtemp(prefix="gjp", dir="/tmp"))
    try:
        private.chmod(0o700)
        (private / "venv").symlink_to(Path(sys.prefix))
        site = write_site(
            tmp_path / "site.yml",
            scheduler="slurm",
            venv=str(private / "venv"),
            hub={"state_dir": str(tmp_path / "hub")},
        )
        result = subprocess.run(
            [str(HUB), "-f", str(DEPLOY / "jupyterhub" / "jupyterhub_config.py")],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin:/usr/sbin:/sbin", "GPU_COURSE_SITE": str(site)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        shutil.rmtree(private, ignore_errors=True)
    assert result.returncode != 0
    assert "students cannot run the course environment's Python" in result.stderr, result.stderr
    assert f"chmod o+x {private}" in result.stderr, result.stderr
