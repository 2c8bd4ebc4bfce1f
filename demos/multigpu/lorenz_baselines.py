"""The same Lorenz ensemble with general-purpose ODE libraries, for comparison.

diffrax (JAX, ``jax.vmap`` over trajectories) and torchdiffeq (PyTorch, one
batched state tensor) both run classic RK4 at dt = 0.001 on the GPU. They pay
for generality: every step is a sequence of array-wide kernels that read and
write the whole ensemble state in GPU memory, whereas the Numba kernel keeps
each trajectory in registers for all 1,000 steps. Used by the benchmark only;
each function returns (seconds, end states) and raises ImportError when its
library is missing.
"""

from __future__ import annotations

import time

import numpy as np


def diffrax_rk4(
    u0: np.ndarray, params: np.ndarray, dt: float, steps: int
) -> tuple[float, np.ndarray, str]:
    import diffrax
    import jax
    import jax.numpy as jnp

    def field(t, u, p):
        x, y, z = u[0], u[1], u[2]
        return jnp.stack([p[0] * (y - x), x * (p[1] - z) - y, x * y - p[2] * z])

    try:  # classic RK4 as an explicit Runge-Kutta tableau

        class RK4(diffrax.AbstractERK):
            tableau = diffrax.ButcherTableau(
                c=np.array([0.5, 0.5, 1.0]),
                b_sol=np.array([1 / 6, 1 / 3, 1 / 3, 1 / 6]),
                b_error=np.zeros(4),
                a_lower=(np.array([0.5]), np.array([0.0, 0.5]), np.array([0.0, 0.0, 1.0])),
            )
            interpolation_cls = diffrax.ThirdOrderHermitePolynomialInterpolation.from_k

            def order(self, terms):
                return 4

        solver, name = RK4(), "RK4 (custom ButcherTableau)"
    except Exception:  # an API change: fall back to a fixed-step built-in
        solver, name = diffrax.Tsit5(), "Tsit5 (RK4 tableau unavailable)"

    term = diffrax.ODETerm(field)

    def one(u, p):
        sol = diffrax.diffeqsolve(
            term,
            solver,
            t0=0.0,
            t1=dt * steps,
            dt0=dt,
            y0=u,
            args=p,
            saveat=diffrax.SaveAt(t1=True),
            max_steps=steps + 1,
        )
        return sol.ys[-1]

    solve = jax.jit(jax.vmap(one))
    u, p = jnp.asarray(u0), jnp.asarray(params)
    try:
        solve(u[:2], p[:2]).block_until_ready()  # compile a small shape first...
    except Exception as exc:  # the hand-made RK4 tableau rejected by this diffrax version
        solver, name = (
            diffrax.Tsit5(),
            f"Tsit5 fixed step (RK4 tableau failed: {type(exc).__name__})",
        )
        solve = jax.jit(jax.vmap(one))
        solve(u[:2], p[:2]).block_until_ready()
    solve(u, p).block_until_ready()  # ...and the real one (compile excluded from timing)
    start = time.perf_counter()
    out = solve(u, p).block_until_ready()
    return time.perf_counter() - start, np.asarray(out), name


def torchdiffeq_rk4(
    u0: np.ndarray, params: np.ndarray, dt: float, steps: int
) -> tuple[float, np.ndarray, str]:
    import torch
    from torchdiffeq import odeint

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    s, r, b = (torch.as_tensor(params[:, k], device=dev) for k in range(3))

    def field(t, u):
        x, y, z = u[:, 0], u[:, 1], u[:, 2]
        return torch.stack([s * (y - x), x * (r - z) - y, x * y - b * z], dim=1)

    u = torch.as_tensor(u0, device=dev)
    t = torch.tensor([0.0, dt * steps], device=dev, dtype=u.dtype)
    with torch.no_grad():
        odeint(field, u, t, method="rk4", options={"step_size": dt})
        torch.cuda.synchronize()
        start = time.perf_counter()
        out = odeint(field, u, t, method="rk4", options={"step_size": dt})[-1]
        torch.cuda.synchronize()
    return time.perf_counter() - start, out.cpu().numpy(), "rk4 (torchdiffeq fixed step)"
