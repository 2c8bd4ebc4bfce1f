"""The course hub (deploy/jupyterhub) serves two students through a real Slurm.

JupyterHub runs as root with the course's configuration and a site file, behind
Debian's configurable-http-proxy, against the one-machine Slurm of the launch
tests (tests/slurm/local_cluster.py); its two unix users log in with passwords
through PAM. A student logs in, fills the spawn form and gets the course in a
Slurm job: the students' mode, their own copy of the notebooks; the job asks for
the warning signal before its time limit, and the signal reaches the server. The other
student cannot reach that server, nor can anyone without logging in. Stopping
the server cancels the job; an idle server is stopped by jupyterhub-idle-culler,
which also leaves no job. The same again in a real browser (Debian's headless
Chromium, with the helpers of tests/browser_helpers.py): log in, spawn through the form,
run a cell of chapter 2, Validate an exercise, "Stop My Server". Needs root,
Slurm, configurable-http-proxy and Chromium (CI installs them); skips with the
missing piece named otherwise. The hub itself is tests/hub_helpers.py's; what goes
wrong (a stalled scheduler, a dying job, a class at once, a hub crash) is in
test_hub_resilience.py.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest
from deploy_helpers import assert_students_mode
from hub_helpers import FORM, IDLE_MINUTES, Hub, requests, running_hub
from local_cluster import User

from helpers import needs_chromium, solve_exercise

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory):
    yield from running_hub(tmp_path_factory)


def test_students_spawn_through_slurm_and_reach_only_their_own(hub: Hub) -> None:
    student, other = hub.students
    me = hub.login(student)
    form = me.get(f"{hub.url}/hub/spawn", timeout=30)
    assert form.status_code == 200
    for field in ("cores", "gpus", "memory_gb", "hours", "partition"):
        assert f'name="{field}"' in form.text
    refused = me.post(
        f"{hub.url}/hub/spawn",
        data={**FORM, "cores": "99", "_xsrf": me.cookies.get("_xsrf")},
        timeout=60,
    )
    assert "cores must be from 1 to 16" in refused.text  # the form again, with the reason
    assert not hub.jobs_of(student)
    spawned = me.post(
        f"{hub.url}/hub/spawn",
        data={**FORM, "partition": hub.cluster.partition, "_xsrf": me.cookies.get("_xsrf")},
        timeout=60,
    )
    assert spawned.status_code == 200, spawned.text[-2000:]
    hub.wait_ready(student)
    (job,) = hub.jobs_of(student)

    # The course in the students' mode, in the student's own folder.
    lab = me.get(f"{hub.url}/user/{student.name}/lab", timeout=60)
    assert lab.status_code == 200, lab.text[-2000:]
    formgrader = me.get(f"{hub.url}/user/{student.name}/formgrader", timeout=30)
    assert_students_mode(lab.text, formgrader.status_code)
    listing = me.get(f"{hub.url}/user/{student.name}/api/contents/exercises/simt", timeout=30)
    assert listing.status_code == 200 and "simt.ipynb" in listing.text
    assert (student.home / "gpu-course" / "course" / "02-simt-model.ipynb").is_file()
    log = student.home / f".gpu-course-hub-{job}.log"
    assert "start-course: the course in" in log.read_text()
    assert log.stat().st_mode & 0o077 == 0

    # The time-limit warning, sent as Slurm's --signal=B:USR1@... sends it, reaches the
    # server (start-course.sh ends in exec): its lab page is told, the job goes on.
    limit = f"{hub.url}/user/{student.name}/gpu-course/time-limit"
    assert me.get(limit, timeout=30).json()["warned"] is False
    script = subprocess.run(
        ["scontrol", "write", "batch_script", job, "-"],
        env=hub.cluster.env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "\n#SBATCH --signal=B:USR1@600\n" in script.stdout  # asked of Slurm
    subprocess.run(
        ["scancel", "--signal=USR1", "--batch", job], env=hub.cluster.env, check=True, timeout=30
    )
    deadline = time.monotonic() + 20
    while not (state := me.get(limit, timeout=30).json())["warned"]:
        assert time.monotonic() < deadline, state
        time.sleep(0.5)
    assert 570 <= state["seconds_left"] <= 600, state
    assert me.get(f"{hub.url}/user/{student.name}/api/status", timeout=30).status_code == 200

    # The other student, and anyone not logged in, cannot reach it.
    them = hub.login(other)
    denied = them.get(f"{hub.url}/user/{student.name}/api/contents/exercises", timeout=60)
    assert denied.status_code in (403, 404), denied.url
    assert "simt" not in denied.text
    anonymous = requests.get(f"{hub.url}/user/{student.name}/api/contents", timeout=30)
    assert anonymous.history or anonymous.status_code in (401, 403)
    assert "simt" not in anonymous.text
    port = re.search(r"http://[^/\s]+:(\d+)/user/", log.read_text()).group(1)
    direct = requests.get(
        f"http://127.0.0.1:{port}/user/{student.name}/api/contents",
        allow_redirects=False,
        timeout=30,
    )
    assert direct.status_code in (302, 403)  # to the hub's login, never the files

    # Stopping the server (the hub's "Stop My Server") cancels the job.
    stopped = me.delete(
        f"{hub.url}/hub/api/users/{student.name}/server",
        headers={"X-XSRFToken": me.cookies.get("_xsrf", path="/hub/")},
        timeout=60,
    )
    assert stopped.status_code in (202, 204), stopped.text
    hub.wait_no_job(student, seconds=60)
    assert job not in hub.cluster.squeue()


class ServerPages:
    """A student's server behind the hub, as tests/browser_helpers.py addresses a lab."""

    def __init__(self, hub: Hub, user: User) -> None:
        self.base = f"{hub.url}/user/{user.name}"

    def url(self, path: str) -> str:
        return f"{self.base}/{path}?"  # the helpers append "&reset"


