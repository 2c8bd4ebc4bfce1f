"""File downloaded submissions into ``submitted/<student>/<assignment>/``.

Learning platforms name downloads their own way: Canvas
``smithjohn_12345_67890_simt.ipynb`` (``smithjohn_LATE_12345_...`` when late,
``..._simt-1.ipynb`` for a resubmission), Moodle
``John Smith_12345_assignsubmission_file_/simt.ipynb``, or one folder per
student; and they come as zip files, the class's or one student's (Canvas
names a student's zip like a notebook, ``smithjohn_12345_67890_work.zip``, and
every notebook in it is that student's). Intake must never lose a submission
without saying so, hence these rules:

* Every input, and every file in a folder or zip, is either filed or reported
  with a reason (unsafe archive, encrypted or corrupt member, not a notebook,
  unreadable, whose is it?); only macOS noise (``__MACOSX/``, ``.DS_Store``) is
  skipped silently. An unexpected error is reported for its input and the run
  goes on, and ``submitted/student-ids.csv`` is always written.
* A notebook uploaded as ``simt.ipynb.txt`` is filed as ``simt.ipynb`` when it
  is one, and the report says so.
* Two or more notebooks of one student with one name, in this run or one filed
  by an earlier run, are decided before anything is written, by one rule that
  the report states for every case (:data:`RULES`): ``latest`` (default) or
  ``on-time``. What each filed notebook was (source, LATE, resubmission) is kept
  in ``submitted/collected.csv`` so that a later run can apply the rule to it.
* Names that are not safe student ids (``jürgen``, ``anna maria``) are mapped
  to safe ones (``jurgen``, ``anna-maria``), printed and kept in
  ``submitted/student-ids.csv``.
"""

from __future__ import annotations

import csv
import re
import stat
import unicodedata
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

#: A notebook bigger than this is not a student's notebook.
MAX_NOTEBOOK_BYTES = 50 << 20
#: How duplicates are decided: the ``keep`` argument of :func:`collect_all`.
RULES = {
    "latest": "--keep latest: a LATE file or a higher resubmission number wins, "
    "otherwise the later input",
    "on-time": "--keep on-time: a file not marked LATE wins, otherwise as --keep latest",
}
_CANVAS = re.compile(r"^(?P<name>.+?)_(?P<late>LATE_)?\d+_\d+_(?P<file>.+\.ipynb)$")
#: A zip that one student uploaded to Canvas, renamed by Canvas like a notebook would be.
_CANVAS_ZIP = re.compile(r"^(?P<name>.+?)_(?P<late>LATE_)?\d+_\d+_.+\.zip$")
_RESUBMISSION = re.compile(r"-(?P<n>\d+)(?P<ext>\.ipynb)$")
_MOODLE = re.compile(r"^(?P<name>.+?)_\d+_assignsubmission_\w*?_?$")
_PLAIN = re.compile(r"^(?P<name>[^_/]+)_(?P<file>.+\.ipynb)$")
#: Columns of ``submitted/collected.csv``: what each filed notebook was, for later runs.
_RECORD = ("file", "source", "late", "resubmission")
_ARCHIVES = (".zip", ".gz", ".tgz", ".tar", ".bz2", ".xz", ".rar", ".7z", ".zst")


def safe_id(name: str) -> str:
    """A student id nbgrader and file systems accept: ASCII letters, digits, ``.`` and ``-``."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    cleaned = re.sub(r"[^a-z0-9.]+", "-", ascii_name.lower()).strip("-.")
    return cleaned or "student"


@dataclass
class Report:
    """What collecting did: filed notebooks, renamed ids, notes, duplicates, refused files."""

    filed: dict[str, str] = field(default_factory=dict)  # "student/notebook" -> source
    renamed: dict[str, str] = field(default_factory=dict)  # original name -> id
    notes: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def text(self) -> str:
        lines = [f"filed {len(self.filed)} notebooks"]
        lines += [f"  id {new!r} for {old!r}" for old, new in self.renamed.items()]
        lines += [f"  note: {note}" for note in self.notes]
        lines += [f"  duplicate: {line}" for line in self.duplicates]
        lines += [f"  refused: {why}" for why in self.refused]
        return "\n".join(lines)


@dataclass
class _Entry:
    """A notebook found in the inputs (or filed before), while duplicates are decided."""

    inner: PurePosixPath  # its path inside the input: the platform's naming tells whose it is
    content: bytes
    where: str  # how the report names it
    late: bool = False
    resubmission: int = 0
    filed_before: bool = False
    #: Whose it is when the file it came in says so (a student's zip named by Canvas).
    owner: str | None = None


def student_and_file(path: PurePosixPath) -> tuple[str, str] | None:
    """(student name, notebook name) from a download's path, or None when unknown."""
    name = path.name
    if m := _CANVAS.match(name):
        return m["name"], _RESUBMISSION.sub(r"\g<ext>", m["file"])
    for parent in reversed(path.parents[:-1] if len(path.parts) > 1 else []):
        if m := _MOODLE.match(parent.name):
            return m["name"], name
    if len(path.parts) >= 2:
        return path.parts[-2], name
    if m := _PLAIN.match(name):
        return m["name"], m["file"]
    return None


