"""Images for the CNN: CIFAR-10, an offline stand-in, and synthetic data.

CIFAR-10 (60,000 32x32 colour images, 10 classes) is what the chapter trains
on. Keras downloads it on first use; a cluster node or CI machine without
internet gets a clear message instead of a hang, and can either point
``CIFAR10_PATH`` at a copy of the standard python-pickle archive
(``cifar-10-python.tar.gz`` or its extracted ``cifar-10-batches-py`` folder)
or fall back to scikit-learn's bundled handwritten digits (real images,
10 classes, 8x8 grey) scaled up to 32x32x3 so the same model applies.
Synthetic random images are for throughput measurements only: a model learns
nothing from them, but a GPU computes just as hard.
"""

from __future__ import annotations

import os
import pickle
import tarfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CIFAR10_ENV = "CIFAR10_PATH"
CIFAR10_CLASSES = (
    "airplane",
    "automobile",
    "bird",
    "cat",
    "deer",
    "dog",
    "frog",
    "horse",
    "ship",
    "truck",
)


class DatasetUnavailableError(RuntimeError):
    """CIFAR-10 could not be found locally nor downloaded."""


@dataclass(frozen=True)
class Dataset:
    """Train/test split as float32 images in [0, 1] (N, 32, 32, 3) and int labels (N,)."""

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def _scale(images: np.ndarray) -> np.ndarray:
    return images.astype(np.float32) / 255.0


def _read_pickle_batches(batches: dict[str, bytes]) -> Dataset:
    def decode(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
        entry = pickle.loads(raw, encoding="bytes")
        images = (
            np.asarray(entry[b"data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        )
        return images, np.asarray(entry[b"labels"], dtype=np.int32)

    train = [decode(batches[f"data_batch_{i}"]) for i in range(1, 6)]
    x_test, y_test = decode(batches["test_batch"])
    x_train = np.concatenate([x for x, _ in train])
    y_train = np.concatenate([y for _, y in train])
    return Dataset("cifar10", _scale(x_train), y_train, _scale(x_test), y_test)


def load_cifar10_archive(path: str | os.PathLike) -> Dataset:
    """Read the python-pickle CIFAR-10 from a ``.tar.gz`` or the extracted folder."""
    path = Path(path)
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    if path.is_dir():
        folder = path / "cifar-10-batches-py" if (path / "cifar-10-batches-py").is_dir() else path
        missing = [n for n in names if not (folder / n).is_file()]
        if missing:
            raise DatasetUnavailableError(
                f"{folder} is not a CIFAR-10 python folder: missing {', '.join(missing)}"
            )
        return _read_pickle_batches({n: (folder / n).read_bytes() for n in names})
    if path.is_file():
        with tarfile.open(path, "r:*") as archive:
            members = {Path(m.name).name: m for m in archive.getmembers() if m.isfile()}
            missing = [n for n in names if n not in members]
            if missing:
                raise DatasetUnavailableError(
                    f"{path} is not the CIFAR-10 python archive: missing {', '.join(missing)}"
                )
            return _read_pickle_batches({n: archive.extractfile(members[n]).read() for n in names})
    raise DatasetUnavailableError(f"no CIFAR-10 copy at {path}")


def _keras_cache() -> Path:
    return Path(os.environ.get("KERAS_HOME", Path.home() / ".keras")) / "datasets"


def load_cifar10(path: str | os.PathLike | None = None, download: bool = True) -> Dataset:
    """CIFAR-10 from *path*, ``$CIFAR10_PATH``, Keras' cache, or a download.

    Raises DatasetUnavailableError with what to do when none of these works.
    """
    path = path or os.environ.get(CIFAR10_ENV)
    if path:
        return load_cifar10_archive(path)
    cached = _keras_cache() / "cifar-10-batches-py"
    if cached.is_dir():
        return load_cifar10_archive(cached)
    if download:
        try:
            import keras

            (x_train, y_train), (x_test, y_test) = keras.datasets.cifar10.load_data()
            return Dataset(
                "cifar10",
                _scale(x_train),
                y_train.ravel().astype(np.int32),
                _scale(x_test),
                y_test.ravel().astype(np.int32),
            )
        except Exception as error:  # no internet shows up as many exception types
            reason = f"download failed ({type(error).__name__}: {error})"
    else:
        reason = "downloading was not allowed"
    raise DatasetUnavailableError(
        f"CIFAR-10 is not available: {reason}. Download cifar-10-python.tar.gz from "
        "https://www.cs.toronto.edu/~kriz/cifar.html on a machine with internet and set "
        f"{CIFAR10_ENV}=/path/to/it, or train on the offline digits data (source='digits')."
    )


def load_digits_32(test_fraction: float = 0.2, seed: int = 0) -> Dataset:
    """scikit-learn's 1,797 handwritten digits, each pixel repeated 4x4 and over 3 channels.

    Real, labelled, offline, and small enough to train in seconds on a CPU:
    a check that the pipeline learns, when CIFAR-10 cannot be had.
    """
    from sklearn.datasets import load_digits

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)  # values 0..16
    images = np.repeat(np.repeat(images, 4, axis=1), 4, axis=2)[..., None].repeat(3, axis=-1)
    labels = digits.target.astype(np.int32)
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = int(round(len(labels) * test_fraction))
    test, train = order[:n_test], order[n_test:]
    return Dataset("digits", images[train], labels[train], images[test], labels[test])


def synthetic_images(
    n: int, seed: int = 0, dtype: str = "float32"
) -> tuple[np.ndarray, np.ndarray]:
    """Random images and labels of CIFAR-10's shape, for throughput only."""
    if n <= 0:
        raise ValueError(f"n must be positive, got {n}")
    rng = np.random.default_rng(seed)
    return rng.random((n, 32, 32, 3), dtype=np.float32).astype(dtype), rng.integers(
        0, 10, n, dtype=np.int32
    )


def load_dataset(source: str = "auto", path: str | os.PathLike | None = None) -> Dataset:
    """``"cifar10"`` (error if unavailable), ``"digits"``, or ``"auto"``: CIFAR-10, else digits with
    a warning."""
    if source == "cifar10":
        return load_cifar10(path)
    if source == "digits":
        return load_digits_32()
    if source == "auto":
        try:
            return load_cifar10(path)
        except DatasetUnavailableError as error:
            warnings.warn(f"{error} Falling back to the offline digits data.", stacklevel=2)
            return load_digits_32()
    raise ValueError(f"unknown data source {source!r}: use 'auto', 'cifar10' or 'digits'")


def batches(x: np.ndarray, y: np.ndarray, batch_size: int, shuffle: bool = True, seed: int = 0):
    """An input pipeline that keeps the accelerator fed.

    On TensorFlow: a ``tf.data`` pipeline that shuffles, batches and
    ``prefetch``es, so the next batch is prepared on the CPU while the current
    one trains. On other backends Keras' own array adapter already slices
    numpy arrays into batches and overlaps the copy to the device, so the
    arrays are returned as they are (pass ``batch_size`` to ``fit``).
    """
    import keras

    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    if keras.backend.backend() != "tensorflow":
        return x, y
    import tensorflow as tf

    data = tf.data.Dataset.from_tensor_slices((x, y))
    if shuffle:
        data = data.shuffle(min(len(x), 10_000), seed=seed, reshuffle_each_iteration=True)
    return data.batch(batch_size).prefetch(tf.data.AUTOTUNE)
