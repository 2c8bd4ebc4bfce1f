"""Which submissions the grader can believe about *how* they got their answers.

The "how" half of a hidden test (the kernels a call launched, the course
functions and forbidden functions it ran, the counting module's syncs, the
devices' log) is recorded inside the student's kernel, by code living in the
same process as the student's. Python gives that code many ways to reach the
recorder: define ``__import__`` and receive the grader's requests, walk
``__dict__``/``__globals__``/frames, read a private attribute, patch a module,
reach ``sys.modules``. This gate reads every cell the student wrote before a
test (parsing only: nothing is executed) and refuses any source that uses one
of those ways. Honest answers to the course's assignments use none of them;
a refused submission is not scored but flagged for a human.

The rules (each refusal names the first offending line):

* no other dunder name anywhere: no ``__import__``, ``__builtins__``, ``__class__``,
  ``__dict__``, ``__globals__``, no ``__getattr__`` or ``__init__`` defined,
  not even in a string (``operator.attrgetter("__class__")``);
* no private attribute (``x._name``), no private name imported;
* no computed attributes or namespaces: ``getattr``/``hasattr`` only with a
  literal public name; ``setattr``, ``delattr``, ``globals``, ``locals``,
  ``vars``, ``dir``, ``super`` not at all; ``type(x)`` only without ``.mro()``
  (a method called through the class the grader handed over still records);
* no dynamic code: ``eval``, ``exec``, ``compile``, ``breakpoint``,
  ``get_ipython`` (IPython's own line and cell magics ``%time``/``%timeit``
  are read as the code they time; ``%matplotlib`` is allowed);
* ``sys`` only as ``sys.stderr`` and the like (:data:`SYS_ATTRIBUTES`);
* imports only from :data:`ALLOWED_MODULES` or of modules that are not
  installed at all (that import fails in the kernel too) (so no ``inspect``,
  ``gc``, ``ctypes``, ``builtins``, ``types``, ``importlib``, ``os``,
  ``subprocess``, ``threading``, ``operator``, ``pickle``, ``timeit``, whose
  strings are code...), and from ``demos.grading`` only what the visible
  tests use (:data:`GRADING_IMPORTS`), never the answering side;
* dunders that only name things (``xp.__name__``, ``np.__version__``) may
  be read, never bound;
* no attribute of :data:`DENIED_ATTRIBUTES` (frames, raw memory, drivers,
  strings run as code), no ``hash``/``id`` (addresses);
* no attribute assigned or deleted anywhere (``np.sum = ...``,
  ``xp.counter = ...``, ``self.x = ...``): a name may stand for a module or a
  course object, and the source cannot tell which, so none is written to;
* items are assigned only through a plain name (``out[i] = v``,
  ``d[k][j] = v``), never through an attribute (``devs[0].received[:] = []``);
* no builtin name rebound at the notebook's top level or through ``global``.

A cell that does not parse (after IPython's own transformations) runs nothing
in the kernel either, so it is skipped.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass

#: Top-level packages a student's cell may import (submodules too, unless denied below).
ALLOWED_MODULES = frozenset(
    """
    __future__ bisect cmath collections copy cupy cupyx dataclasses decimal demos
    fractions functools heapq itertools keras math matplotlib numba numpy random
    statistics tensorflow time typing warnings
    """.split()
)

#: Names that are refused wherever they appear (reflection, dynamic code, the kernel's shell).
DENIED_NAMES = frozenset(
    """
    breakpoint compile delattr dir eval exec get_ipython globals hash id locals setattr
    super vars
    """.split()
)

#: Callables allowed only as ``f(obj, "public_name")`` with a literal name.
LITERAL_NAME_CALLS = frozenset({"getattr", "hasattr"})

#: Attribute (and module) names refused anywhere: frames, raw memory, drivers, the answering
#: side, the devices' own classes (their methods called unbound would skip the grader's log).
DENIED_ATTRIBUTES = frozenset(
    """
    ag_frame as_strided byte_bounds carray cffi_support cfunc core cr_frame ctypes
    ctypeslib cudadrv driver enable_unsafe_deserialization extending f2py f_back
    f_builtins f_code f_globals f_locals farray from_address func_globals
    get_type_hints gi_code gi_frame gi_yieldfrom GpuDevice grading intrinsic
    llvmlite load_library load_op_library make_dataclass MemoryPointer modules
    monitoring mro os runtime serve setprofile settrace SimulatedDevice
    stride_tricks sys tb_frame tb_next UnownedMemory unsafe wire
    """.split()
)

#: What a student's cell may import from ``demos.grading`` and its modules (what the visible
#: tests use), by the module it imports from; never the answering side.
GRADING_IMPORTS = {
    "demos": frozenset({"grading"}),
    "demos.grading": frozenset(
        """
        DeviceLog GradingFailure GuardedOutput Launch SIMULATED_DEVICE_COUNT Watched
        array_module assert_close assert_equal device_array_module
        devices expect get_array_module is_course_code is_course_kernel
        reference_distances rng seed_for to_numpy uses_course_code watch
        """.split()
    ),
    "demos.grading.compaction": frozenset(
        "compact_report compacted count_report exclusive_offsets expected_counts readings".split()
    ),
}

#: Dunder names that only name things (a module's name, its version): read, never bound.
READABLE_DUNDERS = frozenset({"__doc__", "__main__", "__name__", "__version__"})

#: What ``sys`` may be used for (``print(..., file=sys.stderr)``): ``import sys`` is allowed
#: when every use of the name is one of these, so ``sys.modules`` and the profile hooks are not.
SYS_ATTRIBUTES = frozenset(
    """
    byteorder float_info getsizeof hexversion int_info maxsize platform stderr stdout
    version version_info
    """.split()
)

#: Keyword arguments refused in any call (``np.load(..., allow_pickle=True)`` runs a pickle).
DENIED_KEYWORDS = frozenset({"allow_pickle"})

#: IPython magics whose arguments are read as code (the code is checked like the cell's).
CODE_MAGICS = frozenset({"time", "timeit"})
#: IPython magics that run no code of the student's.
HARMLESS_MAGICS = frozenset({"matplotlib"})

_DUNDER_IN_TEXT = re.compile(r"\b__\w+__\b")
_BUILTIN_NAMES = frozenset(dir(builtins))
_MAGIC_CALLS = ("run_line_magic", "run_cell_magic")
_TIMEIT_OPTION = re.compile(r"^\s*(-[a-zA-Z]+(\s+[-\w.]+)?\s+)*")


@dataclass(frozen=True)
class Refusal:
    """Why the gate refused: the student's cell (1-based among theirs), its line, a reason."""

    cell: int
    line: int
    reason: str

    def __str__(self) -> str:
        return f"your cell {self.cell}, line {self.line}: {self.reason}"


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def is_private(name: str) -> bool:
    """``_name`` or ``__name`` (a dunder too); the bare ``_`` is a throw-away name, not private."""
    return name.startswith("_") and name != "_"


