#!/usr/bin/env bash
# scripts/gpu/prelude_ab.sh -- A/B of the cold prelude (suites/harness/timing.c) on the generator's
# 200 fusions (seed 7, fuser rows only), in one call on a GPU machine (about 3 minutes):
#   spin:   the Release build at ${BUILD:-/tmp/b} (the L2 flush, then a 50 us spin, then the start
#           event; what reference/torch_bench.py does, with a longer spin);
#   nospin: run_suite built again with -DHB_COLD_SPIN=0 at $BUILD-nospin (the flush alone, as
#           before 2026-12-02).
# The two run one after the other PRELUDE_AB_ROUNDS times (default 2: spin, nospin, spin, nospin; a
# drift shows between the runs of one variant), each `run_suite FOLDER --repetitions 1 --time-limit 0.05`.
# Prints, per pair, the median over the fusions of nospin / spin and how many are >5% apart.
# Logs under ${OUT:-/tmp/out}/prelude_ab/.
# shellcheck source=part.sh
. "$(dirname "$0")/part.sh" prelude_ab
cd "$here" || exit 2
nospin=${build}-nospin
cmake -S . -B "$nospin" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS=-DHB_COLD_SPIN=0 >"$out/build.log" 2>&1 &&
  cmake --build "$nospin" -j "$(nproc)" --target run_suite >>"$out/build.log" 2>&1 ||
  { echo "prelude_ab.sh: the nospin build failed (build.log)"; tail -n 20 "$out/build.log"; exit 1; }
dir=$out/fusions
rm -rf "$dir"
"$build/fuser/fuser-fuzz" write --count 200 --seed 7 --out "$dir" >"$out/write.log" 2>&1 || { cat "$out/write.log"; exit 1; }
for round in $(seq 1 "${PRELUDE_AB_ROUNDS:-2}"); do
  for v in spin nospin; do
    rs=$build/suites/run_suite
    [ "$v" = nospin ] && rs=$nospin/suites/run_suite
    timeout -k 5 150 "$rs" "$dir" --repetitions 1 --time-limit 0.05 --out "$out/$v$round.json" >"$out/$v$round.txt" 2>&1
    echo "prelude_ab.sh: $v round $round: exit $?"
  done
done
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
def times(name):
    import os
    if not os.path.exists(f"{out}/{name}.json"): return {}
    try:
        r = json.load(open(f"{out}/{name}.json"))
    except (OSError, ValueError) as e:
        print(f"{name}: {e}"); return {}
    return {(b["suite"], b["dtype"]): b["real_time"] for b in r["benchmarks"]
            if b.get("variant") == "fuser" and b.get("status") == "ok"}
runs = {n: times(n) for n in ("spin1", "nospin1", "spin2", "nospin2")}
def compare(a, b):
    ka = set(runs[a]) & set(runs[b])
    if not ka: print(f"{b} / {a}: no common rows"); return
    r = [runs[b][k] / runs[a][k] for k in ka]
    print(f"{b:8s} / {a:8s}: {len(r)} fusions, median {statistics.median(r):.3f}, "
          f"{sum(x > 1.05 for x in r)} over 1.05, {sum(x < 1 / 1.05 for x in r)} under 1/1.05")
for a, b in (("spin1", "nospin1"), ("spin2", "nospin2"), ("spin1", "spin2"), ("nospin1", "nospin2")):
    if runs[a] and runs[b]: compare(a, b)
PY
