#!/bin/sh
# test_gate_regressions.sh -- scripts/regressions (fusebench-history):
#   - a synthetic history of 9 runs, embedding 12% slower from the 6th on
#     (commit c000006), one run of another GPU: steps on every embedding case
#     at c000006 and nowhere else; the other GPU is left out; JSON and Markdown;
#   - the stored H200 runs (results/runs): the steps docs/perf.md describes:
#     the vector atomics of the atomic scatter (f45d569, v10) on all four
#     bwd_atomic fuser rows, the batched hit rows of the deterministic scatter
#     (00368d9, v10) and its slot walk (b6455c8, v11) on its fuser rows; no
#     step on any reference row (hand-written kernels, unchanged);
#   - bad input exits 2 naming the file.
# Environment (set by CTest): GATE_SYNTH, FUSEBENCH_GATE_DIR, FUSEBENCH_ROOT.
# shellcheck disable=SC2034 # variables read by check()'s eval
set -u
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2" >&2; fail=1; fi; }
root=${FUSEBENCH_ROOT:?}
synth=${GATE_SYNTH:?}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_regressions.XXXXXX")
mkdir -p "$tmp/runs"
for i in 1 2 3 4 5 6 7 8 9; do
    scale=1.0
    [ "$i" -ge 6 ] && scale=1.12
    "$synth" "$tmp/runs/2025-04-0${i}T010000Z_c00000${i}_nvidia_h200.json" --seed "$i" --samples 10 --reps 3 \
        --date "2025-04-0${i}T01:00:00+00:00" --commit "c00000$i" --scale "$scale" --slow 'embedding/*' || exit 1
done
gzip -9 "$tmp/runs/2025-04-03T010000Z_c000003_nvidia_h200.json"   # both forms are read
"$synth" "$tmp/runs/2025-04-05T020000Z_d000000_nvidia_h100.json" --gpu "NVIDIA H100" --scale 3 || exit 1

"$root/scripts/regressions" --runs "$tmp/runs" --gpu nvidia_h200 --json "$tmp/s.json" > "$tmp/s.md" 2> "$tmp/err"
check '[ $? = 0 ]' "regressions on a synthetic history: $(cat "$tmp/err")"
check "grep -q 'Step changes over 9 stored runs of NVIDIA H200' '$tmp/s.md'" "9 runs of the H200 (the H100 left out)"
n_emb=$(grep -c '^| embedding/.*| 2025-04-06 c000006 | ' "$tmp/s.md")
n_all=$(grep -c '^| [a-z_]*/.*| 2025-04-0' "$tmp/s.md")
n_cases=$(grep -c '^| embedding/' "$tmp/s.md")
check '[ "$n_emb" -ge 8 ] && [ "$n_emb" = "$n_all" ]' "every step is an embedding case at c000006 ($n_emb of $n_all): $(cat "$tmp/s.md")"
check "grep -q '\"schema\":[[:space:]]*\"fusebench-history/1\"' '$tmp/s.json'" "the JSON report"
check "grep -q '\"git_commit\":[[:space:]]*\"c000006\"' '$tmp/s.json'" "the JSON names the first commit after the step"
check "grep -q '\"previous_commit\":[[:space:]]*\"c000005\"' '$tmp/s.json'" "and the last one before it"

# The stored H200 history.
"$root/scripts/regressions" --runs "$root/results/runs" --json "$tmp/h.json" > "$tmp/h.md" 2> "$tmp/err"
check '[ $? = 0 ]' "regressions on results/runs: $(cat "$tmp/err")"
for d in f32/50304x768x8192 f32/128256x4096x65536 bf16/50304x768x8192 bf16/128256x4096x65536; do
    check "grep -q '^| embedding/bwd_atomic/fuser/$d | yes | .*| 2026-11-30 f45d569 | -' '$tmp/h.md'" \
        "the vector atomics (f45d569) step on embedding/bwd_atomic/fuser/$d"
    check "grep -q '^| embedding/bwd_deterministic/fuser/$d | yes | .*| 2026-11-30 00368d9 | -' '$tmp/h.md'" \
        "the batched hit rows (00368d9) step on embedding/bwd_deterministic/fuser/$d"
    check "grep -q '^| embedding/bwd_deterministic/fuser/$d | yes | .*| 2026-11-30 b6455c8 | -' '$tmp/h.md'" \
        "the slot walk (b6455c8) step on embedding/bwd_deterministic/fuser/$d"
