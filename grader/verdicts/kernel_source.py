"""A student's CUDA kernel, read from the notebook and proved to be nothing but a kernel.

The grader runs the kernels of a submission itself, in Numba's CUDA simulator
in a sandboxed process of its own (:mod:`.kernel_runner`), so that what a kernel
does (its result, every memory access, every barrier) is observed outside the
student's notebook. That observation means something only for code that is
nothing but a kernel: :func:`kernel_definition` accepts a function decorated with
``cuda.jit`` whose body uses the CUDA Python subset (arithmetic, indexing,
loops, ``cuda.*`` intrinsics, ``math.*``, Numba's scalar types, literal
constants and the student's own device functions) and refuses anything else
(imports, attribute access beyond those, dunder names, calls of other
objects), so executing it cannot touch anything outside its arrays.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from grader.verdicts.student_source import (
    definitions,
    dotted_name,
    is_cuda_jit,
    literal_constants,
)

#: ``cuda.<name>`` a kernel may use, with the attributes allowed below each.
CUDA_NAMES: dict[str, frozenset[str]] = {
    **dict.fromkeys(("threadIdx", "blockIdx", "blockDim", "gridDim"), frozenset("xyz")),
    "shared": frozenset({"array"}),
    "local": frozenset({"array"}),
    "const": frozenset({"array_like"}),
    "atomic": frozenset(
        {
            "add",
            "sub",
            "max",
            "min",
            "inc",
            "dec",
            "exch",
            "cas",
            "compare_and_swap",
            "and_",
            "or_",
            "xor",
            "nanmax",
            "nanmin",
        }
    ),
    **dict.fromkeys(
        (
            "grid",
            "gridsize",
            "syncthreads",
            "syncthreads_count",
            "syncthreads_and",
            "syncthreads_or",
            "syncwarp",
            "shfl_sync",
            "shfl_up_sync",
            "shfl_down_sync",
            "shfl_xor_sync",
            "all_sync",
            "any_sync",
            "eq_sync",
            "ballot_sync",
            "activemask",
            "lanemask_lt",
            "laneid",
            "warpsize",
            "threadfence",
            "threadfence_block",
            "threadfence_system",
            "selp",
            "fma",
            "popc",
            "clz",
            "ffs",
            "brev",
            "cbrt",
        ),
        frozenset(),
    ),
}
#: Scalar types a kernel may name or call (``float32(0)``), bare or as ``numba.``/``np.``.
TYPE_NAMES = frozenset(
    {
        "float16",
        "float32",
        "float64",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "boolean",
        "bool_",
        "complex64",
        "complex128",
        "intp",
    }
)
#: Built-in functions a kernel may call.
BUILTINS = frozenset({"range", "min", "max", "abs", "int", "float", "bool", "len", "round"})
#: Attributes a kernel may read of its own arrays.
ARRAY_ATTRIBUTES = frozenset({"shape", "size", "ndim"})
#: Module names a kernel may refer to.
MODULES = frozenset({"cuda", "math", "numba", "np", "numpy"})
#: Exceptions a kernel may raise (an unfinished one: ``raise NotImplementedError``).
EXCEPTIONS = frozenset(
    {"NotImplementedError", "ValueError", "IndexError", "RuntimeError", "AssertionError"}
)
#: Keyword arguments of ``cuda.jit`` that are kept (with literal values).
JIT_OPTIONS = frozenset({"device", "fastmath", "debug", "opt", "lineinfo", "cache", "inline"})

_NODES = (
    ast.arguments,
    ast.arg,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.For,
    ast.While,
    ast.If,
    ast.Break,
    ast.Continue,
    ast.Pass,
    ast.Return,
    ast.Raise,
    ast.Expr,
    ast.BoolOp,
    ast.BinOp,
    ast.UnaryOp,
    ast.Compare,
    ast.IfExp,
    ast.Call,
    ast.keyword,
    ast.Name,
    ast.Constant,
    ast.Subscript,
    ast.Slice,
    ast.Tuple,
    ast.Attribute,
    ast.Load,
    ast.Store,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
    ast.expr_context,
)


class NotAKernel(ValueError):
    """The definition is not one the grader can run as a kernel; the message says why."""


@dataclass
class KernelSource:
    """A kernel the grader may run: its name, checked source, device functions and constants."""

    name: str
    functions: dict[str, str] = field(
        default_factory=dict
    )  # name -> source, device functions first
    device: frozenset[str] = frozenset()
    constants: dict[str, int | float | bool] = field(default_factory=dict)

    def as_plain(self) -> dict:
        return {
            "name": self.name,
            "functions": self.functions,
            "device": sorted(self.device),
            "constants": self.constants,
        }


def _jit_options(decorator: ast.expr) -> dict[str, object] | None:
    """``cuda.jit`` options if *decorator* is ``cuda.jit``/``numba.cuda.jit`` (called or not)."""
    if not is_cuda_jit(decorator):
        return None
    call = decorator if isinstance(decorator, ast.Call) else None
    options: dict[str, object] = {}
    if call:
        for arg in call.args:  # a signature string: not needed by the simulator
            if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                raise NotAKernel("cuda.jit takes only a signature string here")
        for keyword in call.keywords:
            if keyword.arg not in JIT_OPTIONS or not isinstance(keyword.value, ast.Constant):
                raise NotAKernel(f"cuda.jit option {keyword.arg!r} is not supported by the grader")
            options[keyword.arg] = keyword.value.value
    return options


class _Checker:
    """Refuses every node, name and attribute outside the CUDA Python subset.

    :meth:`visit` is the only way down the tree and it visits every child of
    every node (:func:`ast.iter_child_nodes`), whatever the node: the
    ``check_<Node>`` methods only add restrictions to a node of their kind and
    cannot skip what lies below it. A node of a kind not in :data:`_NODES` is
    refused outright.
    """

    def __init__(self, function: ast.FunctionDef, known: set[str], reserved: set[str]) -> None:
        self.function = function
        self.known = known  # names the body may read besides its own locals
        self.reserved = reserved  # names the body may read but never rebind
        self.locals = {a.arg for a in function.args.args}
        self.calls: set[str] = set()
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                self.locals.add(node.id)

    def fail(self, node: ast.AST, what: str) -> None:
        line = getattr(node, "lineno", 0) - self.function.lineno + 1
        raise NotAKernel(f"{what} (line {line} of {self.function.name})")

    def visit(self, node: ast.AST, prefix: bool = False) -> None:
        """Check *node*, then every node below it (*prefix*: it is the base of an attribute)."""
        if not isinstance(node, _NODES):
            self.fail(node, f"{type(node).__name__} is not part of a CUDA kernel")
        check = getattr(self, f"check_{type(node).__name__}", None)
        if check is not None:
            check(node, prefix)
        for child in ast.iter_child_nodes(node):
            self.visit(child, prefix=isinstance(node, ast.Attribute) and child is node.value)

    def check_Name(self, node: ast.Name, prefix: bool) -> None:
        if node.id.startswith("__"):
            self.fail(node, f"the name {node.id} is not allowed")
        if isinstance(node.ctx, ast.Load) and node.id not in self.locals | self.known:
            self.fail(node, f"{node.id} is not defined for the kernel")
        if not isinstance(node.ctx, ast.Load) and node.id in self.reserved:
            self.fail(node, f"{node.id} may not be assigned in a kernel")

    def check_Constant(self, node: ast.Constant, prefix: bool) -> None:
        if not isinstance(node.value, (int, float, bool, complex, type(None), str)):
            self.fail(node, "only numbers may be constants")
        if isinstance(node.value, str) and len(node.value) > 2000:
            self.fail(node, "the string is too long")

    def _attribute_allowed(self, path: list[str], prefix: bool) -> bool:
        """Whether *path* (``cuda.threadIdx.x``) names something a kernel may use.

        A *prefix* (the ``numba.cuda`` of ``numba.cuda.threadIdx.x``) is allowed
        where it begins an allowed path.
        """
        head, rest = path[0], path[1:]
        if head == "numba" and rest[:1] == ["cuda"]:
            head, rest = "cuda", rest[1:]
            if not rest:
                return prefix
        if head == "cuda":
            if len(rest) == 1:
                return rest[0] in CUDA_NAMES
            return len(rest) == 2 and rest[1] in CUDA_NAMES.get(rest[0], frozenset())
        if head == "math":
            return len(rest) == 1
        if head in ("numba", "np", "numpy"):
            return len(rest) == 1 and rest[0] in TYPE_NAMES
        return len(rest) == 1 and rest[0] in ARRAY_ATTRIBUTES and head in self.locals

    def check_Attribute(self, node: ast.Attribute, prefix: bool) -> None:
        path = dotted_name(node)
        if path is None or any(p.startswith("_") for p in path):
            self.fail(node, "this attribute is not allowed in a kernel")
        assert path is not None
        if not self._attribute_allowed(path, prefix):
            self.fail(node, f"{'.'.join(path)} is not allowed in a kernel")
        if not isinstance(node.ctx, ast.Load):
            self.fail(node, "a kernel may not assign attributes")

    def check_Call(self, node: ast.Call, prefix: bool) -> None:
        path = dotted_name(node.func)
        if path is None:
            self.fail(node, "only named functions may be called in a kernel")
        assert path is not None
        if len(path) == 1:
            name = path[0]
            if name not in BUILTINS | TYPE_NAMES | EXCEPTIONS and name not in self.known:
                self.fail(node, f"{name}() cannot be called in a kernel")
            if name in self.known - (BUILTINS | TYPE_NAMES | EXCEPTIONS | MODULES):
                self.calls.add(name)
        for keyword in node.keywords:
            if keyword.arg is None or keyword.arg.startswith("_"):
                self.fail(node, "this keyword argument is not allowed")

    def check_Raise(self, node: ast.Raise, prefix: bool) -> None:
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        call = node.exc if isinstance(node.exc, ast.Call) else None
        if node.cause is not None or not (isinstance(exc, ast.Name) and exc.id in EXCEPTIONS):
            self.fail(node, "a kernel may only raise a built-in error such as NotImplementedError")
        if call is not None and (
            call.keywords
            or not all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args)
        ):
            self.fail(node, "a kernel's error message must be a plain string")

    def check_For(self, node: ast.For, prefix: bool) -> None:
        if node.orelse:
            self.fail(node, "for ... else is not allowed in a kernel")

    def check_While(self, node: ast.While, prefix: bool) -> None:
        if node.orelse:
            self.fail(node, "while ... else is not allowed in a kernel")


def _check_signature(function: ast.FunctionDef) -> None:
    args = function.args
    if args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs or args.defaults:
        raise NotAKernel(f"{function.name} must take plain positional arguments only")
    if function.returns is not None or any(a.annotation is not None for a in args.args):
        # annotations are evaluated when the function is defined: keep them out
        raise NotAKernel(f"{function.name} must not have annotations")


def _check_argument_names(function: ast.FunctionDef, reserved: set[str]) -> None:
    """Arguments may not shadow a module, a type, a built-in or a device function."""
    for arg in function.args.args:
        if arg.arg in reserved or arg.arg.startswith("__"):
            raise NotAKernel(f"{function.name}'s argument {arg.arg} hides a name kernels use")


def _plain_source(function: ast.FunctionDef, device: bool) -> str:
    """The function's source with its decorator made canonical (the checked body unchanged)."""
    clean = ast.FunctionDef(
        name=function.name,
        args=function.args,
        body=function.body,
        decorator_list=[],
        returns=None,
        type_params=[],
        lineno=function.lineno,
        col_offset=0,
    )
    decorator = "@cuda.jit(device=True)\n" if device else "@cuda.jit\n"
    return decorator + ast.unparse(ast.fix_missing_locations(clean))


