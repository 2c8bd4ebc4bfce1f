"""Checks for chapter 4b's "your turn" cells: an atomic histogram, a shared-memory histogram and a
warp-shuffle block sum.

Each runs the student's kernel in the simulator on counted arrays (see
:mod:`demos.patterns.checks`): a right answer is not enough, the kernel must also
use the pattern the cell teaches (no plain stores to the bins, each value read once,
one global atomic per bin and block).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from demos.checks._harness import CheckFailed
from demos.patterns import checks
from demos.patterns.lesson import N_BINS, THREADS


def _values(n: int = 400) -> np.ndarray:
    return np.random.default_rng(3).integers(0, N_BINS, n).astype(np.int32)


def _same_counts(report: dict[str, Any], values: np.ndarray) -> None:
    expected = np.bincount(values, minlength=N_BINS)
    wrong = np.flatnonzero(report["counts"] != expected)
    if wrong.size:
        b = int(wrong[0])
        raise CheckFailed(
            f"bin {b} holds {report['counts'][b]}, expected {expected[b]} "
            f"({wrong.size} of {N_BINS} bins wrong)."
        )


def histogram_atomic(kernel: Any) -> str:
    """The kernel counts right and never writes the global bins with a plain store."""
    values = _values()
    report = checks.histogram_report(kernel, values, N_BINS, blocks=2, threads=32)
    _same_counts(report, values)
    if report["plain_writes_to_bins"]:
        raise CheckFailed(
            f"{report['plain_writes_to_bins']} plain writes to bins: "
            "use cuda.atomic.add(bins, value, 1)."
        )
    return f"right counts with {report['atomics_on_bins']} global atomics (one per value)."


def histogram_shared(kernel: Any) -> str:
    """Privatised: each value read once, at most one global atomic per bin and block."""
    values = _values()
    report = checks.histogram_report(kernel, values, N_BINS, blocks=2, threads=32)
    _same_counts(report, values)
    if report["shared_arrays"] == 0:
        raise CheckFailed("no cuda.shared.array: the block's histogram belongs in shared memory.")
    if report["most_reads_of_a_value"] != 1:
        raise CheckFailed("a value is read from global memory more than once.")
    worst = report["most_atomics_per_bin_and_block"]
    if worst > 1:
        raise CheckFailed(
            f"a block made {worst} global atomics on one bin; add each bin once, after a barrier."
        )
    return f"right counts with {report['atomics_on_bins']} global atomics for {len(values)} values."


def warp_sum(kernel: Any) -> str:
    """One partial sum per block of ``THREADS``, each value read once."""
    x = np.random.default_rng(4).random(300).astype(np.float32)
    report = checks.block_sum_report(kernel, x, blocks=2, threads=THREADS)
    expected = checks.expected_block_sums(x, 2, THREADS)
    if not np.allclose(report["partial"], expected, rtol=1e-5):
        raise CheckFailed(f"block sums {report['partial']} instead of {expected}.")
    if report["most_reads_of_a_value"] != 1:
        raise CheckFailed("a value is read from global memory more than once.")
    if report["writes_to_partial"] != 2:
        raise CheckFailed(
            f"{report['writes_to_partial']} writes to partial for 2 blocks: "
            "each block should write its sum once."
        )
    return f"right block sums with {report['barriers_per_thread']:.0f} barrier(s) per thread."
