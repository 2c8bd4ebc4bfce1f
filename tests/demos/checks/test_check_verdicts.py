"""The chapters' checks give the right verdict with the right reason (issue 37, item 1).

Why: a content review ran 141 answers through the checks. Wrong answers that
passed (a float32 matrix for float64 points, a "chunked" function that builds
the whole matrix, a loop that never touches the GPU, a sum that never splits, a
register added before it is set, a kernel that reads past its input), right
answers that failed (C that CuPy compiles, a launch on a stream, a NumPy
integer) each teach the wrong thing (the wrong hints: test_check_hints.py).
Every test here is an answer as a student would write it in the chapter's cell,
run through the same check the chapter calls; each class of mistake has a
second variant, so that a fix is not one case.
"""

from __future__ import annotations

import numpy as np
import pytest

import demos.patterns  # noqa: F401  (the simulator's own shared buffers, shuffles and locals)
from demos.checks import answer_source, cnn_checks, passes
from helpers import notebook_cell


def _verdict(name: str, source: str, capsys) -> tuple[bool, str]:
    ok = passes(name, notebook_cell(source, name))
    return ok, capsys.readouterr().out


# --- accepted although wrong ------------------------------------------------------------------
CHUNKED_FLOAT32 = """
def distance_matrix_chunked(x, block_rows):
    n = len(x)
    out = np.empty((n, n), dtype=np.float32)
    x2 = (x * x).sum(axis=1)
    for start in range(0, n, block_rows):
        band = x[start:start + block_rows]
        out[start:start + block_rows] = x2[start:start + block_rows, None] - 2 * (band @ x.T) + x2
    return out
"""


def test_chunked_float32_output_for_float64_points_is_refused(capsys) -> None:
    ok, said = _verdict("distance_matrix_chunked", CHUNKED_FLOAT32, capsys)
    assert not ok and "dtype float32, expected float64" in said, said


def test_chunked_float64_output_for_float32_points_is_refused(capsys) -> None:
    """Variant: `np.empty((n, n))` without a dtype makes float64 whatever the points are."""
    source = CHUNKED_FLOAT32.replace("dtype=np.float32", "")
    ok, said = _verdict("distance_matrix_chunked", source, capsys)
    assert not ok and "float32 points" in said and "expected float32" in said, said


def test_distance_on_device_float32_output_for_float64_points_is_refused(capsys) -> None:
    source = answer_source("distance_on_device").replace("dtype=x.dtype", "dtype=np.float32")
    source = "import numpy as np\n" + source
    ok, said = _verdict("distance_on_device", source, capsys)
    assert not ok and "dtype float32, but the points are float64" in said, said


def test_distance_on_device_default_dtype_is_accepted_for_float64_points(capsys) -> None:
    """Variant, the right side: cuda.device_array's default dtype is float64, the points' too."""
    source = answer_source("distance_on_device").replace(", dtype=x.dtype", "")
    ok, said = _verdict("distance_on_device", source, capsys)
    assert ok, said


WHOLE_THEN_SLICED = """
def distance_matrix_chunked(x, block_rows):
    x2 = (x * x).sum(axis=1)
    whole = x2[:, None] - 2 * (x @ x.T) + x2[None, :]
    return np.concatenate([whole[s:s + block_rows] for s in range(0, len(x), block_rows)])
"""


def test_chunked_that_builds_the_whole_matrix_and_slices_it_is_refused(capsys) -> None:
    ok, said = _verdict("distance_matrix_chunked", WHOLE_THEN_SLICED, capsys)
    assert not ok and "held" in said and "MB at once" in said and "band" in said, said


def test_chunked_that_copies_bands_of_a_whole_matrix_into_the_result_is_refused(capsys) -> None:
    """Variant: the result allocated once, but filled from a whole matrix made first."""
    source = """
def distance_matrix_chunked(x, block_rows):
    n = len(x)
    out = np.empty((n, n), dtype=x.dtype)
    x2 = (x * x).sum(axis=1)
    whole = x2[:, None] - 2 * (x @ x.T) + x2[None, :]
    for s in range(0, n, block_rows):
        out[s:s + block_rows] = whole[s:s + block_rows]
    return out
"""
    ok, said = _verdict("distance_matrix_chunked", source, capsys)
    assert not ok and "matrices' worth of temporaries" in said, said


