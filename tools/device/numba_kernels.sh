#!/usr/bin/env bash
# Numba distance-matrix kernels on a real GPU: the GPU tests, then kernel timings.
#
# Run from the repository root on a GPU machine (the lent device or a cluster node):
#     OUT=/some/dir bash tools/device/numba_kernels.sh
# Writes $OUT/gpu.txt, $OUT/pytest.txt and $OUT/numba_kernels.json (+ .txt table).
# Timings: cupyx.profiler.benchmark (CUDA events around each call, median) and,
# to hide Python's launch overhead, events around 10 back-to-back launches.
# Bandwidth = n*n*itemsize bytes written / time; "fill" is CuPy filling the same
# matrix; cudaMemsetAsync of the same bytes is the write floor this GPU reaches.
# SWEEP=0|1|full chooses how many "rows"/"pairs" tunings are timed (default 1).
set -u
OUT=${OUT:-$PWD/bench-results/numba_kernels}
mkdir -p "$OUT"
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
PY=${PYTHON:-python3}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.memory --format=csv > "$OUT/gpu.txt" 2>&1
"$PY" -m pytest -q -p no:cacheprovider tests/test_distance_numba.py > "$OUT/pytest.txt" 2>&1
echo "pytest exit code $?" >> "$OUT/pytest.txt"
tail -n 5 "$OUT/pytest.txt"

"$PY" - "$OUT" "${SWEEP:-1}" <<'PYEOF' 2>&1 | tee "$OUT/numba_kernels.txt"
import json
import sys

import numpy as np

if not hasattr(np, "row_stack"):  # numba-cuda 0.30.4 on numpy >= 2.5 (device-only work-around)
    np.row_stack = np.vstack

import cupy as cp
from cupyx.profiler import benchmark
from numba import cuda

from demos import hardware
from demos.distance import numba_cuda as nc

out_dir, sweep = sys.argv[1], sys.argv[2] != "0"
# SWEEP=1: the tuning grid of "rows"/"pairs" (threads per block x rows per thread);
# SWEEP=full: a wider grid; SWEEP=0: only the default configuration of every kernel.
blocks, rows = ((64, 128, 256, 512, 1024), (1, 2, 4, 8, 16, 32, 64)) if sys.argv[2] == "full" else ((128, 256), (8, 16, 32, 64, 128))
SWEEP = [(k, t, r) for k in ("rows", "pairs", "quads") for t in blocks for r in rows]
rng = np.random.default_rng(0)
records = []


def event_time(fn, repeat):
    """(median ms per call with cupyx benchmark, ms per call over back-to-back launches)."""
    res = benchmark(fn, n_warmup=2, n_repeat=repeat)
    single = float(np.median(res.gpu_times[0])) * 1e3
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    k = 10 if single < 20 else 2
    start.record()
    for _ in range(k):
        fn()
    stop.record()
    stop.synchronize()
    return single, cp.cuda.get_elapsed_time(start, stop) / k


def check(d_out, x, rows=64):
    """Compare sampled rows with a float64 NumPy reference (the full matrix may be 4 GB)."""
    h = x.copy_to_host().astype(np.float64)
    idx = np.unique(np.r_[0, len(h) - 1, rng.integers(0, len(h), rows)])
    got = cp.asarray(d_out)[cp.asarray(idx)].get().astype(np.float64)
    ref = ((h[idx, None, :] - h[None, :, :]) ** 2).sum(-1)
    tol = 1e-5 if d_out.dtype == np.float32 else 1e-12
    return bool(np.allclose(got, ref, rtol=tol, atol=tol))


def record(label, dtype, n, nbytes, fn, repeat, d_out=None, x=None, **extra):
    single, b2b = event_time(fn, repeat)
    ok = None if d_out is None else check(d_out, x)
    rec = dict(kernel=label, dtype=np.dtype(dtype).name, n=n, ms=round(single, 4),
               ms_back_to_back=round(b2b, 4), write_TBps=round(nbytes / b2b / 1e9, 3),
               correct=ok, **extra)
    records.append(rec)
    print(f"{label:34s} {rec['dtype']:8s} n={n:6d}  {single:9.3f} ms  b2b {b2b:9.3f} ms  "
          f"{rec['write_TBps']:6.3f} TB/s  correct={ok}", flush=True)


for dtype, n in [(np.float32, 32768), (np.float64, 4096)]:
    x = cuda.to_device(rng.random((n, 3)).astype(dtype))
    d_out = cuda.device_array((n, n), dtype=dtype)
    nbytes = n * n * np.dtype(dtype).itemsize
    c_out = cp.asarray(d_out)
    record("cupy fill (write floor)", dtype, n, nbytes, lambda: c_out.fill(1), 20)
    record("cudaMemsetAsync (write floor)", dtype, n, nbytes,
           lambda: cp.cuda.runtime.memsetAsync(c_out.data.ptr, 0, nbytes, 0), 20)
    src = cp.empty_like(c_out)
    record("cupy copy (bytes written)", dtype, n, nbytes, lambda: c_out.__setitem__(Ellipsis, src), 20)
    del src
    for kernel in nc.KERNELS + ("best",):
        repeat = 3 if kernel == "naive" and n > 10_000 else 20
        c_out.fill(np.nan)
        try:
            record(kernel, dtype, n, nbytes,
                   lambda: nc.distance_matrix_device(x, kernel=kernel, out=d_out), repeat, d_out, x)
        except Exception as exc:
            print(f"{kernel} FAILED: {exc!r}"[:300], flush=True)
    if not sweep:
        continue
    for kernel, threads, rpt in SWEEP:
        if kernel == "quads" and dtype != np.float32:
            continue  # float32 only (it would run "pairs")
        c_out.fill(np.nan)
        try:
            record(f"{kernel} block={threads} rows={rpt}", dtype, n, nbytes,
                   lambda: nc.distance_matrix_device(x, kernel=kernel, out=d_out, block=threads,
                                                     rows_per_thread=rpt),
                   10, d_out, x, block=threads, rows_per_thread=rpt)
        except Exception as exc:  # keep sweeping; the failure is in the table
            print(f"{kernel} block={threads} rows={rpt} FAILED: {exc!r}"[:300], flush=True)
    del d_out, c_out
    cp.get_default_memory_pool().free_all_blocks()

with open(f"{out_dir}/numba_kernels.json", "w") as f:
    json.dump({"hardware": hardware.report(), "results": records}, f, indent=1)
PYEOF
