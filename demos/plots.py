"""``python -m demos plot``: the course figures, drawn from benchmark JSON files.

Every benchmark writes JSON with a ``"benchmark"`` field (see
:mod:`demos.benchmarks.record`); this command reads all of them from a folder
and hands each to the plotting function registered for that benchmark, so the
notebooks can show figures of the reference machine and students can redraw
them from their own runs. Plotting modules of other chapters are imported only
when a file needs them, and skipped with a message when they are missing.
"""

from __future__ import annotations

import argparse
import importlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from demos.benchmarks.sizes import OPS_KEYS
from demos.shipped_results import RESULTS_DIR, read_json

# benchmark name -> "module:function" taking (result dict, output dir) and returning written paths
REGISTRY: dict[str, str] = {
    "distance": "demos.plots:plot_distance",
    "cnn": "demos.cnn.plots:plot",
    "multigpu": "demos.multigpu.plots:plot",
}


def pyplot():
    """matplotlib.pyplot drawing to files: works on headless cluster nodes and in CI.

    Inside a notebook kernel the backend is left alone: switching it to Agg there
    would turn every figure a chapter displays into the text ``<Figure ...>``.
    """
    import sys

    import matplotlib

    if "ipykernel" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> Path:
    """Lay out *fig*, write it as PNG to *path* and close it (open figures keep their memory)."""
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    pyplot().close(fig)
    return path


def _title_suffix(data: dict[str, Any]) -> str:
    env = data.get("environment", {})
    gpus = env.get("gpus") or []
    return f" ({gpus[0]['name']})" if gpus else f" ({env.get('processor', 'CPU only')})"


def plot_distance(data: dict[str, Any], output_dir: Path) -> list[Path]:
    """Figures for one distance-benchmark file, chosen by its mode."""
    mode = data.get("parameters", {}).get("mode")
    draw = {
        "sweep": _distance_sweep,
        "ops": _distance_ops,
        "memory": _distance_memory,
        "overhead": _distance_overhead,
        "chunked": None,
        "kernels": None,
    }.get(mode)
    if draw is None:
        print(f"no figure for distance mode {mode!r}")
        return []
    return draw(data, Path(output_dir))


def _distance_sweep(data: dict[str, Any], output_dir: Path) -> list[Path]:
    plt = pyplot()
    runs = [r for r in data["results"]["runs"] if "host_to_host" in r]
    backends = list(dict.fromkeys(r["backend"] for r in runs))
    colours = {
        b: plt.get_cmap("tab20")(i % 20) for i, b in enumerate(backends)
    }  # same colour in both panels
    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    for ax, key, title in (
        (axes[0], "host_to_host", "NumPy in, NumPy out"),
        (axes[1], "device", "GPU compute only (CUDA events)"),
    ):
        for backend in backends:
            points = [
                (r["n"], r[key]["median_s"]) for r in runs if r["backend"] == backend and key in r
            ]
            if points:
                ns, ts = zip(*sorted(points))
                ax.loglog(ns, ts, marker="o", label=backend, color=colours[backend])
        ax.set_xlabel("number of points n")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=8)
    axes[0].set_ylabel("median time per distance matrix [s]")
    fig.suptitle("Squared distance matrix, runtime vs n" + _title_suffix(data))
    return [save_figure(fig, output_dir / "distance_runtime.png")]


def _distance_ops(data: dict[str, Any], output_dir: Path) -> list[Path]:
    plt = pyplot()
    rows = data["results"]
    keys = [k for k in OPS_KEYS if any(k in r for r in rows)]
    fig, ax = plt.subplots(figsize=(max(6, 1.5 * len(rows)), 5))
    width = 0.8 / max(1, len(keys))
    for i, key in enumerate(keys):
        xs = [j + i * width for j, r in enumerate(rows) if key in r]
        ax.bar(xs, [r[key] for r in rows if key in r], width, label=key)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(rows))], [str(r["n"]) for r in rows])
    ax.set_yscale("log")
    ax.set_xlabel("number of points n")
    ax.set_ylabel("mean time [us]")
    ax.set_title("Time per operation, NumPy (np) vs CuPy (cp)" + _title_suffix(data))
    ax.legend(fontsize=8)
    return [save_figure(fig, output_dir / "distance_ops.png")]


