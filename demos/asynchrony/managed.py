"""``python -m demos bench managed``: managed (unified) memory touched on the host, then used by a
kernel, with and without prefetching it to the GPU first.

Managed memory has one address on host and GPU; the driver moves its pages to
whichever side touches them. A kernel that meets pages the host wrote last
faults on them and waits while they migrate, a few at a time; a prefetch
(``cudaMemPrefetchAsync``) moves them all in one stream operation before the
kernel runs. Writes ``managed.json`` (layout: :mod:`demos.benchmarks.record`):
GPU times (CUDA events) of one in-place kernel over the array

* on ordinary device memory (the floor),
* on managed memory the host has just written (page faults on first touch),
* on managed memory the host has just written, prefetched first (the prefetch
  timed on its own, then the kernel),

with the GPU's ``concurrentManagedAccess`` (0 on some systems: there the
driver moves the whole allocation when a kernel starts, and the host may not
touch it while the GPU works) and which prefetch call this CuPy build accepted.
CUDA 13 changed ``cudaMemPrefetchAsync`` to take a location instead of a device
number; :func:`prefetch` tries CuPy's own call first, then CUDA Python's.
"""

from __future__ import annotations

import argparse
import ctypes
from typing import Any

import numpy as np

from demos import gpu_timer, hardware
from demos.benchmarks import record

SOURCES = ["demos/asynchrony/managed.py"]
_CONCURRENT_MANAGED_ACCESS = 89  # cudaDevAttrConcurrentManagedAccess


def concurrent_managed_access(cp: Any) -> int:
    """1 when host and GPU may use managed memory at the same time (pages migrate on demand)."""
    device = cp.cuda.Device().id
    return int(cp.cuda.runtime.deviceGetAttribute(_CONCURRENT_MANAGED_ACCESS, device))


def managed_array(cp: Any, elements: int) -> tuple[Any, np.ndarray, Any]:
    """(device view, host view, memory) of *elements* float32 in one managed allocation."""
    memory = cp.cuda.malloc_managed(elements * 4)
    on_gpu = cp.ndarray((elements,), cp.float32, memptr=memory)
    on_host = np.ctypeslib.as_array((ctypes.c_float * elements).from_address(memory.ptr))
    return on_gpu, on_host, memory


def prefetch(cp: Any, memory: Any, stream: Any) -> str:
    """Queue a prefetch of *memory* to this GPU on *stream*; return the call that worked."""
    errors = []
    try:
        memory.mem.prefetch(stream)  # CuPy's ManagedMemory: whichever signature it was built for
        return "cupy ManagedMemory.prefetch"
    except Exception as exc:  # noqa: BLE001 - try the next API, say all if none works
        errors.append(f"CuPy: {exc}")
    try:
        status, how = _prefetch_cuda_python(
            memory.ptr, memory.mem.size, cp.cuda.Device().id, stream
        )
        if int(status) == 0:
            return how
        errors.append(f"CUDA Python: {status}")
    except Exception as exc:  # noqa: BLE001 - not installed, or refused: say so below
        errors.append(f"CUDA Python: {exc}")
    raise RuntimeError("no prefetch call worked here: " + "; ".join(errors))


def _prefetch_cuda_python(ptr: int, size: int, device: int, stream: Any) -> tuple[Any, str]:
    """CUDA Python's ``cudaMemPrefetchAsync``: CUDA 13's (a location), else CUDA 12's (a device)."""
    from cuda.bindings import runtime as cudart

    try:
        location = cudart.cudaMemLocation()
        location.type = cudart.cudaMemLocationType.cudaMemLocationTypeDevice
        location.id = device
        (status,) = cudart.cudaMemPrefetchAsync(ptr, size, location, 0, stream.ptr)
        return status, "cuda.bindings cudaMemPrefetchAsync(location) (CUDA 13)"
    except (TypeError, AttributeError):  # bindings for CUDA 12: a device number
        (status,) = cudart.cudaMemPrefetchAsync(ptr, size, device, stream.ptr)
        return status, "cuda.bindings cudaMemPrefetchAsync(device) (CUDA 12)"


def _kernel_ms(cp: Any, array: Any, stream: Any) -> float:
    with stream, gpu_timer.span(cp, stream) as timed:
        array *= 2.0  # one element-wise kernel: reads and writes every page once
    ms = timed.seconds() * 1e3
    cp.cuda.Device().synchronize()  # without concurrent access the host must wait for all work
    return ms


def _median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def run_managed(cp: Any, elements: int, repeats: int = 3) -> dict[str, Any]:
    """The three cases (medians of *repeats*), each checked against NumPy."""
    stream = cp.cuda.Stream(non_blocking=True)
    plain = cp.ones(elements, cp.float32)
    _kernel_ms(cp, plain, stream)  # compiles the kernel
    floor, faults, prefetched_kernel, prefetch_ms = [], [], [], []
    on_gpu, on_host, memory = managed_array(cp, elements)
    how, correct = "not tried", True
    for _ in range(repeats):
        floor.append(_kernel_ms(cp, plain, stream))
        on_host[:] = 1.0  # the host writes every page: they now live in host memory
        faults.append(_kernel_ms(cp, on_gpu, stream))  # waits for the kernel's end event
        correct &= bool(np.all(on_host[::1024] == 2.0))  # one value of every page, on the host
        on_host[:] = 1.0
        try:
            with gpu_timer.span(cp, stream) as moved:
                how = prefetch(cp, memory, stream)
            prefetch_ms.append(moved.seconds() * 1e3)
        except RuntimeError as exc:
            how = str(exc)
            continue
        prefetched_kernel.append(_kernel_ms(cp, on_gpu, stream))
        correct &= bool(np.all(on_host[::1024] == 2.0))
    result = {
        "elements": elements,
        "bytes": elements * 4,
        "concurrent_managed_access": concurrent_managed_access(cp),
        "prefetch_call": how,
        "device_memory_ms": _median(floor),
        "managed_first_touch_ms": _median(faults),
        "prefetch_ms": _median(prefetch_ms),
        "managed_after_prefetch_ms": _median(prefetched_kernel),
        "correct": correct,
    }
    if result["prefetch_ms"] is not None:
        result["prefetch_and_kernel_ms"] = (
            result["prefetch_ms"] + result["managed_after_prefetch_ms"]
        )
    return result


def run(quick: bool = False) -> dict[str, Any]:
    """Managed memory on this GPU: 1 GiB of float32 (64 MiB with *quick*), at most 1/8 of it."""
    cp = hardware.require_cupy("the managed-memory benchmark")
    memory = hardware.gpu_memory_bytes() or 16 * 2**30
    nbytes = min(2**30, memory // 8) // (16 if quick else 1)
    return {"managed": run_managed(cp, nbytes // 4)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    record.add_gpu_bench_arguments(parser, "managed")


def main(args: argparse.Namespace) -> int:
    return record.run_gpu_bench(args, "managed", "The managed-memory benchmark", run, SOURCES)
