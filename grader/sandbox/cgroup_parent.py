"""Where the notebooks' memory cgroups are made under cgroups v2, and making that possible.

Under cgroups v2 a cgroup that holds processes cannot give its children a
controller (the "no internal processes" rule; the machine's root cgroup is
exempt). On a GPU host the grader runs in the cgroup its job or container
got, so writing ``+memory`` into that cgroup's ``cgroup.subtree_control``
fails with EBUSY while the grader itself is inside. So, once at the start of
a grading run, the grader moves its own process, and nothing else, into a
leaf ``<its cgroup>/grader-main``; its cgroup then holds no process, takes
``+memory``, and each notebook's cgroup is made beside the leaf. It does so
only where that is its to do:

* its cgroup is given the controller (listed in ``cgroup.controllers``) and
  the grader may write it;
* no other process is in it: the shell that started it, or another job's
  processes, are not the grader's to move (and with them still inside, the
  controller could not be enabled anyway);
* where its cgroup belongs to a systemd unit, the unit is delegated
  (``Delegate=yes``, which systemd marks with the ``trusted.delegate``
  attribute), or the instructor says so with ``GRADER_CGROUP=delegated``
  (systemd before version 251 sets no mark): systemd owns its other units'
  cgroups.

Whatever the answer, the :class:`Placement` says in one line which path was
taken, for ``python -m grader sandbox``.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

#: The leaf the grader moves itself into; the notebooks' cgroups are its siblings.
LEAF = "grader-main"
#: Where cgroups v2 is mounted: alone, or beside v1 hierarchies ("hybrid").
V2_MOUNTS = ("/sys/fs/cgroup", "/sys/fs/cgroup/unified")

SITE = "site-delegated"
LEAF_MADE = "delegated leaf made"
FALLBACK = "fallback"


@dataclass(frozen=True)
class Placement:
    """The cgroup whose children the notebooks' cgroups are (``None``: none), and why."""

    parent: Path | None
    way: str
    reason: str

    def line(self) -> str:
        return f"{self.way}: {self.reason}"


def v2_mount() -> Path | None:
    """Where this machine mounts cgroups v2 (its root has ``cgroup.controllers``), if anywhere."""
    for mount in V2_MOUNTS:
        if (Path(mount) / "cgroup.controllers").is_file():
            return Path(mount)
    return None


def _words(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []


def _enabled(cgroup: Path, controller: str) -> bool:
    return controller in _words(cgroup / "cgroup.subtree_control")


def _enable(cgroup: Path, controller: str) -> None:
    """Give *cgroup*'s children *controller*; EBUSY while processes are inside (not the root)."""
    (cgroup / "cgroup.subtree_control").write_text(f"+{controller}")


def _systemd_unit(cgroup: Path, mount: Path) -> Path | None:
    """The systemd service or scope *cgroup* belongs to (itself or an ancestor), if any."""
    for path in (cgroup, *cgroup.parents):
        if path == mount or not path.is_relative_to(mount):
            return None
        if path.name.endswith((".service", ".scope")):
            return path
    return None


def _delegated(unit: Path) -> bool:
    """Whether systemd delegated *unit*'s cgroup (``Delegate=yes``), or the instructor says so."""
    if os.environ.get("GRADER_CGROUP") == "delegated":
        return True
    for name in ("trusted.delegate", "user.delegate"):
        try:
            if os.getxattr(unit, name) == b"1":
                return True
        except OSError:
            continue
    return False


def _fallback(reason: str) -> Placement:
    return Placement(None, FALLBACK, reason)


def place(mount: Path, own: str, controller: str = "memory") -> Placement:
    """Make the cgroup ``mount/own`` (this process's) able to give children *controller*.

    Moves this process into ``own/grader-main`` where that is needed and
    allowed (see the module docstring); called once per process, so a process
    started after the move (a grading worker) finds itself in the leaf and
    answers its parent.
    """
    cgroup = mount / own.strip("/")
    if cgroup.name == LEAF and _enabled(cgroup.parent, controller):
        return Placement(
            cgroup.parent,
            LEAF_MADE,
            f"the grader runs in {cgroup}; each notebook's cgroup is made beside it",
        )
    if controller not in _words(cgroup / "cgroup.controllers"):
        return _fallback(
            f"{cgroup} is not given the {controller} controller (not delegated to the grader, "
            "or the controller is in a cgroups v1 hierarchy)"
        )
    files = (cgroup, cgroup / "cgroup.subtree_control", cgroup / "cgroup.procs")
    if not all(os.access(path, os.W_OK) for path in files):
        return _fallback(f"the grader may not write {cgroup}")
    if _enabled(cgroup, controller):
        return Placement(cgroup, SITE, f"{cgroup} gives its children the {controller} controller")
    try:
        _enable(cgroup, controller)
        return Placement(
            cgroup, SITE, f"{cgroup} (no process inside, or the root) takes +{controller}"
        )
    except OSError as error:
        if error.errno != errno.EBUSY:
            return _fallback(f"+{controller} refused in {cgroup}: {error.strerror}")
    return _move_into_leaf(cgroup, mount, controller)


def _move_into_leaf(cgroup: Path, mount: Path, controller: str) -> Placement:
    """Move this process alone into ``cgroup/grader-main``, then enable *controller* in *cgroup*."""
    pid = str(os.getpid())
    others = [p for p in _words(cgroup / "cgroup.procs") if p != pid]
    if others:
        return _fallback(
            f"{len(others)} other process(es) share the grader's cgroup {cgroup}, and it moves "
            "only itself: start it in a cgroup of its own "
            "(systemd-run --scope -p Delegate=yes python -m grader ...)"
        )
    unit = _systemd_unit(cgroup, mount)
    if unit is not None and not _delegated(unit):
        return _fallback(
            f"{unit.name} is a systemd unit not delegated to the grader: give it Delegate=yes "
            "(or set GRADER_CGROUP=delegated where systemd marks no delegation)"
        )
    leaf = cgroup / LEAF
    try:
        leaf.mkdir(exist_ok=True)
        (leaf / "cgroup.procs").write_text(pid)
    except OSError as error:
        _remove(leaf)
        return _fallback(f"the grader could not move itself into {leaf}: {error.strerror}")
    try:
        _enable(cgroup, controller)
    except OSError as error:
        try:
            (cgroup / "cgroup.procs").write_text(pid)  # back where it was
            _remove(leaf)
        except OSError:
            pass
        return _fallback(f"+{controller} refused in {cgroup} even so: {error.strerror}")
    return Placement(
        cgroup,
        LEAF_MADE,
        f"the grader moved itself into {leaf}, so that {cgroup} gives each notebook a cgroup",
    )


def _remove(leaf: Path) -> None:
    try:
        leaf.rmdir()
    except OSError:
        pass
