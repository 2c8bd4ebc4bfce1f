"""The grader's own answers to the assignments' problems, for their hidden tests to compare with.

The hidden tests of ``profiling`` and ``cnn`` need a reference in several
cells (the numbers and the synchronisations of one pipeline; the structure
and the forward pass of one model). They import it from here rather than
each writing it again. This module is part of the grader, never of the
student edition, and it solves each problem another way than the model
solution does (brute force over elementary time segments, a recursive
schedule, an explicit NumPy forward pass), so a slip in one is unlikely to
be repeated in the other.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# --- profiling, part 1: the vibration monitor --------------------------------------------------


def window_levels(windows: Sequence[np.ndarray]) -> list[float]:
    """Each window's level: the largest root mean square over its sensors (rows)."""
    return [float(np.sqrt((w * w).mean(axis=1)).max()) for w in windows]


def monitor(windows: Sequence[np.ndarray], threshold: float) -> tuple[int, float, int]:
    """(alarms, highest level among them, its window's index), or ``(0, 0.0, -1)``."""
    levels = window_levels(windows)
    above = [k for k, level in enumerate(levels) if level > threshold]
    if not above:
        return 0, 0.0, -1
    loudest = max(above, key=lambda k: (levels[k], -k))  # the first of equal levels
    return len(above), levels[loudest], loudest


def threshold_between(levels: Sequence[float], rng: np.random.Generator) -> float:
    """A threshold half-way between two neighbouring levels that are clearly apart.

    Rounding differences between honest ways of computing a level (1e-15
    relative) must never decide whether a window raises an alarm.
    """
    ordered = sorted(levels)
    gaps = [
        k for k in range(len(ordered) - 1) if ordered[k + 1] - ordered[k] > 1e-6 * ordered[k + 1]
    ]
    if not gaps:
        return 2.0 * ordered[-1]
    k = gaps[int(rng.integers(len(gaps)))]
    return 0.5 * (ordered[k] + ordered[k + 1])


# --- profiling, part 2: timelines ---------------------------------------------------------------


def peak_concurrency(intervals: Sequence[tuple[float, float]]) -> tuple[int, float]:
    """(most intervals running at one instant, total time that many run); half-open intervals."""
    times = sorted({t for interval in intervals for t in interval})
    counts = [
        (b - a, sum(s < 0.5 * (a + b) < e for s, e in intervals)) for a, b in zip(times, times[1:])
    ]
    most = max((count for _, count in counts), default=0)
    if most == 0:
        return 0, 0.0
    return most, sum(length for length, count in counts if count == most)


def predicted_timeline(
    steps: Sequence[tuple[str, float, Sequence[int]]],
) -> list[tuple[float, float]]:
    """(start, end) of each step: after its stream's earlier steps and the steps it waits for."""
    ends: dict[int, float] = {}

    def end(index: int) -> float:
        if index not in ends:
            stream, duration, waits_for = steps[index]
            earlier = [k for k in range(index) if steps[k][0] == stream]
            before = [end(k) for k in [*earlier, *waits_for]]
            ends[index] = max(before, default=0.0) + duration
        return ends[index]

    return [(end(k) - steps[k][1], end(k)) for k in range(len(steps))]


# --- cnn: the digits network -------------------------------------------------------------------

#: Each layer of the digits network: kind, output shape, parameters (moving statistics included).
DIGITS_LAYERS = [
    ("Conv2D", [None, 28, 28, 16], 144),
    ("BatchNormalization", [None, 28, 28, 16], 64),
    ("ReLU", [None, 28, 28, 16], 0),
    ("MaxPooling2D", [None, 14, 14, 16], 0),
    ("Conv2D", [None, 14, 14, 32], 4_608),
    ("BatchNormalization", [None, 14, 14, 32], 128),
    ("ReLU", [None, 14, 14, 32], 0),
    ("MaxPooling2D", [None, 7, 7, 32], 0),
    ("Conv2D", [None, 7, 7, 64], 18_496),
    ("GlobalAveragePooling2D", [None, 64], 0),
    ("Dense", [None, 10], 650),
]
#: Keras' default ``epsilon`` of BatchNormalization.
BATCH_NORM_EPSILON = 1e-3


def conv_params(
    kernel_size: int | tuple[int, int], in_channels: int, filters: int, bias: bool
) -> int:
    """Weights of a 2-D convolution: one kernel per filter over every input channel, and a bias."""
    high, wide = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    return filters * (high * wide * in_channels + int(bias))


def digits_weights(rng: np.random.Generator) -> list[np.ndarray]:
    """Random float32 weights for the digits network, moving statistics of any size included."""

    def batch_norm(channels: int) -> list[np.ndarray]:
        return [
            rng.uniform(0.5, 1.5, channels),  # gamma
            rng.normal(0.0, 0.2, channels),  # beta
            rng.normal(0.0, 0.2, channels),  # moving mean
            rng.uniform(0.3, 2.0, channels),  # moving variance
        ]

    weights = [rng.normal(0.0, 0.4, (3, 3, 1, 16)), *batch_norm(16)]
    weights += [rng.normal(0.0, 0.1, (3, 3, 16, 32)), *batch_norm(32)]
    weights += [rng.normal(0.0, 0.1, (3, 3, 32, 64)), rng.normal(0.0, 0.1, 64)]
    weights += [rng.normal(0.0, 0.3, (64, 10)), rng.normal(0.0, 0.1, 10)]
    return [w.astype(np.float32) for w in weights]


def _conv_same(x: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    """A stride-1 convolution with "same" zero padding of an odd kernel (NHWC, HWIO)."""
    high, wide = kernel.shape[:2]
    padded = np.pad(x, ((0, 0), (high // 2, high // 2), (wide // 2, wide // 2), (0, 0)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (high, wide), axis=(1, 2))
    return np.einsum("bhwcij,ijco->bhwo", windows, kernel)


def _batch_norm(x: np.ndarray, *statistics: np.ndarray) -> np.ndarray:
    gamma, beta, mean, variance = statistics  # in the order Keras keeps them
    return (x - mean) / np.sqrt(variance + BATCH_NORM_EPSILON) * gamma + beta


def _pool(x: np.ndarray) -> np.ndarray:
    b, h, w, c = x.shape
    return x[:, : h // 2 * 2, : w // 2 * 2].reshape(b, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def digits_logits(images: np.ndarray, weights: Sequence[np.ndarray]) -> np.ndarray:
    """The digits network's logits for *images*, in float64 NumPy, inference mode."""
    w = [np.asarray(v, dtype=np.float64) for v in weights]
    x = np.asarray(images, dtype=np.float64)
    x = _pool(np.maximum(_batch_norm(_conv_same(x, w[0]), *w[1:5]), 0))
    x = _pool(np.maximum(_batch_norm(_conv_same(x, w[5]), *w[6:10]), 0))
    x = np.maximum(_conv_same(x, w[10]) + w[11], 0).mean(axis=(1, 2))
    return x @ w[12] + w[13]
