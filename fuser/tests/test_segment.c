/*
 * test_segment.c -- the segmenter on the fusions of issue 19 (fuser/tests/
 * segment/ (.fusion files) and the degenerate sizes of the suites): each plans to
 * exactly the kernels its reduction axes force (the lower bound of
 * bound.c; none where every output is empty: such kernels are dropped), no more; every kernel compiles with NVRTC; the interpreter runs
 * each; every seed workload plans to one kernel at the bound of one; and
 * `FUSER_DEBUG=1 fuser plan` names each boundary with its reason.
 *
 * argv[1]: the folder of the .fusion files (fuser/tests).
 */
#define _XOPEN_SOURCE 700

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec.h"
#include "fuser_cases.h"
#include "runtime.h"
#include "test_util.h"

typedef struct expect {
    const char *rel;          /* under the folder given */
    const char *sets[6];      /* --set overrides */
    int kernels;              /* exact, and the lower bound (0 where every output has no elements) */
} expect;

static const expect cases[] = {
    {"segment/keepdim_extent1.fusion", {NULL}, 0},
    {"segment/single_row_softmax_colsum.fusion", {NULL}, 1},
    {"segment/empty_row_sums.fusion", {NULL}, 0},
    {"segment/empty_neg.fusion", {NULL}, 0},
    {"segment/rowmax_then_cols.fusion", {NULL}, 2},
    {"segment/softmax_then_cols.fusion", {NULL}, 2},
    {"segment/ln_softmax_colsoftmax.fusion", {NULL}, 2},
    {"segment/softmax_colnorm_collogsoftmax.fusion", {NULL}, 2},
    {"segment/scalar_ops.fusion", {NULL}, 1},
    {"segment/rowmax_permuted.fusion", {NULL}, 1},
    {"segment/reshape_of_input.fusion", {NULL}, 1},
    {"segment/units_kept_rowsum_then_max.fusion", {NULL}, 1},
    {"segment/units_kept_min_of_colmax.fusion", {NULL}, 1},
    {"segment/small_full_mean_centered.fusion", {NULL}, 1},
    {"segment/grid_output_beside_rows.fusion", {NULL}, 1},
    {"segment/one_block_stages.fusion", {NULL}, 1},
    {"segment/one_block_slots.fusion", {NULL}, 1},
    {"segment/lse_shift_zero.fusion", {NULL}, 1},
    {"segment/small_max_then_rows.fusion", {NULL}, 1},
    {"segment/plain_views_output.fusion", {NULL}, 1},
    {"segment/scatter_beside_output.fusion", {NULL}, 2},
    {"segment/one_block_scatter.fusion", {NULL}, 1},
    {"segment/grid_sum_of_broadcast.fusion", {NULL}, 1},
    {"segment/one_block_grid_step.fusion", {NULL}, 1},
    {"segment/grid_value_gathered.fusion", {NULL}, 1},
    {"segment/column_sums_permuted.fusion", {NULL}, 1},
    {"segment/grid_tail_output.fusion", {NULL}, 1},
    {"segment/unit_permute_view.fusion", {NULL}, 0},
    /* realistic workloads that were two kernels (session 51): a group norm's affine after the
     * view back, a QK norm's permuted output, a masked mean's broadcast count */
    {"data/group_norm.fusion", {"N=3", "C=12", "G=4", "H=40", "W=30"}, 1},
    {"data/qk_norm.fusion", {"B=2", "T=33", "H=4", "D=128"}, 1},
    {"data/masked_mean_pool.fusion", {"B=3", "T=130", "D=256"}, 1},
    {"data/layer_norm_view.fusion", {"B=3", "T=5", "D=300"}, 1},
};

