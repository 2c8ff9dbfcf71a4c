#!/usr/bin/env bash
# scripts/gpu/verify.sh -- a short GPU check of generated reductions (at most ~2 minutes), for a
# call that builds only what it needs (GPU_SESSION_TARGETS="run_suite fuser_cli fuser_fuzz
# test_reduce_gpu"), against a Release build at ${BUILD:-/tmp/b}:
#   1. test_fuzz_gpu and test_reduce_gpu (the 200 random fusions and the reduction fusions of
#      fuser/tests/data against the interpreter);
#   2. the fuser rows of VERIFY_SUITES (default: softmax layer_norm rms_norm) at their default
#      sizes, both dtypes, every case checked (VERIFY_ARGS, default --repetitions 3
#      --time-limit 0.1).
# Logs under ${OUT:-/tmp/out}/verify/.
# shellcheck source=part.sh
. "$(dirname "$0")/part.sh" verify
t0=$SECONDS
timeout 90 ctest --test-dir "$build" -R 'test_fuzz_gpu|test_reduce_gpu' --output-on-failure >"$out/ctest.log" 2>&1
echo "ctest: exit $? in $((SECONDS - t0)) s: $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -n 1)"
grep -E "Failed|FAIL|mismatch" "$out/ctest.log" | head -n 20
for s in ${VERIFY_SUITES:-softmax layer_norm rms_norm}; do
  timeout 60 "$build/suites/run_suite" "$s" --filter '/fuser/' ${VERIFY_ARGS:---repetitions 3 --time-limit 0.1} \
    >"$out/$s.txt" 2>"$out/$s.err"
  echo "run_suite $s: exit $?"
  grep -E "^$s/" "$out/$s.txt"
done