def _distance_memory(data: dict[str, Any], output_dir: Path) -> list[Path]:
    plt = pyplot()
    res = data["results"]
    names = [k for k in ("cupy", "cupy-lean") if k in res]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    bars = ax.bar(
        names,
        [res[k]["peak_bytes"] / 1e9 for k in names],
        color=["tab:red", "tab:green"][: len(names)],
    )
    ax.axhline(
        res["output_bytes"] / 1e9, color="black", linestyle="--", label="size of the output matrix"
    )
    for bar, k in zip(bars, names):
        ax.annotate(
            f"{res[k]['peak_over_output']:.2f}x",
            (bar.get_x() + bar.get_width() / 2, bar.get_height()),
            ha="center",
            va="bottom",
        )
    ax.set_ylabel("peak GPU memory [GB]")
    ax.set_title(f"Peak memory, n = {res['n']} ({res['dtype']})" + _title_suffix(data))
    ax.legend()
    return [save_figure(fig, output_dir / "distance_memory.png")]


def _distance_overhead(data: dict[str, Any], output_dir: Path) -> list[Path]:
    plt = pyplot()
    rows = data["results"]["rows"]
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    fig, axes = plt.subplots(1, len(dtypes), figsize=(6 * len(dtypes), 4.5), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        mine = sorted((r for r in rows if r["dtype"] == dtype), key=lambda r: r["n"])
        for key, label in OVERHEAD_SERIES.items():
            if all(key in r for r in mine):
                ax.loglog([r["n"] for r in mine], [r[key] * 1e6 for r in mine], "o-", label=label)
        ax.set_xlabel("number of points n")
        ax.set_ylabel("time per call [us]")
        ax.set_title(dtype)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("One distance matrix per call, back to back" + _title_suffix(data))
    return [save_figure(fig, output_dir / "distance_overhead.png")]


OVERHEAD_SERIES = {
    "public_cupy_out_s": "distance_matrix_device, CuPy arrays",
    "public_numba_out_s": "distance_matrix_device, Numba arrays",
    "raw_numba_launch_s": "the same kernel, kernel[grid, block](...)",
    "torch_cdist_s": "torch.cdist",
}


def _resolve(spec: str) -> Callable[[dict[str, Any], Path], list[Path]]:
    module_name, _, function = spec.partition(":")
    return getattr(importlib.import_module(module_name), function)


def plot_directory(input_dir: Path, output_dir: Path) -> list[Path]:
    """Draw every figure for the result JSON files in *input_dir*; returns the PNG paths."""
    input_dir, output_dir = Path(input_dir), Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for path in sorted(input_dir.glob("*.json")):
        try:
            data = read_json(path)
        except (OSError, json.JSONDecodeError) as exc:
            print(f"skipping {path.name}: not readable JSON ({exc})")
            continue
        benchmark = data.get("benchmark") if isinstance(data, dict) else None
        if benchmark is None:
            continue  # e.g. the compatibility files measurements*.json
        spec = REGISTRY.get(benchmark)
        if spec is None:
            print(f"skipping {path.name}: no plot registered for benchmark {benchmark!r}")
            continue
        try:
            draw = _resolve(spec)
        except (ImportError, AttributeError) as exc:
            print(f"skipping {path.name}: plotting for {benchmark!r} is not available ({exc})")
            continue
        try:
            written.extend(draw(data, output_dir))
        except (KeyError, ValueError, TypeError) as exc:  # a malformed or empty result file
            print(f"skipping {path.name}: cannot plot it ({type(exc).__name__}: {exc})")
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input", type=Path, default=RESULTS_DIR, help="folder with result JSON files"
    )
    parser.add_argument(
        "--output", type=Path, help="folder for the PNG files (default: the input folder)"
    )


def main(args: argparse.Namespace) -> int:
    if not Path(args.input).is_dir():
        print(f"no such folder: {args.input}")
        return 1
    written = plot_directory(args.input, args.output or args.input)
    for path in written:
        print(f"wrote {path}")
    if not written:
        print(f"no figures drawn from {args.input}")
    return 0
