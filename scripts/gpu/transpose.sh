#!/usr/bin/env bash
# scripts/gpu/transpose.sh -- the transpose scheduler (fu_plan_options.transpose; k_transpose.c;
# FUSER_TRANSPOSE=0 turns it off) on a GPU, against a Release build at ${BUILD:-/tmp/b}: its correctness is
# test_reduce_gpu's (transpose.fusion and transpose_both.fusion with the option, among the `gpu`
# tests); here the A/B: fuser/tests/data/transpose.fusion (x: [B, N, M] permuted to [B, M, N],
# plus y, times s) as the pointwise scheduler plans it (x read a column at a time) and with
# FUSER_TRANSPOSE=1 (tiles staged in shared memory at every size; by default only where the
# transposed reads exceed an eighth of the L2), at TRANSPOSE_SIZES, f32 and bf16, the first
# run with torch.compile beside it. Logs under ${OUT:-/tmp/out}/transpose/.
# shellcheck source=part.sh
. "$(dirname "$0")/part.sh" transpose
option_ab FUSER_TRANSPOSE "$here/fuser/tests/data/transpose.fusion" \
  "${TRANSPOSE_SIZES:-B=4,M=1024,N=2048;B=1,M=8192,N=8192;B=256,M=128,N=64}"
