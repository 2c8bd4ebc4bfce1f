#!/usr/bin/env bash
# Grade every assignment on this GPU node: model solutions must get full marks, blank releases none.
#   tools/gpu-node/exercises.sh OUTDIR [ASSIGNMENT...]
# On a GPU the assignments use CuPy, the real devices and compiled kernels instead
# of NumPy and the simulator, so this checks their GPU paths. The hidden tests run
# in the grader, so each solution and blank release is graded by real nbgrader
# autograde in a scratch copy of the course (python -m grader selftest). Writes
# OUTDIR/exercises.txt (one line per assignment) and OUTDIR/exercises.json.
# Exits 1 if a solution loses points or a blank release gains any.
set -uo pipefail
source "$(dirname "$0")/common.sh"
PATH="$(dirname "$PY"):$PATH"  # nbgrader runs alembic from the environment's bin/
export PATH
"$PY" -m grader selftest --json "$OUTDIR/exercises.json" "$@" | tee "$OUTDIR/exercises.txt"
exit "${PIPESTATUS[0]}"
