#!/bin/sh
# test_run_suite_multi.sh unit|compile: run_suite over several fusion files and a folder of them.
# A few of fuser-fuzz's fusions (seed 7: the first three and two with an extent-0 axis) go into
# a folder without a suite.txt.
#   unit (nothing compiled): `run_suite DIR --list` lists every file, each a suite of its own and
#     with no --sizes; several files, and a folder and a file, are one run; a file named
#     twice, a suite or 'all' with others, --sizes NxM with several, a folder with nothing in it and a bad
#     file among good ones exit 2 (the last with the parser's FILE:LINE:COL) and run nothing.
#   compile (NVRTC, no GPU needed): `run_suite DIR --compile-only --out run.json` plans and
#     compiles every one and exits 0, and every file has its row in the run JSON; with
#     --with-torch one PyTorch process (a stand-in for torch_bench.py) gets every item, its rows
#     are merged, and scripts/fuzz_vs_torch reads the run with the fusions' plans.
set -u
mode=${1:?unit or compile}
rs=${RUN_SUITE_BIN:?}
fuzz=${FUSER_FUZZ_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$fuzz" write --count 40 --seed 7 --out "$tmp/all" >/dev/null || { echo "fuser-fuzz write failed"; exit 1; }
mkdir "$tmp/fz"
for f in "$tmp"/all/fz_7_0.fusion "$tmp"/all/fz_7_1.fusion "$tmp"/all/fz_7_2.fusion \
         $(grep -l -E '^input .*\[(0|.*, 0)(,|\])' "$tmp"/all/*.fusion | head -n 2); do
    cp "$f" "$tmp/fz/"
done
n=$(ls "$tmp/fz" | wc -l)
[ "$n" -eq 5 ] || fail "expected 5 fusions (two with an extent-0 input), got $n"
# the names run_suite gives them: FILE/FUSION/fuser/DTYPE/default
expected() {
    for f in "$tmp"/fz/*.fusion; do
        base=$(basename "$f" .fusion)
        case=$(sed -n 's/^fusion //p' "$f")
        dt=$(sed -n 's/^input [^:]*: \([a-z0-9]*\)\[.*/\1/p' "$f" | grep -E '^(f32|bf16|f16|f64)$' | head -n 1)
        echo "$base/$case/fuser/${dt:-f32}/default"
    done
}
expected | sort >"$tmp/expected"

if [ "$mode" = unit ]; then
    "$rs" "$tmp/fz" --list >"$tmp/list" 2>"$tmp/err" || fail "run_suite DIR --list: exit $? ($(cat "$tmp/err"))"
    sort "$tmp/list" | cmp -s - "$tmp/expected" || { fail "--list of the folder:"; diff "$tmp/expected" "$tmp/list"; }
    "$rs" "$tmp/fz/" --list >"$tmp/list2" 2>&1 && cmp -s "$tmp/list" "$tmp/list2" || fail "DIR/ lists differently"
    set -- "$tmp"/fz/*.fusion
    "$rs" "$1" "$2" --list >"$tmp/two" 2>&1 || fail "two files: exit $?"
    [ "$(wc -l <"$tmp/two")" -eq 2 ] || fail "two files list $(wc -l <"$tmp/two") benchmarks"
    other=$(for f in "$tmp"/all/*.fusion; do [ -e "$tmp/fz/$(basename "$f")" ] || echo "$f"; done | head -n 1)
    "$rs" "$tmp/fz" "$other" --list >"$tmp/mix" 2>&1 || fail "a folder and a file: exit $?"
    [ "$(wc -l <"$tmp/mix")" -eq $((n + 1)) ] && tail -n 1 "$tmp/mix" | grep -q "^$(basename "$other" .fusion)/" ||
        fail "a folder and a file: $(cat "$tmp/mix")"
    # refused, exit 2, nothing run
    expect2() {
        what=$1; needle=$2; shift 2
        "$rs" "$@" >"$tmp/out" 2>"$tmp/err"
        rc=$?
        [ $rc -eq 2 ] || fail "$what: exit $rc, not 2"
        grep -qF -- "$needle" "$tmp/err" || fail "$what: no '$needle' in: $(cat "$tmp/err")"
        [ ! -s "$tmp/out" ] || fail "$what: wrote to standard output"
    }
    expect2 "a file twice" "is named twice" "$tmp/fz" "$1" --list
    expect2 "'all' and a file" "one suite at a time" all "$1" --list
    expect2 "a file and a suite" "one suite at a time: '$1' and 'qkv_split'" "$1" qkv_split --list
    expect2 "--sizes with several" "--sizes with several suites" "$tmp/fz" --sizes 4x4 --list
    mkdir "$tmp/empty"
    expect2 "an empty folder" "no suite.txt and no .fusion files" "$tmp/empty" --list
    cp -r "$tmp/fz" "$tmp/bad"
    printf 'fusion broken\ninput x: f32[4]\ny = nosuchop(x)\noutput y\n' >"$tmp/bad/zz_broken.fusion"
    expect2 "a bad file in a folder" "zz_broken.fusion:3:" "$tmp/bad" --compile-only
    expect2 "an unknown name" "unknown suite 'no_such_suite'" "$tmp/fz" no_such_suite --list
else
    "$rs" "$tmp/fz" --compile-only --out "$tmp/run.json" >"$tmp/table" 2>"$tmp/err"
    rc=$?
    [ $rc -eq 0 ] || { fail "run_suite DIR --compile-only: exit $rc"; cat "$tmp/err"; }
    grep -q "planned and compiled $n cases" "$tmp/table" || fail "no 'planned and compiled $n cases' in: $(tail -n 3 "$tmp/table")"
    while read -r name; do
        grep -qF "\"run_name\": \"$name\"" "$tmp/run.json" || fail "no row of $name in the run JSON"
        suite=${name%%/*}
        grep -q "^$suite/" "$tmp/table" || fail "no table row of $suite"
    done <"$tmp/expected"
    k=$(grep -c '"status": "skipped"' "$tmp/run.json")
    [ "$k" -eq "$n" ] || fail "$k skipped (compile-only) rows in the run JSON, not $n"

    # --with-torch over the folder: ONE PyTorch process gets every item (a stand-in for
    # torch_bench.py that writes torch_compile rows, one of them failed), the rows are merged,
    # and scripts/fuzz_vs_torch compares the kernels (with a GPU the fuser rows are timed too)
    if command -v python3 >/dev/null 2>&1 && [ -n "${FUSEBENCH_SOURCE_DIR:-}" ]; then
        cat >"$tmp/fake_torch.py" <<'PY'
import json, os, sys
a = sys.argv
items = a[a.index("--items") + 1].split(",")
fus = {i["item"]: i for i in json.load(open(a[a.index("--fusions") + 1]))["items"]}
with open(os.environ["FAKE_TORCH_LOG"], "a") as f:
    f.write(f"{len(items)} {len(fus)}\n")
rows = []
for k, it in enumerate(items):
    suite, case, dtype, size = it.split("/")
    assert it in fus and "fusion " in fus[it]["fusion"], it
    r = {"name": f"{suite}/{case}/torch_compile/{dtype}/{size}", "run_type": "iteration", "suite": suite,
         "case": case, "variant": "torch_compile", "dtype": dtype, "size": size, "real_time": 10.0,
         "time_unit": "us", "kernels": 1, "launches": 1, "spread": 0.01, "status": "ok"}
    if k == 0:
        r.update({"status": "failed", "error": "Untranslatable: op 'x' (line 3)", "real_time": 0})
        del r["kernels"]
    rows.append(r)
out = a[a.index("--out") + 1]
json.dump({"context": {"schema": "fusebench-run/1"}, "benchmarks": rows}, open(out, "w"))
PY
        FUSEBENCH_TORCH_SCRIPT=$tmp/fake_torch.py FAKE_TORCH_LOG=$tmp/torch.log \
            "$rs" "$tmp/fz" --with-torch --repetitions 1 --time-limit 0.05 --out "$tmp/trun.json" >"$tmp/ttable" 2>"$tmp/terr"
        grep -q "with-torch: $((n - 1)) PyTorch entries merged\|with-torch: $n PyTorch entries merged" "$tmp/terr" ||
            fail "the stand-in's rows are not merged: $(grep with-torch "$tmp/terr")"
        [ "$(cat "$tmp/torch.log" 2>/dev/null)" = "$n $n" ] || fail "the PyTorch process(es) got: $(cat "$tmp/torch.log")"
        for f in "$tmp"/fz/*.fusion; do "${FUSER_BIN:?}" plan "$f" --json; done >"$tmp/plans.jsonl"
        "$FUSEBENCH_SOURCE_DIR/scripts/fuzz_vs_torch" "$tmp/trun.json" "$tmp/plans.jsonl" >"$tmp/cmp" 2>&1 ||
            fail "fuzz_vs_torch: exit $?"
        cat "$tmp/cmp"
        grep -q "^fuzz_vs_torch: .*: $n fusions (fuser rows), $n plans" "$tmp/cmp" || fail "fuzz_vs_torch: not $n fusions"
        grep -q "fuser kernels - lower bound ($n of $n with both" "$tmp/cmp" || fail "fuzz_vs_torch: bounds missing"
        grep -q "fuser kernels - torch.compile kernels ($((n - 1)) of $n with both)" "$tmp/cmp" ||
            fail "fuzz_vs_torch: torch.compile's kernels not read"
        grep -q "torch_compile failed     1  Untranslatable: op 'x' (line 3)" "$tmp/cmp" ||
            fail "fuzz_vs_torch: the failed torch.compile row is not reported"
    else
        echo "no python3 or FUSEBENCH_SOURCE_DIR: the --with-torch part is not checked"
    fi
fi
[ $fails -eq 0 ] && echo "test_run_suite_multi $mode: ok" || echo "test_run_suite_multi $mode: $fails failed"
[ $fails -eq 0 ]
