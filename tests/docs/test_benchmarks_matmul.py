"""BENCHMARKS.md's tiled matrix multiply table comes from ``demos/results/matmul_h200.json``."""

from __future__ import annotations

import json
import re

from helpers import ROOT


def _row(table: str, name: str) -> list[str]:
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells and cells[0] == name:
            return cells
    raise AssertionError(f"BENCHMARKS.md has no matmul row for {name!r}")


def test_matmul_table_matches_the_reference_run() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text()
    section = text.split("## Tiled matrix multiply", 1)[1].split("\n## ", 1)[0]
    run = json.loads((ROOT / "demos" / "results" / "matmul_h200.json").read_text())
    assert run["environment"]["gpus"][0]["name"] == "NVIDIA H200"
    assert run["provenance"]["date"][:10] in section
    for kernel in run["results"]["kernels"]:
        cells = _row(section, kernel["name"])
        shown_ms = float(re.match(r"[\d.]+", cells[1]).group(0))
        decimals = len(cells[1].split(" ")[0].partition(".")[2])
        assert round(kernel["ms"], decimals) == shown_ms, kernel["name"]
        shown_tflops = float(cells[2])
        assert round(kernel["tflops"], len(cells[2].partition(".")[2])) == shown_tflops
        if "global_loads_per_output" in kernel:
            assert int(cells[3].replace(",", "")) == kernel["global_loads_per_output"]
