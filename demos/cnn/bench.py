"""``python -m demos bench cnn``: training images/s of the tutorial CNN per device.

Each configuration (device, batch size, precision) runs in its own
subprocess, because thread counts and the visible devices are fixed once the
backend (TensorFlow, JAX) initialises: a process that has run on all cores
cannot go back to one. The child pins itself to one core for "cpu1", hides
the GPU for both CPU settings, trains on synthetic CIFAR-sized images and
prints one JSON line. On JAX/PyTorch a few batches are kept on the device in
the compute dtype, so the figure is the training step's speed; the host input
path (Keras copying each batch from numpy) caps an H200 near 65,000 images/s,
see ``demos/results/cnn_h200_jax_host_arrays.json``. On TensorFlow the
arrays go through tf.data with prefetching.

Devices: ``cpu1`` (one thread), ``cpu`` (all threads), ``gpu``. The batch of
32 of the original tutorial is always measured; the fastest setting found in
the sweep is reported beside it.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from demos.benchmarks import sizes

DEVICES = ("cpu1", "cpu", "gpu")
MEASUREMENTS_NAME = "measurements_tf_cnn_cifar10.json"
# On a CPU large batches only cost memory and time: one step is already
# hundreds of ms, so Python's overhead per step is negligible.
CPU_MAX_BATCH = 256


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--devices", default="cpu1,cpu,gpu", help="comma list of cpu1, cpu, gpu (default: all)"
    )
    parser.add_argument(
        "--batch-sizes",
        type=sizes.int_list,
        default=list(sizes.CNN_BATCH_SIZES),
        help=f"comma list; CPU devices use those <= {CPU_MAX_BATCH}",
    )
    parser.add_argument(
        "--precisions",
        default="float32,mixed_bfloat16",
        help="comma list of float32, mixed_float16, mixed_bfloat16 (mixed ones on the GPU only)",
    )
    parser.add_argument("--steps", type=int, default=20, help="timed training steps per repeat")
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed repeats (the median is reported)"
    )
    parser.add_argument(
        "--steps-per-execution", type=int, default=1, help="training steps per compiled call"
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds allowed per configuration"
    )
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="folder for the JSON and the chart (default bench-results/)",
    )
    parser.add_argument("--label", default=None, help="name of this setup in the measurements file")
    parser.add_argument("--no-plot", action="store_true", help="skip the bar chart")
    # internal: one measurement in this process
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)


def child_environment(device: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for a child measuring on *device*, set before its backend starts."""
    if device not in DEVICES:
        raise ValueError(f"unknown device {device!r}: use one of {', '.join(DEVICES)}")
    env = dict(os.environ if base is None else base)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if device in ("cpu1", "cpu"):
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["JAX_PLATFORMS"] = "cpu"
    if device == "cpu1":
        for name in (
            "OMP_NUM_THREADS",
            "MKL_NUM_THREADS",
            "OPENBLAS_NUM_THREADS",
            "TF_NUM_INTRAOP_THREADS",
            "TF_NUM_INTEROP_THREADS",
        ):
            env[name] = "1"
        env["XLA_FLAGS"] = (
            env.get("XLA_FLAGS", "")
            + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        ).strip()
    return env


def measure(
    device: str,
    batch_size: int,
    precision: str,
    steps: int,
    repeats: int,
    steps_per_execution: int = 1,
    resident: bool | None = None,
) -> dict[str, Any]:
    """Train on synthetic data in this process; images/s = images per repeat / median repeat time.

    ``resident`` (default: on every backend but TensorFlow) keeps the data on
    the device, so the figure is the model's training speed, not the host's.
    """
    pin = device == "cpu1" and hasattr(os, "sched_setaffinity")
    original_cpus = os.sched_getaffinity(0) if pin else None
    if pin:
        os.sched_setaffinity(0, {min(original_cpus)})
    try:
        return _measure(
            device, batch_size, precision, steps, repeats, steps_per_execution, resident
        )
    finally:  # called in a notebook, leave the kernel as it was
        from demos.cnn.train import set_precision

        set_precision("float32")
        if pin:
            os.sched_setaffinity(0, original_cpus)


