"""The course hub's LSF path (CourseLsfSpawner), against the LSF stand-in of tests/slurm.

No LSF can be installed on CI: the hub of tests/hub_helpers.py runs with
``scheduler: lsf`` and the cluster's bsub/bjobs/bkill stand-in (tests/slurm/fake-lsf),
which runs jobs on this machine as LSF would. bsub loses its answer although the
job was taken (as when mbatchd stops answering): the hub finds the job by its
unique name and serves the student from it, booking no second one. The job asks
LSF for the warning before its time limit (``#BSUB -wa USR1``, ``-wt``); the
warning, sent to the job's processes as LSF's warning action does, reaches the
student's server, whose lab page is then told. Stopping the server kills the job.
"""

from __future__ import annotations

import os
import signal
import time

import pytest
from deploy_helpers import Session
from hub_helpers import FORM, Hub, running_hub

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory):
    yield from running_hub(tmp_path_factory, idle_minutes=30, scheduler="lsf")


def test_lsf_hub_adopts_a_lost_submission_and_passes_the_warning_on(hub: Hub) -> None:
    student = hub.cluster.student
    me = hub.login(student)
    lose = hub.cluster.lsf_setting("lose-answer")
    try:
        reply = hub.api("POST", f"/users/{student.name}/server", FORM)
        assert reply.status_code in (201, 202), reply.text
        hub.wait_ready(student)
    finally:
        lose.unlink()
    (job,) = hub.jobs_of(student)  # one job: the lost submission's, not a second
    assert f"Job {job} of {student.name} was submitted after all" in hub.log.read_text()

    jobs = hub.cluster.home / ".fake-lsf"
    script = (jobs / f"{job}.sh").read_text()
    warning = Session(hub.site).warning_words("lsf")  # ["-wa", "USR1", "-wt", "10"]
    assert f"\n#BSUB {warning[0]} {warning[1]}\n#BSUB {warning[2]} {warning[3]}\n" in script
    lab = me.get(f"{hub.url}/user/{student.name}/lab", timeout=60)  # logs in to the server
    assert lab.status_code == 200, lab.text[-2000:]
    limit = f"{hub.url}/user/{student.name}/gpu-course/time-limit"
    before = me.get(limit, timeout=30)
    assert before.status_code == 200 and before.json()["warned"] is False, before.text
    os.killpg(int((jobs / f"{job}.pid").read_text()), signal.SIGUSR1)  # LSF's -wa action
    deadline = time.monotonic() + 20
    while not (state := me.get(limit, timeout=30).json())["warned"]:
        assert time.monotonic() < deadline, state
        time.sleep(0.5)
    assert 570 <= state["seconds_left"] <= 600, state
    assert me.get(f"{hub.url}/user/{student.name}/api/status", timeout=30).status_code == 200

    hub.stop_server(student)
    assert not hub.jobs_of(student)
