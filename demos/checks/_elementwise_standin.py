"""A NumPy stand-in for a CuPy ``ElementwiseKernel``: chapter 3's kernel checked without a GPU.

CuPy pastes an elementwise kernel's *operation* string into a CUDA C++ loop
that runs it once per element of the broadcast inputs. For the small bodies the
chapter asks for (names, numbers, ``+ - * /``, parentheses, ``max``/``min``),
C and Python read the same, so this module parses the body with Python's
``ast`` and evaluates it with NumPy on whole arrays. Anything else (casts,
calls, C's missing ``**``) is refused with a sentence that says why, never
guessed at: a stand-in that accepted what CUDA rejects would teach the wrong
thing. The check reads the string this way on a GPU too, before CuPy compiles
it, so a kernel passes or fails alike with and without one.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from demos.checks._harness import CheckFailed

_PARAM = re.compile(r"^(\w+)\s+(\w+)$")
_STATEMENT = re.compile(
    r"^(?:(?P<type>\w+)\s+)?(?P<name>\w+)\s*(?P<op>[-+*/]?)=(?!=)\s*(?P<expr>.+)$"
)
_C_TYPES = {"float": np.float32, "double": np.float64, "int": np.int32, "long": np.int64}
_BINARY = {ast.Add: np.add, ast.Sub: np.subtract, ast.Mult: np.multiply, ast.Div: np.divide}
_CALLS = {"max": np.maximum, "min": np.minimum}
_ARITHMETIC = "names, numbers, + - * /, parentheses, max and min"


@dataclass(frozen=True)
class Param:
    """One declared parameter: its type word (``T``, ``float32``, ``double``) and name."""

    type: str
    name: str


def parse_params(text: str, what: str) -> list[Param]:
    """``"T a, T b"`` as a list of parameters, or CheckFailed saying which part is malformed."""
    params = []
    for part in text.split(","):
        match = _PARAM.match(part.strip())
        if not match:
            raise CheckFailed(
                f"{what}: cannot read {part.strip()!r}: each parameter is a type and a name, "
                "like 'T xy' (T: the type of the arrays passed in)."
            )
        params.append(Param(*match.groups()))
    return params


def _dtype(type_word: str, generic: np.dtype) -> np.dtype:
    if type_word == "T":
        return generic
    if type_word in _C_TYPES:
        return np.dtype(_C_TYPES[type_word])
    try:
        return np.dtype(type_word)
    except TypeError:
        raise CheckFailed(
            f"unknown type {type_word!r}: use T (the arrays' own type) or a NumPy name such as "
            "float32."
        ) from None


def _evaluate(node: ast.AST, values: dict[str, Any]) -> Any:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, values)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in values:
            raise CheckFailed(
                f"the operation uses {node.id!r}, which is neither a parameter nor set before."
            )
        return values[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_evaluate(node.left, values), _evaluate(node.right, values))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow | ast.BitXor):
        raise CheckFailed(
            "C has no power operator (`^` is bitwise XOR there, and `**` does not exist): "
            "write a product such as `xy * xy` instead."
        )
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _evaluate(node.operand, values)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS:
        return _CALLS[node.func.id](*(_evaluate(a, values) for a in node.args))
    raise CheckFailed(
        f"the check reads only {_ARITHMETIC}, not {ast.unparse(node)!r}; "
        "the distance matrix needs nothing more."
    )


def run(in_params: str, out_params: str, operation: str, *arrays: np.ndarray) -> np.ndarray:
    """What ``cupy.ElementwiseKernel(in_params, out_params, operation)(*arrays)`` returns, on
    NumPy arrays.

    The output starts as NaN: CuPy allocates it uninitialised, so an operation
    that reads it before setting it gets garbage there and NaN here.
    """
    inputs = parse_params(in_params, "in_params")
    outputs = parse_params(out_params, "out_params")
    if len(outputs) != 1:
        raise CheckFailed(f"out_params: declare one output, not {len(outputs)}.")
    if len(inputs) != len(arrays):
        raise CheckFailed(
            f"in_params: declare {len(arrays)} inputs (the arrays passed in, in that order), "
            f"not {len(inputs)}."
        )
    generic = next((a.dtype for p, a in zip(inputs, arrays, strict=True) if p.type == "T"), None)
    broadcast = np.broadcast_arrays(*arrays)
    values: dict[str, Any] = {
        p.name: b.astype(_dtype(p.type, generic), copy=False)
        for p, b in zip(inputs, broadcast, strict=True)
    }
    out = outputs[0]
    out_dtype = _dtype(out.type, generic)
    values[out.name] = np.full(broadcast[0].shape, np.nan, dtype=out_dtype)
    statements = [s.strip() for s in operation.split(";") if s.strip()]
    if not statements:
        raise CheckFailed(f"the operation is empty: write one C statement that sets {out.name}.")
    assigned = set()
    for statement in statements:
        match = _STATEMENT.match(statement)
        if not match:
            raise CheckFailed(
                f"cannot read the statement {statement!r}: write `{out.name} = <expression>`."
            )
        try:
            tree = ast.parse(match["expr"], mode="eval")
        except SyntaxError:
            raise CheckFailed(
                f"cannot read the expression {match['expr']!r}: the check takes {_ARITHMETIC}."
            ) from None
        value = _evaluate(tree, values)
        if match["op"]:
            value = _BINARY[{"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div}[match["op"]]](
                values[match["name"]], value
            )
        kind = match["type"]
        dtype = _dtype(kind, generic) if kind else getattr(values.get(match["name"]), "dtype", None)
        values[match["name"]] = np.asarray(value, dtype=dtype)
        assigned.add(match["name"])
    if out.name not in assigned:
        raise CheckFailed(f"the operation never sets the output {out.name!r}.")
    return np.array(np.broadcast_to(values[out.name], broadcast[0].shape), dtype=out_dtype)