def _measure(
    device: str,
    batch_size: int,
    precision: str,
    steps: int,
    repeats: int,
    steps_per_execution: int,
    resident: bool | None,
) -> dict[str, Any]:
    import keras
    import numpy as np

    from demos.cnn.data import synthetic_images
    from demos.cnn.model import build_model, compile_model
    from demos.cnn.train import set_precision

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        if device == "cpu1":
            try:
                tf.config.threading.set_intra_op_parallelism_threads(1)
                tf.config.threading.set_inter_op_parallelism_threads(1)
            except RuntimeError:
                # TensorFlow already started in this process (a notebook, a test): its thread
                # pools stay, but the affinity above still confines them to one core.
                pass
        if device == "gpu" and not tf.config.list_physical_devices("GPU"):
            raise RuntimeError("TensorFlow sees no GPU")
    elif keras.backend.backend() == "jax" and device == "gpu":
        import jax

        if jax.default_backend() != "gpu":
            raise RuntimeError("JAX sees no GPU")
    steps = max(steps_per_execution, steps - steps % steps_per_execution)
    set_precision(precision)
    model = compile_model(build_model(), jit_compile=True, steps_per_execution=steps_per_execution)
    resident = keras.backend.backend() != "tensorflow" if resident is None else resident
    if resident:
        # A few batches stored on the device, in the compute dtype, handed out
        # again and again: no host-to-device copy per step. (Keras' array
        # adapter on JAX copies every batch from host memory, which at
        # thousands of images per batch is what a fast GPU would wait on.)
        compute_dtype = keras.mixed_precision.global_policy().compute_dtype
        pool = []
        for i in range(min(steps, 4)):
            x_np, y_np = synthetic_images(batch_size, seed=i)
            pool.append(
                (
                    keras.ops.cast(keras.ops.convert_to_tensor(x_np), compute_dtype),
                    keras.ops.convert_to_tensor(y_np),
                )
            )

        def data():
            for i in itertools.count():
                yield pool[i % len(pool)]

        def fit(epochs, callbacks=()):
            model.fit(
                data(),
                steps_per_epoch=steps,
                epochs=epochs,
                shuffle=False,
                verbose=0,
                callbacks=list(callbacks),
            )
    else:
        # TensorFlow: Keras feeds numpy arrays through tf.data with prefetching.
        one_x, one_y = synthetic_images(batch_size)
        x, y = np.concatenate([one_x] * steps), np.concatenate([one_y] * steps)

        def fit(epochs, callbacks=()):
            model.fit(
                x,
                y,
                batch_size=batch_size,
                epochs=epochs,
                shuffle=False,
                verbose=0,
                callbacks=list(callbacks),
            )

    class EpochTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):  # logs are fetched: the device has finished
            seconds.append(time.perf_counter() - self.start)

    seconds: list[float] = []
    started = time.perf_counter()
    fit(1)  # compiles
    warmup = time.perf_counter() - started
    fit(repeats, [EpochTimer()])
    median = float(np.median(seconds))  # one slow repeat (a CPU's other work) moves it little
    return {
        "device": device,
        "backend": keras.backend.backend(),
        "batch_size": batch_size,
        "precision": precision,
        "steps": steps,
        "steps_per_execution": steps_per_execution,
        "images_per_second": batch_size * steps / median,
        "data_on_device": resident,
        "repeat_seconds": seconds,
        "median_seconds": median,
        "spread": max(seconds) / min(seconds) - 1,  # slowest over fastest repeat, minus one
        "warmup_seconds": warmup,
        "threads": len(os.sched_getaffinity(0))
        if hasattr(os, "sched_getaffinity")
        else os.cpu_count(),
    }


def _run_child(
    device: str, batch_size: int, precision: str, args: argparse.Namespace
) -> dict[str, Any]:
    spec = json.dumps(
        {
            "device": device,
            "batch_size": batch_size,
            "precision": precision,
            "steps": args.steps,
            "repeats": args.repeats,
            "steps_per_execution": args.steps_per_execution,
        }
    )
    command = [sys.executable, "-m", "demos", "bench", "cnn", "--worker", spec]
    try:
        done = subprocess.run(
            command,
            env=child_environment(device),
            capture_output=True,
            text=True,
            timeout=args.timeout,
        )
    except subprocess.TimeoutExpired:
        return {**json.loads(spec), "error": f"timed out after {args.timeout:.0f} s"}
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
    return {**json.loads(spec), "error": f"exit {done.returncode}: " + " | ".join(tail)}


def configurations(
    devices: list[str], batch_sizes: list[int], precisions: list[str]
) -> list[tuple[str, int, str]]:
    """(device, batch, precision) to measure: batch 32 in float32 always; mixed on the GPU only."""
    out = []
    for device in devices:
        out.append((device, 32, "float32"))
        for batch in sorted(batch_sizes):
            if device != "gpu" and batch > CPU_MAX_BATCH:
                continue
            for precision in precisions:
                if device == "gpu" or precision == "float32":
                    out.append((device, batch, precision))
    return list(dict.fromkeys(out))


