#!/usr/bin/env bash
# Execute course notebooks top to bottom on this GPU node, keeping the outputs to inspect.
#   tools/gpu-node/notebooks.sh OUTDIR [NOTEBOOK.ipynb ...]     (default: course/*.ipynb)
# Writes OUTDIR/executed/<name>.ipynb (with outputs: timings, figures) and
# OUTDIR/notebooks.txt (one line per notebook: ok or failed, seconds).
# NOTEBOOK_TIMEOUT (seconds per cell, default 600). Exits 1 if any notebook failed.
set -uo pipefail
source "$(dirname "$0")/common.sh"
notebooks=("$@")
[[ ${#notebooks[@]} -gt 0 ]] || notebooks=(course/*.ipynb)
mkdir -p "$OUTDIR/executed"
failed=0
for notebook in "${notebooks[@]}"; do
    start=$SECONDS
    if "$PY" -m jupyter nbconvert --to notebook --execute --output-dir "$OUTDIR/executed" \
        --ExecutePreprocessor.timeout="${NOTEBOOK_TIMEOUT:-600}" "$notebook" \
        > "$OUTDIR/executed/$(basename "$notebook" .ipynb).log" 2>&1; then
        result=ok
    else
        result=failed
        failed=1
    fi
    echo "$result $((SECONDS - start)) s $notebook" | tee -a "$OUTDIR/notebooks.txt"
done
exit "$failed"
