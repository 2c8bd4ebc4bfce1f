"""demos.shipped_results: the one reader of the measured results in demos/results/."""

from __future__ import annotations

import json

import pytest

from demos import shipped_results


def test_a_shipped_result_is_found_with_or_without_its_suffix() -> None:
    data = shipped_results.load("lessons.json")
    assert data == shipped_results.load("lessons") and "environment" in data


def test_a_missing_result_is_none_or_an_error_when_required(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(shipped_results, "RESULTS_DIR", tmp_path)
    assert shipped_results.load("nothing") is None
    with pytest.raises(FileNotFoundError, match="demos/results/nothing.json"):
        shipped_results.load("nothing", required=True)
    (tmp_path / "r.json").write_text(json.dumps({"a": 1}), encoding="utf-8")
    assert shipped_results.load("r", required=True) == {"a": 1}
