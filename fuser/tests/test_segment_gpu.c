/*
 * test_segment_gpu.c -- atomic 16-bit scatter accumulates in f32 (issue 21
 * item 8): the embedding backward in bf16 with skewed ids (half of the 8192
 * tokens on row 0, the rest uniform; D = 768) in atomic mode agrees with the
 * interpreter within the suites' bf16 tolerance (each add rounded to bf16
 * was ~14% off on row 0), and so does the deterministic mode on the same
 * inputs. Skips (77) without a GPU.
 */
#define _XOPEN_SOURCE 700

#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "exec.h"
#include "fuser_cases.h"
#include "fuzzgen.h"
#include "gpu_test.h"

static void skewed_case(fu_runtime *rt, fu_scatter_mode mode, const fu_host_tensor *in, const fu_host_tensor *ref,
                        const fu_fusion *f)
{
    fu_error err = {0};
    fu_plan_options po;
    fu_plan_options_for_device(rt, &po);
    po.scatter = mode;
    fu_host_tensor out[1];
    fu_status s = fu_exec_run_host(rt, f, &po, in, out, &err);
    OK(s);
    if (s) return;
    double d = fz_difference(&out[0], &ref[0]);
    printf("embedding_bwd bf16 skewed ids, %s: max_rel_error=%.3g (tolerance %.3g)\n",
           mode == FU_SCATTER_ATOMIC ? "atomic" : "deterministic", d, fz_tolerance(FU_BF16));
    CHECK(d <= fz_tolerance(FU_BF16));
    fu_host_tensor_free(&out[0]);
}

int main(void)
{
    fu_runtime *rt;
    int rc = gpu_test_open("test_segment_gpu", NULL, &rt);
    if (rc) return rc;
    const int64_t V = 50304, D = 768, T = 8192;
    fu_fusion *f = tc_embedding_bwd(FU_BF16, V, D, T, -1);
    fu_error err = {0};
    fu_host_tensor in[2], ref[1];
    OK(fu_random_inputs(f, 1, in, &err));
    int64_t *ids = in[1].data;
    for (int64_t t = 0; t < T; t += 2) ids[t] = 0; /* half of the tokens on row 0 */
    OK(fu_interp_run(f, in, ref, &err));
    skewed_case(rt, FU_SCATTER_ATOMIC, in, ref, f);
    skewed_case(rt, FU_SCATTER_DETERMINISTIC, in, ref, f);
    fu_host_tensor_free(&ref[0]);
    for (int i = 0; i < 2; i++) fu_host_tensor_free(&in[i]);
    fu_fusion_free(f);
    fu_runtime_close(rt);
    return check_finish("test_segment_gpu");
}
