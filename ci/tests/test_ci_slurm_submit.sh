#!/bin/sh
# test_ci_slurm_submit.sh -- ci/slurm and ci/slurm_job without a cluster: a
# stand-in sbatch records what ci/slurm submits (the job array, its GPUs,
# the dependency chain, the site's options); slurm_job's steps run here
# directly (a task's slice of the cases, the report naming failed tasks);
# bad usage exits 2 and submits nothing. test_ci_slurm.sh runs the same on a
# real one-node cluster.
# Environment (set by CTest): FUSEBENCH_ROOT.
# shellcheck disable=SC2034 # variables read by check()'s eval
set -u
fail=0
check() { if ! eval "$1"; then echo "FAIL: $2" >&2; fail=1; fi; }
root=${FUSEBENCH_ROOT:?}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_slurm_submit.XXXXXX")
unset SLURM_CONF FUSEBENCH_RUN_SUITE 2>/dev/null || true

# The stand-in sbatch: appends its arguments (one line per job, after the
# job's id) to SBATCH_LOG and prints "ID;cluster" as --parsable does;
# SBATCH_FAIL_AT=N fails the Nth call.
mkdir -p "$tmp/bin"
cat > "$tmp/bin/sbatch" <<'EOF'
#!/bin/sh
n=$(( $(wc -l < "$SBATCH_LOG") + 1 ))
[ "$n" != "${SBATCH_FAIL_AT:-0}" ] || { echo "sbatch: error: Batch job submission failed: Invalid account" >&2; exit 1; }
id=$((100 + n))
echo "$id $*" >> "$SBATCH_LOG"
echo "$id;testcluster"
EOF
chmod +x "$tmp/bin/sbatch"
PATH=$tmp/bin:$PATH
SBATCH_LOG=$tmp/sbatch.log
export PATH SBATCH_LOG
slurm() { : > "$SBATCH_LOG"; "$root/ci/slurm" "$@" > "$tmp/stdout" 2> "$tmp/stderr"; }
job() { awk -v n="$1" '$1 == n' "$SBATCH_LOG"; } # the job with this id

# --help
"$root/ci/slurm" --help > "$tmp/help" 2>&1
check '[ $? = 0 ] && grep -q -- "--partition" "$tmp/help" && grep -q -- "--compile-only" "$tmp/help"' "--help lists the options"

# The default night: build, tasks (one per suite), merge, report.
slurm --out "$tmp/n1" --partition gpuq --account perf --merge-partition cpuq --time 01:30:00 \
    --sbatch-arg --qos=nightly --sbatch-arg "--comment=a b" --max-running 2
check '[ $? = 0 ]' "submitting passes: $(cat "$tmp/stderr")"
check '[ "$(wc -l < "$SBATCH_LOG")" = 4 ]' "four jobs: $(cat "$SBATCH_LOG")"
nsuites=$(. "$root/ci/lib.sh"; fb_default_suites "$root" | wc -w)
check '[ "$nsuites" -ge 1 ] && [ "$(wc -l < "$tmp/n1/slurm/tasks.tsv")" = "$nsuites" ]' "one task per suite"
check 'job 101 | grep -q "job-name=fusebench-build.*--partition=cpuq"' "the build job goes to the merge partition: $(job 101)"
check '! job 101 | grep -q -- "--gres"' "the build job asks for no GPU"
check 'job 102 | grep -q -- "--array=0-$((nsuites - 1))%2 "' "the tasks are one array, at most 2 running: $(job 102)"
check 'job 102 | grep -q -- "--partition=gpuq --gres=gpu:1 --time=01:30:00"' "each task: the GPU partition, one GPU, the time limit"
check 'job 102 | grep -q -- "--dependency=afterok:101 --kill-on-invalid-dep=yes"' "the tasks wait for the build"
check 'job 103 | grep -q -- "--dependency=afterok:102 --kill-on-invalid-dep=yes"' "merge runs after every task succeeded: $(job 103)"
check 'job 104 | grep -q -- "--dependency=afternotok:102 --kill-on-invalid-dep=yes"' "report runs when a task failed: $(job 104)"
check '! job 103 | grep -q -- "--gres\|--time"' "merge asks for no GPU and takes the site's time limit"
for j in 101 102 103 104; do
    check 'job $j | grep -q -- "--qos=nightly --comment=a b --account=perf"' "job $j has the extra arguments and the account: $(job $j)"
