#!/usr/bin/env bash
# Everything that needs a GPU, in one call on a lent GPU machine (device tool,
# `.whl` carried), from the repository root:   bash tools/device/all.sh
# Runs side by side: the test suite (minus the nbgrader pipeline and the
# launch-script tests, which need nbgrader and Slurm, absent there), every
# course notebook, every assignment (solutions must pass, blanks must fail),
# and the kernel timings. The device tool returns few files, so all results are
# packed into $OUT/all.tgz; the summary is printed.
set -u
source tools/device/setup.sh || exit 1
FINAL_OUT=$OUT
RES=/tmp/device-results
mkdir -p "$RES"/{suite,notebooks,exercises,kernels}
python3 -m demos info --no-tensorflow > "$RES/info.txt" 2>&1

( timeout 320 python3 -m pytest -q -rfEs -p no:cacheprovider -n 8 --dist loadfile tests \
    --ignore=tests/test_launch.py --ignore=tests/test_nbgrader_grading.py \
    --ignore=tests/test_nbgrader_bad_submissions.py --ignore=tests/test_nbgrader_release.py \
    > "$RES/suite/pytest.txt" 2>&1; echo "pytest exit code $?" >> "$RES/suite/pytest.txt" ) &
( OUT=$RES/notebooks NOTEBOOKS_TIMEOUT=420 bash tools/device/notebooks.sh > "$RES/notebooks/run.txt" 2>&1 ) &
( OUT=$RES/exercises timeout 300 bash tools/device/exercises.sh > "$RES/exercises/run.txt" 2>&1
  OUT=$RES/kernels SWEEP=0 timeout 150 bash tools/device/numba_kernels.sh > "$RES/kernels/run.txt" 2>&1 ) &
wait

tar -czf "$FINAL_OUT/all.tgz" -C "$RES" .
cat "$RES/info.txt"
echo "== suite";     grep -E "passed|failed|^FAILED|^ERROR|exit code" "$RES/suite/pytest.txt" | tail -25
echo "== notebooks"; cat "$RES/notebooks/notebooks.log" 2>/dev/null | grep -E "^(ok|failed)|ran without|^ " | head -30
echo "== exercises"; grep -E "^(OK|FAIL)" "$RES/exercises/exercises.log" 2>/dev/null
echo "== kernels";   tail -n 25 "$RES/kernels/numba_kernels.txt" 2>/dev/null
