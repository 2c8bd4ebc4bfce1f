"""The chapters' kernels for compute-sanitizer: a second opinion on the checks' simulator, on a GPU.

The checks find races on shared memory and barriers that not every thread
reaches by watching the simulator. On a GPU node NVIDIA's compute-sanitizer
sees the same in the real hardware: ``tools/gpu-node/sanitize.sh OUTDIR`` runs
``python -m demos.checks.sanitize launch`` under its racecheck, synccheck and
memcheck tools and summarises their logs with ``... summary OUTDIR``.

``launch`` runs each kernel once with the launch its chapter check uses (small
inputs, partly filled blocks) and says whether the result is right: the model
answers of ``demos/checks/answers/`` and chapter 4b's kernels by default, or the
kernels a Python file defines under the checks' names (``--source FILE``, for
instance a student's cells pasted into one file). Kernels are compiled with line
information, so the sanitizer's reports name the line.

The sanitizer sees only what the hardware does on this run. On an H200 its
racecheck reported a shared histogram counted with a plain ``+=``, while its
synccheck let pass a tree sum whose ``cuda.syncthreads()`` sits inside
``if t < step`` (the sum even came out right there): the checks' barrier
counts reject that kernel on any machine, so they stay the verdict and this
is a second opinion.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from demos.distance.reference import reference_distance

TOOLS = ("racecheck", "synccheck", "memcheck")
ANSWERS = Path(__file__).resolve().parent / "answers"
_MARK = "== sanitize:"
_HEADLINE = re.compile(
    r"^========= (Error|Warning|Invalid|Barrier|Race|Potential|Uninitiali[sz]ed|Program hit|"
    r"Misaligned|Out-of-range|Divergent|Malformed)"
)
_MANGLED = re.compile(r"\[abi:.*?\+0x[0-9a-f]+")  # Numba's mangled signature and offset
# memcheck and synccheck count errors; racecheck counts hazards (a race is often a warning)
_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error|RACECHECK SUMMARY: (\d+) hazard")


def _blocks(n: int, per_block: int) -> int:
    return max(1, -(-n // per_block))


def _distance(kernel: Any, grid_for: Callable, block: tuple, n: int = 5, m: int = 12) -> bool:
    rng = np.random.default_rng(0)
    x, y = rng.random((n, 3)), rng.random((m, 3))
    out = np.zeros((n, m))
    kernel[grid_for(n, m), block](x, y, out)
    return bool(np.allclose(out, reference_distance(x, y)))


def _histogram(kernel: Any, blocks: int = 2, threads: int = 32) -> bool:
    values = np.random.default_rng(3).integers(0, 16, 400).astype(np.int32)
    bins = np.zeros(16, np.int32)
    kernel[blocks, threads](values, bins)
    return bool(np.array_equal(bins, np.bincount(values, minlength=16)))


def _block_sum(kernel: Any, dtype: Any, n: int, threads: int) -> bool:
    values = np.random.default_rng(4).random(n).astype(dtype)
    partial = np.zeros(2, dtype)
    kernel[2, threads](values, partial)
    owner = (np.arange(n) % (2 * threads)) // threads
    return bool(np.allclose(partial, np.bincount(owner, weights=values, minlength=2), rtol=1e-5))


def _matmul(kernel: Any, n: int = 19, inner: int = 21, m: int = 23) -> bool:
    from demos.patterns import matmul

    rng = np.random.default_rng(9)
    a = rng.random((n, inner)).astype(np.float32)
    b = rng.random((inner, m)).astype(np.float32)
    c = np.zeros((n, m), np.float32)
    grid, block = matmul.launch_config(n, m, matmul.tile_of(kernel))
    kernel[grid, block](a, b, c)
    return bool(np.allclose(c, a.astype(np.float64) @ b, rtol=1e-5))


def _add_to(kernel: Any) -> bool:
    source, target = np.random.default_rng(2).random((2, 100))
    want = source + target
    kernel[_blocks(100, 32), 32](source, target)
    return bool(np.allclose(target, want))


def _add_matrices(kernel: Any) -> bool:
    a, b = np.random.default_rng(3).random((2, 17, 9))
    out = np.zeros((17, 9))
    kernel[(_blocks(17, 8), _blocks(17, 4)), (8, 4)](a, b, out)
    return bool(np.allclose(out, a + b))


def _block_scan(kernel: Any, n: int = 141) -> bool:
    from demos.patterns import scan

    block = scan.block_of(kernel) or scan.BLOCK
    values = np.random.default_rng(5).integers(-9, 10, n).astype(np.int32)
    out, totals = np.zeros(n, np.int32), np.zeros(_blocks(n, block), np.int32)
    kernel[_blocks(n, block), block](values, out, totals)
    starts = range(0, n, block)
    right = all(
        np.array_equal(out[k : k + block], np.cumsum(values[k : k + block])) for k in starts
    )
    return right and bool(np.array_equal(totals, [values[k : k + block].sum() for k in starts]))


def _add_offsets(kernel: Any, n: int = 323) -> bool:
    from demos.patterns import scan

    values = np.random.default_rng(6).integers(-9, 10, n).astype(np.int32)
    got = scan.inclusive_scan(values, scan.block_of(kernel) or 64, add_kernel=kernel)
    return bool(np.array_equal(got, np.cumsum(values)))


def _stencil(kernel: Any, n: int = 101) -> bool:
    from demos.patterns import stencil
    from demos.patterns.simulator import python_function

    scope = python_function(kernel).__globals__
    block, radius = scope.get("BLOCK", 64), scope.get("RADIUS", 1)
    x = np.random.default_rng(7).random(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    kernel[_blocks(n, block), block](x, out)
    return bool(np.allclose(out, stencil.reference(x, radius), rtol=1e-5))


#: kernel name -> what runs it (with the launch of its chapter check) and says if it was right
LAUNCHES: dict[str, Callable[[Any], bool]] = {
    "add_to_kernel": _add_to,
    "add_matrices_kernel": _add_matrices,
    "naive_distance_kernel": lambda k: _distance(k, lambda n, m: (n, m), (1, 1)),
    "coalesced_distance_kernel": lambda k: _distance(
        k, lambda n, m: (_blocks(m, 8), _blocks(n, 4)), (8, 4)
    ),
    "tiled_distance_kernel": lambda k: _distance(
        k, lambda n, m: (_blocks(m, 8), _blocks(n, 8)), (8, 8)
    ),
    "block_sum_kernel": lambda k: _block_sum(k, np.float64, 100, 64),
    "histogram_atomic": _histogram,
    "histogram_shared": _histogram,
    "warp_sum": lambda k: _block_sum(k, np.float32, 300, 64),
    "tiled_matmul": _matmul,
    "patterns.histogram_shared_kernel": _histogram,
    "patterns.tree_sum_kernel": lambda k: _block_sum(k, np.float32, 900, 256),
    "patterns.warp_sum_kernel": lambda k: _block_sum(k, np.float32, 900, 256),
    "patterns.tiled_matmul_kernel": _matmul,
    "block_scan": _block_scan,
    "add_offsets": _add_offsets,
    "stencil_shared": _stencil,
}


def _course_kernel(name: str) -> Any:
    from demos.patterns import kernels, matmul

    made = {
        "patterns.tiled_matmul_kernel": lambda: matmul.tiled_matmul_kernel(),
        "patterns.histogram_shared_kernel": lambda: kernels.histogram_shared_kernel(16),
        "patterns.tree_sum_kernel": lambda: kernels.tree_sum_kernel("float32"),
        "patterns.warp_sum_kernel": lambda: kernels.warp_sum_kernel("float32"),
    }
    return made[name]()


def _defined(path: Path, namespace: dict | None = None) -> dict:
    """Run a Python file (the cells of a notebook pasted into one, or a model answer) like a
    notebook: with ``np`` and ``cuda`` already imported."""
    namespace = {} if namespace is None else namespace
    namespace.setdefault("__name__", f"sanitized_{path.stem}")
    exec("import numpy as np\nfrom numba import cuda", namespace)  # noqa: S102
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)  # noqa: S102
    return namespace


def kernels_to_run(names: list[str], source: Path | None) -> dict[str, Any]:
    """The kernels to launch by name: from *source*, or the model answers and chapter 4b's own."""
    unknown = [n for n in names if n not in LAUNCHES]
    if unknown:
        raise ValueError(f"unknown kernel(s) {', '.join(unknown)}; known: {', '.join(LAUNCHES)}")
    if source is not None:
        defined = _defined(source)
        chosen = names or [n for n in LAUNCHES if n in defined]
        missing = [n for n in chosen if n not in defined]
        if missing or not chosen:
            raise ValueError(
                f"{source} defines no kernel named {', '.join(missing or LAUNCHES)}: name them "
                "as the chapter cells do"
            )
        return {n: defined[n] for n in chosen}
    found = {}
    for name in names or list(LAUNCHES):
        if name.startswith("patterns."):
            found[name] = _course_kernel(name)
        else:
            found[name] = _defined(ANSWERS / f"{name}.py")[name]
    return found