def device_names() -> dict[str, str]:
    """Readable names for the measurements file: the GPU's model, the CPU's thread count."""
    from demos import hardware

    gpus = hardware.gpus()
    return {
        "cpu1": "CPU 1 thread",
        "cpu": f"CPU {os.cpu_count()} threads",
        "gpu": gpus[0].name if gpus else "GPU",
    }


def summarize(results: list[dict[str, Any]], label: str) -> dict[str, dict[str, float]]:
    """``{"<label>, batch 32": {device: ips}, "<label>, fastest": {device: ips}}``."""
    names = device_names()
    batch32: dict[str, float] = {}
    fastest: dict[str, float] = {}
    for r in results:
        if "images_per_second" not in r:
            continue
        name = names[r["device"]]
        if r["batch_size"] == 32 and r["precision"] == "float32":
            batch32[name] = round(r["images_per_second"], 1)
        fastest[name] = max(fastest.get(name, 0.0), round(r["images_per_second"], 1))
    return {f"{label}, batch 32": batch32, f"{label}, fastest": fastest}


BACKEND_NAMES = {"jax": "JAX", "tensorflow": "TensorFlow", "torch": "PyTorch"}


def backend_label(results: list[dict[str, Any]]) -> str:
    """ "Keras 3 on JAX": the backend(s) the measurements ran on, as each child recorded it."""
    used = sorted({r["backend"] for r in results if "backend" in r})
    used = used or [os.environ.get("KERAS_BACKEND", "tensorflow")]  # nothing measured yet
    return "Keras 3 on " + " and ".join(BACKEND_NAMES.get(b, b) for b in used)


def main(args: argparse.Namespace) -> int:
    if args.worker:
        spec = json.loads(args.worker)
        print(json.dumps(measure(**spec)), flush=True)
        return 0
    devices = [d.strip() for d in args.devices.split(",") if d.strip()]
    unknown = [d for d in devices if d not in DEVICES]
    if unknown:
        raise SystemExit(f"unknown device(s) {', '.join(unknown)}: use {', '.join(DEVICES)}")
    precisions = [p.strip() for p in args.precisions.split(",") if p.strip()]
    from demos.cnn import PRECISIONS

    if not precisions or any(p not in PRECISIONS for p in precisions):
        raise SystemExit(
            f"--precisions must be from {', '.join(PRECISIONS)}, got {args.precisions!r}"
        )
    batch_sizes = args.batch_sizes
    if args.steps <= 0 or args.repeats <= 0 or args.steps_per_execution <= 0:
        raise SystemExit("--steps, --repeats and --steps-per-execution must be positive")
    from demos import hardware
    from demos.benchmarks.record import DEFAULT_OUTPUT_DIR, write_json, write_result

    if "gpu" in devices and not hardware.has_gpu():
        print(f"skipping gpu: {hardware.no_gpu_reason() or 'no GPU found'}", file=sys.stderr)
        devices.remove("gpu")
    output = args.output or DEFAULT_OUTPUT_DIR
    stem = "cnn_" + (hardware.gpus()[0].name.replace(" ", "_") if "gpu" in devices else "cpu")
    path = output / f"{stem}.json"
    results: list[dict[str, Any]] = []
    for device, batch, precision in configurations(devices, batch_sizes, precisions):
        result = _run_child(device, batch, precision, args)
        shown = (
            f"{result['images_per_second']:,.0f} images/s"
            if "images_per_second" in result
            else f"FAILED: {result['error']}"
        )
        print(f"{device:>4} batch {batch:>5} {precision:<15} {shown}", flush=True)
        results.append(result)
        label = args.label or backend_label(results)
        # written after every configuration, so a run cut short keeps what it measured
        write_result(
            path,
            "cnn",
            results,
            sources=["demos/cnn"],
            devices=devices,
            batch_sizes=batch_sizes,
            precisions=precisions,
            steps=args.steps,
            repeats=args.repeats,
            steps_per_execution=args.steps_per_execution,
            label=label,
            device_names=device_names(),
            data="synthetic CIFAR-sized images",
        )
        write_json(
            output / MEASUREMENTS_NAME,
            summarize(results, label),
            sources=["demos/cnn"],
            keras_backends=sorted({r["backend"] for r in results if "backend" in r}),
        )
    print(f"wrote {path} and {output / MEASUREMENTS_NAME}")
    if not args.no_plot:
        from demos.cnn.plots import plot
        from demos.shipped_results import read_json

        for figure in plot(read_json(path), output):
            print(f"wrote {figure}")
    return 0 if any("images_per_second" in r for r in results) else 1
