#!/bin/sh
# test_gate_bisect.sh -- scripts/bisect without a GPU, on a throwaway git repo
# made here: ten commits whose stand-in run_suite (below) measures embedding
# 10% slower from the 7th commit on; the 4th does not build. scripts/bisect
# must name the 7th as the first bad commit, with the embedding cases SLOWER
# as the evidence, skip the 4th, and leave the repo on its branch with no
# bisect under way. Then: no regression between two fast commits (exit 1), a
# dirty checkout and bad arguments (exit 2).
# Environment (set by CTest): GATE_SYNTH, FUSEBENCH_GATE_DIR, FUSEBENCH_ROOT.
# shellcheck disable=SC2034 # variables read by check()'s eval
set -u
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2" >&2; fail=1; fi; }
root=${FUSEBENCH_ROOT:?}
synth=${GATE_SYNTH:?}
command -v git > /dev/null 2>&1 || { echo "test_gate_bisect: git is not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_bisect.XXXXXX")
repo=$tmp/repo
mkdir -p "$repo/scripts" "$repo/results/gate"
cp "$root/scripts/bisect" "$repo/scripts/"
cp "$root/results/gate/gate-bin.sh" "$repo/results/gate/"
cp "$root/VERSION" "$repo/"
printf 'out/\nbuild-bisect/\n' > "$repo/.gitignore"
GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
export GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL
git -C "$repo" init -q -b main
for i in 1 2 3 4 5 6 7 8 9 10; do
    if [ "$i" -ge 7 ]; then echo 1.10 > "$repo/speed.txt"; else echo 1.00 > "$repo/speed.txt"; fi
    if [ "$i" = 4 ]; then touch "$repo/broken"; else rm -f "$repo/broken"; fi
    echo "$i" > "$repo/n.txt"
    git -C "$repo" add -A
    git -C "$repo" commit -q -m "commit $i"
    git -C "$repo" tag "c$i"
done
# The stand-in run_suite: a synthetic run, embedding slower by speed.txt.
cat > "$tmp/fake_run_suite.sh" <<FAKE
#!/bin/sh
out='' reps=3
while [ \$# -gt 0 ]; do
    case "\$1" in
        --out) out=\$2; shift 2 ;; --repetitions) reps=\$2; shift 2 ;;
        --format|--filter|--time-limit) shift 2 ;; *) shift ;;
    esac
done
n=\$(git rev-list --count HEAD)
echo "run \$n" >> "$tmp/runs.log"
exec "$synth" "\$out" --reps "\$reps" --samples 10 --seed "\$n" --scale "\$(cat speed.txt)" --slow 'embedding/*' \
    --commit "\$(git rev-parse --short HEAD)"
FAKE
chmod +x "$tmp/fake_run_suite.sh"
export FUSEBENCH_RUN_SUITE="$tmp/fake_run_suite.sh" FUSEBENCH_BISECT_BUILD='test ! -f broken'

"$repo/scripts/bisect" c1 c10 'embedding' --out "$tmp/out" > "$tmp/stdout" 2> "$tmp/stderr"
rc=$?
first=$(git -C "$repo" rev-parse --short c7)
check "[ $rc = 0 ]" "bisect finds a first bad commit (exit $rc): $(cat "$tmp/stderr")"
check "grep -q '^first bad commit: $first commit 7' '$tmp/stdout'" "the 7th commit is named: $(cat "$tmp/stdout")"
check "grep -q 'embedding/fwd/fuser/bf16/8192x768.: \\*\\*SLOWER' '$tmp/stdout'" "the evidence names the slower cases"
check "grep -q 'and against its parent' '$tmp/stdout'" "and compares with the parent"
check "! grep -q 'qkv_split/fwd/fuser' '$tmp/stdout'" "only the slower cases are evidence"
check '[ "$(git -C "$repo" rev-parse --abbrev-ref HEAD)" = main ]' "the repo is back on its branch"
check '! git -C "$repo" bisect log > /dev/null 2>&1' "no bisect is left under way"
check "[ \$(wc -l < '$tmp/runs.log') -le 7 ]" "a bisection, not every commit: $(wc -l < "$tmp/runs.log") runs"
check "! grep -qx 'run 4' '$tmp/runs.log'" "the broken commit is skipped, not measured"

# Two fast commits: nothing to find.
"$repo/scripts/bisect" c1 c3 'embedding' --out "$tmp/out2" > "$tmp/stdout" 2> "$tmp/stderr"
check "[ $? = 1 ]" "no regression between two fast commits: exit 1"

# Bad input.
expect2() {
    "$@" > /dev/null 2> "$tmp/err"
    rc=$?
    check "[ $rc = 2 ] && [ -s '$tmp/err' ]" "exit 2 and a message from: $* (got $rc: $(cat "$tmp/err"))"
}
expect2 "$repo/scripts/bisect" c1 c10
expect2 "$repo/scripts/bisect" c1 nosuchcommit embedding
expect2 "$repo/scripts/bisect" c10 c1 embedding
expect2 "$repo/scripts/bisect" c1 c10 embedding --repetitions x
echo dirty >> "$repo/speed.txt"
expect2 "$repo/scripts/bisect" c1 c10 embedding
check "grep -q 'has changes' '$tmp/err'" "a dirty checkout is refused"
git -C "$repo" checkout -q -- speed.txt
check "'$repo/scripts/bisect' --help | grep -q 'usage: scripts/bisect GOOD BAD FILTER'" "--help"
check "'$repo/scripts/bisect' --version | grep -q 'bisect (fusebench)'" "--version"

if [ "$fail" = 0 ]; then rm -rf "$tmp"; echo "test_gate_bisect: ok"; else echo "files kept in $tmp" >&2; fi
exit "$fail"
