"""The import structure of ``demos`` and ``grader``, read from the source with ``ast``.

``demos`` is built in layers (:data:`DEMOS_LAYERS`, bottom first): a unit (a
top-level module or a subpackage) imports units of its own layer or below,
never above, counting imports inside functions too. The core at the bottom
(the kernel-testing core, the results loader, the GPU timer, the hardware
probe, the course manifest, ...) imports nothing above it; the chapters' own
subpackages are those the manifest names; the chapters' checks and the
assignments' grading, the two voices that test student code, stand side by
side at the top and import nothing of each other; ``demos`` never imports
``grader``. Neither package has an import cycle between its units, nor between
its modules at import time. Imports made only for type checkers
(``if TYPE_CHECKING:``) are left out: they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

from demos import manifest
from helpers import import_cycle

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("demos", "grader")

#: The layers of ``demos`` below the chapters, bottom first, each a set of units.
LOWER_LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "core",
        frozenset(
            {
                "demos",
                "demos.cupy_standin",
                "demos.cupy_standin_streams",
                "demos.gpu_timer",
                "demos.hardware",
                "demos.info_command",
                "demos.kernel_testing",
                "demos.machine_report",
                "demos.manifest",
                "demos.numba_advice",
                "demos.provenance",
                "demos.quiet_import",
                "demos.shipped_results",
                "demos.validation",
            }
        ),
    ),
    (
        "algorithms",
        frozenset(
            {
                "demos.demo_cupy",
                "demos.demo_numba_cpu",
                "demos.demo_numba_gpu",
                "demos.demo_numpy",
                "demos.distance",
                "demos.simt",
            }
        ),
    ),
    (
        "measuring and showing",
        frozenset({"demos.benchmarks", "demos.live", "demos.notebook", "demos.plots"}),
    ),
)
#: The chapters' own subpackages are those the manifest (``demos/course.toml``) names,
#: less those a lower layer claims (chapters 3 and 4 use ``demos.distance``, an algorithm).
CHAPTER_UNITS = manifest.course().packages - frozenset().union(*(u for _, u in LOWER_LAYERS))
#: The layers of ``demos``, bottom first, each a set of units.
DEMOS_LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    *LOWER_LAYERS,
    ("chapters", CHAPTER_UNITS),
    ("voices", frozenset({"demos.checks", "demos.grading"})),
    ("command line", frozenset({"demos.__main__"})),
)
VOICES = "voices"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {
    _module_name(path): path
    for package in PACKAGES
    for path in sorted((ROOT / package).rglob("*.py"))
    if "__pycache__" not in path.parts
}


def _known(name: str) -> str:
    """The module of ours that importing *name* runs last (``demos.x.f`` -> ``demos.x``)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _import_nodes(nodes: list[ast.stmt], import_time_only: bool) -> list[ast.AST]:
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(nodes)
    while stack:
        node = stack.pop()
        if _type_checking_only(node):
            stack.extend(node.orelse)  # type: ignore[attr-defined]
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif import_time_only and isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
        ):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def imports(name: str, *, import_time_only: bool = False) -> set[str]:
    """Our modules that module *name* imports (relative imports resolved)."""
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in _import_nodes(tree.body, import_time_only):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
            continue
        assert isinstance(node, ast.ImportFrom)
        base = node.module or ""
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - node.level + 1]
            base = ".".join([*parts, base] if base else parts)
        found.update(f"{base}.{alias.name}" for alias in node.names)
    ours = {_known(n) for n in found if n.split(".")[0] in PACKAGES}
    return ours - {"", name}


def unit(name: str) -> str:
    """``demos.checks.answers.x`` -> ``demos.checks``; ``demos.live`` -> itself."""
    return ".".join(name.split(".")[:2])


def _layer_of(name: str) -> int:
    for rank, (_, units) in enumerate(DEMOS_LAYERS):
        if unit(name) in units:
            return rank
    raise AssertionError(f"{unit(name)} has no layer in DEMOS_LAYERS: add it where it belongs")


def test_every_unit_of_demos_has_one_layer() -> None:
    named = [u for _, units in DEMOS_LAYERS for u in units]
    assert len(named) == len(set(named)), "a unit is named in two layers"
    actual = {unit(n) for n in MODULES if n.split(".")[0] == "demos"}
    assert actual == set(named), (
        f"stale or missing: {sorted(actual ^ set(named))} (a chapter's own subpackage is named "
        "in its 'packages' in demos/course.toml; any other unit in LOWER_LAYERS)"
    )


def test_no_module_of_demos_imports_a_higher_layer() -> None:
    upward = [
        f"{name} ({DEMOS_LAYERS[_layer_of(name)][0]}) imports {target} "
        f"({DEMOS_LAYERS[_layer_of(target)][0]})"
        for name in MODULES
        if name.split(".")[0] == "demos"
        for target in sorted(imports(name))
        if target.split(".")[0] == "demos" and _layer_of(target) > _layer_of(name)
    ]
    assert not upward, "\n".join(upward)


def test_the_voices_import_nothing_of_each_other() -> None:
    voices = dict(DEMOS_LAYERS)[VOICES]
    crossing = [
        f"{name} imports {target}"
        for name in MODULES
        if unit(name) in voices
        for target in sorted(imports(name))
        if unit(target) in voices and unit(target) != unit(name)
    ]
    assert not crossing, "\n".join(crossing)


def test_demos_never_imports_grader() -> None:
    reaching = [
        f"{name} imports {target}"
        for name in MODULES
        if name.split(".")[0] == "demos"
        for target in sorted(imports(name))
        if target.split(".")[0] == "grader"
    ]
    assert not reaching, "\n".join(reaching)


def test_no_import_cycle_between_units() -> None:
    graph: dict[str, set[str]] = {}
    for name in MODULES:
        graph.setdefault(unit(name), set()).update(
            unit(t) for t in imports(name) if unit(t) != unit(name)
        )
    cycle = import_cycle(graph)
    assert cycle is None, "units import each other: " + " -> ".join(cycle or [])


def test_no_import_cycle_between_modules_at_import_time() -> None:
    graph = {name: imports(name, import_time_only=True) for name in MODULES}
    cycle = import_cycle(graph)
    assert cycle is None, "modules import each other: " + " -> ".join(cycle or [])


def test_the_reader_sees_what_the_layers_rest_on() -> None:
    """The checks above are only as good as the reader: imports in functions and relative ones
    count, imports for type checkers do not."""
    assert "demos.checks._harness" in imports("demos.checks")  # `from demos.checks._harness import`
    assert "demos.manifest" in imports("demos.__main__")  # `from demos import manifest`
    assert "grader.sandbox.isolation" in imports("grader.run.batch")
    one_student = "grader.run.one_student"
    assert "grader.run.settings" not in imports(one_student)  # under TYPE_CHECKING only
    assert "grader.integration.autograde_one" in imports(one_student)  # inside a function
    assert "grader.integration.autograde_one" not in imports(one_student, import_time_only=True)