def test_chunked_model_answer_reports_its_peak(capsys) -> None:
    ok, said = _verdict("distance_matrix_chunked", answer_source("distance_matrix_chunked"), capsys)
    assert ok and "peak memory" in said, said


def test_sync_free_total_that_never_uses_xp_is_refused(capsys) -> None:
    source = """
def sync_free_total(xp, arrays):
    total = 0.0
    for a in arrays:
        total += a.sum()
    return total
"""
    ok, said = _verdict("sync_free_total", source, capsys)
    assert not ok and "summed the host arrays with NumPy" in said and "xp.asarray" in said, said


def test_sync_free_total_with_a_python_sum_and_no_xp_is_refused(capsys) -> None:
    """Variant: Python's own sum over NumPy's sums, xp not even named."""
    source = """
def sync_free_total(xp, arrays):
    return float(sum(np.sum(a) for a in arrays))
"""
    ok, said = _verdict("sync_free_total", source, capsys)
    assert not ok and "xp" in said and "0 copies to the device" in said, said


def test_sync_free_total_stacked_on_the_device_is_accepted(capsys) -> None:
    """The right side: one upload of all the arrays, summed with xp, is fine too."""
    source = """
def sync_free_total(xp, arrays):
    return float(xp.asarray(np.stack(arrays)).sum())
"""
    ok, said = _verdict("sync_free_total", source, capsys)
    assert ok, said


def test_split_sum_that_does_not_split_is_refused(capsys) -> None:
    source = """
def split_sum(values, parts):
    return float(values.sum())
"""
    ok, said = _verdict("split_sum", source, capsys)
    assert not ok and "summed" in said and "at once" in said and "split_ranges" in said, said


def test_split_sum_with_a_python_loop_over_everything_is_refused(capsys) -> None:
    """Variant: Python's sum over all values, with split_ranges imported but never used."""
    source = """
from demos.multigpu.splitting import split_ranges
def split_sum(values, parts):
    return sum(values)
"""
    ok, said = _verdict("split_sum", source, capsys)
    assert not ok and "at once" in said, said


def test_split_sum_with_array_split_and_fsum_is_accepted(capsys) -> None:
    """The right side: other ways to split and to add a piece still pass."""
    source = """
import math
def split_sum(values, parts):
    return sum(math.fsum(piece) for piece in np.array_split(values, parts))
"""
    ok, said = _verdict("split_sum", source, capsys)
    assert ok, said


WIDE_LOOP = (
    "            got[k] = values[i] if i < n else float32(0)  # the last group may pass the end\n"
)


def test_wide_sum_adding_into_an_unset_local_array_is_refused(capsys) -> None:
    model = answer_source("wide_sum")
    assert WIDE_LOOP in model
    source = model.replace(
        WIDE_LOOP, "            if i < n:\n                got[k] += values[i]\n"
    )
    ok, said = _verdict("wide_sum", source, capsys)
    assert not ok and "nan" in said and "cuda.local.array" in said, said


def test_wide_sum_with_an_unset_local_accumulator_is_refused(capsys) -> None:
    """Variant: the running sum kept in a local array of one element that nobody zeroes."""
    model = answer_source("wide_sum")
    source = model.replace("    acc = float32(0)\n", "    box = cuda.local.array(1, float32)\n")
    source = source.replace(
        "        for k in range(LOADS):  # only now use them\n            acc += got[k]\n",
        "        for k in range(LOADS):  # only now use them\n            box[0] += got[k]\n"
        "    acc = box[0]\n",
    )
    assert source.count("box[0]") == 2
    ok, said = _verdict("wide_sum", source, capsys)
    assert not ok and "nan" in said, said