def kernel_definition(
    name: str,
    student_sources: list[str],
    given_sources: list[str] = (),  # type: ignore[assignment]
) -> KernelSource:
    """The kernel *name* as the student last defined it, checked; :class:`NotAKernel` if not one.

    *student_sources* are the student's cells before the test, in order;
    *given_sources* the cells the assignment gives (their literal constants, such
    as a block size, may be used by the kernel).
    """
    defined = definitions(student_sources)
    constants = literal_constants([*given_sources, *student_sources])
    if name not in defined:
        raise NotAKernel(f"{name} is not defined with def in your answer cells")
    result = KernelSource(name=name, constants=constants)
    device: set[str] = set()
    pending, seen = [name], set()
    order: list[tuple[str, str]] = []
    while pending:
        current = pending.pop()
        if current in seen:
            continue
        seen.add(current)
        function = defined.get(current)
        if function is None:
            raise NotAKernel(f"{current} is not defined with def in your answer cells")
        options = None
        for decorator in function.decorator_list:
            options = _jit_options(decorator)
        if len(function.decorator_list) != 1 or options is None:
            raise NotAKernel(f"{current} must be decorated with @cuda.jit and nothing else")
        is_device = bool(options.get("device"))
        if current == name and is_device:
            raise NotAKernel(f"{name} is a device function, not a kernel")
        if current != name and not is_device:
            raise NotAKernel(f"{current} is called from a kernel, so it must be a device function")
        _check_signature(function)
        others = set(defined) - {name}
        reserved = set(MODULES | TYPE_NAMES | BUILTINS | EXCEPTIONS | set(constants)) | others
        _check_argument_names(function, reserved)
        checker = _Checker(function, reserved, reserved)
        for statement in function.body:
            checker.visit(statement)
        if is_device:
            device.add(current)
        order.append((current, _plain_source(function, is_device)))
        pending.extend(sorted(checker.calls - seen))
    result.functions = dict(reversed(order))
    result.device = frozenset(device)
    return result
