"""The squared Euclidean distance matrix, the running example of chapters 3 and 4.

D[i, j] = sum_k (x[i, k] - y[j, k])**2 for points x (n, d) and y (m, d), in the
input dtype (float32 or float64). One problem, many backends, one contract:

* every backend module offers ``distance_matrix(points, other=None)``: NumPy in,
  NumPy out;
* the GPU backends also offer ``distance_matrix_device(x, y=None, out=None)``:
  device arrays in, a device array out, asynchronous;
* bad input raises the same exception everywhere (:mod:`demos.validation`).

Modules: ``generic`` (NumPy or CuPy, chapter 3's formula), ``numpy_backend``,
``cupy_backend`` (the drop-in), ``cupy_lean`` (one buffer), ``chunked`` (larger
than GPU memory), ``numba_cpu``, ``numba_cuda`` (kernels from
``cuda_teaching`` and ``cuda_tuned``), and ``reference`` (what all are checked
against). :func:`backend` looks a backend up by the name the benchmark, the
tests and the notebooks use; :data:`BACKENDS` lists those names.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from demos import hardware

# kernels of demos.distance.numba_cuda that the benchmark times by default
CUDA_KERNELS = ("naive", "coalesced", "tiled", "symmetric", "rows", "pairs", "quads", "best")

# name -> (module, keyword arguments, needs: "cupy" | "cuda" | None)
_TABLE: dict[str, tuple[str, dict[str, Any], str | None]] = {
    "numpy": ("numpy_backend", {}, None),
    "numba-cpu": ("numba_cpu", {"parallel": False}, None),
    "numba-cpu-parallel": ("numba_cpu", {"parallel": True}, None),
    "chunked": ("chunked", {}, None),
    "cupy": ("cupy_backend", {}, "cupy"),
    "cupy-lean": ("cupy_lean", {}, "cupy"),
    **{f"numba-cuda-{k}": ("numba_cuda", {"kernel": k}, "cuda") for k in CUDA_KERNELS},
}
BACKENDS = tuple(_TABLE)


@dataclass(frozen=True)
class Backend:
    """One backend under its benchmark name: the host function and, on GPUs, the device one."""

    name: str
    host: Callable[..., Any]  # distance_matrix(points, other=None) -> NumPy array
    device: Callable[..., Any] | None  # distance_matrix_device(x, y=None, out=None) or None
    needs: str | None  # "cupy", "cuda" (a GPU or the simulator) or None

    def unavailable(self) -> str | None:
        """Why this backend cannot run on this machine, or None when it can."""
        if self.needs == "cupy" and not hardware.cupy_available():
            return f"{self.name} needs CuPy with a GPU: {hardware.cupy_status()[1]}"
        if self.needs == "cuda" and not (hardware.has_gpu() or hardware.simulator_enabled()):
            return f"{self.name} needs a CUDA GPU or the simulator: {hardware.no_gpu_reason()}"
        return None


@functools.cache
def backend(name: str) -> Backend:
    """The :class:`Backend` called *name* (one of :data:`BACKENDS`); ``ValueError`` if unknown."""
    if name not in _TABLE:
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    module_name, keywords, needs = _TABLE[name]
    module = importlib.import_module(f"demos.distance.{module_name}")
    device = getattr(module, "distance_matrix_device", None)
    if keywords:
        host = functools.partial(module.distance_matrix, **keywords)
        if device is not None:
            device = functools.partial(device, **keywords)
    else:
        host = module.distance_matrix
    return Backend(name, host, device, needs)
