"""The screening before grading: what a human should look at, said out loud, never silently.

It reads a student's submitted folder and flags duplicated or missing grade
ids (duplicates, which JupyterLab's "split cell" makes, are repaired so the
batch runs), renamed notebooks, the wrong assignment, cells the assignment
gives that were changed, code that reaches into the grading machinery, and
imports of the course package's own answers.

Only the student's code is read: answer (solution) cells and cells of their
own. The cells the assignment gives (its set-up, text and tests: every cell
with a grade id that is not an answer) are compared with the release that
``nbgrader generate_assignment`` stored in the gradebook, and never scanned:
they may import course helpers a student may not, so reading them as the
student's code flagged every honest notebook. Code is read with :mod:`ast`, and
its string constants are also read joined, with separators removed, and
base64/hex-decoded, so that ``"get_" + "ipython"`` or an encoded ``gradebook``
is still seen.
"""

from __future__ import annotations

import ast
import base64
import binascii
import importlib.util
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path

import nbformat

from grader.verdicts.student_source import dotted_name

#: Words that have no business in an answer, searched in code and in decoded strings.
SUSPICIOUS_WORDS = {
    "getipython": "uses get_ipython (the grading kernel)",
    "inputtransformers": "changes IPython's input transformers",
    "asttransformers": "changes IPython's AST transformers",
    "gradebook": "mentions the gradebook",
    "solutions": "mentions the solutions folder",
    "nbgrader": "mentions nbgrader",
    "sysmodules": "changes sys.modules",
    "oskill": "sends signals to processes",
    "killpg": "sends signals to processes",
    "subprocess": "starts processes",
    "ossystem": "starts processes",
    "ctypes": "uses ctypes",
    "settrace": "installs a trace function",
    "setprofile": "installs a profile function",
    "getframe": "reads interpreter frames",
    "customexc": "replaces IPython's exception handler",
    "postruncell": "hooks IPython's cell events",
    "preruncell": "hooks IPython's cell events",
    "preexecute": "hooks IPython's cell events",
    "postexecute": "hooks IPython's cell events",
    "inputtransformermanager": "changes IPython's input transformers",
    "procself": "reads the kernel's own process files",
}
#: Dunder attributes that are part of a library's ordinary public face.
PUBLIC_DUNDERS = {"__version__", "__name__", "__doc__", "__qualname__"}
#: Modules an answer has no use for: they reach the interpreter, not the problem.
META_MODULES = {
    "sys",
    "gc",
    "inspect",
    "importlib",
    "builtins",
    "IPython",
    "types",
    "atexit",
    "threading",
    "traceback",
    "dis",
    "marshal",
    "code",
    "codeop",
}
#: Modules of the course package an answer may import; the rest hold the answers.
ALLOWED_DEMOS = {"demos", "demos.grading"}
_CALLS = {
    "exec",
    "eval",
    "compile",
    "__import__",
    "globals",
    "locals",
    "vars",
    "setattr",
    "delattr",
    "breakpoint",
}
_PROCESS_MODULES = {"subprocess", "signal", "ctypes", "multiprocessing", "pty", "socket"}


def _course_modules() -> str:
    """A pattern for "demos" followed by any module or subpackage of it but the allowed ones,
    read from the package itself (without importing it), so that a new chapter's subpackage is
    covered the day it is added."""
    spec = importlib.util.find_spec("demos")
    found = pkgutil.iter_modules(spec.submodule_search_locations if spec else [])
    allowed = {name.split(".")[1] for name in ALLOWED_DEMOS if "." in name}
    names = sorted({m.name for m in found if not m.name.startswith("_")} - allowed)
    return r"demos\W{0,3}(" + "|".join(map(re.escape, names)) + r")\b"


_COURSE_MODULES = _course_modules()


def _allowed_demos(name: str) -> bool:
    return name in ALLOWED_DEMOS or name.startswith("demos.grading.")


