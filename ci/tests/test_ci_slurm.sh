#!/bin/sh
# test_ci_slurm.sh -- ci/slurm on a real one-node Slurm cluster started here
# (Debian's slurm-wlm and munge; scripts/setup installs them), configured in
# a temporary folder and stopped at the end whatever happens. The node has
# four stand-in GPUs (gres), so that --gres=gpu:1 is scheduled as on a GPU
# cluster. Four nights, submitted at once, each waited for with a time limit:
#   1. compile-only, qkv_split in two slices: the merged run has every case
#      of a plain run_suite of the suite, with the same kernel, launch and
#      segment counts and statuses; every task was given one GPU
#   2. compile-only, qkv_split and a suite that does not exist: the night
#      fails (exit 1) and names the failed task
#   3. a GPU night with a stand-in run_suite (synthetic runs, one suite 8%
#      slower than the baseline): merged, gated (exit 1, as ci/nightly),
#      plotted, kept
#   4. one task's run from another commit: the merge refuses it (exit 2)
# Where the cluster cannot start (not root, no munge or Slurm, the daemons
# do not come up) it says why in one line and exits 77.
# Environment (set by CTest): FUSEBENCH_ROOT, RUN_SUITE (the built binary),
# FUSEBENCH_GATE_DIR, GATE_SYNTH.
# shellcheck disable=SC2034 # variables read by check()'s eval
set -u
root=${FUSEBENCH_ROOT:?}
run_suite_bin=${RUN_SUITE:?}
: "${FUSEBENCH_GATE_DIR:?}" "${GATE_SYNTH:?}"
skip() { echo "test_ci_slurm: skipped: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "the one-node Slurm cluster needs root (slurmd runs the jobs)"
for p in munged munge slurmctld slurmd sbatch squeue scontrol scancel sinfo; do
    command -v "$p" >/dev/null 2>&1 || skip "$p is not installed (apt-get install slurm-wlm munge; scripts/setup does)"
done

fail=0
check() { if ! eval "$1"; then echo "FAIL: $2" >&2; fail=1; fi; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/test_slurm.XXXXXX")
chmod 755 "$tmp" # munged wants every folder above its socket searchable
c=$tmp/cluster
mkdir -p "$c/munge" "$c/state" "$c/spool" "$c/log"
pids= nights=

# Stop the cluster, whatever happened: the jobs first, then the daemons we
# started (by their ids), then the files (kept when something failed).
stop_cluster() {
    for p in $nights; do kill "$p" 2>/dev/null || true; done
    if [ -n "$pids" ]; then
        scancel --quiet --user=root >/dev/null 2>&1 || true
        i=0
        while [ $i -lt 20 ] && [ -n "$(squeue -h -o %i 2>/dev/null)" ]; do sleep 0.5; i=$((i + 1)); done
        for p in $pids; do kill "$p" 2>/dev/null || true; done
        for p in $pids; do wait "$p" 2>/dev/null || true; done
        pids=
    fi
}
finish() {
    stop_cluster
    if [ "$fail" = 0 ]; then rm -rf "$tmp"; else echo "files kept in $tmp" >&2; fi
}
trap finish EXIT
trap 'fail=1; exit 1' HUP INT TERM

# Two free TCP ports (slurmctld, slurmd): another cluster may run here too.
used=$(ss -Htln 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')
port() {
    p=$(( ($$ * 7 + $1 * 131) % 20000 + 30000 ))
    while printf '%s\n' "$used" | grep -qx "$p"; do p=$((p + 1)); done
    echo "$p"
}
ctld_port=$(port 1)
slurmd_port=$(port 2)
[ "$slurmd_port" != "$ctld_port" ] || slurmd_port=$((slurmd_port + 1))

dd if=/dev/urandom of="$c/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$c/munge/munge.key"
for i in 0 1 2 3; do : > "$c/gpu$i"; done
cat > "$c/slurm.conf" <<EOF
ClusterName=fbtest$$
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$c/munge/socket
CredType=cred/munge
StateSaveLocation=$c/state
SlurmdSpoolDir=$c/spool
SlurmctldPidFile=$c/slurmctld.pid
SlurmdPidFile=$c/slurmd.pid
SlurmctldLogFile=$c/log/slurmctld.log
SlurmdLogFile=$c/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerParameters=sched_interval=2
MinJobAge=600
SlurmdParameters=config_overrides
NodeName=fbnode NodeAddr=127.0.0.1 NodeHostname=$(hostname) CPUs=4 RealMemory=1000 Gres=gpu:4 State=UNKNOWN
PartitionName=fbgpu Nodes=fbnode Default=YES MaxTime=30 State=UP
EOF
# The stand-in GPUs are plain files: slurmd logs that they are no devices,
# schedules them all the same, and sets no CUDA_VISIBLE_DEVICES.
echo "NodeName=fbnode Name=gpu File=$c/gpu[0-3]" > "$c/gres.conf"
SLURM_CONF=$c/slurm.conf
export SLURM_CONF

munged -F --socket="$c/munge/socket" --key-file="$c/munge/munge.key" --pid-file="$c/munge/pid" \
    --log-file="$c/munge/log" --seed-file="$c/munge/seed" 2> "$c/log/munged.err" &
pids="$pids $!"
i=0
while [ ! -S "$c/munge/socket" ] && [ $i -lt 40 ]; do sleep 0.25; i=$((i + 1)); done
[ -S "$c/munge/socket" ] || skip "munged did not start: $(tail -n 1 "$c/munge/log" "$c/log/munged.err" 2>/dev/null | grep . | tail -n 1)"
slurmctld -D -f "$c/slurm.conf" > "$c/log/slurmctld.out" 2>&1 &
pids="$pids $!"
slurmd -D -f "$c/slurm.conf" -N fbnode > "$c/log/slurmd.out" 2>&1 &
pids="$pids $!"
i=0 state=
while [ $i -lt 60 ]; do
    state=$(sinfo -h -n fbnode -o %T 2>/dev/null)
    [ "$state" = idle ] && break
    sleep 0.5
    i=$((i + 1))
done
[ "$state" = idle ] || skip "the one-node Slurm cluster did not come up (node state '${state:-none}'): $(grep -h -i 'error\|fatal' "$c"/log/*.log "$c"/log/*.out 2>/dev/null | grep -v -i 'pmix\|not a valid character' | tail -n 1)"

# The nights, submitted at once; each ci/slurm --wait runs in the background.
export FUSER_CACHE_DIR="$tmp/kernel-cache"
slurm() { "$root/ci/slurm" --skip-setup --partition fbgpu --wait --poll 1 --timeout 100 "$@"; }
FUSEBENCH_RUN_SUITE=$run_suite_bin slurm --compile-only --suites qkv_split --slices 2 \
    --sbatch-arg=--cpus-per-task=1 --out "$tmp/n1" > "$tmp/n1.out" 2> "$tmp/n1.err" &
n1=$! nights="$nights $n1"
FUSEBENCH_RUN_SUITE=$run_suite_bin slurm --compile-only --suites "qkv_split no_such_suite" \
    --out "$tmp/n2" > "$tmp/n2.out" 2> "$tmp/n2.err" &
n2=$! nights="$nights $n2"
res=$tmp/results
mkdir -p "$res/baselines"
"$GATE_SYNTH" "$res/baselines/nvidia_h200.json" --samples 10 --commit aaa0001 --date 2025-06-01T01:00:00Z || exit 1
FUSEBENCH_RUN_SUITE=$root/results/gate/tests/fake_run_suite.sh FAKE_SCALE=1.08 FAKE_SLOW='qkv_split/*' \
    FAKE_SEED=3 FAKE_COMMIT=aaa0003 FAKE_DATE=2025-06-03T01:00:00Z \
    slurm --results "$res" --out "$tmp/n3" > "$tmp/n3.out" 2> "$tmp/n3.err" &
n3=$! nights="$nights $n3"
cat > "$tmp/other_commit.sh" <<EOF
#!/bin/sh
# run_suite stand-in: the embedding suite's run comes from another build.
[ "\$1" != embedding ] || FAKE_COMMIT=bbb0004
export FAKE_COMMIT
exec "$root/results/gate/tests/fake_run_suite.sh" "\$@"
EOF
chmod +x "$tmp/other_commit.sh"
FUSEBENCH_RUN_SUITE=$tmp/other_commit.sh FAKE_COMMIT=aaa0004 \
    slurm --results "$res" --suites "qkv_split embedding" --out "$tmp/n4" > "$tmp/n4.out" 2> "$tmp/n4.err" &
n4=$! nights="$nights $n4"

# The plain run the first night is compared with, while the nights run.
"$run_suite_bin" qkv_split --compile-only --format json --out "$tmp/plain.json" > /dev/null 2> "$tmp/plain.err"
check '[ $? = 0 ]' "the plain compile-only run_suite: $(tail -n 3 "$tmp/plain.err")"

wait "$n1"; rc1=$?
wait "$n2"; rc2=$?
wait "$n3"; rc3=$?
wait "$n4"; rc4=$?
nights=

# 1. Compile-only, two slices: the same cases as the plain run.
check '[ $rc1 = 0 ]' "the compile-only night passes (got $rc1): $(cat "$tmp/n1.err")"
check '[ "$(wc -l < "$tmp/n1/slurm/tasks.tsv")" = 2 ]' "two tasks, one per slice"
check '[ -s "$tmp/n1/shards/task_0.json" ] && [ -s "$tmp/n1/shards/task_1.json" ]' "each slice wrote its run file"
tsv() { "$FUSEBENCH_GATE_DIR/fusebench-json2tsv" cases "$1" | awk -F '\t' 'NR > 1 { print $1, $7, $12, $13, $14 }' | sort; }
tsv "$tmp/n1/run.json" > "$tmp/merged.cases" 2>&1
tsv "$tmp/plain.json" > "$tmp/plain.cases" 2>&1
check '[ "$(wc -l < "$tmp/plain.cases")" -ge 4 ]' "the plain run has cases: $(cat "$tmp/plain.cases")"
check 'cmp -s "$tmp/merged.cases" "$tmp/plain.cases"' \
    "merged and plain runs agree case for case (name status kernels launches segments): $(diff "$tmp/merged.cases" "$tmp/plain.cases" | head -n 8)"
check '! grep -qv " skipped " "$tmp/merged.cases"' "every case was planned and compiled"
tasks1=$(awk -F '\t' '$1 == "tasks" { print $2 }' "$tmp/n1/slurm/jobs.tsv" 2>/dev/null)
check 'scontrol -o show job "$tasks1" 2>/dev/null | grep -q "gres.gpu=1\|gres:gpu:1"' \
    "each task was given one GPU: $(scontrol -o show job "$tasks1" 2>&1 | head -n 1 | tr ' ' '\n' | grep -i tres)"
check 'grep -q -- "--partition=.fbgpu. --gres=.gpu:1." "$tmp/n1/slurm/submit.sh"' "the tasks ask for the partition and one GPU"
check 'grep -q -- "--cpus-per-task=1" "$tmp/n1/slurm/submit.sh"' "extra sbatch arguments reach sbatch"

# 2. A failed task fails the night and is named.
check '[ $rc2 = 1 ]' "a night with a failed task exits 1 (got $rc2): $(cat "$tmp/n2.err")"
check 'grep -q "failed: task 1 (suite no_such_suite)" "$tmp/n2.err"' "the failed task is named: $(cat "$tmp/n2.err")"
check '! grep -q "task 0" "$tmp/n2/status/final"' "the task that passed is not named"
check '[ ! -f "$tmp/n2/run.json" ]' "nothing is merged"

# 3. A GPU night: merged, gated against the baseline of its GPU model, plotted, kept.
check '[ $rc3 = 1 ]' "a slower night exits 1, as ci/nightly (got $rc3): $(cat "$tmp/n3.err")"
check 'grep -q "Regression gate: FAILED" "$tmp/n3/gate.md"' "the gate's report says FAILED"
check 'grep -q "4 SLOWER" "$tmp/n3/gate.md"' "the 4 qkv_split cases are SLOWER"
check '! grep -q "not in the run" "$tmp/n3/gate.md"' "the merged run has every suite"
check '[ -f "$res/runs/2025-06-03T010000Z_aaa0003_nvidia_h200.json.gz" ]' "the night's run is kept"
check 'ls "$tmp/n3/plots" | grep -q "^bandwidth_.*png$"' "bandwidth plots are drawn"
check 'grep -q "\"shards\"" "$tmp/n3/run.json"' "the merged run lists its shards"

# 4. Runs of different builds are not merged.
check '[ $rc4 = 2 ]' "runs of different commits: exit 2 (got $rc4): $(cat "$tmp/n4.err")"
check 'grep -q "different builds" "$tmp/n4/logs/merge.log"' "the merge says why: $(cat "$tmp/n4/logs/merge.log" 2>&1)"
check '[ ! -f "$tmp/n4/run.json" ]' "no merged run is written"

stop_cluster
[ "$fail" = 0 ] && echo "test_ci_slurm: ok"
exit "$fail"
