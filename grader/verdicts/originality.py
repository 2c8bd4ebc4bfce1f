"""Is a submitted function the course's own code, renamed? Compared by structure, not by text.

The course package (``demos``) ships model answers and reference kernels with
the course. A submission that copies one, even with other names, comments or
layout, is not the student's own work. :func:`fingerprint` reduces a function
to its structure (names numbered in order of first use, docstrings,
decorators and the function's own name dropped), and
:func:`matches_course_code` compares it with every function of ``demos``
that is large enough for a match to mean something.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import demos

#: Functions with fewer statements are too small to tell copying from solving.
MIN_STATEMENTS = 5


class _Renamer(ast.NodeTransformer):
    def __init__(self) -> None:
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(id=self._name(node.id), ctx=node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.copy_location(ast.arg(arg=self._name(node.arg)), node)


def _statements(function: ast.FunctionDef) -> int:
    return sum(isinstance(n, ast.stmt) for n in ast.walk(function)) - 1


def _fingerprint_of(function: ast.FunctionDef) -> str:
    body = list(function.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    clean = ast.FunctionDef(
        name="f", args=function.args, body=body, decorator_list=[], returns=None, type_params=[]
    )
    return ast.dump(_Renamer().visit(clean), annotate_fields=False, include_attributes=False)


def fingerprint(source: str) -> str | None:
    """The structure of the first function defined in *source*, or ``None`` if there is none."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    function = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), None)
    return _fingerprint_of(function) if function is not None else None


@functools.lru_cache(maxsize=1)
def course_fingerprints() -> frozenset[str]:
    """Fingerprints of every large enough function in the course package (model answers too)."""
    found = set()
    for path in Path(demos.__file__).parent.rglob("*.py"):
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and _statements(node) >= MIN_STATEMENTS:
                found.add(_fingerprint_of(node))
    return frozenset(found)


def matches_course_code(source: str) -> bool:
    """True if the function in *source* has the structure of one of the course's own."""
    mark = fingerprint(source)
    return mark is not None and mark in course_fingerprints()
