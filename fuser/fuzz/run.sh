#!/bin/sh
# fuser/fuzz/run.sh TARGET_BIN SEEDS_DIR SECONDS -- runs one libFuzzer target
# for SECONDS from the committed seeds (never written to: new inputs go to a
# temporary corpus) plus fuser/fuzz/regressions/NAME/ (the reproducers of
# crashes found before; each runs first). Exit 0 when nothing crashed; on a
# crash, the reproducer is kept under fuzz-artifacts/ in the working
# directory and its bytes are printed. Exit 77 when the target is not built.
set -u
bin=$1 seeds=$2 secs=$3
name=$(basename "$bin")
if [ ! -x "$bin" ]; then
    echo "$name: skipped: not built (fuzz_build found no clang or libFuzzer)"
    exit 77
fi
here=$(cd "$(dirname "$0")" && pwd)
regress="$here/regressions/${name#fuzz_}"
[ -d "$regress" ] || regress=
arts="$PWD/fuzz-artifacts/$name"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$arts"
"$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$arts/" "$work/corpus" "$seeds" $regress >"$work/log" 2>&1
rc=$?
grep -E '^(#[0-9]+ +DONE|Done [0-9]+ runs|stat::number_of_executed_units)' "$work/log" || true
if [ "$rc" -ne 0 ]; then
    tail -n 60 "$work/log"
    for f in "$arts"/*; do
        [ -f "$f" ] || continue
        echo "reproducer $f:"
        od -A d -c "$f" | head -n 40
    done
    echo "$name: FAILED (exit $rc)"
    exit 1
fi
echo "$name: $secs s, no crash"