done
check 'grep -q "^tasks	102$" "$tmp/n1/slurm/jobs.tsv" && grep -q "^merge	103$" "$tmp/n1/slurm/jobs.tsv"' "job ids are kept (the cluster suffix dropped)"
check 'grep -q "submitted: tasks 102" "$tmp/stderr"' "the ids are printed"
check 'job 102 | grep -q "$tmp/n1/slurm/task.sbatch$"' "the tasks run the written batch script"
check 'grep -q "slurm_job.* task .*SLURM_ARRAY_TASK_ID" "$tmp/n1/slurm/task.sbatch"' "a task is chosen by its array index"
# A night already submitted is not submitted again into the same folder.
slurm --out "$tmp/n1"
check '[ $? = 2 ] && grep -q "already holds" "$tmp/stderr" && [ ! -s "$SBATCH_LOG" ]' "a second night in the same --out is refused"

# Slices, no build job, no GPU, compile-only: what each task runs.
slurm --out "$tmp/n2" --suites "qkv_split embedding" --slices 3 --skip-setup --gres none --compile-only -- --dtype bf16
check '[ $? = 0 ]' "slices: $(cat "$tmp/stderr")"
check '[ "$(wc -l < "$SBATCH_LOG")" = 3 ] && job 101 | grep -q -- "--array=0-5 "' "six tasks, no build job: $(cat "$SBATCH_LOG")"
check '! grep -q -- "--gres\|--partition\|--account" "$SBATCH_LOG"' "--gres none asks for nothing; nothing of a site by default"
check '! job 101 | grep -q -- "--dependency"' "without a build job the tasks wait for nothing"
check 'grep -q "^5	embedding	2	3$" "$tmp/n2/slurm/tasks.tsv"' "task 5 is the third slice of embedding"

# slurm_job's task step, run here with a stand-in run_suite: the slice's
# cases, as an anchored --filter that matches them and nothing else.
cat > "$tmp/fake_run_suite" <<'EOF'
#!/bin/sh
suite=$1; shift
case " $* " in *" --list "*)
    printf '%s\n' "$suite/fwd/fuser/f32/1x2" "$suite/fwd/ref.v2/f32/1x2" "$suite/fwd/fuser/bf16/1x2" \
        "$suite/fwd/ref.v2/bf16/1x2" "$suite/bwd+x/fuser/f32/3x4"; exit 0 ;;
