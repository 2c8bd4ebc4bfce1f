#!/usr/bin/env bash
# Chapter 6 on this node's GPUs: the multi-GPU tests, then the scaling benchmark.
#   tools/gpu-node/multigpu.sh OUTDIR [NAME]       (NAME of the JSON, default multigpu)
# Writes OUTDIR/tests.txt, OUTDIR/NAME.json, its figures and OUTDIR/bench.txt.
# Run it on a node with two or more GPUs; with one, the multi-GPU tests skip.
set -uo pipefail
source "$(dirname "$0")/common.sh"
name=${1:-multigpu}
"$PY" -m pytest -q -rfEs --tb=short -p no:cacheprovider tests/demos/multigpu/test_splitting.py \
    tests/demos/multigpu/test_multigpu_cpu.py tests/demos/multigpu/test_multigpu_gpu.py > "$OUTDIR/tests.txt" 2>&1
tests=$?
tail -n 15 "$OUTDIR/tests.txt"
"$PY" -m demos bench multigpu --output "$OUTDIR" --name "$name" 2>&1 | tee "$OUTDIR/bench.txt"
bench=${PIPESTATUS[0]}
exit $(( tests || bench ))
