#!/usr/bin/env bash
# scripts/gpu/outer_norm.sh -- the outer scheduler's normalizations (fu_plan_options.outer_norm,
# off by default; k_outer.c) on a GPU, against a Release build at ${BUILD:-/tmp/b}:
#   1. correctness: `fuser-fuzz check --device gpu` with FUSER_OUTER_NORM=1, planned for 1 and 4
#      SMs (so that the generator's small fusions get the normalization's tiles: its report counts
#      them) against the interpreter; test_reduce_gpu (outer_norm.fusion with the option) is
#      among the `gpu` tests;
#   2. the A/B: fuser/tests/data/outer_norm.fusion (a softmax and a layer norm over axis 1 of
#      [B, R, C]) timed as the row scheduler plans it (strided rows) and with FUSER_OUTER_NORM=1,
#      at OUTER_NORM_SIZES, f32 and bf16, the first run with torch.compile beside it.
# Logs under ${OUT:-/tmp/out}/outer_norm/.
# shellcheck source=part.sh
. "$(dirname "$0")/part.sh" outer_norm
sizes=${OUTER_NORM_SIZES:-B=8,R=4096,C=1024;B=32,R=512,C=2048;B=2,R=16384,C=1024;B=1,R=8192,C=1024}
for sms in 1 4; do
  for ops in rows extended; do
    t0=$SECONDS
    FUSER_OUTER_NORM=1 timeout 150 "$build/fuser/fuser-fuzz" check --count 200 --seed 7301 --ops "$ops" --device gpu \
      --sms "$sms" >"$out/fuzz_${ops}_$sms.txt" 2>&1
    echo "fuser-fuzz check --ops $ops --device gpu --sms $sms with FUSER_OUTER_NORM=1: exit $? in $((SECONDS - t0)) s"
    grep -E '^fusions:|^kernels by scheduler|differs|does not|failed' "$out/fuzz_${ops}_$sms.txt" | head -n 8
  done
done
option_ab FUSER_OUTER_NORM "$here/fuser/tests/data/outer_norm.fusion" "$sizes"