def _canvas_marks(name: str) -> tuple[bool, int]:
    """(marked LATE, resubmission number) of a Canvas download; (False, 0) for other names."""
    m = _CANVAS.match(name)
    if not m:
        return False, 0
    resubmission = _RESUBMISSION.search(m["file"])
    return bool(m["late"]), int(resubmission["n"]) if resubmission else 0


@contextmanager
def _reported(report: Report, what: object) -> Iterator[None]:
    """Turn an unexpected error about *what* into a report line, so the run goes on."""
    try:
        yield
    except Exception as error:  # noqa: BLE001  (intake must never stop)
        report.refused.append(f"{what}: unexpected error ({type(error).__name__}: {error})")


def _is_noise(path: PurePosixPath) -> bool:
    """macOS adds these to folders and zips; they are never a submission."""
    return "__MACOSX" in path.parts or path.name == ".DS_Store" or path.name.startswith("._")


def _not_a_notebook(name: str) -> str | None:
    """Why a file called *name* is not filed, or None for ``.ipynb`` and ``.ipynb.txt``."""
    if name.endswith((".ipynb", ".ipynb.txt")):
        return None
    if name.endswith(".py"):
        return "a Python script, not a notebook"
    if name.endswith(_ARCHIVES):
        return "an archive: only .ipynb files and .zip archives of them are accepted"
    suffix = PurePosixPath(name).suffix
    return f"not a notebook ({suffix + ' file' if suffix else 'no file extension'})"


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


def _entries(item: Path, report: Report) -> list[_Entry]:
    """Every notebook in *item* (folder, zip or file); everything else goes to the report."""
    if not item.is_dir():
        return _entries_of_file(item, PurePosixPath(item.name), report)
    found = []
    for path in sorted(item.rglob("*")):
        inner = PurePosixPath(*path.relative_to(item).parts)
        if path.is_symlink():
            report.refused.append(f"{path}: a symbolic link")
        elif not path.is_file():
            if not path.is_dir():
                report.refused.append(f"{path}: not a regular file")
        elif not _is_noise(inner):
            with _reported(report, path):
                found += _entries_of_file(path, inner, report)
    return found


def _entries_of_file(path: Path, inner: PurePosixPath, report: Report) -> list[_Entry]:
    if path.suffix == ".zip":
        return _entries_of_zip(path, inner, report)
    if why := _not_a_notebook(path.name):
        report.refused.append(f"{path}: {why}")
        return []
    if path.stat().st_size > MAX_NOTEBOOK_BYTES:
        report.refused.append(f"{path}: larger than {MAX_NOTEBOOK_BYTES >> 20} MB")
        return []
    return [_Entry(inner, path.read_bytes(), str(path))]


