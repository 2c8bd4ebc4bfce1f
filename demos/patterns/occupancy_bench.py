"""``python -m demos bench occupancy``: what the course's kernels need of a multiprocessor, and
what fewer resident blocks cost a memory-bound kernel.

Two parts, both on one GPU:

* **kernels**: chapter 4b's kernels compiled here (the tiled matrix multiply
  with two tile sizes, the naive one, the histogram, the sum with 1 and 8 loads
  per iteration), each with its registers per thread and shared memory per block
  as Numba reports them, the blocks per multiprocessor the course's model
  (:mod:`demos.patterns.occupancy`) predicts and the driver's own answer;
* **sweep**: the sum ``wide_sum`` in blocks of :data:`THREADS` threads, the
  same launch every time (as many blocks as fill the GPU when nothing else
  limits them), with a dynamic shared-memory allocation it never uses that lets
  only 32, 16, 8 or 4 blocks onto a multiprocessor
  (:func:`~demos.patterns.occupancy.smallest_shared_for`); for ``LOADS`` = 1 and
  4. Each sum is checked against float64, then timed with CUDA events; the read
  rate is given as a share of the device copy's rate, measured here.

The device's limits, as its driver reports them, are recorded too. Writes
``occupancy.json``; the chapter's reference is that file from an H100, shipped
as ``demos/results/occupancy_h100.json``. :func:`measure` takes the array
module, the timer and the limits, so the tests run it in the simulator.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from demos import gpu_timer, hardware, live
from demos.benchmarks import record
from demos.live import Expect, Row, Table
from demos.patterns import bench, inflight, kernels, matmul, occupancy

THREADS = 64  # two warps per block: shared memory can then take a multiprocessor from 32 to 4
BLOCKS = (32, 16, 8, 4)  # blocks per multiprocessor the sweep allows
LOADS = (1, 4)
STATIC_SHARED = 128  # wide_sum's own shared array (32 float32), where Numba cannot report it
QUICK_N = 2**20
TOLERANCE = 1e-4
SOURCES = ["demos/patterns/occupancy.py", "demos/patterns/occupancy_bench.py"]
REFERENCE = "occupancy_h100.json"
MAKE_REFERENCE = (
    "python -m demos bench occupancy --output DIR, then copy DIR/occupancy.json to "
    f"demos/results/{REFERENCE}"
)


def _course_kernels() -> list[tuple[str, Any, int, Callable[[Any], tuple]]]:
    """(name, kernel, threads per block, arguments for one small launch from the array module)."""

    def square(xp: Any) -> tuple:
        a = xp.ones((64, 64), dtype=xp.float32)
        return a, a, xp.zeros((64, 64), dtype=xp.float32)

    def ints(xp: Any) -> tuple:
        return xp.zeros(1024, dtype=xp.int32), xp.zeros(256, dtype=xp.int32)

    def floats(xp: Any) -> tuple:
        return xp.ones(1024, dtype=xp.float32), xp.zeros(4, dtype=xp.float32)

    return [
        ("tiled matmul, TILE = 16", matmul.tiled_matmul_kernel(16), 256, square),
        ("tiled matmul, TILE = 32", matmul.tiled_matmul_kernel(32), 1024, square),
        ("naive matmul", matmul.naive_matmul_kernel("float32"), 256, square),
        ("histogram in shared memory", kernels.histogram_shared_kernel(256), 256, ints),
        ("wide_sum, LOADS = 1", inflight.with_loads(inflight.wide_sum, 1), 256, floats),
        ("wide_sum, LOADS = 8", inflight.with_loads(inflight.wide_sum, 8), 256, floats),
    ]


def kernel_table(xp: Any, limits: dict[str, Any], device: Callable[[Any], Any]) -> list[dict]:
    """Compile each course kernel with one small launch, then its resources, the model's blocks per
    multiprocessor and the driver's (None where Numba or the driver cannot say)."""
    rows = []
    for name, kernel, threads, make in _course_kernels():
        side = 32 if threads == 1024 else 16
        block = (side, side) if "matmul" in name else threads
        args = tuple(device(a) for a in make(xp))
        if hasattr(kernel, "specialize"):  # a real GPU: one signature, whose resources are asked
            kernel = kernel.specialize(*args)
        kernel[1, block](*args)
        found = occupancy.kernel_resources(kernel)
        model = (
            occupancy.blocks_per_sm(found["registers"], threads, found["shared_bytes"], limits)
            if found
            else None
        )
        rows.append(
            {
                "name": name,
                "threads": threads,
                **(found or {"registers": None, "shared_bytes": None, "local_bytes": None}),
                "model_blocks_per_sm": model,
                "driver_blocks_per_sm": occupancy.driver_blocks_per_sm(kernel, threads),
            }
        )
    return rows


