"""Checks for the "your turn" cells of chapter 3 (CuPy as a drop-in for NumPy).

Each function is run with NumPy arrays, with CuPy arrays where CuPy can reach
a GPU, and everywhere with a CuPy-like stand-in (:mod:`demos.cupy_standin`):
array-module agnostic code must give the same answer, keep the input's dtype,
return an array of the module it was given, and bring to the host only what it
must (a nearest-neighbour search copies back n indices, not the n x n matrix).
The student's own ``cupy.ElementwiseKernel`` is compiled by CuPy on a GPU and,
without one, evaluated by a NumPy stand-in (:mod:`demos.checks._elementwise_standin`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from demos import cupy_standin, hardware
from demos.checks import _elementwise_standin
from demos.checks._harness import CheckFailed, compare, expect_dtype
from demos.distance.reference import reference_distance
from demos.kernel_testing import to_host


def _modules() -> list[Any]:
    found: list[Any] = [np]
    if hardware.cupy_available():
        import cupy

        found.append(cupy)
    return [*found, cupy_standin.module]


def _to_host(array: Any) -> np.ndarray:
    if isinstance(array, cupy_standin.DeviceArray):
        return np.array(array._data)  # the check's own look: not a transfer of the student's
    return to_host(array)


def _run(student: Callable, xp: Any, arrays: tuple, what: str) -> Any:
    """The student's function on *arrays* moved to *xp*; for the stand-in with ``cupy`` pointing
    to it, and NumPy's refusal of a GPU array explained."""
    args = [xp.asarray(a) for a in arrays]
    if xp is not cupy_standin.module:
        return student(*args)
    try:
        with cupy_standin.standing_in(student, strict=True):
            return student(*args)
    except TypeError as exc:
        said = str(exc)
        if not any(w in said for w in ("Implicit conversion", "mixed", "Unsupported type")):
            raise
        first = said.splitlines()[0].rstrip(".")
        raise CheckFailed(
            f"{what}: your function handed a GPU array to NumPy ({first}). Code for NumPy "
            "and CuPy alike asks the array for its module: xp = get_array_module(x), then "
            "xp.einsum(...). (CuPy passes some NumPy calls such as np.einsum on to itself, "
            "but np.asarray and many others fail, and the code no longer says what runs where.)"
        ) from None


def _same_module(got: Any, xp: Any, what: str) -> None:
    if xp is not np and not isinstance(got, xp.ndarray):
        raise CheckFailed(
            f"{what}: given GPU arrays ({xp.__name__}) you returned {type(got).__name__}; "
            "stay on the GPU: pick the module with get_array_module."
        )
    if xp is np and type(got).__module__.startswith("cupy"):
        raise CheckFailed(f"{what}: given NumPy arrays you returned a CuPy array.")


def row_norms(student: Callable[[Any], Any]) -> str:
    rng = np.random.default_rng(4)
    for xp in _modules():
        for shape in [(1, 3), (10, 3), (7, 5)]:
            for dtype in (np.float64, np.float32):
                x = rng.random(shape).astype(dtype)
                what = f"{xp.__name__} {dtype.__name__} shape {shape}"
                got = _run(student, xp, (x,), what)
                _same_module(got, xp, what)
                expect_dtype(got, dtype, what)
                compare(_to_host(got), (x.astype(np.float64) ** 2).sum(axis=1), what, rtol=1e-5)
    return "squared norms right for 1 to 10 points, 3 or 5 coordinates, float32 and float64."


def distance_matrix(student: Callable[[Any, Any], Any]) -> str:
    rng = np.random.default_rng(5)
    for xp in _modules():
        for n, m in [(1, 1), (5, 5), (6, 9)]:
            for dtype in (np.float64, np.float32):
                x, y = rng.random((n, 3)).astype(dtype), rng.random((m, 3)).astype(dtype)
                what = f"{xp.__name__} {dtype.__name__}, {n} x {m} points"
                got = _run(student, xp, (x, y), what)
                _same_module(got, xp, what)
                expect_dtype(got, dtype, what)
                compare(_to_host(got), reference_distance(x, y), what, rtol=1e-4, atol=1e-5)
    return f"same matrix as the direct formula with {', '.join(xp.__name__ for xp in _modules())}."


