#!/usr/bin/env bash
# scripts/gpu/fuzz_torch.sh -- issue 19's fuser-against-torch.compile check on the generator's 200
# fusions (seed 7, the ones test_fuzz_gpu checks), in one call on a GPU machine (at most ~7
# minutes), with a Release build at ${BUILD:-/tmp/b}:
#   1. fuser-fuzz write --count 200 --seed 7 (a folder of .fusion files, each its own suite);
#      run_suite FOLDER --write-fusions: the plans compiled (NVRTC cache) and PyTorch's items;
#   2. torch.compile of every item in FUZZ_TORCH_WARMERS (default 12) background torch_bench.py
#      processes at once (their times are thrown away; bounded by FUZZ_TORCH_WARM_S, default 120 s),
#      so that the timed run compiles from the Inductor and Triton caches on disk; meanwhile
#      `fuser plan --json` of every fusion (the lower bounds) into plans.jsonl;
#   3. after every warmer has ended, four timed rounds in the order fuser, torch.compile,
#      torch.compile, fuser: `run_suite FOLDER --repetitions 1 --time-limit 0.05` (the fuser
#      checked against the interpreter and timed) into fuser1.json and fuser2.json, and
#      reference/torch_bench.py (torch.compile only, the same sampling) into torch1.json and
#      torch2.json. The two sides are timed minutes apart in different processes, and on these
#      3-13 us fusions the card's drift between two such moments was 5-10% (docs/perf.md v26); in
#      this order a drift that goes one way over the four rounds weighs on both sides alike.
#      Everything ends FUZZ_TORCH_BUDGET_S (default 405) after the start (a round that would
#      start with under 30 s left is left out, and the summary says which ran);
#   4. scripts/fuzz_vs_torch over the rounds' run files and plans.jsonl (each side's time the
#      median of its rounds), printed last (its last line: the numbers in short). With
#      FUZZ_TORCH_BEFORE=DIR (an earlier call's fuzz_torch folder, carried: its fuser1.json,
#      torch1.json, torch2.json, fuser2.json), also the split of the fusions into unchanged and
#      changed kernels against that call (--before: how much of a step is the machine).
# Without a GPU or PyTorch it goes as far as it can (kernels against the bound) and says why.
# Logs under ${OUT:-/tmp/out}/fuzz_torch/: fusions/, items.json, plans.jsonl (and plans/), warm_K.log,
# fuser1.json, torch1.json, torch2.json, fuser2.json and each round's .txt and .err, summary.txt.
# shellcheck source=part.sh
. "$(dirname "$0")/part.sh" fuzz_torch
cd "$here" || exit 2
export PYTHONUNBUFFERED=1
# One Inductor setting for the warmers and the timed run: compile in the process (no worker
# pool per warmer), and the same configuration, so the timed run hits the same cache entries.
export TORCHINDUCTOR_COMPILE_THREADS=${TORCHINDUCTOR_COMPILE_THREADS:-1}
export TORCHINDUCTOR_FX_GRAPH_CACHE=${TORCHINDUCTOR_FX_GRAPH_CACHE:-1} # on by default in newer PyTorch
rs=$build/suites/run_suite
fz=$build/fuser/fuser-fuzz
fuser=$build/fuser/fuser
for b in "$rs" "$fz" "$fuser"; do
  [ -x "$b" ] || { echo "fuzz_torch.sh: $b is not built (cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release && cmake --build $build -j)"; exit 2; }
done
t0=$(date +%s)
deadline=$((t0 + ${FUZZ_TORCH_BUDGET_S:-405})) # everything but the summary ends by then: under 7 minutes
say() { echo "fuzz_torch.sh: [$(( $(date +%s) - t0 )) s] $*"; }

# 1. the fusions, their plans compiled, PyTorch's items
dir=$out/fusions
rm -rf "$dir" "$out"/warm_* "$out"/fuser[12].* "$out"/torch[12].* "$out/summary.txt"
"$fz" write --count 200 --seed 7 --out "$dir" >"$out/write.log" 2>&1 || { cat "$out/write.log"; exit 1; }
timeout -k 5 120 "$rs" "$dir" --write-fusions "$out/items.json" >"$out/items.log" 2>&1
say "run_suite --write-fusions: exit $? ($(grep -c FAILED "$out/items.log") failed to plan or compile; items.log)"
"$rs" "$dir" --list | sed 's#/fuser/#/#' >"$out/items.txt"
say "$(wc -l <"$out/items.txt") items"

# 2. warm torch.compile's caches in parallel; the plans meanwhile
warmers=${FUZZ_TORCH_WARMERS:-12}
pids=()
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >"$out/torch_probe.log" 2>&1; then
  say "no warm-up: PyTorch with a CUDA GPU is not available to python3 ($(tail -n 1 "$out/torch_probe.log"))"