/* Suite files at degenerate sizes (issue 19 item 1, issue 21 items 4 and 9). */
static const expect suite_cases[] = {
    {"embedding/embedding_fwd.fusion", {"T=0"}, 0}, /* (an empty output: no kernel) */
    {"embedding/embedding_bwd.fusion", {"T=0"}, 1},
    {"embedding/embedding_fwd.fusion", {"V=1", "D=1", "T=1"}, 1},
    {"cross_entropy/cross_entropy_fwd.fusion", {"N=1", "V=1"}, 1},
    {"cross_entropy/cross_entropy_bwd.fusion", {"N=1", "V=1"}, 1},
    {"cross_entropy/cross_entropy_fwdbwd.fusion", {"N=1", "V=1"}, 1},
    {"cross_entropy/cross_entropy_fwdbwd.fusion", {"N=0", "V=5"}, 1},
    {"cross_entropy/cross_entropy_primitives.fusion", {"N=1", "V=1"}, 1},
    {"qkv_split/qkv_split.fusion", {"B=1", "T=1", "C=1", "H=1"}, 1},
    {"qkv_split/qkv_split.fusion", {"T=0"}, 0},
    /* the seeds at their defaults */
    {"embedding/embedding_fwd.fusion", {NULL}, 1},
    {"embedding/embedding_bwd.fusion", {NULL}, 1},
    {"cross_entropy/cross_entropy_fwd.fusion", {NULL}, 1},
    {"cross_entropy/cross_entropy_bwd.fusion", {NULL}, 1},
    {"cross_entropy/cross_entropy_fwdbwd.fusion", {NULL}, 1},
    {"cross_entropy/cross_entropy_primitives.fusion", {NULL}, 1},
    {"qkv_split/qkv_split.fusion", {NULL}, 1},
    {"qkv_split/seed_repro.fusion", {NULL}, 1},
};

static int nsets(const expect *e)
{
    int n = 0;
    while (n < 6 && e->sets[n]) n++;
    return n;
}

/* Plans (and checks the kernels against the bound), compiles every kernel,
 * and runs the interpreter on random inputs (small sizes only). */
static void check_case(fu_runtime *rt, const char *dir, const expect *e, bool interpret)
{
    tc_list l = {0};
    tc_case *c = tc_add_suite(&l, dir, e->rel, "segment", e->sets, nsets(e), FU_F32, NULL);
    CHECK(c != NULL);
    if (!c) return;
    int before = check_failures;
    fu_error err = {0};
    fu_plan *p = tc_plan(c, 132, &err);
    CHECK(p != NULL);
    if (!p) fprintf(stderr, "%s: %s\n", c->name, err.message);
    if (p) {
        CHECK(p->nkernels == e->kernels);
        CHECK(p->lower_bound == e->kernels);
        fu_executable *x = NULL;
        CHECK(fu_exec_prepare(rt, p, &x, &err) == FU_OK);
        if (!x) fprintf(stderr, "%s: %s\n", c->name, err.message);
        fu_exec_free(x);
    }
    if (interpret) {
        int nin = fu_fusion_num_inputs(c->f), nout = fu_fusion_num_outputs(c->f);
        fu_host_tensor in[16], out[16];
        CHECK(nin <= 16 && nout <= 16);
        bool ok = nin <= 16 && nout <= 16 && fu_random_inputs(c->f, 1, in, &err) == FU_OK;
        CHECK(ok);
        if (ok) {
            bool ran = fu_interp_run(c->f, in, out, &err) == FU_OK;
            CHECK(ran);
            if (!ran) fprintf(stderr, "%s: interpreter: %s\n", c->name, err.message);
            /* the planned fusion (decomposed, rewritten) has the fusion's values */
            fu_host_tensor planned[16];
            bool same = ran && p && fu_interp_run(p->fusion, in, planned, &err) == FU_OK;
            CHECK(!ran || !p || same);
            for (int i = 0; same && i < nout; i++) {
                double e = fu_host_max_rel_error(&planned[i], &out[i]);
                CHECK(e <= 1e-6);
                if (e > 1e-6) fprintf(stderr, "%s: planned fusion's output %d differs: %.3g\n", c->name, i, e);
                fu_host_tensor_free(&planned[i]);
            }
            for (int i = 0; ran && i < nout; i++) fu_host_tensor_free(&out[i]);
            for (int i = 0; i < nin; i++) fu_host_tensor_free(&in[i]);
        }
    }
    printf("%-56s kernels=%d bound=%d  %s\n", c->name, p ? p->nkernels : -1, p ? p->lower_bound : -1,
           check_failures == before ? "OK" : "FAIL");
    fu_plan_free(p);
    tc_list_free(&l);
}