def _words(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def _decoded(value: str) -> list[str]:
    """*value* itself and, when it looks encoded, its base64 or hex decoding."""
    out = [value]
    compact = value.strip()
    if len(compact) >= 8:
        for decode in (base64.b64decode, binascii.unhexlify, base64.b32decode):
            try:
                out.append(decode(compact).decode("utf-8", "ignore"))
            except (ValueError, binascii.Error):
                pass
    return out


def scan_code(source: str) -> list[str]:
    """Reasons why this code (one student cell) needs a human's look; empty when none."""
    reasons: list[str] = []
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        tree = None
    strings: list[str] = []
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif node.module == "demos":
                    names = [f"demos.{a.name}" for a in node.names]
                else:
                    names = [node.module or ""]
                for name in names:
                    top = name.split(".")[0]
                    if top == "demos" and not _allowed_demos(name):
                        reasons.append(f"imports {name} from the course package")
                    if top in _PROCESS_MODULES or top in META_MODULES:
                        reasons.append(f"imports {top}")
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in _CALLS
            ):
                reasons.append(f"calls {node.func.id}()")
            elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
                targets = (
                    node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
                )
                for target in targets:
                    name = ".".join(dotted_name(target) or [])
                    if re.match(
                        r"(np|numpy)\.testing\.|.*\.(assert_\w+)$", name
                    ) or name.startswith(("sys.", "builtins.", "IPython.", "demos.")):
                        reasons.append(f"assigns to {name}")
            elif isinstance(node, ast.Attribute) and dotted_name(node) == ["sys", "modules"]:
                reasons.append("uses sys.modules")
            elif (
                isinstance(node, ast.Attribute)
                and node.attr.startswith("_")
                and node.attr not in PUBLIC_DUNDERS
            ):
                reasons.append(f"uses a private attribute ({node.attr})")
            elif isinstance(node, ast.Attribute) and re.match(
                r"(f|gi|cr|ag|tb|co)_\w+$", node.attr
            ):
                reasons.append(f"reads interpreter frames or code ({node.attr})")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.append(node.value)
                if ".." in node.value or node.value.startswith("/") and "/" in node.value[1:]:
                    reasons.append(f"uses a path outside the submission: {node.value[:40]!r}")
    else:
        reasons.append("does not parse as Python")
        strings.append(source)
    # Line by line, so that words of neighbouring lines ("### BEGIN SOLUTION" then
    # "shared = ...") never run together into a suspicious one.
    texts = [_words(line) for line in source.splitlines()]
    texts.append(_words("".join(strings)))
    texts += [_words(d) for s in strings for d in _decoded(s)[1:]]
    for word, why in SUSPICIOUS_WORDS.items():
        if any(word in text for text in texts):
            reasons.append(why)
    imported = any(r.endswith("from the course package") for r in reasons)  # said already
    if not imported and re.search(_COURSE_MODULES, source):
        reasons.append("refers to the course package's own answers")
    return sorted(set(reasons))


@dataclass(frozen=True)
class Release:
    """What the template gradebook says about one notebook of the assignment.

    *ids* are every grade id a submission should still have; *given* maps each
    cell that is not a solution cell, and whose source the gradebook stored, to
    the (cell type, source) pairs an unchanged copy may have, whitespace at line
    ends aside (see :func:`_given`). The rest, answers, are the student's code.
    """

    ids: frozenset[str]
    given: dict[str, frozenset[tuple[str, str]]]


def _normalised(source: str) -> str:
    """*source* without trailing spaces and blank lines at either end.

    An editor that trims them (VS Code ignores the locked flag JupyterLab
    honours) changes nothing a reviewer cares about; indentation is kept.
    """
    return "\n".join(line.rstrip() for line in source.strip("\n").splitlines()).strip("\n")


def _given(cell_type: str, source: str) -> frozenset[tuple[str, str]]:
    """The versions of a given cell an honest submission holds.

    The gradebook stores the source before ``generate_assignment`` clears the
    hidden tests (and mark schemes), so that autograding can put them back: the
    released copy is the stored one with those regions removed, while the
    instructor's own notebook, handed in, still has them. Both are unchanged.
    """
    from nbgrader.preprocessors import ClearHiddenTests, ClearMarkScheme

    versions = {source}
    new_cell = (
        nbformat.v4.new_markdown_cell if cell_type == "markdown" else nbformat.v4.new_code_cell
    )
    cell = new_cell(source)
    try:
        for step in (
            ClearHiddenTests(enforce_metadata=False),
            ClearMarkScheme(enforce_metadata=False),
        ):
            cell, _ = step.preprocess_cell(cell, {}, 0)
        versions.add(cell.source)
    except RuntimeError:  # unbalanced delimiters: the stored source is the only version
        pass
    return frozenset((cell_type, _normalised(v)) for v in versions)


