#!/usr/bin/env bash
# Distance-matrix GPU tests and benchmarks on a lent GPU machine (device tool), from the repo root:
#   bash tools/device/distance_bench.sh quick   # GPU tests + a short benchmark (~1 min)
#   bash tools/device/distance_bench.sh full    # GPU tests + the reference run (~4 min)
# Output under $OUT (default /tmp/out): pytest_distance.txt, info.txt and
# distance_results.tar.gz (the JSON, measurements*.json compat files and PNGs; the
# device tool returns only a few files). Unpack it into demos/results/ to ship a new
# reference, and copy measurements*.json to demos/.
set -uo pipefail
MODE=${1:-quick}
export OUT=${OUT:-/tmp/out}
RESULTS=${RESULTS:-/tmp/distance_results}
mkdir -p "$OUT" "$RESULTS"
# Device-only numpy shim (numba-cuda 0.30.4 vs numpy 2.5), and the repository, on the path.
export PYTHONPATH="$PWD/tools/device/site:$PWD${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
{ nvidia-smi; python3 -m demos info --no-tensorflow; } > "$OUT/info.txt" 2>&1

KERNELS=numba-cuda-naive,numba-cuda-coalesced,numba-cuda-tiled,numba-cuda-symmetric,numba-cuda-best
BACKENDS=numpy,cupy,cupy-lean,numba-cpu,numba-cpu-parallel,$KERNELS

timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_distance_numpy_cupy.py tests/test_bench_distance.py \
  > "$OUT/pytest_distance.txt" 2>&1; echo "pytest rc=$?" >> "$OUT/pytest_distance.txt"
tail -3 "$OUT/pytest_distance.txt"
if [ "$MODE" = quick ]; then
  timeout 120 python3 -m demos bench distance --sizes 64,1024,4096 --backends "$BACKENDS" \
    --repeats 3 --output "$RESULTS" --compat --memory 27000 --chunked 4 --device-memory-fraction 0.005 --no-progress
else
  # --chunked 24 with 5% of the free GPU memory as the budget: the matrix is ~3.4x
  # the device budget, so it must stream (2x the real 141 GB would not fit in host RAM).
  timeout 270 python3 -m demos bench distance --sizes 16,64,256,1024,4096,16384 \
    --backends "$BACKENDS" --repeats 5 --output "$RESULTS" --compat --memory 27000 \
    --chunked 24 --device-memory-fraction 0.05 --no-progress
fi
echo "bench rc=$?"
python3 -m demos plot --input "$RESULTS" --output "$RESULTS"
tar -czf "$OUT/distance_results.tar.gz" -C "$RESULTS" .
tar -tzvf "$OUT/distance_results.tar.gz"
