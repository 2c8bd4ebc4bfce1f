"""One notebook's sandbox on disk, made before its kernel starts and taken apart after it.

Both ways of grading come through here: ``python -m grader autograde`` (a
policy file with the run's limits and the worker's user id, and a box in the
student's course copy) and plain ``nbgrader autograde`` (no policy file: this
machine's strongest level with the default limits, a user id claimed for the
notebook, a box in a temporary folder), so plain nbgrader never runs student
code with the instructor's rights.

A box holds, under a folder only root may list:

``runtime/``  owned by the sandbox user: the kernel's connection file,
    ``home/`` (its HOME), ``work/`` (a copy of the notebook's folder, where
    the kernel runs) and ``tmp/`` (its TMPDIR where there is no
    bubblewrap). All of it is removed when the notebook is done, so nothing a
    student wrote is kept or copied anywhere.
a folder of its own in ``/tmp`` (:func:`socket_folder`), for the kernel's sockets;
``policy.json`` and ``jupyter/kernels/grader-sandbox/``: what
    :mod:`grader.sandbox.kernel` reads to start the kernel.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from grader.sandbox import cgroups
from grader.sandbox import environment as sandbox_environment
from grader.sandbox import isolation as sandbox
from grader.sandbox.policy import Policy
from grader.sandbox.processes import claim_uids, kill_user_processes
from grader.sandbox.safe_files import copy_tree, disk_usage, remove_owned

KERNEL_NAME = "grader-sandbox"


@dataclass
class Box:
    """A notebook's sandbox: where its kernelspec is, what to tell the kernel manager."""

    folder: Path
    policy: Policy
    cgroup: cgroups.MemoryCgroup | None = None
    #: What could not be copied into the kernel's folder (links, huge files): flags.
    left_out: list[str] = field(default_factory=list)
    #: CPU seconds the notebook's processes used, read by :meth:`close` (None: not known).
    cpu_seconds: float | None = None

    @property
    def runtime(self) -> Path:
        return self.folder / "runtime"

    @property
    def sockets(self) -> Path:
        """Where the kernel's Unix sockets are (:func:`socket_folder`)."""
        return Path(self.policy.sockets) if self.policy.sockets else self.runtime

    @property
    def kernel_dirs(self) -> list[str]:
        """Where the kernel manager finds the ``grader-sandbox`` kernelspec."""
        return [str(self.folder / "jupyter" / "kernels")]

    def runner_command(self) -> list[str]:
        """The command that starts this notebook's kernel runner in its sandbox."""
        return [sys.executable, "-m", "grader.sandbox.kernel", "--runner", str(self.policy_file)]

    @property
    def policy_file(self) -> Path:
        return self.folder / "policy.json"

    def close(self) -> list[tuple[str, str]]:
        """End the notebook's processes, remove what it wrote; which limits it went over, as
        ``(kind, reason)`` pairs, *kind* ``memory`` or ``disk``.

        The files are counted once more here, when the notebook has ended and
        before they are removed: the watcher beside the kernel counts them every
        two seconds, and on a busy machine a notebook that writes its files and
        ends between two counts would otherwise never be seen over the limit.
        """
        reasons = []
        if self.policy.uid is not None:
            kill_user_processes(self.policy.uid)
        left = disk_usage([str(self.runtime)])
        if left > self.policy.disk_bytes:
            reasons.append(
                (
                    "disk",
                    f"the notebook used {left / 2**30:.1f} GiB of files, over the "
                    f"{self.policy.disk_bytes / 2**30:.1f} GiB limit (counted when it ended)",
                )
            )
        if self.cgroup is not None:
            if self.cgroup.oom_kills():
                limit = self.policy.memory_bytes / 2**30
                reasons.append(
                    (
                        "memory",
                        f"the notebook's memory, with shared memory and files in memory, went "
                        f"over the {limit:.1f} GiB limit; its kernel was stopped",
                    )
                )
            self.cpu_seconds = self.cgroup.cpu_seconds()
            self.cgroup.remove()
        if self.policy.uid is not None and not sandbox.in_bubblewrap(self.policy.level):
            remove_owned(self.policy.uid)  # without bubblewrap, /tmp is the machine's
        shutil.rmtree(self.runtime, ignore_errors=True)
        if self.policy.sockets:
            shutil.rmtree(self.policy.sockets, ignore_errors=True)
        return reasons


def socket_folder(uid: int | None) -> Path:
    """A folder with a short path for the kernel's sockets, writable by the sandbox user alone.

    A Unix socket's path holds at most 107 bytes, and a course in a deep folder
    (``/home/.../course/grading/<assignment>/<student>/box/runtime``) passes
    that; the kernel then cannot start (``ZMQError: File name too long``).
    """
    folder = Path(tempfile.mkdtemp(prefix="grader-ipc-", dir="/tmp"))
    if uid is not None:
        os.chown(folder, uid, uid)
    return folder


