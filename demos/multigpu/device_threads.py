"""Several GPUs in one process: device contexts, one host thread per device.

Every CuPy array belongs to the device that was current when it was made
(``with cupy.cuda.Device(i):``). One host thread per device keeps each device's
launches independent. Managed (unified) memory can instead hold one array whose
outermost index is the GPU number: each GPU works on its own row ``a[i]``, the
driver migrates pages on demand, and we synchronise every device at the end.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from demos import hardware
from demos.multigpu.splitting import split_ranges


def threaded_add(a: np.ndarray, b: np.ndarray, n_devices: int | None = None) -> np.ndarray:
    """``a + b`` split into one chunk per device, one host thread per device.

    Without a GPU the chunks are NumPy slices handled by the same threads, which
    shows the structure (the threads only pay off with real devices).
    """
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"need two 1-D arrays of one shape, got {a.shape} and {b.shape}")
    gpu = hardware.cupy_available()
    n_devices = n_devices or (hardware.gpu_count() if gpu else 2)
    parts = split_ranges(a.shape[0], n_devices)
    out = np.empty_like(a)

    def work(dev: int) -> None:
        s = parts[dev]
        if gpu:
            import cupy as cp

            with cp.cuda.Device(dev):  # every allocation below lives on GPU `dev`
                out[s] = (cp.asarray(a[s]) + cp.asarray(b[s])).get()
        else:
            np.add(a[s], b[s], out=out[s])

    with ThreadPoolExecutor(max_workers=n_devices) as pool:
        list(pool.map(work, range(n_devices)))
    return out


def managed_add(
    per_device: int, n_devices: int | None = None, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Element-wise add in managed memory shaped ``(n_devices, per_device)``.

    Returns (result, NumPy reference). Refuses to allocate more managed memory
    than the smallest GPU has free, since oversubscription thrashes pages.
    """
    cp = hardware.require_cupy("the managed-memory example")
    n_devices = n_devices or cp.cuda.runtime.getDeviceCount()
    need = 3 * n_devices * per_device * 4
    free = min(_free_bytes(cp, d) for d in range(n_devices))
    if need > 0.5 * free:
        raise MemoryError(
            f"managed arrays need {need / 2**30:.1f} GiB, GPUs have {free / 2**30:.1f} GiB free"
        )
    previous = cp.cuda.get_allocator()
    cp.cuda.set_allocator(cp.cuda.MemoryPool(cp.cuda.malloc_managed).malloc)
    try:
        rng = np.random.default_rng(seed)
        a_host = rng.random((n_devices, per_device), dtype=np.float32)
        b_host = rng.random((n_devices, per_device), dtype=np.float32)
        a, b = cp.asarray(a_host), cp.asarray(b_host)
        c = cp.empty_like(a)
        for dev in range(n_devices):  # GPU `dev` touches only row `dev`
            with cp.cuda.Device(dev):
                cp.add(a[dev], b[dev], out=c[dev])
        for dev in range(n_devices):
            cp.cuda.Device(dev).synchronize()
        return c.get(), a_host + b_host
    finally:
        cp.cuda.set_allocator(previous)


def _free_bytes(cp, dev: int) -> int:
    with cp.cuda.Device(dev):
        return cp.cuda.runtime.memGetInfo()[0]
