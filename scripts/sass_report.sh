#!/usr/bin/env bash
# scripts/sass_report.sh -- what the compiler made of the seed workloads' kernels:
# registers, spills and the instruction mix (SASS opcodes) of each generated
# kernel, for docs/perf.md. Needs nvcc and cuobjdump (the GPU machine has them).
#
#   scripts/sass_report.sh FUSER [ARCH]      e.g. scripts/sass_report.sh /tmp/b/fuser/fuser sm_90
#
# Compiles each kernel's `fuser codegen` text with nvcc -cubin (the same source
# NVRTC compiles; nvcc for the resource report and the disassembler).
set -u
case "${1:-}" in
    -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    --version) echo "sass_report.sh (fusebench) $(cat "$(dirname "$0")/../VERSION")"; exit 0 ;;
esac
fuser=${1:?usage: sass_report.sh FUSER [ARCH]}
arch=${2:-sm_90}
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
report() { # name, fusion file, fuser options...
  local name=$1 file=$2; shift 2
  local src="$work/$name.cu"
  if ! "$fuser" codegen "$here/$file" "$@" >"$src" 2>"$work/err"; then
    echo "== $name: fuser codegen failed: $(head -n 1 "$work/err")"; return
  fi
  echo "== $name ($file $*)"
  nvcc -arch="$arch" -cubin -Xptxas -v -w -o "$work/$name.cubin" "$src" 2>&1 | grep -E "registers|spill" | sed 's/^ptxas info *: */  /'
  cuobjdump -sass "$work/$name.cubin" >"$work/$name.sass" 2>&1 || { echo "  cuobjdump failed"; return; }
  # opcode histogram (the mnemonic without its modifiers), most frequent first
  grep -E '^\s+/\*[0-9a-f]{4,}\*/' "$work/$name.sass" | sed -E 's/^\s+\/\*[0-9a-f]+\*\/\s+(@!?U?P[0-9T] )?//; s/[ .;].*//' |
    sort | uniq -c | sort -rn | head -n 14 | awk '{printf "  %6d %s\n", $1, $2}'
  echo "  total: $(grep -cE '^\s+/\*[0-9a-f]{4,}\*/' "$work/$name.sass") instructions"
}
report ce_fwd_bf16 suites/cross_entropy/cross_entropy_fwd.fusion --set DT=bf16
report ce_fwdbwd_bf16 suites/cross_entropy/cross_entropy_fwdbwd.fusion --set DT=bf16
report ce_fwdbwd_f32 suites/cross_entropy/cross_entropy_fwdbwd.fusion --set DT=f32
report ce_bwd_bf16 suites/cross_entropy/cross_entropy_bwd.fusion --set DT=bf16
report emb_bwd_det_f32_small suites/embedding/embedding_bwd.fusion --set DT=f32 --set V=50304 --set D=768 --set T=8192
report qkv_bf16_big suites/qkv_split/qkv_split.fusion --set DT=bf16 --set B=32 --set T=2048 --set C=2048 --set H=32
