"""Option checking of ``bin/gpu-jupyter``: ``--help``, and every refusal made before connecting.

A bad value, a missing token tool or a busy local port is refused with a
sentence before any SSH attempt (the host given does not exist). No cluster needed.
"""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest
from gpu_jupyter_helpers import (
    run_script,
)


def test_help_lists_every_option() -> None:
    result = run_script("--help")
    assert result.returncode == 0
    for option in (
        "--scheduler",
        "--cores",
        "--gpus",
        "--gpu-type",
        "--mem",
        "--time",
        "--module",
        "--conda-env",
        "--venv",
        "--workdir",
        "--local-port",
        "--queue",
        "--account",
        "--reservation",
        "--qos",
        "--constraint",
        "--sched-arg",
        "--lsf-gpu-syntax",
        "--idle-timeout",
        "--attach",
        "--timeout",
        "--dry-run",
    ):
        assert option in result.stdout, option


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpus", "two"], "--gpus must be a whole number"),
        (["--gpus", "-1"], "--gpus must be a whole number"),
        (["--cores", "0"], "--cores must be a whole number >= 1"),
        (["--time", "1:75"], "minutes must be below 60"),
        (["--time", "2h"], "--time must be HH:MM or a number of minutes"),
        (["--mem", "lots"], "--mem must be a size"),
        (["--scheduler", "pbs"], "--scheduler must be 'slurm' or 'lsf'"),
        (["--local-port", "80"], "--local-port must be a number from 1024"),
        (["--timeout", "soon"], "--timeout must be a number of seconds"),
        (["--idle-timeout", "soon"], "--idle-timeout must be a whole number of minutes"),
        (["--queue", "gpu;rm -rf ~"], "characters such a name cannot have"),
        (["--account", "a b"], "--account 'a b' has characters"),
        (["--reservation", "$(id)"], "--reservation '$(id)' has characters"),
        (["--qos", "high`x`"], "--qos 'high`x`' has characters"),
        (["--gpu-type", "a100\nx"], "--gpu-type"),
        (["--constraint", "a100;reboot"], "--constraint 'a100;reboot' has characters"),
        (["--sched-arg", "exclusive"], "must be one option starting with '-'"),
        (["--sched-arg", "--comment=$(id)"], "without quotes, $ or newlines"),
        (["--lsf-gpu-syntax", "old"], "--lsf-gpu-syntax must be 'new' or 'rusage'"),
        (
            ["--scheduler", "lsf", "--lsf-gpu-syntax", "rusage", "--gpu-type", "a100"],
            "--gpu-type needs --lsf-gpu-syntax new",
        ),
        (["--scheduler", "lsf", "--qos", "high"], "--qos exists only for Slurm"),
        (["--gpus", "0", "--gpu-type", "a100"], "--gpu-type needs --gpus 1 or more"),
        (["--attach", "latest"], "--attach needs a job id"),
        (["--frobnicate"], "unknown option"),
        ([], "no login host given"),
    ],
)
def test_bad_values_are_refused_before_connecting(args: list[str], message: str) -> None:
    # The host does not exist: a refusal must come before any SSH attempt.
    host = [] if not args else ["nobody@host.invalid"]
    result = run_script(*args, *host)
    assert result.returncode == 2
    assert message in result.stderr
    assert "connecting" not in result.stderr


def test_missing_token_tools_fail_before_login(tmp_path: Path) -> None:
    """Without python3 (the port keeper, the token) nothing can start: say so before logging in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "ssh"):
        found = shutil.which(tool)
        if found is None:
            pytest.skip(f"no {tool} here")
        (bin_dir / tool).symlink_to(found)
    result = run_script("nobody@host.invalid", env={"PATH": str(bin_dir), "HOME": str(tmp_path)})
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs python3" in lines[0], result.stderr
    assert "install Python 3" in lines[0] and "apt install python3" in lines[0]
    assert "connecting" not in result.stderr


def test_local_port_in_use_is_refused_before_connecting() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_script("--local-port", str(port), "nobody@host.invalid")
    assert result.returncode == 1
    assert f"local port {port} is already in use" in result.stderr
    assert "connecting" not in result.stderr
