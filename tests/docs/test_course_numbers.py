"""Every measured quantity a chapter's prose quotes agrees with the data shipped in demos/results/.

Why: numbers typed into prose go stale the moment a benchmark is re-run, and a
student cannot tell a measured figure from a guess. Chapters therefore compute
most of their numbers in code cells from the JSON; the quantities left in
Markdown are listed here with where they come from, and checked: a measured
figure must be its JSON value rounded to the digits the prose shows, and a
published peak (memory bandwidth, TFLOPS) comes from demos/results/gpu_specs.json,
which names its source. A quantity in prose that is not in the table fails the
test, so a new number cannot slip in unchecked. The qualitative claims the
chapters make from the data (who wins, what does not pay, why) are checked
against the same files in test_course_claims.py.
"""

from __future__ import annotations

import mmap
import re
from collections.abc import Callable

import nbformat
import pytest
from course_results import (
    at,
    chapter6_sum_tb_per_s,
    chunked,
    cnn,
    copy_tb_per_s,
    distance_run,
    inflight,
    matmul,
    ncu_row,
    profiling,
    reduction,
    result,
    spec,
    syncs,
    two_stream_model_ms,
    write_tb_per_s,
)

from helpers import ROOT

# a number followed by a unit of time, size, bandwidth, share or speed-up ("3 × 3" is a shape, not a
# speed-up)
QUANTITY = re.compile(
    r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?(ms|µs|us|ns|GB/s|TB/s|GB|GiB|MB|MiB|KiB|TB|%|×(?!\s*\d)|x\b|-core"
    r"|images/s|TFLOPS|\ss\b|\stimes\b)(?![\w/])"
)


def _close(value: float, quoted: float, rel: float = 0.02) -> bool:
    return abs(value - quoted) <= rel * abs(quoted)


def _rounds_to(value: float, quoted: str) -> bool:
    """True when *value*, rounded to as many decimals as the quoted number shows, is that number."""
    number = QUANTITY.match(quoted)
    assert number, f"{quoted!r} is not a quantity"
    text = number.group(1).replace(",", "")
    decimals = len(text.partition(".")[2])
    return round(value, decimals) == float(text)


# (chapter, quoted text) -> (where it comes from, check returning True when the data agrees)
QUOTED: dict[tuple[str, str], tuple[str, Callable[[], bool]]] = {
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


def figure(chapters: str, quoted: str, source: str, value: Callable[[], float]) -> None:
    """List *quoted* (in each of *chapters*): *value()* rounded to the digits the prose shows.

    The same text quoted for two quantities of one chapter ("65 %" of two runs) is one
    entry that must agree with both: a second listing never replaces the first.
    """

    def agrees() -> bool:
        return _rounds_to(value(), quoted)

    for chapter in chapters.split():
        key = (chapter, quoted)
        if key in QUOTED:
            before_source, before = QUOTED[key]
            QUOTED[key] = (f"{before_source}; {source}", lambda b=before: b() and agrees())
        else:
            QUOTED[key] = (source, agrees)


# The reference H200's memory as its driver reports it, 139.8 GiB, rounded as the prose shows it
# (a 2 % tolerance would also have let the published 141 through, once quoted as 141 GiB).
figure(
    "01",
    "140 GiB",
    "the reference H200's memory as its driver reports it (distance.json environment)",
    lambda: result("distance.json")["environment"]["gpus"][0]["total_memory_bytes"] / 2**30,
)


# Published figures (gpu_specs.json names NVIDIA as their source), beside measured rates.
_PCIE = "pcie_gen5_x16_gb_per_s_both_directions"
for _chapters, _quoted, _what, _value in [
    ("01 04 04b 04d", "4.8 TB/s", "memory bandwidth", lambda: spec()["memory_bandwidth_tb_per_s"]),
    ("01", "128 GB/s", "PCIe Gen5 x16, both directions", lambda: spec()[_PCIE]),
    ("01", "64 GB/s", "PCIe Gen5 x16, one direction: half of both", lambda: spec()[_PCIE] / 2),
]:
    figure(_chapters, _quoted, f"H200 {_what}, NVIDIA's figure (gpu_specs.json)", _value)
for _chapter, _quoted, _kind in [
    ("04", "34 TFLOPS", "fp64"),
    ("05", "1,979 TFLOPS", "bf16_tensor_sparse"),
    ("05", "989 TFLOPS", "tf32_tensor_sparse"),
    ("05 04d", "67 TFLOPS", "fp32"),
]:
    figure(
        _chapter,
        _quoted,
        f"H200 SXM {_kind} arithmetic, NVIDIA's figure (gpu_specs.json)",
        lambda k=_kind: spec()["tflops"]["H200 SXM"][k],
    )

# Copies: on the device (patterns_h200.json) and to and from pinned host memory, and what
# the chunked distance matrix of chapter 4 writes (distance_chunked.json).
figure(
    "01 04b", "4.09 TB/s", "device copy, bytes moved per second (patterns_h200.json)", copy_tb_per_s
)
for _chapters, _quoted, _path, _scale in [
    ("01 04", "55 GB/s", ("bandwidth", "d2h_pinned_gb_per_s"), 1),
    ("06", "55 GB/s", ("bandwidth", "h2d_pinned_gb_per_s"), 1),
    ("04", "24 GB", ("matrix_bytes",), 1e-9),
    ("04", "2.9 GB/s", ("gb_per_s",), 1),  # into a fresh host array
    ("04", "31 GB/s", ("gb_per_s_reused_out",), 1),  # into a reused one
]:
    figure(
        _chapters,
        _quoted,
        f"distance_chunked.json {' '.join(_path)}",
        lambda p=_path, s=_scale: at("distance_chunked.json", "results", *p) * s,
    )
QUOTED[("01", "70 times")] = (
    "device copy rate over the pinned copy to the host: 'more than 70 times' "
    "(patterns_h200.json, distance_chunked.json)",
    lambda: 70 < copy_tb_per_s() * 1e3 / chunked()["bandwidth"]["d2h_pinned_gb_per_s"] < 80,
)

# Chapter 3: the all-cores CPU curve at small n (distance.json, host to host).
for _quoted, _backend, _n, _stat, _scale in [
    ("4.07 ms", "numba-cpu-parallel", 64, "median_s", 1e3),
    ("5.66 ms", "numba-cpu-parallel", 4096, "median_s", 1e3),
    ("0.021 ms", "numba-cpu-parallel", 64, "min_s", 1e3),  # the fastest of its five repeats
    ("7.94 ms", "numba-cpu-parallel", 1024, "median_s", 1e3),
    ("0.65 ms", "numba-cpu", 1024, "median_s", 1e3),
    ("5.9 µs", "numba-cpu", 64, "median_s", 1e6),
]:
    figure(
        "03",
        _quoted,
        f"{_backend} at n = {_n}, host to host {_stat} (distance.json)",
        lambda b=_backend, n=_n, st=_stat, s=_scale: distance_run(b, n, "host_to_host", st) * s,
    )

# Chapter 4: coalescing, the write bound.
figure(
    "04",
    "1.87 ×",
    "coalescing lesson, 32 x 8 blocks: rows on x / columns on x (lessons.json)",
    lambda: at("lessons.json", "results", "coalescing", "32x8", "ratio"),
)
figure(
    "04",
    "4 ×",
    "sectors per warp store, rows on x / columns on x (lessons.json)",
    lambda: (lambda s: s["rows_on_x"] / s["columns_on_x"])(
        at("lessons.json", "results", "coalescing", "sectors_per_warp_store")
    ),
)
for _quoted, _backend in [("3.71 TB/s", "numba-cuda-best"), ("1.23 TB/s", "numba-cuda-coalesced")]:
    figure(
        "04",
        _quoted,
        f"{_backend}'s write rate at n = 16384 (distance.json device time)",
        lambda b=_backend: write_tb_per_s(b),
    )
figure(
    "04",
    "77 %",
    "best kernel's write rate as a share of the published peak",
    lambda: 100 * write_tb_per_s("numba-cuda-best") / spec()["memory_bandwidth_tb_per_s"],
)

# Chapters 4 and 4a: Nsight Compute on the naive and the coalesced launch.
for _chapters, _quoted, _kernel, _column in [
    ("04 04a", "110 MB", "naive", "DRAM bytes written"),
    ("04 04a", "104 MB", "coalesced", "DRAM bytes written"),
    ("04a", "50 %", "naive", "theoretical occupancy"),
    ("04a", "5.8 %", "naive", "achieved occupancy"),
    ("04a", "0.23 %", "naive", "memory throughput"),
    ("04a", "19.9 %", "coalesced", "memory throughput"),
]:
    figure(
        _chapters,
        _quoted,
        f"{_column} of the {_kernel} launch (ncu_kernels_h200.json)",
        lambda k=_kernel, c=_column: ncu_row(k)[c],
    )
figure(
    "04a",
    "92 times",
    "naive / coalesced duration under ncu (ncu_kernels_h200.json)",
    lambda: ncu_row("naive")["duration"] / ncu_row("coalesced")["duration"],
)
figure(
    "04a",
    "134 MB",
    "the n x n float64 matrix the ncu run writes (ncu_kernels_h200.json n)",
    lambda: 8 * at("ncu_kernels_h200.json", "parameters", "n") ** 2 / 1e6,
)

# Chapter 4a: timing, syncs, overlap (profiling_h200.json).
for _quoted, _what, _value in [
    ("0.62 ms", "wall clock without a sync", lambda: profiling("timing")["wall_no_sync_ms"]),
    ("17.1 ms", "CUDA events", lambda: profiling("timing")["cuda_events_ms"]),
    ("1.39 ×", "sync every step / sync once", lambda: syncs()[0] / syncs()[1]),
    ("57 µs", "time per step without waits", lambda: syncs()[1] / syncs()[2] * 1e3),
    (
        "23 µs",
        "extra time per step with a wait",
        lambda: (lambda e, o, n: (e - o) / n * 1e3)(*syncs()),
    ),
    ("39.4 ms", "one stream, wall time", lambda: profiling("overlap")["1_streams"]["wall_ms"]),
]:
    figure("04a", _quoted, f"{_what} (profiling_h200.json)", _value)
figure(
    "04a",
    "20.9 ms",
    "two-stream model c + t + (chunks - 1) max(c, t) (profiling_h200.json)",
    two_stream_model_ms,
)
figure(
    "04a",
    "20.9 ms",
    "two streams, wall time (profiling_h200.json)",
    lambda: profiling("overlap")["2_streams"]["wall_ms"],
)

# Chapter 4b: the reductions against the copy and the peak (patterns_h200.json).
figure("04b", "3 GB", "750 M float32 summed in chapter 6", lambda: 750_000_000 * 4 / 1e9)
figure(
    "04b",
    "4.33 TB/s",
    "chapter 6's sum on one GPU, bytes read per second (multigpu_h200.json)",
    chapter6_sum_tb_per_s,
)
for _quoted, _name, _field, _scale in [
    ("4.12 TB/s", "cupy.sum", "read_bytes_per_s", 1e-12),
    ("66 %", "tree (shared memory)", "fraction_of_copy_bandwidth", 100),
    ("65 %", "warp shuffles", "fraction_of_copy_bandwidth", 100),
]:
    figure(
        "04b",
        _quoted,
        f"{_name}: {_field} (patterns_h200.json)",
        lambda n=_name, f=_field, s=_scale: reduction(n)[f] * s,
    )


# Chapter 4b: more bytes in flight, the sweep of block size x LOADS (inflight_h200.json).
for _quoted, _threads, _loads, _field, _scale in [
    ("65 %", 128, 1, "fraction_of_copy", 100),
    ("71 %", 1024, 1, "fraction_of_copy", 100),
    ("77 %", 256, 2, "fraction_of_copy", 100),
    ("88 %", 256, 4, "fraction_of_copy", 100),
    ("95 %", 1024, 8, "fraction_of_copy", 100),
    ("3,759 GB/s", 1024, 8, "read_bytes_per_s", 1e-9),
    ("78 %", 1024, 8, "fraction_of_peak", 100),
]:
    figure(
        "04b",
        _quoted,
        f"{_threads} threads, LOADS = {_loads}: {_field} (inflight_h200.json)",
        lambda t=_threads, n=_loads, f=_field, s=_scale: inflight(t, n)[f] * s,
    )
figure(
    "04b",
    "104 %",
    "cupy.sum in the same run: fraction_of_copy (inflight_h200.json)",
    lambda: result("inflight_h200.json")["results"]["library"]["fraction_of_copy"] * 100,
)

# Chapter 4b: where shared memory wins, naive against tiled matrix product (matmul_h200.json).
for _quoted, _what, _value in [
    (
        "16 times",
        "global loads per output, naive over tiled",
        lambda: (
            matmul("naive")["global_loads_per_output"]
            / matmul("tiled (shared memory)")["global_loads_per_output"]
        ),
    ),
    ("17.6 ms", "tiled kernel", lambda: matmul("tiled (shared memory)")["ms"]),
    ("101 ms", "naive kernel", lambda: matmul("naive")["ms"]),
    (
        "5.7 ×",
        "tiled over naive",
        lambda: result("matmul_h200.json")["results"]["tiled_speedup_over_naive"],
    ),
    ("2.7 ms", "cupy.matmul (cuBLAS)", lambda: matmul("cupy.matmul (cuBLAS)")["ms"]),
    ("51 TFLOPS", "cupy.matmul (cuBLAS)", lambda: matmul("cupy.matmul (cuBLAS)")["tflops"]),
]:
    figure("04b", _quoted, f"{_what} (matmul_h200.json)", _value)

# Chapter 5: batch size, input pipeline, precision (GPU runs of the CNN).
for _quoted, _name, _batch, _precision in [
    ("44,657 images/s", "cnn_h200_jax.json", 32, "mixed_bfloat16"),
    ("43,678 images/s", "cnn_h200_jax.json", 32, "float32"),
    ("1,469,781 images/s", "cnn_h200_jax.json", 16384, "mixed_bfloat16"),
    ("1,419,812 images/s", "cnn_h200_jax.json", 8192, "mixed_bfloat16"),  # data on the GPU
    ("65,107 images/s", "cnn_h200_jax_host_arrays.json", 8192, "mixed_bfloat16"),
]:
    figure(
        "05",
        _quoted,
        f"batch {_batch}, {_precision} ({_name})",
        lambda n=_name, b=_batch, p=_precision: cnn(n, b, p),
    )
figure(
    "05",
    "33 ×",
    "batch 16384 over batch 32, both mixed bfloat16 (cnn_h200_jax.json)",
    lambda: (
        cnn("cnn_h200_jax.json", 16384, "mixed_bfloat16")
        / cnn("cnn_h200_jax.json", 32, "mixed_bfloat16")
    ),
)

# Chapter 6: what the mat-vec timing leaves out (multigpu_h200.json).
figure(
    "06",
    "12 GB",
    "A of the mat-vec, float32 (multigpu_h200.json matvec n, m)",
    lambda: (lambda mv: mv["n"] * mv["m"] * 4 / 1e9)(at("multigpu_h200.json", "results", "matvec")),
)
figure(
    "06",
    "2.9 ms",
    "mat-vec on one GPU (multigpu_h200.json matvec)",
    lambda: at("multigpu_h200.json", "results", "matvec", "times_s", "1") * 1e3,
)


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