esac
printf '%s\n' "$*" > "$FAKE_ARGS"
[ -z "${FAKE_ENV:-}" ] || echo "omp=${OMP_NUM_THREADS:-}" > "$FAKE_ENV"
while [ $# -gt 0 ]; do [ "$1" = --out ] && printf '{}\n' > "$2"; shift; done
exit "${FAKE_STATUS:-0}"
EOF
chmod +x "$tmp/fake_run_suite"
sed -i "s|^run_suite=.*|run_suite='$tmp/fake_run_suite'|" "$tmp/n2/slurm/job.env"
FAKE_ARGS=$tmp/args0 sh "$root/ci/slurm_job" task "$tmp/n2" 3 2> "$tmp/task.err"
check '[ $? = 0 ]' "task 3 passes: $(cat "$tmp/task.err")"
check 'grep -q -- "--format json --out $tmp/n2/shards/task_3.json --dtype bf16 --compile-only --repetitions 5 --filter" "$tmp/args0"' \
    "the task runs its suite into its run file, compile-only, 5 repetitions (the default), with run_suite's arguments: $(cat "$tmp/args0")"
filter=$(sed 's/.* --filter //' "$tmp/args0")
"$tmp/fake_run_suite" embedding --list | grep -E "$filter" > "$tmp/slice"
check '[ "$(cat "$tmp/slice")" = "$(printf "embedding/fwd/fuser/f32/1x2\nembedding/fwd/ref.v2/bf16/1x2")" ]' \
    "slice 1/3 is the 1st and 4th case, the '.' taken literally: $filter"
check 'grep -qx "0 [^ ]* 0 unset" "$tmp/n2/status/task_3"' "the task's status: $(cat "$tmp/n2/status/task_3")"
check '! printf "embedding/fwd/refXv2/bf16/1x2\n" | grep -qE "$filter"' "the filter's '.' matches only a '.'"
FAKE_ARGS=$tmp/args1 sh "$root/ci/slurm_job" task "$tmp/n2" 4 2> /dev/null
# The task's checks get its CPUs (--cpus-per-task), unless OMP_NUM_THREADS is set.
(unset OMP_NUM_THREADS; SLURM_CPUS_PER_TASK=6 FAKE_ENV=$tmp/env6 FAKE_ARGS=$tmp/args6 sh "$root/ci/slurm_job" task "$tmp/n2" 4 2> /dev/null)
check 'grep -qx "omp=6" "$tmp/env6"' "--cpus-per-task 6: the task's checks on 6 threads ($(cat "$tmp/env6"))"
(OMP_NUM_THREADS=2 SLURM_CPUS_PER_TASK=6 FAKE_ENV=$tmp/env2 FAKE_ARGS=$tmp/args2b sh "$root/ci/slurm_job" task "$tmp/n2" 4 2> /dev/null)
check 'grep -qx "omp=2" "$tmp/env2"' "OMP_NUM_THREADS set: kept ($(cat "$tmp/env2"))"
check 'grep -q "bwd\\\\+x/fuser/f32/3x4" "$tmp/args1"' "a '+' is escaped: $(cat "$tmp/args1")"
# A case that failed inside a run file is the gate's to judge: the task passes;
# run_suite failing without a run file fails the task.
FAKE_ARGS=$tmp/args2 FAKE_STATUS=1 sh "$root/ci/slurm_job" task "$tmp/n2" 0 2> /dev/null
check '[ $? = 0 ] && grep -qx "0 [^ ]* 1 unset" "$tmp/n2/status/task_0"' "run_suite's 1 with a run file: the task passes, the status keeps the 1"
sed -i "s|^run_suite=.*|run_suite=/nonexistent/run_suite|" "$tmp/n2/slurm/job.env"
sh "$root/ci/slurm_job" task "$tmp/n2" 1 2> /dev/null
check '[ $? != 0 ] && grep -q "^127 " "$tmp/n2/status/task_1"' "no run_suite, no run file: the task fails ($(cat "$tmp/n2/status/task_1"))"

# The report step names the failed tasks, and those that never finished.
rm -f "$tmp/n2"/status/task_*
echo "0 node1 0 GPU-0" > "$tmp/n2/status/task_0"
echo "2 node2 2 GPU-1" > "$tmp/n2/status/task_1"
for i in 2 3 4; do echo "0 node1 0 GPU-0" > "$tmp/n2/status/task_$i"; done
sh "$root/ci/slurm_job" report "$tmp/n2" 2> "$tmp/report.err"
check '[ $? = 1 ]' "the report exits 1"
check 'grep -q "^1 report failed: task 1 (suite qkv_split, slice 2/3); task 5 (suite embedding, slice 3/3)$" "$tmp/n2/status/final"' \
    "the verdict names the failed task and the one that never finished: $(cat "$tmp/n2/status/final")"
check 'grep -q "task 1 (suite qkv_split, slice 2/3) on node2: run_suite exit status 2" "$tmp/report.err"' "the failed task's node and status"
check 'grep -q "task 5 (suite embedding, slice 3/3) never finished" "$tmp/report.err"' "a task without a status never finished"

# --dry-run writes the scripts and submits nothing.
slurm --out "$tmp/n3" --dry-run
check '[ $? = 0 ] && [ ! -s "$SBATCH_LOG" ] && [ -s "$tmp/n3/slurm/submit.sh" ]' "--dry-run submits nothing"
check 'grep -q "sbatch --parsable" "$tmp/stdout"' "--dry-run prints the commands"

# A failed submission: exit 2, the jobs already submitted named.
SBATCH_FAIL_AT=3 slurm --out "$tmp/n4"
check '[ $? = 2 ] && grep -q "Invalid account" "$tmp/stderr" && grep -q "already submitted.*tasks	102" "$tmp/stderr"' \
    "a refused job: exit 2, sbatch's reason, the jobs already in: $(cat "$tmp/stderr")"

# Bad usage: exit 2, nothing submitted.
expect2() {
    slurm --out "$tmp/bad" "$@"
    rc=$?
    check '[ $rc = 2 ] && [ -s "$tmp/stderr" ] && [ ! -s "$SBATCH_LOG" ]' "exit 2, nothing submitted: $* (got $rc: $(head -n 1 "$tmp/stderr"))"
}
expect2 --slices 0
expect2 --slices two
expect2 --suites "../etc"
expect2 --suites " "
expect2 --dry-run --wait
expect2 --no-such-option
expect2 --partition
expect2 --poll 0
if ! PATH=/usr/bin:/bin command -v sbatch > /dev/null 2>&1; then
    PATH=/usr/bin:/bin expect2 --suites qkv_split
    check 'grep -q "sbatch is not on PATH" "$tmp/stderr"' "without sbatch: says so"
fi

if [ "$fail" = 0 ]; then rm -rf "$tmp"; echo "test_ci_slurm_submit: ok"; else echo "files kept in $tmp" >&2; fi
exit "$fail"
