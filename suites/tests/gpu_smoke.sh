#!/usr/bin/env bash
# gpu_smoke.sh -- one call on a GPU machine that validates the harness: a
# Release build of what the suites need, the harness's GPU test, and small
# runs of each suite. Logs and run files go to $OUT (default /tmp/gpu_smoke);
# the last lines printed are the tables.
#
#   suites/tests/gpu_smoke.sh            (from the repository root)
# BUILD=/tmp/b picks the build directory; PLAN=quick runs only the test and a
# small qkv case, PLAN=all (the default) every suite at its default sizes too.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/gpu_smoke}
build=${BUILD:-/tmp/b}
mkdir -p "$out"
log="$out/run.log"
: > "$log"
say() { echo "== $*" | tee -a "$log"; }

say "machine"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,power.limit,temperature.gpu \
  --format=csv 2>&1 | tee -a "$log"

say "build ($build)"
t0=$(date +%s)
if ! { cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$build" -j "$(nproc)" --target run_suite test_harness_gpu; } > "$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
echo "built in $(( $(date +%s) - t0 )) s" | tee -a "$log"
rm -f "$out/build.log" # at most 8 files come back
bin="$build/suites/run_suite"

say "test_harness_gpu"
FUSEBENCH_SUITES_DIR="$PWD/suites" RUN_SUITE_BIN="$bin" timeout 120 "$build/suites/tests/test_harness_gpu" \
  > "$out/test_harness_gpu.log" 2>&1
echo "test_harness_gpu exit $?" | tee -a "$log"
grep -vE "^\[[0-9]+/[0-9]+\]" "$out/test_harness_gpu.log" | tail -45 | tee -a "$log"
[ -f test_harness_gpu.json ] && mv test_harness_gpu.json "$out/"

run() { # seconds, name, then run_suite's arguments
  local limit=$1 name=$2; shift 2
  say "run_suite $*"
  local t0=$(date +%s)
  timeout "$limit" "$bin" "$@" --out "$out/$name.json" 2> "$out/$name.err" | tee -a "$log"
  echo "exit ${PIPESTATUS[0]} after $(( $(date +%s) - t0 )) s" | tee -a "$log"
  grep -E "note:|copy bandwidth|FAILED" "$out/$name.err" | tee -a "$log"
}
run 60 qkv_small qkv_split --sizes 16x128x3072 --dtype f32
if [ "${PLAN:-all}" = all ]; then
  run 190 all all --repetitions 2 --time-limit 0.5
  run 40 qkv_hot qkv_split --mode hot --repetitions 2 --time-limit 0.5
fi
cat "$out"/*.err > "$out/progress.log" 2>/dev/null
rm -f "$out"/*.err
say "done"
