"""The course's own server extensions of the instructor and students' modes (jupyter/).

- The instructor's Formgrader shows no exchange buttons (Release, Collect, Release
  Feedback): the course has no nbgrader exchange; jupyter/instructor/course_formgrader.py
  hides those columns and answers their API calls with a sentence instead of an
  ExchangeError traceback.
- A student's Validate whose kernel cannot start retries and then says so in a
  sentence (jupyter/student/course_validate.py), not with a Python traceback.
- The job's warning before its time limit reaches the student's server
  (jupyter/student/course_time_limit.py), for the lab page's notification.

Each runs a Jupyter server with the mode's configuration from this checkout.
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
from pathlib import Path

import pytest

from helpers import ROOT, free_port

requests = pytest.importorskip("requests")
pytestmark = pytest.mark.slow


class Server:
    """A Jupyter server of the instructor mode's configuration in this checkout."""

    def __init__(self, tmp: Path, mode: str = "instructor", root: Path = ROOT, **env: str) -> None:
        self.port, self.token = free_port(), secrets.token_hex(16)
        env = {
            **os.environ,
            "JUPYTER_CONFIG_PATH": f"{ROOT / 'jupyter' / mode}:{ROOT / 'jupyter/common'}",
            "JUPYTER_CONFIG_DIR": str(tmp / "config"),
            "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
            **env,
        }
        self.log = tmp / "server.log"
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
                 f"--ServerApp.port={self.port}", f"--IdentityProvider.token={self.token}"],
                cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, self.log.read_text()
            try:
                if requests.get(self.url("api/status"), timeout=5).status_code == 200:
                    return
            except requests.ConnectionError:
                pass
            time.sleep(0.5)
        raise AssertionError(self.log.read_text())

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def test_the_formgrader_offers_no_exchange(tmp_path: Path) -> None:
    if not (ROOT / "solutions").is_dir():
        pytest.skip("the instructor's repository only")
    lab = Server(tmp_path)
    try:
        page = requests.get(lab.url("formgrader/manage_assignments"), timeout=60)
        assert page.status_code == 200, page.text[-2000:]
        assert 'id="course-no-exchange"' in page.text
        assert "python -m grader collect" in page.text
        assert "td.release-feedback" in page.text and "th:nth-child(11)" in page.text
        submissions = requests.get(lab.url("formgrader/manage_submissions/simt"), timeout=60)
        assert 'id="course-no-exchange"' in submissions.text
        session = requests.Session()
        session.get(lab.url("formgrader/manage_assignments"), timeout=60)
        for action in ("release", "collect", "release_feedback"):
            reply = session.post(
                lab.url(f"formgrader/api/assignment/simt/{action}"),
                headers={"X-XSRFToken": session.cookies.get("_xsrf") or ""},
                timeout=60,
            )
            assert reply.status_code == 409, reply.text[-1000:]
            assert "no nbgrader exchange" in reply.json()["error"]
            assert "Traceback" not in reply.text
    finally:
        lab.stop()


def test_a_validate_whose_kernel_cannot_start_says_so(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "exercises" / "simt").mkdir(parents=True)
    shutil.copy(ROOT / "exercises" / "simt" / "simt.ipynb", work / "exercises" / "simt")
    # The notebook's kernel (python3) dies at once, as one that cannot bind its sockets.
    spec = tmp_path / "share" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(
        json.dumps(
            {
                "argv": [sys.executable, "-c", "import sys; sys.exit(3)", "{connection_file}"],
                "display_name": "Python 3 (dies)",
                "language": "python",
            }
        )
    )
    server = Server(
        tmp_path, "student", root=work, JUPYTER_PATH=f"{tmp_path / 'share'}:{ROOT / 'jupyter/data'}"
    )
    try:
        session = requests.Session()
        session.get(server.url("api/status"), timeout=30)
        reply = session.post(
            server.url("assignments/validate"),
            data={"path": "exercises/simt/simt.ipynb"},
            headers={"X-XSRFToken": session.cookies.get("_xsrf") or ""},
            timeout=300,
        )
        assert reply.status_code == 200, reply.text[-2000:]
        result = reply.json()
        assert result["success"] is False
        assert "could not start the Python kernel" in result["value"], result["value"]
        assert "Traceback" not in result["value"]
        assert server.log.read_text().count("the kernel did not start (try") == 3
    finally:
        server.stop()


