"""A large mat-vec split over GPUs by rows.

``y = A @ x`` with A of 10,000 x 300,000 float32 (12 GB). Each GPU holds one
slab of rows of A and its own copy of x, computes its part of y, and the parts
are gathered on GPU 0. The inputs stay resident and the outputs are allocated
once, so a timed call is only: launch a GEMV on every device (asynchronous),
copy the small result slices to GPU 0, synchronise every device.
Without a GPU the same split runs in NumPy (:func:`demos.multigpu.splitting.matvec_split`).
"""

from __future__ import annotations

import numpy as np

from demos import hardware
from demos.benchmarks.record import per_call_seconds
from demos.multigpu.splitting import matvec_split, split_ranges


class SplitMatVec:
    """Resident slabs of A and copies of x on ``n_gpus`` devices; call :meth:`run`."""

    def __init__(self, matrix: np.ndarray, vector: np.ndarray, n_gpus: int):
        cp = hardware.require_cupy("the multi-GPU mat-vec")
        if n_gpus < 1 or n_gpus > cp.cuda.runtime.getDeviceCount():
            raise ValueError(
                f"n_gpus={n_gpus}, but {cp.cuda.runtime.getDeviceCount()} GPU(s) exist"
            )
        if matrix.ndim != 2 or vector.shape != (matrix.shape[1],):
            raise ValueError(f"shapes do not fit a mat-vec: {matrix.shape} @ {vector.shape}")
        self.cp = cp
        self.slices = split_ranges(matrix.shape[0], n_gpus)
        self.slabs, self.vectors, self.parts = [], [], []
        for dev, rows in enumerate(self.slices):
            with cp.cuda.Device(dev):
                self.slabs.append(cp.asarray(matrix[rows]))
                self.vectors.append(cp.asarray(vector))
                self.parts.append(cp.empty(rows.stop - rows.start, dtype=matrix.dtype))
        with cp.cuda.Device(0):
            self.result = cp.empty(matrix.shape[0], dtype=matrix.dtype)
        self.synchronize()

    @classmethod
    def random(cls, n: int, m: int, n_gpus: int, seed: int = 0) -> SplitMatVec:
        """Generate each slab on its own GPU (12 GB need not be made on the host and copied)."""
        self = cls.__new__(cls)
        cp = hardware.require_cupy("the multi-GPU mat-vec")
        self.cp, self.slices = cp, split_ranges(n, n_gpus)
        self.slabs, self.vectors, self.parts = [], [], []
        x = np.random.default_rng(seed).random(m, dtype=np.float32)
        for dev, rows in enumerate(self.slices):
            with cp.cuda.Device(dev):
                rng = cp.random.default_rng(seed + 1 + dev)
                self.slabs.append(rng.random((rows.stop - rows.start, m), dtype=cp.float32))
                self.vectors.append(cp.asarray(x))
                self.parts.append(cp.empty(rows.stop - rows.start, dtype=cp.float32))
        with cp.cuda.Device(0):
            self.result = cp.empty(n, dtype=cp.float32)
        self.synchronize()
        return self

    def max_relative_error(self) -> float:
        """Largest error of :meth:`run` against a float64 GEMV of each slab on its device."""
        cp, y, worst = self.cp, self.run().get(), 0.0
        for dev, (rows, slab, x) in enumerate(zip(self.slices, self.slabs, self.vectors)):
            with cp.cuda.Device(dev):
                exact = (slab.astype(cp.float64) @ x.astype(cp.float64)).get()
            worst = max(worst, float(np.max(np.abs(y[rows] - exact) / np.abs(exact))))
        return worst

    def launch(self) -> None:
        """Queue the GEMVs and the gathering copies on every device; returns at once."""
        cp = self.cp
        for dev, (slab, x, part) in enumerate(zip(self.slabs, self.vectors, self.parts)):
            with cp.cuda.Device(dev):
                cp.matmul(slab, x, out=part)
        # the combine step: small peer copies into device 0's result
        for dev, (rows, part) in enumerate(zip(self.slices, self.parts)):
            with cp.cuda.Device(dev):
                self.result[rows].data.copy_from_device_async(part.data, part.nbytes)

    def synchronize(self) -> None:
        for dev in range(len(self.slabs)):
            self.cp.cuda.Device(dev).synchronize()

    def run(self):
        """``A @ x`` as a CuPy array on GPU 0."""
        self.launch()
        self.synchronize()
        return self.result

    def time_per_call(self, repeats: int = 50) -> float:
        """Seconds per mat-vec: *repeats* calls queued back to back, then one sync of all GPUs."""
        self.run()  # warm-up (cuBLAS handles, kernels)
        return per_call_seconds(self.launch, self.synchronize, repeats, batches=1)


def matvec(matrix: np.ndarray, vector: np.ndarray, n_devices: int = 1) -> np.ndarray:
    """``matrix @ vector`` split over *n_devices* GPUs, or NumPy slabs without a GPU."""
    if not hardware.cupy_available():
        return matvec_split(matrix, vector, n_devices)
    return SplitMatVec(matrix, vector, n_devices).run().get()
