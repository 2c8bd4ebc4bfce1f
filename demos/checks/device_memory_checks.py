"""Check for chapter 4's device-memory cell: inputs copied once, the output made on the GPU.

Handed NumPy arrays, a Numba kernel launch copies every one of them to the
GPU before the launch and back after it, the output included, on every launch.
The student's host function must instead copy the points over with
``cuda.to_device``, allocate the output on the device with
``cuda.device_array`` (nothing to copy in) and bring the matrix back once with
``copy_to_host``. The check hands it a watched kernel, which records what each
launch receives, and counts the bytes ``cuda.to_device`` sends, so the feedback
can say which array travelled needlessly; it works the same in the simulator
and on a GPU. (Numba's own warning, "Host array used in CUDA kernel", comes
only from a real GPU and is hidden in the chapters; the check says it in words.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from numba import cuda

from demos.checks._harness import SENTINEL, CheckFailed, compare, launch, on_gpu
from demos.checks.kernel_checks import SHAPES
from demos.distance.cuda_teaching import coalesced_kernel
from demos.distance.reference import reference_distance

ARGUMENTS = ("x", "y", "out")


def _is_device_array(value: Any) -> bool:
    """A Numba device array (or the simulator's stand-in): it has copy_to_host, NumPy's has not."""
    return not isinstance(value, np.ndarray) and hasattr(value, "copy_to_host")


class WatchedKernel:
    """Launches the course's coalesced kernel like ``kernel[grid, block](x, y, out)``, and
    refuses host arrays with the reason."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.launches = 0

    def __getitem__(self, config: tuple) -> Callable[..., None]:
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise CheckFailed(
                f"{self.what}: launch as kernel[grid, block](...) (a stream and a shared-memory "
                "size may follow: kernel[grid, block, stream])."
            )
        grid, block, *rest = config

        def run(*args: Any) -> None:
            self.launches += 1
            host = [n for n, a in zip(ARGUMENTS, args, strict=False) if not _is_device_array(a)]
            if host:
                raise CheckFailed(
                    f"{self.what}: the kernel got host array(s) for {', '.join(host)}. Numba then "
                    "copies each to the GPU before the launch and back after it, every launch; "
                    "pass device arrays (cuda.to_device for the points, cuda.device_array for "
                    "the output)."
                )
            launch(coalesced_kernel, grid, block, *args, what=self.what, extra=tuple(rest))

        return run


@contextlib.contextmanager
def _watched_allocations() -> Iterator[list[np.ndarray]]:
    """While the block runs: keep what every ``cuda.to_device`` call sent, and fill every
    float ``cuda.device_array`` with the sentinel, so that entries no thread wrote are found
    (an uninitialised array may happen to hold the right numbers from an earlier run)."""
    sent: list[np.ndarray] = []
    to_device, device_array = cuda.to_device, cuda.device_array

    def counted(array: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(np.asarray(array))
        return to_device(array, *args, **kwargs)

    def filled(*args: Any, **kwargs: Any) -> Any:
        made = device_array(*args, **kwargs)
        if np.issubdtype(made.dtype, np.floating):
            made.copy_to_device(np.full(made.shape, SENTINEL, dtype=made.dtype))
        return made

    cuda.to_device, cuda.device_array = counted, filled
    try:
        yield sent
    finally:
        cuda.to_device, cuda.device_array = to_device, device_array


def distance_on_device(student: Callable[[np.ndarray, np.ndarray, Any], Any]) -> str:
    """*student(x, y, kernel)* returns the matrix on the host, moving only what must move."""
    shapes = SHAPES + ([(1000, 3001)] if on_gpu() else [])
    for seed, (n, m) in enumerate(shapes):
        rng = np.random.default_rng(seed)
        x, y = rng.random((n, 3)), rng.random((m, 3))
        what = f"{n} x {m} output"
        kernel = WatchedKernel(what)
        with _watched_allocations() as sent:
            got = student(x, y, kernel)
        if kernel.launches != 1:
            raise CheckFailed(f"{what}: launch the kernel once, not {kernel.launches} times.")
        _sent_once(sent, x, y, what)
        if _is_device_array(got):
            raise CheckFailed(
                f"{what}: you returned the device array; bring the matrix back once with "
                ".copy_to_host() and return that NumPy array."
            )
        if not isinstance(got, np.ndarray):
            raise CheckFailed(f"{what}: return a NumPy array, not {type(got).__name__}.")
        if got.dtype != x.dtype:
            raise CheckFailed(
                f"{what}: the matrix has dtype {got.dtype}, but the points are {x.dtype}. "
                "Allocate the output with the points' dtype: cuda.device_array((n, m), "
                "dtype=x.dtype) (a float32 output rounds every distance to 7 digits)."
            )
        try:
            compare(got, reference_distance(x, y), what)
        except CheckFailed as problem:
            raise CheckFailed(
                f"{problem} With BLOCK = (32, 8) the grid's x counts blocks of columns (m), "
                "its y blocks of rows (n), both rounded up."
            ) from None
    return "points copied once, the output made on the GPU, one copy back: right for every shape."


def _sent_once(sent: list[np.ndarray], x: np.ndarray, y: np.ndarray, what: str) -> None:
    """Fail, naming the array, unless cuda.to_device sent at most the points, each once."""
    total = sum(a.nbytes for a in sent)
    if total <= x.nbytes + y.nbytes:
        return
    output = (x.shape[0], y.shape[0])
    if any(a.shape == output for a in sent) and output not in (x.shape, y.shape):
        raise CheckFailed(
            f"{what}: cuda.to_device sent {total} bytes, but the points are only "
            f"{x.nbytes + y.nbytes}: an array of the output's shape {output} went to the GPU. The "
            "output needs no copy to the GPU: allocate it there with cuda.device_array((n, m))."
        )
    names = []
    for name, points in (("x", x), ("y", y)):
        copies = sum(1 for a in sent if a.shape == points.shape and np.array_equal(a, points))
        if copies > 1:
            names.append(f"{name} {copies} times")
    said = f" ({', '.join(names)})" if names else ""
    raise CheckFailed(
        f"{what}: cuda.to_device sent {total} bytes{said}, but the points are only "
        f"{x.nbytes + y.nbytes}. Copy each array of points once and pass the same device array "
        "wherever it is needed."
    )
