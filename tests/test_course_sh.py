"""The README's first command, `./course.sh lab`, opens the course in a JupyterLab that needs its token."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


@pytest.mark.slow
def test_lab_serves_the_course_only_with_its_token(tmp_path):
    if not (ROOT / ".venv" / ".course-install-stamp").exists():
        pytest.skip("runs where ./course.sh has installed .venv (as `./course.sh test` does)")
    port = _free_port()
    log = tmp_path / "lab.log"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [str(ROOT / "course.sh"), "lab", "--no-browser", f"--ServerApp.port={port}"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90
        token = None
        while time.monotonic() < deadline and token is None:
            assert proc.poll() is None, f"JupyterLab exited early:\n{log.read_text()}"
            match = re.search(rf"http://(?:localhost|127\.0\.0\.1):{port}/lab/tree/course/README\.md\?token=([0-9a-f]+)", log.read_text())
            token = match.group(1) if match else None
            time.sleep(0.5)
        assert token, f"no URL with a token was printed:\n{log.read_text()}"
        assert len(token) >= 32
        base = f"http://127.0.0.1:{port}/api/contents/course"
        assert _status(base) == 403
        assert _status(f"{base}?token={'0' * len(token)}") == 403
        assert _status(f"{base}?token={token}") == 200
        # listens on loopback only: not reachable through another local address
        with socket.socket() as s:
            addrs = {a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)}
            external = sorted(a for a in addrs if not a.startswith("127."))
            if external:
                assert s.connect_ex((external[0], port)) != 0
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
