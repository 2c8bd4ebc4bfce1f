"""Chapter 4b's GPU benchmark commands, alike without a GPU and without their reference.

``python -m demos bench matmul`` and ``bench inflight`` measure on a GPU only: elsewhere
they refuse with what they need and write nothing. The chapter cells that show their
tables must not break where the shipped H200 reference is missing: they say that it has
not been measured yet and how to make it. One test of each for both commands.
"""

from __future__ import annotations

import argparse
from types import ModuleType

import pytest

from demos import hardware, live, shipped_results
from demos.__main__ import COMMANDS
from demos.patterns import inflight_bench, matmul_bench
from helpers import ROOT

BENCHES = [("matmul", matmul_bench), ("inflight", inflight_bench)]


@pytest.mark.parametrize(("name", "module"), BENCHES, ids=[n for n, _ in BENCHES])
def test_the_command_is_registered_and_refuses_without_a_gpu(
    name: str, module: ModuleType, tmp_path, capsys
) -> None:
    assert COMMANDS[("bench", name)][0] == module.__name__
    for source in module.SOURCES:
        assert (ROOT / source).is_file(), source
    if hardware.cupy_available():
        pytest.skip("this machine has a GPU: the command would measure")
    assert module.main(argparse.Namespace(output=tmp_path, quick=True)) == 1
    assert "needs a GPU with CuPy" in capsys.readouterr().out
    assert not (tmp_path / f"{name}.json").exists()


@pytest.mark.parametrize(("name", "module"), BENCHES, ids=[n for n, _ in BENCHES])
def test_without_the_reference_the_chapter_says_it_is_not_measured_yet(
    name: str, module: ModuleType, tmp_path, monkeypatch, capsys
) -> None:
    monkeypatch.setattr(shipped_results, "RESULTS_DIR", tmp_path)
    assert module.reference() is None
    said = capsys.readouterr().out
    assert "has not been measured yet" in said and f"python -m demos bench {name}" in said
    live.side_by_side(module.TABLE, None, None, need="gpu")  # prints, never raises
    assert "no reference result shipped" in capsys.readouterr().out
