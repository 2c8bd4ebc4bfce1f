"""Files a student's code may have touched, handled by a grader that runs as root.

Whatever a student's kernel leaves in a folder it could write (a symbolic link
to ``gradebook.db`` or ``/``, a notebook replaced by a link, a 900 MB file)
is an instruction to whoever copies or writes there next. So the grader never
follows a link out of such a folder, copies only regular files and folders of
a bounded size, and says what it left behind: the caller turns each of those
lines into a flag for the reviewer.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: A file bigger than this is not part of an assignment (notebooks, small data).
MAX_FILE_BYTES = 64 << 20
#: Nor is a folder whose files add up to more.
MAX_TOTAL_BYTES = 256 << 20
#: Folders of the machine every user may write, where a sandbox user's files may stay behind.
SHARED_TEMP = ("/tmp", "/var/tmp", "/dev/shm")


def size_text(size: float) -> str:
    """*size* bytes for a reader: ``600 KB``, ``2 MB``, ``1.5 GB`` (powers of 1024)."""
    if size < 1024:
        return f"{int(size)} bytes"
    for unit in ("KB", "MB"):
        size /= 1024
        if size < 1024:
            return f"{size:.4g} {unit}"
    return f"{size / 1024:.4g} GB"


@dataclass
class Allowance:
    """Bytes that several copies may still write together (a class's graded folders).

    Each copy is bounded by itself; a class of 200 whose every graded folder
    reaches its bound would still fill the disk. *limit* names the bound in
    the line a file left out gets.
    """

    bytes_left: int
    limit: str

    @classmethod
    def beside(cls, folders: Iterable[Path], total: int, limit: str) -> Allowance:
        """What is left of *total* once the files already in *folders* are counted."""
        return cls(total - disk_usage([str(f) for f in folders]), limit)


def copy_tree(
    source: Path,
    target: Path,
    *,
    max_file: int = MAX_FILE_BYTES,
    max_total: int = MAX_TOTAL_BYTES,
    owner: int | None = None,
    allowance: Allowance | None = None,
) -> list[str]:
    """Copy the regular files and folders of *source* into a new *target*; what was left out.

    Links, devices, sockets and pipes are never followed or copied; nor is a
    file over *max_file*, nor anything past *max_total* in all, nor past what
    is left of a shared *allowance* (which the copies use up). Every file is
    opened with ``O_NOFOLLOW`` below a folder that was itself checked, so a link
    swapped in while we copy is refused too. With *owner*, the copies belong to
    that user id (the sandbox user that will work in them).
    """
    left_out: list[str] = []
    total = 0

    def walk(folder: Path, into: Path) -> None:
        nonlocal total
        into.mkdir(mode=0o755)
        if owner is not None:
            os.chown(into, owner, owner)
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                relative = Path(entry.path).relative_to(source)
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    walk(Path(entry.path), into / entry.name)
                elif not stat.S_ISREG(st.st_mode):
                    kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
                    left_out.append(f"{relative}: {kind}, not copied")
                elif st.st_size > max_file or total + st.st_size > max_total:
                    left_out.append(f"{relative}: {size_text(st.st_size)}, over the size limit")
                elif allowance is not None and st.st_size > allowance.bytes_left:
                    left_out.append(f"{relative}: {size_text(st.st_size)}, past {allowance.limit}")
                else:
                    size = _copy_file(Path(entry.path), into / entry.name, owner)
                    total += size
                    if allowance is not None:
                        allowance.bytes_left -= size

    walk(source, target)
    return left_out


def _copy_file(source: Path, target: Path, owner: int | None) -> int:
    """Copy one regular file without following a link at either end; its size."""
    reader = os.open(source, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        if not stat.S_ISREG(os.fstat(reader).st_mode):
            return 0
        writer = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            size = 0
            while chunk := os.read(reader, 1 << 20):
                size += os.write(writer, chunk)
            if owner is not None:
                os.fchown(writer, owner, owner)
            return size
        finally:
            os.close(writer)
    finally:
        os.close(reader)


def replace_tree(source: Path, target: Path, allowance: Allowance | None = None) -> list[str]:
    """:func:`copy_tree` into *target*, removing what was there first (links are not followed)."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.exists():
        shutil.rmtree(target)
    return copy_tree(source, target, allowance=allowance)


def disk_usage(folders: list[str], owner: int | None = None, limit_entries: int = 20_000) -> int:
    """Bytes on disk under *folders* (links not followed); with *owner*, only that user's entries.

    Only the file system each folder is on counts: inside the sandbox, /tmp
    holds bind mounts (the Python environment, the notebook's folder) that are
    not the notebook's files.

    Called every second beside a notebook, so it stops counting after
    *limit_entries* files and answers the size so far plus one byte per
    further file (a notebook that makes a million empty files is over no size
    limit, but is still caught by this count).
    """
    total = 0
    seen = 0
    stack = []
    for top in folders:
        try:
            stack.append((top, os.stat(top).st_dev))
        except OSError:
            continue
    while stack:
        folder, device = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    seen += 1
                    if seen > limit_entries:
                        return total + seen
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if (owner is not None and st.st_uid != owner) or st.st_dev != device:
                        continue  # not the user's, or another file system mounted here
                    total += st.st_blocks * 512
                    if stat.S_ISDIR(st.st_mode):
                        stack.append((entry.path, device))
        except OSError:  # gone while we looked, or not ours to read
            continue
    return total


def remove_owned(owner: int, folders: tuple[str, ...] = SHARED_TEMP) -> int:
    """Remove what user *owner* left at the top of *folders* (``/tmp`` and friends); how many."""
    removed = 0
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.stat(follow_symlinks=False).st_uid != owner:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)  # fd-based on Linux: links inside are not followed
                else:
                    os.unlink(entry.path)
                removed += 1
            except OSError:
                pass
    return removed
