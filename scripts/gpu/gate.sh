#!/usr/bin/env bash
# scripts/gpu/gate.sh -- issue 20's "Done when" on the H200, in at most ~6 minutes:
#   1. ci/nightly with an empty results directory: no baseline yet, the run becomes it (exit 0);
#   2. ci/nightly again, gated against the first run: nothing slower (exit 0);
#   3. a detuned build (-DPW_THREADS=32: pointwise blocks of 32 threads, as
#      scripts/tune_sweep.sh builds it) through ci/nightly: exit 1, naming the
#      slower cases;
#   4. scripts/regressions over the three stored runs: the step at the detuned run.
# What it covers: the pointwise cases (qkv_split, embedding forward: the kernels
# PW_THREADS changes) of the fuser and the reference, both dtypes, 5 repetitions
# of at most 0.3 s each (ci/nightly --filter --repetitions --time-limit); not
# PyTorch (informational rows), not the reductions or the scatter.
#   BUILD=/tmp/b OUT=/tmp/out scripts/gpu/gate.sh
# Needs a Release build at $BUILD with the gate (cJSON and zlib headers when it
# was configured: libcjson-dev, zlib1g-dev); says so and exits 2 otherwise.
# Logs: $OUT/gate/gate.log (everything) and $OUT/gate/reports.md (the gate's
# three reports and the regressions); the last lines are a summary table.
set -u
case "${1:-}" in
    -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    --version) echo "gate.sh (fusebench) $(cat "$(dirname "$0")/../../VERSION")"; exit 0 ;;
esac
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-/tmp/b}
out=${OUT:-/tmp/out}/gate
work=${GATE_WORK:-/tmp/gate-gpu}
filter=${GATE_FILTER:-'^(qkv_split|embedding/fwd)/.*/(fuser|reference)/'}
reps=${GATE_REPS:-5}
detune=${GATE_DETUNE:--DPW_THREADS=32}
mkdir -p "$out"
log=$out/gate.log
reports=$out/reports.md
: > "$log"
: > "$reports"
say() { echo "gate.sh: $*" | tee -a "$log"; }
start=$(date +%s)

[ -x "$build/suites/run_suite" ] || { say "no $build/suites/run_suite (build first)"; exit 2; }
gate_dir=$build/results/gate
if [ ! -x "$gate_dir/fusebench-compare" ]; then
    say "the build has no gate (configured without cJSON or zlib?); building it on its own"
    if cmake -S "$here/results/gate" -B "$work/gate-only" -DCMAKE_BUILD_TYPE=Release >> "$log" 2>&1 &&
        cmake --build "$work/gate-only" -j "$(nproc)" >> "$log" 2>&1; then
        gate_dir=$work/gate-only
    else
        say "cannot build the gate here: it needs libcjson-dev and zlib1g-dev (see $log)"
        exit 2
    fi
fi
export FUSEBENCH_GATE_DIR=$gate_dir
rm -rf "$work/results" "$work/n1" "$work/n2" "$work/n3"
mkdir -p "$work/results"

nightly() { # NAME BUILD_DIR CACHE
    local name=$1 b=$2
    FUSER_CACHE_DIR=$3 "$here/ci/nightly" --skip-setup --build-dir "$b" --results "$work/results" \
        --out "$work/$name" --filter "$filter" --repetitions "$reps" --time-limit 0.3 >> "$log" 2>&1
}
verdicts() { # the counts line of a gate report
    [ -f "$1" ] && sed -n 's/^- Verdicts: //p' "$1" || echo "-"
}

say "1. first night (no baseline): $(date -u +%T)"
nightly n1 "$build" "$work/cache"
rc1=$?
say "2. second night against the first: $(date -u +%T)"
nightly n2 "$build" "$work/cache"
rc2=$?
{ echo "# 2. the second night against the first"; cat "$work/n2/gate.md" 2>/dev/null; echo; } >> "$reports"

say "3. detuned build ($detune): $(date -u +%T)"
detuned=$work/b-detuned
rc3=build
if { cmake -S "$here" -B "$detuned" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$detune" &&
     cmake --build "$detuned" -j "$(nproc)" --target run_suite; } >> "$log" 2>&1; then
    nightly n3 "$detuned" "$work/cache-detuned"
    rc3=$?
fi
{ echo "# 3. the detuned night ($detune) against the first"; cat "$work/n3/gate.md" 2>/dev/null; echo; } >> "$reports"
slower=$(grep -c '^- `.*`: \*\*SLOWER\*\*' "$work/n3/gate.md" 2>/dev/null || echo 0)

say "4. scripts/regressions over the stored runs: $(date -u +%T)"
"$here/scripts/regressions" --runs "$work/results/runs" --json "$work/regressions.json" \
    > "$work/regressions.md" 2>> "$log"
rc4=$?
{ echo "# 4. scripts/regressions over the three runs"; cat "$work/regressions.md"; } >> "$reports"
n3commit=$(sed -n 's/^- Run: .*(commit \([^,]*\),.*/\1/p' "$work/n3/gate.md" 2>/dev/null | head -n 1)
steps=$(grep -c '^| .*| yes | ' "$work/regressions.md" 2>/dev/null || echo 0)

ok() { [ "$1" = "$2" ] && echo ok || echo FAIL; }
elapsed=$(( $(date +%s) - start ))
say "done in ${elapsed}s; reports in $reports"
{
    echo
    echo "| step | exit | expected | result | verdicts / what |"
    echo "|---|---|---|---|---|"
    echo "| 1. first night, no baseline | $rc1 | 0 | $(ok "$rc1" 0) | saved as the baseline |"
    echo "| 2. second night vs first | $rc2 | 0 | $(ok "$rc2" 0) | $(verdicts "$work/n2/gate.md") |"
    echo "| 3. detuned ($detune) vs first | $rc3 | 1 | $(ok "$rc3" 1) | $slower gated cases SLOWER: $(verdicts "$work/n3/gate.md") |"
    echo "| 4. regressions over 3 runs | $rc4 | 0 | $(ok "$rc4" 0) | $steps gated steps |"
    echo
    echo "slower cases named by the detuned night:"
    grep '^- `.*`: \*\*SLOWER\*\*' "$work/n3/gate.md" 2>/dev/null | cut -c1-150 | head -n 30
} | tee -a "$log"
[ "$rc1" = 0 ] && [ "$rc2" = 0 ] && [ "$rc3" = 1 ] && [ "$rc4" = 0 ]
