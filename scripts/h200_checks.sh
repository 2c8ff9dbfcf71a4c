#!/usr/bin/env bash
# scripts/h200_checks.sh -- the GPU checks that issues 19 and 22 still need on an H200, each one
# call of the device tool (carry .debs: the image lacks cJSON, see gpu_session.sh):
#
#   scripts/h200_checks.sh targets      the gate's fuser rows (every suite, default sizes), the
#                                       soft-capped cross entropy against torch.compile (bf16,
#                                       f32), fuzz_torch (the generator's 200 fusions against
#                                       torch.compile) and Nsight Compute of the bf16 fused cross
#                                       entropy (8192x32768, 8192x128256) and the bf16 embedding
#                                       backward; ~560 s
#   scripts/h200_checks.sh short        the two most needed of `targets` in ~370 s: the soft-capped
#                                       cross entropy against torch.compile, then the gate's fuser rows
#   scripts/h200_checks.sh tests        every `gpu` test (~80 s on an H100, four at a time), then
#                                       the transpose scheduler's A/B beside torch.compile
#                                       (scripts/gpu/transpose.sh)
#   scripts/h200_checks.sh cluster-ab   the default (a cluster block's next row part in flight
#                                       during this row's pass 2 where the card's balance asks it,
#                                       docs/perf.md v47, v50) against ROW_PREFETCH_CLUSTER_BYTES=0:
#                                       cross entropy fwd+bwd bf16 at 8192 x 128256 and 256000, bwd
#                                       f32 at 8192 x 50304 and 256000 (the rows in clusters). On a
#                                       whole H100 both builds plan alike (its balance is under the
#                                       switch's): there, only under FUSER_SM_LIMIT=96.
#                                       CLUSTER_PART_BYTES (v41) lost 3-7% at an H200's share (v46):
#                                       AB_ALL=1 adds it
#   scripts/h200_checks.sh softcap-ab   POLY_EXP_EIGHTHS 2 and 4 and MUFU_ROW_ITERS=16 against the
#                                       default, on the soft-capped cross entropy (docs/perf.md v44)
#   scripts/h200_checks.sh queue-ab     ROW_PREFETCH_QUEUE_BYTES=128 (the next queued row's first batch
#                                       in flight during this row's later passes) against the
#                                       default, cross entropy bwd and fwd+bwd (docs/perf.md v45)
#   scripts/h200_checks.sh outer-norm   on any card: the outer scheduler's normalizations (off by
#                                       default, FUSER_OUTER_NORM=1): test_reduce_gpu, the generator's
#                                       fusions with them on the GPU, and outer_norm.fusion timed with
#                                       and without them beside torch.compile (scripts/gpu/outer_norm.sh,
#                                       docs/perf.md v51); ~300 s
#   scripts/h200_checks.sh workloads    on any card: the QK norm, masked mean pool and group norm
#                                       that session 51 made one kernel each, and a layer norm over
#                                       x.view(-1, D) whose input it keeps between passes; f32 and
#                                       bf16, beside torch.compile (scripts/gpu/workloads.sh; their
#                                       correctness is test_reduce_gpu's, run first);
#                                       WORKLOAD_VARIANTS=1 adds the plans before (variants.sh); ~300 s
#   scripts/h200_checks.sh torch-sweep  on any card: test_torch_ops.py with the sweep (every op over
#                                       every dtype, `fuser-fuzz sweep`) through the PyTorch
#                                       translation on the GPU, then on the CPU, failures grouped by
#                                       what they say; ~1 min
#   scripts/h200_checks.sh emulate      the other way round, on any card but an H200: every `gpu`
#                                       test on 64 SMs (FUSER_SM_LIMIT) with test_run_suite_compile
#                                       (--with-torch refused under a limit), then the rows whose H200
#                                       figures fall short (cross entropy fwd+bwd at 8192 x 32768 ..
#                                       256000, the embedding backward, the soft-capped cross
#                                       entropy) on every SM and on 96: an H100's 96 SMs each move
#                                       an H200 SM's bytes a clock (docs/perf.md v46); ~300 s. An
#                                       A/B under the limit: FUSER_SM_LIMIT=96 before a VARIANTS
#                                       call of gpu_session.sh
#
# Each but `emulate`, `outer-norm`, `workloads` and `torch-sweep` runs only on an H200 (the targets are the
# H200's: its compute to bandwidth balance is not the H100's) and otherwise says so and exits 0
# at once, so that a start that brings an H100 costs seconds; --any-card runs it anyway. Then,
# here: `scripts/compare results/baselines/nvidia_h200.json run.json` on the gate's run file in
# session.tgz (`targets`: run.json; `short`: run2.json).
# FUSEBENCH_GIT_COMMIT (default: git's HEAD where there is a .git) names the commit in the run file.
set -u
case "${1:-}" in
    -h|--help|'') sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; [ -n "${1:-}" ]; exit $? ;;
    --version) echo "h200_checks.sh (fusebench) $(cat "$(dirname "$0")/../VERSION")"; exit 0 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here" || exit 2
