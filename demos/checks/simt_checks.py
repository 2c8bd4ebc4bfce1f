"""Checks for the "your turn" cells of chapter 2 (the SIMT model)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from demos.checks._harness import (
    CheckFailed,
    GuardedInput,
    GuardedOutput,
    blocks,
    compare,
    launch,
    on_gpu,
)


def blocks_for(student: Callable[[int, int], int]) -> str:
    cases = [(1, 32), (31, 32), (32, 32), (33, 32), (1000, 256), (1024, 256), (7, 3)]
    for n, per_block in cases:
        got = student(n, per_block)
        want = -(-n // per_block)
        if got != want:
            raise CheckFailed(
                f"blocks_for({n}, {per_block}) returned {got!r}, expected {want}: "
                "round *up*, so that the last, partly filled block is launched too."
            )
    return f"right for {len(cases)} cases, including sizes that are not multiples of the block."


def add_to_kernel(kernel: Any) -> str:
    rng = np.random.default_rng(2)
    sizes = [1, 31, 32, 33, 100] + ([1_000_003] if on_gpu() else [])
    for n in sizes:
        source = rng.random(n)
        start = rng.random(n)
        target = GuardedOutput((n,), initial=start)
        given = GuardedInput(source)  # NaN past its ends: a read there spoils what it adds to
        launch(kernel, blocks(n, 32), 32, given.view, target.view, what=f"n = {n}")
        compare(target.fetch(f"n = {n}"), start + source, f"n = {n}")
    return (
        f"correct for n = {', '.join(map(str, sizes))} with blocks of 32 (no writes past the end)."
    )


def add_matrices_kernel(kernel: Any) -> str:
    rng = np.random.default_rng(3)
    shapes = [(1, 1), (5, 7), (17, 9)] + ([(3001, 2999)] if on_gpu() else [])
    block = (8, 4)
    for shape in shapes:
        a, b = rng.random(shape), rng.random(shape)
        out = GuardedOutput(shape)
        side = max(shape)  # a square grid, so that either index order reaches every entry
        grid = (blocks(side, block[0]), blocks(side, block[1]))
        a_in, b_in = GuardedInput(a), GuardedInput(b)
        launch(kernel, grid, block, a_in.view, b_in.view, out.view, what=f"shape {shape}")
        compare(out.fetch(f"shape {shape}"), a + b, f"shape {shape}")
    return f"correct for shapes {shapes} with 8 x 4 blocks."


def warp_cost(student: Callable[[list, dict], int]) -> str:
    lanes = range(32)
    cases = [
        (
            [("even" if lane % 2 == 0 else "odd") for lane in lanes],
            {"even": 200, "odd": 200},
            400,
            "two different branches of equal length both run",
        ),
        (["a"] * 32, {"a": 30, "b": 10}, 30, "a uniform warp runs only its own branch"),
        ([("a" if lane < 16 else "b") for lane in lanes], {"a": 10, "b": 30}, 40, "half and half"),
        (
            [("a", "b", "c")[lane % 3] for lane in lanes],
            {"a": 5, "b": 5, "c": 7},
            17,
            "three branches",
        ),
    ]
    for lane_branch, steps, want, why in cases:
        got = student(list(lane_branch), dict(steps))
        if got != want:
            raise CheckFailed(
                f"for branches {sorted(set(lane_branch))} with steps {steps} you return "
                f"{got!r}, expected {want} ({why})."
            )
    return "your model counts every distinct branch a warp takes, even two of equal length."
