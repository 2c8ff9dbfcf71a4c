#!/usr/bin/env bash
# scripts/tune_sweep.sh -- times the fuser's kernels under different scheduler tunings, all in
# one run (one machine, one copy bandwidth), to choose the schedulers' defaults:
#
#   scripts/tune_sweep.sh OUTDIR FILTER NAME=DEFINES... [-- RUN_SUITE_ARGS...]
#   e.g. scripts/tune_sweep.sh /tmp/out 'qkv_split/.*/fuser/' default= items2=-DPW_MAX_ITEMS=2
#
# Each NAME=DEFINES builds run_suite with those C preprocessor definitions (the tunable
# constants of fuser/src/sched/*.c are #ifndef-guarded), runs `run_suite all --filter FILTER`
# into OUTDIR/NAME.txt and .json, and prints one table: median us per case and tuning.
# A NAME=@DIR entry builds the source tree in DIR instead (another commit, unpacked).
set -u
case "${1:-}" in
    -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    --version) echo "tune_sweep.sh (fusebench) $(cat "$(dirname "$0")/../VERSION")"; exit 0 ;;
esac
out=${1:?usage: tune_sweep.sh OUTDIR FILTER NAME=DEFINES... [-- RUN_SUITE_ARGS...]}
filter=${2:?filter}
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
declare -a names=() specs=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do names+=("${1%%=*}"); specs+=("${1#*=}"); shift; done
[ "${1:-}" = -- ] && shift
mkdir -p "$out"
for i in "${!names[@]}"; do
  name=${names[$i]} spec=${specs[$i]} src=$here defs=$spec
  if [ "${spec#@}" != "$spec" ]; then src=${spec#@}; defs=""; fi
  b=/tmp/tune-build-$name
  if ! { cmake -S "$src" -B "$b" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_FLAGS="$defs" &&
         cmake --build "$b" -j "$(nproc)" --target run_suite; } >"$out/$name.build.log" 2>&1; then
    echo "$name: build failed ($out/$name.build.log)"; continue
  fi
  FUSER_CACHE_DIR=/tmp/tune-cache-$name "$b/suites/run_suite" all --filter "$filter" --out "$out/$name.json" "$@" \
    >"$out/$name.txt" 2>"$out/$name.err" || echo "$name: run_suite exit $? ($out/$name.err)"
done
# one row per case and variant: each tuning's median time in us (from the tables: run_suite's time
# is the median of the repetitions' medians; fusebench-json2tsv's median_us pools every sample,
# another number whenever --repetitions > 1, run_suite's default)
printf '%-44s' "case variant dtype size"; for n in "${names[@]}"; do printf ' %10s' "$n"; done; echo
first=${names[0]}
awk '$1 ~ /\// && $7 ~ /^[0-9.]+$/ {print $1, $2, $3, $4}' "$out/$first.txt" | while read -r c v d s; do
  printf '%-44s' "$c $v $d $s"
  for n in "${names[@]}"; do
    printf ' %10s' "$(awk -v c="$c" -v v="$v" -v d="$d" -v s="$s" '$1 == c && $2 == v && $3 == d && $4 == s {print $7; exit}' "$out/$n.txt")"
  done
  echo
done
