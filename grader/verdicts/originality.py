"""Is a submitted function the course's own code, edited to look new? Compared by fingerprints.

The course package (``demos``) ships model answers and reference kernels with
the course. A submission that copies one is not the student's own work, even
with other names, comments or layout, with statements swapped or with no-op
statements put in. :func:`fingerprint` reduces a function to its winnowed
token fingerprints (:mod:`grader.verdicts.fingerprints`: names and literals
normalised, comments, docstrings and layout dropped), and
:func:`matches_course_code` compares them with those of every function of
``demos`` that is large enough for a match to mean something.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import demos
from grader.verdicts import fingerprints as fp

#: Functions with fewer statements are too small to tell copying from solving.
MIN_STATEMENTS = 5

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _statements(function: Function) -> int:
    return sum(isinstance(n, ast.stmt) for n in ast.walk(function)) - 1


def _body(function: Function) -> str:
    """The function's statements, unparsed, without its signature and docstring.

    Only the body counts: a signature given by the assignment (a stub that only
    raises ``NotImplementedError``, with the release's annotations) is not the
    student's work either way. Unparsing writes both sides the same way (the
    grader's proxies hand in unparsed code too): no comments, one layout,
    tuples in parentheses.
    """
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return "\n".join(ast.unparse(statement) for statement in body)


def _first_function(source: str) -> Function | None:
    """The first function defined in *source* (none if *source* does not parse)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    return next((node for node in ast.walk(tree) if isinstance(node, Function)), None)


def fingerprint(source: str) -> frozenset[int] | None:
    """The fingerprints of the first function in *source*, or ``None`` if there is none or it
    is too small (fewer than :data:`MIN_STATEMENTS`) to tell copying from solving.

    The function's own name, its signature, its docstring and the names it uses
    do not count, so a renamed copy has the fingerprint of its original.
    """
    function = _first_function(source)
    if function is None or _statements(function) < MIN_STATEMENTS:
        return None
    return fp.hashes(fp.fingerprints(_body(function)))


@functools.lru_cache(maxsize=1)
def course_fingerprints() -> tuple[frozenset[int], ...]:
    """Fingerprints of every large enough function in the course package (model answers too)."""
    found = set()
    for path in sorted(Path(demos.__file__).parent.rglob("*.py")):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, Function) and _statements(node) >= MIN_STATEMENTS:
                marks = fp.hashes(fp.fingerprints(_body(node)))
                if len(marks) >= fp.MIN_FINGERPRINTS:
                    found.add(marks)
    return tuple(found)


def closest_course_similarity(source: str) -> float:
    """The highest fingerprint similarity of the function in *source* with a course function."""
    mine = fingerprint(source)
    if mine is None or len(mine) < fp.MIN_FINGERPRINTS:
        return 0.0
    return max((fp.similarity(mine, theirs) for theirs in course_fingerprints()), default=0.0)


def matches_course_code(source: str) -> bool:
    """True if the function in *source* is, by its fingerprints, one of the course's own."""
    return closest_course_similarity(source) >= fp.THRESHOLD
