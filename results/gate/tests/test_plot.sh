#!/bin/sh
# test_plot.sh -- scripts/plot on synthetic runs (gate_synth): the bandwidth
# pages of a run (one per suite: bytes on a log axis, error bars from the
# samples' quartiles, the floor and the fuser's % of it, checked against the
# run's numbers) and the history of a case over stored runs come out as
# non-empty PNG and SVG files; bad input exits 2. gnuplot is installed by
# scripts/setup (gnuplot-nox); where it is absent (the GPU machine's image)
# this test says so in one line and skips (77).
# Environment (set by CTest): GATE_SYNTH, FUSEBENCH_GATE_DIR, FUSEBENCH_ROOT.
# shellcheck disable=SC2034 # variables read by check()'s eval
set -u
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2" >&2; fail=1; fi; }
root=${FUSEBENCH_ROOT:?}
synth=${GATE_SYNTH:?}
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "SKIP: gnuplot is not installed (apt-get install gnuplot-nox, or scripts/setup)"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_plot.XXXXXX")

# Non-empty, and really the format: PNG signature, an <svg element.
is_png() { [ -s "$1" ] && [ "$(od -An -tx1 -N8 "$1" | tr -d ' \n')" = 89504e470d0a1a0a ]; }
is_svg() { [ -s "$1" ] && grep -q '<svg' "$1" && grep -q '</svg>' "$1"; }

"$synth" "$tmp/run.json" --samples 9 --noise 0.05 || exit 1
PLOT_DATA_DIR=$tmp/bw.data "$root/scripts/plot" bandwidth "$tmp/run.json" --out "$tmp/bw" > "$tmp/bw.list" 2> "$tmp/err"
check '[ $? = 0 ]' "plot bandwidth failed: $(cat "$tmp/err")"
# One page per suite: cross_entropy, embedding, qkv_split.
check '[ "$(grep -c "\.png$" "$tmp/bw.list")" = 3 ]' "3 PNG bandwidth pages: $(cat "$tmp/bw.list")"
check '[ "$(grep -c "\.svg$" "$tmp/bw.list")" = 3 ]' "3 SVG bandwidth pages"
for f in "$tmp/bw/bandwidth_cross_entropy" "$tmp/bw/bandwidth_qkv_split"; do
    check "is_png '$f.png'" "$f.png is a non-empty PNG"
    check "is_svg '$f.svg'" "$f.svg is a non-empty SVG"
done
svg=$tmp/bw/bandwidth_cross_entropy.svg
check "grep -q 'cross_entropy on NVIDIA H200' '$svg'" "the title names the suite and the GPU"
for panel in 'fwd bf16' 'fwd f32' 'bwd bf16' 'bwd f32'; do
    check "grep -q '>$panel<' '$svg'" "a panel per case and dtype: $panel"
done
check "grep -q 'copy 1 GiB: 4000 GB/s' '$svg'" "the copy bandwidth line is labelled"
check "grep -q 'floor: copy of its bytes' '$svg'" "the floor is drawn"
check "grep -q 'bytes moved' '$svg' && grep -q '>GB/s<' '$svg'" "the axes are labelled"
check "grep -q '>1 GB<' '$svg'" "the x axis is bytes, numeric"
for size in 2048x32768 8192x32768 16384x50304; do
    check "grep -q '>$size<' '$svg'" "every size of the suite is on its page: $size"