def test_the_simulator_fills_local_arrays_as_garbage(capsys) -> None:
    """What the two tests above rest on: an unset local element reads NaN (floats) or 0x5A5A."""
    from numba import cuda

    from demos.patterns.simulator import simulated

    source = """
from numba import cuda, float32, int32
@cuda.jit
def peek(out):
    f = cuda.local.array(2, float32)
    i = cuda.local.array(2, int32)
    out[0] = f[1]
    out[1] = i[1]
"""
    out = np.zeros(2)
    simulated(notebook_cell(source, "peek"))[1, 1](out)
    cuda.synchronize()
    assert np.isnan(out[0]) and out[1] == 0x5A5A


def test_add_to_kernel_reads_past_the_end_of_a_nan_padded_source() -> None:
    """The source the check hands a kernel lies inside NaN: a read past its end (that a GPU does
    not stop) turns the target's canary into NaN, which the guard band catches."""
    from demos.checks._harness import GuardedInput

    given = GuardedInput(np.arange(5.0))
    whole = given.device.copy_to_host()
    assert np.array_equal(given.view.copy_to_host(), np.arange(5.0))
    assert np.isnan(whole).sum() == whole.size - 5


UNGUARDED_ADD_TO = """
from numba import cuda
@cuda.jit
def add_to_kernel(source, target):
    i = cuda.grid(1)
    target[i] += source[i]
"""


@pytest.mark.gpu
def test_add_to_kernel_without_a_guard_is_refused_on_a_gpu(capsys) -> None:
    ok, said = _verdict("add_to_kernel", UNGUARDED_ADD_TO, capsys)
    assert not ok and "outside the output" in said, said


@pytest.mark.gpu
def test_add_matrices_kernel_without_a_guard_is_refused_on_a_gpu(capsys) -> None:
    """Variant: the 2-D kernel that adds a[i, j] + b[i, j] past the edge of the inputs."""
    source = """
from numba import cuda
@cuda.jit
def add_matrices_kernel(a, b, out):
    i, j = cuda.grid(2)
    out[i, j] = a[i, j] + b[i, j]
"""
    ok, said = _verdict("add_matrices_kernel", source, capsys)
    assert not ok and "outside" in said, said


def test_add_to_kernel_without_a_guard_is_refused_in_the_simulator(capsys) -> None:
    ok, said = _verdict("add_to_kernel", UNGUARDED_ADD_TO, capsys)
    assert not ok and "outside" in said, said


# --- rejected although right -----------------------------------------------------------------
COMBINE = {"in_params": "T x2_i, T xy, T y2_j", "out_params": "T d"}


@pytest.mark.parametrize(
    "operation",
    [
        "d = max(x2_i - 2 * xy + y2_j, (T)0)",  # the clamp chapter 3 recommends
        "d = fma((T)-2, xy, x2_i + y2_j)",
    ],
)
def test_combine_kernel_accepts_a_clamp_and_fma(operation, capsys) -> None:
    assert passes("combine_kernel", {**COMBINE, "operation": operation}), capsys.readouterr().out


@pytest.mark.parametrize(
    "operation",
    [
        "d = fmax(x2_i - 2.0f * xy + y2_j, 0)",
        "d = max((T)(x2_i + y2_j) - (T)2 * xy, 0.0f)",
        "T t = fma(-2, xy, x2_i); d = max(t + y2_j, (T)0)",
    ],
)
def test_combine_kernel_accepts_other_c_that_cuda_compiles(operation, capsys) -> None:
    """Variant: fmax, float suffixes, casts of a parenthesised expression, a local (each seen to
    compile with CuPy 14 and CUDA 13 for float32 and float64)."""
    assert passes("combine_kernel", {**COMBINE, "operation": operation}), capsys.readouterr().out


@pytest.mark.parametrize(
    "operation, words",
    [
        ("d = max(x2_i - 2 * xy + y2_j, 0)", "CUDA has no max of an int and a floating-point"),
        ("d = fmax(x2_i - 2 * xy + y2_j, 0.0f)", "refuses fmax(double, float)"),
        ("d = fma(-2.0, xy, x2_i + y2_j)", "refuses fma(double, float, float)"),
    ],
)
def test_combine_kernel_refuses_the_calls_cuda_finds_ambiguous(operation, words, capsys) -> None:
    """The stand-in translates calls without accepting what CUDA rejects (seen there: `max` of
    a double and an int, `fmax`/`fma` of a float and a double)."""
    assert not passes("combine_kernel", {**COMBINE, "operation": operation})
    said = capsys.readouterr().out
    assert words in said and "(T)0" in said, said