def _entries_of_zip(path: Path, inner: PurePosixPath, report: Report) -> list[_Entry]:
    """The notebooks of one zip; an unsafe zip is refused whole, a bad member on its own."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        report.refused.append(f"{path}: not a valid zip file")
        return []
    found = []
    with archive:
        if problem := _zip_problem(archive):
            report.refused.append(f"{path}: unsafe archive ({problem})")
            return []
        for info in archive.infolist():
            member, where = inner.parent / info.filename, f"{info.filename} in {path}"
            if info.is_dir() or _is_noise(member):
                continue
            why = _not_a_notebook(info.filename)
            if why is None and info.flag_bits & 0x1:
                why = "an encrypted member (password-protected zip); ask for it unencrypted"
            elif why is None and info.file_size > MAX_NOTEBOOK_BYTES:
                why = f"larger than {MAX_NOTEBOOK_BYTES >> 20} MB"
            if why is None:
                try:
                    found.append(_Entry(member, archive.read(info), where))
                except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as error:
                    why = f"a corrupt member ({error})"
            if why:
                report.refused.append(f"{where}: {why}")
    if m := _CANVAS_ZIP.match(path.name):  # one student's upload: its notebooks are theirs
        for entry in found:
            entry.owner, entry.late = m["name"], bool(m["late"])
    return found


def _is_notebook(content: bytes) -> bool:
    import nbformat

    try:
        nbformat.reads(content.decode("utf-8"), as_version=4)
    except Exception:  # noqa: BLE001  (any failure means unreadable)
        return False
    return True


def _winner(entries: list[_Entry], keep: str) -> _Entry:
    """The entry *keep* files (see :data:`RULES`); entries come in input order, earliest first."""

    def rank(item: tuple[int, _Entry]) -> tuple[bool, int, int]:
        order, entry = item
        preferred = entry.late if keep == "latest" else not entry.late
        return preferred, entry.resubmission, order

    return max(enumerate(entries), key=rank)[1]


def _duplicate_line(key: str, winner: _Entry, entries: list[_Entry], keep: str) -> str:
    """One report line for a duplicate: what is filed, what is not, and the rule that decided."""

    def name(entry: _Entry) -> str:
        return (
            f"the submission filed before (from {entry.where})"
            if entry.filed_before
            else entry.where
        )

    before = entries[0] if entries[0].filed_before else None
    if before is not None and winner is not before:
        line = f"{key}: {winner.where} replaced {name(before)}"
    else:
        line = f"{key}: kept {name(winner)}"
    losers = [e.where for e in entries if e is not winner and e is not before]
    return line + (f"; not filed: {', '.join(losers)}" if losers else "") + f" [{RULES[keep]}]"


def _read_csv(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _write_csv(path: Path, fields: list[str], rows: list[dict[str, str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fields)
        writer.writeheader()
        writer.writerows(rows)


@dataclass
class _Intake:
    """One run of :func:`collect_all`: ids and records it keeps, notebooks grouped for filing."""

    submitted: Path
    assignment: str
    keep: str
    report: Report = field(default_factory=Report)
    known: dict[str, str] = field(default_factory=dict)  # student name -> id
    log: dict[str, dict[str, str]] = field(default_factory=dict)  # filed file -> its record
    groups: dict[tuple[str, str], list[_Entry]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        ids = _read_csv(self.submitted / "student-ids.csv")
        self.known = {row["name"]: row["id"] for row in ids}
        self.log = {row["file"]: row for row in _read_csv(self.submitted / "collected.csv")}

    def add(self, entry: _Entry) -> None:
        """Put a readable notebook into its (student id, notebook) group; report any other."""
        txt = entry.inner.name.endswith(".txt")
        if txt:
            entry.inner = entry.inner.with_name(entry.inner.name.removesuffix(".txt"))
        parsed = student_and_file(entry.inner)
        if entry.owner is not None and not _CANVAS.match(entry.inner.name):
            parsed = (entry.owner, entry.inner.name)
        if parsed is None:
            self.report.refused.append(f"{entry.where}: cannot tell whose notebook this is")
            return
        if not _is_notebook(entry.content):
            self.report.refused.append(f"{entry.where}: not a readable notebook")
            return
        name, notebook = parsed
        if name not in self.known:
            student = base = safe_id(name)
            taken, n = set(self.known.values()), 2
            while student in taken:
                student, n = f"{base}-{n}", n + 1
            self.known[name] = student
        if self.known[name] != name:
            self.report.renamed[name] = self.known[name]
        if txt:
            self.report.notes.append(
                f"{entry.where}: a notebook uploaded as .txt, filed as {entry.inner.name}"
            )
        late, entry.resubmission = _canvas_marks(entry.inner.name)
        entry.late = entry.late or late
        self.groups.setdefault((self.known[name], Path(notebook).name), []).append(entry)

    def file(self, student: str, notebook: str, entries: list[_Entry]) -> None:
        """Write the notebook the rule picks among *entries* and the one filed before, if any."""
        # Filed under the notebook's own name; 'python -m grader screen' flags a renamed one.
        record = f"{student}/{self.assignment}/{notebook}"
        target = self.submitted / record
        if target.is_file():
            old = target.read_bytes()
            if all(e.content != old for e in entries):  # the same file again is no duplicate
                row = self.log.get(record, {})
                where = row.get("source", "an unrecorded source")
                late, resubmission = row.get("late") == "True", int(row.get("resubmission") or 0)
                before = _Entry(
                    PurePosixPath(record), old, where, late, resubmission, filed_before=True
                )
                entries = [before, *entries]
        winner = _winner(entries, self.keep)
        if len(entries) > 1:
            self.report.duplicates.append(
                _duplicate_line(f"{student}/{notebook}", winner, entries, self.keep)
            )
        if winner.filed_before:
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(winner.content)
        self.report.filed[f"{student}/{notebook}"] = winner.where
        marks = (record, winner.where, str(winner.late), str(winner.resubmission))
        self.log[record] = dict(zip(_RECORD, marks))

    def save(self) -> None:
        """Write the id map and the records of what is filed (done even when a run fails)."""
        ids = [{"name": name, "id": id_} for name, id_ in sorted(self.known.items())]
        _write_csv(self.submitted / "student-ids.csv", ["name", "id"], ids)
        records = [self.log[record] for record in sorted(self.log)]
        _write_csv(self.submitted / "collected.csv", [*_RECORD], records)


def collect_all(course: Path, assignment: str, inputs: list[Path], keep: str = "latest") -> Report:
    """File every notebook found in *inputs* for *assignment*; never stops at a bad input.

    *keep* ("latest" or "on-time", see :data:`RULES`) decides between notebooks of one
    student with one name, in this run or filed before.
    """
    if keep not in RULES:
        raise ValueError(f"keep must be one of {sorted(RULES)}, not {keep!r}")
    intake = _Intake(course / "submitted", assignment, keep)
    try:
        for item in inputs:
            if not item.exists():
                intake.report.refused.append(f"{item}: no such file or folder")
                continue
            entries: list[_Entry] = []
            with _reported(intake.report, item):
                entries = _entries(item, intake.report)
            for entry in entries:
                with _reported(intake.report, entry.where):
                    intake.add(entry)
        # Every duplicate is decided (all inputs read) before anything is written.
        for (student, notebook), entries in intake.groups.items():
            with _reported(intake.report, f"{student}/{notebook}"):
                intake.file(student, notebook, entries)
    finally:
        intake.save()
    return intake.report
