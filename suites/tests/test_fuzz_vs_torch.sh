#!/bin/sh
# test_fuzz_vs_torch.sh (unit; python3, no PyTorch, no GPU): scripts/fuzz_vs_torch on a small
# made-up run JSON and plans, checking the numbers it prints: the histograms against the lower
# bound and against torch.compile, the fractions (with the 5% and the spread rule; by kernel time), the
# grouped failures, the worst by time and the fusions needing more kernels, --before's split of an
# earlier run into unchanged and changed kernels; bad inputs exit 2.
set -u
root=${FUSEBENCH_SOURCE_DIR:?}
command -v python3 >/dev/null 2>&1 || { echo "test_fuzz_vs_torch: no python3: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
# row SUITE VARIANT STATUS KERNELS US SPREAD [ERROR] [REP] [KERNEL_US]
row() {
    k=""; [ "$4" != - ] && k="\"kernels\": $4,"
    [ -n "${9:-}" ] && k="$k \"kernel_time_us\": $9,"
    t="\"real_time\": 0,"; [ "$5" != - ] && t="\"real_time\": $5, \"spread\": $6,"
    e=""; [ -n "${7:-}" ] && e="\"error\": \"$7\","
    printf ' {"name": "%s/%s/%s/f32/default", "run_type": "iteration", "repetition_index": %s, "suite": "%s", "case": "%s",
  "variant": "%s", "dtype": "f32", "size": "default", %s %s %s "time_unit": "us", "status": "%s"},\n' \
        "$1" "$1" "$2" "${8:-0}" "$1" "$1" "$2" "$k" "$t" "$e" "$3"
}
{
    echo '{"context": {"schema": "fusebench-run/1"}, "benchmarks": ['
    # fz_a: at the bound, as many kernels as compile, faster; two repetitions (median 10) and an aggregate
    # (kernel times: fuser 8 against 10, not slower)
    row fz_a fuser ok 2 9 0.01 "" 0 8
    row fz_a fuser ok 2 11 0.01 "" 1 8
    echo ' {"name": "fz_a/fz_a/fuser/f32/default_median", "run_type": "aggregate", "aggregate_name": "median", "suite": "fz_a", "case": "fz_a", "variant": "fuser", "dtype": "f32", "size": "default", "real_time": 999, "kernels": 9, "status": "ok"},'
    row fz_a torch_compile ok 2 12 0.01 "" 0 10
    # fz_b: two above the bound, one kernel more than compile, twice as slow (kernel time 1.5x)
    row fz_b fuser ok 3 20 0.01 "" 0 15
    row fz_b torch_compile ok 2 10 0.02 "" 0 10
    # fz_c: 4% slower: not slower by the 5% rule (kernel time too: 10.4 against 10)
    row fz_c fuser ok 1 10.4 0.0 "" 0 10.4
    row fz_c torch_compile ok 1 10 0.0 "" 0 10
    # fz_d: 9% slower but within both spreads (12 x 0.9 <= 11 x 1.05); two kernels fewer; slower by
    # kernel time (12 against 11: no spread rule there)
    row fz_d fuser ok 1 12 0.1 "" 0 12
    row fz_d torch_compile ok 3 11 0.05 "" 0 11
    # fz_e: both failed; the kernels from the plan
    row fz_e fuser failed - - - "output 'v3' at default (full size) differs from the CPU interpreter: relative L2 error 0.5"
    row fz_e torch_compile failed - - - "NotImplementedError: fusion_torch: op 'gather_rows' has no translation"
    # fz_f: no torch_compile row, no plan; fz_g: the same compile failure as fz_e (one group)
    row fz_f fuser ok 1 5 0.0
    row fz_g fuser ok 1 5 0.01
    row fz_g torch_compile failed - - - "NotImplementedError: fusion_torch: op 'scatter_add' has no translation"
    row fz_g torch_eager ok 1 3 0.01
    echo ' {"name": "x/y/torch_compile/f32/default", "run_type": "iteration", "suite": "x", "case": "y", "variant": "torch_compile", "dtype": "f32", "size": "default", "real_time": 1, "status": "ok"}'
    echo ']}'
} >"$tmp/run.json"
for p in "a 2 2" "b 1 3" "c 1 1" "d 1 1" "e 2 2" "g 1 1"; do
    # shellcheck disable=SC2086 # the words of p
    set -- $p
    k="[]" # fz_a and fz_b: their kernels' schedulers named (the table by plan shape)
    [ "$1" = a ] && k='[{"scheduler": "reduction"}, {"scheduler": "pointwise"}]'
    [ "$1" = b ] && k='[{"scheduler": "reduction"}, {"scheduler": "pointwise"}, {"scheduler": "pointwise"}]'
    echo "{\"fusion\": \"fz_$1\", \"segments\": $3, \"copies\": 0, \"lower_bound\": $2, \"kernels\": $k}"
