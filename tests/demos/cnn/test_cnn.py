"""The chapter 5 CNN: model shape, data loading and fallbacks, and that it learns."""

from __future__ import annotations

import pickle
import tarfile

import numpy as np
import pytest

keras = pytest.importorskip("keras")

from demos.cnn import data as cnn_data  # noqa: E402
from demos.cnn.model import PARAMETER_COUNT, build_model, compile_model  # noqa: E402
from demos.cnn.train import set_precision, train  # noqa: E402


def test_model_has_tutorial_parameters_and_shapes():
    model = build_model()
    assert model.count_params() == PARAMETER_COUNT == 122_570
    shapes = [tuple(layer.output.shape[1:]) for layer in model.layers]
    assert shapes == [
        (30, 30, 32),
        (15, 15, 32),
        (13, 13, 64),
        (6, 6, 64),
        (4, 4, 64),
        (1024,),
        (64,),
        (10,),
    ]


def test_loss_falls_on_a_few_steps():
    keras.utils.set_random_seed(1)
    dataset = cnn_data.load_digits_32()
    x, y = dataset.x_train[:16], dataset.y_train[:16]
    model = compile_model(build_model())
    losses = [float(model.train_on_batch(x, y)[0]) for _ in range(8)]
    assert losses[-1] < 0.8 * losses[0], losses


def test_learns_offline_digits_well_above_chance():
    dataset = cnn_data.load_digits_32()
    result = train(dataset, epochs=4, batch_size=32, verbose=0)
    assert result["test_accuracy"] > 0.8, result  # chance is 0.1; ~0.95 seen
    assert len(result["history"]["loss"]) == 4
    predictions = np.argmax(result["model"].predict(dataset.x_test, verbose=0), axis=1)
    assert np.mean(predictions == dataset.y_test) == pytest.approx(
        result["test_accuracy"], abs=0.02
    )


def test_digits_are_cifar_shaped_and_scaled():
    d = cnn_data.load_digits_32()
    assert d.x_train.shape[1:] == (32, 32, 3) and d.x_train.dtype == np.float32
    assert 0.0 <= d.x_train.min() and d.x_train.max() <= 1.0
    assert set(np.unique(d.y_train)) == set(range(10))
    assert len(d.x_train) + len(d.x_test) == 1797
    # each 8x8 pixel became a 4x4 block, equal in all channels
    assert np.all(d.x_train[:, :4, :4, :] == d.x_train[:, :1, :1, :1])


def _fake_cifar_folder(root, per_batch=4):
    folder = root / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    expected = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        images = rng.integers(0, 256, (per_batch, 3, 32, 32), dtype=np.uint8)
        labels = rng.integers(0, 10, per_batch).tolist()
        entry = {b"data": images.reshape(per_batch, -1), b"labels": labels}
        (folder / name).write_bytes(pickle.dumps(entry))
        expected[name] = (images, labels)
    return folder, expected


@pytest.mark.parametrize("as_tarball", [False, True])
def test_reads_the_cifar_python_archive(tmp_path, as_tarball):
    folder, expected = _fake_cifar_folder(tmp_path)
    path = folder
    if as_tarball:
        path = tmp_path / "cifar-10-python.tar.gz"
        with tarfile.open(path, "w:gz") as archive:
            archive.add(folder, arcname="cifar-10-batches-py")
    d = cnn_data.load_cifar10(path)
    assert (
        d.name == "cifar10"
        and d.x_train.shape == (20, 32, 32, 3)
        and d.x_test.shape == (4, 32, 32, 3)
    )
    images, labels = expected["data_batch_2"]
    np.testing.assert_allclose(d.x_train[4:8], images.transpose(0, 2, 3, 1) / 255.0, rtol=1e-6)
    assert d.y_train[4:8].tolist() == labels


def test_missing_cifar_gives_a_clear_message(tmp_path, monkeypatch):
    monkeypatch.delenv(cnn_data.CIFAR10_ENV, raising=False)
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # empty cache
    with pytest.raises(cnn_data.DatasetUnavailableError, match="CIFAR10_PATH"):
        cnn_data.load_cifar10(download=False)
    with pytest.raises(cnn_data.DatasetUnavailableError, match="no CIFAR-10 copy"):
        cnn_data.load_cifar10(tmp_path / "nowhere")


def test_auto_falls_back_to_digits_with_a_warning(tmp_path, monkeypatch):
    monkeypatch.setenv(cnn_data.CIFAR10_ENV, str(tmp_path / "nowhere"))
    with pytest.warns(UserWarning, match="offline digits"):
        d = cnn_data.load_dataset("auto")
    assert d.name == "digits"
    with pytest.raises(ValueError, match="unknown data source"):
        cnn_data.load_dataset("mnist")


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="precision"):
        set_precision("float8")
    with pytest.raises(ValueError, match="positive"):
        cnn_data.synthetic_images(0)
    with pytest.raises(ValueError, match="epochs"):
        train(cnn_data.load_digits_32(), epochs=0)


def test_mixed_precision_policy_is_used_and_reset():
    set_precision("mixed_bfloat16")
    try:
        model = build_model()
        assert (
            model.layers[0].compute_dtype == "bfloat16"
            and model.layers[0].variable_dtype == "float32"
        )
        assert model.layers[-1].compute_dtype == "float32"  # logits stay float32
    finally:
        set_precision("float32")
    assert keras.mixed_precision.global_policy().name == "float32"
