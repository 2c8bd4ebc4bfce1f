#!/usr/bin/env bash
# Chapter 6 on a lent multi-GPU machine: the multigpu tests, then the benchmark.
# Run from the repository root with `.whl` carried (device tool), e.g.
#   bash tools/device/multigpu.sh            # tests + full benchmark
#   MULTIGPU_SKIP_TESTS=1 bash tools/device/multigpu.sh
# Writes multigpu_tests.txt, multigpu_bench.txt, multigpu_<name>.json and PNGs to $OUT.
set -u
source tools/device/setup.sh || exit 1
OUT=${OUT:-/tmp/out}
NAME=${MULTIGPU_NAME:-multigpu_h200}
status=0
if [ -z "${MULTIGPU_SKIP_TESTS:-}" ]; then
  timeout "${MULTIGPU_TEST_TIMEOUT:-75}" python3 -m pytest -q -rfEs --tb=short -p no:cacheprovider \
    -W ignore::DeprecationWarning tests/test_multigpu_splitting.py tests/test_multigpu_cpu.py \
    tests/test_multigpu_gpu.py > "$OUT/multigpu_tests.txt" 2>&1
  status=$?
  # the full log comes back in $OUT; show the failures and the summary here
  grep -E "^(FAILED|ERROR|SKIPPED)|^E  |passed|failed" "$OUT/multigpu_tests.txt" | cut -c1-300 | head -40
fi
timeout "${MULTIGPU_BENCH_TIMEOUT:-190}" python3 -m demos bench multigpu --output "$OUT" --name "$NAME" \
  ${MULTIGPU_BENCH_ARGS:-} 2>&1 | grep -v -i "warning" | tee "$OUT/multigpu_bench.txt"
bench_status=${PIPESTATUS[0]}
echo "tests exit $status, bench exit $bench_status"
exit $(( status || bench_status ))