def _ipython_source(source: str) -> str:
    """The cell as IPython runs it (magics become ``get_ipython()`` calls)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - the grader has IPython (nbclient needs it)
        return source
    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # noqa: BLE001  (IPython could not transform it: read it as written)
        return source


def _parse(source: str) -> ast.Module | None:
    flags = ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    try:
        return compile(source, "<cell>", "exec", flags=flags, dont_inherit=True)
    except (SyntaxError, ValueError):
        return None


def refusals(sources: list[str]) -> list[Refusal]:
    """Every reason to distrust the cells in *sources* (the student's own, in order)."""
    found: list[Refusal] = []
    for number, source in enumerate(sources, start=1):
        tree = _parse(_ipython_source(source))
        if tree is not None:
            found += [Refusal(number, line, reason) for line, reason in _check_tree(tree)]
    return found


def first_refusal(sources: list[str]) -> Refusal | None:
    """The first reason to distrust *sources*, or ``None`` if the gate lets them through."""
    return _first_refusal(tuple(sources))


@functools.lru_cache(maxsize=32)  # every test cell of a notebook asks about the same cells
def _first_refusal(sources: tuple[str, ...]) -> Refusal | None:
    found = refusals(list(sources))
    return found[0] if found else None


def _magic_code(call: ast.Call) -> list[str] | None:
    """The code a ``get_ipython().run_*_magic(...)`` call runs, ``[]`` for a harmless magic,
    ``None`` for any other use of ``get_ipython``."""
    func = call.func
    if not (
        isinstance(func, ast.Attribute)
        and func.attr in _MAGIC_CALLS
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "get_ipython"
        and not func.value.args
        and not func.value.keywords
        and not call.keywords
        and call.args
        and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in call.args)
    ):
        return None
    name, *rest = [a.value for a in call.args]  # type: ignore[attr-defined]
    if name in HARMLESS_MAGICS:
        return []
    if name not in CODE_MAGICS:
        return None
    # a line magic: "[options] statement"; a cell magic: "[options] [setup]" and the cell
    return [_TIMEIT_OPTION.sub("", part, count=1) for part in rest]


