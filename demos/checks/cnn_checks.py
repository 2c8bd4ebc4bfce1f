"""Check for chapter 5's "your turn" cell: a batch size of the student's choosing, measured.

The student writes down a prediction, then changes the batch size; the check
makes sure both were done, trains the tutorial CNN briefly at batch 32 and at
the student's batch (the same number of images each, on the GPU where
TensorFlow sees one, else on the CPU) and prints the measured ratio beside the
prediction. Each rate is the median of :data:`REPEATS` timed repeats: a laptop's
other work slows one repeat now and then, and a ratio of two single repeats can
land far from the truth. Any measured ratio passes: the point is
to have predicted before seeing it. Without Keras (no TensorFlow wheel for this Python) it says so
instead of measuring.
"""

from __future__ import annotations

import importlib.util
import numbers
from typing import Any

import numpy as np

from demos import hardware
from demos.checks._harness import CheckFailed

TUTORIAL_BATCH = 32
IMAGES_PER_REPEAT = 1024  # sized so that each batch size takes a few seconds on a laptop CPU
REPEATS = 5  # timed repeats per batch size; the rate is their median
LARGEST_BATCH = {"cpu": 512, "gpu": 16384}


def _device() -> str:
    return "gpu" if hardware.has_gpu() else "cpu"


def _keras_missing() -> bool:
    return importlib.util.find_spec("keras") is None


def _images_per_second(batch_size: int, device: str) -> float:
    from demos.cnn import bench

    steps = max(2, IMAGES_PER_REPEAT // batch_size)
    try:
        run = bench.measure(
            device, batch_size=batch_size, precision="float32", steps=steps, repeats=REPEATS
        )
    except Exception as exc:  # noqa: BLE001 - backends fail in many ways; say which, briefly
        raise CheckFailed(
            f"training at batch {batch_size} on the {device} failed: {type(exc).__name__}: "
            f"{str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ''}"
        ) from None
    return run["images_per_second"]


def batch_trial(trial: dict[str, Any]) -> str:
    """*trial* = {"batch_size": int other than 32, "predicted_speedup": number > 0}."""
    if not isinstance(trial, dict) or set(trial) != {"batch_size", "predicted_speedup"}:
        raise CheckFailed("give a dict with the keys batch_size and predicted_speedup.")
    guess, batch = trial["predicted_speedup"], trial["batch_size"]
    if guess is None:
        raise CheckFailed(
            "write your prediction first: how many times the images/s of batch 32 will your "
            "batch give? (0.5 means half as fast, 3 three times as fast.)"
        )
    if not isinstance(guess, numbers.Real) or isinstance(guess, bool) or not guess > 0:
        raise CheckFailed(f"predicted_speedup should be a positive number, not {guess!r}.")
    device = _device()
    largest = LARGEST_BATCH[device]
    if not isinstance(batch, numbers.Integral) or isinstance(batch, bool | np.bool_):
        raise CheckFailed(
            f"batch_size should be a whole number from 1 to {largest} on the {device}, "
            f"not {batch!r}."
        )
    batch = int(batch)  # NumPy's integers (np.int64(256)) count as whole numbers too
    if not 1 <= batch <= largest:
        raise CheckFailed(
            f"batch_size should be a whole number from 1 to {largest} on the {device}."
        )
    if batch == TUTORIAL_BATCH:
        raise CheckFailed(
            "change batch_size: 32 is the tutorial's batch, the one you compare with. "
            "Try a much larger one (256) or a smaller one (8)."
        )
    if _keras_missing():
        raise CheckFailed(
            "Keras is not installed in this environment (TensorFlow publishes no wheels for "
            "this Python), so nothing can be measured; use Python 3.11 to 3.13 for chapter 5."
        )
    base = _images_per_second(TUTORIAL_BATCH, device)
    yours = _images_per_second(batch, device)
    measured = yours / base
    closer = "close to what" if 0.67 <= measured / guess <= 1.5 else "not what"
    return (
        f"on this machine's {device.upper()}, batch {batch}: {yours:,.0f} images/s, batch 32: "
        f"{base:,.0f} images/s (medians of {REPEATS} timed repeats each), {measured:.2f} x; you "
        f"predicted {guess:g} x ({closer} you predicted)."
        + (
            " The larger batch was slower: on a CPU that happens (the text below says why)."
            if measured < 1 < batch / 32
            else ""
        )
    )
