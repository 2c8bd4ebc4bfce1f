"""The README's first command, `./course.sh lab`, opens the course in a JupyterLab that needs its
token."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import ROOT, free_port, http_status, needs_course_venv


@pytest.mark.slow
@needs_course_venv
def test_lab_serves_the_course_only_with_its_token(tmp_path):
    port = free_port()
    log = tmp_path / "lab.log"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [str(ROOT / "course.sh"), "lab", "--no-browser", f"--ServerApp.port={port}"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 90
        token = None
        while time.monotonic() < deadline and token is None:
            assert proc.poll() is None, f"JupyterLab exited early:\n{log.read_text()}"
            match = re.search(
                rf"http://(?:localhost|127\.0\.0\.1):{port}/lab/tree/course/README\.md\?token=([0-9a-f]+)",
                log.read_text(),
            )
            token = match.group(1) if match else None
            time.sleep(0.5)
        assert token, f"no URL with a token was printed:\n{log.read_text()}"
        assert len(token) >= 32
        base = f"http://127.0.0.1:{port}/api/contents/course"
        assert http_status(base) == 403
        assert http_status(f"{base}?token={'0' * len(token)}") == 403
        assert http_status(f"{base}?token={token}") == 200
        # listens on loopback only: not reachable through another local address
        with socket.socket() as s:
            addrs = {
                a[4][0] for a in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
            }
            external = sorted(a for a in addrs if not a.startswith("127."))
            if external:
                assert s.connect_ex((external[0], port)) != 0
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def _fake_machine(
    tmp_path: Path, system: str = "Linux", machine: str = "x86_64", python: str | None = None
) -> dict:
    """Environment in which course.sh sees another OS/CPU (a fake `uname`) and, optionally,
    Python."""
    bin_dir = tmp_path / "fake-bin"
    bin_dir.mkdir(exist_ok=True)
    uname = bin_dir / "uname"
    uname.write_text(f'#!/bin/sh\ncase "$1" in -m) echo {machine};; *) echo {system};; esac\n')
    uname.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_EXTRAS", "COURSE_TARGET")}
    env["PATH"] = f"{bin_dir}:{env['PATH']}"
    if python:  # a Python that reports another version, for the wheel checks
        fake = bin_dir / "python-fake"
        fake.write_text(
            f"#!{sys.executable}\nimport sys\nsys.version_info = {python!r}\n"
            "code = sys.argv[2]\nsys.argv = sys.argv[2:]\nexec(code)\n"
        )
        fake.chmod(0o755)
        env["PYTHON"] = str(fake)
    return env


def _course_sh_copy(tmp_path: Path) -> Path:
    """course.sh with the files its install reads, but no .venv: as in a fresh clone."""
    clone = tmp_path / "clone"
    (clone / "requirements").mkdir(parents=True)
    for rel in ("course.sh", "pyproject.toml", "requirements/constraints.txt"):
        shutil.copy2(ROOT / rel, clone / rel)
    return clone / "course.sh"


def _run(cmd: list[str], env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=60)


def test_install_gpu_target_picks_cuda_builds_without_a_gpu(tmp_path):
    """A login node has no GPU; `install --gpu` still installs what its GPU nodes need."""
    course = _course_sh_copy(tmp_path)
    env = _fake_machine(tmp_path)
    gpu = _run([str(course), "install", "--gpu", "--dry-run"], env)
    assert gpu.returncode == 0, gpu.stderr
    assert "[test,cuda,tf-gpu,mpi]" in gpu.stdout
    assert (
        "[test,cuda,tf-gpu,mpi]"
        in _run([str(course), "install", "--dry-run"], {**env, "COURSE_TARGET": "gpu"}).stdout
    )
    cpu = _run([str(course), "install", "--cpu", "--dry-run"], env)
    assert "cuda" not in cpu.stdout and "tf-cpu" in cpu.stdout
    bad = _run([str(course), "install", "--tpu"], env)
    assert bad.returncode == 1 and "unknown option '--tpu'" in bad.stderr
    assert not (course.parent / ".venv").exists()  # a dry run installs nothing


def test_tf_extra_brings_its_cuda_libraries():
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(r.startswith("tensorflow[and-cuda]") for r in extras["tf-gpu"])


@pytest.mark.parametrize(
    "system, machine, python, expected",
    [
        ("Linux", "x86_64", (3, 14, 0, "final", 0), "no build for Python 3.14"),
        ("Darwin", "x86_64", None, "no build for Intel Macs"),
    ],
)
def test_install_without_tensorflow_where_it_has_no_wheels(
    tmp_path, system, machine, python, expected
):
    course = _course_sh_copy(tmp_path)
    env = _fake_machine(tmp_path, system, machine, python)
    proc = _run([str(course), "install", "--cpu", "--dry-run"], env)
    assert proc.returncode == 0, proc.stderr
    assert "[test,mpi]" in proc.stdout and expected in proc.stderr and "chapter 5" in proc.stderr
    gpu = _run([str(course), "install", "--gpu", "--dry-run"], env)
    if system == "Darwin":  # no CUDA on macOS: refused, with the alternative
        assert gpu.returncode == 1 and "Linux only" in gpu.stderr and "--cpu" in gpu.stderr
    else:
        assert "[test,cuda,mpi]" in gpu.stdout


def test_native_windows_is_sent_to_wsl(tmp_path):
    proc = _run(
        [str(ROOT / "course.sh"), "lab"], _fake_machine(tmp_path, "MINGW64_NT-10.0", "x86_64")
    )
    assert proc.returncode == 1 and "WSL" in proc.stderr


def _labextension_plugins() -> set[str]:
    static = (
        ROOT / ".venv" / "share" / "jupyter" / "labextensions" / "@jupyter" / "nbgrader" / "static"
    )
    return {
        m
        for f in static.glob("*.js")
        for m in re.findall(r'"(@jupyter/nbgrader:[a-z-]+)"', f.read_text())
    }


def _mode(mode: str) -> tuple[dict, dict]:
    """(server extensions switched, lab plugins disabled) of one shipped mode; checks they exist."""
    server = json.loads((ROOT / "jupyter" / mode / "jupyter_server_config.json").read_text())
    page = json.loads((ROOT / "jupyter" / mode / "labconfig" / "page_config.json").read_text())
    extensions, disabled = server["ServerApp"]["jpserver_extensions"], page["disabledExtensions"]
    for module in extensions:
        assert importlib.util.find_spec(module) is not None, module
    plugins = _labextension_plugins()
    if plugins:  # the installed nbgrader labextension knows every plugin we switch
        assert set(disabled) <= plugins
    return extensions, disabled


def test_student_mode_settings_hide_instructor_tools_and_keep_validate():
    extensions, disabled = _mode("student")
    assert not extensions["nbgrader.server_extensions.formgrader"]
    assert extensions["nbgrader.server_extensions.validate_assignment"]
    assert (
        disabled["@jupyter/nbgrader:formgrader"] and disabled["@jupyter/nbgrader:create-assignment"]
    )
    assert "@jupyter/nbgrader:validate-assignment" not in disabled
    overrides = json.loads(
        (ROOT / "jupyter" / "common" / "labconfig" / "default_setting_overrides.json").read_text()
    )
    assert (
        overrides["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]["markdown"]
        == "Markdown Preview"
    )
    assert overrides["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"


@pytest.mark.skipif(
    not (ROOT / "jupyter" / "instructor").exists(),
    reason="the student edition has no instructor mode",
)
def test_instructor_mode_settings_turn_the_formgrader_on():
    extensions, disabled = _mode("instructor")
    assert (
        extensions["nbgrader.server_extensions.formgrader"]
        and not disabled["@jupyter/nbgrader:formgrader"]
    )
    # nbgrader's exchange is not used by this course: its lists would only show errors
    assert (
        disabled["@jupyter/nbgrader:assignment-list"] and disabled["@jupyter/nbgrader:course-list"]
    )
