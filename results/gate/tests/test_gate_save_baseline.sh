#!/bin/sh
# test_gate_save_baseline.sh -- scripts/save_baseline, the contract that
# `./run_suite ... --save-baseline` relies on: a run file is copied unchanged
# to RESULTS/baselines/<gpu_key>.json and RESULTS/runs/<date>_<commit>_<gpu_key>.json.gz (compressed)
# (--history-only: only the latter); bad input exits 2 and writes nothing.
# scripts/compare then gates a run against the saved baseline.
# Environment (set by CTest): GATE_SYNTH, FUSEBENCH_GATE_DIR, FUSEBENCH_ROOT.
# shellcheck disable=SC2034 # variables read by check()'s eval
set -u
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2" >&2; fail=1; fi; }
root=${FUSEBENCH_ROOT:?}
synth=${GATE_SYNTH:?}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_save.XXXXXX")
res=$tmp/results

"$synth" "$tmp/run.json" --date 2025-05-06T07:08:09+02:00 --commit 1b454c5 || exit 1
out=$("$root/scripts/save_baseline" "$tmp/run.json" --results "$res" 2> "$tmp/err")
check '[ $? = 0 ]' "save_baseline failed: $(cat "$tmp/err")"
check "cmp -s '$tmp/run.json' '$res/baselines/nvidia_h200.json'" "the baseline is the run, unchanged"
check "gzip -dc '$res/runs/2025-05-06T050809Z_1b454c5_nvidia_h200.json.gz' | cmp -s '$tmp/run.json' -" \
    "the run is kept, gzip-compressed, as <UTC date>_<commit>_<gpu_key>.json.gz"
check "[ \$(wc -c < '$res/runs/2025-05-06T050809Z_1b454c5_nvidia_h200.json.gz') -lt \$((\$(wc -c < '$tmp/run.json') / 3)) ]" \
    "the stored run is at most a third of the plain file"
"$root/scripts/compare" "$res/runs/2025-05-06T050809Z_1b454c5_nvidia_h200.json.gz" "$tmp/run.json" -q
check "[ $? = 0 ]" "the gate reads the compressed run as the plain one"
check "\"$root/scripts/save_baseline\" --help | grep -q 'usage: scripts/save_baseline' && ! \"$root/scripts/save_baseline\" --help | grep -q 'set -eu'" \
    "--help prints help, not the script"
check "\"$root/scripts/save_baseline\" --version | grep -q '(fusebench) '" "--version"
check "printf '%s\n' \"\$out\" | grep -qx '$res/baselines/nvidia_h200.json'" "the paths written are printed"
check '[ -z "$(ls -a "$res/baselines" | grep tmp)" ]' "no temporary file left"

# scripts/table renders a stored (compressed) run as run_suite --format md|csv does.
"$synth" "$tmp/tfail.json" --fail 'qkv_split/*' || exit 1
"$root/scripts/save_baseline" "$tmp/tfail.json" --history-only --results "$tmp/tres" > "$tmp/tpaths" 2> /dev/null
stored=$(grep 'json.gz$' "$tmp/tpaths")
"$root/scripts/table" "$stored" > "$tmp/t.md" 2> "$tmp/err"
check '[ $? = 0 ]' "scripts/table: $(cat "$tmp/err")"
check "grep -q '^| case | status | reps | median (us) | noise | GB/s | % copy | kernels | launches | vs torch.compile |' '$tmp/t.md'" "the table's header"
check "grep -q '^| qkv_split/fwd/fuser/bf16/12x1024x768 | failed' '$tmp/t.md'" "a failed case reads failed"
check "grep -q '^| embedding/fwd/fuser/bf16/8192x768 | ok | 10 | ' '$tmp/t.md'" "an ok case with its repetitions"
"$root/scripts/table" "$stored" --format csv > "$tmp/t.csv" 2> "$tmp/err"
check "head -n 1 '$tmp/t.csv' | grep -q '^name,suite,case,variant,dtype,size,status,reps,median_us,noise_pct,gbps,copy_pct,kernels,launches,speedup_vs_torch_compile,error\$'" "the CSV header"
check "[ \$(wc -l < '$tmp/t.csv') = \$((\$(grep -c '^| [a-z]' '$tmp/t.md') - 1 + 1)) ]" "one CSV row per case"
"$root/scripts/table" "$stored" --format xml > /dev/null 2>&1
check '[ $? = 2 ]' "scripts/table --format xml exits 2"
"$root/scripts/table" "$tmp/broken-nothere.json" > /dev/null 2> "$tmp/err"
check "[ \$? = 2 ] && grep -q 'broken-nothere.json' '$tmp/err'" "scripts/table on a missing file exits 2 naming it"

