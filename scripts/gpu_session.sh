#!/usr/bin/env bash
# scripts/gpu_session.sh -- everything a GPU session checks, in one call on the GPU machine:
# build (Release, and ASan for the gpu tests), every `gpu` and `compile` test, the PyTorch
# cross entropy check, real NVRTC times (scripts/compile_times.sh), the plans of the seed
# workloads, and the suites when asked:
#
#   scripts/gpu_session.sh [SUITES_ARGS...]      e.g. scripts/gpu_session.sh all --repetitions 5
#
# GPU_SESSION_DEADLINE_S (default 570) is when the tests, parts and suites stop, so that what
# ran comes back within the device tool's 600 s. GPU_SESSION_TESTS=0 skips the tests and checks
# (suites only); GPU_SESSION_LABELS (default gpu|compile) picks the ctest labels,
# GPU_SESSION_TEST_NAMES (a ctest -R regex) the names among them, GPU_SESSION_TEST_JOBS (default 4)
# how many run at once; GPU_SESSION_CHECKS=0 skips the
# checks after ctest (torch cross entropy, NVRTC times, plans); GPU_SESSION_ASAN=0 skips the
# ASan build; GPU_SESSION_SASS=1 adds the compiler's report on the seed kernels
# (scripts/sass_report.sh); GPU_SESSION_SECOND="<run_suite args>" runs a second
# selection into run2.json (e.g. another size). GPU_SESSION_WARM=FILE (the cases' fusions, as
# `run_suite SELECTION --write-fusions FILE` writes them here) runs torch.compile on those items
# while the Release build runs (at most 90 s; its numbers are thrown away), so that
# --with-torch compiles them from the Inductor and Triton caches; the session waits for it
# before any GPU test or run. Where the image lacks Google Benchmark, cJSON or zlib, the debs
# in GPU_SESSION_DEBS (default .debs/, carried) are unpacked into /tmp/sysroot.
# GPU_SESSION_TARGETS="run_suite fuser_cli ..." builds only those targets (a short call).
# GPU_SESSION_PARTS="a b" runs scripts/gpu/a.sh, then b.sh (each part's own checks) after the
# tests, before the suites (GPU_SESSION_SUITES_FIRST=1: after them, so that a call cut short
# still brings the suites' run file back). FUSEBENCH_GIT_COMMIT=<hash> records the
# commit in the run file (the GPU machine gets the tree without .git). Logs go to $OUT (the
# device tool's output folder, packed as session.tgz) : build.log (with
# nvidia-smi and the warm-up), checks.log (ctest, the PyTorch cross entropy check, the plans),
# sass.txt, run.json, run_suite.txt, run2.json, run2.txt, run_suite.err. A short table is
# printed last.
#
# The one-call checks of a GPU machine, as switches of this script:
#   harness:  GPU_SESSION_ASAN=0 scripts/gpu_session.sh qkv_split --sizes 16x128x3072 --dtype f32
#             (every suite too: GPU_SESSION_SECOND="qkv_split --mode hot --repetitions 2
#             --time-limit 0.5" scripts/gpu_session.sh all --repetitions 2 --time-limit 0.5)
#   reference/ against PyTorch: reference/README.md has the command.
set -u
case "${1:-}" in
    -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    --version) echo "gpu_session.sh (fusebench) $(cat "$(dirname "$0")/../VERSION")"; exit 0 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
