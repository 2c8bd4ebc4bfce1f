"""What a student's cells define, read from their source (never run).

The grader decides what stands for each name in a hidden test from the
notebook's cells as written: which names the student bound, which of them are
CUDA kernels, which literal constants (a block size) the cells set, and what a
function's body refers to. Nothing here executes a line of the student's code.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator


def _statements(sources: list[str]) -> Iterator[ast.stmt]:
    """The top-level statements of the cells in *sources*, in order; a cell that does not
    parse gives none."""
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        yield from tree.body


def dotted_name(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; ``None`` unless *node* is a name or names' attributes."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    return [node.id, *parts] if isinstance(node, ast.Name) else None


def is_cuda_jit(decorator: ast.expr) -> bool:
    """True for ``@cuda.jit``/``@numba.cuda.jit``, called or not."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return dotted_name(target) in (["cuda", "jit"], ["numba", "cuda", "jit"])


def literal_constants(sources: list[str]) -> dict[str, int | float | bool]:
    """Top-level ``NAME = <number>`` assignments of *sources* (cells), the last one winning."""
    found: dict[str, int | float | bool] = {}
    for node in _statements(sources):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                try:
                    value = ast.literal_eval(node.value)
                except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                    found.pop(target.id, None)
                    continue
                if type(value) in (int, float, bool):
                    found[target.id] = value
                else:
                    found.pop(target.id, None)
    return found


def definitions(sources: list[str]) -> dict[str, ast.FunctionDef]:
    """The last top-level ``def`` of each name in *sources* (cells in order)."""
    found: dict[str, ast.FunctionDef] = {}
    for node in _statements(sources):
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        found.pop(name.id, None)  # rebound to something else
    return found


def is_kernel_definition(name: str, sources: list[str]) -> bool:
    """True if the last top-level definition of *name* in *sources* is decorated ``cuda.jit``."""
    node = definitions(sources).get(name)
    if node is None:
        return False
    return any(is_cuda_jit(d) for d in node.decorator_list)


def defined_names(sources: list[str]) -> set[str]:
    """Names the cells bind at top level (functions, classes, assignments, imports)."""
    names: set[str] = set()
    for node in _statements(sources):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def reads_name(sources: list[str], function: str, name: str) -> bool:
    """True if the last top-level ``def function`` in *sources* reads the global *name*."""
    found = None
    for node in _statements(sources):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            found = node
    return found is not None and any(
        isinstance(n, ast.Name) and n.id == name for n in ast.walk(found)
    )
