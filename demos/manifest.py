"""The course manifest (``demos/course.toml``), read into typed records.

A chapter's notebook, checks, assignment, benchmark commands and result files
are facts that the checks registry, the command line, the README's chapter
table, the student edition, nbgrader's configuration and the tests all need.
They are written once, in the manifest, and every one of those reads them
from here, so that adding a chapter is one entry plus its own files. The
manifest is checked as it is read: a bad entry stops everything with one line
that names the entry and what is wrong with it. Only the standard library is
used, so that ``nbgrader_config.py`` and the build tools can read it too.
"""

from __future__ import annotations

import functools
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PATH = Path(__file__).resolve().parent / "course.toml"
CHAPTER_ID = re.compile(r"\d\d[a-z]?")
CHECK_TARGET = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")
KIND_NAMES = {list: "a list of strings", int: "a whole number", bool: "true or false"}


class ManifestError(ValueError):
    """An entry of the manifest is missing, mistyped or contradicts another."""


@dataclass(frozen=True)
class Command:
    """``python -m demos WORDS...`` runs *module*'s ``main``; *chapter* is None for the course's
    own commands."""

    words: tuple[str, ...]
    module: str
    help: str
    chapter: str | None


@dataclass(frozen=True)
class Check:
    """The check of a "your turn" cell: *target* is ``module:function``."""

    name: str
    chapter: str
    target: str


@dataclass(frozen=True)
class Assignment:
    """An nbgrader assignment: ``solutions/NAME/NOTEBOOK``, released to ``exercises/NAME/``."""

    name: str
    notebook: str
    without_gpu: bool
    chapters: tuple[str, ...]

    @property
    def chapter(self) -> str:
        """The first chapter that ends with this assignment."""
        return self.chapters[0]


@dataclass(frozen=True)
class Chapter:
    """One notebook of ``course/`` and what belongs to it."""

    id: str
    notebook: str
    title: str
    minutes: int
    before: tuple[str, ...]
    learn: str
    packages: tuple[str, ...]
    assignment: str | None
    results: tuple[str, ...]
    checks: tuple[Check, ...]
    commands: tuple[Command, ...]

    @property
    def number(self) -> str:
        """The chapter's number as readers see it: ``"00"`` -> ``"0"``, ``"04b"`` -> ``"4b"``."""
        return self.id.lstrip("0") or "0"


@dataclass(frozen=True)
class Course:
    """The whole manifest: chapters in order, assignments by name, the course's own commands."""

    chapters: tuple[Chapter, ...]
    assignments: dict[str, Assignment]
    general_commands: tuple[Command, ...]

    def chapter(self, chapter_id: str) -> Chapter:
        """The chapter with this id; ManifestError if there is none."""
        for chapter in self.chapters:
            if chapter.id == chapter_id:
                return chapter
        raise ManifestError(f"no chapter {chapter_id!r} in the manifest")

    def requirement(self, need: str) -> str:
        """A ``before`` entry as readers see it: a chapter's number, or the words as written."""
        return self.chapter(need).number if CHAPTER_ID.fullmatch(need) else need

    @property
    def checks(self) -> dict[str, Check]:
        """Every chapter's checks by name, in chapter order."""
        return {check.name: check for chapter in self.chapters for check in chapter.checks}

    @property
    def commands(self) -> tuple[Command, ...]:
        """The course's own commands, then the chapters' in chapter order."""
        return self.general_commands + tuple(c for ch in self.chapters for c in ch.commands)

    @property
    def packages(self) -> frozenset[str]:
        """The ``demos`` subpackages (``demos.patterns``) that some chapter names as its own."""
        return frozenset(f"demos.{p}" for chapter in self.chapters for p in chapter.packages)

    @property
    def minutes(self) -> int:
        """A student's time for the whole course, exercises left out."""
        return sum(chapter.minutes for chapter in self.chapters)


class _Entry:
    """One table of the TOML file, read field by field with a typed one-line error."""

    def __init__(self, where: str, table: Any, known: set[str] | None = None) -> None:
        if not isinstance(table, dict):
            raise ManifestError(f"{where}: expected a table, got {type(table).__name__}")
        unknown = sorted(set(table) - known) if known is not None else []
        if unknown:
            raise ManifestError(f"{where}: unknown field {unknown[0]!r}")
        self.where, self.table = where, table

    def get(self, key: str, kind: type, default: Any = ...) -> Any:
        """Field *key*, of type *kind* (``list``: of strings, returned as a tuple)."""
        if key not in self.table:
            if default is ...:
                raise ManifestError(f"{self.where}: missing field {key!r}")
            return default
        value = self.table[key]
        items = value if kind is list else [value]
        wanted = str if kind is list else kind
        if (kind is list and not isinstance(value, list)) or not all(
            isinstance(v, wanted) and not (wanted is int and isinstance(v, bool)) for v in items
        ):
            what = KIND_NAMES.get(kind, "a string")
            raise ManifestError(f"{self.where}: {key!r} must be {what}, got {value!r}")
        return tuple(value) if kind is list else value


