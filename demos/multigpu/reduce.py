"""Summing a large vector on several GPUs, and when not to.

Each GPU sums its resident chunk into a preallocated scalar, the partial sums
are copied to GPU 0 and added. Every extra GPU costs a launch and a sync (a few
microseconds), so for small vectors one GPU wins; :func:`auto_device_count`
picks the count from the work size with a crossover measured by the benchmark.
"""

from __future__ import annotations

import time

import numpy as np

from demos import hardware
from demos.multigpu.splitting import device_count_for, split_ranges, sum_split

# Elements per GPU below which adding a GPU does not pay. Measured on 4x H200
# (demos/results/multigpu_h200.json): 2 GPUs first win at 300 M elements (150 M
# each), 4 GPUs at 750 M (187 M each); at 30 M one GPU takes 41 us, four 330 us.
DEFAULT_CROSSOVER = 150_000_000


def auto_device_count(n: int, available: int | None = None, crossover: int = DEFAULT_CROSSOVER) -> int:
    available = hardware.gpu_count() if available is None else available
    return device_count_for(n, max(available, 1), crossover)


class SplitSum:
    """Resident chunks of a vector on ``n_gpus`` devices; :meth:`run` returns the sum."""

    def __init__(self, vector: np.ndarray, n_gpus: int):
        cp = hardware.require_cupy("the multi-GPU sum")
        if n_gpus < 1 or n_gpus > cp.cuda.runtime.getDeviceCount():
            raise ValueError(f"n_gpus={n_gpus}, but {cp.cuda.runtime.getDeviceCount()} GPU(s) exist")
        if vector.ndim != 1:
            raise ValueError(f"expected a 1-D vector, got shape {vector.shape}")
        self.cp = cp
        self.chunks, self.partials = [], []
        for dev, part in enumerate(split_ranges(vector.shape[0], n_gpus)):
            with cp.cuda.Device(dev):
                self.chunks.append(cp.asarray(vector[part]))
                self.partials.append(cp.empty((), dtype=vector.dtype))
        with cp.cuda.Device(0):
            self.gathered = cp.empty(n_gpus, dtype=vector.dtype)
            self.total = cp.empty((), dtype=vector.dtype)
        self._make_events()
        self.synchronize()

    @classmethod
    def filled(cls, n: int, n_gpus: int, seed: int = 0):
        """Generate the data on the GPUs directly (a 3 GB vector need not cross PCIe)."""
        self = cls.__new__(cls)
        cp = hardware.require_cupy("the multi-GPU sum")
        self.cp, self.chunks, self.partials = cp, [], []
        for dev, part in enumerate(split_ranges(n, n_gpus)):
            with cp.cuda.Device(dev):
                rng = cp.random.default_rng(seed + dev)
                self.chunks.append(rng.random(part.stop - part.start, dtype=cp.float32))
                self.partials.append(cp.empty((), dtype=cp.float32))
        with cp.cuda.Device(0):
            self.gathered = cp.empty(n_gpus, dtype=cp.float32)
            self.total = cp.empty((), dtype=cp.float32)
        self._make_events()
        self.synchronize()
        return self

    def _make_events(self) -> None:
        # an event belongs to the device current when it is created: one per device, made once
        self.events = []
        for dev in range(len(self.chunks)):
            with self.cp.cuda.Device(dev):
                self.events.append(self.cp.cuda.Event(disable_timing=True))

    def launch(self) -> None:
        """Queue the partial sums, the gathering copies and the final add; returns at once."""
        cp = self.cp
        if len(self.chunks) == 1:  # one GPU: no partials, no gathering
            with cp.cuda.Device(0):
                cp.sum(self.chunks[0], out=self.total)
            return
        for dev, (chunk, partial) in enumerate(zip(self.chunks, self.partials)):
            with cp.cuda.Device(dev):
                cp.sum(chunk, out=partial)
                self.gathered[dev : dev + 1].data.copy_from_device_async(partial.data, partial.nbytes)
                self.events[dev].record()
        with cp.cuda.Device(0):
            stream = cp.cuda.get_current_stream()
            for event in self.events[1:]:  # device 0 waits for the other devices' copies
                stream.wait_event(event)
            cp.sum(self.gathered, out=self.total)

    def synchronize(self) -> None:
        for dev in range(len(self.chunks)):
            self.cp.cuda.Device(dev).synchronize()

    def run(self) -> float:
        self.launch()
        self.synchronize()
        return float(self.total.get())

    def exact(self) -> float:
        """The float64 sum of the resident data, for checking."""
        total = 0.0
        for dev, chunk in enumerate(self.chunks):
            with self.cp.cuda.Device(dev):
                total += float(chunk.sum(dtype=self.cp.float64).get())
        return total

    def time_per_call(self, repeats: int = 50) -> float:
        self.run()
        start = time.perf_counter()
        for _ in range(repeats):
            self.launch()
        self.synchronize()
        return (time.perf_counter() - start) / repeats


def split_sum(vector: np.ndarray, n_devices: int | None = None) -> float:
    """Sum of *vector* on the auto-chosen (or given) number of GPUs; NumPy partial sums without."""
    n_devices = auto_device_count(vector.shape[0]) if n_devices is None else n_devices
    if not hardware.cupy_available():
        return float(sum_split(vector, n_devices))
    return SplitSum(vector, n_devices).run()
