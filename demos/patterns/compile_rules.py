"""What a GPU refuses to compile although the simulator runs it: array sizes computed in a kernel.

Numba's CUDA simulator runs a kernel as Python, so ``cuda.shared.array(BLOCK + 2 * RADIUS,
float32)`` simply evaluates the sum. The compiler for a real GPU needs the size of a shared
or local array as a constant it can read without running anything: a number, a module
constant (``TILE``), a tuple of those, or arithmetic on numbers alone (``2 * 64``, which
it folds). A sum of constants, ``BLOCK + 2 * RADIUS``, or ``x.shape[0]`` is a value computed
at run time, and the kernel fails to compile there ("No implementation of function
... shared.array ... found for signature array(int64, ...)"). The checks ask this module
first, so a kernel that passes on a laptop also compiles on the cluster's GPU.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

ARRAY_MAKERS = ("shared", "local")  # cuda.shared.array(...), cuda.local.array(...)


def _is_literal_arithmetic(node: ast.expr) -> bool:
    """``2 * 64``: numbers only, which the compiler folds (a global in the sum it does not)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):
        return _is_literal_arithmetic(node.left) and _is_literal_arithmetic(node.right)
    return False


def _is_constant(node: ast.expr, names: dict[str, Any]) -> bool:
    if isinstance(node, ast.BinOp):
        return _is_literal_arithmetic(node)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int) and not isinstance(node.value, bool)
    if isinstance(node, ast.Name):
        value = names.get(node.id)
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(node, ast.Tuple):
        return all(_is_constant(element, names) for element in node.elts)
    return False


def _constant_names(fn: Any) -> dict[str, Any]:
    """The module constants and closure values the kernel's source can name."""
    names = dict(getattr(fn, "__globals__", {}))
    closure = getattr(fn, "__closure__", None) or ()
    for name, cell in zip(fn.__code__.co_freevars, closure, strict=False):
        try:
            names[name] = cell.cell_contents
        except ValueError:  # an empty cell: not a constant
            continue
    return names


def computed_array_sizes(fn: Any) -> list[str]:
    """The size expressions of ``cuda.shared.array`` / ``cuda.local.array`` calls in *fn* that
    a GPU compiler cannot read as constants (source text, in order); [] when all are fine or
    the source cannot be read (then the GPU's own compiler is the judge)."""
    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return []
    names = _constant_names(fn)
    local_names = set(fn.__code__.co_varnames)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        maker = node.func.value
        if node.func.attr != "array" or not (
            isinstance(maker, ast.Attribute) and maker.attr in ARRAY_MAKERS
        ):
            continue
        size = (
            node.args[0]
            if node.args
            else next((k.value for k in node.keywords if k.arg == "shape"), None)
        )
        if size is None:
            continue
        shadowed = any(isinstance(n, ast.Name) and n.id in local_names for n in ast.walk(size))
        if shadowed or not _is_constant(size, names):
            found.append(ast.unparse(size))
    return found


def computed_size_advice(sizes: list[str]) -> str:
    """One sentence for a student whose kernel computes an array size."""
    listed = ", ".join(f"`{s}`" for s in sizes)
    return (
        f"the size of a shared or local array is computed in the kernel ({listed}): the "
        "simulator accepts that, but a GPU compiles it only from a number or a module "
        "constant. Define the size once outside the kernel (e.g. `TILE = BLOCK + 2 * RADIUS`) "
        "and write `cuda.shared.array(TILE, float32)`."
    )
