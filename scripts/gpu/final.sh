#!/usr/bin/env bash
# scripts/gpu/final.sh -- the session's closing run on a GPU machine (at most ~9 minutes), against
# a Release build at ${BUILD:-/tmp/b}:
#   1. scripts/compile_times.sh --phases (NVRTC, every suite kernel, two cold compiles; not with
#      FINAL_COMPILE_TIMES=0);
#   2. torch.compile's caches warmed by FINAL_WARMERS (8) parallel torch_bench.py processes over
#      the fusions of `run_suite all` (FINAL_WARM: the --write-fusions file), while
#      test_runtime_gpu runs (cluster launches);
#   3. `run_suite all --with-torch` (both dtypes, every case checked against the interpreter;
#      FINAL_ARGS, default --repetitions 3 --time-limit 0.1) into final/run.json;
#   4. the gate: scripts/compare results/baselines/nvidia_h200.json against that run;
#   5. if time is left (FINAL_BUDGET_S, default 520 s from the start), the cross entropy rows
#      split over clusters (fwd+bwd and bwd at V = 50304, 128256, 256000, fuser only; other
#      rows with FINAL_TAIL_SIZES and FINAL_TAIL_FILTER).
# Logs under ${OUT:-/tmp/out}/final/.
# shellcheck source=part.sh
. "$(dirname "$0")/part.sh" final
cd "$here" || exit 2
export PYTHONUNBUFFERED=1
start=$SECONDS
budget=${FINAL_BUDGET_S:-520}
rs=$build/suites/run_suite

if [ "${FINAL_COMPILE_TIMES:-1}" = 1 ]; then
  timeout 90 scripts/compile_times.sh "$build/fuser/fuser" 2 --phases >"$out/compile_times.txt" 2>&1
  echo "compile_times: exit $? in $((SECONDS - start)) s"; tail -n 4 "$out/compile_times.txt"
fi

warm=${FINAL_WARM:-.devcache/warm.json}
pids=()
if [ -f "$warm" ]; then
  n=${FINAL_WARMERS:-8}
  python3 - "$warm" "$n" "$out" <<'PY'
import json, sys
items = json.load(open(sys.argv[1]))["items"]
n = int(sys.argv[2])
for k in range(n):
    json.dump({"items": items[k::n]}, open(f"{sys.argv[3]}/warm_{k}.json", "w"))
PY
  for k in $(seq 0 $((n - 1))); do
    timeout 150 python3 reference/torch_bench.py --fusions "$out/warm_$k.json" --variants torch_compile \
      --repetitions 1 --time-limit 0.01 --min-samples 2 --warmup 1 --out "$out/warmed_$k.json" >"$out/warm_$k.log" 2>&1 &
    pids+=($!)
  done
fi
timeout 60 ctest --test-dir "$build" -R 'test_runtime_gpu' --output-on-failure >"$out/ctest.log" 2>&1
echo "test_runtime_gpu: exit $?: $(grep -E 'clusters of 4' "$out/ctest.log" | head -n 1)"
for p in "${pids[@]}"; do wait "$p"; done
echo "torch.compile warmed in $((SECONDS - start)) s ($(cat "$out"/warm_*.log 2>/dev/null | grep -c 'rep 1/1') items)"

left=$((budget - (SECONDS - start) - 30))
timeout "$left" "$rs" all --with-torch ${FINAL_ARGS:---repetitions 3 --time-limit 0.1} --out "$out/run.json" \
  >"$out/run.txt" 2>"$out/run.err"
echo "run_suite all --with-torch: exit $? in $((SECONDS - start)) s"
grep -cE ' ok$' "$out/run.txt" | sed 's/^/cases ok: /'
grep -E 'FAILED|failed' "$out/run.txt" | head -n 10
[ -f "$out/run.json" ] && scripts/compare results/baselines/nvidia_h200.json "$out/run.json" --markdown "$out/gate.md" \
  >"$out/gate.txt" 2>&1
echo "gate against the baseline: exit $?"; grep -E 'Verdicts|SLOWER|REGRESSION|FASTER' "$out/gate.txt" | head -n 30

left=$((budget - (SECONDS - start)))
if [ "$left" -gt 40 ]; then
  timeout "$left" "$rs" cross_entropy --sizes "${FINAL_TAIL_SIZES:-8192x50304,8192x128256,8192x256000}" \
    --filter "${FINAL_TAIL_FILTER:-/(fwdbwd|bwd)/fuser/}" \
    --repetitions 1 --time-limit 0.1 >"$out/cluster.txt" 2>&1
  echo "extra cross entropy rows: exit $?"; grep -E '^cross_entropy' "$out/cluster.txt"
fi
