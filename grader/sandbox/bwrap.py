"""bubblewrap's arguments for a sandboxed kernel: an empty root, then only what it needs.

:mod:`grader.sandbox.isolation` decides *what* a kernel may see (its
:class:`~grader.sandbox.policy.Policy`); this module spells that out as bubblewrap
options. It is an allow-list rather than a list of course folders to hide: whatever
is not named here (another checkout of the course, a backup, other users' homes)
does not exist for the kernel.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from grader.sandbox.policy import Policy

#: What the machine gives every sandboxed kernel, read-only: programs, libraries,
#: configuration (/etc: users, certificates, the dynamic linker's cache) and the
#: kernel's device descriptions (/sys: CPU counts, GPUs). Nothing that holds users'
#: files: /home, /root, /srv, /opt, /var, /mnt and /tmp stay out.
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")

# What every sandboxed kernel gets from bubblewrap (and what detect_level probes):
# no network, its own process tree, IPC and host name, killed with its parent, no
# terminal to inject into.
NAMESPACES = (
    "--unshare-net",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--die-with-parent",
    "--new-session",
)


def is_system(path: str) -> bool:
    """Whether *path* is already put back as (part of) a system folder."""
    return any(path == f or path.startswith(f + "/") for f in SYSTEM_FOLDERS)


def system_arguments() -> list[str]:
    """The system folders put back read-only (a merged-/usr link such as /bin -> usr/bin
    stays a link), and fresh /dev and /proc."""
    args: list[str] = []
    for folder in SYSTEM_FOLDERS:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    return [*args, "--dev", "/dev", "--proc", "/proc"]


def arguments(policy: Policy, workdir: str | None, devices: list[str]) -> list[str]:
    """bubblewrap options for a kernel in *workdir*, with the device files *devices*.

    The notebook's copy (*workdir*'s stand-in, :attr:`Policy.workdir`) is bound
    at the notebook's own path, so the student's code sees the folder it expects.
    Without a *workdir* (the kernel runner) nothing writable is bound at all:
    the process works in its own ``/tmp``.
    """
    args = [*NAMESPACES, *system_arguments()]
    for device in devices:
        args += ["--dev-bind", device, device]
    # Its own small /tmp, /var/tmp and /dev/shm: memory on the machine, so their size is capped.
    for folder, size in (
        ("/tmp", policy.disk_bytes),
        ("/var/tmp", policy.disk_bytes),
        ("/dev/shm", policy.memory_bytes),
    ):
        args += ["--perms", "01777", "--size", str(size), "--tmpfs", folder]
    mounted = {"/", "/tmp", "/var/tmp", "/dev", "/dev/shm", "/proc", *SYSTEM_FOLDERS}
    binds = [
        ("--ro-bind", path, path) for path in dict.fromkeys(policy.readonly) if not is_system(path)
    ]
    if workdir is not None:
        binds += [
            *(("--bind", path, path) for path in dict.fromkeys(policy.writable)),
            ("--bind", policy.workdir or workdir, workdir),
        ]
    for option, source, target in binds:
        # bubblewrap makes missing parents private to root: the kernel's user must pass.
        for parent in reversed(Path(target).parents):
            if str(parent) not in mounted:
                args += ["--perms", "0755", "--dir", str(parent)]
                mounted.add(str(parent))
        args += [option, source, target]
        mounted.add(target)
    home = (policy.home or "/tmp") if workdir is not None else "/tmp"
    return args + ["--setenv", "HOME", home, "--chdir", workdir or "/tmp", "--"]