def _most_shared(kernel: Any) -> Any:
    """*kernel* asking for the largest shared-memory carve-out of the SM's L1 (on a GPU), so that
    the rows' blocks per SM follow the published shared memory per SM, not the driver's choice."""
    if hardware.simulator_enabled():  # the simulator has no carve-out to choose
        return kernel
    from numba import cuda

    return cuda.jit(shared_memory_carveout="maxshared")(kernel.py_func)


def measure(
    xp: Any,
    time_ms: Callable[[Callable[[], Any]], float],
    n: int,
    limits: dict[str, Any],
    multiprocessors: int,
    *,
    kernel: Any = inflight.wide_sum,
    loads: Sequence[int] = LOADS,
    blocks: Sequence[int] = BLOCKS,
    device: Callable[[Any], Any] = lambda a: a,
) -> dict[str, Any]:
    """The sweep (for each LOADS and each allowed blocks per multiprocessor, the same launch of
    *kernel* with the dynamic shared memory that allows that many), then the kernel table."""
    values = xp.random.default_rng(0).random(n, dtype=xp.float32)
    exact = float(values.astype(xp.float64).sum())
    nbytes = int(values.nbytes)
    copy = bench.copy_bandwidth(xp, nbytes, time_ms)
    per_sm = min(limits["max_blocks_per_sm"], limits["max_threads_per_sm"] // THREADS)
    grid = multiprocessors * per_sm
    partial = xp.zeros(grid, xp.float32)
    sweep = []
    args = (device(values), device(partial))
    for per_thread in loads:
        compiled = _most_shared(inflight.with_loads(kernel, per_thread))
        compiled[grid, THREADS](*args)  # compiles
        found = occupancy.kernel_resources(compiled)
        static = found["shared_bytes"] if found else STATIC_SHARED
        for allowed in blocks:
            dynamic = max(0, occupancy.smallest_shared_for(allowed, limits) - static)

            def launch(compiled=compiled, dynamic=dynamic) -> None:
                compiled[grid, THREADS, 0, dynamic](*args)

            launch()
            error = abs(float(partial.astype(xp.float64).sum()) - exact) / abs(exact)
            ms = time_ms(launch)
            registers = found["registers"] if found else None
            model = (
                occupancy.blocks_per_sm(registers, THREADS, static + dynamic, limits)
                if found
                else None
            )
            sweep.append(
                {
                    "loads": per_thread,
                    "allowed_blocks_per_sm": allowed,
                    "dynamic_shared_bytes": dynamic,
                    "registers": registers,
                    "model_blocks_per_sm": model,
                    "driver_blocks_per_sm": occupancy.driver_blocks_per_sm(
                        compiled, THREADS, dynamic
                    ),
                    "occupancy": (model or allowed) * THREADS / limits["max_threads_per_sm"],
                    "ms": ms,
                    "read_bytes_per_s": nbytes / (ms / 1e3),
                    "fraction_of_copy": nbytes / (ms / 1e3) / copy["bytes_moved_per_s"],
                    "relative_error": error,
                    "correct": bool(error <= TOLERANCE),
                }
            )
    return {
        "n": n,
        "threads": THREADS,
        "grid": grid,
        "limits": limits,
        "copy_bandwidth": copy,
        "kernels": kernel_table(xp, limits, device),
        "sweep": sweep,
        "all_correct": all(r["correct"] for r in sweep),
    }


def run(quick: bool = False) -> dict[str, Any]:
    """:func:`measure` on this machine's GPU: CuPy arrays, CUDA events, the driver's limits."""
    cp = hardware.require_cupy("the occupancy benchmark")
    from numba import cuda

    limits = occupancy.device_limits()
    return measure(
        cp,
        lambda fn: gpu_timer.event_ms(cp, fn),
        QUICK_N if quick else bench.input_size(),
        limits,
        limits["multiprocessors"],
        device=cuda.as_cuda_array,
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    record.add_gpu_bench_arguments(parser, "occupancy")


def main(args: argparse.Namespace) -> int:
    return record.run_gpu_bench(args, "occupancy", "The occupancy benchmark", run, SOURCES)


# ------------------------------------------------------------ what chapter 4d shows, live
def reference() -> live.Reference | None:
    """The shipped H200 result, or None after saying that it has not been measured yet."""
    return live.reference_or_explain(REFERENCE, MAKE_REFERENCE, "results")


def _row(result: dict[str, Any], loads: int, allowed: int) -> dict[str, Any]:
    for r in result["sweep"]:
        if r["loads"] == loads and r["allowed_blocks_per_sm"] == allowed:
            return r
    raise KeyError((loads, allowed))


def _kernel(result: dict[str, Any], name: str) -> dict[str, Any]:
    return next(r for r in result["kernels"] if r["name"] == name)


def _model_agrees(rows: list[dict[str, Any]]) -> bool | None:
    """Whether the model gave the driver's answer for every kernel it answered (None: none)."""
    answered = [r for r in rows if r["driver_blocks_per_sm"] is not None]
    if not answered:
        return None
    return all(r["driver_blocks_per_sm"] == r["model_blocks_per_sm"] for r in answered)


def _cell(r: dict[str, Any]) -> str:
    blocks = r["driver_blocks_per_sm"] or r["model_blocks_per_sm"] or r["allowed_blocks_per_sm"]
    return (
        f"{blocks} blocks, {100 * r['occupancy']:.0f} % occupancy: "
        f"{r['read_bytes_per_s'] / 1e9:,.0f} GB/s = {100 * r['fraction_of_copy']:.0f} % of copy"
        + ("" if r["correct"] else " WRONG")
    )


KERNEL_TABLE = Table(
    "The course's kernels: registers and shared memory as compiled, blocks per multiprocessor",
    tuple(
        Row(
            name,
            lambda r, m=name: (
                f"{_kernel(r, m)['registers']} registers, {_kernel(r, m)['shared_bytes']:,} B "
                f"shared: model {_kernel(r, m)['model_blocks_per_sm']}, "
                f"driver {_kernel(r, m)['driver_blocks_per_sm']}"
            ),
        )
        for name, *_ in _course_kernels()
    ),
    Expect(
        "the model's blocks per multiprocessor agree with the driver's",
        lambda r: _model_agrees(r["kernels"]),
        "This GPU's driver reserves or rounds differently from the published rules.",
    ),
)


def sweep_table(loads: Sequence[int] = LOADS, blocks: Sequence[int] = BLOCKS) -> Table:
    """What the chapter's sweep cell shows, for these LOADS and blocks per multiprocessor."""
    return Table(
        f"A sum in blocks of {THREADS} threads, with shared memory that lets fewer blocks in "
        "(GPU time; the same launch in every row)",
        (
            Row("values (float32)", "n", "", 0),
            *(
                Row(f"LOADS = {n}, room for {k} blocks", lambda r, n=n, k=k: _cell(_row(r, n, k)))
                for n in loads
                for k in blocks
            ),
        ),
        Expect(
            "fewer resident warps read more slowly: with LOADS = 1, the full multiprocessor beats "
            f"the one with room for {min(blocks)} blocks",
            lambda r: _row(r, 1, max(blocks))["ms"] < 0.8 * _row(r, 1, min(blocks))["ms"],
            "This GPU's memory answers so soon that even a few warps keep it busy.",
        ),
    )


SWEEP_TABLE = sweep_table()


RESOURCES_TABLE = Table(
    "The course's kernels as compiled: registers per thread, shared memory per block",
    tuple(
        Row(
            f"{name} ({threads} threads)",
            lambda r, m=name: (
                f"{_kernel(r, m)['registers']} registers, "
                f"{_kernel(r, m)['shared_bytes']:,} B shared"
            ),
        )
        for name, _, threads, _ in _course_kernels()
    ),
)


def live_kernels() -> dict[str, Any]:
    """The kernel part of the benchmark on this machine's GPU (compiles six small launches)."""
    cp = hardware.require_cupy("the occupancy of the course's kernels")
    from numba import cuda

    return {"kernels": kernel_table(cp, occupancy.device_limits(), cuda.as_cuda_array)}


def compare_prediction(
    predicted: dict[int, Any], loads_help: Any, result: dict[str, Any] | None
) -> None:
    """Print the predicted shares of the copy's rate (LOADS = 1) beside the measured ones
    (*result*: the live run, else the reference's values), and whether LOADS = 4 helped where few
    blocks fit."""
    if result is None:
        print("Nothing measured here and no reference yet: keep your predictions for a GPU.")
        return
    loads = sorted({r["loads"] for r in result["sweep"]})
    rooms = sorted({r["allowed_blocks_per_sm"] for r in result["sweep"]}, reverse=True)
    print(f"Share of the device copy's rate, LOADS = {loads[0]}:")
    print(f"  {'room for':>9s}{'you predicted':>16s}{'measured':>10s}")
    for allowed in rooms:
        guess = predicted.get(allowed)
        said = f"{guess:.2f}" if isinstance(guess, (int, float)) else "-"
        got = _row(result, loads[0], allowed)["fraction_of_copy"]
        print(f"  {allowed:>9d}{said:>16s}{got:>10.2f}")
    few, more = rooms[-1], loads[-1]
    helped = _row(result, more, few)["ms"] < 0.9 * _row(result, loads[0], few)["ms"]
    guess = "-" if loads_help is None else ("yes" if loads_help else "no")
    print(
        f"With room for {few} blocks, LOADS = {more} {'did' if helped else 'did not'} read clearly "
        f"faster than LOADS = {loads[0]} (you predicted: {guess})."
    )
