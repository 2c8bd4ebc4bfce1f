#!/usr/bin/env bash
# Nsight Compute on the naive and the coalesced distance kernel (chapter 4a's table).
#
#   tools/gpu-node/ncu_kernels.sh OUTDIR
#
# Run from the repository root on a GPU node with the course environment and
# Nsight Compute (`ncu`) on PATH. Writes OUTDIR/kernels.ncu-rep (open it in the
# Nsight Compute GUI), OUTDIR/ncu_raw.csv (its raw CSV export), OUTDIR/ncu_kernels.json
# (the table the chapter reads, with the hardware) and OUTDIR/ncu.log. --clock-control none keeps the GPU's own clocks, so the
# durations match what the kernels take outside the profiler.
set -euo pipefail
OUT=${1:?usage: tools/gpu-node/ncu_kernels.sh OUTDIR}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
command -v ncu >/dev/null || { echo "ncu (Nsight Compute) is not on PATH" >&2; exit 1; }
METRICS=$("$PY" -c "from demos.profiling.ncu import METRICS; print(','.join(METRICS))")
ncu --clock-control none --target-processes all \
    --kernel-name regex:'(naive|coalesced)_kernel' \
    --metrics "$METRICS" --export "$OUT/kernels" --force-overwrite \
    "$PY" -m demos.profiling.ncu launch > "$OUT/ncu.log" 2>&1
ncu --import "$OUT/kernels.ncu-rep" --csv --page raw > "$OUT/ncu_raw.csv"
"$PY" -m demos.profiling.ncu table "$OUT/ncu_raw.csv" --output "$OUT/ncu_kernels.json"
