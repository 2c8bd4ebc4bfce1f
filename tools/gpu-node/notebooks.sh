#!/usr/bin/env bash
# Execute course notebooks top to bottom on this GPU node, keeping the outputs to inspect.
#   tools/gpu-node/notebooks.sh OUTDIR [NOTEBOOK.ipynb ...]     (default: course/*.ipynb)
# Writes OUTDIR/executed/<name>.ipynb (with outputs: timings, figures),
# OUTDIR/live/<name>.jsonl (every "your GPU beside the reference" table the chapter printed),
# OUTDIR/live.md (those tables as Markdown; the benchmarks page renders them from OUTDIR/live/) and
# OUTDIR/notebooks.txt (one line per notebook: ok or failed, seconds, and why).
# A notebook fails when a cell raises, or when it shows what a student would take for an
# error: stderr output (a red box), terminal colour codes or a raw dict (check_outputs.py).
# NOTEBOOK_TIMEOUT (seconds per cell, default 600). Exits 1 if any notebook failed.
set -uo pipefail
source "$(dirname "$0")/common.sh"
notebooks=("$@")
[[ ${#notebooks[@]} -gt 0 ]] || notebooks=(course/*.ipynb)
mkdir -p "$OUTDIR/executed" "$OUTDIR/live"
: > "$OUTDIR/notebooks.txt"
failed=0
for notebook in "${notebooks[@]}"; do
    name=$(basename "$notebook" .ipynb)
    rm -f "$OUTDIR/live/$name.jsonl"
    start=$SECONDS
    if DEMOS_LIVE_LOG="$OUTDIR/live/$name.jsonl" "$PY" "$REPO/tools/gpu-node/execute_notebook.py" \
        "$notebook" "$OUTDIR/executed/$name.ipynb" "${NOTEBOOK_TIMEOUT:-600}" \
        > "$OUTDIR/executed/$name.log" 2>&1; then
        if "$PY" "$REPO/tools/gpu-node/check_outputs.py" "$OUTDIR/executed/$name.ipynb" \
            >> "$OUTDIR/executed/$name.log" 2>&1; then
            result=ok
        else
            result="failed (stderr, colour codes or raw output: see $OUTDIR/executed/$name.log)"
            failed=1
        fi
    else
        result="failed (a cell raised: see $OUTDIR/executed/$name.log)"
        failed=1
    fi
    echo "$((SECONDS - start)) s $notebook $result" | tee -a "$OUTDIR/notebooks.txt"
done
"$PY" "$REPO/tools/gpu-node/live_tables.py" "$OUTDIR/live" > "$OUTDIR/live.md"
exit "$failed"
