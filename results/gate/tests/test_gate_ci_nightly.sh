#!/bin/sh
# test_gate_ci_nightly.sh -- ci/nightly end to end with a stand-in run_suite
# (fake_run_suite.sh writes synthetic runs): the first night saves the
# baseline and passes; a slower night fails with the gate's status 1 and keeps
# its run and reports; --sharded runs one suite per "GPU" through CTest's
# resource allocation (CUDA_VISIBLE_DEVICES lists the devices; each suite sees
# one) and merges the suites into one run; a crashing suite fails the night.
# Environment (set by CTest): GATE_SYNTH, FUSEBENCH_GATE_DIR, FUSEBENCH_ROOT.
# shellcheck disable=SC2034 # variables read by check()'s eval
set -u
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2" >&2; fail=1; fi; }
root=${FUSEBENCH_ROOT:?}
: "${GATE_SYNTH:?}"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_nightly.XXXXXX")
res=$tmp/results
FUSEBENCH_RUN_SUITE=$root/results/gate/tests/fake_run_suite.sh
FAKE_LOG=$tmp/fake.log
export FUSEBENCH_RUN_SUITE FAKE_LOG
unset OMP_NUM_THREADS # the sharded night sets it
unset GITHUB_STEP_SUMMARY CUDA_VISIBLE_DEVICES 2>/dev/null || true
nightly() { "$root/ci/nightly" --skip-setup --results "$res" "$@" > "$tmp/stdout" 2> "$tmp/stderr"; }

# Night 1: no baseline yet.
FAKE_DATE=2025-06-01T01:00:00Z FAKE_COMMIT=aaa0001 nightly --out "$tmp/n1"
check '[ $? = 0 ]' "the first night passes: $(cat "$tmp/stderr")"
check "grep -q 'no baseline for NVIDIA H200' '$tmp/stderr'" "it says there was no baseline"
check "[ -f '$res/baselines/nvidia_h200.json' ]" "the run becomes the baseline"
check "[ -f '$res/runs/2025-06-01T010000Z_aaa0001_nvidia_h200.json.gz' ]" "the run is kept (compressed)"
# (the plots need gnuplot: scripts/setup installs it; where it is absent they are not checked)
have_gnuplot=false
command -v gnuplot >/dev/null 2>&1 && have_gnuplot=true
$have_gnuplot || echo "note: gnuplot is not installed: the plots are not checked"
$have_gnuplot && check "[ -s '$tmp/n1/plots/bandwidth_cross_entropy.png' ]" "bandwidth plots are drawn"

# Night 2: the same speed: passes, reports written.
FAKE_ARGS_LOG=$tmp/args.log FAKE_SEED=2 FAKE_DATE=2025-06-02T01:00:00Z FAKE_COMMIT=aaa0002 nightly --out "$tmp/n2" \
    --repetitions 8 --filter qkv --time-limit 0.5
check '[ $? = 0 ]' "an unchanged night passes: $(cat "$tmp/stderr")"
check "grep -q 'Regression gate: passed' '$tmp/stdout'" "the gate's report is printed"
check "[ -s '$tmp/n2/gate.md' ] && [ -s '$tmp/n2/gate.json' ] && [ -s '$tmp/n2/gate.tsv' ]" "reports are kept"
check "grep -q '\"n_run\":	8,' '$tmp/n2/gate.json' || grep -q '\"n_run\": 8,' '$tmp/n2/gate.json'" "--repetitions reaches run_suite (the gate's units)"
check "grep -q -- '--repetitions 8 --filter qkv --time-limit 0.5' '$tmp/args.log'" "--filter and --time-limit reach run_suite"

# Night 3: qkv_split 8% slower: exit 1, history plots of the regressed cases.
FAKE_ARGS_LOG=$tmp/args3.log FAKE_SEED=3 FAKE_SCALE=1.08 FAKE_SLOW='qkv_split/*' FAKE_DATE=2025-06-03T01:00:00Z FAKE_COMMIT=aaa0003 nightly --out "$tmp/n3"
check '[ $? = 1 ]' "a slower night exits 1: $(cat "$tmp/stderr")"
check "grep -q -- '--repetitions 5\$' '$tmp/args3.log'" "the nightly's default is 5 repetitions"
check "grep -q 'Regression gate: FAILED' '$tmp/n3/gate.md'" "the report says FAILED"
check "[ -f '$res/runs/2025-06-03T010000Z_aaa0003_nvidia_h200.json.gz' ]" "a failing run is kept too"
$have_gnuplot && check "[ -s '$tmp/n3/plots/history_qkv_split_fwd_fuser_bf16_12x1024x768.png' ]" "history plots of regressed cases"
$have_gnuplot && check '[ "$(ls "$tmp/n3/plots" | grep -c "^history_.*png$")" = 2 ]' "only of the gated regressed cases"
check "grep -q '4 SLOWER' '$tmp/n3/gate.md'" "the 4 qkv_split cases are SLOWER"
check "grep -q 'informational (not gated)' '$tmp/n3/gate.md'" "the torch_compile ones are informational"
check "grep -q 'qkv_split/fwd/fuser/bf16/12x1024x768.: \*\*SLOWER' '$tmp/n3/gate.md'" "the gated ones are named"
check "gzip -dc '$res/runs/2025-06-01T010000Z_aaa0001_nvidia_h200.json.gz' | cmp -s '$res/baselines/nvidia_h200.json' -" \
    "the baseline is not replaced by a nightly"