def _check_tree(tree: ast.Module) -> Iterator[tuple[int, str]]:
    exempt: set[int] = set()
    for node in ast.walk(tree):
        if id(node) in exempt:
            continue
        line = getattr(node, "lineno", 1)
        if isinstance(node, ast.Call):
            code = _magic_code(node)
            if code is not None:
                exempt |= {id(n) for n in ast.walk(node)}
                for part in code:
                    inner = _parse(part)
                    if inner is None:
                        yield line, "a magic's code cannot be read"
                    else:
                        yield from ((line, reason) for _, reason in _check_tree(inner))
                continue
            if (
                isinstance(node.func, ast.Name)
                and node.func.id == "type"
                and (len(node.args) != 1 or node.keywords)
            ):
                yield line, "type() making a class (its methods' names could be computed)"
            if isinstance(node.func, ast.Name) and node.func.id in LITERAL_NAME_CALLS:
                reason = _literal_name_call(node)
                if reason:
                    yield line, reason
                exempt.add(id(node.func))
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
            and node.attr in SYS_ATTRIBUTES
        ):
            exempt.add(id(node.value))  # the attribute itself is checked as any other
        elif isinstance(node, ast.Name) and node.id == "sys":
            yield line, "uses sys other than sys.stdout, sys.stderr and the like"
            continue
        yield from ((line, reason) for reason in _node_reasons(node))
    yield from _top_level_rebinding(tree)


def _literal_name_call(call: ast.Call) -> str | None:
    what = f"{call.func.id}()"  # type: ignore[attr-defined]
    if len(call.args) < 2 or call.keywords or any(isinstance(a, ast.Starred) for a in call.args):
        return f"{what} without a literal attribute name"
    name = call.args[1]
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        return f"{what} with a computed attribute name"
    if not name.value.isidentifier() or is_private(name.value):
        return f"{what} of the private attribute {name.value!r}"
    if name.value in DENIED_ATTRIBUTES:
        return f"{what} of {name.value!r}"
    return None


def _identifiers(node: ast.AST) -> Iterator[str]:
    """Every identifier a node itself holds (names, attributes, arguments, imports, keywords)."""
    for field, value in ast.iter_fields(node):
        if isinstance(node, ast.Constant) or field == "type_comment":
            continue
        values = value if isinstance(value, list) else [value]
        yield from (v for v in values if isinstance(v, str))