def nearest_neighbour(student: Callable[[Any], Any]) -> str:
    rng = np.random.default_rng(6)
    for xp in _modules():
        for n in (2, 3, 50):
            x = rng.random((n, 3))
            d = reference_distance(x, x)
            np.fill_diagonal(d, np.inf)
            want = d.argmin(axis=1)
            what = f"{xp.__name__}, {n} points"
            got = _run(student, xp, (x,), what)
            copied = [(how, s) for how, s in cupy_standin.transfers if np.prod(s) > n]
            if xp is cupy_standin.module and copied:
                how, shape = copied[0]
                raise CheckFailed(
                    f"{what}: your function copied an array of shape {shape} to the host "
                    f"({how}); only the {n} indices need to travel. Find the minimum of each "
                    "row on the GPU (argmin), then copy that small result back."
                )
            if not isinstance(got, np.ndarray):
                raise CheckFailed(
                    f"{what}: return a NumPy array on the host (copy back only the "
                    f"n indices), not {type(got).__name__}."
                )
            if got.shape != (n,):
                raise CheckFailed(f"{what}: expected {n} indices, got shape {got.shape}.")
            if np.array_equal(got, np.arange(n)):
                raise CheckFailed(
                    f"{what}: every point is its own nearest neighbour. "
                    "Leave out the diagonal (set it to infinity first)."
                )
            bad = np.flatnonzero(got != want)
            if bad.size:
                i = int(bad[0])
                raise CheckFailed(
                    f"{what}: for point {i} you return {int(got[i])}, expected {int(want[i])}."
                )
    return "right indices, self excluded, returned as a small host array."


BAND_TEMPORARIES = 6  # what a band may cost besides the result: a few band-sized temporaries
PEAK_CASE = (600, 20)  # (points, rows per band): the result is 2.9 MB, a band 96 kB


def _peak_bytes(student: Callable[[Any, int], Any], x: np.ndarray, rows: int) -> tuple[Any, int]:
    """The student's result and the most memory NumPy held at once while it ran (tracemalloc
    sees every NumPy allocation)."""
    import tracemalloc

    started = not tracemalloc.is_tracing()
    if started:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        got = student(x, rows)
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        if started:
            tracemalloc.stop()
    return got, peak


def distance_matrix_chunked(student: Callable[[Any, int], Any]) -> str:
    rng = np.random.default_rng(7)
    for n, rows, dtype in [
        (10, 3, np.float64),
        (10, 10, np.float64),
        (7, 100, np.float64),
        (33, 8, np.float64),
        (33, 8, np.float32),
    ]:
        x = rng.random((n, 3)).astype(dtype)
        what = f"{n} {dtype.__name__} points in bands of {rows} rows"
        got = student(x, rows)
        if not isinstance(got, np.ndarray):
            raise CheckFailed(
                f"{what}: return the whole matrix as a NumPy array, not {type(got).__name__}."
            )
        expect_dtype(got, dtype, what)
        compare(
            got,
            reference_distance(x, x),
            what,
            rtol=1e-4 if dtype == np.float32 else 1e-6,
            atol=1e-5 if dtype == np.float32 else 1e-9,
        )
    n, rows = PEAK_CASE
    x = rng.random((n, 3))
    got, peak = _peak_bytes(student, x, rows)
    compare(got, reference_distance(x, x), f"{n} points in bands of {rows} rows")
    result, band = n * n * x.itemsize, rows * n * x.itemsize
    budget = result + BAND_TEMPORARIES * band + 64 * 1024
    if peak > budget:
        raise CheckFailed(
            f"{n} points in bands of {rows} rows: your function held {peak / 1e6:.1f} MB at once, "
            f"but the result is {result / 1e6:.1f} MB and a band {band / 1e3:.0f} kB: it made "
            f"{(peak - result) / result:.1f} matrices' worth of temporaries (the whole matrix, "
            "then sliced?). Allocate the result once (np.empty((n, n), dtype=x.dtype)) and compute "
            "each band of rows straight into it: only band-sized temporaries."
        )
    return (
        "the banded computation gives the full matrix, also when the last band is short; "
        f"peak memory {peak / result:.2f} x the result for bands of {rows} of {n} rows."
    )