# Only torch rows slower: reported, and the night passes.
FAKE_SEED=6 FAKE_SCALE=1.2 FAKE_SLOW='*/torch_*' FAKE_DATE=2025-06-03T02:00:00Z FAKE_COMMIT=aaa0006 nightly --out "$tmp/n3t"
check '[ $? = 0 ]' "torch rows slower do not fail the night: $(cat "$tmp/stderr")"
FAKE_SEED=6 FAKE_SCALE=1.2 FAKE_SLOW='*/torch_*' FAKE_DATE=2025-06-03T03:00:00Z FAKE_COMMIT=aaa0006 \
    nightly --out "$tmp/n3u" --gate-args "--gate-variants all"
check '[ $? = 1 ]' "unless --gate-args '--gate-variants all' says so"
check "'$root/ci/nightly' --help | grep -q 'usage: ci/nightly' && ! '$root/ci/nightly' --help | grep -q 'set -eu'" "--help is help"
check "'$root/ci/nightly' --version | grep -q 'nightly (fusebench)'" "--version"

# Sharded: three devices, one per suite at a time, merged into one run.
: > "$FAKE_LOG"
CUDA_VISIBLE_DEVICES=0,1,2 FAKE_SEED=4 FAKE_DATE=2025-06-04T01:00:00Z FAKE_COMMIT=aaa0004 \
    nightly --sharded --out "$tmp/n4"
check '[ $? = 0 ]' "a sharded night passes: $(cat "$tmp/stderr")"
check "[ -s '$tmp/n4/shards/resources.json' ]" "a resource spec is written"
check "grep -q '\"id\": \"2\", \"slots\": 1' '$tmp/n4/shards/resources.json'" "one gpus slot per device"
nsuites=$(ls -d "$root"/suites/*/suite.txt | wc -l)
check '[ "$(wc -l < "$FAKE_LOG")" = "$nsuites" ]' "every suite folder ran ($nsuites): $(cat "$FAKE_LOG")"
check '! grep -q unset "$FAKE_LOG"' "every suite got a GPU: $(cat "$FAKE_LOG")"
check '[ "$(cut -d" " -f2 "$FAKE_LOG" | sort -u | wc -l)" -ge 2 ]' "suites ran on different GPUs: $(cat "$FAKE_LOG")"
check "! grep -q 'not in the run' '$tmp/n4/gate.md'" "the merged run has every suite"
check "grep -q '\"shards\"' '$tmp/n4/run.json'" "the merged run lists its shards"
threads=$(( $(getconf _NPROCESSORS_ONLN) / 3 )); [ "$threads" -ge 1 ] || threads=1
check '[ "$(grep -c " omp=$threads\$" "$FAKE_LOG")" = "$nsuites" ]' \
    "each of 3 shards gets a third of the cores for its checks (omp=$threads): $(cat "$FAKE_LOG")"

# Sharded with UUIDs, one device for two suites (one at a time), one suite crashing.
: > "$FAKE_LOG"
CUDA_VISIBLE_DEVICES=GPU-8c4a1b2e-0000 FAKE_FAIL_SUITE=embedding FAKE_SEED=5 FAKE_DATE=2025-06-05T01:00:00Z \
    nightly --sharded --suites "qkv_split embedding" --out "$tmp/n5"
check '[ $? = 1 ]' "a crashing suite fails the night: $(cat "$tmp/stderr")"
check "grep -q 'qkv_split GPU-8c4a1b2e-0000' '$FAKE_LOG'" "a UUID is passed through as CUDA_VISIBLE_DEVICES"
check "grep -q 'qkv_split GPU-8c4a1b2e-0000 omp=$(getconf _NPROCESSORS_ONLN)\$' '$FAKE_LOG'" \
    "one device: its shard's checks get every core: $(cat "$FAKE_LOG")"
check "grep -q 'suite embedding wrote no run file' '$tmp/stderr'" "the missing suite is named"

# No GPU for --sharded: exit 2.
PATH=/usr/bin:/bin nightly --sharded --out "$tmp/n6"
rc=$?
if command -v nvidia-smi >/dev/null 2>&1; then :; else
    check '[ $rc = 2 ] && grep -q "found no GPU" "$tmp/stderr"' "--sharded without GPUs exits 2: $(cat "$tmp/stderr")"
fi

if [ "$fail" = 0 ]; then rm -rf "$tmp"; echo "test_gate_ci_nightly: ok"; else echo "files kept in $tmp" >&2; fi
exit "$fail"