def launch(names: list[str], source: Path | None, allow_simulator: bool) -> int:
    """Launch each kernel once; a line per kernel. 0 if all were right, 1 if not, 3 if no GPU."""
    from demos import hardware
    from demos.numba_advice import silence_advice
    from demos.patterns.simulator import python_function

    if hardware.simulator_enabled() and not allow_simulator:
        print(
            "the kernels must run on a GPU for compute-sanitizer to see them, but Numba runs them "
            "in its simulator here (no GPU, or NUMBA_ENABLE_CUDASIM is set)",
            file=sys.stderr,
        )
        return 3
    from numba import cuda

    silence_advice()
    wrong = 0
    for name, kernel in kernels_to_run(names, source).items():
        if not hardware.simulator_enabled():
            kernel = cuda.jit(lineinfo=True)(python_function(kernel))
        print(f"{_MARK} {name}: launching", flush=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                right = LAUNCHES[name](kernel)
            cuda.synchronize()
        except Exception as exc:  # noqa: BLE001 - a student kernel may fail in any way
            right, note = False, f" ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
        else:
            note = ""
        wrong += not right
        print(f"{_MARK} {name}: result {'right' if right else 'WRONG'}{note}", flush=True)
    return 1 if wrong else 0


def summarise_log(text: str) -> dict[str, Any]:
    """Errors of one compute-sanitizer log (racecheck: hazards, warnings included): the total it
    states, and the first reports per kernel."""
    per_kernel: dict[str, list[str]] = {}
    results: dict[str, str] = {}
    current = "(before the first kernel)"
    for line in text.splitlines():
        if line.startswith(_MARK):
            name, _, what = line[len(_MARK) :].strip().partition(": ")
            current = name
            if what.startswith("result"):
                results[name] = what.removeprefix("result ").split(" ")[0]
        elif _HEADLINE.match(line):
            said = _MANGLED.sub("", line.removeprefix("=========").strip())
            per_kernel.setdefault(current, []).append(said)
    totals = [int(a or b) for a, b in _SUMMARY.findall(text)]
    return {
        "errors": totals[-1] if totals else None,
        "kernels": {
            name: {"result": results.get(name), "reports": lines[:5], "count": len(lines)}
            for name, lines in per_kernel.items()
        },
        "results": results,
    }


def summary(outdir: Path) -> tuple[dict[str, Any], int]:
    """The summary of every tool's log in *outdir*, and 0 (clean), 1 (errors or wrong results)."""
    found: dict[str, Any] = {}
    bad = 0
    for tool in TOOLS:
        path = outdir / f"{tool}.log"
        if not path.exists():
            continue
        found[tool] = summarise_log(path.read_text(encoding="utf-8", errors="replace"))
        errors = found[tool]["errors"]
        bad |= errors is None or errors > 0 or "WRONG" in found[tool]["results"].values()
    return found, int(bad or not found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m demos.checks.sanitize", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("launch", help="launch the kernels once each (what the sanitizer watches)")
    check = sub.add_parser(
        "check", help="check the arguments of launch; print why there is no GPU here, if not"
    )
    for p in (run, check):
        p.add_argument("names", nargs="*", help=f"kernels (default: all): {', '.join(LAUNCHES)}")
        p.add_argument("--source", type=Path, help="a Python file defining the kernels")
    run.add_argument("--allow-simulator", action="store_true", help="run in the simulator")
    report = sub.add_parser("summary", help="summarise the tools' logs in OUTDIR as JSON")
    report.add_argument("outdir", type=Path)
    args = parser.parse_args(argv)
    if args.command == "summary":
        found, status = summary(args.outdir)
        print(json.dumps(found, indent=1))
        return status
    if args.source is not None and not args.source.is_file():
        print(f"--source {args.source}: no such file", file=sys.stderr)
        return 2
    try:
        if args.command == "check":
            unknown = [n for n in args.names if n not in LAUNCHES]
            if unknown:
                raise ValueError(
                    f"unknown kernel(s) {', '.join(unknown)}; known: {', '.join(LAUNCHES)}"
                )
            if args.source is not None:
                kernels_to_run(args.names, args.source)
            from demos import hardware

            print("" if hardware.has_gpu() else hardware.no_gpu_reason())
            return 0
        return launch(args.names, args.source, args.allow_simulator)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
