"""Chapter 4d's checks: typical mistakes named, correct alternatives accepted.

Why: a student who forgets one rounding rule should hear which one; a student
who writes the rule another correct way (the calculator's "warp allocation
granularity" instead of the register file's parts, a NumPy integer) must pass.
"""

from __future__ import annotations

import pytest

from demos.checks import passes
from helpers import notebook_cell

MISTAKES = {
    "blocks_per_sm": [
        (  # threads instead of whole warps
            """
import math
def blocks_per_sm(registers, threads, shared, limits):
    by_threads = limits["max_threads_per_sm"] // threads
    per_warp = math.ceil(registers * 32 / 256) * 256
    by_registers = limits["registers_per_sm"] // 4 // per_warp * 4 // math.ceil(threads / 32)
    per_block = math.ceil((shared + 1024) / 128) * 128
    return min(by_threads, limits["max_blocks_per_sm"], by_registers,
               limits["shared_per_sm"] // per_block)
""",
            "whole warps",
        ),
        (  # registers per thread, no rounding, no partitions
            """
import math
def blocks_per_sm(registers, threads, shared, limits):
    warps = math.ceil(threads / 32)
    by_registers = limits["registers_per_sm"] // (registers * threads)
    per_block = math.ceil((shared + 1024) / 128) * 128
    return min(64 // warps, limits["max_blocks_per_sm"], by_registers,
               limits["shared_per_sm"] // per_block)
""",
            "rounded up to a multiple of 256",
        ),
        (  # the reserved kilobyte forgotten
            """
import math
def blocks_per_sm(registers, threads, shared, limits):
    warps = math.ceil(threads / 32)
    per_warp = math.ceil(registers * 32 / 256) * 256
    by_registers = limits["registers_per_sm"] // 4 // per_warp * 4 // warps
    per_block = max(128, math.ceil(shared / 128) * 128)
    return min(64 // warps, limits["max_blocks_per_sm"], by_registers,
               limits["shared_per_sm"] // per_block)
""",
            "1024 reserved bytes",
        ),
        (  # a block's warps counted as threads / 32, not whole warps, for the registers
            """
import math
def blocks_per_sm(registers, threads, shared, limits):
    warps = math.ceil(threads / 32)
    per_warp = math.ceil(registers * 32 / 256) * 256
    by_registers = limits["registers_per_sm"] // 4 // per_warp * 4 // (threads / 32)
    per_block = math.ceil((shared + 1024) / 128) * 128
    return int(min(64 // warps, 32, by_registers, limits["shared_per_sm"] // per_block))
""",
            "a block needs all its 4 warps",
        ),
        (  # a block's largest shared memory taken for the SM's
            """
import math
def blocks_per_sm(registers, threads, shared, limits):
    warps = math.ceil(threads / 32)
    per_warp = math.ceil(registers * 32 / 256) * 256
    by_registers = limits["registers_per_sm"] // 4 // per_warp * 4 // warps
    per_block = math.ceil((shared + 1024) / 128) * 128
    return min(64 // warps, 32, by_registers, limits["max_shared_per_block"] // per_block)
""",
            "share the SM's shared_per_sm",
        ),
    ],
    "largest_shared": [
        (  # a key guessed from the printed labels: the keys are named, not a traceback
            "def largest_shared(blocks, limits):\n"
            "    return limits['shared_memory_per_sm'] // blocks - 1024",
            "limits has no key 'shared_memory_per_sm'; its keys: warp_size",
        ),
        (
            "def largest_shared(blocks, limits):\n"
            "    return limits['shared_per_sm'] // blocks - 1024",
            "only 4 blocks fit",
        ),
        (
            "def largest_shared(blocks, limits):\n"
            "    return limits['shared_per_sm'] // blocks // 128 * 128 - 1024 - 128",
            "is not the largest",
        ),
    ],
    "intensity": [
        (  # chapter 4b's count: the loads the kernel issues
            """
def intensity(kernel, n, itemsize):
    return {"sum": 1, "histogram": 1, "distance": 8 * n * n / (n * n + 3 * n),
            "matmul": 2 / (2 * 1)}[kernel] / itemsize
""",
            "a and b are read once and c written once",
        ),
        (  # reads only: the matrix written is forgotten
            """
def intensity(kernel, n, itemsize):
    return {"sum": 1, "histogram": 1, "distance": 8 * n * n / (6 * n),
            "matmul": 2 * n / 3}[kernel] / itemsize
""",
            "entries must be written",
        ),
        ("def intensity(kernel, n, itemsize):\n    return 'memory'", "return operations per byte"),
        (  # bytes per operation
            """
def intensity(kernel, n, itemsize):
    elements = {"sum": n, "histogram": n, "distance": n * n + 3 * n, "matmul": 3 * n * n}
    ops = {"sum": n, "histogram": n, "distance": 8 * n * n, "matmul": 2 * n**3}
    return elements[kernel] * itemsize / ops[kernel]
""",
            "that is bytes per operation",
        ),
        (  # elements, not bytes
            """
def intensity(kernel, n, itemsize):
    if kernel in ("sum", "histogram"):
        return 1 / itemsize
    if kernel == "distance":
        return 8 * n * n / (n * n + 3 * n)
    return 2 * n**3 / (3 * n * n)
""",
            "count bytes, not elements",
        ),
    ],
}