done >"$tmp/plans.jsonl"

out=$("$root/scripts/fuzz_vs_torch" "$tmp/run.json" "$tmp/plans.jsonl" 2>&1)
rc=$?
printf '%s\n' "$out"
[ $rc -eq 0 ] || { echo "FAIL: exit $rc"; fails=$((fails + 1)); }
expect() {
    if printf '%s\n' "$out" | grep -qF -- "$1"; then :; else echo "FAIL: no line with '$1'"; fails=$((fails + 1)); fi
}
expect "7 fusions (fuser rows), 6 plans"
expect "fuser rows: failed 1, ok 6; torch_compile rows: absent 1, failed 2, ok 4"
expect "fuser kernels - lower bound (6 of 7 with both"
expect "    +0     5  "
expect "    +2     1  "
expect "  ?       1  no bound"
expect "at the bound: 5 of 6 (83.3%)"
expect "fuser kernels - torch.compile kernels (4 of 7 with both)"
expect "    -2     1  "
expect "    +0     2  "
expect "    +1     1  "
expect "fuser kernels <= torch.compile kernels: 3 of 4 with both (75.0%); 3 of 7 fusions (42.9%)"
expect "fuser not slower than torch.compile:    3 of 4 timed on both (75.0%); 3 of 7 fusions (42.9%)"
expect "median 1.065, geometric mean 1.173, max 2.000"
expect "failed or skipped: fuser 1, torch.compile 3"
expect "torch_compile failed     2  NotImplementedError: fusion_torch: op 'gather_rows' has no translation"
expect "e.g. fz_e f32, fz_g f32"
expect "fuser         failed     1  output 'v3' at default"
expect "torch_compile absent     1"
expect "worst 4 by time ratio"
expect "  fz_b f32                                     20.00      10.00   2.00   1.50       3       2     1  slower"
expect "  fz_a f32                                     10.00      12.00   0.83   0.80       2       2     2"
expect "the fuser needs more kernels than torch.compile: 1"
# by plan shape: fz_c and fz_d have no kernels named (ratios 1.04 and 1.09: median 1.065; both not
# slower), fz_a and fz_b one shape each
expect "  (no kernel)                                     2          2  1.065  1.065"
expect "  reduction,pointwise                             1          1  0.833  0.800"
expect "  reduction,pointwise,pointwise                   1          0  2.000  1.500"
expect "  fz_b f32                                       3       2     1"
expect "fuser not slower by kernel time:        2 of 4 with both (50.0%); 2 of 7 fusions (28.6%)"
expect "kernel-time ratio fuser / torch.compile: median 1.065, geometric mean 1.080, max 1.500"
expect "in short: 7 fusions; at the lower bound 5 of 6; kernels <= torch.compile 3 of 7 (42.9%); not slower 3 of 7 (42.9%), by kernel time 2 of 7 (28.6%); not ok: fuser 1 failed 0 skipped, torch.compile 3"
[ "$(printf '%s\n' "$out" | tail -n 1 | cut -c1-9)" = "in short:" ] || { echo "FAIL: the last line is not the short one"; fails=$((fails + 1)); }
# fz_d is the second worst and not marked slower (the spreads overlap)
printf '%s\n' "$out" | grep -A3 '^worst' | tail -n 2 | grep -q 'fz_d f32.*1.09.*  1  *3  *1$' ||
    { echo "FAIL: fz_d is not second worst, unmarked"; fails=$((fails + 1)); }

# rounds in several run files (fuzz_torch.sh: fuser, torch, torch, fuser): the rows taken
# together, a side's time the median over the files; split the rows above by variant and add a
# second fuser round of fz_b at 16 us: fz_b's fuser time is then the median of 20 and 16 (18)
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
run = json.load(open(f"{d}/run.json"))
rows = run["benchmarks"]
for name, keep in (("fuser1", lambda e: e.get("variant") == "fuser"), ("torch1", lambda e: e.get("variant") != "fuser")):
    json.dump({"context": run["context"], "benchmarks": [e for e in rows if keep(e)]}, open(f"{d}/{name}.json", "w"))
