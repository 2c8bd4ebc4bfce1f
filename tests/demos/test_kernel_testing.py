"""The two voices that test student code stand on one core and not on each other.

``demos.checks`` (the chapters' immediate checks) and ``demos.grading`` (the
assignments' tests) share their mechanics through ``demos.kernel_testing``.
Read from the source with ``ast`` (every import, also those inside functions):
neither voice imports the other, the core imports nothing of ``demos``, the
module-level imports among them have no cycle, and importing the core or
``demos.grading`` leaves the warning filters alone. The core's array helpers
answer alike for NumPy, the CuPy stand-in and CuPy (the ``xp`` fixture).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import numpy as np

from demos import kernel_testing
from helpers import ROOT

DEMOS = ROOT / "demos"
CORE = "demos.kernel_testing"
VOICES = ("demos.checks", "demos.grading")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    relative = Path(*name.split("."))
    return (ROOT / relative).with_suffix(".py").exists() or (
        ROOT / relative / "__init__.py"
    ).exists()


def _imports(path: Path, top_level_only: bool = False) -> set[str]:
    """Modules of ``demos`` that *path* imports (``from a import b`` gives ``a.b`` if a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if _is_module(candidate) else node.module)
    return {name for name in found if name == "demos" or name.startswith("demos.")}


def _modules(prefix: str) -> dict[str, Path]:
    base = ROOT / Path(*prefix.split("."))
    paths = [base.with_suffix(".py")] if base.with_suffix(".py").exists() else base.rglob("*.py")
    return {_module_name(p): p for p in paths}


def _within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def test_the_voices_import_nothing_of_each_other() -> None:
    for voice, other in (VOICES, VOICES[::-1]):
        for name, path in _modules(voice).items():
            crossing = sorted(i for i in _imports(path) if _within(i, other))
            assert not crossing, f"{name} imports {crossing}"


def test_both_voices_stand_on_the_core() -> None:
    for voice in VOICES:
        users = [
            n for n, p in _modules(voice).items() if any(_within(i, CORE) for i in _imports(p))
        ]
        assert users, f"nothing in {voice} uses {CORE}"


def test_the_core_imports_nothing_of_demos() -> None:
    (path,) = _modules(CORE).values()
    assert _imports(path) == set()


def test_no_import_cycles_among_the_voices_and_the_core() -> None:
    modules = {**_modules(CORE), **_modules(VOICES[0]), **_modules(VOICES[1])}
    graph = {
        name: _imports(path, top_level_only=True) & modules.keys() for name, path in modules.items()
    }
    state: dict[str, str] = {}

    def visit(name: str, trail: list[str]) -> None:
        state[name] = "open"
        for target in sorted(graph[name]):
            assert state.get(target) != "open", f"import cycle: {' -> '.join(trail + [target])}"
            if target not in state:
                visit(target, trail + [target])
        state[name] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])


def test_importing_the_core_and_grading_keeps_warning_filters() -> None:
    code = (
        "import warnings, demos, numba.cuda\n"
        "before = list(warnings.filters)\n"
        "import demos.kernel_testing, demos.grading, demos.grading.wire\n"
        "assert warnings.filters == before, warnings.filters[:3]\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_to_host_copies_an_array_of_any_module_to_numpy(xp) -> None:
    data = np.arange(6.0).reshape(2, 3)
    on_device = xp.asarray(data)
    host = kernel_testing.to_host(on_device)
    assert type(host) is np.ndarray
    np.testing.assert_array_equal(host, data)
    host[0, 0] = -1.0
    assert kernel_testing.to_host(on_device)[0, 0] == 0.0  # a copy, never a view


def test_get_array_module_names_the_module_of_its_arrays(xp) -> None:
    arrays = xp.asarray(np.ones(2)), xp.asarray(np.zeros(3))
    assert kernel_testing.get_array_module(*arrays) is xp
    assert kernel_testing.get_array_module(np.ones(2)) is np
