"""The check before grading: what a human should look at, said out loud, never silently.

It reads a student's submitted folder and flags duplicated or missing grade
ids (duplicates, which JupyterLab's "split cell" makes, are repaired so the
batch runs), renamed notebooks, the wrong assignment, code that reaches into
the grading machinery, and imports of the course package's own answers. Code is
read with :mod:`ast`, and its string constants are also read joined, with
separators removed, and base64/hex-decoded, so that ``"get_" + "ipython"`` or
an encoded ``gradebook`` is still seen.
"""

from __future__ import annotations

import ast
import base64
import binascii
import re
from pathlib import Path

import nbformat

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
}
#: Modules of the course package an answer may import; the rest hold the answers.
ALLOWED_DEMOS = {"demos", "demos.grading"}
_CALLS = {"exec", "eval", "compile", "__import__", "globals", "setattr", "breakpoint"}
_PROCESS_MODULES = {"subprocess", "signal", "ctypes", "multiprocessing", "pty", "socket"}


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


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


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
                    if top in _PROCESS_MODULES or top in ("importlib", "builtins"):
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
                    name = _dotted(target)
                    if re.match(
                        r"(np|numpy)\.testing\.|.*\.(assert_\w+)$", name
                    ) or name.startswith(("sys.", "builtins.", "IPython.", "demos.")):
                        reasons.append(f"assigns to {name}")
            elif isinstance(node, ast.Attribute) and _dotted(node) in ("sys.modules",):
                reasons.append("uses sys.modules")
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
    if re.search(r"demos\W{0,3}(simt|distance|demo_\w+|cnn|multigpu|benchmarks)", source):
        reasons.append("refers to the course package's own answers")
    return sorted(set(reasons))


def _expected(template_db: Path, assignment: str) -> tuple[dict[str, set[str]], dict[str, str]]:
    """Grade ids per notebook of *assignment*, and every other assignment's ids."""
    from nbgrader.api import Gradebook

    mine: dict[str, set[str]] = {}
    others: dict[str, str] = {}
    with Gradebook(f"sqlite:///{template_db}") as gb:
        for each in gb.assignments:
            for notebook in each.notebooks:
                ids = {c.name for c in notebook.grade_cells + notebook.solution_cells}
                if each.name == assignment:
                    mine[notebook.name] = ids
                else:
                    others.update(dict.fromkeys(ids, each.name))
    return mine, others


def check_submission(
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
    nb: nbformat.NotebookNode, name: str, expected: set[str], others: dict[str, str]
) -> list[str]:
    flags = []
    ids = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells} - {None}
    if ids and not ids & expected and ids & set(others):
        flags.append(f"{name} looks like assignment {others[next(iter(ids & set(others)))]}")
    gone = expected - ids
    if gone and not (not ids & expected and ids & set(others)):
        flags.append(f"missing grade ids {sorted(gone)}")
    for index, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader", {})
        restored = meta.get("grade_id") in expected and not meta.get("solution")
        if cell.cell_type != "code" or restored:
            continue  # nbgrader restores these from the source
        for reason in scan_code(cell.source):
            flags.append(f"cell {index + 1}: {reason}")
    return flags


def check_course(course: Path, assignment: str, students: list[str]) -> dict[str, list[str]]:
    """Flags for every student's submission (read-only: nothing is repaired)."""
    db = course / "gradebook.db"
    if not db.is_file():
        raise SystemExit(
            f"no gradebook in {course}: run 'nbgrader generate_assignment {assignment}' first"
        )
    return {
        s: check_submission(course / "submitted" / s / assignment, assignment, db) for s in students
    }
