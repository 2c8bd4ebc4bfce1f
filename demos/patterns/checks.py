"""What a histogram or block-sum kernel did, counted: for the chapter's checks and the assignment.

Each report runs the kernel in the simulator (also on a GPU machine, see
:func:`~demos.patterns.simulator.simulated`) on wrapped arrays and returns plain
numbers: the result, how often each input element was read, how many plain
writes and atomics reached the global output (per bin and block), how many
barriers and shared arrays the kernel used. The callers decide what is good
enough; the numbers are the same on every machine, so a grade built on them is too.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

from demos.patterns import kernels
from demos.patterns.simulator import AccessLog, python_function, simulated


def _course_code_objects() -> set[types.CodeType]:
    """Code objects of every kernel in :mod:`demos.patterns.kernels`, nested ones included."""
    found: set[types.CodeType] = set()
    stack = [getattr(obj, "__code__", None) for obj in vars(kernels).values()]
    stack += [
        getattr(python_function(k), "__code__", None)
        for k in (kernels.histogram_racy, kernels.histogram_global_atomic)
    ]
    while stack:
        code = stack.pop()
        if isinstance(code, types.CodeType) and code not in found:
            found.add(code)
            stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return found


def is_course_kernel(kernel: Any) -> bool:
    """True when *kernel* is (or runs the code of) one of the course package's own kernels."""
    from demos.grading import uses_course_code

    fn = python_function(kernel)
    return uses_course_code(fn) or fn.__code__ in _course_code_objects()


def _counted_launch(
    kernel: Any, values: np.ndarray, out: np.ndarray, out_name: str, blocks: int, threads: int
) -> tuple[AccessLog, np.ndarray, dict[str, int]]:
    """Run ``kernel[blocks, threads](values, out)`` in the simulator with every access counted.

    Returns the log, the (wrapped) output and how often the least- and the most-read
    input value was read: each should be read exactly once.
    """
    log = AccessLog()
    wrapped_values = log.wrap(np.ascontiguousarray(values), "values")
    wrapped_out = log.wrap(out, out_name)
    with log.counting():
        simulated(kernel)[blocks, threads](wrapped_values, wrapped_out)
    counts = [log.reads.get(("values", (i,)), 0) for i in range(len(values))]
    reads = {"fewest_reads_of_a_value": min(counts), "most_reads_of_a_value": max(counts)}
    return log, wrapped_out, reads


def histogram_report(
    kernel: Any, values: np.ndarray, n_bins: int, blocks: int, threads: int
) -> dict:
    """Run a histogram kernel ``kernel[blocks, threads](values, bins)`` counted; what it did."""
    log, bins, reads = _counted_launch(
        kernel, values, np.zeros(n_bins, np.int32), "bins", blocks, threads
    )
    return {
        "counts": np.asarray(bins).copy(),
        **reads,
        "plain_writes_to_bins": log.total(log.writes, "bins"),
        "atomics_on_bins": log.total(log.atomics, "bins"),
        "most_atomics_per_bin_and_block": log.max_atomics_per_bin_and_block("bins"),
        "shared_arrays": log.shared_arrays,
    }


def block_sum_report(kernel: Any, values: np.ndarray, blocks: int, threads: int) -> dict:
    """Run ``kernel[blocks, threads](values, partial)`` counted (one partial sum per block
    expected)."""
    log, partial, reads = _counted_launch(
        kernel, values, np.zeros(blocks, values.dtype), "partial", blocks, threads
    )
    return {
        "partial": np.asarray(partial).copy(),
        **reads,
        "writes_to_partial": log.total(log.writes, "partial"),
        "atomics": log.total(log.atomics, "partial") + log.total(log.atomics, "values"),
        "barriers_per_thread": log.barriers / (blocks * threads),
        "shared_arrays": log.shared_arrays,
    }


def expected_block_sums(values: np.ndarray, blocks: int, threads: int) -> np.ndarray:
    """What a grid-stride block sum must give: block b adds the elements whose thread is in block
    b."""
    owner = (np.arange(len(values)) % (blocks * threads)) // threads
    return np.bincount(owner, weights=values.astype(np.float64), minlength=blocks)
