#!/usr/bin/env bash
# Run every assignment on this GPU node: model solutions must pass, blank releases must fail.
#   tools/gpu-node/exercises.sh OUTDIR
# On a GPU the assignments use CuPy, the real devices and compiled kernels instead
# of NumPy and the simulator, so this checks their GPU paths. Writes
# OUTDIR/exercises.txt (one line per notebook) and the executed notebooks.
# Exits 1 if a solution fails or a blank release passes.
set -uo pipefail
source "$(dirname "$0")/common.sh"
bad=0
for notebook in solutions/*/*.ipynb exercises/*/*.ipynb; do
    kind=${notebook%%/*}
    target="$OUTDIR/executed/$kind"
    mkdir -p "$target"
    if "$PY" -m jupyter nbconvert --to notebook --execute --output-dir "$target" \
        --ExecutePreprocessor.timeout=600 "$notebook" > "$target/$(basename "$notebook").log" 2>&1; then
        passed=yes
    else
        passed=no
    fi
    if [[ $kind == solutions && $passed == yes ]] || [[ $kind == exercises && $passed == no ]]; then
        verdict=OK
    else
        verdict=WRONG
        bad=1
    fi
    echo "$verdict $notebook (ran without error: $passed)" | tee -a "$OUTDIR/exercises.txt"
done
exit "$bad"
