"""Every size the benchmarks use, in one place; the plots and tests read them from here.

A size written twice drifts: the figure's axis then claims sizes the data does
not have. Benchmarks take these as defaults (each can be overridden on the
command line, and the JSON records what was used).
"""

from __future__ import annotations

import argparse

# python -m demos bench distance: the sweep over backends (chapter 3's "GPU loses below a
# few hundred points"), and the larger reference run recorded on a GPU node
DISTANCE_SIZES = (64, 256, 1024, 4096)
DISTANCE_REFERENCE_SIZES = (16, 64, 256, 1024, 4096, 16384)
CHECK_MAX_N = 2048  # results up to this size are checked in full against the float64 reference
SPOT_CHECK_ROWS = 64  # larger results: this many sampled rows are checked

# chapter 3's per-operation breakdown; the plot draws these keys in this order
OPS_STEPS = ("einsum", "matmul", "ops")
OPS_KEYS = tuple(f"{lib}.{step}" for lib in ("np", "cp") for step in OPS_STEPS)

# chapter 3's memory limit: 27,000 float64 points make a 5.8 GB matrix
MEMORY_N = 27_000

# the public device API against a raw kernel launch and torch.cdist (per call)
OVERHEAD_SIZES = (256, 1024, 4096, 16384, 32768)

# python -m demos bench kernels: the course's target case per dtype ...
KERNEL_PROBLEMS = {"float32": 32_768, "float64": 4_096}
# ... and the tuning grid of the tuned kernels (threads per block x rows per thread)
KERNEL_BLOCKS = (128, 256)
KERNEL_ROWS_PER_THREAD = (8, 16, 32, 64, 128)
KERNEL_BLOCKS_FULL = (64, 128, 256, 512, 1024)
KERNEL_ROWS_PER_THREAD_FULL = (1, 2, 4, 8, 16, 32, 64)

# python -m demos bench cnn: training batch sizes (CPU devices use those <= 256)
CNN_BATCH_SIZES = (32, 256, 1024, 4096)

# python -m demos bench multigpu: float32 elements of the reduction's crossover curve,
# and the Lorenz ensemble (trajectories, steps)
MULTIGPU_REDUCE_SIZES = (1_000_000, 10_000_000, 30_000_000, 100_000_000, 300_000_000, 750_000_000)
LORENZ_TRAJECTORIES = 8_388_608
LORENZ_STEPS = 1000


def int_list(text: str) -> list[int]:
    """argparse type: comma-separated positive integers ("reference": the shipped run's sizes)."""
    if text == "reference":
        return list(DISTANCE_REFERENCE_SIZES)
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers, got {text!r}"
        ) from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"sizes must be positive integers, got {text!r}")
    return values
