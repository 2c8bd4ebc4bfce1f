"""``python -m demos bench multigpu``: scaling of the chapter 6 examples over GPUs.

Scenarios: ``matvec`` (10,000 x 300,000 float32 split by rows), ``reduce`` (sum
of 30 M and 750 M float32, plus the crossover curve over sizes and the automatic
device count), ``lorenz`` (DiffEqGPU's ensemble: 8,388,608 trajectories, 1,000
RK4 steps, float32) and ``baselines`` (diffrax under jax.vmap and torchdiffeq on
GPU 0 on the same problem). Times keep the inputs resident on the GPUs: this
measures the compute and the combine step, not PCIe. Without a GPU, small
NumPy / Numba-CPU versions run so the command and its JSON still work.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

from demos import hardware
from demos.benchmarks import sizes as bench_sizes
from demos.benchmarks.record import DEFAULT_OUTPUT_DIR, summarize, wall_times, write_result

SCENARIOS = ("matvec", "reduce", "lorenz", "baselines")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario", default=",".join(SCENARIOS), help=f"comma list of {', '.join(SCENARIOS)}"
    )
    parser.add_argument(
        "--gpus", default=None, help="comma list of GPU counts (default: 1,2,4 up to what exists)"
    )
    parser.add_argument(
        "--output", type=Path, default=DEFAULT_OUTPUT_DIR, help="directory for JSON and plots"
    )
    parser.add_argument("--name", default=None, help="file name stem (default multigpu_<host GPU>)")
    parser.add_argument("--lorenz-n", type=int, default=bench_sizes.LORENZ_TRAJECTORIES)
    parser.add_argument("--lorenz-steps", type=int, default=bench_sizes.LORENZ_STEPS)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-plot", action="store_true")


def _gpu_counts(spec: str | None, available: int) -> list[int]:
    if spec is None:
        return [g for g in (1, 2, 4, 8) if g <= available]
    counts = [int(g) for g in spec.split(",")]
    bad = [g for g in counts if g < 1 or g > available]
    if bad:
        raise SystemExit(f"--gpus {spec}: this machine has {available} GPU(s)")
    return counts


def _speedups(times: dict[str, float]) -> dict[str, float]:
    return {g: times["1"] / t for g, t in times.items()} if "1" in times else {}


def bench_matvec(counts: list[int], repeats: int) -> dict:
    from demos.multigpu.matvec import SplitMatVec

    n, m, out = (
        10_000,
        300_000,
        {"n": 10_000, "m": 300_000, "dtype": "float32", "times_s": {}, "error": {}},
    )
    for g in counts:
        mv = SplitMatVec.random(n, m, g)
        out["error"][str(g)] = mv.max_relative_error()
        runs = [mv.time_per_call(repeats=20) for _ in range(repeats)]
        out["times_s"][str(g)] = summarize(runs)["median_s"]
        out.setdefault("runs", {})[str(g)] = summarize(runs)
        del mv
        _free_all()
    out["speedup"] = _speedups(out["times_s"])
    return out


def bench_reduce(counts: list[int], repeats: int, sizes: list[int] | None = None) -> dict:
    from demos.multigpu.reduce import SplitSum, auto_device_count

    sizes = list(sizes or bench_sizes.MULTIGPU_REDUCE_SIZES)
    curve: dict[str, dict[str, float]] = {}
    eager: dict[str, dict[str, float]] = {}  # the same kernels, launched one by one from Python
    errors = {}
    graph_errors = {}
    for n in sizes:
        curve[str(n)], eager[str(n)] = {}, {}
        for g in counts:
            s = SplitSum.filled(n, g)
            exact = s.exact()
            errors[f"{n}/{g}"] = max(
                abs(s.run(use_graph) - exact) / exact for use_graph in (True, False)
            )
            if s.graph_error:
                graph_errors[f"{n}/{g}"] = s.graph_error
            curve[str(n)][str(g)] = min(s.time_per_call(repeats=20) for _ in range(repeats))
            eager[str(n)][str(g)] = min(
                s.time_per_call(repeats=20, use_graph=False) for _ in range(repeats)
            )
            del s
            _free_all()
    best = {n: min(c, key=c.get) for n, c in curve.items()}
    auto = {str(n): auto_device_count(n, available=max(counts)) for n in sizes}
    # the crossover: smallest size from which more than one GPU is fastest
    multi = [int(n) for n in curve if int(best[n]) > 1]
    return {
        "sizes": sizes,
        "times_s": curve,
        "speedup": {n: _speedups(c) for n, c in curve.items()},
        "fastest_gpu_count": best,
        "auto_gpu_count": auto,
        "auto_time_s": {
            n: curve[n][str(auto[n])] if str(auto[n]) in curve[n] else None for n in curve
        },
        "crossover_size": min(multi) if multi else None,
        "relative_error": errors,
        "times_s_eager": eager,
        "speedup_eager": {n: _speedups(c) for n, c in eager.items()},
        "graph_errors": graph_errors,
    }


def bench_lorenz(counts: list[int], n: int, steps: int, repeats: int) -> dict:
    from demos.multigpu import lorenz

    dt = 0.001
    u0, params = lorenz.ensemble_problem(n)
    check = slice(0, 2000)
    reference = lorenz.lorenz_numpy(u0[check], params[check], dt, steps)
    out = {
        "n": n,
        "steps": steps,
        "dt": dt,
        "dtype": "float32",
        "times_s": {},
        "max_abs_error_vs_numpy": {},
    }
    for g in counts:
        ens = lorenz.ResidentEnsemble(u0, params, g)
        ens.run(dt, steps)  # compile + warm-up on every device
        out["times_s"][str(g)] = min(ens.run(dt, steps) for _ in range(repeats))
        out["max_abs_error_vs_numpy"][str(g)] = float(np.abs(ens.result()[check] - reference).max())
        del ens
    out["speedup"] = _speedups(out["times_s"])
    return out


def bench_baselines(n: int, steps: int, numba_time: float | None) -> dict:
    from demos.multigpu import lorenz, lorenz_baselines

    dt = 0.001
    u0, params = lorenz.ensemble_problem(n)
    if numba_time is None:
        ens = lorenz.ResidentEnsemble(u0, params, 1)
        ens.run(dt, steps)
        numba_time = min(ens.run(dt, steps) for _ in range(3))
        del ens
    numba_end = lorenz.lorenz_gpu(u0[:100_000], params[:100_000], dt, steps)
    out = {"n": n, "steps": steps, "numba_cuda_s": numba_time}
    for name, fn in (
        ("diffrax_vmap", lorenz_baselines.diffrax_rk4),
        ("torchdiffeq", lorenz_baselines.torchdiffeq_rk4),
    ):
        try:
            seconds, end, method = fn(u0, params, dt, steps)
            out[name] = {
                "seconds": seconds,
                "method": method,
                "numba_speedup": seconds / numba_time,
                "max_abs_diff_vs_numba": float(np.abs(end[:100_000] - numba_end).max()),
            }
        except Exception as exc:  # record why a baseline did not run, keep the others
            out[name] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        print(f"  {name}: {out[name]}", flush=True)
    return out


def bench_cpu(repeats: int) -> dict:
    """No GPU: the NumPy / Numba-CPU versions at small sizes, one 'device'."""
    from demos.multigpu import lorenz
    from demos.multigpu.splitting import matvec_split, sum_split

    rng = np.random.default_rng(0)
    a, x, v = (
        rng.random((1000, 30_000), dtype=np.float32),
        rng.random(30_000, dtype=np.float32),
        rng.random(10_000_000, dtype=np.float32),
    )
    u0, p = lorenz.ensemble_problem(10_000)
    lorenz.lorenz_cpu(u0[:10], p[:10], 0.001, 10)  # compile
    timings = {}
    for name, fn in {
        "matvec_1000x30000_numpy": lambda: matvec_split(a, x, 1),
        "sum_10M_numpy": lambda: sum_split(v, 1),
        "lorenz_10000x1000_numba_cpu": lambda: lorenz.lorenz_cpu(u0, p, 0.001, 1000),
    }.items():
        timings[name] = summarize(wall_times(fn, repeats=repeats))
    return timings


def _free_all() -> None:
    import cupy as cp

    for dev in range(cp.cuda.runtime.getDeviceCount()):
        with cp.cuda.Device(dev):
            cp.get_default_memory_pool().free_all_blocks()


def main(args: argparse.Namespace) -> int:
    os.environ.setdefault(
        "XLA_PYTHON_CLIENT_PREALLOCATE", "false"
    )  # JAX must not grab 75% of every GPU
    scenarios = [s.strip() for s in args.scenario.split(",") if s.strip()]
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        raise SystemExit(
            f"unknown scenario(s) {sorted(unknown)}; choose from {', '.join(SCENARIOS)}"
        )
    available = hardware.gpu_count()
    results: dict = {"gpu_count": available}
    stem = args.name or (
        "multigpu_" + (hardware.gpus()[0].name.split()[-1].lower() if available else "cpu")
    )
    path = args.output / f"{stem}.json"
    if available == 0 or not hardware.cupy_available():
        print(
            f"No usable GPU ({hardware.cupy_status()[1]}): "
            "timing the NumPy / Numba-CPU versions at small sizes."
        )
        results["cpu"] = bench_cpu(args.repeats)
        counts: list[int] = []
    else:
        counts = _gpu_counts(args.gpus, available)
        print(
            f"{available} GPU(s): {hardware.gpus()[0].name}; timing on {counts} GPU(s)", flush=True
        )
        for name in scenarios:
            print(f"- {name}", flush=True)
            start = time.perf_counter()
            if name == "matvec":
                results[name] = bench_matvec(counts, args.repeats)
            elif name == "reduce":
                results[name] = bench_reduce(counts, args.repeats)
            elif name == "lorenz":
                results[name] = bench_lorenz(counts, args.lorenz_n, args.lorenz_steps, 3)
            elif name == "baselines":
                numba_time = results.get("lorenz", {}).get("times_s", {}).get("1")
                results[name] = bench_baselines(args.lorenz_n, args.lorenz_steps, numba_time)
            write_result(
                path,
                "multigpu",
                results,
                sources=["demos/multigpu"],
                scenarios=scenarios,
                gpu_counts=counts,
            )  # keep partial results
            print(
                f"  {name} done in {time.perf_counter() - start:.1f} s: "
                f"{ {k: v for k, v in results[name].items() if k in ('speedup', 'times_s')} }",
                flush=True,
            )
    path = write_result(
        path,
        "multigpu",
        results,
        sources=["demos/multigpu"],
        scenarios=scenarios,
        gpu_counts=counts,
    )
    print(f"wrote {path}")
    if not args.no_plot:
        from demos.multigpu.plots import plot
        from demos.shipped_results import read_json

        for figure in plot(read_json(path), args.output):
            print(f"wrote {figure}")
    return 0
