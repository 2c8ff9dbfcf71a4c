/*
 * fuzz_plan.c -- fu_plan_build on every fusion that builds: segmenter,
 * schedulers and code generation (the CUDA C text), then both plan printers.
 * No NVRTC and no device: a plan with the default (H200) device numbers, in
 * both scatter modes (the atomic one with the transpose scheduler's tiles at
 * every size, .transpose_min_bytes = 0), then with the outer scheduler's
 * normalizations on (fu_plan_options.outer_norm, off by default) and the
 * transpose scheduler off (.transpose, on by default) for 2 SMs, where small
 * fusions take the normalizations' tiles. Every fusion that builds (the verifier accepts it) plans, zero-size tensors and empty axes included; only memory may run out
 * (regressions/plan/ has the ones that crashed k_pointwise.c before the
 * segmenter's fix). A refusal was allowed until session 46, when a softmax
 * over an empty axis and a cross entropy over no classes were refused. Seeds:
 * fuser/fuzz/corpus/fusion (the repository's .fusion files, and two small files over most ops).
 */
#include "fuser.h"
#include "fuzz_common.h"
#include "plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 14) return 0;
    char *text = fuzz_text(data, size);
    fu_program *p = NULL;
    fu_fusion *f = NULL;
    fu_error err;
    if (fu_program_parse(text, "fuzz.fusion", &p, &err) == FU_OK && fu_program_build(p, NULL, 0, &f, &err) == FU_OK) {
        for (int mode = 0; mode < 3; mode++) {
            fu_plan_options po;
            fu_plan_options_default(&po);
            po.scatter = mode == 1 ? FU_SCATTER_ATOMIC : FU_SCATTER_DETERMINISTIC;
            if (mode == 1) po.transpose_min_bytes = 0; /* the transpose scheduler's tiles at every size */
            if (mode == 2) {
                po.outer_norm = true;
                po.transpose = false;
                fu_plan_options_set_sm_count(&po, 2);
            }
            fu_plan *plan = NULL;
            if (fu_plan_build(f, &po, &plan, &err) != FU_OK) {
                /* every fusion the verifier accepts plans (issue 19); only memory may run out */
                FUZZ_REQUIRE(err.status == FU_ERR_NOMEM, "a verified fusion did not plan: %s", err.message);
                continue;
            }
            for (int k = 0; k < plan->nkernels; k++)
                FUZZ_REQUIRE(plan->kernels[k].source && plan->kernels[k].source[0], "kernel %d has no source", k);
            char *t = fu_plan_text(plan), *j = fu_plan_json(plan, NULL, NULL);
            FUZZ_REQUIRE(t && j, "a plan printer failed");
            free(t);
            free(j);
            fu_plan_free(plan);
        }
    }
    fu_fusion_free(f);
    fu_program_free(p);
    free(text);
    return 0;
}
