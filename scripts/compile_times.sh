#!/usr/bin/env bash
# scripts/compile_times.sh -- real NVRTC compile times of the seed kernels (issue 7: <= 300 ms
# each) and how soon a cached fusion is ready to launch (<= 5 ms):
#
#   scripts/compile_times.sh FUSER [RUNS]      e.g. scripts/compile_times.sh build/fuser/fuser 3
#
# Each run is `fuser plan --json` with a fresh cache directory (NVRTC's own cache is off:
# the runtime passes --no-cache), so every figure is a compile; the last column is the
# plan's ready_ms with the cache filled. Sequential: parallel compiles would slow each other.
set -u
case "${1:-}" in
    -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    --version) echo "compile_times.sh (fusebench) $(cat "$(dirname "$0")/../VERSION")"; exit 0 ;;
esac
fuser=${1:?usage: compile_times.sh FUSER [RUNS]}
runs=${2:-3}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-40s %s | %s\n' "seed kernel" "NVRTC ms per run" "cached: ready ms"
for spec in "cross_entropy/cross_entropy_fwd f32" "cross_entropy/cross_entropy_fwd bf16" \
            "cross_entropy/cross_entropy_bwd f32" "cross_entropy/cross_entropy_bwd bf16" \
            "cross_entropy/cross_entropy_fwdbwd f32" "cross_entropy/cross_entropy_fwdbwd bf16" \
            "cross_entropy/cross_entropy_primitives f32" "embedding/embedding_fwd f32" \
            "embedding/embedding_bwd f32" "embedding/embedding_bwd bf16" \
            "qkv_split/qkv_split f32" "qkv_split/qkv_split bf16"; do
  set -- $spec
  line="" cache=""
  for r in $(seq "$runs"); do
    cache="$work/$1-$2-$r"
    ms=$(FUSER_CACHE_DIR=$cache "$fuser" plan "$here/suites/$1.fusion" --set DT="$2" --json 2>/dev/null |
         grep -o '"compile_ms": [0-9.]*' | awk '{s += $2} END {if (NR) printf "%.0f", s; else printf "failed"}')
    line="$line $ms"
  done
  ready=$(FUSER_CACHE_DIR=$cache "$fuser" plan "$here/suites/$1.fusion" --set DT="$2" --json 2>/dev/null |
          grep -o '"ready_ms": [0-9.]*' | awk '{print $2}')
  printf '%-40s%s | %s\n' "$(basename "$1") $2" "$line" "${ready:-failed}"
done