done
check "grep -q 'torch_compile' '$svg'" "variants are in the key"
# The data behind the page: x is the case's bytes on a log axis; each variant
# is points with error bars (no line joins two sizes), at the median's GB/s,
# the bars from p75's to p25's; the floor is bytes over floor_us, by bytes;
# the fuser's label is its % of floor.
d=$tmp/bw.data
check 'grep -q "set logscale x" "$d/s1.gp"' "the x axis is a log scale"
check '! grep "v1_[0-9]*_[0-9]*.dat" "$d/s1.gp" | grep -q linespoints' "variant points are not joined by lines"
check 'grep -q "v1_1_1.dat. using 1:2:3:4 with yerrorbars" "$d/s1.gp"' "variants are drawn with error bars"
"$FUSEBENCH_GATE_DIR/fusebench-json2tsv" cases "$tmp/run.json" > "$tmp/cases.tsv"
"$FUSEBENCH_GATE_DIR/fusebench-json2tsv" samples "$tmp/run.json" > "$tmp/samples.tsv"
"$FUSEBENCH_GATE_DIR/fusebench-json2tsv" field floor_us "$tmp/run.json" > "$tmp/floors.tsv"
name=cross_entropy/fwd/fuser/bf16/8192x32768
# expected: bytes, GB/s, GB/s at p75 and p25 (NumPy's linear quantiles of 90 samples), % of floor
expect=$(N=$name awk -F '\t' '
    FILENAME == ARGV[1] { if ($1 == ENVIRON["N"]) { bytes = $15; med = $10 }; next }
    FILENAME == ARGV[2] { if ($1 == ENVIRON["N"]) fl = $3; next }
    $1 == ENVIRON["N"] { v[n++] = $3 }
    END {
        for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
        h = (n - 1) * 0.25; i = int(h); p25 = v[i] + (h - i) * (v[i + 1] - v[i])
        h = (n - 1) * 0.75; i = int(h); p75 = v[i] + (h - i) * (v[i + 1] - v[i])
        printf "%.4g %.4g %.4g %.4g %.1f%%", bytes, bytes / med / 1e3, bytes / p75 / 1e3, bytes / p25 / 1e3, 100 * fl / med
    }' "$tmp/cases.tsv" "$tmp/floors.tsv" "$tmp/samples.tsv")
got=$(awk -F '\t' '$6 == "8192x32768" { printf "%.4g %.4g %.4g %.4g %s", $1, $2, $3, $4, $5 }' "$d/v1_1_1.dat")
check '[ -n "$expect" ] && [ "$got" = "$expect" ]' "the fuser's point, bars and % of floor at 8192x32768: got '$got', expected '$expect'"
check 'awk -F "\t" "\$3 < \$2 && \$2 < \$4 { n++ } END { exit n != NR }" "$d/v1_1_1.dat"' "every bar spans its point (p75 below, p25 above)"
check 'sort -c -g "$d/f1_1.dat" && [ "$(wc -l < "$d/f1_1.dat")" = 3 ]' "a floor per size, by bytes"
check "grep -q '>${expect##* }<' '$svg'" "the fuser's % of floor is on the page (${expect##* })"

# A failing variant leaves a gap and is named; one format only.
"$synth" "$tmp/failing.json" --fail 'embedding/fwd/fuser/*' || exit 1
"$root/scripts/plot" bandwidth "$tmp/failing.json" --out "$tmp/bw2" --format svg > "$tmp/bw2.list" 2> "$tmp/err"
check '[ $? = 0 ]' "plot bandwidth with a failed case: $(cat "$tmp/err")"
check '[ "$(grep -c "\.svg$" "$tmp/bw2.list")" = 3 ] && ! grep -q "\.png$" "$tmp/bw2.list"' "--format svg writes SVG only"
check "grep -q 'fuser failed at 8192x768' '$tmp/bw2/bandwidth_embedding.svg'" "a failed case is named on the chart"
# A run without floors (from before floor_us) says so.
sed '/"floor_us"/d; /"floor_fraction"/d' "$tmp/failing.json" > "$tmp/nofloor.json"
"$root/scripts/plot" bandwidth "$tmp/nofloor.json" --out "$tmp/bw3" --format svg > /dev/null 2> "$tmp/err"
check '[ $? = 0 ] && grep -q "floor: not measured" "$tmp/bw3/bandwidth_qkv_split.svg"' "a run without floors: $(cat "$tmp/err")"
# Nothing timed (every case failed): exit 2, nothing drawn.
"$synth" "$tmp/untimed.json" --fail '*' || exit 1
"$root/scripts/plot" bandwidth "$tmp/untimed.json" --out "$tmp/bw4" > /dev/null 2> "$tmp/err"
check '[ $? = 2 ] && grep -q "no timed case" "$tmp/err" && [ ! -e "$tmp/bw4/bandwidth_qkv_split.png" ]' "an untimed run: exit 2: $(cat "$tmp/err")"

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
check "grep -q 'change point (scripts/regressions)' '$h.svg'" "the change points are in the key"
check "grep -q 'step +' '$h.svg'" "the step up is labelled with its size"
check "grep -q 'noise band' '$h.svg'" "the noise band is drawn"
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
