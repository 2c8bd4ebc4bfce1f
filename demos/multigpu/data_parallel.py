"""Data parallelism: every device holds a model replica and trains on a slice of each batch.

The gradients of the replicas are averaged (all-reduce) before each update, so
training is mathematically the same as on one device with the full batch. With
TensorFlow we use ``tf.distribute.MirroredStrategy`` (one replica per GPU; on a
CPU-only machine it has one replica); where TensorFlow is absent (Keras 3 on JAX, as in the
reference results) we use ``keras.distribution.DataParallel``.
This is one process driving all GPUs; for many GPUs, one process per GPU
(MultiWorkerMirroredStrategy, or PyTorch DDP) avoids the single-process bottleneck.
"""

from __future__ import annotations

import contextlib

import numpy as np


def toy_data(
    n: int = 256, features: int = 8, classes: int = 3, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A small separable classification problem (labels from a fixed linear map)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, features)).astype(np.float32)
    y = np.argmax(x @ rng.standard_normal((features, classes)), axis=1).astype(np.int32)
    return x, y


def distribution_scope(distributed: bool):
    """(context manager, description) for data-parallel training with the active Keras backend."""
    import keras

    if not distributed:
        return contextlib.nullcontext(), "single device"
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        strategy = tf.distribute.MirroredStrategy()
        return (
            strategy.scope(),
            f"tf.distribute.MirroredStrategy, {strategy.num_replicas_in_sync} replica(s)",
        )
    if backend == "jax":
        devices = keras.distribution.list_devices()
        keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))
        return (
            contextlib.nullcontext(),
            f"keras.distribution.DataParallel over {len(devices)} device(s)",
        )
    raise RuntimeError(
        f"data-parallel example supports the tensorflow and jax Keras backends, not {backend}"
    )


def train(
    x: np.ndarray,
    y: np.ndarray,
    distributed: bool,
    epochs: int = 2,
    batch_size: int = 32,
    seed: int = 0,
):
    """Train a small MLP; returns (weights, loss history, description)."""
    import keras

    keras.utils.set_random_seed(seed)
    scope, description = distribution_scope(distributed)
    try:
        with scope:
            model = keras.Sequential(
                [
                    keras.Input((x.shape[1],)),
                    keras.layers.Dense(16, activation="relu"),
                    keras.layers.Dense(int(y.max()) + 1),
                ]
            )
            model.compile(
                optimizer=keras.optimizers.SGD(0.1),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            )
        history = model.fit(x, y, batch_size=batch_size, epochs=epochs, shuffle=False, verbose=0)
    finally:
        if distributed and keras.backend.backend() == "jax":
            keras.distribution.set_distribution(None)
    return model.get_weights(), history.history["loss"], description
