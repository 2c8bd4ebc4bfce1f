"""``python -m demos bench distance``: the distance-matrix benchmarks of chapters 3 and 4.

Each part is independent and writes its own JSON file (with the hardware) into
``--output``:

==============  ===========================  =========================================
option          file                         what
==============  ===========================  =========================================
(default)       ``distance.json``            every backend over sizes (distance_sweep)
``--ops``       ``distance_ops.json``        einsum / matmul / element-wise, NumPy vs CuPy
``--memory N``  ``distance_memory.json``     peak GPU memory, drop-in vs lean (distance_memory)
``--chunked G`` ``distance_chunked.json``    a G-gigabyte matrix streamed to the host
``--overhead``  ``distance_overhead.json``   cost per call vs a raw launch and torch.cdist
``--compat``    ``measurements*.json``       the original course's files (from the sweep
                                             and ops results; into ``demos/`` when the
                                             output is ``demos/results``)
==============  ===========================  =========================================

Parts that need what this machine lacks are skipped with the reason printed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from demos import hardware, shipped_results
from demos.benchmarks import record, sizes
from demos.distance import BACKENDS

DEFAULT_BACKENDS = tuple(
    b for b in BACKENDS if b != "chunked" and not b.endswith(("-rows", "-pairs", "-quads"))
)
# The code each part measures (demos.provenance hashes it into the result's record).
SWEEP_SOURCES = ("demos/benchmarks/distance_sweep.py", "demos/distance")
OPS_SOURCES = ("demos/benchmarks/distance_sweep.py", "demos/distance/generic.py")
MEMORY_SOURCES = (
    "demos/benchmarks/distance_memory.py",
    "demos/distance/cupy_backend.py",
    "demos/distance/cupy_lean.py",
)
CHUNKED_SOURCES = ("demos/benchmarks/distance_memory.py", "demos/distance/chunked.py")
OVERHEAD_SOURCES = ("demos/benchmarks/distance_overhead.py", "demos/distance")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add(
        "--sizes",
        type=sizes.int_list,
        default=list(sizes.DISTANCE_SIZES),
        help="e.g. 64,256,1024, or 'reference'",
    )
    add("--backends", default=",".join(DEFAULT_BACKENDS), help="comma-separated backend names")
    add("--dtype", choices=("float32", "float64"), default="float64")
    add("--repeats", type=int, default=5, help="timed repetitions per measurement")
    add("--output", type=Path, default=record.DEFAULT_OUTPUT_DIR, help="folder for the JSON")
    add("--no-sweep", action="store_true", help="skip the sweep over sizes")
    add("--ops", action="store_true", help="time einsum / matmul / element-wise ops separately")
    add("--compat", action="store_true", help="also write measurements*.json (implies --ops)")
    add("--memory", type=int, metavar="N", help="peak GPU memory of cupy vs cupy-lean for N points")
    add("--chunked", type=float, metavar="GB", help="stream a float64 matrix of GB gigabytes")
    add("--device-memory-fraction", type=float, default=0.5, help="device budget for --chunked")
    add("--block-rows", type=int, help="rows per block for --chunked (default: from the budget)")
    add("--overhead", action="store_true", help="cost per call of the device API vs torch.cdist")
    add(
        "--overhead-sizes",
        type=sizes.int_list,
        default=list(sizes.OVERHEAD_SIZES),
        help="sizes for --overhead (float32 and float64)",
    )
    add("--seed", type=int, default=0)
    add("--no-progress", action="store_true", help="no tqdm progress bar")


def main(args: argparse.Namespace) -> int:
    if args.repeats < 1:
        raise SystemExit("--repeats must be >= 1")
    output = Path(args.output)
    written: list[Path] = []
    sweep = None if args.no_sweep else _sweep(args, output, written)
    ops = _ops(args, output, written) if (args.ops or args.compat) else None
    if args.compat:
        _compat(sweep, ops, output, written)
    if args.memory:
        _memory(args, output, written)
    if args.chunked:
        _chunked(args, output, written)
    if args.overhead:
        _overhead(args, output, written)
    for path in written:
        print(f"wrote {path}")
    return 0


def _sweep(args: argparse.Namespace, output: Path, written: list[Path]) -> dict[str, Any]:
    from demos.benchmarks.distance_sweep import run_sweep

    names = [b.strip() for b in args.backends.split(",") if b.strip()]
    dtype = np.dtype(args.dtype)
    results = run_sweep(args.sizes, names, args.repeats, dtype, args.seed, not args.no_progress)
    written.append(
        record.write_result(
            output / "distance.json",
            "distance",
            results,
            sources=SWEEP_SOURCES,
            mode="sweep",
            sizes=args.sizes,
            backends=names,
            dtype=str(dtype),
            repeats=args.repeats,
            seed=args.seed,
        )
    )
    return results


def _ops(args: argparse.Namespace, output: Path, written: list[Path]) -> list[dict[str, Any]]:
    from demos.benchmarks.distance_sweep import run_ops

    rows = run_ops(args.sizes, args.repeats, args.seed)
    written.append(
        record.write_result(
            output / "distance_ops.json",
            "distance",
            rows,
            sources=OPS_SOURCES,
            mode="ops",
            sizes=args.sizes,
            repeats=args.repeats,
            seed=args.seed,
        )
    )
    return rows


def compat_dir(output: Path) -> Path:
    """Where the original course's files go: ``demos/`` for the shipped reference results."""
    reference = output.resolve() == shipped_results.RESULTS_DIR.resolve()
    return record.PACKAGE_DIR if reference else output


