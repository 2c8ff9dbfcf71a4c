#!/usr/bin/env bash
# scripts/gpu/cluster.sh -- the long-row checks on a GPU machine (rows split over a thread-block
# cluster, k_reduction.c CLUSTER_ROWS), against a Release build at ${BUILD:-/tmp/b}, at most
# ~5 minutes:
#   1. the GPU tests that run generated reductions against the interpreter;
#   2. run_suite cross_entropy, fuser rows, every sweep size plus 4093x50257 and 8192x256000,
#      f32 and bf16, each case checked against the interpreter (CLUSTER_SIZES, CLUSTER_ARGS).
# Logs under ${OUT:-/tmp/out}/cluster/.
# shellcheck source=part.sh
. "$(dirname "$0")/part.sh" cluster
t0=$SECONDS
timeout 150 ctest --test-dir "$build" -R 'test_gpu_fuser|test_reduce_gpu|test_fuzz_gpu' --output-on-failure >"$out/ctest.log" 2>&1
echo "ctest (reductions on the GPU): exit $? in $((SECONDS - t0)) s: $(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -n 1)"
grep -E "Failed|FAIL|mismatch" "$out/ctest.log" | head -n 20
t0=$SECONDS
sizes=${CLUSTER_SIZES:-1024x32768,4096x32768,16384x32768,8192x4096,8192x8192,8192x16384,8192x32768,8192x50304,8192x65536,8192x128256,4093x50257,8192x256000}
timeout 280 "$build/suites/run_suite" cross_entropy --sizes "$sizes" --filter '/fuser/' \
  ${CLUSTER_ARGS:---repetitions 1 --time-limit 0.1} --out "$out/run.json" >"$out/run.txt" 2>"$out/run.err"
echo "run_suite cross_entropy (fuser): exit $? in $((SECONDS - t0)) s"
cat "$out/run.txt"
tail -n 5 "$out/run.err"
