#!/usr/bin/env bash
# scripts/gpu/rows.sh -- the row scheduler's GPU checks, against a Release build at
# ${BUILD:-/tmp/b} (at most ~5 minutes):
#   1. the GPU tests that run generated reductions against the interpreter (test_gpu_fuser,
#      test_reduce_gpu, test_fuzz_gpu, test_segment_gpu, test_segment_examples_gpu);
#   2. scripts/tune_sweep.sh with the defaults against a tuning given in ROWS_AB (default:
#      one block a row, `-DWARP_ROWS=1 -DREGISTER_ROW_ITERS=0`, the scheduler before warp rows)
#      over the norm and softmax suites and the cross entropy forward at their sweep sizes,
#      fuser rows only (ROWS_FILTER, ROWS_ARGS change what runs).
# Logs under ${OUT:-/tmp/out}/rows/.
# shellcheck source=part.sh
. "$(dirname "$0")/part.sh" rows
t0=$SECONDS
timeout 200 ctest --test-dir "$build" -R 'test_gpu_fuser|test_reduce_gpu|test_fuzz_gpu|test_segment_gpu|test_segment_examples_gpu' \
  --output-on-failure >"$out/ctest.log" 2>&1
echo "ctest (reductions on the GPU): exit $? in $((SECONDS - t0)) s: $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -n 1)"
grep -E "Failed|FAIL|mismatch" "$out/ctest.log" | head -n 20
t0=$SECONDS
timeout 330 "$here/scripts/tune_sweep.sh" "$out/sweep" "${ROWS_FILTER:-^((layer_norm|rms_norm|softmax)/.*|cross_entropy/fwd)/fuser/}" \
  warp= "${ROWS_AB:-block=-DWARP_ROWS=1 -DREGISTER_ROW_ITERS=0}" -- ${ROWS_ARGS:---sizes sweep --repetitions 1 --time-limit 0.1} \
  >"$out/sweep.txt" 2>&1
echo "tune_sweep: exit $? in $((SECONDS - t0)) s"
cat "$out/sweep.txt"