def test_students_kernels_use_unix_sockets_in_their_runtime_folder(tmp_path: Path) -> None:
    """No TCP ports: kernels of students starting at once on one node never collide."""
    # A deep runtime folder (as in a long home path): the sockets' paths stay short.
    runtime = tmp_path / ("deep-" * 12) / "runtime"
    server = Server(
        tmp_path,
        "student",
        root=tmp_path,
        JUPYTER_PATH=str(ROOT / "jupyter/data"),
        JUPYTER_RUNTIME_DIR=str(runtime),
    )
    try:
        session = requests.Session()
        session.get(server.url("api/status"), timeout=30)
        kernel = session.post(
            server.url("api/kernels"),
            json={"name": "python3"},
            headers={"X-XSRFToken": session.cookies.get("_xsrf") or ""},
            timeout=60,
        )
        assert kernel.status_code == 201, kernel.text
        connection = json.loads((runtime / f"kernel-{kernel.json()['id']}.json").read_text())
        assert connection["transport"] == "ipc"
        assert len(connection["ip"]) < 100 and "/kernel-" in connection["ip"]
        assert (Path(connection["ip"]).parent.stat().st_mode & 0o077) == 0  # private
        # No batch job (./course.sh lab): no time limit, and the lab page asks no more.
        limit = session.get(server.url("gpu-course/time-limit"), timeout=30).json()
        assert limit == {"warned": False, "seconds_left": None, "poll_seconds": None}
    finally:
        server.stop()
    # Validate's kernels too (nbgrader reads its own configuration).
    nbgrader = json.loads((ROOT / "jupyter" / "student" / "nbgrader_config.json").read_text())
    assert nbgrader["KernelManager"]["transport"] == "ipc"


def test_the_time_limit_warning_comes_with_the_schedulers_signal(tmp_path: Path) -> None:
    """The job's warning signal (SIGUSR1) reaches the server: the lab page's route says
    so, with the minutes left; asking it all the time is no activity (idle limit)."""
    ends_at = time.time() + 3600
    server = Server(
        tmp_path,
        "student",
        root=tmp_path,
        COURSE_WARN_SECONDS="600",
        COURSE_JOB_ENDS_AT=str(ends_at),
    )
    try:
        before = requests.get(server.url("gpu-course/time-limit"), timeout=30).json()
        assert before["warned"] is False and 3590 <= before["seconds_left"] <= 3600, before
        active = requests.get(server.url("api/status"), timeout=30).json()["last_activity"]
        server.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 20
        while not (state := requests.get(server.url("gpu-course/time-limit"), timeout=30).json())[
            "warned"
        ]:
            assert time.monotonic() < deadline, state
            time.sleep(0.3)
        assert 590 <= state["seconds_left"] <= 600, state  # the signal's time, not the limit's
        assert server.proc.poll() is None  # Jupyter's own SIGUSR1 answer would only print
        assert requests.get(server.url("api/status"), timeout=30).json()["last_activity"] == active
    finally:
        server.stop()
    assert "course_time_limit: warned 600.0 s before the limit" in server.log.read_text()


def test_without_a_signal_the_warning_comes_from_the_jobs_end(tmp_path: Path) -> None:
    server = Server(
        tmp_path,
        "student",
        root=tmp_path,
        COURSE_WARN_SECONDS="600",
        COURSE_JOB_ENDS_AT=str(time.time() + 300),
    )
    try:
        state = requests.get(server.url("gpu-course/time-limit"), timeout=30).json()
        assert state["warned"] is True and 290 <= state["seconds_left"] <= 300, state
    finally:
        server.stop()
