#!/usr/bin/env bash
# Chapter 5's CNN training throughput on this GPU node: GPU, all CPU threads, one thread.
#   tools/gpu-node/cnn.sh OUTDIR [LABEL]
# The sweep: batch 32 in float32 as in the TensorFlow tutorial, and large batches in
# bfloat16; then the tutorial's exact setting (batch 32, one step per call) into
# OUTDIR/batch32. LABEL names the setup in measurements_tf_cnn_cifar10.json
# (default: the Keras backend). Writes the JSON, the chart and bench.txt.
set -uo pipefail
source "$(dirname "$0")/common.sh"
label=${1:-"Keras $("$PY" -c 'import keras; print(keras.__version__, "on", keras.backend.backend())' 2>/dev/null)"}
"$PY" -m demos bench cnn --devices gpu,cpu,cpu1 --batch-sizes 32,4096,8192,16384 \
    --precisions mixed_bfloat16 --steps 24 --repeats 3 --steps-per-execution 8 --timeout 120 \
    --label "$label" --output "$OUTDIR" 2>&1 | tee "$OUTDIR/bench.txt"
status=${PIPESTATUS[0]}
"$PY" -m demos bench cnn --devices gpu --batch-sizes 32 --precisions float32 --steps 64 \
    --repeats 3 --steps-per-execution 1 --timeout 120 --no-plot \
    --label "$label, 1 step per call" --output "$OUTDIR/batch32" 2>&1 | tail -n 3 | tee -a "$OUTDIR/bench.txt"
single=${PIPESTATUS[0]}
exit $(( status || single ))