@needs_chromium
def test_a_student_works_in_a_browser(hub: Hub, tmp_path: Path) -> None:
    """Log in, spawn through the form, run a cell of chapter 2, Validate an exercise, stop."""
    from browser_helpers import _chromium, _open_notebook, _validate, _validate_shown, _wait, step
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as EC

    student = hub.students[0]
    driver = _chromium(tmp_path)
    driver.set_page_load_timeout(60)
    try:
        with step(driver, "hub-1-login"):
            driver.get(f"{hub.url}/hub/login")
            driver.find_element(By.ID, "username_input").send_keys(student.name)
            driver.find_element(By.ID, "password_input").send_keys(hub.passwords[student.name])
            driver.find_element(By.ID, "login_submit").click()
        with step(driver, "hub-2-spawn-form"):
            form = _wait(driver, 30).until(EC.presence_of_element_located((By.ID, "spawn_form")))
            for name, value in FORM.items():
                field = form.find_element(By.NAME, name)
                field.clear()
                field.send_keys(value)
            form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        with step(driver, "hub-3-course-index"):
            # The job starts, the hub sends the browser on to the course index.
            _wait(driver, 150).until(
                EC.presence_of_element_located(
                    (By.CSS_SELECTOR, ".jp-MarkdownViewer .jp-RenderedMarkdown h1")
                )
            )
            assert "/lab/tree/course/README.md" in driver.current_url
            assert len(hub.jobs_of(student)) == 1
        pages = ServerPages(hub, student)
        with step(driver, "hub-4-chapter-cell"):
            panel = _open_notebook(driver, pages, "course/02-simt-model.ipynb")
            assert not _validate_shown(driver, panel)  # the students' mode: not on a chapter
            cell = panel.find_elements(By.CSS_SELECTOR, ".jp-CodeCell")[0]
            cell.find_element(By.CSS_SELECTOR, ".jp-InputArea-editor").click()
            cell.find_element(By.CSS_SELECTOR, ".cm-content").send_keys(Keys.SHIFT, Keys.ENTER)
            _wait(driver, 120).until(
                lambda _d: re.search(
                    r"\[\d+\]", cell.find_element(By.CSS_SELECTOR, ".jp-InputPrompt").text
                )
            )
        with step(driver, "hub-5-validate"):
            exercise = student.home / "gpu-course" / "exercises" / "simt" / "simt.ipynb"
            solve_exercise(exercise, "simt")  # as if the student had solved it
            panel = _open_notebook(driver, pages, "exercises/simt/simt.ipynb")
            assert _validate_shown(driver, panel)
            assert "validation-success" in _validate(driver, panel)
        with step(driver, "hub-6-stop"):
            # The home page binds its buttons once its scripts have loaded: on a busy
            # machine a click can come first and do nothing, so it is tried again on
            # a fresh page until the page says the stop went through (it hides the button).
            for _ in range(3):
                driver.get(f"{hub.url}/hub/home")
                _wait(driver, 30).until(EC.element_to_be_clickable((By.ID, "stop"))).click()
                try:
                    _wait(driver, 20).until(EC.invisibility_of_element_located((By.ID, "stop")))
                    break
                except TimeoutException:
                    continue
            hub.wait_no_job(student, seconds=60)
    finally:
        driver.quit()


def test_an_idle_server_is_culled_and_its_job_ends(hub: Hub) -> None:
    _, other = hub.students
    hub.login(other)  # known to the hub from then on
    # user_options through the REST API are checked like the form's.
    too_many = hub.api("POST", f"/users/{other.name}/server", {**FORM, "cores": "99"})
    assert too_many.status_code == 400, too_many.text
    started = hub.api("POST", f"/users/{other.name}/server", FORM)
    assert started.status_code in (201, 202), started.text
    hub.wait_ready(other)
    (job,) = hub.jobs_of(other)
    hub.wait_no_job(other, seconds=IDLE_MINUTES * 60 + 90)
    assert job not in hub.cluster.squeue()
    assert f"Culling server {other.name} " in hub.log.read_text(), hub.log.read_text()[-3000:]
    deadline = time.monotonic() + 30  # the hub finishes the stop after the job is gone
    while hub.api("GET", f"/users/{other.name}").json()["servers"] and time.monotonic() < deadline:
        time.sleep(1)
    assert hub.api("GET", f"/users/{other.name}").json()["servers"] == {}