/* Atomic bf16 scatter: the adds go into an f32 tensor zeroed before the
 * launch, and a second kernel rounds once (issue 21 item 8). */
static void check_atomic_bf16_form(const char *suites)
{
    tc_list l = {0};
    tc_case *c = tc_add_suite(&l, suites, "embedding/embedding_bwd.fusion", "atomic", NULL, 0, FU_BF16, NULL);
    CHECK(c != NULL);
    if (!c) return;
    c->scatter = FU_SCATTER_ATOMIC;
    fu_error err = {0};
    fu_plan *p = tc_plan(c, 132, &err);
    CHECK(p && p->nkernels == 2);
    if (p && p->nkernels == 2) {
        const fu_kernel_plan *s = &p->kernels[0], *r = &p->kernels[1];
        CHECK(s->sched == FU_SCHED_SCATTER && s->zero_before >= 0);
        CHECK(fu_tensor_dtype(p->fusion, s->zero_before) == FU_F32);
        CHECK_CONTAINS(s->source, "float *__restrict__ out0");
        CHECK_CONTAINS(s->source, "atomicAdd(");
        CHECK(r->sched == FU_SCHED_POINTWISE);
        CHECK_CONTAINS(r->source, "fu_bf16 *__restrict__ out0");
    }
    fu_plan_free(p);
    /* f32 stays one kernel */
    c = tc_add_suite(&l, suites, "embedding/embedding_bwd.fusion", "atomic", NULL, 0, FU_F32, NULL);
    if (c) c->scatter = FU_SCATTER_ATOMIC;
    p = c ? tc_plan(c, 132, &err) : NULL;
    CHECK(p && p->nkernels == 1);
    fu_plan_free(p);
    tc_list_free(&l);
}

/* An atomic scatter onto a constant other than zero: the constant in memory first (a kernel of
 * its own), then the scatter copies it into its output and adds; in both scatter modes (a
 * scatter_add is atomic in either), compiled, and the planned fusion interprets to the same
 * values. A base of zeros stays in the scatter's kernel. */
static void check_scatter_onto_constant(fu_runtime *rt, const char *dir)
{
    for (int mode = 0; mode < 2; mode++) {
        tc_list l = {0};
        tc_case *c = tc_add_suite(&l, dir, "segment/scatter_onto_constant.fusion", "scatter", NULL, 0, FU_F32, NULL);
        CHECK(c != NULL);
        if (!c) continue;
        c->scatter = mode ? FU_SCATTER_ATOMIC : FU_SCATTER_DETERMINISTIC;
        fu_error err = {0};
        fu_plan *p = tc_plan(c, 132, &err);
        CHECK(p && p->nkernels == 2);
        if (!p) fprintf(stderr, "scatter_onto_constant: %s\n", err.message);
        if (p && p->nkernels == 2) {
            const fu_kernel_plan *base = &p->kernels[0], *s = &p->kernels[1];
            CHECK(base->sched == FU_SCHED_POINTWISE && s->sched == FU_SCHED_SCATTER);
            CHECK(s->copy_before >= 0 && s->zero_before < 0 && !strcmp(fu_tensor_name(p->fusion, s->copy_before), "z"));
            fu_executable *x = NULL;
            CHECK(fu_exec_prepare(rt, p, &x, &err) == FU_OK);
            fu_exec_free(x);
            fu_host_tensor in[2], want[1], got[1];
            bool ok = fu_random_inputs(c->f, 3, in, &err) == FU_OK;
            CHECK(ok && fu_interp_run(c->f, in, want, &err) == FU_OK && fu_interp_run(p->fusion, in, got, &err) == FU_OK);
            if (ok) {
                size_t n = fu_host_tensor_bytes(&want[0]);
                CHECK(n == fu_host_tensor_bytes(&got[0]) && !memcmp(want[0].data, got[0].data, n));
                fu_host_tensor_free(&want[0]);
                fu_host_tensor_free(&got[0]);
                for (int k = 0; k < 2; k++) fu_host_tensor_free(&in[k]);
            }
        }
        fu_plan_free(p);
        tc_list_free(&l);
    }
    const char *zero = "fusion zero_base\ninput x: f32[94, 6]\ninput i: i64[94, 2]\n"
                       "z = full(shape=[94, 6], value=0.0, dtype=f32)\ng = take_along_axis(x, i, axis=1)\n"
                       "q = scatter_add(z, i, g, axis=0)\noutput q\n";
    fu_error err = {0};
    fu_fusion *f = tc_fusion_from_text(zero, &err);
    fu_plan_options o;
    fu_plan_options_default(&o);
    fu_plan *p = NULL;
    CHECK(f && fu_plan_build(f, &o, &p, &err) == FU_OK && p->nkernels == 1 && p->kernels[0].zero_before >= 0);
    fu_plan_free(p);
    fu_fusion_free(f);
}

