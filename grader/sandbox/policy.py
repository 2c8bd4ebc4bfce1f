"""What one sandboxed kernel may see and use: the isolation levels and the :class:`Policy`.

A record with no behaviour of its own, written as JSON next to the kernelspec by
the grader and read by the kernel (:mod:`grader.sandbox.kernel`); the modules
that act on it (:mod:`grader.sandbox.isolation`, :mod:`grader.sandbox.bwrap`,
:mod:`grader.sandbox.box`, ...) import it from here, so none of them needs
another for its type.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

LEVEL_MEANING = {
    "bwrap+uid": "own user id, no network, own process tree, only the system folders, the "
    "Python environment and the notebook's own folder visible",
    "bwrap": "no network, own process tree, only the system folders, the Python environment "
    "and the notebook's own folder visible (same user id)",
    "uid": "own user id: course files and gradebook not writable, gradebook copies unreadable, "
    "its processes killed after each notebook; CANNOT hide world-readable files "
    "(e.g. solutions/) or cut the network (no user namespaces here)",
    "limits": "resource limits only: CANNOT protect the gradebook or course files "
    "(run as root or allow user namespaces)",
}


def own_user(level: str) -> bool:
    """Whether notebooks at *level* run under a user id of their own (one per worker)."""
    return level in ("bwrap+uid", "uid")


def in_bubblewrap(level: str) -> bool:
    """Whether notebooks at *level* run inside bubblewrap (their own file system and /tmp)."""
    return level.startswith("bwrap")


@dataclass
class Policy:
    """What one sandboxed kernel may see and use (written as JSON next to the kernelspec)."""

    level: str
    uid: int | None = None
    memory_bytes: int = 4 << 30
    cpu_seconds: int = 600
    processes: int = 512
    #: What the notebook may write in its folders, its HOME and its /tmp, together.
    disk_bytes: int = 1 << 30
    #: Threads each numerical library may start (0: its own default, all cores).
    threads: int = 0
    #: Whether the kernel sees the GPUs (False for assignments whose tests need none).
    gpu: bool = True
    #: The notebook's own HOME, writable by it alone: libraries keep caches there
    #: (CuPy's compiled kernels, Keras' settings). Empty: /tmp inside bubblewrap,
    #: the grader's HOME otherwise.
    home: str = ""
    #: The copy of the notebook's folder the kernel works in (bound at the
    #: notebook's own path inside bubblewrap). Empty: the notebook's folder itself.
    workdir: str = ""
    #: Its TMPDIR where there is no bubblewrap (inside, /tmp is its own). Empty: unchanged.
    tmpdir: str = ""
    #: The notebook's memory cgroup (:mod:`grader.sandbox.cgroups`), empty where there is none.
    cgroup: str = ""
    #: The folder of the kernel's Unix sockets (one of :attr:`writable`); empty: the runtime's.
    sockets: str = ""
    readonly: list[str] = field(default_factory=list)
    writable: list[str] = field(default_factory=list)

    def save(self, path: Path) -> None:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(descriptor, "w") as f:
            json.dump(asdict(self), f, indent=1)

    @classmethod
    def load(cls, path: str | Path) -> Policy:
        return cls(**json.loads(Path(path).read_text()))
