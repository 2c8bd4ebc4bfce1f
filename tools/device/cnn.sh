#!/usr/bin/env bash
# Chapter 5 CNN on a lent GPU machine (no TensorFlow there: Keras 3 on JAX).
# Run from the repository root with `.whl` carried:   bash tools/device/cnn.sh
# Writes under $OUT: cnn_<gpu>.json, measurements_tf_cnn_cifar10.json, the chart,
# the batch-32 run without steps_per_execution (cnn_b32/), and the test log.
set -u
source tools/device/setup.sh || exit 1
export KERAS_BACKEND=jax
OUT=${OUT:-/tmp/out}
# The sweep: batch 32 in float32 as in the tutorial, large batches in bfloat16.
timeout 175 python3 -m demos bench cnn --devices gpu,cpu,cpu1 --batch-sizes 32,4096,8192,16384 \
    --precisions mixed_bfloat16 --steps 24 --repeats 3 --steps-per-execution 8 --timeout 60 \
    --label "Keras 3 on JAX" --output "$OUT" 2>&1 | grep -v "^I0000\|^WARNING: All log" | tee "$OUT/bench.log"
# The tutorial's exact setting: batch 32, one step per call.
timeout 45 python3 -m demos bench cnn --devices gpu --batch-sizes 32 --precisions float32 --steps 64 \
    --repeats 3 --steps-per-execution 1 --timeout 50 --no-plot --label "Keras 3 on JAX, 1 step per call" \
    --output "$OUT/cnn_b32" 2>&1 | tail -3 | tee -a "$OUT/bench.log"
timeout 55 python3 -m pytest -q -p no:cacheprovider tests/test_cnn*.py 2>&1 | tail -15 | tee "$OUT/tests.log"
