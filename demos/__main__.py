"""``python -m demos``: the command line of the course package.

Subcommands live in their own modules and are imported only when chosen, so
that ``python -m demos info`` does not pay for importing TensorFlow. Each
module provides ``add_arguments(parser)`` and ``main(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# (words on the command line) -> (module, one-line help)
COMMANDS: dict[tuple[str, ...], tuple[str, str]] = {
    ("info",): ("demos.hardware", "what this machine offers: GPUs, simulator, CuPy, TensorFlow"),
    ("bench", "distance"): (
        "demos.benchmarks.distance",
        "time the distance-matrix backends over sizes",
    ),
    ("bench", "kernels"): (
        "demos.benchmarks.kernels",
        "the Numba CUDA kernels against the write floor",
    ),
    ("bench", "cnn"): ("demos.cnn.bench", "training throughput of the chapter 5 CNN"),
    ("bench", "multigpu"): ("demos.multigpu.bench", "scaling of the chapter 6 examples over GPUs"),
    ("bench", "profiling"): (
        "demos.profiling.bench",
        "chapter 4a: timing, syncs, timeline, overlap, pool",
    ),
    ("bench", "patterns"): ("demos.patterns.bench", "chapter 4b: histograms and sums vs bandwidth"),
    ("bench", "matmul"): (
        "demos.patterns.matmul_bench",
        "chapter 4b: naive vs shared-memory tiled matrix multiply, and cuBLAS",
    ),
    ("bench", "inflight"): (
        "demos.patterns.inflight_bench",
        "chapter 4b: a sum's read rate by block size and loads in flight",
    ),
    ("bench", "lessons"): (
        "demos.lessons.bench",
        "the measured lessons: divergence, coalescing, copies, NumPy",
    ),
    ("plot",): ("demos.plots", "draw the course figures from benchmark JSON"),
    ("cluster", "dask"): (
        "demos.cluster.dask_jobs",
        "chapter 6 on several nodes: Dask workers as Slurm/LSF jobs, one per GPU",
    ),
    ("cluster", "mpi"): (
        "demos.cluster.mpi_ranks",
        "chapter 6 on several nodes: one MPI rank per GPU (srun --mpi=pmi2 -n N ...)",
    ),
}


def _usage() -> str:
    width = max(len(" ".join(words)) for words in COMMANDS)
    lines = ["usage: python -m demos COMMAND [options]", "", "commands:"]
    for words, (_, text) in COMMANDS.items():
        lines.append(f"  {' '.join(words):<{width}}  {text}")
    lines.append("")
    lines.append("'python -m demos COMMAND --help' shows a command's options.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    for words, (module_name, text) in sorted(COMMANDS.items(), key=lambda kv: -len(kv[0])):
        if tuple(argv[: len(words)]) == words:
            module = importlib.import_module(module_name)
            parser = argparse.ArgumentParser(
                prog="python -m demos " + " ".join(words), description=text
            )
            module.add_arguments(parser)
            return int(module.main(parser.parse_args(argv[len(words) :])) or 0)
    if argv and argv[0] not in ("-h", "--help", "help"):
        print(f"unknown command: {' '.join(argv)}\n", file=sys.stderr)
        print(_usage(), file=sys.stderr)
        return 2
    print(_usage())
    return 0


if __name__ == "__main__":
    sys.exit(main())
