#!/usr/bin/env bash
# gpu_check.sh -- one call on a GPU machine that validates reference/: a Release
# build, every reference kernel against the CPU interpreter (test_reference_gpu),
# and run_suite --with-torch on cross_entropy and small embedding and qkv_split
# selections. Logs, progress (*.err) and run files go to $OUT (default
# /tmp/gpu_check), 8 files; the tables are printed last.
#
#   reference/tests/gpu_check.sh            (from the repository root)
#
# BUILD=/tmp/b picks the build directory. Where the image lacks Google Benchmark,
# debs carried in .debs/ (apt-get download libbenchmark1debian libbenchmark-dev)
# are unpacked into /tmp/sysroot, their absolute paths rewritten to it.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/gpu_check}
build=${BUILD:-/tmp/b}
mkdir -p "$out"
log="$out/run.log"
: > "$log"
export FUSER_CACHE_DIR=/tmp/fuser-cache PYTHONUNBUFFERED=1
say() { echo "== $* ($(date +%T))" | tee -a "$log"; }

say machine
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu \
  --format=csv 2>&1 | tee -a "$log"

# torch.compile warm-up while building: fills the Inductor and Triton caches so
# that the timed runs below compile from them; its numbers are thrown away
ce=cross_entropy/fwd/f32/8192x32768,cross_entropy/fwd/bf16/8192x32768,cross_entropy/bwd/f32/8192x32768
ce=$ce,cross_entropy/bwd/bf16/8192x32768,cross_entropy/fwdbwd/f32/8192x32768,cross_entropy/fwdbwd/bf16/8192x32768
emb=embedding/fwd/f32/50304x768x8192,embedding/bwd_atomic/f32/50304x768x8192
emb=$emb,embedding/bwd_deterministic/f32/50304x768x8192
qkv=qkv_split/fwd/bf16/16x1024x2304
(timeout 90 python3 reference/torch_bench.py --items "$ce,$emb,$qkv" --variants torch_compile --repetitions 1 \
   --time-limit 0.01 --min-samples 2 --warmup 1 --out /tmp/warm.json > /tmp/warm.log 2>&1) &
warm=$!

say build
if [ ! -f /usr/include/benchmark/benchmark.h ] && [ ! -f /usr/local/include/benchmark/benchmark.h ]; then
  if ls .debs/libbenchmark*.deb > /dev/null 2>&1; then
    for f in .debs/libbenchmark*.deb; do dpkg -x "$f" /tmp/sysroot; done
    lib=/tmp/sysroot/usr/lib/x86_64-linux-gnu
    find "$lib/cmake" "$lib/pkgconfig" -type f \( -name '*.cmake' -o -name '*.pc' \) \
      -exec sed -i 's#\([" =]\)/usr/#\1/tmp/sysroot/usr/#g' {} + 2>/dev/null
    export CMAKE_PREFIX_PATH=/tmp/sysroot/usr CPATH=/tmp/sysroot/usr/include LIBRARY_PATH=$lib LD_LIBRARY_PATH=$lib
    echo "Google Benchmark missing: using .debs in /tmp/sysroot" | tee -a "$log"
  fi
fi
[ -f /usr/include/cjson/cJSON.h ] || echo "no cJSON: the gate is not built (--with-torch does not need it)" | tee -a "$log"
t0=$(date +%s)
if ! { cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release &&
       cmake --build "$build" -j 12 --target run_suite test_reference_gpu; } > "$out/build.log" 2>&1; then
  tail -40 "$out/build.log"
  exit 1
fi
echo "built in $(( $(date +%s) - t0 )) s" | tee -a "$log"
rm -f "$out/build.log"
bin="$build/suites/run_suite"

say test_reference_gpu
FUSEBENCH_SUITES_DIR="$PWD/suites" timeout 70 "$build/reference/tests/test_reference_gpu" \
  > "$out/test_reference_gpu.log" 2>&1
echo "test_reference_gpu exit $?" | tee -a "$log"
grep -E "FAILED|CHECK|failed|differs|checks" "$out/test_reference_gpu.log" | tail -30 | tee -a "$log"

say "waiting for the torch.compile warm-up"
wait "$warm"
echo "warm-up exit $?: $(grep -c 'rep 1/1' /tmp/warm.log) compiled" | tee -a "$log"
grep -E "FAILED|PyTorch|Error" /tmp/warm.log | head -5 | tee -a "$log"

run() { # seconds, name, then run_suite's arguments
  local limit=$1 name=$2
  shift 2
  say "run_suite $*"
  local t0=$(date +%s)
  timeout "$limit" "$bin" "$@" --out "$out/$name.json" > "/tmp/$name.txt" 2> "$out/$name.err"
  echo "exit $? after $(( $(date +%s) - t0 )) s" | tee -a "$log"
  grep -E "FAILED|with-torch|note:|copy bandwidth" "$out/$name.err" | tee -a "$log"
}
run 120 ce cross_entropy --with-torch --repetitions 2 --time-limit 0.5
run 45 emb embedding --sizes 50304x768x8192 --dtype f32 --with-torch --repetitions 2 --time-limit 0.5
run 25 qkv qkv_split --sizes 16x1024x2304 --dtype bf16 --with-torch --repetitions 2 --time-limit 0.5
say tables
cat /tmp/ce.txt /tmp/emb.txt /tmp/qkv.txt 2>/dev/null | tee -a "$log"
