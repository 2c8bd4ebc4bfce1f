"""Nsight Compute on the naive and the coalesced distance kernel: the launches, and the table.

``tools/gpu-node/ncu_kernels.sh OUTDIR`` runs ``ncu`` on :func:`launch_kernels`
(``python -m demos.profiling.ncu launch``) and turns its CSV export into
``ncu_kernels.json`` with :func:`parse_csv` (``python -m demos.profiling.ncu table``).
The chapter reads that JSON; without one it says none was shipped.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from pathlib import Path
from typing import Any

#: Nsight Compute metric -> (column in the chapter's table, unit)
METRICS: dict[str, tuple[str, str]] = {
    "gpu__time_duration.sum": ("duration", "us"),
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("memory throughput", "% of peak"),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("achieved occupancy", "%"),
    "sm__maximum_warps_per_active_cycle_pct": ("theoretical occupancy", "%"),
    "dram__bytes_write.sum": ("DRAM bytes written", "MB"),  # ncu reports it in Mbyte
    "launch__grid_size": ("blocks", ""),
    "launch__block_size": ("threads per block", ""),
}
KERNELS = ("naive", "coalesced")
#: ncu's byte units -> factor to MB (10^6 bytes)
_TO_MB = {"byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3}


def launch_kernels(n: int = 4096) -> None:
    """One launch of each kernel on n float64 points (what ncu profiles)."""
    import numpy as np
    from numba import cuda

    from demos.distance import numba_cuda

    x = cuda.to_device(np.random.default_rng(0).random((n, 3)))
    out = cuda.device_array((n, n), np.float64)
    for kernel in KERNELS:
        numba_cuda.distance_matrix_device(x, kernel=kernel, out=out)
    cuda.synchronize()


def _kernel_label(name: str) -> str | None:
    for kernel in KERNELS:
        if f"{kernel}_kernel" in name:
            return kernel
    return None


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def parse_csv(text: str) -> list[dict[str, Any]]:
    """Rows of the chapter's table from ``ncu --csv --page raw`` output (log lines are skipped)."""
    lines = [line for line in text.splitlines() if line.startswith('"')]
    if len(lines) < 2:
        raise ValueError("no ncu CSV table found (was ncu run with --csv --page raw?)")
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    header, units, body = rows[0], rows[1], rows[2:]
    if "Kernel Name" not in header:
        raise ValueError("the ncu CSV has no 'Kernel Name' column")
    table = []
    for row in body:
        record = dict(zip(header, row))
        label = _kernel_label(record.get("Kernel Name", ""))
        if label is None:
            continue
        entry: dict[str, Any] = {"kernel": label}
        for metric, (column, unit) in METRICS.items():
            if metric in record:
                value = _number(record[metric])
                ncu_unit = units[header.index(metric)]
                if value is not None and column == "duration" and ncu_unit in ("nsecond", "ns"):
                    value /= 1e3
                if value is not None and column == "duration" and ncu_unit in ("msecond", "ms"):
                    value *= 1e3
                if value is not None and unit == "MB" and ncu_unit in _TO_MB:
                    value *= _TO_MB[ncu_unit]
                entry[column] = value
        table.append(entry)
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demos.profiling.ncu")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("launch", help="launch the two kernels once (run this under ncu)")
    table = sub.add_parser("table", help="ncu CSV -> the chapter's JSON table")
    table.add_argument("csv", type=Path)
    table.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "launch":
        launch_kernels()
        return 0
    from demos.benchmarks import record

    rows = parse_csv(args.csv.read_text(encoding="utf-8", errors="replace"))
    if not rows:
        print("ncu's CSV holds neither the naive nor the coalesced kernel", file=sys.stderr)
        return 1
    units = {column: unit for column, unit in METRICS.values()}
    record.write_result(
        args.output,
        "ncu_distance_kernels",
        rows,
        sources=["demos/profiling/ncu.py", "demos/distance"],
        n=4096,
        dtype="float64",
        units=units,
        metrics=list(METRICS),
    )
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