@pytest.mark.parametrize(
    "name, source, words",
    [(name, source, words) for name, cases in MISTAKES.items() for source, words in cases],
)
def test_mistakes_are_named(name: str, source: str, words: str, capsys) -> None:
    assert passes(name, notebook_cell(source, name)) is False
    said = capsys.readouterr().out
    assert words in said, said


ALTERNATIVES = {
    "blocks_per_sm": """
import numpy as np
def blocks_per_sm(registers, threads, shared, limits):
    # the occupancy calculator's way: warps rounded down to a multiple of 4 warps
    warps = -(-threads // 32)
    per_warp = -(-registers * 32 // 256) * 256
    by_registers = (limits["registers_per_sm"] // per_warp) // 4 * 4 // warps
    per_block = -(-(shared + limits["shared_reserved_per_block"]) // 128) * 128
    return np.int64(min(limits["max_threads_per_sm"] // 32 // warps, limits["max_blocks_per_sm"],
                        by_registers, limits["shared_per_sm"] // per_block))
""",
    "largest_shared": """
def largest_shared(blocks, limits):
    size = 0
    while (size + 1 + 1024 + 127) // 128 * 128 * blocks <= limits["shared_per_sm"]:
        size += 1
    return float(size)
""",
    "intensity": """
def intensity(kernel, n, itemsize):
    reads = {"sum": n, "histogram": n, "distance": 6 * n, "matmul": 2 * n * n}[kernel]
    writes = {"sum": 0, "histogram": 0, "distance": n * n, "matmul": n * n}[kernel]
    ops = {"sum": n - 1, "histogram": n, "distance": 8 * n * n, "matmul": 2 * n**3}[kernel]
    return ops / ((reads + writes) * itemsize)
""",
}


@pytest.mark.parametrize("name", sorted(ALTERNATIVES))
def test_correct_alternatives_pass(name: str, capsys) -> None:
    assert passes(name, notebook_cell(ALTERNATIVES[name], name)) is True, capsys.readouterr().out


def test_a_histogram_that_counts_its_bins_written_passes(capsys) -> None:
    """The chapter says every output is written once: a histogram's 256 bins are an output, and
    a student who counts them is right (at the sizes checked they change nothing)."""
    source = """
def intensity(kernel, n, itemsize):
    if kernel == "sum":
        return n / ((n + 1) * itemsize)  # the total written too
    if kernel == "histogram":
        return n / (n * itemsize + 256 * 4)  # 256 int32 bins written once
    if kernel == "distance":
        return 8 * n * n / ((n * n + 3 * n) * itemsize)
    return 2 * n**3 / (3 * n * n * itemsize)
"""
    assert passes("intensity", notebook_cell(source, "intensity")) is True, capsys.readouterr().out
