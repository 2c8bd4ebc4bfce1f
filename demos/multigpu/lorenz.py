"""A parameter sweep: an ensemble of Lorenz systems, one GPU thread per trajectory.

Every trajectory has its own (sigma, rho, beta) and is integrated with classic
RK4 at a fixed step, so the work is embarrassingly parallel: one CUDA thread
integrates one trajectory entirely in registers and writes only its end state.
Batches of trajectories are spread over GPUs, one host thread per GPU. On a CPU
the same step function runs under ``numba.njit(parallel=True)``, and the
kernel runs in the CUDA simulator for tiny ensembles; a NumPy RK4 (float64)
is the reference. The benchmark problem is DiffEqGPU.jl's: u0 = (1, 0, 0),
p = rand(3) .* (10, 28, 8/3), t in [0, 1], dt = 0.001, float32.
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import cuda

from demos import hardware
from demos.multigpu.splitting import split_ranges

PARAMETER_SCALE = np.array([10.0, 28.0, 8.0 / 3.0])


def ensemble_problem(n: int, seed: int = 0, dtype=np.float32) -> tuple[np.ndarray, np.ndarray]:
    """(u0 of shape (n, 3), params of shape (n, 3) = sigma, rho, beta) for the sweep."""
    if n < 1:
        raise ValueError(f"need at least one trajectory, got {n}")
    rng = np.random.default_rng(seed)
    params = (rng.random((n, 3)) * PARAMETER_SCALE).astype(dtype)
    u0 = np.zeros((n, 3), dtype=dtype)
    u0[:, 0] = 1
    return u0, params


def _rk4_steps(x, y, z, s, r, b, dt, half, sixth, steps):
    """*steps* RK4 steps of the Lorenz system; all arithmetic stays in the inputs' type."""
    for _ in range(steps):
        k1x = s * (y - x)
        k1y = x * (r - z) - y
        k1z = x * y - b * z
        x2, y2, z2 = x + half * k1x, y + half * k1y, z + half * k1z
        k2x = s * (y2 - x2)
        k2y = x2 * (r - z2) - y2
        k2z = x2 * y2 - b * z2
        x3, y3, z3 = x + half * k2x, y + half * k2y, z + half * k2z
        k3x = s * (y3 - x3)
        k3y = x3 * (r - z3) - y3
        k3z = x3 * y3 - b * z3
        x4, y4, z4 = x + dt * k3x, y + dt * k3y, z + dt * k3z
        k4x = s * (y4 - x4)
        k4y = x4 * (r - z4) - y4
        k4z = x4 * y4 - b * z4
        x = x + sixth * (k1x + k2x + k2x + k3x + k3x + k4x)
        y = y + sixth * (k1y + k2y + k2y + k3y + k3y + k4y)
        z = z + sixth * (k1z + k2z + k2z + k3z + k3z + k4z)
    return x, y, z


_cpu_steps = numba.njit(cache=False)(_rk4_steps)
_gpu_steps = cuda.jit(device=True)(_rk4_steps)


@cuda.jit
def lorenz_kernel(state, params, dt, half, sixth, steps):
    """One thread per trajectory.

    *state* (x, y, z) and *params* (sigma, rho, beta) are (3, n) arrays: each row
    holds one variable of every trajectory, so neighbouring threads read
    neighbouring addresses (coalesced), and a launch passes two arrays, not six
    (Numba's launch cost grows with the number of arguments).
    """
    i = cuda.grid(1)
    if i < state.shape[1]:
        state[0, i], state[1, i], state[2, i] = _gpu_steps(
            state[0, i],
            state[1, i],
            state[2, i],
            params[0, i],
            params[1, i],
            params[2, i],
            dt,
            half,
            sixth,
            steps,
        )


@numba.njit(parallel=True)
def _lorenz_cpu(u, p, dt, half, sixth, steps):
    for i in numba.prange(u.shape[0]):
        u[i, 0], u[i, 1], u[i, 2] = _cpu_steps(
            u[i, 0], u[i, 1], u[i, 2], p[i, 0], p[i, 1], p[i, 2], dt, half, sixth, steps
        )


def _step_constants(dt: float, dtype) -> tuple:
    return dtype.type(dt), dtype.type(dt / 2), dtype.type(dt / 6)


def _check(u0: np.ndarray, params: np.ndarray, steps: int) -> None:
    if u0.ndim != 2 or u0.shape[1] != 3 or params.shape != u0.shape:
        raise ValueError(f"u0 and params must both be (n, 3), got {u0.shape} and {params.shape}")
    if u0.dtype != params.dtype or u0.dtype not in (np.float32, np.float64):
        raise TypeError(
            f"u0 and params must share a float32/float64 dtype, got {u0.dtype}, {params.dtype}"
        )
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")


