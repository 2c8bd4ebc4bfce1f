"""``grader/`` as subsystems: its packages, and no import circle at all, read with ``ast``.

Every import counts here, also those made only for type checkers (``if
TYPE_CHECKING:``) and those inside functions: a settings record imported "only
for its type" still ties two modules together, so it lives in the module that
owns it (:mod:`grader.run.settings`, :mod:`grader.sandbox.policy`) and no import
closes a circle, between modules or between the subsystem packages.
"""

from __future__ import annotations

import ast
from pathlib import Path

from helpers import ROOT, import_cycle

GRADER = ROOT / "grader"

#: The subsystems, each a package with one job (its docstring says which).
PACKAGES = {"integration", "intake", "run", "sandbox", "trials", "verdicts"}
#: The only modules at the top: the package itself and ``python -m grader``.
TOP_MODULES = {"__init__", "__main__"}


def _name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in sorted(GRADER.rglob("*.py")) if "__pycache__" not in p.parts}


def _ours(name: str) -> str:
    """The module of grader that importing *name* runs last (``grader.run.batch.Batch`` ->
    ``grader.run.batch``); "" for anything else."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports(name: str) -> set[str]:
    """Every module of grader that *name* imports anywhere: at the top, in functions, for
    type checkers (relative imports resolved)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            # a submodule by its package (``from grader.sandbox import box``) or a name of a module
            found.update(
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            )
    return {_ours(n) for n in found if n.split(".")[0] == "grader"} - {"", name, "grader"}


def _package(name: str) -> str:
    return ".".join(name.split(".")[:2])


def test_grader_is_its_subsystem_packages() -> None:
    top = {p.stem for p in GRADER.glob("*.py")}
    assert top == TOP_MODULES, f"modules outside a subsystem: {sorted(top - TOP_MODULES)}"
    found = {p.parent.name for p in GRADER.glob("*/__init__.py")}
    assert found == PACKAGES, f"stale or missing: {sorted(found ^ PACKAGES)}"
    for package in PACKAGES:
        doc = ast.get_docstring(ast.parse((GRADER / package / "__init__.py").read_text()))
        assert doc, f"grader/{package}/__init__.py says nothing of its job"


def test_no_import_circle_between_modules_even_for_type_checkers() -> None:
    cycle = import_cycle({name: imports(name) for name in MODULES})
    assert cycle is None, "modules import each other: " + " -> ".join(cycle or [])


def test_no_import_circle_between_subsystems() -> None:
    graph: dict[str, set[str]] = {}
    for name in MODULES:
        graph.setdefault(_package(name), set()).update(
            _package(t) for t in imports(name) if _package(t) != _package(name)
        )
    cycle = import_cycle(graph)
    assert cycle is None, "subsystems import each other: " + " -> ".join(cycle or [])


def test_the_reader_sees_every_kind_of_import() -> None:
    """The checks above are only as good as the reader: imports for type checkers, inside
    functions and of a module by its package (``from grader.sandbox import box``) count."""
    assert "grader.run.settings" in imports("grader.run.one_student")  # under TYPE_CHECKING
    assert "grader.integration.autograde_one" in imports("grader.run.one_student")  # in a function
    assert "grader.sandbox.box" in imports("grader.integration.sandboxed_kernel")  # package import
    assert import_cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
