#!/bin/sh
# test_plot.sh -- scripts/plot on synthetic runs (gate_synth): the bandwidth
# charts of a run and the history of a case over stored runs come out as
# non-empty PNG and SVG files; bad input exits 2. gnuplot must be installed
# (scripts/setup installs gnuplot-nox): without it this test FAILS.
# Environment (set by CTest): GATE_SYNTH, FUSEBENCH_GATE_DIR, FUSEBENCH_ROOT.
# shellcheck disable=SC2034 # variables read by check()'s eval
set -u
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2" >&2; fail=1; fi; }
root=${FUSEBENCH_ROOT:?}
synth=${GATE_SYNTH:?}
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "FAIL: gnuplot is not installed (apt-get install gnuplot-nox, or scripts/setup)" >&2
    exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_plot.XXXXXX")

# Non-empty, and really the format: PNG signature, an <svg element.
is_png() { [ -s "$1" ] && [ "$(od -An -tx1 -N8 "$1" | tr -d ' \n')" = 89504e470d0a1a0a ]; }
is_svg() { [ -s "$1" ] && grep -q '<svg' "$1" && grep -q '</svg>' "$1"; }

"$synth" "$tmp/run.json" --samples 5 || exit 1
"$root/scripts/plot" bandwidth "$tmp/run.json" --out "$tmp/bw" > "$tmp/bw.list" 2> "$tmp/err"
check '[ $? = 0 ]' "plot bandwidth failed: $(cat "$tmp/err")"
# 3 suites: cross_entropy fwd, bwd x bf16, f32; embedding fwd, bwd; qkv_split fwd = 7 charts.
check '[ "$(grep -c "\.png$" "$tmp/bw.list")" = 7 ]' "7 PNG bandwidth charts"
check '[ "$(grep -c "\.svg$" "$tmp/bw.list")" = 7 ]' "7 SVG bandwidth charts"
for f in "$tmp/bw/bandwidth_cross_entropy_fwd_bf16" "$tmp/bw/bandwidth_qkv_split_fwd_bf16"; do
    check "is_png '$f.png'" "$f.png is a non-empty PNG"
    check "is_svg '$f.svg'" "$f.svg is a non-empty SVG"
done
svg=$tmp/bw/bandwidth_cross_entropy_fwd_bf16.svg
check "grep -q 'cross_entropy fwd bf16 on NVIDIA H200' '$svg'" "the title names suite, case, dtype and GPU"
check "grep -q 'copy (measured)' '$svg'" "the copy bandwidth line is labelled"
check "grep -q 'effective bandwidth (GB/s)' '$svg'" "the y axis is labelled"
check "grep -q '8192x32768' '$svg'" "sizes label the x axis"
check "grep -q 'torch_compile' '$svg'" "variants are in the key"

# A failing variant leaves a gap, not an error; one format only.
"$synth" "$tmp/failing.json" --fail 'embedding/fwd/fuser/*' || exit 1
"$root/scripts/plot" bandwidth "$tmp/failing.json" --out "$tmp/bw2" --format svg > "$tmp/bw2.list" 2> "$tmp/err"
check '[ $? = 0 ]' "plot bandwidth with a failed case: $(cat "$tmp/err")"
check '[ "$(grep -c "\.svg$" "$tmp/bw2.list")" = 7 ] && ! grep -q "\.png$" "$tmp/bw2.list"' "--format svg writes SVG only"
check "grep -q 'fuser failed' '$tmp/bw2/bandwidth_embedding_fwd_bf16.svg'" "a failed case is named on the chart"

# History: five stored runs of one GPU (the third slower, the fourth with one
# more kernel) and one of another GPU, which is left out.
mkdir -p "$tmp/runs"
i=0
for spec in "1.00 0" "1.00 0" "1.07 0" "1.07 1" "1.00 0"; do
    i=$((i + 1))
    set -- $spec
    "$synth" "$tmp/runs/2025-04-0${i}T010000Z_c00000${i}_nvidia_h200.json" --seed "$i" --samples 10 \
        --date "2025-04-0${i}T01:00:00+00:00" --commit "c00000$i" --scale "$1" --kernels-plus "$2" || exit 1
done
"$synth" "$tmp/runs/2025-04-02T020000Z_d000000_nvidia_h100.json" --gpu "NVIDIA H100" --scale 3 || exit 1
case=qkv_split/fwd/fuser/bf16/12x1024x768
"$root/scripts/plot" history "$case" --runs "$tmp/runs" --out "$tmp/hist" > "$tmp/h.list" 2> "$tmp/err"
check '[ $? = 0 ]' "plot history failed: $(cat "$tmp/err")"
h=$tmp/hist/history_qkv_split_fwd_fuser_bf16_12x1024x768
check "is_png '$h.png'" "history PNG"
check "is_svg '$h.svg'" "history SVG"
check "grep -q '5 stored runs' '$h.svg'" "the H100 run is left out (5 runs of the H200)"
check "grep -q 'regression (SLOWER, REGRESSION)' '$h.svg'" "regressions are in the key"
check "grep -q 'launches' '$h.svg'" "the kernel-count rise is marked"
check "grep -q '2025-04-03 c000003' '$h.svg'" "x labels are date and commit"
check "grep -q 'median time (us)' '$h.svg'" "the y axis is labelled"
"$root/scripts/plot" history "$case" --runs "$tmp/runs" --baseline "$tmp/runs/2025-04-01T010000Z_c000001_nvidia_h200.json" \
    --metric gbps --out "$tmp/hist2" > /dev/null 2> "$tmp/err"
check '[ $? = 0 ]' "plot history --baseline --metric gbps: $(cat "$tmp/err")"
check "grep -q 'baseline median' '$tmp/hist2/history_qkv_split_fwd_fuser_bf16_12x1024x768.svg'" "the baseline is drawn"

# Bad input: exit 2 with a message.
expect2() {
    "$@" > /dev/null 2> "$tmp/err"
    rc=$?
    check "[ $rc = 2 ] && [ -s '$tmp/err' ]" "exit 2 and a message from: $* (got $rc: $(cat "$tmp/err"))"
}
expect2 "$root/scripts/plot" bandwidth "$tmp/nothere.json" --out "$tmp/x"
printf '{"context": {' > "$tmp/broken.json"
expect2 "$root/scripts/plot" bandwidth "$tmp/broken.json" --out "$tmp/x"
expect2 "$root/scripts/plot" pie "$tmp/run.json"
expect2 "$root/scripts/plot" bandwidth "$tmp/run.json" --format gif
expect2 "$root/scripts/plot" history no/such/case --runs "$tmp/runs" --out "$tmp/x"
expect2 "$root/scripts/plot" history "$case" --runs "$tmp/empty-dir" --out "$tmp/x"

if [ "$fail" = 0 ]; then rm -rf "$tmp"; echo "test_plot: ok"; else echo "files kept in $tmp" >&2; fi
exit "$fail"