/* A view of a row value followed by 59 doublings (t = add(t, t)): 2^59 paths from the view to
 * the output, each walked once by a recursive search; the planner's pass over the readers
 * (segment.c, find_feeds_only_outputs) plans it at once, in one kernel. */
static void check_many_paths(void)
{
    fu_strbuf sb;
    fu_sb_init(&sb);
    fu_sb_puts(&sb, "fusion doublings\ninput x: f32[64, 256]\nm = sum(x, axes=[1], keepdim=true)\nd = sub(x, m)\n"
                    "r = reshape(d, shape=[64, 16, 16])\nt0 = exp(r)\n");
    for (int i = 1; i < 60; i++) fu_sb_printf(&sb, "t%d = add(t%d, t%d)\n", i, i - 1, i - 1);
    fu_sb_puts(&sb, "output t59\n");
    fu_error err = {0};
    fu_fusion *f = sb.data && !sb.failed ? tc_fusion_from_text(sb.data, &err) : NULL;
    fu_plan_options o;
    fu_plan_options_default(&o);
    fu_plan *p = NULL;
    CHECK(f && fu_plan_build(f, &o, &p, &err) == FU_OK && p->nkernels == 1);
    fu_plan_free(p);
    fu_fusion_free(f);
    fu_sb_free(&sb);
}

/* FUSER_DEBUG=1 names the boundary of a split fusion and why it is there. */
static void check_debug_boundary(const char *dir)
{
    const char *bin = getenv("FUSER_BIN");
    CHECK(bin != NULL);
    if (!bin) return;
    char path[1024];
    snprintf(path, sizeof path, "%s/segment/rowmax_then_cols.fusion", dir);
    setenv("FUSER_DEBUG", "1", 1);
    tu_output r = tu_run_capture(bin, (const char *const[]){"plan", path, NULL});
    unsetenv("FUSER_DEBUG");
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.err, "boundary between the kernels of");
    CHECK_CONTAINS(r.err, "boundary between the kernels of 'm' and 'y': ");
    CHECK_CONTAINS(r.err, "reduction: "); /* the reason: what the reduction schedulers refused */
    CHECK_CONTAINS(r.out, "2 kernels");
    tu_output_free(&r);
}

/* The plan of a segment file (f32, 132 SMs) with one --set, or none where set is NULL. */
static fu_plan *plan_segment_file(const char *dir, const char *rel, const char *set)
{
    const char *sets[1] = {set};
    tc_list l = {0};
    tc_case *c = tc_add_suite(&l, dir, rel, "segment", sets, set ? 1 : 0, FU_F32, NULL);
    fu_error err = {0};
    fu_plan *p = c ? tc_plan(c, 132, &err) : NULL;
    tc_list_free(&l);
    return p;
}