elif [ -s "$out/items.json" ]; then
  rm -f "$out"/part_*.txt
  awk -v k="$warmers" -v p="$out/part_" '{print > (p (NR % k) ".txt")}' "$out/items.txt"
  for part in "$out"/part_*.txt; do
    k=$(basename "$part" .txt); k=${k#part_}
    timeout -k 5 "${FUZZ_TORCH_WARM_S:-120}" python3 reference/torch_bench.py --fusions "$out/items.json" \
      --items "$(paste -sd, "$part")" --variants torch_compile --repetitions 1 --time-limit 0.01 \
      --min-samples 2 --warmup 1 --out "$out/warm_$k.json" >"$out/warm_$k.log" 2>&1 &
    pids+=($!)
  done
  say "${#pids[@]} torch.compile warmers started"
fi
# (4 at a time: each opens the GPU; one file each, joined after)
plans=$out/plans
rm -rf "$plans"
mkdir -p "$plans"
# shellcheck disable=SC2016 # the sh -c program expands its own arguments
printf '%s\n' "$dir"/*.fusion | xargs -P 4 -n 1 sh -c 'b=$(basename "$2" .fusion)
  "$0" plan "$2" --json >"$1/$b.json" 2>"$1/$b.err" || { rm -f "$1/$b.json"; echo "fuser plan $2 failed"; }' \
  "$fuser" "$plans" >"$out/plans.err" 2>&1
cat "$plans"/*.json >"$out/plans.jsonl" 2>/dev/null
say "plans: $(wc -l <"$out/plans.jsonl"), $(grep -c 'plan .* failed' "$out/plans.err") failed (plans.err, plans/NAME.err)"
exits=""
for p in "${pids[@]}"; do wait "$p"; exits="$exits $?"; done # the timed run starts on an idle GPU
if [ ${#pids[@]} -gt 0 ]; then
  say "warm-up done: $(cat "$out"/warm_*.log | grep -c 'rep 1/1') of $(wc -l <"$out/items.txt") compiled," \
    "$(cat "$out"/warm_*.log | grep -c 'FAILED') failed; warmers' exits:$exits (124: cut at the bound)"
  left=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | grep -c .)
  [ "$left" -eq 0 ] || say "note: $left processes still on the GPU after the warm-up"
fi

# 3. four timed rounds: fuser, torch.compile, torch.compile, fuser
rounds=()
round() { # NAME COMMAND...: one round, bounded by the deadline
  local name=$1 limit=$((deadline - $(date +%s)))
  shift
  if [ "$limit" -lt 30 ]; then say "$name: left out ($limit s left)"; return; fi
  timeout -k 10 "$limit" "$@" --out "$out/$name.json" >"$out/$name.txt" 2>"$out/$name.err"
  local rc=$?
  say "$name: exit $rc$([ $rc -eq 124 ] && echo ' (timed out)')"
  [ -s "$out/$name.json" ] && rounds+=("$out/$name.json")
}
fuser_round() { round "$1" "$rs" "$dir" --repetitions 1 --time-limit 0.05; }
torch_round() {
  if [ ${#pids[@]} -eq 0 ] || [ ! -s "$out/items.json" ]; then say "$1: no PyTorch with a GPU"; return; fi
  round "$1" python3 reference/torch_bench.py --fusions "$out/items.json" --variants torch_compile \
    --repetitions 1 --time-limit 0.05 --mode cold
}
fuser_round fuser1
torch_round torch1
torch_round torch2
fuser_round fuser2
grep -E '^torch_bench: PyTorch' "$out/torch1.err" 2>/dev/null | head -n 1
grep -hE '^run_suite: ' "$out/fuser1.err" "$out/fuser2.err" 2>/dev/null | head -n 8 # its own lines: failures
echo "torch.compile ready in (s, from the cache): $(grep -o 'torch_compile/[^:]*: rep 1/1: .*ready in [0-9.]* s' "$out/torch1.err" 2>/dev/null |
  sed 's/.*ready in \([0-9.]*\) s/\1/' | sort -n | awk '{a[NR] = $1; s += $1} END {if (NR) printf "median %s, max %s, total %.0f", a[int((NR + 1) / 2)], a[NR], s; else printf "none"}')"

# 4. the summary
echo
if [ ${#rounds[@]} -gt 0 ]; then
  echo "rounds: $(printf '%s ' "${rounds[@]##*/}")"
  before=()
  if [ -n "${FUZZ_TORCH_BEFORE:-}" ]; then
    earlier=$(for r in fuser1 torch1 torch2 fuser2; do [ -f "$FUZZ_TORCH_BEFORE/$r.json" ] && printf '%s,' "$FUZZ_TORCH_BEFORE/$r.json"; done)
    if [ -n "$earlier" ]; then before=(--before "${earlier%,}"); else echo "fuzz_torch.sh: FUZZ_TORCH_BEFORE=$FUZZ_TORCH_BEFORE holds no round's run file"; fi
  fi
  scripts/fuzz_vs_torch "${rounds[@]}" "$out/plans.jsonl" "${before[@]}" | tee "$out/summary.txt"
else
  echo "fuzz_torch.sh: no timed round; the kernels of the plans against their bounds:"
  python3 - "$out/plans.jsonl" <<'EOF' | tee "$out/summary.txt"
import collections, json, sys
c = collections.Counter()
for line in open(sys.argv[1]):
    p = json.loads(line)
    c[p["segments"] - p["lower_bound"]] += 1
for d in sorted(c):
    print(f"  {d:+4d} {c[d]:5d}")
EOF
fi
say "done"
