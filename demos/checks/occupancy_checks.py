"""Checks for the "your turn" cells of chapter 4d (occupancy and the roofline).

Each check runs the student's function on cases where a different budget is the
binding one (or a different rounding matters) and compares with the course's
model (:mod:`demos.patterns.occupancy`, :mod:`demos.patterns.roofline`); a
wrong answer is explained by the factor or the term the student missed.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

from demos.checks._harness import CheckFailed
from demos.patterns import occupancy, roofline

# (registers per thread, threads per block, shared bytes per block, compute capability)
BLOCK_CASES = [
    (32, 256, 0, "9.0"),  # the warps
    (32, 32, 0, "9.0"),  # the block limit
    (24, 1, 0, "9.0"),  # chapter 4's blocks of one thread
    (64, 256, 0, "9.0"),  # registers
    (33, 256, 0, "9.0"),  # registers, rounded up per warp
    (40, 96, 0, "9.0"),  # registers, a whole number of warps per quarter of the register file
    (16, 100, 0, "9.0"),  # a block takes whole warps
    (64, 100, 0, "9.0"),  # registers, for whole warps of a block of 100 threads
    (32, 128, 46000, "9.0"),  # shared memory, with the reserved kilobyte
    (32, 128, 45600, "9.0"),  # shared memory, rounded up
    (32, 256, 49152, "8.0"),  # shared memory on an A100
    (32, 32, 115712, "9.0"),  # shared memory: the SM's shared_per_sm, not a block's maximum
    (64, 1024, 0, "9.0"),  # one large block
    (128, 1024, 0, "9.0"),  # too many registers for the block: it cannot run
]


def _whole(value: Any, call: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise CheckFailed(f"{call} returned {value!r}: return a number of blocks (an int).")
    if value != int(value):
        raise CheckFailed(f"{call} returned {value!r}: blocks come whole, round down.")
    return int(value)


def _call(student: Callable[..., Any], call: str, *args: Any) -> Any:
    """The student's answer; a key that *limits* lacks is named with the keys it has."""
    try:
        return student(*args)
    except KeyError as missing:
        keys = ", ".join(k for k in occupancy.KEYS if k in args[-1])
        raise CheckFailed(f"{call}: limits has no key {missing}; its keys: {keys}.") from None


def _why(registers: int, threads: int, shared: int, limits: dict[str, Any]) -> str:
    by = occupancy.blocks_by_factor(registers, threads, shared, limits)
    binding = min(by, key=by.get)
    warps = -(-threads // limits["warp_size"])
    hints = {
        "warps": f"a block of {threads} threads takes {warps} whole warps of the "
        f"{limits['max_threads_per_sm'] // limits['warp_size']} an SM holds",
        "blocks": f"an SM holds at most {limits['max_blocks_per_sm']} blocks, however small",
        "registers": "registers are given per warp, rounded up to a multiple of "
        f"{limits['register_unit']}, each of the {limits['register_partitions']} parts of the "
        f"register file holds whole warps only, and a block needs all its {warps} warps",
        "shared memory": f"each block also takes {limits['shared_reserved_per_block']} reserved "
        f"bytes, its total is rounded up to a multiple of {limits['shared_unit']}, and the "
        "blocks share the SM's shared_per_sm",
    }
    return f"here the {binding} limit it: {hints[binding]}"


def blocks_per_sm(student: Callable[..., Any]) -> str:
    for registers, threads, shared, cc in BLOCK_CASES:
        limits = occupancy.limits_for(cc)
        call = f"blocks_per_sm({registers}, {threads}, {shared}, limits of {cc})"
        got = _whole(_call(student, call, registers, threads, shared, dict(limits)), call)
        want = occupancy.blocks_per_sm(registers, threads, shared, limits)
        if got != want:
            raise CheckFailed(
                f"{call} returned {got}, expected {want}; "
                f"{_why(registers, threads, shared, limits)}."
            )
    return (
        f"right for {len(BLOCK_CASES)} cases, each limited by warps, blocks, registers or shared "
        "memory, with every rounding."
    )


def largest_shared(student: Callable[..., Any]) -> str:
    cases = [(cc, k) for cc in ("9.0", "8.0") for k in (1, 2, 3, 5, 7, 16, 32)]
    for cc, blocks in cases:
        limits = occupancy.limits_for(cc)
        call = f"largest_shared({blocks}, limits of {cc})"
        got = _whole(_call(student, call, blocks, dict(limits)), call)
        fits = occupancy.blocks_per_sm(0, 32, max(got, 0), limits)
        more = occupancy.blocks_per_sm(0, 32, got + 1, limits)
        if got < 0 or fits < blocks:
            raise CheckFailed(
                f"{call} returned {got:,} bytes, but then only {fits} blocks fit: count the "
                f"{limits['shared_reserved_per_block']} reserved bytes of every block and round "
                f"each block's total up to a multiple of {limits['shared_unit']}."
            )
        if more >= blocks:
            raise CheckFailed(
                f"{call} returned {got:,} bytes, but {got + 1:,} would still let {blocks} blocks "
                "fit: that is not the largest."
            )
    return f"right for {len(cases)} cases on compute capabilities 9.0 and 8.0."


def intensity(student: Callable[..., Any]) -> str:
    hints = {
        "sum": "a sum reads each value once and does one addition per value",
        "histogram": "a histogram reads each value once and adds one to a bin per value",
        "distance": "a distance matrix does 8 operations per entry, and every one of its n x n "
        "entries must be written to memory (the 3-D points are few)",
        "matmul": "a matrix product does 2 n^3 operations; at the least, a and b are read once "
        "and c written once: 3 n^2 elements (a kernel's own repeated loads are not DRAM traffic "
        "an ideal cache would make)",
    }
    # sizes at which a few bytes of result (a sum's total, a histogram's bins) change nothing
    cases = [(k, n, s) for k in roofline.KERNELS for n in (2**16, 2**20) for s in (4, 8)]
    for kernel, n, itemsize in cases:
        call = f'intensity("{kernel}", {n}, {itemsize})'
        got = student(kernel, n, itemsize)
        if isinstance(got, bool) or not isinstance(got, numbers.Real):
            raise CheckFailed(f"{call} returned {got!r}: return operations per byte, a number.")
        want = roofline.intensity(kernel, n, itemsize)
        if abs(got - want) > 0.01 * want:
            why = _slip(got, want, itemsize) or hints[kernel]
            raise CheckFailed(f"{call} returned {got:.4g}, expected {want:.4g}: {why}.")
    return "right for the sum, the histogram, the distance matrix and the matrix product."


def _slip(got: float, want: float, itemsize: int) -> str:
    """The hint for a slip that holds for every kernel: bytes per operation, or elements for
    bytes."""
    if got > 0 and abs(1 / got - want) <= 0.01 * want:
        return "that is bytes per operation; intensity is operations per byte"
    if abs(got - want * itemsize) <= 0.01 * want * itemsize:
        return f"count bytes, not elements: each element moved is {itemsize} bytes (itemsize)"
    return ""
