"""Where a measured result came from: the code it measured, the commit, the packages, the date.

A timing can only be trusted, or re-measured, if it can be traced to the code
that produced it. Every benchmark writer therefore names the source files and
folders it *measures* (not the shared timing helpers) and stamps its JSON with
:func:`record`: the sha256 of those sources, the git commit (where the package
runs from a checkout), whether those sources had uncommitted changes, the
package versions and the UTC date. The machine itself is recorded by each
writer as before (``environment`` or ``hardware``).

The original course's files (``demos/measurements*.json``, ``{"<n>": {...}}``)
have no room for another key without breaking their readers, so their record
lives in a sidecar next to them (``measurements.provenance.json``).

A result is *stale* when the sources it names have changed since it was
measured, or when it was measured before this record existed (``source_hash``
null): :func:`stale_results` lists them, and the benchmarks page (docs/benchmarks.md) lists them.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib.metadata
import json
import platform
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from demos import hardware

ROOT = Path(__file__).resolve().parent.parent  # the checkout (or site-packages) holding demos/
RESULT_PATTERNS = (
    "demos/results/**/*.json",
    "grader/results/**/*.json",
    "demos/measurements*.json",
)
SIDECAR_SUFFIX = ".provenance.json"
SOURCE_SUFFIXES = (".py", ".ipynb")  # what a source folder contributes to the hash
SKIPPED_FOLDERS = ("__pycache__", ".ipynb_checkpoints")
# Files among the results that hold no measurement (e.g. a GPU maker's datasheet figures) say so
# in their "kind"; they have no code to trace.
NOT_MEASURED_KINDS = ("published specifications",)


def source_files(source: str, root: Path = ROOT) -> list[Path]:
    """The files a named source stands for: itself, or a folder's code files, sorted."""
    path = root / source
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    return sorted(
        p
        for p in path.rglob("*")
        if p.suffix in SOURCE_SUFFIXES
        and p.is_file()
        and not any(part in SKIPPED_FOLDERS for part in p.relative_to(root).parts)
    )


def source_hash(sources: Sequence[str], root: Path = ROOT) -> str:
    """sha256 over the named sources' paths and contents; a missing source hashes as missing."""
    digest = hashlib.sha256()
    for source in sorted(set(sources)):
        files = source_files(source, root)
        if not files:
            digest.update(f"{source}\0missing\0".encode())
        for path in files:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _git(root: Path, *args: str) -> str | None:
    """Output of a git command in *root*'s own checkout, or None (no git, not a checkout)."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def git_commit(root: Path = ROOT) -> str | None:
    """HEAD of the checkout *root* is the top of; None where the code is not run from one."""
    out = _git(root, "rev-parse", "--show-toplevel", "HEAD")
    if out is None:
        return None
    top, commit = out.split()
    return commit if Path(top).resolve() == root.resolve() else None


def uncommitted_changes(sources: Sequence[str], root: Path = ROOT) -> bool | None:
    """Whether the named sources differ from the commit (then the commit does not name them)."""
    if git_commit(root) is None:
        return None
    out = _git(root, "status", "--porcelain", "--", *sources)
    return None if out is None else bool(out.strip())


def package_versions() -> dict[str, str | None]:
    """Python and the packages a measurement depends on (None: not installed)."""
    try:
        nbgrader = importlib.metadata.version("nbgrader")
    except importlib.metadata.PackageNotFoundError:
        nbgrader = None
    return {
        "python": platform.python_version(),
        **hardware.package_versions(),
        "nbgrader": nbgrader,
    }


def record(sources: Sequence[str], root: Path = ROOT) -> dict[str, Any]:
    """The provenance of a result measured now from *sources* (paths relative to *root*)."""
    missing = [s for s in sources if not source_files(s, root)]
    if not sources or missing:
        raise FileNotFoundError(f"a result must name the sources it measured; missing: {missing}")
    return {
        "sources": sorted(set(sources)),
        "source_hash": source_hash(sources, root),
        "commit": git_commit(root),
        "uncommitted_changes": uncommitted_changes(sources, root),
        "packages": package_versions(),
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def stamp(payload: dict[str, Any], sources: Sequence[str]) -> dict[str, Any]:
    """*payload* with its ``provenance`` record added (a copy: the caller's dict is untouched)."""
    return {**payload, "provenance": record(sources)}


def sidecar_path(path: str | Path) -> Path:
    """``measurements.json`` -> ``measurements.provenance.json``, next to it."""
    path = Path(path)
    return path.with_name(path.stem + SIDECAR_SUFFIX)


def write_sidecar(path: str | Path, sources: Sequence[str], **facts: Any) -> Path:
    """Record the provenance of a file whose format has no room for it; *facts* are added."""
    target = sidecar_path(path)
    payload = {"describes": Path(path).name, "provenance": {**record(sources), **facts}}
    target.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return target


def provenance_of(path: str | Path) -> dict[str, Any] | None:
    """A result file's provenance record (its own key, or its sidecar's), or None."""
    path, sidecar = Path(path), sidecar_path(path)
    if sidecar.is_file():
        return json.loads(sidecar.read_text(encoding="utf-8")).get("provenance")
    data = json.loads(path.read_text(encoding="utf-8"))
    return data.get("provenance") if isinstance(data, dict) else None


def is_stale(provenance: dict[str, Any] | None, root: Path = ROOT) -> bool:
    """True unless the record names a source hash that the sources still have."""
    if not provenance or provenance.get("source_hash") is None:
        return True
    return source_hash(provenance["sources"], root) != provenance["source_hash"]


def is_measured(path: Path) -> bool:
    """False for a sidecar (part of its result) and for a file of published figures."""
    if path.name.endswith(SIDECAR_SUFFIX):
        return False
    data = json.loads(path.read_text(encoding="utf-8"))
    return not (isinstance(data, dict) and data.get("kind") in NOT_MEASURED_KINDS)


def result_files(root: Path = ROOT) -> list[Path]:
    """Every measured results JSON in the tree."""
    found = {p for pattern in RESULT_PATTERNS for p in root.glob(pattern)}
    return sorted(p for p in found if is_measured(p))


def stale_results(root: Path = ROOT) -> list[str]:
    """The results (paths relative to *root*) that no longer match the code they measured."""
    return [
        p.relative_to(root).as_posix()
        for p in result_files(root)
        if is_stale(provenance_of(p), root)
    ]
