#!/usr/bin/env bash
# scripts/gpu/suites.sh -- issue 18's checks on a GPU machine (at most ~8 minutes), with a
# Release build at ${BUILD:-/tmp/b}:
#   1. ./run_suite all --with-torch in bf16 (the seed suites and layer_norm, rms_norm, softmax,
#      rope_qkv; every case checked against the interpreter, one repetition, 0.25 s of samples),
#   2. the four new suites in f32 (fuser only),
#   3. the per-op PyTorch translation test (reference/tests/test_torch_ops.py; torch is there),
#   4. a table of each new case: kernels, time, % of copy, speed-up over torch.compile.
# Logs under ${OUT:-/tmp/out}/suites/: run.log (both runs and the op test), run.json (step 1).
# shellcheck source=part.sh
. "$(dirname "$0")/part.sh" suites
cd "$here" || exit 2
log=$out/run.log
: >"$log"
export PYTHONUNBUFFERED=1
rs=$build/suites/run_suite
[ -x "$rs" ] || { echo "suites.sh: $rs is not built (cmake -S . -B $build -DCMAKE_BUILD_TYPE=Release && cmake --build $build -j)"; exit 2; }

t0=$(date +%s)
echo "==== run_suite all --with-torch --dtype bf16" >>"$log"
timeout 300 "$rs" all --with-torch --dtype bf16 --repetitions 1 --time-limit 0.25 --out "$out/run.json" >>"$log" 2>&1
rc_all=$?
t1=$(date +%s)
echo "==== new suites, f32 (fuser and reference only)" >>"$log"
rc_f32=0
for s in layer_norm rms_norm softmax rope_qkv; do
  timeout 30 "$rs" "$s" --dtype f32 --repetitions 1 --time-limit 0.25 >>"$log" 2>&1 || rc_f32=$?
done
t2=$(date +%s)
echo "==== test_torch_ops.py" >>"$log"
FUSER_BIN=$build/fuser/fuser FUSER_HEADER=$here/fuser/include/fuser.h timeout 60 python3 reference/tests/test_torch_ops.py >>"$log" 2>&1
rc_ops=$?
t3=$(date +%s)

echo
grep -E "FAILED|failed" "$log" | head -20
echo
echo "run_suite all --with-torch (bf16): exit $rc_all in $((t1 - t0)) s; f32 of the new suites: exit $rc_f32 in $((t2 - t1)) s"
echo "test_torch_ops.py: exit $rc_ops in $((t3 - t2)) s: $(grep 'test_torch_ops:' "$log" | tail -n 1)"
# the new suites' cases: kernels, time, % of copy, speed-up over torch.compile (from run.json)
python3 - "$out/run.json" <<'EOF'
import json, statistics, sys
try:
    run = json.load(open(sys.argv[1]))
except Exception as ex:
    print(f"no run.json: {ex}")
    sys.exit(0)
rows = {}
for e in run["benchmarks"]:
    if e.get("run_type") != "iteration" or e.get("status") != "ok":
        continue
    key = (e["suite"], e["case"], e["dtype"], e["size"])
    rows.setdefault(key, {}).setdefault(e["variant"], []).append(e)
print(f"{'case':30} {'size':14} {'fuser k':>7} {'us':>9} {'% copy':>7} {'compile k':>9} {'compile us':>10} {'speed-up':>8}")
for key in sorted(rows):
    if key[0] not in ("layer_norm", "rms_norm", "softmax", "rope_qkv"):
        continue
    v = rows[key]
    f, c = v.get("fuser"), v.get("torch_compile")
    ft = statistics.median(x["real_time"] for x in f) if f else float("nan")
    ct = statistics.median(x["real_time"] for x in c) if c else float("nan")
    pf = f[0].get("peak_fraction", float("nan")) * 100 if f else float("nan")
    print(f"{key[0] + '/' + key[1] + '/' + key[2]:30} {key[3]:14} {f[0].get('kernels', -1) if f else '-':>7} "
          f"{ft:9.1f} {pf:6.1f}% {c[0].get('kernels', -1) if c else '-':>9} {ct:10.1f} {ct / ft:7.2f}x")
EOF