b = [dict(e, real_time=16) for e in rows if e.get("suite") == "fz_b" and e.get("variant") == "fuser"]
json.dump({"context": run["context"], "benchmarks": b}, open(f"{d}/fuser2.json", "w"))
PY
out=$("$root/scripts/fuzz_vs_torch" "$tmp/fuser1.json" "$tmp/torch1.json" "$tmp/fuser2.json" "$tmp/plans.jsonl" 2>&1)
[ $? -eq 0 ] || { echo "FAIL: three run files: exit $?"; fails=$((fails + 1)); }
expect "7 fusions (fuser rows), 6 plans"
expect "  fz_b f32                                     18.00      10.00   1.80   1.50       3       2     1  slower"
expect "in short: 7 fusions; at the lower bound 5 of 6; kernels <= torch.compile 3 of 7 (42.9%); not slower 3 of 7 (42.9%)"

# --before: an earlier comparison of the same fusions. fz_a and fz_c keep their kernels (the same
# kernel_source_hash): fz_a was slower then (the machine: the median of 15 and 11 against 12),
# fz_c as now; fz_b's kernels changed (hash b1 -> b2): 30 against 10 then, 20 now; fz_d changed
# too, not slower then and now (the spreads). So unchanged: 2, not slower 1 then and 2 now, median
# ratios (13/12, 10.4/10) then and (10/12, 10.4/10) now; changed: 2, 1 then and 1 now.
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
run = json.load(open(f"{d}/run.json"))
now_hash = {"fz_a": "a1", "fz_b": "b2", "fz_c": "c1", "fz_d": "d2"}
then_hash = {"fz_a": "a1", "fz_b": "b1", "fz_c": "c1", "fz_d": "d1"}
then_us = {"fz_a": 15, "fz_b": 30}
now, then = [], []
for e in run["benchmarks"]:
    if e.get("suite") not in now_hash:
        continue
    n = dict(e)
    t = dict(e)
    if e.get("variant") == "fuser":
        n["kernel_source_hash"] = now_hash[e["suite"]]
        t["kernel_source_hash"] = then_hash[e["suite"]]
        if e["suite"] in then_us and e.get("repetition_index", 0) == 0:
            t["real_time"] = then_us[e["suite"]]
    now.append(n)
    then.append(t)
json.dump({"context": run["context"], "benchmarks": now}, open(f"{d}/now.json", "w"))
json.dump({"context": run["context"], "benchmarks": then}, open(f"{d}/then.json", "w"))
PY
out=$("$root/scripts/fuzz_vs_torch" "$tmp/now.json" "$tmp/plans.jsonl" --before "$tmp/then.json" 2>&1)
[ $? -eq 0 ] || { echo "FAIL: --before: exit $?"; fails=$((fails + 1)); }
expect "4 fusions timed on both sides in both"
expect "  kernels unchanged (the machine)     2               1     2             1.062  0.937"
expect "  kernels changed                     2               1     1             2.045  1.545"
expect "    fz_b f32                                   3.00* ->   2.00*"
"$root/scripts/fuzz_vs_torch" "$tmp/now.json" "$tmp/plans.jsonl" --before "$tmp/missing.json" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] || { echo "FAIL: a bad --before run file does not exit 2"; fails=$((fails + 1)); }

# bad inputs: exit 2 with a line
printf 'not json' >"$tmp/bad.json"
"$root/scripts/fuzz_vs_torch" "$tmp/bad.json" "$tmp/plans.jsonl" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "bad.json" "$tmp/err" || { echo "FAIL: a bad run JSON does not exit 2 naming it"; fails=$((fails + 1)); }
printf '{"fusion": "x"}\n{oops\n' >"$tmp/badplans.jsonl"
"$root/scripts/fuzz_vs_torch" "$tmp/run.json" "$tmp/badplans.jsonl" >/dev/null 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "badplans.jsonl:2" "$tmp/err" || { echo "FAIL: a bad plan line does not exit 2 with FILE:LINE"; fails=$((fails + 1)); }
"$root/scripts/fuzz_vs_torch" "$tmp/run.json" >/dev/null 2>&1
[ $? -eq 2 ] || { echo "FAIL: one argument does not exit 2"; fails=$((fails + 1)); }

[ $fails -eq 0 ] && echo "test_fuzz_vs_torch: ok" || echo "test_fuzz_vs_torch: $fails failed"
[ $fails -eq 0 ]
