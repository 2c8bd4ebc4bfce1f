"""Every measured quantity a chapter's prose quotes agrees with the data shipped in demos/results/.

Why: numbers typed into prose go stale the moment a benchmark is re-run, and a
student cannot tell a measured figure from a guess. Chapters therefore compute
their numbers in code cells from the JSON; the few quantities left in Markdown
are listed here with where they come from, and checked. A quantity in prose
that is not in the table fails the test, so a new number cannot slip in
unchecked. The qualitative claims the chapters make from the data (who wins,
what does not pay) are checked against the same files.
"""

from __future__ import annotations

import json
import mmap
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "demos" / "results"

# a number followed by a unit of time, size, bandwidth, share or speed-up ("3 × 3" is a shape, not a
# speed-up)
QUANTITY = re.compile(
    r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?(ms|µs|us|ns|GB/s|TB/s|GB|GiB|MB|MiB|KiB|TB|%|×(?!\s*\d)|x\b|-core"
    r"|\ss\b|\stimes\b)(?![\w/])"
)


def result(name: str) -> dict[str, Any]:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def distance_run(backend: str, n: int, kind: str) -> float:
    for run in result("distance.json")["results"]["runs"]:
        if run["backend"] == backend and run["n"] == n:
            return run[kind]["median_s"]
    raise KeyError(f"distance.json has no {backend} run at n={n}")


def _close(value: float, quoted: float, rel: float = 0.02) -> bool:
    return abs(value - quoted) <= rel * abs(quoted)


# (chapter, quoted text) -> (where it comes from, check returning True when the data agrees)
QUOTED: dict[tuple[str, str], tuple[str, Callable[[], bool]]] = {
    ("01", "140 GiB"): (
        "the reference H200's memory as its driver reports it (distance.json environment)",
        lambda: _close(
            result("distance.json")["environment"]["gpus"][0]["total_memory_bytes"] / 2**30, 140
        ),
    ),
    ("03", "4 KiB"): (
        "the page size of the operating system the chapter describes",
        lambda: mmap.PAGESIZE == 4096,
    ),
    ("03", "134 MB"): (
        "bytes copied back at n = 4096 (distance.json transfers)",
        lambda: _close(
            next(
                t["d2h_bytes"]
                for t in result("distance.json")["results"]["transfers"]
                if t["n"] == 4096
            )
            / 1e6,
            134,
        ),
    ),
    ("05", "3 ×"): ("a 3 × 3 filter shape, not a measurement", lambda: True),
    ("06", "2×"): (
        "ideal speed-up on two of the GPUs measured (multigpu_h200.json gpu_counts)",
        lambda: 2 in result("multigpu_h200.json")["parameters"]["gpu_counts"],
    ),
    ("06", "4×"): (
        "ideal speed-up on four of the GPUs measured (multigpu_h200.json gpu_counts)",
        lambda: 4 in result("multigpu_h200.json")["parameters"]["gpu_counts"],
    ),
}


def quoted_in_prose() -> list[tuple[str, str]]:
    found = []
    for path in sorted((ROOT / "course").glob("[0-9][0-9]*-*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                found += [
                    (path.name.split("-")[0], m.group(0).strip())
                    for m in QUANTITY.finditer(cell.source)
                ]
    return found


def test_every_quantity_in_prose_is_listed_with_its_source() -> None:
    unlisted = sorted({q for q in quoted_in_prose() if q not in QUOTED})
    assert not unlisted, (
        f"quantities in chapter prose with no data behind them: {unlisted}. "
        "Compute them in a code cell "
        "from demos/results/, or add them to QUOTED with the JSON they come from."
    )


@pytest.mark.parametrize("key", sorted(QUOTED), ids=lambda k: f"{k[0]}:{k[1]}")
def test_listed_quantity_agrees_with_the_data_and_is_still_quoted(key: tuple[str, str]) -> None:
    source, agrees = QUOTED[key]
    assert key in quoted_in_prose(), f"{key} is no longer in the prose: remove it from QUOTED"
    assert agrees(), f"chapter {key[0]} quotes {key[1]!r}, but the data disagrees ({source})"


# ------------------------------------------------------------- claims the prose makes from the data
def test_ch03_one_core_numba_keeps_up_with_cupy_host_to_host() -> None:
    for n in (1024, 4096, 16384):
        assert distance_run("numba-cpu", n, "host_to_host") < 1.2 * distance_run(
            "cupy", n, "host_to_host"
        )
    assert distance_run("cupy", 4096, "host_to_host") < distance_run("numpy", 4096, "host_to_host")


def test_ch03_computing_is_a_small_share_of_the_host_to_host_time() -> None:
    assert distance_run("cupy", 4096, "device") < 0.1 * distance_run("cupy", 4096, "host_to_host")


def test_ch04_tiling_does_not_pay_and_blocks_of_one_thread_are_far_slower() -> None:
    assert distance_run("numba-cuda-tiled", 4096, "device") > distance_run(
        "numba-cuda-coalesced", 4096, "device"
    )
    assert distance_run("numba-cuda-naive", 4096, "device") > 10 * distance_run(
        "numba-cuda-coalesced", 4096, "device"
    )


def test_ch04_one_cpu_core_is_about_as_fast_as_the_best_kernel_host_to_host() -> None:
    for n in (4096, 16384):
        ratio = distance_run("numba-cpu", n, "host_to_host") / distance_run(
            "numba-cuda-best", n, "host_to_host"
        )
        assert 0.5 < ratio < 2.0, f"n={n}: one core / best GPU kernel host to host = {ratio:.2f}"


def test_ch05_names_the_backend_of_the_reference_figure() -> None:
    label = result("cnn_h200_jax.json")["parameters"]["label"]
    text = (ROOT / "course" / "05-cnn-tensorflow.ipynb").read_text(encoding="utf-8")
    assert "JAX" in label and "Keras 3 on the JAX backend" in text


def test_ch06_one_gpu_wins_small_sums_and_four_win_large_ones() -> None:
    reduce = result("multigpu_h200.json")["results"]["reduce"]
    times = reduce["times_s"]
    assert (
        times["10000000"]["1"] < times["10000000"]["4"]
    )  # a few million values per GPU: one GPU wins
    assert times["750000000"]["4"] < times["750000000"]["1"] / 3  # large sums scale


def _lesson(name: str) -> dict[str, Any]:
    data = result("lessons.json")
    entry = data["results"][name]
    if "skipped" in entry:
        pytest.skip(
            f"lessons.json was recorded without a GPU ({entry['skipped']}); "
            "run `python -m demos bench lessons` on a GPU to check this claim"
        )
    return entry


def test_ch02_two_equal_branches_split_by_lane_cost_about_twice() -> None:
    assert 1.5 < _lesson("divergence")["ratio"] < 2.5


def test_ch04_coalescing_matters_with_32x8_blocks_and_not_with_8x8() -> None:
    coalescing = _lesson("coalescing")
    assert coalescing["32x8"]["ratio"] > 1.3
    assert 0.8 < coalescing["8x8"]["ratio"] < 1.25


def test_ch03_pinned_copies_fastest_fresh_pageable_slowest() -> None:
    copies = _lesson("copies")
    assert (
        copies["pinned"]["median_ms"]
        < copies["touched_pageable"]["median_ms"]
        < copies["fresh_pageable"]["median_ms"]
    )
