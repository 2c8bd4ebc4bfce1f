"""The unix users of the one-machine cluster (tests/slurm/local_cluster.py): made for a run,
removed after it, and the way a test starts a program as one of them.

They log in with keys only (no password), and their programs get the signals a
user's program gets at a terminal, so that nothing in the tests runs as root the
way a student never would.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path


def _signals_as_at_a_terminal() -> None:
    """Ctrl-C, Ctrl-\\ and hang-up reach the program, as they do when a user starts it.

    A test run started in the background (``nohup``, ``cmd &`` in a script)
    hands its children these signals ignored, and a shell script cannot trap a
    signal that was ignored when it started: the launch script's Ctrl-C and
    hang-up handling would not run, and its tests would fail for that alone.
    """
    for number in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)


def _kill_processes_of(uid: int) -> None:
    """Stop what a test user left running (tunnels, JupyterLab), by PID."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    os.kill(int(entry.name), 9)
            except OSError:
                pass


@dataclass
class User:
    """A unix user made for the test run."""

    name: str
    home: Path
    uid: int = 0
    gid: int = 0

    def env(self, **extra: str) -> dict[str, str]:
        """A clean login-like environment for this user."""
        return {
            "HOME": str(self.home),
            "USER": self.name,
            "LOGNAME": self.name,
            "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            "LANG": "C.UTF-8",
            "TMPDIR": "/tmp",
            **extra,
        }

    def popen_args(self) -> dict:
        return {
            "user": self.uid,
            "group": self.gid,
            "extra_groups": [],
            "cwd": str(self.home),
            "preexec_fn": _signals_as_at_a_terminal,
        }


def add_user(user: User) -> None:
    """Create *user* (keys only, no password) with a home readable by the others and ~/.ssh."""
    subprocess.run(
        [
            "useradd",
            "-M",
            "-d",
            str(user.home),
            "-s",
            "/bin/bash",
            "-p",
            "*",
            "-U",
            user.name,
        ],
        check=True,
    )
    entry = pwd.getpwnam(user.name)
    user.uid, user.gid = entry.pw_uid, entry.pw_gid
    (user.home / ".ssh").mkdir(parents=True)
    user.home.chmod(0o755)


def remove_user(user: User) -> None:
    """Stop what *user* left running and delete the account (nothing if it was never made)."""
    if user.uid:
        _kill_processes_of(user.uid)
        subprocess.run(["userdel", "-f", user.name], capture_output=True, check=False)
