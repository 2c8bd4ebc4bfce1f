#!/usr/bin/env bash
# compute-sanitizer on the chapters' kernels: racecheck, synccheck and memcheck as a second
# opinion on what the checks see in the simulator (two threads of a block writing one
# shared element between the same two barriers, a barrier not every thread reaches,
# a write past the end). A second opinion, not a replacement: on an H200, racecheck reported
# the race of a shared histogram counted with a plain `+=`, but synccheck did not report a
# tree sum with its cuda.syncthreads() inside `if t < step` (its result even came out right),
# which the chapters' checks reject from the simulator's barrier counts.
#   tools/gpu-node/sanitize.sh OUTDIR [--source FILE.py] [KERNEL...]
# KERNEL: names as in the chapters (block_sum_kernel, tiled_distance_kernel, histogram_shared,
# warp_sum, ...; default: all); without --source the model answers of demos/checks/answers/
# and chapter 4b's own kernels run, with --source the kernels FILE.py defines under those
# names (a student's cells pasted into one file). Each kernel runs once, with the launch of
# its chapter check, compiled with line information.
# Writes OUTDIR/<tool>.log for each tool, OUTDIR/sanitize.json (errors per tool and kernel)
# and OUTDIR/machine.txt. Needs compute-sanitizer (CUDA toolkit) on PATH and a GPU.
# Exits 0 when no tool reported an error, 1 when one did or a result was wrong, 2 on bad
# arguments, 3 when this machine cannot run it (no compute-sanitizer, no GPU).
set -uo pipefail
source "$(dirname "$0")/common.sh"
args=("$@")
# the arguments first (exit 2 if wrong); prints why there is no GPU here, or nothing
no_gpu=$("$PY" -m demos.checks.sanitize check "${args[@]}") || exit 2
if ! command -v compute-sanitizer >/dev/null; then
    for dir in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
        if [[ -n $dir && -x $dir/bin/compute-sanitizer ]]; then PATH="$dir/bin:$PATH"; break; fi
    done
fi
command -v compute-sanitizer >/dev/null || {
    echo "compute-sanitizer is not on PATH: it comes with the CUDA toolkit (module load cuda," \
        "or add the toolkit's bin/ folder to PATH, or set CUDA_HOME)" >&2
    exit 3
}
[[ -z $no_gpu ]] || { echo "no CUDA GPU here ($no_gpu): compute-sanitizer watches kernels on a GPU" >&2; exit 3; }
unset NUMBA_ENABLE_CUDASIM
status=0
for tool in racecheck synccheck memcheck; do
    echo "== $tool"
    # --report-api-errors no: Numba's driver probes (cuGetProcAddress) are not the kernels' errors
    compute-sanitizer --tool "$tool" --error-exitcode 1 --report-api-errors no \
        "$PY" -m demos.checks.sanitize launch "${args[@]}" > "$OUTDIR/$tool.log" 2>&1
    code=$?
    grep -E '^== sanitize:.*result|ERROR SUMMARY|RACECHECK SUMMARY' "$OUTDIR/$tool.log"
    [[ $code -eq 0 ]] || status=1
done
"$PY" -m demos.checks.sanitize summary "$OUTDIR" > "$OUTDIR/sanitize.json" || status=1
echo "summary: $OUTDIR/sanitize.json"
exit "$status"
