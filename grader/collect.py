"""File downloaded submissions into ``submitted/<student>/<assignment>/``.

Learning platforms name downloads their own way: Canvas
``smithjohn_12345_67890_simt.ipynb`` (``smithjohn_LATE_12345_...`` when late),
Moodle ``John Smith_12345_assignsubmission_file_/simt.ipynb``, or one folder per
student; and they come as zip files. Each input is handled on its own: an
unsafe or unknown archive is refused with a message and the rest of the class
is still filed. Names that are not safe student ids (``jürgen``, ``anna maria``)
are mapped to safe ones (``jurgen``, ``anna-maria``), and the mapping is printed
and kept in ``submitted/student-ids.csv``.
"""

from __future__ import annotations

import csv
import re
import stat
import unicodedata
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

#: A notebook bigger than this is not a student's notebook.
MAX_NOTEBOOK_BYTES = 50 << 20
_CANVAS = re.compile(r"^(?P<name>.+?)_(?:LATE_)?\d+_\d+_(?P<file>.+\.ipynb)$")
_MOODLE = re.compile(r"^(?P<name>.+?)_\d+_assignsubmission_\w*?_?$")
_PLAIN = re.compile(r"^(?P<name>[^_/]+)_(?P<file>.+\.ipynb)$")
_ARCHIVES = (".gz", ".tgz", ".tar", ".bz2", ".xz", ".rar", ".7z", ".zst")


def safe_id(name: str) -> str:
    """A student id nbgrader and file systems accept: ASCII letters, digits, ``.`` and ``-``."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    cleaned = re.sub(r"[^a-z0-9.]+", "-", ascii_name.lower()).strip("-.")
    return cleaned or "student"


@dataclass
class Report:
    """What collecting did: filed notebooks, renamed ids, refused inputs."""

    filed: dict[str, str] = field(default_factory=dict)  # student id -> source
    renamed: dict[str, str] = field(default_factory=dict)  # original name -> id
    refused: list[str] = field(default_factory=list)

    def text(self) -> str:
        lines = [f"filed {len(self.filed)} submissions"]
        lines += [f"  id {new!r} for {old!r}" for old, new in self.renamed.items()]
        lines += [f"  refused: {why}" for why in self.refused]
        return "\n".join(lines)


def student_and_file(path: PurePosixPath) -> tuple[str, str] | None:
    """(student name, notebook name) from a download's path, or None when unknown."""
    name = path.name
    if m := _CANVAS.match(name):
        return m["name"], re.sub(r"-\d+(\.ipynb)$", r"\1", m["file"])
    for parent in reversed(path.parents[:-1] if len(path.parts) > 1 else []):
        if m := _MOODLE.match(parent.name):
            return m["name"], name
    if len(path.parts) >= 2:
        return path.parts[-2], name
    if m := _PLAIN.match(name):
        return m["name"], m["file"]
    return None


def _zip_problem(archive: zipfile.ZipFile) -> str | None:
    total = 0
    for info in archive.infolist():
        member = PurePosixPath(info.filename)
        if member.is_absolute() or ".." in member.parts or "\\" in info.filename:
            return f"member {info.filename!r} points outside the archive"
        if stat.S_ISLNK(info.external_attr >> 16):
            return f"member {info.filename!r} is a symbolic link"
        total += info.file_size
    if total > 20 * MAX_NOTEBOOK_BYTES:
        return f"it unpacks to {total >> 20} MB"
    return None


def _entries(item: Path, report: Report) -> list[tuple[PurePosixPath, bytes, str]]:
    """(path inside the input, content, where it came from) of every notebook in *item*."""
    if item.is_dir():
        found = []
        for path in sorted(item.rglob("*")):
            if path.is_symlink():
                report.refused.append(f"{path}: a symbolic link")
            elif path.is_file():
                found += _entries_of_file(
                    path, PurePosixPath(*path.relative_to(item).parts), report
                )
        return found
    return _entries_of_file(item, PurePosixPath(item.name), report)


def _entries_of_file(path: Path, inner: PurePosixPath, report: Report):
    if path.suffix == ".zip":
        try:
            with zipfile.ZipFile(path) as archive:
                problem = _zip_problem(archive)
                if problem:
                    report.refused.append(f"{path.name}: unsafe archive ({problem})")
                    return []
                return [
                    (inner.parent / PurePosixPath(i.filename), archive.read(i), path.name)
                    for i in archive.infolist()
                    if i.filename.endswith(".ipynb") and "__MACOSX" not in i.filename
                ]
        except zipfile.BadZipFile:
            report.refused.append(f"{path.name}: not a valid zip file")
            return []
    if path.name.endswith(_ARCHIVES):
        report.refused.append(f"{path.name}: only .zip archives and .ipynb files are accepted")
        return []
    if path.suffix == ".ipynb":
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            report.refused.append(f"{path.name}: larger than {MAX_NOTEBOOK_BYTES >> 20} MB")
            return []
        return [(inner, path.read_bytes(), str(path))]
    return []


def collect_all(course: Path, assignment: str, inputs: list[Path]) -> Report:
    """File every notebook found in *inputs* for *assignment*; never stops at a bad input."""
    report = Report()
    ids_file = course / "submitted" / "student-ids.csv"
    known: dict[str, str] = {}
    if ids_file.is_file():
        with open(ids_file, newline="") as f:
            known = {row["name"]: row["id"] for row in csv.DictReader(f)}
    for item in inputs:
        if not item.exists():
            report.refused.append(f"{item}: no such file or folder")
            continue
        for inner, content, origin in _entries(item, report):
            parsed = student_and_file(inner)
            if parsed is None:
                report.refused.append(f"{inner} ({origin}): cannot tell whose notebook this is")
                continue
            name, notebook = parsed
            if name in known:
                student = known[name]
            else:
                student = safe_id(name)
                taken = set(known.values())
                base, n = student, 2
                while student in taken:
                    student, n = f"{base}-{n}", n + 1
                known[name] = student
            if student != name:
                report.renamed[name] = student
            try:
                import nbformat

                nbformat.reads(content.decode("utf-8"), as_version=4)
            except Exception:  # noqa: BLE001  (any failure means unreadable)
                report.refused.append(f"{inner} ({origin}): not a readable notebook")
                continue
            # Filed under the notebook's own name; 'python -m grader check' flags a renamed one.
            target = course / "submitted" / student / assignment / Path(notebook).name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            report.filed[student] = origin
    ids_file.parent.mkdir(parents=True, exist_ok=True)
    with open(ids_file, "w", newline="") as f:
        writer = csv.DictWriter(f, ["name", "id"])
        writer.writeheader()
        writer.writerows({"name": k, "id": v} for k, v in sorted(known.items()))
    return report
