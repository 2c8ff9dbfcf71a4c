#!/usr/bin/env bash
# scripts/gpu/segment.sh -- the segmenter's GPU checks (issue 19 items 1, 2, 5,
# 6; issue 21 items 8, 9), for the lead's H200 session. At most ~4 minutes.
#
#   BUILD=/tmp/b OUT=/tmp/out scripts/gpu/segment.sh
#
# Assumes a Release build at $BUILD. Writes $OUT/segment/segment.log (all
# output) and prints a summary table as its last lines. Exit 1 if any check
# failed.
set -uo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-/tmp/b}
out=${OUT:-/tmp/out}/segment
mkdir -p "$out"
log=$out/segment.log
: > "$log"
export FUSER_CACHE_DIR=${FUSER_CACHE_DIR:-$out/cache}
fuser=$build/fuser/fuser
fuzz=$build/fuser/fuser-fuzz
declare -a rows

step() { # NAME COMMAND...: runs it, logs it, records PASS/FAIL/SKIP, the time and
  # the largest max_rel_error a --check printed
  local name=$1; shift
  local t0=$SECONDS rc one=$out/step.txt
  echo "==== $name: $*" >> "$log"
  "$@" > "$one" 2>&1
  rc=$?
  cat "$one" >> "$log"
  local verdict=PASS
  [ $rc = 77 ] && verdict=SKIP
  [ $rc != 0 ] && [ $rc != 77 ] && verdict="FAIL(rc=$rc)"
  local worst
  worst=$(awk -F'max_rel_error=' 'NF > 1 { if ($2 + 0 > m) m = $2 + 0; seen = 1 } END { if (seen) printf "max_rel_error=%.3g", m }' "$one")
  rows+=("$(printf '%-36s %-10s %4ss  %s' "$name" "$verdict" $((SECONDS - t0)) "$worst")")
  rm -f "$one"
}

# 1. the ctest gpu tests of this work
step "ctest segment gpu" ctest --test-dir "$build" --output-on-failure \
  -R '^(test_segment_gpu|test_segment_examples_gpu)$'

# 2. 200 random fusions on the GPU against the interpreter, with the
# kernel-count distribution beside the lower bound; the fusions are also
# written out for torch.compile's counts
step "fuzz 200 gpu (seed 7)" "$fuzz" check --count 200 --seed 7 --device gpu
step "fuzz write 200 (seed 7)" "$fuzz" write --count 200 --seed 7 --out "$out/fusions"

# 3. the issue's examples with --check (the interpreter beside the GPU)
for f in "$here"/fuser/tests/segment/*.fusion; do
  step "check $(basename "$f" .fusion)" "$fuser" run "$f" --device gpu --check
done
step "check embedding_fwd T=0" "$fuser" run "$here/suites/embedding/embedding_fwd.fusion" --set T=0 --device gpu --check
step "check embedding_bwd T=0" "$fuser" run "$here/suites/embedding/embedding_bwd.fusion" --set T=0 --device gpu --check
step "run_suite cross_entropy 1x1" "$build/suites/run_suite" cross_entropy --sizes 1x1 --repetitions 1 --time-limit 0.2
step "bf16 atomic embedding_bwd" "$fuser" run "$here/suites/embedding/embedding_bwd.fusion" --set DT=bf16 \
  --scatter atomic --device gpu --check

# --check prints max_rel_error (f32 should be <= 1e-5, bf16 <= 5e-2) but does
# not fail on it: the summary shows the largest of each run
echo "---- fuzz distribution (seed 7; kernels beside the lower bound) ----"
awk '/^==== fuzz 200 gpu/ { on = 1; next } /^====/ { on = 0 } on' "$log" | grep -v "^ops generated" | tail -6
echo "---- summary (log: $log) ----"
printf '%s\n' "${rows[@]}"
! printf '%s\n' "${rows[@]}" | grep -q FAIL
