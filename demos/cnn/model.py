"""The TensorFlow tutorial CNN, 122,570 parameters for 32x32x3 inputs.

Three convolutions extract local features (edges, then parts, then objects),
two max-poolings halve the resolution so later layers see a larger area, and
two dense layers classify. The last layer returns logits (no softmax): the
loss applies the softmax itself, which is numerically safer, and mixed
precision keeps that last layer in float32 for the same reason.
"""

from __future__ import annotations

import keras

INPUT_SHAPE = (32, 32, 3)
NUM_CLASSES = 10
PARAMETER_COUNT = 122_570


def build_model(
    input_shape: tuple[int, int, int] = INPUT_SHAPE, num_classes: int = NUM_CLASSES
) -> keras.Model:
    """Conv32-Pool-Conv64-Pool-Conv64-Flatten-Dense64-Dense(num_classes)."""
    return keras.Sequential(
        [
            keras.Input(shape=input_shape),
            keras.layers.Conv2D(32, (3, 3), activation="relu"),
            keras.layers.MaxPooling2D((2, 2)),
            keras.layers.Conv2D(64, (3, 3), activation="relu"),
            keras.layers.MaxPooling2D((2, 2)),
            keras.layers.Conv2D(64, (3, 3), activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(64, activation="relu"),
            # float32 logits even under a mixed policy: softmax/cross-entropy in
            # float16 can overflow.
            keras.layers.Dense(num_classes, dtype="float32"),
        ],
        name="tutorial_cnn",
    )


def compile_model(
    model: keras.Model,
    learning_rate: float = 1e-3,
    jit_compile: bool | str = "auto",
    steps_per_execution: int = 1,
) -> keras.Model:
    """Adam + sparse categorical cross-entropy on logits, as in the tutorial.

    ``jit_compile=True`` asks XLA to fuse the whole training step into one
    compiled program (always so on JAX); ``steps_per_execution=k`` runs k
    steps per call from Python, which matters when a step is so short on a
    GPU that Python's per-step overhead would dominate (batch 32).
    """
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
        jit_compile=jit_compile,
        steps_per_execution=steps_per_execution,
    )
    return model