/* A small fusion whose reductions take other axes than the last and are read back at other
 * indices: one kernel of the one-block scheduler, a stage a reduction (k_block.c); the same
 * math on 60 times the rows is more than one block's work and splits. */
static void check_one_block(const char *dir)
{
    for (int big = 0; big < 2; big++) {
        fu_plan *p = plan_segment_file(dir, "segment/one_block_stages.fusion", big ? "R=480" : NULL);
        CHECK(p != NULL);
        if (p && !big) {
            CHECK(p->nkernels == 1 && p->kernels[0].sched == FU_SCHED_BLOCK && p->kernels[0].grid == 1 &&
                  p->kernels[0].block == 1024);
            const char *src = p->nkernels == 1 ? p->kernels[0].source : "";
            CHECK_CONTAINS(p->kernels[0].config, "m=8x96/128");      /* an element over 4 warps */
            CHECK_CONTAINS(p->kernels[0].config, "bm=40x24/16");     /* 16 threads an element */
            CHECK_CONTAINS(p->kernels[0].config, "ws=1536x2/1");     /* 2 passes of a thread an element */
            CHECK_CONTAINS(p->kernels[0].config, "wm=1x1536/1024");  /* the whole block on one element */
            CHECK_CONTAINS(src, "for (int w = 1; w < 4; w++) acc = fu_op_max()(acc, ((const float *)fu_part)");
            CHECK_CONTAINS(src, "__syncthreads(); // stage 6 is complete");
            CHECK_CONTAINS(src, "for (int w = 1; w < 32; w++) acc = fu_op_max()(acc, ((const float *)fu_part)");
            CHECK_CONTAINS(src, "acc = fu_round_bf16(acc); // a value of bf16");
            CHECK(!strstr(src, "fu_ws") && !strstr(src, "atomic")); /* no grid-wide step */
        }
        if (p && big) {
            CHECK(p->nkernels > 1 && p->lower_bound == 2);
            for (int k = 0; k < p->nkernels; k++)
                CHECK(p->kernels[k].sched != FU_SCHED_BLOCK || !strstr(p->kernels[k].config, " m=")); /* 480 x 96: too many */
        }
        printf("one block (R=%s): %d kernel%s, bound %d\n", big ? "480" : "8", p ? p->nkernels : -1,
               p && p->nkernels == 1 ? "" : "s", p ? p->lower_bound : -1);
        fu_plan_free(p);
    }
}

/* More work for one block where the reduction scheduler would need a grid-wide step
 * (FU_BLOCK_GRID_STEP_WORK): at R = 256 the max reads 13312 elements, past FU_BLOCK_MAX_WORK,
 * and one block takes the fusion instead of 4 blocks and a last-block combine; at R = 512
 * (26624) the row scheduler does, with its grid step. */
static void check_block_grid_step(const char *dir)
{
    for (int big = 0; big < 2; big++) {
        fu_plan *p = plan_segment_file(dir, "segment/one_block_grid_step.fusion", big ? "R=512" : NULL);
        CHECK(p != NULL && p->nkernels == 1);
        const fu_kernel_plan *k = p && p->nkernels == 1 ? &p->kernels[0] : NULL;
        if (k && !big) CHECK(k->sched == FU_SCHED_BLOCK && k->grid == 1 && k->workspace_bytes == 0);
        if (k && big) CHECK(k->sched == FU_SCHED_REDUCTION && k->grid > 1 && k->workspace_bytes > 0);
        printf("one block before a grid step (R=%s): %s\n", big ? "512" : "256", k ? fu_sched_name(k->sched) : "-");
        fu_plan_free(p);
    }
}

/* The one-block scheduler's issue slots (FU_BLOCK_MAX_SLOTS): at C = 2 the output loop is cheap
 * and the block takes the fusion; at C = 16 the output is 16384 elements of a tanh and a division
 * each, and it goes to a pointwise kernel over the GPU while the block keeps the reductions. */
