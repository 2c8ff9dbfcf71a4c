#!/usr/bin/env bash
# scripts/gpu/workloads.sh -- the realistic fusions that were two kernels until session 51 (one
# each since; docs/perf.md v53), timed against a Release build at ${BUILD:-/tmp/b}, f32 and bf16,
# beside torch.compile: a QK norm with the heads moved before the tokens (the row kernel stores
# the permuted output), a masked mean pool (the outer kernel counts the broadcast mask), a group
# norm written as PyTorch decomposes it (its affine computed in the grouped shape, its input kept
# between passes), and a layer norm over x.view(-1, D) (its input kept between passes; the same
# kernel as suites/layer_norm's). Their correctness is test_reduce_gpu's (among the `gpu` tests).
# WORKLOAD_VARIANTS=1 adds the plans before the changes through variants.sh (two more builds):
# "before" (-DPERMUTED_OUTPUTS=0 -DREGROUP_ELEMENTWISE=0 -DROW_VIEW_INPUTS=0) and "noview"
# (-DROW_VIEW_INPUTS=0 alone: the views' inputs read again in each pass, the L2 serving them).
# Logs under ${OUT:-/tmp/out}/workloads/.
# shellcheck source=part.sh
. "$(dirname "$0")/part.sh" workloads
for fusion in qk_norm masked_mean_pool group_norm layer_norm_view; do
  t0=$SECONDS
  timeout 240 "$build/suites/run_suite" "$here/fuser/tests/data/$fusion.fusion" --dtype f32,bf16 --with-torch \
    --repetitions 3 --time-limit 0.1 >"$out/$fusion.txt" 2>"$out/$fusion.err"
  echo "== $fusion: exit $? in $((SECONDS - t0)) s"
  grep -hE ' (ok|FAIL|WRONG)|copy bandwidth| kernels? \(' "$out/$fusion.txt" "$out/$fusion.err" || tail -n 5 "$out/$fusion.err"
done
if [ "${WORKLOAD_VARIANTS:-0}" = 1 ]; then
  VARIANTS="before=-DPERMUTED_OUTPUTS=0 -DREGROUP_ELEMENTWISE=0 -DROW_VIEW_INPUTS=0;noview=-DROW_VIEW_INPUTS=0" VARIANT_ROUNDS=1 \
    VARIANT_ARGS="$here/fuser/tests/data/qk_norm.fusion --dtype f32,bf16 --repetitions 3 --time-limit 0.1 | $here/fuser/tests/data/group_norm.fusion --dtype f32,bf16 --repetitions 3 --time-limit 0.1 | $here/fuser/tests/data/layer_norm_view.fusion --dtype f32,bf16 --repetitions 3 --time-limit 0.1" \
    bash "$here/scripts/gpu/variants.sh"
fi