def test_combine_kernel_still_names_a_wrong_formula_behind_a_clamp(capsys) -> None:
    spec = {**COMBINE, "operation": "d = max(x2_i + 2 * xy + y2_j, (T)0)"}
    assert not passes("combine_kernel", spec)
    assert "your kernel gives 5, expected 1" in capsys.readouterr().out


def test_distance_on_device_launched_on_a_stream_is_accepted(capsys) -> None:
    source = answer_source("distance_on_device").replace(
        "kernel[grid, BLOCK](d_x, d_y, d_out)",
        "stream = cuda.stream()\n    kernel[grid, BLOCK, stream](d_x, d_y, d_out)",
    )
    ok, said = _verdict("distance_on_device", source, capsys)
    assert ok, said


def test_distance_on_device_copying_on_a_stream_is_accepted(capsys) -> None:
    """Variant: the copies on the stream too, and a wait for it before returning."""
    source = """
import math
from numba import cuda
BLOCK = (32, 8)
def distance_on_device(x, y, kernel):
    stream = cuda.stream()
    d_x, d_y = cuda.to_device(x, stream=stream), cuda.to_device(y, stream=stream)
    d_out = cuda.device_array((x.shape[0], y.shape[0]), dtype=x.dtype, stream=stream)
    grid = (math.ceil(y.shape[0] / BLOCK[0]), math.ceil(x.shape[0] / BLOCK[1]))
    kernel[grid, BLOCK, stream, 0](d_x, d_y, d_out)
    out = d_out.copy_to_host(stream=stream)
    stream.synchronize()
    return out
"""
    ok, said = _verdict("distance_on_device", source, capsys)
    assert ok, said


@pytest.fixture
def measured(monkeypatch):
    """batch_trial without training: Keras present, every batch size 100 images/s."""
    monkeypatch.setattr(cnn_checks, "_keras_missing", lambda: False)
    monkeypatch.setattr(cnn_checks, "_images_per_second", lambda batch, device: 100.0)


def test_batch_trial_accepts_a_numpy_integer(measured, capsys) -> None:
    assert passes("batch_trial", {"batch_size": np.int64(256), "predicted_speedup": 2})
    assert "batch 256" in capsys.readouterr().out


@pytest.mark.parametrize(
    "batch, ok",
    [(np.int32(8), True), (np.uint16(64), True), (np.float64(256.0), False), (True, False)],
)
def test_batch_trial_accepts_whole_numbers_only(batch, ok, measured, capsys) -> None:
    """Variant: other NumPy integers pass; a float (even 256.0) and a bool do not."""
    assert passes("batch_trial", {"batch_size": batch, "predicted_speedup": 2}) is ok
    said = capsys.readouterr().out
    assert ok or "whole number" in said, said


def test_batch_trial_takes_medians_and_says_a_cpu_may_lose_with_a_larger_batch(
    monkeypatch, capsys
) -> None:
    """Why: one repeat per batch size once gave a CPU a ratio far from the truth, and chapter 5
    had implied a larger batch is never slower on a CPU; it can be."""
    from demos.cnn import bench

    asked = []

    def fake_measure(device, batch_size, precision, steps, repeats):
        asked.append(repeats)
        return {"images_per_second": 100.0 if batch_size == 32 else 42.0}

    monkeypatch.setattr(cnn_checks, "_keras_missing", lambda: False)
    monkeypatch.setattr(cnn_checks, "_device", lambda: "cpu")
    monkeypatch.setattr(bench, "measure", fake_measure)
    assert passes("batch_trial", {"batch_size": 256, "predicted_speedup": 1.2})
    said = capsys.readouterr().out
    assert asked == [cnn_checks.REPEATS] * 2 and cnn_checks.REPEATS >= 5
    assert "0.42 x" in said and f"medians of {cnn_checks.REPEATS}" in said and "slower" in said
