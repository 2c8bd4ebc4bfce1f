"""grader.verdicts.references: the answers the profiling and cnn hidden tests compare with.

A wrong reference would fail every honest student, so each one is checked
here against an independent source: cases worked out by hand, chapter 4a's
closed-form pipeline time (its model answer), and Keras itself for the
digits network's forward pass.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from grader.verdicts import references
from helpers import ROOT


def test_monitor_counts_alarms_and_finds_the_first_loudest_window() -> None:
    quiet, loud = np.full((2, 4), 0.5), np.full((3, 5), 2.0)
    louder = np.vstack([np.full((1, 4), 3.0), np.zeros((1, 4))])  # rms 3 and 0: level 3
    assert references.window_levels([quiet, loud, louder]) == [0.5, 2.0, 3.0]
    assert references.monitor([quiet, loud, louder, louder], 1.0) == (3, 3.0, 2)
    assert references.monitor([quiet], 1.0) == (0, 0.0, -1)


def test_a_threshold_lies_clearly_between_two_levels() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        levels = list(rng.uniform(0.1, 5, 8))
        threshold = references.threshold_between(levels, rng)
        assert min(abs(level - threshold) for level in levels) > 1e-7 * threshold
    assert references.threshold_between([1.0, 1.0], rng) == 2.0  # no gap: no alarm at all


def test_peak_concurrency_by_hand() -> None:
    assert references.peak_concurrency([]) == (0, 0.0)
    assert references.peak_concurrency([(0, 1), (1, 2)]) == (1, 2)
    assert references.peak_concurrency([(0, 4), (1, 2), (3, 5), (1.5, 3.5)]) == (3, 1.0)
    assert references.peak_concurrency([(1.0, 2.0)] * 3) == (3, 1.0)


def test_predicted_timeline_matches_the_chapters_pipeline_model() -> None:
    namespace: dict = {}
    exec((ROOT / "demos" / "checks" / "answers" / "pipelined_time.py").read_text(), namespace)
    for compute, copy, blocks in [(2.0, 3.0, 4), (3.0, 1.0, 5), (1.5, 1.5, 1)]:
        plan = []
        for block in range(blocks):
            plan += [("compute", compute, []), ("copy", copy, [2 * block])]
        end = references.predicted_timeline(plan)[-1][1]
        assert end == pytest.approx(namespace["pipelined_time"](compute, copy, blocks))
    plan = [("a", 1.0, []), ("b", 4.0, []), ("a", 1.0, [1]), ("c", 2.0, [0, 2])]
    assert references.predicted_timeline(plan) == [(0, 1), (0, 4), (4, 5), (5, 7)]


def test_conv_params() -> None:
    assert references.conv_params(3, 1, 16, bias=False) == 144
    assert references.conv_params((3, 3), 32, 64, bias=True) == 18_496
    assert references.conv_params((5, 3), 2, 4, bias=True) == 124
    layers = references.DIGITS_LAYERS
    assert [layers[i][2] for i in (0, 4, 8)] == [
        references.conv_params(3, 1, 16, bias=False),
        references.conv_params(3, 16, 32, bias=False),
        references.conv_params(3, 32, 64, bias=True),
    ]


@pytest.mark.skipif(importlib.util.find_spec("keras") is None, reason="needs Keras")
def test_digits_logits_are_what_keras_computes() -> None:
    import keras
    from keras import layers

    def block(filters: int) -> list:
        return [
            layers.Conv2D(filters, 3, padding="same", use_bias=False),
            layers.BatchNormalization(),
            layers.Activation("relu"),
            layers.MaxPooling2D(2),
        ]

    model = keras.Sequential(
        [
            keras.Input(shape=(28, 28, 1)),
            *block(16),
            *block(32),
            layers.Conv2D(64, 3, padding="same", activation="relu"),
            layers.GlobalAveragePooling2D(),
            layers.Dense(10),
        ]
    )
    assert [
        (type(layer).__name__.replace("Activation", "ReLU"), layer.count_params())
        for layer in model.layers
    ] == [(kind, params) for kind, _, params in references.DIGITS_LAYERS]
    rng = np.random.default_rng(3)
    weights = references.digits_weights(rng)
    model.set_weights(weights)
    images = rng.random((2, 28, 28, 1)).astype("float32")
    logits = keras.ops.convert_to_numpy(model(images))
    expected = references.digits_logits(images, weights)
    scale = np.abs(expected).max()  # tolerances that hold with TF32 convolutions on a GPU too
    np.testing.assert_allclose(logits, expected, rtol=5e-3, atol=5e-3 * scale)
    model.set_weights([w * 0 + 1 if w.ndim == 1 else w for w in weights])  # other statistics
    other = keras.ops.convert_to_numpy(model(images))
    assert np.abs(other - expected).max() > 0.1 * scale
