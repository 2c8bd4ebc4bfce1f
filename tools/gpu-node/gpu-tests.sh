#!/usr/bin/env bash
# The whole test suite on this GPU node: the GPU-marked tests run instead of skipping.
#   tools/gpu-node/gpu-tests.sh OUTDIR [pytest options...]
# Writes OUTDIR/pytest.txt (the log), OUTDIR/junit.xml and OUTDIR/machine.txt.
# Exits with pytest's status.
set -uo pipefail
source "$(dirname "$0")/common.sh"
"$PY" -m pytest -q -rfEs -p no:cacheprovider --junitxml="$OUTDIR/junit.xml" "$@" tests \
    > "$OUTDIR/pytest.txt" 2>&1
status=$?
tail -n 25 "$OUTDIR/pytest.txt"
exit "$status"