def lorenz_numpy(u0: np.ndarray, params: np.ndarray, dt: float, steps: int) -> np.ndarray:
    """Reference: the whole ensemble as NumPy vectors, in float64."""
    u = u0.astype(np.float64).T.copy()
    s, r, b = params.astype(np.float64).T

    def f(v):
        return np.stack([s * (v[1] - v[0]), v[0] * (r - v[2]) - v[1], v[0] * v[1] - b * v[2]])

    for _ in range(steps):
        k1 = f(u)
        k2 = f(u + dt / 2 * k1)
        k3 = f(u + dt / 2 * k2)
        k4 = f(u + dt * k3)
        u = u + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return u.T


def lorenz_cpu(u0: np.ndarray, params: np.ndarray, dt: float, steps: int) -> np.ndarray:
    """Numba on all CPU cores, same step function as the kernel."""
    _check(u0, params, steps)
    u = u0.copy()
    _lorenz_cpu(u, params, *_step_constants(dt, u.dtype), steps)
    return u


def _launch(state, params, constants: tuple, steps: int, threads: int = 256) -> None:
    blocks = (state.shape[1] + threads - 1) // threads
    lorenz_kernel[blocks, threads](state, params, *constants, steps)


def _to_device_soa(a: np.ndarray):
    """(rows, 3) host array -> (3, rows) device array (structure of arrays)."""
    return cuda.to_device(np.ascontiguousarray(a.T))


def lorenz_gpu(
    u0: np.ndarray, params: np.ndarray, dt: float, steps: int, n_gpus: int = 1
) -> np.ndarray:
    """The kernel on *n_gpus* GPUs (one host thread per GPU), or the simulator.

    In the simulator every CUDA thread is a Python thread: keep n to a few hundred.
    """
    _check(u0, params, steps)
    if not hardware.simulator_enabled():
        hardware.require_gpu("the Lorenz ensemble kernel")
    if hardware.simulator_enabled() and n_gpus != 1:
        raise ValueError("the CUDA simulator has one device; use n_gpus=1")
    out = np.empty_like(u0)

    def batch(dev: int, rows: slice) -> None:
        with cuda.gpus[dev] if not hardware.simulator_enabled() else contextlib.nullcontext():
            state, p = _to_device_soa(u0[rows]), _to_device_soa(params[rows])
            _launch(state, p, _step_constants(dt, u0.dtype), steps)
            out[rows] = state.copy_to_host().T

    if not hardware.simulator_enabled():
        # Numba builds its list of devices on first use, and that is not
        # thread-safe: build it here, before the per-GPU threads touch it.
        len(cuda.gpus)
    with ThreadPoolExecutor(max_workers=n_gpus) as pool:
        for f in [
            pool.submit(batch, d, s) for d, s in enumerate(split_ranges(u0.shape[0], n_gpus))
        ]:
            f.result()
    return out


class ResidentEnsemble:
    """Batches resident on *n_gpus* GPUs, for timing the integration itself."""

    def __init__(self, u0: np.ndarray, params: np.ndarray, n_gpus: int):
        _check(u0, params, 0)
        hardware.require_gpu("the Lorenz ensemble benchmark")
        self.u0, self.params = u0, params
        self.parts = split_ranges(u0.shape[0], n_gpus)
        self.arrays = []  # (state, params) per GPU
        for dev, rows in enumerate(self.parts):
            with cuda.gpus[dev]:
                self.arrays.append((_to_device_soa(u0[rows]), _to_device_soa(params[rows])))

    def reset(self) -> None:
        for dev, (rows, arrays) in enumerate(zip(self.parts, self.arrays)):
            with cuda.gpus[dev]:
                arrays[0].copy_to_device(np.ascontiguousarray(self.u0[rows].T))
                cuda.synchronize()

    def run(self, dt: float, steps: int) -> float:
        """Launch on every GPU, wait for all; seconds taken."""
        self.reset()
        constants = _step_constants(dt, self.u0.dtype)
        start = time.perf_counter()
        for dev, (state, params) in enumerate(self.arrays):
            with cuda.gpus[dev]:
                _launch(state, params, constants, steps)
        for dev in range(len(self.arrays)):
            with cuda.gpus[dev]:
                cuda.synchronize()
        return time.perf_counter() - start

    def result(self) -> np.ndarray:
        out = np.empty_like(self.u0)
        for dev, (rows, arrays) in enumerate(zip(self.parts, self.arrays)):
            with cuda.gpus[dev]:
                out[rows] = arrays[0].copy_to_host().T
        return out