# The gate reads what was saved: the same run is SAME everywhere (exit 0); a
# slower one regresses (exit 1).
"$root/scripts/compare" "$res/baselines/nvidia_h200.json" "$tmp/run.json" -q
check '[ $? = 0 ]' "a run compared with itself passes"
"$synth" "$tmp/slow.json" --seed 2 --scale 1.1 --date 2025-05-07T07:08:09Z --commit 2c55d6e || exit 1
"$root/scripts/compare" "$res/baselines/nvidia_h200.json" "$tmp/slow.json" -q
check '[ $? = 1 ]' "a 10% slower run regresses"

# --history-only keeps the baseline as it was.
"$root/scripts/save_baseline" "$tmp/slow.json" --history-only --results "$res" > /dev/null 2> "$tmp/err"
check '[ $? = 0 ]' "save_baseline --history-only: $(cat "$tmp/err")"
check "cmp -s '$tmp/run.json' '$res/baselines/nvidia_h200.json'" "--history-only leaves the baseline alone"
check "[ -f '$res/runs/2025-05-07T070809Z_2c55d6e_nvidia_h200.json.gz' ]" "--history-only keeps the run"
check '[ "$(ls "$res/runs" | wc -l)" = 2 ]' "two stored runs"

# A run with failed cases is saved, with a warning.
"$synth" "$tmp/failing.json" --fail 'qkv_split/*' --gpu "NVIDIA H100 80GB HBM3" || exit 1
"$root/scripts/save_baseline" "$tmp/failing.json" --results "$res" > /dev/null 2> "$tmp/err"
check '[ $? = 0 ] && grep -q "4 case(s) failed" "$tmp/err"' "failed cases are warned about"
check "[ -f '$res/baselines/nvidia_h100_80gb_hbm3.json' ]" "one baseline per GPU model"

# Bad input: exit 2, a message, nothing written.
before=$(ls -R "$res" | wc -l)
expect2() {
    "$@" > /dev/null 2> "$tmp/err"
    rc=$?
    check "[ $rc = 2 ] && [ -s '$tmp/err' ]" "exit 2 and a message from: $* (got $rc: $(cat "$tmp/err"))"
}
"$synth" "$tmp/cpu.json" --gpu none || exit 1
"$synth" "$tmp/v2.json" --schema fusebench-run/2 || exit 1
printf '{"context": ' > "$tmp/broken.json"
expect2 "$root/scripts/save_baseline" "$tmp/cpu.json" --results "$res"
check "grep -q 'measured on no GPU' '$tmp/err'" "a run without a GPU is refused as such"
expect2 "$root/scripts/save_baseline" "$tmp/v2.json" --results "$res"
expect2 "$root/scripts/save_baseline" "$tmp/broken.json" --results "$res"
expect2 "$root/scripts/save_baseline" "$tmp/nothere.json" --results "$res"
expect2 "$root/scripts/save_baseline" --results "$res"
expect2 "$root/scripts/save_baseline" "$tmp/run.json" --bogus
check '[ "$(ls -R "$res" | wc -l)" = "$before" ]' "nothing written on bad input"

if [ "$fail" = 0 ]; then rm -rf "$tmp"; echo "test_gate_save_baseline: ok"; else echo "files kept in $tmp" >&2; fi
exit "$fail"