def _compat(sweep: Any, ops: Any, output: Path, written: list[Path]) -> None:
    from demos.benchmarks.distance_sweep import compat_measurements, compat_ops

    target = compat_dir(output)
    if sweep is not None:
        table = compat_measurements(sweep["runs"])
        path = record.write_json(target / "measurements.json", table, sources=SWEEP_SOURCES)
        written.append(path)
    path = record.write_json(target / "measurements_ops.json", compat_ops(ops), sources=OPS_SOURCES)
    written.append(path)


def _memory(args: argparse.Namespace, output: Path, written: list[Path]) -> None:
    if not hardware.cupy_available():
        print(f"skipping --memory: {hardware.cupy_status()[1]}")
        return
    from demos.benchmarks.distance_memory import run_memory

    result = run_memory(args.memory, np.dtype(args.dtype), args.seed)
    path = output / "distance_memory.json"
    written.append(
        record.write_result(
            path,
            "distance",
            result,
            sources=MEMORY_SOURCES,
            mode="memory",
            n=args.memory,
            dtype=args.dtype,
        )
    )


def _chunked(args: argparse.Namespace, output: Path, written: list[Path]) -> None:
    from demos.benchmarks.distance_memory import run_chunked

    result = run_chunked(
        args.chunked, args.device_memory_fraction, args.block_rows, args.seed, not args.no_progress
    )
    path = output / "distance_chunked.json"
    written.append(
        record.write_result(
            path,
            "distance",
            result,
            sources=CHUNKED_SOURCES,
            mode="chunked",
            gigabytes=args.chunked,
        )
    )


def _overhead(args: argparse.Namespace, output: Path, written: list[Path]) -> None:
    if not hardware.cupy_available():
        print(f"skipping --overhead (it needs a GPU and CuPy): {hardware.cupy_status()[1]}")
        return
    from demos.benchmarks.distance_overhead import run_overhead

    dtypes = ["float32", "float64"]
    result = run_overhead(args.overhead_sizes, dtypes, args.seed)
    path = output / "distance_overhead.json"
    written.append(
        record.write_result(
            path,
            "distance",
            result,
            sources=OVERHEAD_SOURCES,
            mode="overhead",
            sizes=args.overhead_sizes,
            dtypes=dtypes,
        )
    )
