"""pyproject.toml, environment.yml and the constraints file describe one environment."""

import re
import tomllib

import yaml

from helpers import ROOT

# PyPI name -> conda-forge name, where they differ.
CONDA_NAME = {"cupy-cuda12x": "cupy", "line-profiler": "line_profiler"}
# Extras that are alternative builds of a package already listed (same conda package).
ALTERNATIVE_EXTRAS = {"cuda", "tf-cpu", "tf-gpu"}


def _split(requirement: str) -> tuple[str, str]:
    match = re.match(r"^([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*(.*)$", requirement.strip())
    assert match, requirement
    return match.group(1).lower(), match.group(3).replace(" ", "")


def _pyproject_requirements() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra, items in project["optional-dependencies"].items():
        if extra not in ALTERNATIVE_EXTRAS:
            reqs += items
    return dict(_split(r) for r in reqs)


def _conda_requirements() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    deps = [d for d in env["dependencies"] if isinstance(d, str)]
    out = dict(_split(d) for d in deps)
    out.pop("python"), out.pop("pip")
    return out


def test_environment_yml_matches_pyproject():
    pip_side = {
        CONDA_NAME.get(name, name): spec for name, spec in _pyproject_requirements().items()
    }
    conda_side = _conda_requirements()
    assert pip_side == conda_side, (
        "environment.yml and pyproject.toml list different packages or versions:\n"
        f"only in pyproject: {sorted(set(pip_side.items()) - set(conda_side.items()))}\n"
        f"only in environment.yml: {sorted(set(conda_side.items()) - set(pip_side.items()))}"
    )


def test_constraints_pin_every_direct_dependency():
    pinned = {}
    for line in (ROOT / "requirements" / "constraints.txt").read_text().splitlines():
        line = line.split(";")[0].strip()
        if "==" in line:
            name, version = line.split("==")
            pinned[name.lower().replace("_", "-")] = version
    missing = [n for n in _pyproject_requirements() if n.replace("_", "-") not in pinned]
    assert not missing, (
        f"requirements/constraints.txt lacks pins for {missing}; "
        "re-run the compile command in docs/developers.md"
    )