done
check "! grep -q '^| [a-z_]*/[a-z_]*/reference/' '$tmp/h.md'" "no step on a reference row: $(grep '/reference/' "$tmp/h.md")"
check "! grep '^| embedding/bwd_atomic/fuser/f32' '$tmp/h.md' | grep -v -q 'f45d569'" "the f32 atomic scatter's only step is f45d569"
# bf16: the vector atomics (f45d569, faster), then the adds into an f32 copy rounded once (issue 21
# item 8, 2 kernels), which the first run stored after it (fb02e07) shows as a step up
for d in 50304x768x8192 128256x4096x65536; do
    check "grep -q '^| embedding/bwd_atomic/fuser/bf16/$d | yes | .*| 2026-12-02 fb02e07 | +' '$tmp/h.md'" \
        "the f32-accumulated bf16 atomic scatter's step up on $d, at fb02e07"
done
check "! grep '^| embedding/bwd_atomic/fuser/bf16' '$tmp/h.md' | grep -v -q 'f45d569\|fb02e07'" "no other step of the bf16 atomic scatter"

# Bad input.
expect2() {
    "$@" > /dev/null 2> "$tmp/err"
    rc=$?
    check "[ $rc = 2 ] && grep -q '$1' '$tmp/err'" "exit 2 naming $1 from: $(cat "$tmp/err") ($rc)"
}
mkdir -p "$tmp/bad"
cp "$tmp/runs/2025-04-01T010000Z_c000001_nvidia_h200.json" "$tmp/bad/"
printf '{"context": {"schema": "fusebench-run/1", "gpu_name": "NVIDIA H200"}, "benchmarks": [{"name": "a", "real_time": "x"}]}' \
    > "$tmp/bad/2025-04-02T000000Z_broken_nvidia_h200.json"
"$root/scripts/regressions" --runs "$tmp/bad" > /dev/null 2> "$tmp/err"
check "[ $? = 2 ] && grep -q '2025-04-02T000000Z_broken_nvidia_h200.json: benchmarks\[0\] (a)' '$tmp/err'" \
    "a broken run exits 2 naming the file and the entry: $(cat "$tmp/err")"
printf 'not gzip really' | gzip -c | head -c 20 > "$tmp/bad/2025-04-03T000000Z_cut_nvidia_h200.json.gz"
rm "$tmp/bad/2025-04-02T000000Z_broken_nvidia_h200.json"
"$root/scripts/regressions" --runs "$tmp/bad" > /dev/null 2> "$tmp/err"
check "[ $? = 2 ] && grep -q 'cut_nvidia_h200.json.gz' '$tmp/err'" "a cut compressed file exits 2 naming it: $(cat "$tmp/err")"
"$root/scripts/regressions" --runs "$tmp/nothere" > /dev/null 2> "$tmp/err"
check "[ $? = 2 ] && grep -q 'nothere' '$tmp/err'" "a missing directory exits 2"
"$root/scripts/regressions" --bogus > /dev/null 2> "$tmp/err"
check "[ $? = 2 ]" "an unknown option exits 2"
check "'$root/scripts/regressions' --help | grep -q 'usage: scripts/regressions'" "--help"
check "'$root/scripts/regressions' --version | grep -q 'regressions (fusebench)'" "--version"

if [ "$fail" = 0 ]; then rm -rf "$tmp"; echo "test_gate_regressions: ok"; else echo "files kept in $tmp" >&2; fi
exit "$fail"
