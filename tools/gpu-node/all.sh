#!/usr/bin/env bash
# Everything that needs a GPU, one after the other, each into its own subfolder of OUTDIR.
#   tools/gpu-node/all.sh OUTDIR
# tests/, notebooks/, exercises/, distance/ (quick), cnn/, multigpu/; then a summary.
# Exits 1 if any part failed; every part runs regardless.
set -uo pipefail
source "$(dirname "$0")/common.sh"
here=$(dirname "$0")
declare -A result
for part in gpu-tests notebooks exercises distance cnn multigpu; do
    echo "== $part"
    bash "$here/$part.sh" "$OUTDIR/${part#gpu-}" > "$OUTDIR/${part#gpu-}.log" 2>&1
    result[$part]=$?
done
failed=0
for part in gpu-tests notebooks exercises distance cnn multigpu; do
    echo "$part: $([[ ${result[$part]} -eq 0 ]] && echo ok || echo "failed (see $OUTDIR/${part#gpu-}.log)")"
    [[ ${result[$part]} -eq 0 ]] || failed=1
done
exit "$failed"
