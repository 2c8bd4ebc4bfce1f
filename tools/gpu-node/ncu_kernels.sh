#!/usr/bin/env bash
# Nsight Compute on the naive and the coalesced distance kernel (chapter 4a's table).
#   tools/gpu-node/ncu_kernels.sh OUTDIR
# Needs Nsight Compute (`ncu`) on PATH. Writes OUTDIR/kernels.ncu-rep (open it in the
# Nsight Compute GUI), OUTDIR/ncu_raw.csv (its raw CSV export), OUTDIR/ncu_kernels.json
# (the table the chapter reads, with the hardware) and OUTDIR/ncu.log. The clocks are
# left as the GPU sets them (--clock-control none), so the durations match what the
# kernels take outside the profiler.
set -uo pipefail
source "$(dirname "$0")/common.sh"
command -v ncu >/dev/null || { echo "ncu (Nsight Compute) is not on PATH" >&2; exit 1; }
METRICS=$("$PY" -c "from demos.profiling.ncu import METRICS; print(','.join(METRICS))") || exit 1
ncu --clock-control none --target-processes all \
    --kernel-name regex:'(naive|coalesced)_kernel' \
    --metrics "$METRICS" --export "$OUTDIR/kernels" --force-overwrite \
    "$PY" -m demos.profiling.ncu launch > "$OUTDIR/ncu.log" 2>&1 || exit 1
ncu --import "$OUTDIR/kernels.ncu-rep" --csv --page raw > "$OUTDIR/ncu_raw.csv" || exit 1
"$PY" -m demos.profiling.ncu table "$OUTDIR/ncu_raw.csv" --output "$OUTDIR/ncu_kernels.json"
