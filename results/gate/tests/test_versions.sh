#!/bin/sh
# test_versions.sh -- every command answers --version with its name and the
# version of VERSION, and --help with help (a usage line or its comment
# header), never its own code: the gate's programs, the scripts, ci/, and
# fuser and run_suite where they are built (FUSER_BIN, RUN_SUITE_BIN).
# Environment (set by CTest): FUSEBENCH_GATE_DIR, FUSEBENCH_ROOT.
# shellcheck disable=SC2034 # variables read by check()'s eval
set -u
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2" >&2; fail=1; fi; }
root=${FUSEBENCH_ROOT:?}
gate=${FUSEBENCH_GATE_DIR:?}
version=$(cat "$root/VERSION")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_versions.XXXXXX")
one() {
    "$@" --version > "$tmp/v" 2>&1
    check "[ $? = 0 ] && grep -q ' $version\$' '$tmp/v'" "$* --version: $(cat "$tmp/v")"
    "$@" --help > "$tmp/h" 2>&1
    check "[ $? = 0 ] && [ -s '$tmp/h' ]" "$* --help"
    check "! grep -Eq '^(set -e|set -u|root=|\\. \"|#!/)' '$tmp/h'" "$* --help prints its code: $(head -n 3 "$tmp/h")"
}
for p in compare json2tsv merge history pack table; do one "$gate/fusebench-$p"; done
for s in compare save_baseline plot regressions bisect table setup compile_times.sh sass_report.sh \
         tune_sweep.sh gpu_session.sh; do
    one "$root/scripts/$s"
done
one "$root/ci/nightly"
one "$root/ci/run_shard"
[ -z "${FUSER_BIN:-}" ] || one "$FUSER_BIN"
[ -z "${RUN_SUITE_BIN:-}" ] || one "$RUN_SUITE_BIN"
rm -rf "$tmp"
[ "$fail" = 0 ] && echo "test_versions: ok"
exit "$fail"