# Everything is written under /tmp/session and, where the device tool's $OUT exists, packed
# into $OUT/session.tgz at the end (the tool returns at most 8 files).
out=/tmp/session
mkdir -p "$out"
pack() { [ -n "${OUT:-}" ] && [ -d "$OUT" ] && tar czf "$OUT/session.tgz" -C "$out" . 2>/dev/null; return 0; }
export FUSER_CACHE_DIR=/tmp/fuser-cache
jobs=$(nproc)
declare -a rows
row() { rows+=("$(printf '%-34s %s' "$1" "$2")"); }
# Seconds left before GPU_SESSION_DEADLINE_S (default 570, the device tool's 600 s a command
# less the packing): the tests, a part or a suite run that would outlive it are cut there (their
# files so far are packed), and a part or a run that cannot start 30 s before it is skipped.
time_left() { echo $(( ${GPU_SESSION_DEADLINE_S:-570} - SECONDS )); }
cut_at() { local t; t=$(time_left); echo $(( t > 1 ? t : 1 )); }
late() { [ "$(time_left)" -lt 30 ] || return 1; row "$1" "skipped: $(time_left) s left of GPU_SESSION_DEADLINE_S"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit \
  --format=csv >"$out/build.log" 2>&1
row "gpu" "$(tail -n 1 "$out/build.log")"
# every kernel of the call on part of the SMs (docs/perf.md v46): the figures are not the card's
[ -n "${FUSER_SM_LIMIT:-}" ] && [ "${FUSER_SM_LIMIT}" != 0 ] && row "SM limit" "FUSER_SM_LIMIT=$FUSER_SM_LIMIT (rounded up to 8 on sm_90)"

# torch.compile warm-up, while building (GPU_SESSION_WARM).
warm=
if [ -n "${GPU_SESSION_WARM:-}" ]; then
  (PYTHONUNBUFFERED=1 timeout 90 python3 reference/torch_bench.py --fusions "$GPU_SESSION_WARM" --variants torch_compile \
     --repetitions 1 --time-limit 0.01 --min-samples 2 --warmup 1 --out /tmp/warm.json >/tmp/warm.log 2>&1) &
  warm=$!
fi

# Libraries from carried debs where the image lacks them (GPU_SESSION_DEBS, default .debs/:
# `apt-get download libbenchmark1debian libbenchmark-dev libcjson1 libcjson-dev zlib1g-dev`; carry
# that ignored folder): each missing one is unpacked into /tmp/sysroot, absolute paths rewritten.
debs=${GPU_SESSION_DEBS:-.debs}
unpacked=
have_header() { [ -f "/usr/include/$1" ] || [ -f "/usr/local/include/$1" ]; }
for want in "benchmark/benchmark.h:libbenchmark" "cjson/cJSON.h:libcjson" "zlib.h:zlib1g-dev"; do
  header=${want%%:*} prefix=${want#*:}
  have_header "$header" && continue
  ls "$debs/$prefix"*.deb >/dev/null 2>&1 || continue
  for f in "$debs/$prefix"*.deb; do dpkg -x "$f" /tmp/sysroot; done
  unpacked="$unpacked $prefix"
done
if [ -n "$unpacked" ]; then
  lib=/tmp/sysroot/usr/lib/x86_64-linux-gnu
  find "$lib/cmake" "$lib/pkgconfig" -type f \( -name '*.cmake' -o -name '*.pc' \) \
    -exec sed -i 's#\([" =]\)/usr/#\1/tmp/sysroot/usr/#g' {} + 2>/dev/null
  # zlib's dev package carries only the link-time symlink; the runtime library is the image's.
  case "$unpacked" in *zlib1g-dev*) ln -sf /usr/lib/x86_64-linux-gnu/libz.so.1 "$lib/libz.so" ;; esac
  export CMAKE_PREFIX_PATH=/tmp/sysroot/usr CPATH=/tmp/sysroot/usr/include LIBRARY_PATH=$lib \
    LD_LIBRARY_PATH=$lib PKG_CONFIG_PATH=$lib/pkgconfig
  row "carried debs" "unpacked into /tmp/sysroot:$unpacked"
fi
have_header cjson/cJSON.h || [ -f /tmp/sysroot/usr/include/cjson/cJSON.h ] || row "cJSON" "missing: the gate is not built"

# shellcheck disable=SC2086 # GPU_SESSION_TARGETS is a list of words
if cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release >>"$out/build.log" 2>&1 &&
   cmake --build /tmp/b -j "$jobs" ${GPU_SESSION_TARGETS:+--target $GPU_SESSION_TARGETS} >>"$out/build.log" 2>&1; then
  row "build (Release)" "ok"
else
  row "build (Release)" "FAILED (build.log)"; tail -n 40 "$out/build.log"
fi
if [ -n "$warm" ]; then
  wait "$warm"
  rc=$?
  { echo "==== torch.compile warm-up (exit $rc) ===="; cat /tmp/warm.log; } >>"$out/build.log"
  row "torch.compile warm-up" "exit $rc: $(grep -c 'rep 1/1' /tmp/warm.log) compiled"
fi
# The tests run GPU_SESSION_TEST_JOBS at a time (default 4: most of their time is the
# interpreter's checks and NVRTC, on the CPU), each interpreter on its share of the cores; the
# one test that times kernels (test_harness_gpu) is RUN_SERIAL, so it runs alone.
test_jobs=${GPU_SESSION_TEST_JOBS:-4}
case "$test_jobs" in ''|*[!0-9]*|0) row "GPU_SESSION_TEST_JOBS" "'$test_jobs' is not a count: 4"; test_jobs=4 ;; esac
test_omp=${OMP_NUM_THREADS:-$(( jobs / test_jobs > 0 ? jobs / test_jobs : 1 ))}
if [ "${GPU_SESSION_TESTS:-1}" = 1 ]; then
  OMP_NUM_THREADS=$test_omp timeout -k 5 "$(cut_at)" ctest --test-dir /tmp/b -j "$test_jobs" -L "${GPU_SESSION_LABELS:-gpu|compile}" \
    ${GPU_SESSION_TEST_NAMES:+-R "$GPU_SESSION_TEST_NAMES"} --output-on-failure >"$out/checks.log" 2>&1
  row "ctest -L '${GPU_SESSION_LABELS:-gpu|compile}' (Release)" "$(grep -E 'tests passed|tests failed' "$out/checks.log" | tail -n 1)"
  pack

  if [ "${GPU_SESSION_ASAN:-1}" = 1 ]; then
    if cmake -S . -B /tmp/ba -DFUSER_SANITIZE=ON >>"$out/build.log" 2>&1 && cmake --build /tmp/ba -j "$jobs" >>"$out/build.log" 2>&1; then
      echo "==== ASan ====" >>"$out/checks.log"
      OMP_NUM_THREADS=$test_omp timeout -k 5 "$(cut_at)" ctest --test-dir /tmp/ba -j "$test_jobs" -L gpu --output-on-failure >>"$out/checks.log" 2>&1
      row "ctest -L gpu (ASan)" "$(grep -E 'tests passed|tests failed' "$out/checks.log" | tail -n 1)"
    else
      row "build (ASan)" "FAILED (build.log)"
    fi
  fi