def open_box(
    limits: Policy,
    notebook_dir: Path,
    folder: Path,
    private: list[Path],
    kernel_cache: Path | None = None,
) -> Box:
    """Make the box for one notebook in *folder* (made or emptied here), with *limits*.

    *private* folders (the course, the grading folder) are never put back into
    the sandbox, even when they are on ``PYTHONPATH``. A *kernel_cache* (what
    CuPy and JAX compiled for the solution, :mod:`grader.integration.cell_budgets`) is
    copied into the kernel's HOME, where they look for it.
    """
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o711)  # the sandbox user passes through to runtime/, lists nothing
    runtime = folder / "runtime"
    shutil.rmtree(runtime, ignore_errors=True)
    runtime.mkdir(mode=0o700)
    uid = limits.uid
    left_out = copy_tree(notebook_dir, runtime / "work", owner=uid)
    left_out += _undo_followed_links(notebook_dir, runtime / "work")
    for name in ("home", "tmp"):
        (runtime / name).mkdir(mode=0o700)
    caches = runtime / "home" / sandbox_environment.COMPILED_KERNELS
    caches.parent.mkdir(mode=0o700)
    if kernel_cache is not None:
        copy_tree(kernel_cache, caches, owner=uid)
    if uid is not None:
        for path in (runtime, runtime / "home", runtime / "tmp", caches.parent):
            os.chown(path, uid, uid)
    owner = uid if uid is not None else os.getpid()
    cgroup = cgroups.create(f"grader-{owner}", limits.memory_bytes)
    sockets = socket_folder(uid)
    policy = dataclasses.replace(
        limits,
        home=str(runtime / "home"),
        workdir=str(runtime / "work"),
        tmpdir=str(runtime / "tmp"),
        cgroup=str(cgroup.path) if cgroup else "",
        readonly=sandbox.course_environment_paths(private=[*private, folder]),
        writable=[str(runtime), str(sockets)],
        sockets=str(sockets),
    )
    policy.save(folder / "policy.json")
    sandbox.install_kernelspec(folder / "jupyter", folder / "policy.json")
    return Box(folder, policy, cgroup, left_out)


class LinkedHandIn(RuntimeError):
    """A hand-in whose notebook or folder is a symbolic link: nbgrader read it as root."""


def _undo_followed_links(notebook_dir: Path, work: Path) -> list[str]:
    """Take out of *notebook_dir* and the kernel's copy *work* what came from a link in the hand-in.

    Plain ``nbgrader autograde`` copies the other files of
    ``submitted/<student>/<assignment>/`` into the folder it grades with
    ``shutil.copy``, which follows links: run as root, a link to a file only
    root may read arrives as a copy of that file, which the student's code
    would print into its feedback. A notebook, or the folder, that is a link
    has already been read through it (the solutions' notebook would score
    full marks), so that student is not graded: :class:`LinkedHandIn`.
    ``python -m grader autograde`` hands nbgrader a copy without links, so
    this finds nothing there. Only nbgrader's default folder names
    (``autograded``, ``submitted``) are known.
    """
    if len(notebook_dir.parts) < 4 or notebook_dir.parts[-3] != "autograded":
        return []
    student, assignment = notebook_dir.parts[-2:]
    submitted = notebook_dir.parents[2] / "submitted"
    hand_in = submitted / student / assignment
    for path in (submitted / student, hand_in):
        if path.is_symlink():
            raise LinkedHandIn(f"{path.relative_to(submitted)} is a symbolic link: not graded")
    linked = [
        (Path(folder) / name).relative_to(hand_in)
        for folder, folders, files in os.walk(hand_in)
        for name in [*folders, *files]
        if (Path(folder) / name).is_symlink()
    ]
    notebooks = [str(path) for path in linked if path.suffix == ".ipynb"]
    if notebooks:
        raise LinkedHandIn(f"{', '.join(notebooks)} in the hand-in is a symbolic link: not graded")
    for relative in linked:
        for copy in (notebook_dir / relative, work / relative):
            if copy.is_file() and not copy.is_symlink():
                copy.unlink()
    return [f"{relative}: a symbolic link in the hand-in, not followed" for relative in linked]


def close_left_behind(folder: Path) -> list[tuple[str, str]]:
    """Take apart the box in *folder* if its grading process was killed before it could."""
    if not (folder / "runtime").exists() or not (folder / "policy.json").is_file():
        return []
    policy = Policy.load(folder / "policy.json")
    cgroup = cgroups.MemoryCgroup(Path(policy.cgroup)) if policy.cgroup else None
    return Box(folder, policy, cgroup).close()


def plain_setting(stack: contextlib.ExitStack) -> tuple[Policy, Path]:
    """Limits and a box folder for plain ``nbgrader autograde``, released when *stack* closes.

    This machine's strongest level with the default limits, a user id claimed
    for the notebook, and a folder under ``/var/tmp`` (which a sandbox user may
    pass through) that is removed afterwards.
    """
    level = sandbox.detect_level()
    uid = stack.enter_context(claim_uids(1))[0] if sandbox.own_user(level) else None
    temp = "/var/tmp" if os.path.isdir("/var/tmp") else None
    folder = Path(tempfile.mkdtemp(prefix="grader-box-", dir=temp))
    stack.callback(shutil.rmtree, folder, ignore_errors=True)
    return Policy(level=level, uid=uid), folder