_KERNEL_KEYS = ("in_params", "out_params", "operation")
_COMBINE_ORDER = "the inputs arrive as (x2[:, None], xy, y2[None, :]): D_ij = x2_i - 2 xy_ij + y2_j"


def _elementwise(spec: dict[str, str], *arrays: np.ndarray) -> np.ndarray:
    """The student's kernel on *arrays*: read by the NumPy stand-in everywhere (so that CPU and
    GPU reject the same strings, with the same words), then compiled by CuPy where it has a GPU."""
    on_host = _elementwise_standin.run(*(spec[k] for k in _KERNEL_KEYS), *arrays)
    if not hardware.cupy_available():
        return on_host
    import cupy

    try:
        kernel = cupy.ElementwiseKernel(*(spec[k] for k in _KERNEL_KEYS), name="your_combine")
        return cupy.asnumpy(kernel(*(cupy.asarray(a) for a in arrays)))
    except Exception as exc:  # noqa: BLE001 - CUDA compile errors of student code vary
        said = str(exc).strip().splitlines()
        raise CheckFailed(
            f"CuPy could not build or run your kernel: {type(exc).__name__}: "
            f"{said[0][:200] if said else ''}"
        ) from None


def combine_kernel(spec: dict[str, str]) -> str:
    """*spec* holds the three strings of a ``cupy.ElementwiseKernel`` for the last step
    ``x2[:, None] - 2 * xy + y2[None, :]``: one pass, no n x m temporaries."""
    if not isinstance(spec, dict) or set(spec) != set(_KERNEL_KEYS):
        raise CheckFailed(f"give a dict with exactly the keys {', '.join(_KERNEL_KEYS)}.")
    if not spec["operation"].strip():
        raise CheckFailed("the operation is empty: write one C statement that sets the output.")
    one = np.ones((1, 1))
    for probe, want, what in (
        ((one, 0 * one, 0 * one), 1.0, "x2_i = 1 and the rest 0"),
        # positive, so that a kernel that clamps at 0 (max(..., (T)0)) is read right
        ((3 * one, one, 0 * one), 1.0, "x2_i = 3, xy = 1 and y2_j = 0"),
        ((0 * one, 0 * one, one), 1.0, "y2_j = 1 and the rest 0"),
    ):
        got = float(np.asarray(_elementwise(spec, *probe)).ravel()[0])
        if got != want:
            raise CheckFailed(
                f"with {what}, your kernel gives {got:g}, expected {want:g}: {_COMBINE_ORDER}."
            )
    rng = np.random.default_rng(9)
    for n, m in [(1, 1), (5, 9), (9, 5)]:
        for dtype in (np.float64, np.float32):
            x, y = rng.random((n, 3)).astype(dtype), rng.random((m, 3)).astype(dtype)
            x2, y2 = (x * x).sum(axis=1), (y * y).sum(axis=1)
            what = f"{dtype.__name__}, {n} x {m} points"
            got = _elementwise(spec, x2[:, None], x @ y.T, y2[None, :])
            expect_dtype(got, dtype, what + " (declare the output as T, the inputs' type)")
            compare(got, reference_distance(x, y), what, rtol=1e-4, atol=1e-5)
    where = (
        "compiled by CuPy and run on the GPU"
        if hardware.cupy_available()
        else "checked with a NumPy stand-in (no GPU for CuPy here; on a GPU CuPy compiles the "
        "same string to CUDA)"
    )
    return f"one pass gives the whole matrix, float32 and float64, {where}."
