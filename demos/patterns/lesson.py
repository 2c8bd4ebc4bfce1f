"""Immediate checks for the "your turn" cells of chapter 4b.

Each check runs the student's kernel in the simulator on counted arrays (see
:mod:`demos.patterns.checks`) and prints what was right or raises an
``AssertionError`` saying what to fix.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from demos.patterns import checks

N_BINS = 16


def _values(n: int = 400) -> np.ndarray:
    return np.random.default_rng(3).integers(0, N_BINS, n).astype(np.int32)


def check_atomic_histogram(kernel: Any) -> None:
    """The kernel counts right and never writes the global bins with a plain store."""
    values = _values()
    report = checks.histogram_report(kernel, values, N_BINS, blocks=2, threads=32)
    assert np.array_equal(report["counts"], np.bincount(values, minlength=N_BINS)), (
        "the counts are wrong"
    )
    assert report["plain_writes_to_bins"] == 0, (
        f"{report['plain_writes_to_bins']} plain writes to bins: "
        "use cuda.atomic.add(bins, value, 1)"
    )
    print(f"Right counts with {report['atomics_on_bins']} global atomics (one per value).")


def check_shared_histogram(kernel: Any) -> None:
    """Privatised: each value read once, at most one global atomic per bin and block."""
    values = _values()
    report = checks.histogram_report(kernel, values, N_BINS, blocks=2, threads=32)
    assert np.array_equal(report["counts"], np.bincount(values, minlength=N_BINS)), (
        "the counts are wrong"
    )
    assert report["shared_arrays"] > 0, (
        "no cuda.shared.array: the block's histogram belongs in shared memory"
    )
    assert report["most_reads_of_a_value"] == 1, "a value is read from global memory more than once"
    worst = report["most_atomics_per_bin_and_block"]
    assert worst <= 1, (
        f"a block made {worst} global atomics on one bin; add each bin once, after a barrier"
    )
    print(f"Right counts with {report['atomics_on_bins']} global atomics for {len(values)} values.")


def check_warp_sum(kernel: Any, threads: int = 64) -> None:
    """One partial sum per block, each value read once, fewer barriers than a shared-memory tree."""
    x = np.random.default_rng(4).random(300).astype(np.float32)
    report = checks.block_sum_report(kernel, x, blocks=2, threads=threads)
    expected = checks.expected_block_sums(x, 2, threads)
    assert np.allclose(report["partial"], expected, rtol=1e-5), (
        f"block sums {report['partial']} instead of {expected}"
    )
    assert report["most_reads_of_a_value"] == 1, "a value is read from global memory more than once"
    assert report["writes_to_partial"] == 2, "each block should write its sum once"
    print(f"Right block sums with {report['barriers_per_thread']:.0f} barrier(s) per thread.")
