"""Launching a compiled Numba kernel straight from the arrays' addresses, on a real GPU.

``kernel[grid, block](x, y, out)`` costs tens of microseconds before the GPU
sees anything: Numba types every argument (for a CuPy array that means building
a Numba view of it through ``__cuda_array_interface__``), looks up the compiled
overload and converts each array into its launch parameters. For an n = 256
distance matrix that is most of the call. The parameters of an array are
simple, though: two null pointers, the element count and size, the data
address, the shape and the strides. So the first call of a shape goes through
Numba (which compiles the kernel) and remembers the compiled function; later
calls pass the parameters straight to ``cuda.core.launch``.

Everything here is an optimisation of *how* the chosen kernel is launched,
never of *which* one: where the direct launch is unavailable (the simulator,
another numba-cuda release) :func:`launch` returns False and the caller launches
through Numba, and :func:`status` says why.
"""

from __future__ import annotations

from typing import Any

from demos import hardware
from demos.distance.cuda_tuned import Layout, layout_of

_COMPILED: dict[tuple, Any] = {}  # (kernel, argument kinds, device) -> cuda.core kernel
_STATE: dict[str, Any] = {
    "reason": None,
    "stream": None,
    "config_type": None,
    "launch": None,
    "several_gpus": None,  # compiled code belongs to one GPU: key by device where that matters
}


def status() -> str:
    """'direct' when launches bypass Numba's argument handling, else the reason they do not."""
    if hardware.simulator_enabled():
        return "through Numba: the CUDA simulator runs kernels in Python"
    return _STATE["reason"] or "direct"


def _kind(layout: Layout) -> tuple:
    """What decides an array's Numba type: dtype and contiguity (C, F or neither)."""
    shape, strides, itemsize = layout.shape, layout.strides, layout.dtype.itemsize
    c_order = strides == (shape[1] * itemsize, itemsize) or shape[0] == 1
    f_order = strides == (itemsize, shape[0] * itemsize) or shape[1] == 1
    return layout.dtype.str, c_order, f_order


def _parameters(layout: Layout) -> list[int]:
    """Numba's launch parameters of one array argument (see the module docstring)."""
    n, m = layout.shape
    return [0, 0, n * m, layout.dtype.itemsize, layout.pointer, n, m, *layout.strides]


def _runtime() -> bool:
    """Import cuda.core's launch once; False (with the reason kept) where it is missing."""
    if _STATE["launch"] is not None:
        return True
    if _STATE["reason"] is not None:
        return False
    try:
        from cuda.core import LaunchConfig
        from cuda.core import launch as core_launch
        from numba.cuda.cudadrv import driver

        _STATE["stream"] = driver._to_core_stream(0)  # the default stream, as Numba launches
        _STATE["several_gpus"] = hardware.gpu_count() > 1
        _STATE["config_type"] = LaunchConfig
        _STATE["launch"] = core_launch
    except Exception as exc:  # noqa: BLE001 - any failure: launch through Numba, say why
        _STATE["reason"] = f"through Numba: direct launch unavailable ({type(exc).__name__}: {exc})"
        return False
    return True


def launch(dispatcher: Any, plan: Any, arrays: tuple, out_layout: Layout, lanes: int) -> bool:
    """Launch *dispatcher* on *arrays* (the last one the output) directly; False if it cannot.

    *out_layout* is the output as the kernel sees it (widened for pairs/quads).
    The first call of a kind of arguments launches through Numba (compiling the
    kernel) and keeps the compiled function; later calls launch it directly.
    """
    if hardware.simulator_enabled() or not _runtime():
        return False
    layouts = [layout_of(a) for a in arrays[:-1]] + [out_layout]
    key = (id(dispatcher), plan.grid, plan.block, tuple(_kind(lay) for lay in layouts))
    if _STATE["several_gpus"]:  # one lookup more, only where another GPU could be current
        from numba import cuda

        key += (cuda.get_current_device().id,)
    entry = _COMPILED.get(key)
    if entry is None:
        _remember_after_numba_launch(dispatcher, plan, arrays, lanes, key)
        return True
    kernel, config = entry
    parameters: list[int] = []
    for layout in layouts:
        parameters.extend(_parameters(layout))
    _STATE["launch"](_STATE["stream"], config, kernel, *parameters)
    return True


def _remember_after_numba_launch(dispatcher, plan, arrays, lanes, key) -> None:
    """Launch through Numba (compiling if needed), then keep the compiled function for *key*."""
    from demos.distance.cuda_tuned import wide_view

    args = list(arrays)
    if lanes > 1:
        args[-1] = wide_view(args[-1], lanes)
    dispatcher[plan.grid, plan.block](*args)
    try:
        argtypes = tuple(dispatcher.typeof_pyval(a) for a in args)
        compiled = dispatcher.overloads[argtypes]
        kernel = compiled._codelibrary.get_cufunc().kernel
        config = _STATE["config_type"](grid=plan.grid, block=plan.block, shmem_size=0)
    except Exception as exc:  # noqa: BLE001 - keep launching through Numba, say why
        _STATE["reason"] = f"through Numba: compiled kernel not reachable ({type(exc).__name__})"
        _STATE["launch"] = None
        return
    _COMPILED[key] = (kernel, config)
