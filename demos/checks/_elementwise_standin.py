"""A NumPy stand-in for a CuPy ``ElementwiseKernel``: chapter 3's kernel checked without a GPU.

CuPy pastes an elementwise kernel's *operation* string into a CUDA C++ loop
that runs it once per element of the broadcast inputs. For the small bodies the
chapter asks for (names, numbers, ``+ - * /``, parentheses, ``max``/``min``),
C and Python read the same, so this module parses the body with Python's
``ast`` and evaluates it with NumPy on whole arrays; C's casts (``(T)0``),
number suffixes (``0.5f``) and a few maths functions (``fma``, ``fmax``,
``fabs``, ``sqrt``) are translated first, and a call CUDA finds ambiguous
(``max(x, 0)``, ``fmax`` of a float and a double) is refused as CUDA 13 refuses
it. Anything else (other calls, C's missing ``**``) is refused with a sentence
that says why, never guessed at: a stand-in that accepted what CUDA rejects
would teach the wrong thing. The check reads the string this way on a GPU too, before CuPy compiles
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
_CALLS = {
    "max": np.maximum,
    "min": np.minimum,
    "fmax": np.fmax,
    "fmin": np.fmin,
    "fmaxf": np.fmax,
    "fminf": np.fmin,
    "fabs": np.abs,
    "fabsf": np.abs,
    "abs": np.abs,
    "sqrt": np.sqrt,
    "sqrtf": np.sqrt,
}
_FMA = ("fma", "fmaf")  # fma(a, b, c) = a * b + c, rounded once (NumPy rounds twice: close enough)
_ARITHMETIC = "names, numbers, + - * /, parentheses, casts such as (T)0, max, min and fma"
_CAST = "__cast_"  # (T)x is read as __cast_T(x): Python has no casts
_NUMBER_SUFFIX = re.compile(r"(?<![\w.])((?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)[fF]\b")
_CAST_OPEN = re.compile(r"\(\s*(?:const\s+)?(\w+)\s*\)\s*(?=[\w.(+-])")


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


def _operand_end(text: str, start: int) -> int:
    """Where the operand of a cast that begins at *start* ends: signs, then a number, a name (a
    call's parentheses included) or a parenthesised expression, as C's cast binds."""
    i = start
    while i < len(text) and text[i] in " +-":
        i += 1
    if i < len(text) and text[i] == "(":
        depth = 0
        for j in range(i, len(text)):
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            if depth == 0:
                return j + 1
        return len(text)
    match = re.compile(r"[\w.]+(?:[eE][-+]?\d+)?").match(text, i)
    end = match.end() if match else i
    rest = text[end:].lstrip()
    if match and rest.startswith("("):  # a call such as (T)max(a, b)
        return _operand_end(text, end + len(text[end:]) - len(rest))
    return end


def c_to_python(expression: str) -> str:
    """A C expression in Python's syntax: casts such as ``(T)0`` or ``(double)x``, and float
    constants (``0.5f``, a cast to float), turned into calls (``__cast_T(0)``) that
    :func:`_evaluate` reads."""
    text = _NUMBER_SUFFIX.sub(rf"{_CAST}float(\1)", expression)
    while True:
        match = next(
            (
                m
                for m in _CAST_OPEN.finditer(text)
                if m.group(1) == "T"
                or m.group(1) in _C_TYPES
                or m.group(1) in ("float32", "float64", "int32", "int64", "unsigned")
            ),
            None,
        )
        if match is None:
            return text
        end = _operand_end(text, match.end())
        text = (
            f"{text[: match.start()]}{_CAST}{match.group(1)}({text[match.end() : end]}){text[end:]}"
        )


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
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        name, args = node.func.id, node.args
        if name.startswith(_CAST) and len(args) == 1:
            dtype = _dtype(name[len(_CAST) :], values["__generic__"])
            return np.asarray(_evaluate(args[0], values)).astype(dtype)
        if name in _FMA and len(args) == 3:
            a, b, c = _overload(name, [_evaluate(arg, values) for arg in args])
            return np.add(np.multiply(a, b), c)
        if name in _CALLS:
            return _CALLS[name](*_overload(name, [_evaluate(a, values) for a in args]))
    raise CheckFailed(
        f"the check reads only {_ARITHMETIC}, not {ast.unparse(node)!r}; "
        "the distance matrix needs nothing more."
    )


def _c_type(value: Any) -> str:
    """The C type of a value as CUDA sees it: a Python int is an int constant, a Python float a
    double one (``0.5f`` arrives as a float32 array)."""
    if isinstance(value, bool | int):
        return "int"
    if isinstance(value, float):
        return "double"
    kind = np.asarray(value).dtype
    return "int" if kind.kind in "iu" else "float" if kind == np.float32 else "double"


def _overload(name: str, args: list[Any]) -> list[Any]:
    """*args*, unless CUDA finds no single overload of *name* for their types (seen with
    CUDA 13): ``max``/``min`` of an int and a floating value, ``fmax``/``fmin``/``fma`` of a
    float and a double."""
    kinds = {_c_type(a) for a in args}
    call = f"{name}({', '.join(_c_type(a) for a in args)})"
    if name in ("max", "min") and "int" in kinds and kinds - {"int"}:
        raise CheckFailed(
            f"CUDA has no {name} of an int and a floating-point value, so it refuses "
            f"{call}: write the constant as (T)0 (the arrays' type) or 0.0."
        )
    if name in ("fmax", "fmin", "fma") and {"float", "double"} <= kinds:
        raise CheckFailed(
            f"CUDA's {name} has a float and a double version, and with a float and a double "
            f"argument both match, so it refuses {call}: write constants as (T)0, the "
            "arrays' type, so that one kernel serves float32 and float64."
        )
    return args


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
    values["__generic__"] = generic if generic is not None else out_dtype
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
            tree = ast.parse(c_to_python(match["expr"]), mode="eval")
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
