"""``python -m demos bench cnn``: configurations, child settings, and a tiny real run."""

from __future__ import annotations

import json
import os
import statistics

import pytest

from demos.__main__ import main as demos_main
from demos.cnn import bench


def test_configurations_always_include_batch_32_and_keep_mixed_precision_on_gpu():
    configs = bench.configurations(["cpu1", "gpu"], [1024, 128], ["mixed_bfloat16"])
    assert ("cpu1", 32, "float32") in configs and ("gpu", 32, "float32") in configs
    assert ("gpu", 1024, "mixed_bfloat16") in configs and ("gpu", 128, "mixed_bfloat16") in configs
    assert all(p == "float32" and b <= bench.CPU_MAX_BATCH for d, b, p in configs if d == "cpu1")


def test_child_environment_hides_gpu_and_limits_threads():
    env = bench.child_environment("cpu1", base={})
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["OMP_NUM_THREADS"] == "1"
    assert "intra_op_parallelism_threads=1" in env["XLA_FLAGS"]
    assert "OMP_NUM_THREADS" not in bench.child_environment("cpu", base={})
    assert "CUDA_VISIBLE_DEVICES" not in bench.child_environment("gpu", base={})
    with pytest.raises(ValueError, match="unknown device"):
        bench.child_environment("tpu")


def test_bad_cli_arguments_are_refused(tmp_path, capsys):
    with pytest.raises(SystemExit, match="unknown device"):
        demos_main(["bench", "cnn", "--devices", "tpu", "--output", str(tmp_path)])
    with pytest.raises(SystemExit):
        demos_main(
            ["bench", "cnn", "--devices", "cpu", "--batch-sizes", "0", "--output", str(tmp_path)]
        )
    assert "--batch-sizes: sizes must be positive integers" in capsys.readouterr().err


def test_tiny_bench_run_writes_valid_json_and_chart(tmp_path):
    code = demos_main(
        [
            "bench",
            "cnn",
            "--devices",
            "cpu1",
            "--batch-sizes",
            "32",
            "--steps",
            "2",
            "--repeats",
            "1",
            "--output",
            str(tmp_path),
        ]
    )
    assert code == 0
    result = json.loads((tmp_path / "cnn_cpu.json").read_text())
    assert result["benchmark"] == "cnn" and "environment" in result
    (row,) = result["results"]
    assert row["device"] == "cpu1" and row["batch_size"] == 32 and row["threads"] == 1
    assert row["images_per_second"] > 0 and len(row["repeat_seconds"]) == 1
    measurements = json.loads((tmp_path / bench.MEASUREMENTS_NAME).read_text())
    label = result["parameters"]["label"]
    assert measurements[f"{label}, batch 32"]["CPU 1 thread"] == pytest.approx(
        row["images_per_second"], rel=1e-3
    )
    (figure,) = tmp_path.glob("cnn_throughput*.png")
    assert figure.stat().st_size > 0


def test_the_label_names_the_backend_the_children_measured_on(monkeypatch):
    """Why: the chapter's title says TensorFlow, its references ran on JAX; the file must say."""
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    assert bench.backend_label([{"backend": "jax"}, {"error": "x"}]) == "Keras 3 on JAX"
    assert bench.backend_label([{"backend": "torch"}, {"backend": "jax"}]) == (
        "Keras 3 on JAX and PyTorch"
    )
    assert bench.backend_label([{"error": "timed out"}]) == "Keras 3 on TensorFlow"


def test_measure_in_process_keeps_data_on_device_and_restores_the_callers_state():
    keras = pytest.importorskip("keras")
    before = os.sched_getaffinity(0)
    row = bench.measure(
        "cpu1", batch_size=8, precision="mixed_bfloat16", steps=2, repeats=2, resident=True
    )
    assert row["data_on_device"] is True and row["steps"] == 2 and len(row["repeat_seconds"]) == 2
    assert row["threads"] == 1  # pinned to one core while measuring
    assert row["images_per_second"] == pytest.approx(16 / statistics.median(row["repeat_seconds"]))
    assert row["median_seconds"] == pytest.approx(statistics.median(row["repeat_seconds"]))
    assert row["spread"] >= 0 and row["backend"] == keras.backend.backend()
    assert os.sched_getaffinity(0) == before
    assert keras.mixed_precision.global_policy().name == "float32"


def test_reference_h200_result_plots_and_matches_the_measurements_file(tmp_path):
    from demos.benchmarks.record import PACKAGE_DIR
    from demos.cnn.plots import plot
    from demos.shipped_results import load

    result = load("cnn_h200_jax", required=True)
    assert result["environment"]["gpus"][0]["name"] == "NVIDIA H200"
    gpu = [r for r in result["results"] if r["device"] == "gpu"]
    assert any(r["batch_size"] == 32 and r["precision"] == "float32" for r in gpu)
    measurements = json.loads((PACKAGE_DIR / bench.MEASUREMENTS_NAME).read_text())
    label = result["parameters"]["label"]
    fastest = max(r["images_per_second"] for r in gpu)
    assert measurements[f"{label}, fastest"]["NVIDIA H200"] == pytest.approx(fastest, abs=0.1)
    (figure,) = plot(result, tmp_path)
    assert figure.name == "cnn_throughput_keras_3_on_jax.png" and figure.stat().st_size > 0
    with pytest.raises(ValueError, match="not a cnn"):
        plot({"benchmark": "distance"}, tmp_path)
