"""Results that name their code: every results JSON traces to the sources it measured.

:mod:`demos.provenance` stamps each result with the sources it measured, their
sha256, the commit, the package versions and the date. These tests check the
stamp itself (in a throw-away git checkout), that every writer's output and
every committed result carries one, that the original course's files keep
their format (the record goes to a sidecar). The benchmarks page lists the
stale results (measured before their code last changed) from
:func:`demos.provenance.stale_results`, and tests/docs/test_rendered_docs.py fails
while the committed page's list differs; a stale result itself fails nothing.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from demos import provenance
from demos.benchmarks import record
from helpers import ROOT

RECORD_KEYS = {"sources", "source_hash", "commit", "uncommitted_changes", "packages", "date"}
# The original course's files, read as {"<key>": {...}} by its notebook: no room for a new key.
# Keyed by size ({"<n>": {"numpy": s, ...}}) or by label ({"<label>": {"<device>": images/s}}).
LEGACY = {
    "measurements.json": "size",
    "measurements_ops.json": "size",
    "measurements_tf_cnn_cifar10.json": "label",
}


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git checkout with one measured module and one helper, committed."""
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "fast.py").write_text("def f():\n    return 1\n")
    (tmp_path / "helper.py").write_text("X = 1\n")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "first")
    return tmp_path


def test_a_record_names_the_commit_and_hashes_only_the_measured_sources(checkout):
    made = provenance.record(["kernels"], root=checkout)
    assert set(made) == RECORD_KEYS
    assert made["commit"] == git(checkout, "rev-parse", "HEAD").strip()
    assert made["uncommitted_changes"] is False
    assert made["packages"]["numpy"] and made["date"].endswith("+00:00")
    (checkout / "helper.py").write_text("X = 2\n")  # not measured: the result stays fresh
    assert not provenance.is_stale(made, root=checkout)
    (checkout / "kernels" / "fast.py").write_text("def f():\n    return 2\n")
    assert provenance.is_stale(made, root=checkout)
    assert provenance.record(["kernels"], root=checkout)["uncommitted_changes"] is True


def test_a_new_or_removed_source_file_makes_a_result_stale(checkout):
    made = provenance.record(["kernels"], root=checkout)
    (checkout / "kernels" / "slow.py").write_text("")
    assert provenance.is_stale(made, root=checkout)
    (checkout / "kernels" / "slow.py").unlink()
    assert not provenance.is_stale(made, root=checkout)
    for path in (checkout / "kernels").iterdir():
        path.unlink()
    assert provenance.is_stale(made, root=checkout)


def test_a_record_needs_sources_that_exist(checkout):
    with pytest.raises(FileNotFoundError):
        provenance.record(["kernel"], root=checkout)
    with pytest.raises(FileNotFoundError):
        provenance.record([], root=checkout)


def test_outside_a_checkout_the_commit_is_unknown(tmp_path):
    (tmp_path / "a.py").write_text("")
    made = provenance.record(["a.py"], root=tmp_path)
    assert made["commit"] is None and made["uncommitted_changes"] is None
    assert not provenance.is_stale(made, root=tmp_path)


def test_measured_before_provenance_is_stale():
    assert provenance.is_stale(None)
    assert provenance.is_stale({"sources": ["demos/distance"], "source_hash": None})


def test_result_writers_stamp_their_json_and_legacy_files_get_a_sidecar(tmp_path):
    path = record.write_result(
        tmp_path / "r.json", "distance", {"x": 1}, sources=["demos/distance"]
    )
    stamped = json.loads(path.read_text())["provenance"]
    assert set(stamped) == RECORD_KEYS and not provenance.is_stale(stamped)
    legacy = record.write_json(
        tmp_path / "measurements.json", {"16": {"numpy": 1.0}}, sources=["demos/distance"], x=1
    )
    assert json.loads(legacy.read_text()) == {"16": {"numpy": 1.0}}
    side = json.loads((tmp_path / "measurements.provenance.json").read_text())
    assert side["describes"] == "measurements.json" and side["provenance"]["x"] == 1
    assert provenance.provenance_of(legacy) == side["provenance"]


def test_every_committed_result_has_a_provenance_record():
    files = provenance.result_files()
    assert len(files) >= 20  # the globs still find the results
    for path in files:
        made = provenance.provenance_of(path)
        name = path.relative_to(ROOT).as_posix()
        assert made is not None, f"{name} has no provenance"
        assert RECORD_KEYS <= set(made), name
        assert made["sources"] and all(provenance.source_files(s) for s in made["sources"]), name
        if made["source_hash"] is None:
            assert made.get("stale") is True and made.get("note"), name


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_the_original_course_files_keep_their_format(name):
    data = json.loads((ROOT / "demos" / name).read_text())
    assert data and all(isinstance(value, dict) for value in data.values())
    if LEGACY[name] == "size":
        assert all(key.isdigit() for key in data)
    assert provenance.sidecar_path(ROOT / "demos" / name).is_file()


def test_the_tensorflow_named_file_says_which_backend_measured_it():
    made = provenance.provenance_of(ROOT / "demos" / "measurements_tf_cnn_cifar10.json")
    assert made["keras_backends"]
    if "tensorflow" not in made["keras_backends"]:
        assert made["packages"].get("keras") and "TensorFlow" in made["note"]