def _node_reasons(node: ast.AST) -> Iterator[str]:
    readable = READABLE_DUNDERS if isinstance(getattr(node, "ctx", None), ast.Load) else set()
    for name in _identifiers(node):
        for part in name.split("."):
            if is_dunder(part) and part != "__future__" and part not in readable:
                yield f"uses the dunder name {part}"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if set(_DUNDER_IN_TEXT.findall(node.value)) - READABLE_DUNDERS:
            yield "a string names a dunder attribute"
    elif isinstance(node, ast.Name):
        if node.id in DENIED_NAMES or node.id in LITERAL_NAME_CALLS:
            yield f"uses {node.id}, which the grader cannot follow"
    elif isinstance(node, ast.Attribute):
        yield from _attribute_reasons(node)
    elif isinstance(node, ast.Subscript) and not isinstance(node.ctx, ast.Load):
        base = node.value
        while isinstance(base, ast.Subscript):
            base = base.value
        if not isinstance(base, ast.Name):
            yield "assigns an item of an attribute (only a plain name's items may be assigned)"
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        yield from _import_reasons(node)
    elif isinstance(node, ast.keyword) and node.arg in DENIED_KEYWORDS:
        yield f"passes {node.arg}"
    elif isinstance(node, ast.MatchClass):
        yield "matches a class pattern (it reads attributes by name)"


def _attribute_reasons(node: ast.Attribute) -> Iterator[str]:
    if is_private(node.attr) and not is_dunder(node.attr):
        yield f"reads the private attribute .{node.attr}"
    if node.attr in DENIED_ATTRIBUTES:
        yield f"uses .{node.attr}, which the grader cannot follow"
    if not isinstance(node.ctx, ast.Load):
        yield f"assigns or deletes the attribute .{node.attr} (no attribute may be written)"


@functools.cache
def _installed(module: str) -> bool:
    """Whether *module* can be imported here (the kernel has the grader's environment)."""
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _import_reasons(node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    if isinstance(node, ast.ImportFrom):
        if node.level:
            yield "a relative import"
            return
        paths = [f"{node.module}.{a.name}" if a.name != "*" else node.module for a in node.names]
    else:
        paths = [a.name for a in node.names]
        if any(a.name == "sys" and a.asname not in (None, "sys") for a in node.names):
            yield "imports sys under another name"
    for path in paths:
        parts = (path or "").split(".")
        if parts[:2] == ["demos", "grading"] and isinstance(node, ast.ImportFrom):
            if parts[-1] not in GRADING_IMPORTS.get(".".join(parts[:-1]), ()):
                yield f"imports {path}, which the grader cannot follow"
            continue
        if path == "sys" or (parts[0] == "sys" and len(parts) == 2 and parts[1] in SYS_ATTRIBUTES):
            continue  # the name sys is checked where it is used
        if parts[0] not in ALLOWED_MODULES:
            if not _installed(parts[0]):
                continue  # it fails in the kernel as here: the student's error, no way in
            yield f"imports {path}, which the grader cannot follow"
        elif any(is_private(p) and p != "__future__" for p in parts):
            yield f"imports the private {path}"
        elif any(p in DENIED_ATTRIBUTES for p in parts):
            yield f"imports {path}, which the grader cannot follow"


def _module_scope(tree: ast.Module) -> Iterator[ast.AST]:
    """The nodes evaluated in the notebook's own namespace (not inside a function or class)."""
    stack: list[ast.AST] = list(tree.body)
    scopes = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, scopes):
            stack += node.decorator_list if not isinstance(node, ast.Lambda) else []
            continue
        stack += list(ast.iter_child_nodes(node))


def _top_level_rebinding(tree: ast.Module) -> Iterator[tuple[int, str]]:
    for node in _module_scope(tree):
        bound: list[str] = []
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound = [node.id]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = [node.name]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound = [(a.asname or a.name).split(".")[0] for a in node.names]
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound = [node.name]
        for name in bound:
            if name in _BUILTIN_NAMES:
                yield getattr(node, "lineno", 1), f"rebinds the builtin name {name}"
    for node in ast.walk(tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                if name in _BUILTIN_NAMES:
                    yield node.lineno, f"rebinds the builtin name {name} (global)"
