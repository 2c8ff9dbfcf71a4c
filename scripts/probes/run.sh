#!/usr/bin/env bash
# scripts/probes/run.sh -- builds (nvcc) and runs the memory-pattern probes of docs/perf.md v13 on a GPU:
#
#   scripts/probes/run.sh [OUTDIR] [ARCH]       e.g. scripts/probes/run.sh /tmp/probes sm_90a
#
#   copy_probe  copy kernels (grid-stride, tiles of 1-8 vectors per thread, TMA bulk) against cuMemcpyDtoD
#   row_probe   the fused cross entropy's rows: strided, one block per row, from a counter, across clusters
#   qkv_probe   the QKV split's traversal orders
#   mufu_probe  packed bf16/f16 tanh and ex2: exhaustive accuracy and MUFU throughput (v22)
#   cluster_probe  clusters of 1-8 (16) blocks of 1024 threads the GPU holds at once (v38)
#
# Each timing probe prints one line per variant (median us of 31 cold-L2 samples, GB/s of bytes read +
# written); cluster_probe prints counts. Each keeps its lines in OUTDIR/NAME.txt (default /tmp/probes).
# PROBES="cluster_probe ..." runs only those. Exit status: 0, or that of the first step that failed.
set -eu
out=${1:-/tmp/probes}
arch=${2:-sm_90a}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
for p in ${PROBES:-copy_probe row_probe qkv_probe mufu_probe cluster_probe}; do
  nvcc -O3 -arch="$arch" -std=c++17 -o "$out/$p" "$here/$p.cu"
  echo "== $p"
  "$out/$p" | tee "$out/$p.txt"
done