static void check_block_slots(const char *dir)
{
    for (int big = 0; big < 2; big++) {
        fu_plan *p = plan_segment_file(dir, "segment/one_block_slots.fusion", big ? "C=16" : NULL);
        CHECK(p != NULL);
        if (p && !big) CHECK(p->nkernels == 1 && p->kernels[0].sched == FU_SCHED_BLOCK);
        if (p && big) {
            CHECK(p->nkernels == 2 && p->lower_bound == 1);
            CHECK(p->nkernels == 2 && p->kernels[0].sched == FU_SCHED_BLOCK && p->kernels[1].sched == FU_SCHED_POINTWISE &&
                  p->kernels[1].grid > 1);
        }
        printf("one block's slots (C=%s): %d kernel%s\n", big ? "16" : "2", p ? p->nkernels : -1,
               p && p->nkernels == 1 ? "" : "s");
        fu_plan_free(p);
    }
}

/* A scatter of floats is a stage of the one-block scheduler: at N = 32 the column mean, the
 * index_add, its column sum and the scatter_add are one block, whose index_add first puts its
 * 224 sources and 32 checked indices in shared memory; at N = 2048 the index_add's work is
 * more than one block's, and the plan splits. */
static void check_block_scatter(const char *dir)
{
    for (int big = 0; big < 2; big++) {
        fu_plan *p = plan_segment_file(dir, "segment/one_block_scatter.fusion", big ? "N=2048" : NULL);
        CHECK(p != NULL);
        if (p && !big) {
            CHECK(p->nkernels == 1 && p->lower_bound == 1 && p->kernels[0].sched == FU_SCHED_BLOCK);
            const char *src = p->nkernels == 1 ? p->kernels[0].source : "";
            CHECK_CONTAINS(p->kernels[0].config, " s=119x32/1"); /* 17 x 7 elements, 32 sources each */
            CHECK_CONTAINS(src, "// its 224 sources' values and checked indices, once each");
            CHECK_CONTAINS(src, "fu_oob.check(");
            CHECK_CONTAINS(src, "__syncthreads(); // stage 1's sources are complete");
            const char *body = strstr(src, "// ---- end of prelude ----");
            CHECK(body && !strstr(body, "atomicAdd") && !strstr(body, "fu_ws")); /* in source order, in the block */
        }
        if (p && big) {
            CHECK(p->nkernels > 1);
            for (int k = 0; k < p->nkernels; k++)
                CHECK(p->kernels[k].sched != FU_SCHED_BLOCK || !strstr(p->kernels[k].config, " s="));
        }
        printf("one block's scatter (N=%s): %d kernel%s, bound %d\n", big ? "2048" : "32", p ? p->nkernels : -1,
               p && p->nkernels == 1 ? "" : "s", p ? p->lower_bound : -1);
        fu_plan_free(p);
    }
}

/* Values a pass computes and a later pass reads again are kept in registers (KEEP_VALUES):
 * kept_values.fusion's passes after the first read neither input again, its row edges included.
 * A row over several axes is read in vectors along the last one. */
static void check_kept_values(const char *dir)
{
    /* (264 rows: more than the SMs, so the rows of 255 take aligned vectors and edges) */
    fu_plan *p = plan_segment_file(dir, "segment/kept_values.fusion", "R=264");
    CHECK(p != NULL && p->nkernels == 1);
    if (p && p->nkernels == 1) {
        const fu_kernel_plan *kp = &p->kernels[0];
        CHECK(kp->sched == FU_SCHED_REDUCTION);
        CHECK_CONTAINS(kp->config, " kept_values=2");
        CHECK_CONTAINS(kp->params_json, "\"kept_values\": [{\"name\": \"w\", \"pass\": 1}, {\"name\": \"q\", \"pass\": 2}]");
        const char *later = strstr(kp->source, "// pass 2 over the row");
        CHECK(later && !strstr(later, "in0[") && !strstr(later, "in0 +") && !strstr(later, "in1[") && !strstr(later, "in1 +"));
        CHECK_CONTAINS(kp->source, "fu_ce0 = fu_load(in0["); /* the edge's x, loaded once */
        CHECK_CONTAINS(later, "fu_ke1 = ");                  /* q at the edge, for pass 3 */
        CHECK_CONTAINS(later, " = (fu_k1[it * 4 + 3] - ");  /* pass 3's lanes read q's registers */
        printf("kept values: %s\n", kp->config);
    }
    fu_plan_free(p);
    /* a row over both axes of [96, 128] (a full mean): vectors along the last axis (VEC_INNER_AXES) */
    p = plan_segment_file(dir, "segment/small_full_mean_centered.fusion", NULL);
    CHECK(p != NULL && p->nkernels == 1);
    if (p && p->nkernels == 1) {
        CHECK_CONTAINS(p->kernels[0].config, " inner=12288 vec=4 ");
        CHECK_CONTAINS(p->kernels[0].source, "= __ldg((const uint4 *)(in0 + kb));"); /* 128 * k0 + k1: kb */
    }
    fu_plan_free(p);
}

