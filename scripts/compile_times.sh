#!/usr/bin/env bash
# scripts/compile_times.sh -- real NVRTC compile times of every suite kernel (issue 22: the
# slowest of the cold compiles <= 300 ms for each) and how soon a cached fusion is ready to
# launch (<= 5 ms):
#
#   scripts/compile_times.sh FUSER [RUNS] [--phases]   e.g. scripts/compile_times.sh build/fuser/fuser 2
#
# One row for every suites/*/*.fusion, with DT=f32 and DT=bf16 where the file has a 'dtype DT'
# parameter (once, as written, shown as '-', where it has none). Each run is `fuser plan --json` with a fresh
# cache directory (NVRTC's own cache is off: the runtime passes --no-cache), so every figure is
# a compile (the fusion's kernels added up); the last column is the plan's ready_ms with the
# cache filled. The row whose slowest run is the slowest of all is printed again last.
# --phases adds a column: NVRTC's own split of the slowest run, front end / NVVM / ptxas ms
# (FUSER_NVRTC_TIME, NVRTC's --time; it leaves the CUBIN and the cache key as they are).
# Sequential: parallel compiles would slow each other.
set -u
case "${1:-}" in
    -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    --version) echo "compile_times.sh (fusebench) $(cat "$(dirname "$0")/../VERSION")"; exit 0 ;;
esac
phases=0
args=()
for a in "$@"; do if [ "$a" = --phases ]; then phases=1; else args+=("$a"); fi; done
set -- "${args[@]}"
fuser=${1:?usage: compile_times.sh FUSER [RUNS] [--phases]}
runs=${2:-3}
case "$runs" in ''|*[!0-9]*|0) echo "compile_times.sh: RUNS must be a positive whole number, not '$runs'" >&2; exit 2 ;; esac
[ -x "$fuser" ] || { echo "compile_times.sh: '$fuser' is not an executable fuser" >&2; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
header=$(printf '%-40s %s | %s' "suite kernel" "NVRTC ms per run" "cached: ready ms")
[ "$phases" = 0 ] || header="$header | slowest run: front end / NVVM / ptxas ms"
echo "$header"
worst="" worst_ms=-1 failed=0
for file in "$here"/suites/*/*.fusion; do
  rel=${file#"$here/suites/"}
  rel=${rel%.fusion}
  if grep -q '^dtype DT\b' "$file"; then types="f32 bf16"; else types="-"; fi
  for dt in $types; do
    set --
    [ "$dt" = - ] || set -- --set DT="$dt"
    line="" cache="" slowest=-1 split=""
    for r in $(seq "$runs"); do
      cache="$work/${rel//\//-}-$dt-$r"
      tfile=""
      [ "$phases" = 0 ] || tfile="$cache.time.csv"
      ms=$(FUSER_NVRTC_TIME=$tfile FUSER_CACHE_DIR=$cache "$fuser" plan "$file" "$@" --json 2>/dev/null |
           grep -o '"compile_ms": [0-9.]*' | awk '{s += $2} END {if (NR) printf "%.0f", s; else printf "failed"}')
      line="$line $ms"
      if [ "$ms" = failed ]; then failed=1; elif [ "$ms" -gt "$slowest" ]; then
        slowest=$ms
        # the phases of every kernel of the fusion added up: front end, NVVM, ptxas
        [ -z "$tfile" ] || split=$(awk -F', *' '$2 ~ /Frontend/ {f += $3} $2 ~ /NVVM/ {n += $3}
                                   $2 ~ /PTX/ {p += $3} END {printf "%d / %d / %d", f, n, p}' "$tfile" 2>/dev/null)
      fi
    done
    ready=$(FUSER_CACHE_DIR=$cache "$fuser" plan "$file" "$@" --json 2>/dev/null |
            grep -o '"ready_ms": [0-9.]*' | awk '{print $2}')
    name="$(basename "$rel") $dt" # two words always: scripts/gpu_session.sh reads the times from the third
    row=$(printf '%-40s%s | %s' "$name" "$line" "${ready:-failed}")
    [ "$phases" = 0 ] || row="$row | ${split:-?}"
    echo "$row"
    if [ "$slowest" -gt "$worst_ms" ]; then worst_ms=$slowest worst=$row; fi
  done
done
echo "slowest:"
echo "$worst"
[ "$failed" = 0 ] || { echo "compile_times.sh: some plans failed (run them with fuser plan to see why)" >&2; exit 1; }