def _tables(where: str, value: Any) -> list[Any]:
    """An array of tables (``[[...]]`` in TOML)."""
    if not isinstance(value, list):
        raise ManifestError(f"{where}: expected an array of tables ([[{where}]]), got {value!r}")
    return value


def _command(where: str, table: Any, chapter: str | None) -> Command:
    entry = _Entry(where, table, {"words", "module", "help"})
    words = entry.get("words", list)
    if not words:
        raise ManifestError(f"{where}: 'words' is empty")
    return Command(words, entry.get("module", str), entry.get("help", str), chapter)


def _chapter(index: int, table: Any) -> Chapter:
    fields = {"id", "notebook", "title", "minutes", "before", "learn", "packages", "assignment"}
    named = isinstance(table, dict) and isinstance(table.get("id"), str)
    where = f"chapter {table['id']}" if named else f"chapter #{index + 1}"
    entry = _Entry(where, table, fields | {"results", "checks", "commands"})
    chapter_id = entry.get("id", str)
    if not CHAPTER_ID.fullmatch(chapter_id):
        raise ManifestError(f"{where}: id {chapter_id!r} is not like '04' or '04b'")
    notebook = entry.get("notebook", str)
    if not (notebook.startswith(f"{chapter_id}-") and notebook.endswith(".ipynb")):
        raise ManifestError(
            f"{where}: notebook {notebook!r} is not named '{chapter_id}-NAME.ipynb'"
        )
    checks = []
    for name, target in _Entry(f"{where}: checks", table.get("checks", {})).table.items():
        if not isinstance(target, str) or not CHECK_TARGET.fullmatch(target):
            raise ManifestError(
                f"{where}: check {name!r} must be 'module:function', got {target!r}"
            )
        checks.append(Check(name, chapter_id, target))
    commands = _tables(f"{where}: commands", table.get("commands", []))
    return Chapter(
        id=chapter_id,
        notebook=notebook,
        title=entry.get("title", str),
        minutes=entry.get("minutes", int),
        before=entry.get("before", list),
        learn=entry.get("learn", str),
        packages=entry.get("packages", list),
        assignment=entry.get("assignment", str, None),
        results=entry.get("results", list, ()),
        checks=tuple(checks),
        commands=tuple(_command(f"{where}: command", c, chapter_id) for c in commands),
    )


def _unique(where: str, names: list[Any]) -> None:
    seen: set[Any] = set()
    for name in names:
        if name in seen:
            raise ManifestError(f"{where} {name!r} appears twice")
        seen.add(name)


def _cross_check(course: Course) -> None:
    """What one entry says about another: ids, names and words unique, references resolved."""
    ids = [chapter.id for chapter in course.chapters]
    _unique("chapter", ids)
    _unique("check", [c.name for ch in course.chapters for c in ch.checks])
    _unique("command", [" ".join(c.words) for c in course.commands])
    for n, chapter in enumerate(course.chapters):
        for need in chapter.before:
            if CHAPTER_ID.fullmatch(need) and need not in ids[:n]:
                raise ManifestError(
                    f"chapter {chapter.id}: 'before' names {need!r}, no earlier chapter"
                )
        if chapter.assignment is not None and chapter.assignment not in course.assignments:
            raise ManifestError(
                f"chapter {chapter.id}: assignment {chapter.assignment!r} not in [assignments]"
            )
    for assignment in course.assignments.values():
        if not assignment.chapters:
            raise ManifestError(f"assignment {assignment.name!r}: no chapter names it")


def _read(data: dict[str, Any]) -> Course:
    """The records of a parsed manifest, each entry checked on its own."""
    _Entry("manifest", data, {"commands", "assignments", "chapters"})
    chapters = tuple(
        _chapter(n, t) for n, t in enumerate(_tables("chapters", data.get("chapters", [])))
    )
    assignments = {}
    for name, table in _Entry("assignments", data.get("assignments", {})).table.items():
        if not re.fullmatch(r"\w+", name):
            raise ManifestError(f"assignment {name!r}: a name is letters, digits and _ only")
        entry = _Entry(f"assignment {name!r}", table, {"notebook", "without_gpu"})
        named_by = tuple(ch.id for ch in chapters if ch.assignment == name)
        assignments[name] = Assignment(
            name, entry.get("notebook", str), entry.get("without_gpu", bool), named_by
        )
    general = tuple(
        _command("command", t, None) for t in _tables("commands", data.get("commands", []))
    )
    return Course(chapters, assignments, general)


def parse(text: str, source: str = "course.toml") -> Course:
    """The course that manifest *text* describes; ManifestError (naming *source*) if it is bad."""
    try:
        course = _read(tomllib.loads(text))
        _cross_check(course)
    except (tomllib.TOMLDecodeError, ManifestError) as error:
        raise ManifestError(f"{source}: {error}") from None
    return course


def load(path: Path = PATH) -> Course:
    """The course described by the manifest at *path* (the package's own by default)."""
    return parse(Path(path).read_text(encoding="utf-8"), str(path))


@functools.cache
def course() -> Course:
    """The package's own manifest, read once."""
    return load(PATH)
