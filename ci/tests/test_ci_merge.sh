#!/bin/sh
# test_ci_merge.sh -- fusebench-merge, as ci/slurm's merge job uses it: the
# runs of one night's tasks are merged; runs of different GPU models, of
# different commits (a missing commit too) or of different timing modes are
# refused with both files named, exit 2, and nothing is written.
# Environment (set by CTest): FUSEBENCH_GATE_DIR, GATE_SYNTH.
# shellcheck disable=SC2034 # variables read by check()'s eval
set -u
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2" >&2; fail=1; fi; }
merge=${FUSEBENCH_GATE_DIR:?}/fusebench-merge
synth=${GATE_SYNTH:?}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_ci_merge.XXXXXX")
cd "$tmp" || exit 1

"$synth" qkv.json --only 'qkv_split/*' --commit c0ffee1 || exit 1
"$synth" emb.json --only 'embedding/*' --commit c0ffee1 || exit 1
"$synth" emb_h100.json --only 'embedding/*' --commit c0ffee1 --gpu "NVIDIA H100" || exit 1
"$synth" emb_other.json --only 'embedding/*' --commit d00d002 || exit 1
"$synth" emb_nocommit.json --only 'embedding/*' --commit '' || exit 1
sed 's/"timing_mode":[[:space:]]*"cold"/"timing_mode": "hot"/' emb.json > emb_hot.json
check 'grep -q "\"timing_mode\": \"hot\"" emb_hot.json' "the hot stand-in is hot"

"$merge" -o night.json qkv.json emb.json 2> err
check '[ $? = 0 ] && [ -s night.json ]' "one GPU model, one commit: merged: $(cat err)"

refused() { # FILE WHY: merging qkv.json with FILE exits 2, says WHY, names both, writes nothing
    other=$1 why=$2
    rm -f out.json
    "$merge" -o out.json qkv.json "$other" 2> err
    rc=$?
    check '[ $rc = 2 ]' "qkv.json + $other: exit 2 (got $rc)"
    check 'grep -q "$why" err && grep -q "qkv.json" err && grep -q "$other" err' "qkv.json + $other: '$why', both files named: $(cat err)"
    check '[ ! -e out.json ] && [ ! -e out.json.tmp ]' "qkv.json + $other: nothing written"
}
refused emb_h100.json 'different GPU models: .*"NVIDIA H200".*"NVIDIA H100"'
refused emb_other.json 'different builds: .*commit c0ffee1.*commit d00d002'
refused emb_nocommit.json 'different builds: .*commit c0ffee1.*commit [(]none[)]'
refused emb_hot.json 'different timing modes: .*"cold".*"hot"'

cd / && if [ "$fail" = 0 ]; then rm -rf "$tmp"; echo "test_ci_merge: ok"; else echo "files kept in $tmp" >&2; fi
exit "$fail"
