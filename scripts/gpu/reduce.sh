#!/usr/bin/env bash
# scripts/gpu/reduce.sh -- the GPU checks of issue 19 items 3 and 4 (engineer "reduce"),
# at most 4 minutes on an H200, against a Release build at ${BUILD:-/tmp/b}:
#   1. test_reduce_gpu --time: the fusions of fuser/tests/data (soft-capped cross
#      entropy, pointwise math under the Numerics rules, column reductions, a bias
#      gradient) against the CPU interpreter, twice each (same bits), then the
#      soft-capped cross entropy at 8192 x 32768 timed (median of 20, CUDA events)
#      beside a device copy of its logits: % of copy (target >= 85% in bf16 and f32);
#   2. run_suite on the soft-capped cross entropy file at 8192 x 32768 with --with-torch
#      (cold L2, % of copy, the speed-up over torch.compile: the issue's target), and
#      the layer_norm and rms_norm suites' bwd cases (now one kernel: dx and the column
#      gradients) at their default sizes;
#   3. scripts/inst_count.sh of the soft-capped kernels (SASS: cuobjdump is there).
# The seed suites' own checks (test_gpu_fuser, test_plan_compile), which the codegen
# changes touch, run in scripts/gpu_session.sh with every gpu and compile test.
# Logs: ${OUT:-/tmp/out}/reduce/reduce.log; the summary table is the last lines.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-/tmp/b}
out=${OUT:-/tmp/out}/reduce
mkdir -p "$out"
log=$out/reduce.log
: >"$log"
export FUSER_CACHE_DIR=${FUSER_CACHE_DIR:-$out/cache}
rows=()
step() { # name, command...
  local name=$1; shift
  echo "==== $name: $*" >>"$log"
  local t0=$SECONDS
  timeout 200 "$@" >>"$log" 2>&1
  local rc=$?
  rows+=("$(printf '%-34s rc=%-3s %4ss' "$name" "$rc" "$((SECONDS - t0))")")
}
step test_reduce_gpu env FUSER_TEST_DATA="$here/fuser/tests/data" "$build/fuser/tests/test_reduce_gpu" --time
step "run_suite softcap --with-torch" env RUN_SUITE_BUILD_DIR="$build" "$here/run_suite" "$here/fuser/tests/data/softcap_cross_entropy.fusion" \
  --sizes N=8192,V=32768 --dtype bf16,f32 --with-torch --repetitions 3 --time-limit 0.3
step "run_suite norm bwd" env RUN_SUITE_BUILD_DIR="$build" "$here/run_suite" layer_norm --filter '/bwd/' --repetitions 3 --time-limit 0.3
step "run_suite rms bwd" env RUN_SUITE_BUILD_DIR="$build" "$here/run_suite" rms_norm --filter '/bwd/' --repetitions 3 --time-limit 0.3
for dt in bf16 f32; do
  step "inst_count softcap $dt" "$here/scripts/inst_count.sh" "$build/fuser/fuser" "$here/fuser/tests/data/softcap_cross_entropy.fusion" --set DT=$dt
done
echo
echo "reduce.sh summary (log: $log)"
printf '%s\n' "${rows[@]}"
grep -E '^time softcap|FAIL|per element|softcap_cross_entropy/|/bwd/' "$log" | head -n 30
