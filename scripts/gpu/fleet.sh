#!/bin/sh
# scripts/gpu/fleet.sh -- the GPU checks of the floor per case (issue 22 item 1)
# and of the bandwidth plots drawn from a real run (item 3), in under 2 minutes.
#   BUILD=/tmp/b OUT=/tmp/out scripts/gpu/fleet.sh
# Needs a Release build at $BUILD (cmake -S . -B $BUILD -DCMAKE_BUILD_TYPE=Release
# && cmake --build $BUILD -j). Writes $OUT/fleet/fleet.log and $OUT/fleet/run.json
# (and $OUT/fleet/plots/ where gnuplot and the gate's fusebench-json2tsv exist).
#   1. test_harness_gpu: every timed case has floor_us and floor_fraction =
#      floor_us / real_time; a 1 GiB floor copy runs near the copy bandwidth.
#   2. run_suite: QKV split 16x128x3072 and cross entropy fwd bf16 8192x32768,
#      the table's % floor beside % copy, and the run JSON's floor keys.
#   3. scripts/plot bandwidth of that run (skipped with a note without gnuplot).
# The last lines are a summary table.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-/tmp/b}
out=${OUT:-/tmp/out}/fleet
mkdir -p "$out"
log=$out/fleet.log
: > "$log"
say() { echo "$*" | tee -a "$log"; }
[ -x "$build/suites/run_suite" ] || { say "fleet: no run_suite in $build (build it first)"; exit 2; }
export FUSER_CACHE_DIR=${FUSER_CACHE_DIR:-/tmp/fuser-cache-fleet}

say "== 1. test_harness_gpu (floor counters, floor copy)"
t0=$(date +%s)
harness=FAIL
if timeout 90 ctest --test-dir "$build" -R '^test_harness_gpu$' --output-on-failure >> "$log" 2>&1; then harness=ok; fi
grep -E '^floor:|copy bandwidth' "$log" | tail -n 2 | tee -a "$log"
say "test_harness_gpu: $harness ($(($(date +%s) - t0)) s)"

say "== 2. run_suite: qkv_split 16x128x3072, cross_entropy fwd bf16 8192x32768"
t0=$(date +%s)
filter='^(qkv_split/fwd/[^/]+/[^/]+/16x128x3072|cross_entropy/fwd/[^/]+/bf16/8192x32768)$'
"$build/suites/run_suite" all --filter "$filter" --repetitions 2 --time-limit 0.3 --out "$out/run.json" \
    > "$out/table.txt" 2>> "$log"
rs=$?
cat "$out/table.txt" >> "$log"
cat "$out/table.txt"
say "run_suite: exit $rs ($(($(date +%s) - t0)) s)"
header=no; grep -q '% copy  % floor' "$out/table.txt" && header=yes
floors=$(grep -c '"floor_fraction"' "$out/run.json" 2>/dev/null)
floor_us=$(grep -c '"floor_us"' "$out/run.json" 2>/dev/null)

say "== 3. scripts/plot bandwidth"
plots="skipped"
if ! command -v gnuplot > /dev/null 2>&1; then
    say "no gnuplot on this machine: the plots are skipped (render them elsewhere: scripts/plot bandwidth $out/run.json)"
elif [ ! -x "$build/results/gate/fusebench-json2tsv" ]; then
    say "no fusebench-json2tsv in $build (the gate needs cJSON): the plots are skipped"
elif FUSEBENCH_BUILD_DIR=$build "$root/scripts/plot" bandwidth "$out/run.json" --out "$out/plots" --format png >> "$log" 2>&1; then
    plots="$(ls "$out/plots" | wc -l) files in $out/plots"
else
    plots="FAILED (see $log)"
fi

say "== summary"
say "check                              result"
say "test_harness_gpu (floor asserts)   $harness"
say "run_suite exit status              $rs"
say "table has a % floor column         $header"
say "run JSON entries with floor_us     $floor_us"
say "run JSON entries w/ floor_fraction $floors"
say "bandwidth plots                    $plots"
printf '%-26s %-10s %-5s %-12s %10s %8s %8s\n' case variant dtype size "time us" "% copy" "% floor" | tee -a "$log"
awk '$1 ~ /\// && NF >= 11 { printf "%-26s %-10s %-5s %-12s %10s %8s %8s\n", $1, $2, $3, $4, $7, $10, $11 }' \
    "$out/table.txt" | tee -a "$log"