/* A gather along an axis of extent 1 reads its source at 0 after the index's check: the
 * source's load does not wait for the index, and the check still reports a bad one. */
static void check_gather_extent_one(const char *dir)
{
    fu_plan *p = plan_segment_file(dir, "segment/gather_extent_one.fusion", NULL);
    CHECK(p != NULL && p->nkernels == 1);
    if (p && p->nkernels == 1) {
        CHECK_CONTAINS(p->kernels[0].source, " = fu_oob.check(");
        CHECK_CONTAINS(p->kernels[0].source, " = fu_load(in0[d0_0]);");
        CHECK(!strstr(p->kernels[0].source, "in0[(d0_0 + j"));
    }
    fu_plan_free(p);
}

/* A grid reduction of a per-row value that lacks a row axis adds it only from the rows at 0 on
 * that axis, in the row loop (grid_sum_of_broadcast.fusion) and in the prologue every block
 * computes (one_warp_prologue.fusion, x2 [31] on rows [31, 31]). */
static void check_grid_sum_of_broadcast(const char *dir)
{
    fu_plan *p = plan_segment_file(dir, "segment/grid_sum_of_broadcast.fusion", NULL);
    CHECK(p != NULL && p->nkernels == 1);
    if (p && p->nkernels == 1) CHECK_CONTAINS(p->kernels[0].source, "+= (o0 == 0 ? v");
    fu_plan_free(p);
    p = plan_segment_file(dir, "segment/one_warp_prologue.fusion", NULL);
    CHECK(p != NULL && p->nkernels == 2);
    if (p && p->nkernels == 2) CHECK_CONTAINS(p->kernels[1].source, "acc += (o0 == 0 ? v");
    fu_plan_free(p);
}

/* One kernel of scheduler want for fusion text; whether a permute is left in the planned
 * fusion must be `permuted`, and the planned fusion must interpret to the fusion's values. */
static void check_permuted_reductions(const char *text, fu_sched want, bool permuted)
{
    fu_plan *p = NULL;
    fu_error err = {0};
    fu_plan_options o;
    fu_plan_options_default(&o);
    fu_fusion *f = tc_fusion_from_text(text, &err);
    bool planned = f && fu_plan_build(f, &o, &p, &err) == FU_OK;
    CHECK(planned && p->nkernels == 1 && p->kernels[0].sched == want);
    if (!planned) fprintf(stderr, "permuted reductions: %s\n", err.message);
    bool any = false;
    for (int i = 0; planned && i < p->fusion->nnodes; i++) any |= p->fusion->nodes[i].op == FU_OP_PERMUTE;
    CHECK(any == permuted);
    int nin = f ? fu_fusion_num_inputs(f) : 0, nout = f ? fu_fusion_num_outputs(f) : 0;
    fu_host_tensor in[4] = {0}, want_v[4] = {0}, got[4] = {0};
    bool ran = planned && nin <= 4 && nout <= 4 && fu_random_inputs(f, 1, in, &err) == FU_OK &&
               fu_interp_run(f, in, want_v, &err) == FU_OK && fu_interp_run(p->fusion, in, got, &err) == FU_OK;
    CHECK(ran);
    for (int i = 0; ran && i < nout; i++) {
        double e = fu_host_max_rel_error(&got[i], &want_v[i]);
        CHECK(e <= (want_v[i].dtype == FU_BF16 ? 1e-2 : 1e-6));
        fu_host_tensor_free(&got[i]);
        fu_host_tensor_free(&want_v[i]);
    }
    for (int i = 0; ran && i < nin; i++) fu_host_tensor_free(&in[i]);
    printf("permuted reductions: %s -> %s%s\n", f ? fu_fusion_name(f) : "?", planned ? fu_sched_name(p->kernels[0].sched) : "-",
           any ? " (the view kept)" : "");
    fu_plan_free(p);
    fu_fusion_free(f);
}