fi
if [ "${GPU_SESSION_TESTS:-1}" = 1 ] && [ "${GPU_SESSION_CHECKS:-1}" = 1 ]; then
  echo "==== scripts/check_torch_ce.py ====" >>"$out/checks.log"
  row "torch cross_entropy check" \
    "$(python3 scripts/check_torch_ce.py /tmp/b/fuser/fuser --gpu 2>&1 | tee -a "$out/checks.log" | tail -n 1)"

  echo "==== scripts/compile_times.sh ====" >>"$out/checks.log"
  row "NVRTC, slowest seed kernel (ms)" "$(scripts/compile_times.sh /tmp/b/fuser/fuser 2 2>&1 | tee -a "$out/checks.log" |
    awk -F'|' 'NR > 1 {n = split($1, a, " "); for (i = 3; i <= n; i++) if (a[i] + 0 > m) {m = a[i] + 0; k = a[1] " " a[2]}}
               END {print m " (" k ")"}')"

  for f in suites/*/*.fusion; do
    for dt in f32 bf16; do
      set_dt=""; grep -q '^dtype DT' "$f" && set_dt="--set DT=$dt"
      [ -z "$set_dt" ] && [ "$dt" = bf16 ] && continue
      echo "==== plan $f $dt" >>"$out/checks.log"
      /tmp/b/fuser/fuser plan "$f" $set_dt >>"$out/checks.log" 2>&1
      n=$(/tmp/b/fuser/fuser plan "$f" $set_dt --json 2>/dev/null | grep -o '"segments": [0-9]*' | head -n 1)
      row "plan $(basename "$f" .fusion) $dt" "${n:-failed}"
    done
  done
fi

pack
if [ "${GPU_SESSION_SASS:-0}" = 1 ]; then
  scripts/sass_report.sh /tmp/b/fuser/fuser >"$out/sass.txt" 2>&1
  row "compiler report" "sass.txt ($(grep -c '^==' "$out/sass.txt") kernels)"
fi

# The parts' own GPU checks (scripts/gpu/NAME.sh, each with its own time budget), in the order given.
run_parts() {
  for part in ${GPU_SESSION_PARTS:-}; do
    if late "scripts/gpu/$part.sh"; then
      continue
    elif [ -x "scripts/gpu/$part.sh" ]; then
      echo "==== scripts/gpu/$part.sh ====" >>"$out/checks.log"
      BUILD=/tmp/b OUT=$out timeout -k 5 "$(cut_at)" "scripts/gpu/$part.sh" >"$out/part_$part.txt" 2>&1
      rc=$?
      row "scripts/gpu/$part.sh" "exit $rc"
      printf '%s\n' "${rows[@]}" >"$out/summary.txt"; pack
      echo; echo "==== $part (exit $rc) ===="; tail -n 25 "$out/part_$part.txt"
    else
      row "scripts/gpu/$part.sh" "missing"
    fi
  done
}
# The suites given as arguments, and GPU_SESSION_SECOND.
run_suites() {
  if [ $# -gt 0 ] && [ -x /tmp/b/suites/run_suite ] && ! late "run_suite $*"; then
    timeout -k 5 "$(cut_at)" /tmp/b/suites/run_suite "$@" --out "$out/run.json" >"$out/run_suite.txt" 2>"$out/run_suite.err"
    row "run_suite $*" "exit $?"
    echo; cat "$out/run_suite.txt"
  fi
  if [ -n "${GPU_SESSION_SECOND:-}" ] && [ -x /tmp/b/suites/run_suite ] && ! late "run_suite $GPU_SESSION_SECOND"; then
    # shellcheck disable=SC2086 # the selection is words
    timeout -k 5 "$(cut_at)" /tmp/b/suites/run_suite $GPU_SESSION_SECOND --out "$out/run2.json" >"$out/run2.txt" \
      2>>"$out/run_suite.err"
    row "run_suite $GPU_SESSION_SECOND" "exit $?"
    echo; cat "$out/run2.txt"
  fi
  printf '%s\n' "${rows[@]}" >"$out/summary.txt"; pack
}
# GPU_SESSION_SUITES_FIRST=1: the suites before the parts (a call that must have the gate's run
# file even where a part runs long).
if [ "${GPU_SESSION_SUITES_FIRST:-0}" = 1 ]; then run_suites "$@"; run_parts; else run_parts; run_suites "$@"; fi

echo
echo "==== summary ===="
printf '%s\n' "${rows[@]}" | tee "$out/summary.txt"
pack
