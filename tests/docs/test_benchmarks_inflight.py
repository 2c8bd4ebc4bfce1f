"""BENCHMARKS.md's bytes-in-flight table comes from ``demos/results/inflight_h200.json``."""

from __future__ import annotations

import json
import re

from helpers import ROOT

CELL = re.compile(r"([\d,]+) GB/s \((\d+) %\)")


def _section() -> str:
    text = (ROOT / "BENCHMARKS.md").read_text()
    return text.split("## Bytes in flight", 1)[1].split("\n## ", 1)[0]


def test_inflight_table_matches_the_reference_run() -> None:
    section = _section()
    run = json.loads((ROOT / "demos" / "results" / "inflight_h200.json").read_text())
    assert run["environment"]["gpus"][0]["name"] == "NVIDIA H200"
    assert run["provenance"]["date"][:10] in section
    assert run["results"]["all_correct"]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0].replace(",", "").isdigit():
            rows[int(cells[0].replace(",", ""))] = cells[1:]
    sweep = run["results"]["sweep"]
    assert len(sweep) == sum(len(cells) for cells in rows.values()) == 16
    for record in sweep:
        column = [1, 2, 4, 8].index(record["loads"])
        rate, share = CELL.fullmatch(rows[record["threads"]][column]).groups()
        assert int(rate.replace(",", "")) == round(record["read_bytes_per_s"] / 1e9)
        assert int(share) == round(100 * record["fraction_of_copy"])


def test_inflight_prose_figures_match_the_reference_run() -> None:
    section = _section()
    results = json.loads((ROOT / "demos" / "results" / "inflight_h200.json").read_text())["results"]
    copy = results["copy_bandwidth"]["bytes_moved_per_s"]
    library = results["library"]
    assert f"({copy / 1e9:,.0f} GB/s of bytes moved)" in section
    assert f"`cupy.sum` in the same run: {library['read_bytes_per_s'] / 1e9:,.0f} GB/s" in section
    assert f"({100 * library['fraction_of_copy']:.0f} % of the copy" in section
    assert f"{100 * library['fraction_of_peak']:.0f} % of the peak" in section
    by = {(r["threads"], r["loads"]): r["fraction_of_copy"] for r in results["sweep"]}
    for loads, quoted in ((2, "76 to 81 %"), (4, "86 to"), (8, "95 %")):
        shares = [round(100 * by[(t, loads)]) for t in (128, 256, 512, 1024)]
        assert quoted in section
        if loads == 2:
            assert (min(shares), max(shares)) == (76, 81), shares
    assert min(round(100 * by[(t, n)]) for t in (128, 256, 512, 1024) for n in (4, 8)) == 86
    assert max(by.values()) < library["fraction_of_copy"], "the prose says short of the library"