/* Reductions of a permuted view (segment.c, reduce_of_permute): where the kept axes keep x's
 * order, reductions of x over non-innermost axes, the outer scheduler's, with no permute left
 * in the kernel; through the cast of a bf16 mean's decomposition too; the same values as the
 * view's reductions. Where the kept axes change order, the view's reduction stays. */
static void check_reduce_of_permute(void)
{
    check_permuted_reductions("fusion sum_and_mean\ninput x: f32[8, 512, 1024]\nxt = permute(x, dims=[2, 0, 1])\n"
                              "s = sum(xt, axes=[1, 2], keepdim=false)\nm = mean(xt, axes=[1, 2], keepdim=true)\noutput s, m\n",
                              FU_SCHED_OUTER, false);
    check_permuted_reductions("fusion bf16_mean_and_sum\ninput x: bf16[8, 512, 1000]\nxt = permute(x, dims=[2, 0, 1])\n"
                              "m = mean(xt, axes=[1, 2], keepdim=true)\ns = sum(xt, axes=[1, 2], keepdim=false)\noutput m, s\n",
                              FU_SCHED_OUTER, false);
    check_permuted_reductions("fusion reordered\ninput x: f32[8, 512, 1024]\nxt = permute(x, dims=[2, 0, 1])\n"
                              "mx = max(xt, axes=[2], keepdim=false)\noutput mx\n",
                              FU_SCHED_REDUCTION, true);
}

int main(int argc, char **argv)
{
    const char *suites = getenv("FUSER_SUITES_DIR");
    if (argc < 2 || !suites) {
        fprintf(stderr, "usage: test_segment TESTS_DIR (with FUSER_SUITES_DIR set)\n");
        return 2;
    }
    char cache[512];
    CHECK(tu_make_temp_dir(cache, sizeof cache, "test_segment"));
    fu_runtime_options ro = {0};
    ro.compile_only = true;
    ro.cache_dir = cache;
    fu_runtime *rt = NULL;
    fu_error err;
    if (fu_runtime_open(&ro, &rt, &err) != FU_OK || !fu_runtime_has_nvrtc(rt)) {
        printf("skipped: no NVRTC (%s)\n", rt ? fu_runtime_describe(rt) : err.message);
        if (rt) fu_runtime_close(rt);
        tu_remove_tree(cache);
        return 77;
    }
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_case(rt, argv[1], &cases[i], true);
    for (size_t i = 0; i < sizeof suite_cases / sizeof suite_cases[0]; i++)
        check_case(rt, suites, &suite_cases[i], nsets(&suite_cases[i]) > 0);
    check_debug_boundary(argv[1]);
    check_one_block(argv[1]);
    check_block_slots(argv[1]);
    check_block_scatter(argv[1]);
    check_kept_values(argv[1]);
    check_gather_extent_one(argv[1]);
    check_grid_sum_of_broadcast(argv[1]);
    check_block_grid_step(argv[1]);
    check_reduce_of_permute();
    check_atomic_bf16_form(suites);
    check_scatter_onto_constant(rt, argv[1]);
    check_many_paths();
    fu_runtime_close(rt);
    tu_remove_tree(cache);
    return check_finish("test_segment");
}