def _expected(template_db: Path, assignment: str) -> tuple[dict[str, Release], dict[str, str]]:
    """What each notebook of *assignment* was released with, and every other assignment's ids.

    A grade id listed as graded but without a stored source (a gradebook not
    made by ``generate_assignment``) has nothing to be compared with, so its
    cell is scanned like the student's own.
    """
    from nbgrader.api import Gradebook

    mine: dict[str, Release] = {}
    others: dict[str, str] = {}
    with Gradebook(f"sqlite:///{template_db}") as gb:
        for each in gb.assignments:
            for notebook in each.notebooks:
                answers = {c.name for c in notebook.solution_cells}
                graded = {c.name for c in notebook.grade_cells}
                sources = {c.name: c for c in notebook.source_cells}
                ids = answers | graded | set(sources)
                if each.name == assignment:
                    given = {
                        name: _given(cell.cell_type, cell.source or "")
                        for name, cell in sources.items()
                        if name not in answers
                    }
                    mine[notebook.name] = Release(frozenset(ids), given)
                else:
                    others.update(dict.fromkeys(ids, each.name))
    return mine, others


def screen_submission(
    folder: Path, assignment: str, template_db: Path, repair: bool = False
) -> list[str]:
    """Flags for one student's submitted folder; with *repair*, fix what can be fixed.

    Repairs: a single notebook under another name is renamed to the expected
    one, and later copies of a duplicated grade id lose their nbgrader metadata
    (their code stays and runs). Each repair is also a flag.
    """
    flags: list[str] = []
    expected, others = _expected(template_db, assignment)
    found = sorted(p for p in folder.glob("*.ipynb"))
    names = {p.stem for p in found}
    missing = set(expected) - names
    extra = [p for p in found if p.stem not in expected]
    if missing and len(missing) == 1 and len(extra) == 1:
        wanted = folder / f"{missing.pop()}.ipynb"
        flags.append(f"renamed notebook {extra[0].name} -> {wanted.name}")
        if repair:
            extra[0].rename(wanted)
        found = sorted(folder.glob("*.ipynb"))
    else:
        flags += [f"missing notebook {m}.ipynb" for m in sorted(missing)]
        flags += [f"unexpected notebook {p.name}" for p in extra]
    for path in found:
        if path.stem not in expected:
            continue
        try:
            nb = nbformat.read(path, as_version=4)
        except Exception as error:  # noqa: BLE001  (reported, batch goes on)
            flags.append(f"{path.name} is not a readable notebook ({type(error).__name__})")
            continue
        flags += _check_notebook(nb, path.name, expected[path.stem], others)
        seen: set[str] = set()
        duplicates = []
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if grade_id and grade_id in seen:
                duplicates.append(grade_id)
                del cell.metadata["nbgrader"]
            elif grade_id:
                seen.add(grade_id)
        if duplicates:
            flags.append(
                f"duplicated grade ids {sorted(set(duplicates))} (a split cell?): "
                "later copies graded as plain cells"
            )
            if repair:
                nbformat.write(nb, path)
    return flags


def _check_notebook(
    nb: nbformat.NotebookNode, name: str, release: Release, others: dict[str, str]
) -> list[str]:
    """Flags for one readable notebook: wrong assignment, missing ids, changed or suspect cells.

    The first cell with a given grade id is compared with the release; a later
    copy of it (a split cell) loses its metadata in the repair and then runs as
    the student's own code, so it is scanned, as are answer cells and cells
    without a grade id. Which cells are answers comes from the gradebook, not
    from the submitted metadata, which the student can edit.
    """
    flags = []
    ids = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells} - {None}
    wrong = bool(ids and not ids & release.ids and ids & set(others))
    if wrong:
        flags.append(f"{name} looks like assignment {others[next(iter(ids & set(others)))]}")
    gone = release.ids - ids
    if gone and not wrong:
        flags.append(f"missing grade ids {sorted(gone)}")
    seen: set[str] = set()
    for index, cell in enumerate(nb.cells):
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        first = bool(grade_id) and grade_id not in seen
        if grade_id:
            seen.add(grade_id)
        if first and grade_id in release.given:
            if (cell.cell_type, _normalised(cell.source)) not in release.given[grade_id]:
                flags.append(
                    f"cell {index + 1} (grade id {grade_id}) given by the assignment was changed"
                )
            continue  # nbgrader grades the released source, whatever is here
        if cell.cell_type != "code":
            continue
        for reason in scan_code(cell.source):
            flags.append(f"cell {index + 1}: {reason}")
    return flags


def screen_course(course: Path, assignment: str, students: list[str]) -> dict[str, list[str]]:
    """Flags for every student's submission (read-only: nothing is repaired)."""
    db = course / "gradebook.db"
    if not db.is_file():
        raise SystemExit(
            f"no gradebook in {course}: run 'nbgrader generate_assignment {assignment}' first"
        )
    return {
        s: screen_submission(course / "submitted" / s / assignment, assignment, db)
        for s in students
    }
