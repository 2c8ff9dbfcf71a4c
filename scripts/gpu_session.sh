#!/usr/bin/env bash
# scripts/gpu_session.sh -- everything a GPU session checks, in one call on the GPU machine:
# build (Release, and ASan for the gpu tests), every `gpu` and `compile` test, the PyTorch
# cross entropy check, the plans of the seed workloads, and the suites when asked:
#
#   scripts/gpu_session.sh [SUITES_ARGS...]      e.g. scripts/gpu_session.sh all --repetitions 5
#
# Logs go to $OUT (the device tool's output folder) or /tmp/out; a short table is printed last.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
out=${OUT:-/tmp/out}
mkdir -p "$out"
export FUSER_CACHE_DIR=/tmp/fuser-cache
jobs=$(nproc)
declare -a rows
row() { rows+=("$(printf '%-34s %s' "$1" "$2")"); }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$out/nvidia-smi.txt" 2>&1
row "gpu" "$(tail -n 1 "$out/nvidia-smi.txt")"

if cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release >"$out/build.log" 2>&1 && cmake --build /tmp/b -j "$jobs" >>"$out/build.log" 2>&1; then
  row "build (Release)" "ok"
else
  row "build (Release)" "FAILED (build.log)"; tail -n 40 "$out/build.log"
fi
ctest --test-dir /tmp/b -L 'gpu|compile' --output-on-failure >"$out/ctest_gpu.log" 2>&1
row "ctest -L 'gpu|compile' (Release)" "$(grep -E 'tests passed|tests failed' "$out/ctest_gpu.log" | tail -n 1)"

if [ "${GPU_SESSION_ASAN:-1}" = 1 ]; then
  if cmake -S . -B /tmp/ba -DFUSER_SANITIZE=ON >"$out/build_asan.log" 2>&1 && cmake --build /tmp/ba -j "$jobs" >>"$out/build_asan.log" 2>&1; then
    ctest --test-dir /tmp/ba -L gpu --output-on-failure >"$out/ctest_gpu_asan.log" 2>&1
    row "ctest -L gpu (ASan)" "$(grep -E 'tests passed|tests failed' "$out/ctest_gpu_asan.log" | tail -n 1)"
  else
    row "build (ASan)" "FAILED (build_asan.log)"
  fi
fi

python3 scripts/check_torch_ce.py /tmp/b/fuser/fuser --gpu >"$out/torch_ce.log" 2>&1
row "torch cross_entropy check" "$(tail -n 1 "$out/torch_ce.log")"

for f in suites/*/*.fusion; do
  for dt in f32 bf16; do
    set_dt=""; grep -q '^dtype DT' "$f" && set_dt="--set DT=$dt"
    [ -z "$set_dt" ] && [ "$dt" = bf16 ] && continue
    /tmp/b/fuser/fuser plan "$f" $set_dt --json >"$out/plan_$(basename "$f" .fusion)_$dt.json" 2>&1
    n=$(grep -o '"segments": [0-9]*' "$out/plan_$(basename "$f" .fusion)_$dt.json" | head -n 1)
    row "plan $(basename "$f" .fusion) $dt" "${n:-failed}"
  done
done

if [ $# -gt 0 ] && [ -x /tmp/b/suites/run_suite ]; then
  /tmp/b/suites/run_suite "$@" --format json --out "$out/run.json" 2>"$out/run_suite.err" | tee "$out/run_suite.txt"
  row "run_suite $*" "exit ${PIPESTATUS[0]}"
fi

echo
echo "==== summary ===="
printf '%s\n' "${rows[@]}"