what=$1
any=0
[ "${2:-}" = --any-card ] && any=1
case "$what" in targets|short|tests|cluster-ab|softcap-ab|queue-ab|emulate|torch-sweep|outer-norm|workloads) ;; *) echo "h200_checks.sh: unknown check '$what' (see --help)" >&2; exit 2 ;; esac
card=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo "card: ${card:-none}"
if [ -z "$card" ] && [ "$what" != torch-sweep ]; then echo "h200_checks.sh: no GPU here"; exit 0; fi
if [ "$what" = emulate ]; then
  if echo "$card" | grep -q H200; then echo "h200_checks.sh: an H200: nothing to emulate (run targets)"; exit 0; fi
elif [ "$what" != torch-sweep ] && [ "$what" != outer-norm ] && [ "$what" != workloads ] && [ "$any" = 0 ] && ! echo "$card" | grep -q H200; then
  echo "h200_checks.sh: not an H200, nothing run (--any-card runs it anyway)"; exit 0
fi
if [ -z "${FUSEBENCH_GIT_COMMIT:-}" ] && git rev-parse --short HEAD >/dev/null 2>&1; then
  FUSEBENCH_GIT_COMMIT=$(git rev-parse --short HEAD)
fi
export FUSEBENCH_GIT_COMMIT
common=(GPU_SESSION_ASAN=0 GPU_SESSION_CHECKS=0)
softcap="fuser/tests/data/softcap_cross_entropy.fusion --sizes N=8192,V=32768 --dtype bf16,f32"
# torch.compile of the soft-capped cross entropy warms while the rest builds (gpu_session.sh)
warm_softcap() {
  warm=/tmp/h200_checks_warm.json
  # shellcheck disable=SC2086 # the selection is words
  { cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/b -j "$(nproc)" --target run_suite &&
    /tmp/b/suites/run_suite $softcap --write-fusions "$warm"; } >/dev/null 2>&1 || warm=
}
# an A/B of scheduler switches (gpu_session.sh's variants part): VARIANTS, rounds, run_suite
# arguments, seconds a run (each row is checked against the interpreter, on the CPU: at 8192 x
# 256000 ~20 s a row)
variants_ab() {
  env "${common[@]}" GPU_SESSION_DEADLINE_S=560 GPU_SESSION_TESTS=0 GPU_SESSION_TARGETS=run_suite GPU_SESSION_PARTS=variants \
    VARIANTS="$1" VARIANT_ROUNDS="$2" VARIANT_TIMEOUT_S="${4:-80}" VARIANT_ARGS="$3" scripts/gpu_session.sh
}
case "$what" in
  targets)
    warm_softcap
    env "${common[@]}" GPU_SESSION_DEADLINE_S=560 GPU_SESSION_TESTS=0 GPU_SESSION_TARGETS="run_suite fuser_fuzz fuser_cli" \
      GPU_SESSION_SUITES_FIRST=1 GPU_SESSION_PARTS="fuzz_torch profile" FUZZ_TORCH_BUDGET_S=230 \
      PROFILE_CASES="suites/cross_entropy/cross_entropy_fwdbwd.fusion N=8192 V=32768 DT=bf16;suites/cross_entropy/cross_entropy_fwdbwd.fusion N=8192 V=128256 DT=bf16;suites/embedding/embedding_bwd.fusion DT=bf16" \
      GPU_SESSION_WARM=$warm GPU_SESSION_SECOND="$softcap --with-torch --repetitions 3 --time-limit 0.2" \
      scripts/gpu_session.sh all --filter /fuser/ --repetitions 3 --time-limit 0.1 ;;
  short)
    warm_softcap
    # shellcheck disable=SC2086 # the selection is words
    env "${common[@]}" GPU_SESSION_DEADLINE_S=370 GPU_SESSION_TESTS=0 GPU_SESSION_TARGETS=run_suite GPU_SESSION_WARM=$warm \
      GPU_SESSION_SECOND="all --filter /fuser/ --repetitions 3 --time-limit 0.1" \
      scripts/gpu_session.sh $softcap --with-torch --repetitions 3 --time-limit 0.2 ;;
  tests)
    env "${common[@]}" GPU_SESSION_DEADLINE_S=450 GPU_SESSION_LABELS=gpu GPU_SESSION_PARTS=transpose scripts/gpu_session.sh ;;
  cluster-ab)
    parts=
    [ "${AB_ALL:-0}" = 1 ] && parts=";part64=-DCLUSTER_PART_BYTES=65536"
    variants_ab "noprefetch=-DROW_PREFETCH_CLUSTER_BYTES=0$parts" 2 \
      "cross_entropy --sizes 8192x128256,8192x256000 --dtype bf16 --filter /fwdbwd/fuser/ --repetitions 3 --time-limit 0.1 | cross_entropy --sizes 8192x50304,8192x256000 --dtype f32 --filter /bwd/fuser/ --repetitions 3 --time-limit 0.1" 100 ;;
  queue-ab)
    variants_ab "queue=-DROW_PREFETCH_QUEUE_BYTES=128" 3 \
      "cross_entropy --sizes 8192x32768,8192x50304,4093x50257 --filter /(bwd|fwdbwd)/fuser/ --repetitions 3 --time-limit 0.2" ;;
  softcap-ab)
    variants_ab "poly2=-DPOLY_EXP_EIGHTHS=2;poly4=-DPOLY_EXP_EIGHTHS=4;it16=-DMUFU_ROW_ITERS=16" 2 \
      "$softcap --repetitions 3 --time-limit 0.2" ;;
  outer-norm)
    env "${common[@]}" GPU_SESSION_DEADLINE_S=560 GPU_SESSION_LABELS=gpu GPU_SESSION_TEST_NAMES='^test_reduce_gpu$' \
      GPU_SESSION_PARTS=outer_norm scripts/gpu_session.sh ;;
  workloads)
    env "${common[@]}" GPU_SESSION_DEADLINE_S=560 GPU_SESSION_LABELS=gpu GPU_SESSION_TEST_NAMES='^test_reduce_gpu$' \
      GPU_SESSION_PARTS=workloads scripts/gpu_session.sh ;;
  torch-sweep)
    out=${OUT:-/tmp/session}
    mkdir -p "$out"
    { cmake -S . -B /tmp/bt -DCMAKE_BUILD_TYPE=Release && cmake --build /tmp/bt -j "$(nproc)" --target fuser_cli fuser_fuzz; } \
      >"$out/build.log" 2>&1 || { tail -n 20 "$out/build.log"; exit 1; }
    for dev in cuda cpu; do
      TORCH_OPS_DEVICE=$dev FUSER_BIN=/tmp/bt/fuser/fuser FUSER_FUZZ_BIN=/tmp/bt/fuser/fuser-fuzz timeout 200 \
        python3 reference/tests/test_torch_ops.py >"$out/torch_ops_$dev.txt" 2>&1
      echo "test_torch_ops.py with the sweep on $dev: exit $?"
      # the failures by what they say (fusion names and numbers elided)
      grep FAILED "$out/torch_ops_$dev.txt" | sed -E 's/sweep sw_[a-z0-9_]+_S[0-9]+/sweep X/; s/[0-9.e+-]{3,}/N/g' |
        sort | uniq -c | sort -rn | head -n 30
      tail -n 1 "$out/torch_ops_$dev.txt"
    done ;;
  emulate)
    # every `gpu` test but test_runtime_gpu (which sets its own limits) on 64 SMs: plans for
    # another SM count, and the green context under every kernel kind; and test_run_suite_compile,
    # whose GPU branch checks that --with-torch is refused under the limit
    env "${common[@]}" FUSER_SM_LIMIT=64 GPU_SESSION_DEADLINE_S=200 GPU_SESSION_LABELS='gpu|compile' \
      GPU_SESSION_TEST_NAMES='^test_(reduce|fuzz|fuzz_ops|fuzz_rows|sweep|segment_examples|segment|above_bound|harness|reference)_gpu$|^test_run_suite_compile$' \
      scripts/gpu_session.sh
    rs=/tmp/b/suites/run_suite out=${OUT:-/tmp/session}
    [ -x "$rs" ] || { echo "h200_checks.sh: no $rs (the build failed: $out/build.log)"; exit 1; }
    # shellcheck disable=SC2086 # the selections are words
    for sel in "cross_entropy --sizes 8192x32768,8192x128256,8192x256000 --filter /fwdbwd/fuser/" \
               "embedding --sizes 50304x768x8192 --filter /bwd_deterministic/fuser/" "$softcap"; do
      for sms in 0 96; do
        echo "== SMs: ${sms/#0/all}: run_suite $sel"
        FUSER_SM_LIMIT=$sms timeout 100 "$rs" $sel --repetitions 3 --time-limit 0.1 >"$out/emulate.txt" 2>"$out/emulate.err"
        grep -E ' (ok|FAIL|WRONG)' "$out/emulate.txt" || tail -n 3 "$out/emulate.err"
      done
    done ;;
esac
