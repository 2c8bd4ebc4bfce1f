"""What one call of the public device API costs, against the bare kernel and ``torch.cdist``.

At n = 256 the kernel itself runs for a few microseconds; everything else in a
call is host work: checking the inputs, choosing the kernel, launching it. This
benchmark times back-to-back calls (wall clock, one synchronisation at the end,
as an application calling in a loop would see them) of

* ``numba_cuda.distance_matrix_device`` with CuPy arrays and with Numba device
  arrays, each with a reused ``out`` and with a fresh output per call;
* the same kernel launched directly with Numba (``kernel[grid, block](...)``),
  the floor for a Numba launch;
* ``torch.cdist`` on the same points, where PyTorch is installed (it returns
  distances, not squared distances: one square root more, the same bytes out).

The course's promise, checked in the result: at most 40 us per public call at
n = 256, and faster than ``torch.cdist`` at every size, in float32 and float64.
"""

from __future__ import annotations

import importlib.util
import time
from typing import Any

import numpy as np

from demos import shipped_results
from demos.benchmarks import record
from demos.distance import numba_cuda, reference

CALL_BUDGET_S = 40e-6  # per public call at n = 256
BUDGET_N = 256


WARM_UP_S = 2.0  # of calls before the first measurement: CPU and GPU clocks ramp up


def calls_for(n: int) -> int:
    """Calls per timed batch: enough for a stable mean, without minutes at n = 32,768."""
    return 1000 if n <= 1024 else 100 if n <= 4096 else 10


def warm_up(call: Any, synchronize: Any, seconds: float = WARM_UP_S) -> None:
    """Keep calling for *seconds*: a node that idled runs its first thousand calls slower."""
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        for _ in range(100):
            call()
        synchronize()


def torch_reason() -> str | None:
    """Why the torch.cdist comparison cannot run here, or None."""
    if importlib.util.find_spec("torch") is None:
        return "PyTorch is not installed"
    import torch

    if not torch.cuda.is_available():
        return "PyTorch has no CUDA device"
    return None


def run_overhead(sizes: list[int], dtypes: list[str], seed: int) -> dict[str, Any]:
    """Seconds per call of each variant at each (dtype, n); the ``results`` of the JSON."""
    import cupy as cp

    skip_torch = torch_reason()
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    for dtype in dtypes:
        for n in sizes:
            points = rng.random((n, 3)).astype(dtype)
            rows.append(measure_size(points, with_torch=skip_torch is None, warm=not rows))
            print(_line(rows[-1]), flush=True)
            cp.get_default_memory_pool().free_all_blocks()  # this size's arrays are gone
    return {"rows": rows, "torch_skipped": skip_torch, "verdict": verdict(rows)}


def measure_size(points: np.ndarray, *, with_torch: bool, warm: bool) -> dict[str, Any]:
    """All variants on one set of points (see the module docstring); *warm*: warm up first."""
    import cupy as cp
    from numba import cuda

    from demos.distance import cuda_launch, cuda_tuned

    n, dtype = points.shape[0], points.dtype
    sync = cp.cuda.Device().synchronize
    c_x, n_x = cp.asarray(points), cuda.to_device(points)
    c_out = cp.empty((n, n), dtype=dtype)
    n_out = cuda.device_array((n, n), dtype=dtype)
    plan = numba_cuda.plan_launch(c_x, out=c_out)
    spec = numba_cuda.SPECS[plan.kernel]
    kernel = spec.build(dtype, points.shape[1], plan.rows_per_thread or 1)
    target = cuda_tuned.wide_view(n_out, spec.lanes) if spec.lanes > 1 else n_out
    raw_args = (n_x, target) if spec.symmetric else (n_x, n_x, target)
    variants = {
        "public_cupy_out": lambda: numba_cuda.distance_matrix_device(c_x, out=c_out),
        "public_numba_out": lambda: numba_cuda.distance_matrix_device(n_x, out=n_out),
        "public_cupy_new_out": lambda: numba_cuda.distance_matrix_device(c_x),
        "public_numba_new_out": lambda: numba_cuda.distance_matrix_device(n_x),
        "raw_numba_launch": lambda: kernel[plan.grid, plan.block](*raw_args),
    }
    if with_torch:
        import torch

        t_x = torch.as_tensor(c_x, device="cuda")
        variants["torch_cdist"] = lambda: torch.cdist(t_x, t_x)
    if warm:
        for name in ("public_cupy_out", "public_numba_out"):
            warm_up(variants[name], sync, WARM_UP_S / 2)
    row: dict[str, Any] = {"dtype": str(dtype), "n": n, "kernel": plan.kernel}
    for name, call in variants.items():
        row[f"{name}_s"] = record.per_call_seconds(call, sync, calls_for(n))
    numba_cuda.distance_matrix_device(c_x, out=c_out)
    row["launch"] = cuda_launch.status()
    row["max_abs_error"] = _spot_error(c_out, points)
    return row


def _spot_error(d_out: Any, points: np.ndarray) -> float:
    """Largest error of 64 sampled rows of the last result against the reference."""
    rows = np.unique(np.linspace(0, len(points) - 1, 64).astype(int))
    got = d_out[rows].get().astype(np.float64)
    return float(np.max(np.abs(got - reference.reference_rows(points, rows))))


def _line(row: dict[str, Any]) -> str:
    times = " ".join(
        f"{k.removesuffix('_s')}={v * 1e6:.1f}us" for k, v in row.items() if k.endswith("_s")
    )
    return f"{row['dtype']} n={row['n']} ({row['kernel']}): {times}"


def verdict(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The two promises, checked: the call budget at n = 256, and beating torch.cdist."""
    small = [r for r in rows if r["n"] == BUDGET_N]
    worst_small = max(
        (r[k] for r in small for k in ("public_cupy_out_s", "public_numba_out_s")), default=None
    )
    compared = [r for r in rows if "torch_cdist_s" in r]
    slower = [
        f"{r['dtype']} n={r['n']}" for r in compared if r["public_cupy_out_s"] >= r["torch_cdist_s"]
    ]
    return {
        "budget_s": CALL_BUDGET_S,
        "worst_public_call_at_256_s": worst_small,
        "within_budget": None if worst_small is None else worst_small <= CALL_BUDGET_S,
        "faster_than_torch_everywhere": None if not compared else not slower,
        "slower_than_torch_at": slower,
    }


def markdown_table(result: dict[str, Any]) -> str:
    """The per-call table of BENCHMARKS.md from a ``distance_overhead.json`` payload."""
    columns = {
        "public_cupy_out_s": "device API, CuPy",
        "public_numba_out_s": "device API, Numba",
        "public_cupy_new_out_s": "CuPy, new output",
        "raw_numba_launch_s": "raw Numba launch",
        "torch_cdist_s": "torch.cdist",
    }
    rows = result["results"]["rows"]
    present = [key for key in columns if any(key in row for row in rows)]
    lines = [
        "| dtype | n | kernel | " + " | ".join(columns[k] for k in present) + " |",
        "| --- | --- | --- | " + " | ".join("---" for _ in present) + " |",
    ]
    for row in rows:
        cells = [_duration(row[k]) if k in row else "-" for k in present]
        lines.append(
            f"| {row['dtype']} | {row['n']} | {row['kernel']} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def _duration(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us" if seconds < 1e-3 else f"{seconds * 1e3:.2f} ms"


if __name__ == "__main__":  # python -m demos.benchmarks.distance_overhead RESULT.json
    import sys

    print(markdown_table(shipped_results.read_json(sys.argv[1])))
