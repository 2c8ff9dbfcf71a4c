/*
 * test_reduce_codegen.c -- the code generator's numerics rules (docs/format.md,
 * Numerics) without a GPU:
 *   - a / k as fmaf(a, hi, a * lo) (cg_div_const_split) is the correctly rounded
 *     f32 quotient for constants of few significant bits, on 2^22 random
 *     floats each where a, a / k and a * lo are normal, and keeps infinities,
 *     zeros and NaN (a * hi alone where 1/k is a power of two); with bf16
 *     operands, a * RN(1/k) rounded to bf16 is the correctly rounded bf16
 *     quotient for every normal bf16 a (9 constants);
 *   - the soft-capped cross entropy (fuser/tests/data) plans to one kernel in
 *     f32 and bf16; its bf16 kernel uses tanh.approx, its f32 kernel the f32
 *     tanh, neither has a division by 30 left, and both compile with NVRTC;
 *     its capped logits are bounded (fu_value_range, checked on its own ops
 *     and others), so its log-sum-exp has a constant shift: no rescale as the
 *     max grows (LSE_CONST_SHIFT), with the shift and the FMA-pipe lanes in
 *     the parameters and the text agreeing with them; a bound far from zero
 *     (1000 + 8 tanh(x)) takes the online max instead; the FMA-pipe exp's
 *     float operations, done in C, are within 2.5e-7 of 2^t;
 *   - the pointwise math fusion folds x * 1 and x / 1 (its output 'same' is
 *     the input's loaded value, stored unconverted) and compiles; wide_lanes
 *     reads its i64 and f32 lanes of a bf16 output in 16-byte loads (one
 *     base), its gathered values one a lane; 64 rows in 64 blocks take their
 *     row in an `if`, not a grid-strided loop; a layer norm forward a warp a
 *     row in shared memory, with more rows than warps, loads each warp's next
 *     row after pass 1 (f32, 96 bytes a lane), and not in bf16 (registers),
 *     with fewer rows, nor at 1024 columns (128 bytes a lane); softmax
 *     backward's two inputs a warp a row go to shared memory at 128 bytes a
 *     lane (bf16, 1024 columns), not at 32 (256);
 *   - a compare of the row position with a per-row value (VECTOR_MISS): the
 *     cross entropy backward's pass 2 and position_compare's two passes work
 *     in vectors twice, the branch where no lane is at the value with no
 *     compare left; a compare with a full-size value, and the forward, not;
 *   - a kernel's prelude holds the helper files it uses and what they need
 *     (the pointwise kernel no reductions, the soft-capped cross entropy the
 *     shifted-lse file and the min/max file it needs, not the online lse's);
 *   - column_reductions and bias_grad plan to one kernel of the outer-reduction
 *     scheduler with vector loads, whose rows are split over blocks (the last
 *     block combining) exactly where the columns are few (down to 2 rows a
 *     thread while the blocks are fewer than the SMs), and compile; its
 *     parameters (kp->params_json, `fuser plan --json`) hold every decision,
 *     with the values the kernel and the launch are made of;
 *   - layer_norm_backward and rms_norm_backward (dx per row, dweight and dbias
 *     per column) plan to one kernel of the row scheduler with column
 *     reductions (strided rows, a two-level last-block combine) at four sizes
 *     (few rows, odd columns) in f32 and bf16, and compile;
 *   - a bf16 sum read by an f32 op is rounded to bf16 first (bf16_sums and
 *     bf16_column_sum: the row, column and grid layouts, the outer scheduler),
 *     and the outer scheduler's 8 f32 lanes are stored as two 16-byte vectors;
 *   - the row scheduler's parameters (kp->params_json) hold its decisions:
 *     the f32 cross entropy fwd+bwd at V = 128256 splits each row over a
 *     cluster of 4 blocks (parts of 32064), the bf16 layer norm forward at
 *     16384 x 768 puts 8 rows in a block (a warp each), and both agree with
 *     the launch (kp->grid, block, cluster, shared and workspace bytes);
 *   - the bf16 cross entropy fwd+bwd at V = 128256 (a cluster a row) loads a
 *     block's part of its next row during pass 2 at an H200's memory bytes a
 *     clock an SM (the default options, 18.8) and an H100's on 96 SMs (17.6),
 *     not at a whole H100's (12.8) nor where the balance is unknown.
 * FUSER_TEST_DATA is the data directory, FUSER_SUITES_DIR the suites' (set by CTest).
 */
#define _XOPEN_SOURCE 700

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cg.h"
#include "check.h"
#include "exec.h"
#include "fuser_cases.h"
#include "range.h"
#include "runtime.h"
#include "test_util.h"

static uint64_t next_random(uint64_t *z)
{
    uint64_t r = (*z += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ull;
    r = (r ^ (r >> 27)) * 0x94d049bb133111ebull;
    return r ^ (r >> 31);
}

static bool same_float(float a, float b) { return (isnan(a) && isnan(b)) || memcmp(&a, &b, sizeof a) == 0; }

/* What the generated code computes for a / k: a * hi where 1/k is exact (lo = 0). */
static float div_as_emitted(float a, float hi, float lo) { return lo == 0.0f ? a * hi : fmaf(a, hi, a * lo); }

static void check_div_const(void)
{
    const double ks[] = {30.0, 3.0, -3.0, 0.7f, 7.0, 1e-3f, -2.5, 0.1f, 1.0 / 3.0f, 1000.0, 4.0, 0.5};
    float hi, lo;
    CHECK(!cg_div_const_split(0.0, &hi, &lo));
    CHECK(!cg_div_const_split(INFINITY, &hi, &lo));
    CHECK(!cg_div_const_split(NAN, &hi, &lo));
    uint64_t z = 7;
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        float k = (float)ks[i];
        CHECK(cg_div_const_split(k, &hi, &lo));
        CHECK(fabsf(hi) <= fabsf(1.0f / k) && (lo == 0.0f || signbit(lo) == signbit(hi)));
        const float special[] = {INFINITY, -INFINITY, 0.0f, -0.0f, NAN, 1.0f, -1.0f, 3.0e38f, 1e-30f};
        for (size_t s = 0; s < sizeof special / sizeof special[0]; s++) {
            float a = special[s], got = div_as_emitted(a, hi, lo), want = a / k;
            CHECK(same_float(got, want));
            if (!same_float(got, want)) fprintf(stderr, "%.9g / %.9g: %.9g, want %.9g\n", a, k, got, want);
        }
        int bad = 0;
        for (int n = 0; n < (1 << 22); n++) {
            uint32_t bits = (uint32_t)next_random(&z);
            float a;
            memcpy(&a, &bits, sizeof a);
            /* the rule's range: a, a / k and a * lo normal */
            if (!isnormal(a) || !isnormal(a / k) || (lo != 0.0f && !isnormal(a * lo))) continue;
            float got = div_as_emitted(a, hi, lo), want = a / k;
            if (!same_float(got, want) && bad++ < 3) fprintf(stderr, "%.9g / %.9g: %.9g, want %.9g\n", a, k, got, want);
        }
        CHECK(bad == 0);
        printf("a / %-12.9g fmaf(a, %.9g, a * %.9g): %s\n", k, hi, lo, bad ? "FAIL" : "correctly rounded");
    }
}

/* bf16 a / k for bf16 a and k, as emitted: the f32 product a * RN(1/k), rounded
 * to bf16, against the correctly rounded bf16 quotient: every normal bf16 a. */
static void check_div_const_bf16(void)
{
    const double ks[] = {30.0, 3.0, -3.0, 0.69921875, 7.0, 0.0999755859375, 1000.0, 255.0, 1.0 / 3.0};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        double k = fu_round_to_dtype(ks[i], FU_BF16);
        float r = (float)(1.0 / k);
        int bad = 0;
        for (uint32_t bits = 0; bits < 0x10000u; bits++) {
            uint32_t f32 = bits << 16;
            float a;
            memcpy(&a, &f32, sizeof a);
            double want = fu_round_to_dtype((double)a / k, FU_BF16);
            if (!isnormal(a) || !isnormal((float)want)) continue;
            double got = fu_round_to_dtype((double)(a * r), FU_BF16);
            if (got != want && bad++ < 3) fprintf(stderr, "bf16 %.9g / %.9g: %.9g, want %.9g\n", a, k, got, want);
        }
        CHECK(bad == 0);
        printf("bf16 a / %-10.9g a * %.9g: %s\n", k, r, bad ? "FAIL" : "the correctly rounded bf16 quotient");
    }
}

static char *one_kernel(fu_runtime *rt, const char *data, const char *rel, const char *const *sets, int nsets,
                        fu_dtype dt)
{
    tc_list l = {0};
    tc_case *c = tc_add_suite(&l, data, rel, "codegen", sets, nsets, dt, NULL);
    fu_error err = {0};
    fu_plan *p = c ? tc_plan(c, 132, &err) : NULL;
    CHECK(p != NULL && p->nkernels == 1);
    if (!p) fprintf(stderr, "%s: %s\n", rel, err.message);
    char *src = p && p->nkernels == 1 ? strdup(p->kernels[0].source) : NULL;
    if (p) {
        fu_executable *x = NULL;
        fu_status s = fu_exec_prepare(rt, p, &x, &err);
        CHECK(s == FU_OK);
        if (s != FU_OK) fprintf(stderr, "%s %s: %s\n", rel, fu_dtype_name(dt), err.message);
        fu_exec_free(x);
    }
    printf("%-40s %-5s kernels=%d\n", rel, fu_dtype_name(dt), p ? p->nkernels : -1);
    fu_plan_free(p);
    tc_list_free(&l);
    return src;
}

/* fu_value_range: the intervals of tanh, sigmoid and what follows them,
 * unbounded inputs and what a zero-crossing divisor or NaN cast does. */
static void check_value_ranges(void)
{
    fu_fusion *f = fu_fusion_new("ranges");
    const int64_t shape[2] = {4, 8};
    const int axis1[1] = {1};
    fu_tensor x = fu_input(f, "x", FU_BF16, 2, shape);
    fu_tensor k30 = fu_full(f, 0, NULL, 30.0, FU_BF16, "k30"), k5 = fu_full(f, 0, NULL, 5.0, FU_BF16, "k5");
    fu_tensor scaled = fu_binary(f, FU_OP_DIV, x, k30, "scaled");
    fu_tensor sq = fu_unary(f, FU_OP_TANH, scaled, "sq");
    fu_tensor capped = fu_binary(f, FU_OP_MUL, sq, k30, "capped");
    fu_tensor sg = fu_unary(f, FU_OP_SIGMOID, x, "sg");
    fu_tensor rows = fu_reduce(f, FU_OP_SUM, sq, 1, axis1, false, "rows");
    fu_tensor inv = fu_unary(f, FU_OP_RECIPROCAL, sq, "inv");
    fu_tensor pick = fu_where(f, fu_binary(f, FU_OP_GT, x, k5, "gt"), sq, k5, "pick");
    fu_tensor asint = fu_cast(f, fu_binary(f, FU_OP_ADD, sq, k5, "shifted"), FU_I32, "asint");
    fu_tensor e = fu_unary(f, FU_OP_EXP, capped, "e");
    fu_tensor prod = fu_binary(f, FU_OP_MUL, sq, x, "prod");
    fu_output(f, e);
    double lo, hi;
    CHECK(!fu_value_range(f, x, &lo, &hi) && isinf(lo) && isinf(hi));
    CHECK(!fu_value_range(f, scaled, &lo, &hi));
    CHECK(fu_value_range(f, sq, &lo, &hi) && lo <= -1 && lo > -1.02 && hi >= 1 && hi < 1.02);
    CHECK(fu_value_range(f, capped, &lo, &hi) && lo <= -30 && lo > -31 && hi >= 30 && hi < 31);
    CHECK(fu_value_range(f, sg, &lo, &hi) && lo <= 0 && hi >= 1 && hi < 1.02);
    CHECK(fu_value_range(f, rows, &lo, &hi) && lo <= -8 && lo > -8.2 && hi >= 8 && hi < 8.2); /* 8 terms */
    CHECK(!fu_value_range(f, inv, &lo, &hi));                                       /* 1 / [-1, 1] */
    CHECK(fu_value_range(f, pick, &lo, &hi) && lo <= -1 && hi >= 5 && hi < 5.1);
    CHECK(fu_value_range(f, asint, &lo, &hi) && lo == 0 && hi == 6);               /* NaN -> 0 */
    CHECK(fu_value_range(f, e, &lo, &hi) && lo > 0 && lo <= exp(-30) && hi >= exp(30) && hi < exp(31));
    CHECK(!fu_value_range(f, prod, &lo, &hi));
    CHECK(!fu_value_range(f, -1, &lo, &hi) && !fu_value_range(f, 1000, &lo, &hi));
    printf("value ranges: tanh, sigmoid, sums, where, casts checked\n");
    fu_fusion_free(f);
}

/* fu_exp_shifted_poly (prelude 21_exp_shifted.cuh), the same float operations
 * in C (fmaf and float adds round as the GPU's FFMA and FADD do), against
 * 2^t in double over the arguments it is given, t in [-116, 0]: within
 * 2.5e-7 relative (docs/format.md says 2.1e-7). The kernel text must hold
 * the same constants, so the two cannot drift apart. */
static float exp2_poly_as_emitted(float t)
{
    const float y = t + 12582912.0f;
    const float f = t - (y - 12582912.0f);
    float p = fmaf(0.00132764527f, f, 0.00967554189f);
    p = fmaf(p, f, 0.0555071346f);
    p = fmaf(p, f, 0.240221202f);
    p = fmaf(p, f, 0.693146944f);
    p = fmaf(p, f, 1.00000012f);
    uint32_t pb, yb;
    memcpy(&pb, &p, sizeof pb);
    memcpy(&yb, &y, sizeof yb);
    pb += yb << 23;
    memcpy(&p, &pb, sizeof p);
    return p;
}

static void check_exp_poly(const char *kernel)
{
    double worst = 0;
    for (int k = 0; k <= 1160000; k++) {
        float t = -(float)k * 1e-4f;
        double rel = fabs((double)exp2_poly_as_emitted(t) / exp2((double)t) - 1.0);
        if (rel > worst) worst = rel;
    }
    CHECK(worst < 2.5e-7);
    printf("fu_exp_shifted_poly: max relative error %.3g over t in [-116, 0]\n", worst);
    const char *constants[] = {"12582912.0f", "0.00132764527f", "0.00967554189f", "0.0555071346f",
                               "0.240221202f", "0.693146944f", "1.00000012f", "<< 23"};
    for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++) CHECK_CONTAINS(kernel, constants[i]);
}

/* f planned for 132 SMs, checked to be one kernel (NULL where it does not plan). */
static fu_plan *plan_one_kernel(const fu_fusion *f)
{
    fu_plan_options o;
    fu_plan_options_default(&o);
    o.sm_count = 132;
    fu_plan *p = NULL;
    fu_error err = {0};
    CHECK(fu_plan_build(f, &o, &p, &err) == FU_OK && p->nkernels == 1);
    return p;
}

/* The row log-sum-exp of a bounded source takes the constant shift only where
 * the bound is near zero: 8 tanh(x) does, 1000 + 8 tanh(x) does not (the
 * FFMA's argument would lose the digits of every term). */
static void check_shift_limits(void)
{
    for (int far = 0; far < 2; far++) {
        fu_fusion *f = fu_fusion_new("shift_limits");
        const int64_t shape[2] = {64, 1000};
        fu_tensor x = fu_input(f, "x", FU_F32, 2, shape);
        fu_tensor capped = fu_binary(f, FU_OP_MUL, fu_unary(f, FU_OP_TANH, x, "sq"), fu_full(f, 0, NULL, 8.0, FU_F32, "k8"),
                                     "capped");
        if (far) capped = fu_binary(f, FU_OP_ADD, capped, fu_full(f, 0, NULL, 1000.0, FU_F32, "k1000"), "far");
        fu_output(f, fu_log_softmax(f, capped, 1, "logp"));
        fu_plan *p = plan_one_kernel(f);
        const char *js = p && p->nkernels == 1 ? p->kernels[0].params_json : NULL;
        CHECK(js && (strstr(js, "\"lse_shift\"") != NULL) == !far);
        CHECK(p && p->nkernels == 1 && (strstr(p->kernels[0].source, "fu_exp_shifted(") != NULL) == !far);
        fu_plan_free(p);
        fu_fusion_free(f);
    }
    printf("lse shift: taken for 8 tanh(x), not for 1000 + 8 tanh(x)\n");
}

/* The kernel after the prelude's definitions. */
static const char *body_of(const char *src)
{
    const char *b = src ? strstr(src, "end of prelude") : NULL;
    return b ? b : "";
}

/* A bounded log-sum-exp whose max nothing else reads takes no max at all
 * (LSE_SHIFT_ONLY): lse = log(sum of exp(x - s)) + s. Where the max or the sum
 * is also an output, the max is reduced and the sum rescaled as before. */
static void check_shift_only(void)
{
    const char *outputs[] = {"lse", "lse and max", "lse and sum"};
    for (int which = 0; which < 3; which++) {
        fu_fusion *f = fu_fusion_new("shift_only");
        const int64_t shape[2] = {64, 1000};
        const int axis = 1;
        fu_tensor x = fu_input(f, "x", FU_F32, 2, shape);
        fu_tensor capped = fu_binary(f, FU_OP_MUL, fu_unary(f, FU_OP_TANH, x, "sq"), fu_full(f, 0, NULL, 8.0, FU_F32, "k8"),
                                     "capped");
        fu_tensor m = fu_reduce(f, FU_OP_RMAX, capped, 1, &axis, true, "m");
        fu_tensor e = fu_unary(f, FU_OP_EXP, fu_binary(f, FU_OP_SUB, capped, m, "shift"), "e");
        fu_tensor s = fu_reduce(f, FU_OP_SUM, e, 1, &axis, true, "s");
        fu_output(f, fu_binary(f, FU_OP_ADD, fu_unary(f, FU_OP_LOG, s, "ls"), m, "lse"));
        if (which == 1) fu_output(f, m);
        if (which == 2) fu_output(f, s);
        fu_plan *p = plan_one_kernel(f);
        const char *js = p && p->nkernels == 1 ? p->kernels[0].params_json : NULL;
        const char *src = body_of(p && p->nkernels == 1 ? p->kernels[0].source : NULL);
        CHECK(js && strstr(js, "\"lse_shift\"") != NULL);
        CHECK(js && (strstr(js, "\"max_reduced\": false") != NULL) == (which == 0));
        CHECK((strstr(src, "fu_lse_shifted_block(") != NULL) == (which != 0));
        CHECK((strstr(src, "the row's max is read by nothing else") != NULL) == (which == 0));
        printf("lse of 8 tanh(x), outputs %s: max %s\n", outputs[which],
               js && strstr(js, "\"max_reduced\": false") ? "not reduced" : "reduced");
        fu_plan_free(p);
        fu_fusion_free(f);
    }
}

/* A bf16 product of two bf16 tensors is one bf16 multiply (fu_mul_bf16); a
 * product with an f32 operand, or an f32 product, is not. */
static void check_bf16_mul(void)
{
    for (int mixed = 0; mixed < 2; mixed++) {
        fu_fusion *f = fu_fusion_new("bf16_mul");
        const int64_t shape[2] = {64, 1000};
        fu_tensor a = fu_input(f, "a", FU_BF16, 2, shape);
        fu_tensor b = fu_input(f, "b", mixed ? FU_F32 : FU_BF16, 2, shape);
        fu_tensor y = mixed ? fu_cast(f, fu_binary(f, FU_OP_MUL, fu_cast(f, a, FU_F32, "af"), b, "yf"), FU_BF16, "y")
                            : fu_binary(f, FU_OP_MUL, a, b, "y");
        fu_output(f, fu_binary(f, FU_OP_MUL, y, fu_full(f, 0, NULL, 30.0, FU_BF16, "k30"), "z"));
        fu_plan *p = plan_one_kernel(f);
        const char *body = body_of(p && p->nkernels == 1 ? p->kernels[0].source : NULL);
        int n = 0;
        for (const char *q = body; (q = strstr(q, "fu_mul_bf16(")) != NULL; q++) n++;
        /* a * b and y * 30 (bf16 x bf16), or y * 30 alone (a * b is f32) */
        CHECK(n > 0 && (strstr(body, "fu_mul_bf16(fu_mul_bf16(") != NULL || strstr(body, "fu_mul_bf16(v") != NULL));
        CHECK((strstr(body, "fu_round_bf16(") != NULL) == (mixed == 1)); /* the cast of the f32 product */
        printf("bf16 mul (%s): %d bf16 multiplies in the kernel\n", mixed ? "an f32 operand" : "bf16 operands", n);
        fu_plan_free(p);
        fu_fusion_free(f);
    }
}

static size_t count_in(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *q = strstr(s, needle); q; q = strstr(q + 1, needle)) n++;
    return n;
}

/* A block of one warp reduces within the warp (docs/perf.md v26): 200 rows of f32, their
 * sum and max (one pass: a pair), a softmax (an online log-sum-exp) and the sum of everything
 * (a grid reduction after the rows). At 128 columns a row is 32 vectors, one warp's; at 2048 it
 * takes 128 threads (few rows: 4 vectors a thread, FEW_ROWS_ITERS) and the block's exchange. */
static void check_one_warp_blocks(void)
{
    for (int wide = 0; wide < 2; wide++) {
        fu_fusion *f = fu_fusion_new("one_warp");
        const int64_t shape[2] = {200, wide ? 2048 : 128}; /* (more than one block's loop: k_block.c) */
        const int row[1] = {1}, all[2] = {0, 1};
        fu_tensor x = fu_input(f, "x", FU_F32, 2, shape);
        fu_tensor s = fu_reduce(f, FU_OP_SUM, x, 1, row, true, "s");
        fu_tensor m = fu_reduce(f, FU_OP_RMAX, x, 1, row, true, "m");
        fu_tensor d = fu_binary(f, FU_OP_DIV, fu_binary(f, FU_OP_SUB, x, m, "c"), s, "d");
        fu_tensor y = fu_softmax(f, d, 1, "y");
        fu_output(f, y);
        fu_output(f, fu_reduce(f, FU_OP_SUM, y, 2, all, false, "t"));
        fu_plan *p = plan_one_kernel(f);
        const char *src = p && p->nkernels == 1 ? p->kernels[0].source : NULL;
        const char *body = body_of(src);
        CHECK(p && p->nkernels == 1 && p->kernels[0].block == (wide ? 128u : 32u));
        if (!wide) {
            CHECK_CONTAINS(body, "= fu_warp_reduce(r0, fu_op_sum());");  /* the pair, one after the other */
            CHECK_CONTAINS(body, "= fu_warp_reduce(r1, fu_op_max());");
            CHECK_CONTAINS(body, "fu_lse_warp(");
            /* (the only barriers left: the grid reduction's election of the last block) */
            CHECK(!strstr(body, "fu_block_reduce") && !strstr(body, "fu_lse_block("));
            CHECK(count_in(body, "__syncthreads()") == 2);
        } else {
            CHECK_CONTAINS(body, "fu_block_reduce2(");
            CHECK_CONTAINS(body, "fu_lse_block(");
            CHECK(!strstr(body, "fu_lse_warp("));
        }
        fu_plan_free(p);
        fu_fusion_free(f);
    }
    printf("one-warp blocks: reductions within the warp at 32 threads, through shared memory at 128\n");
}

/* The outer scheduler's parameters for column_reductions: every field it
 * decides, with the values its launch and its kernel text carry. */
static void check_outer_params(const char *data)
{
    const char *many[] = {"N=64", "C=65536"}, *few_rows[] = {"N=1024", "C=16"};
    const struct {
        const char *const *sets;
        int nsets;
        fu_dtype dt;
        const char *fields[17];
        const char *in_source[3];
    } want[] = {
        {NULL, 0, FU_F32, /* the file's sizes: 8192 x 1024, rows split 64 ways */
         {"\"domain\": [8192, 1024]", "\"reduced_axes\": [0]", "\"rows\": 8192", "\"columns\": 1024",
          "\"reductions\": 2", "\"threads\": 256", "\"min_blocks_per_sm\": 1", "\"vec\": 4", "\"threads_x\": 32",
          "\"threads_y\": 8", "\"shared_partials\": 1024", "\"column_blocks\": 8", "\"row_splits\": 64",
          "\"rows_per_split\": 128", "\"grid\": 512", "\"workspace_bytes\": 1048672", NULL},
         {"fu_part[1024]", "blockIdx.x % 8u", "== 63u"}},
        {few_rows, 2, FU_F32, /* few columns and rows: split down to 2 rows a thread while the blocks are
                                 fewer than the SMs (OUTER_MIN_ROWS_SPREAD), 8 ways here */
         {"\"domain\": [1024, 16]", "\"threads_x\": 4", "\"threads_y\": 64", "\"column_blocks\": 1",
          "\"row_splits\": 8", "\"rows_per_split\": 128", "\"unrolled_rows\": 2", "\"grid\": 8", NULL},
         {"fu_part[1024]", "trip < 2;", "== 7u"}},
        {many, 2, FU_BF16, /* many columns: no row splits, no workspace */
         {"\"domain\": [64, 65536]", "\"vec\": 8", "\"threads_x\": 32", "\"threads_y\": 8",
          "\"shared_partials\": 2048", "\"column_blocks\": 256", "\"row_splits\": 1", "\"rows_per_split\": 64",
          "\"grid\": 256", "\"workspace_bytes\": 0", NULL},
         {"fu_part[2048]", "blockIdx.x % 256u", "row += 8)"}},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        tc_list l = {0};
        tc_case *c = tc_add_suite(&l, data, "column_reductions.fusion", "params", want[i].sets, want[i].nsets, want[i].dt, NULL);
        fu_error err = {0};
        fu_plan *p = c ? tc_plan(c, 132, &err) : NULL;
        CHECK(p && p->nkernels == 1);
        const fu_kernel_plan *kp = p && p->nkernels == 1 ? &p->kernels[0] : NULL;
        CHECK(kp && kp->sched == FU_SCHED_OUTER && kp->params_json && kp->params_json[0] == '{');
        if (kp && kp->params_json) {
            for (int k = 0; want[i].fields[k]; k++) CHECK_CONTAINS(kp->params_json, want[i].fields[k]);
            char grid[32], ws[48];
            snprintf(grid, sizeof grid, "\"grid\": %u", kp->grid);
            snprintf(ws, sizeof ws, "\"workspace_bytes\": %zu", kp->workspace_bytes);
            CHECK_CONTAINS(kp->params_json, grid); /* the launch is the struct's */
            CHECK_CONTAINS(kp->params_json, ws);
            for (int k = 0; k < 3; k++) CHECK_CONTAINS(body_of(kp->source), want[i].in_source[k]);
            printf("outer params %s: %s\n", fu_dtype_name(want[i].dt), kp->params_json);
        }
        fu_plan_free(p);
        tc_list_free(&l);
    }
}

/* Default plan options with the two that are switched in these tests set. */
static fu_plan_options plan_opts(bool outer_norm, bool transpose)
{
    fu_plan_options o;
    fu_plan_options_default(&o);
    o.outer_norm = outer_norm;
    o.transpose = transpose;
    return o;
}

/* The one-kernel plan of data/rel with options o, checked to be of scheduler want; NULL
 * (checks failed) otherwise. */
static fu_plan *plan_file_as(const char *data, const char *rel, const char *const *sets, int nsets, fu_dtype dt,
                             fu_plan_options o, fu_sched want)
{
    tc_list l = {0};
    tc_case *c = tc_add_suite(&l, data, rel, "one", sets, nsets, dt, NULL);
    fu_plan *p = NULL;
    fu_error err = {0};
    bool ok = c && fu_plan_build(c->f, &o, &p, &err) == FU_OK && p->nkernels == 1 && p->kernels[0].sched == want;
    CHECK(ok);
    if (!ok) {
        fprintf(stderr, "%s (%s): not one kernel of the %s scheduler: %s\n", rel, fu_dtype_name(dt), fu_sched_name(want),
                p ? (p->nkernels ? fu_sched_name(p->kernels[0].sched) : "no kernel") : err.message);
        fu_plan_free(p);
        p = NULL;
    }
    tc_list_free(&l);
    return p;
}

/* Normalizations over a non-innermost axis (outer_norm.fusion): with fu_plan_options.outer_norm
 * one kernel of the outer scheduler, whose tile, block and cache are as its rules say and whose
 * text NVRTC compiles; without it, the plan is the row scheduler's, as before the option. */
static void check_outer_norm(fu_runtime *rt, const char *data)
{
    static const struct {
        const char *sets[3];
        fu_dtype dt;
        const char *fields[8];
    } want[] = {
        /* 64-byte rows of the tile (4 f32 lanes x 4 threads), x kept: 301 rows x 64 bytes */
        {{"B=4", "R=301", "C=1100"}, FU_F32,
         {"\"vec\": 4", "\"threads_x\": 4", "\"threads_y\": 128", "\"column_blocks\": 275", "\"cached_inputs\": 1",
          "\"shared_bytes\": 19264", NULL}},
        /* an odd C: scalar lanes, 16 threads a 64-byte row */
        {{"B=3", "R=257", "C=1001"}, FU_F32,
         {"\"vec\": 1", "\"threads_x\": 16", "\"threads_y\": 32", "\"column_blocks\": 188", "\"shared_bytes\": 16448",
          NULL}},
        /* 8200 rows: the tile narrowed to 32 bytes, still too large to keep (262400 bytes) */
        {{"B=2", "R=8200", "C=1056"}, FU_F32,
         {"\"threads_x\": 2", "\"threads_y\": 256", "\"column_blocks\": 264", "\"cached_inputs\": 0",
          "\"shared_bytes\": 0", NULL}},
        {{"B=4", "R=301", "C=1100"}, FU_BF16, /* 4 bf16 lanes (1100 is no multiple of 8), 8 threads a row */
         {"\"vec\": 4", "\"threads_x\": 8", "\"column_blocks\": 138", "\"shared_bytes\": 19264", NULL}},
        {{"B=3", "R=257", "C=1001"}, FU_BF16, /* 64 bytes would leave 94 blocks: 32 */
         {"\"vec\": 1", "\"threads_x\": 16", "\"column_blocks\": 188", "\"shared_bytes\": 8224", NULL}},
        {{"B=2", "R=8200", "C=1056"}, FU_BF16,
         {"\"vec\": 8", "\"threads_x\": 2", "\"column_blocks\": 132", "\"cached_inputs\": 0", NULL}},
        /* 8 rows: the idle rows of threads go to the columns while the blocks stay >= the SMs
         * (8 threads a 128-byte row), then the block shrinks to the rows: 8 x 8 */
        {{"B=2", "R=8", "C=4096"}, FU_F32,
         {"\"threads\": 64", "\"threads_x\": 8", "\"threads_y\": 8", "\"column_blocks\": 256", NULL}},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        tc_list l = {0};
        tc_case *c = tc_add_suite(&l, data, "outer_norm.fusion", "norm", want[i].sets, 3, want[i].dt, NULL);
        CHECK(c != NULL);
        if (!c) continue;
        for (int on = 0; on < 2; on++) {
            fu_plan_options o;
            fu_plan_options_default(&o);
            o.outer_norm = on;
            fu_plan *p = NULL;
            fu_error err = {0};
            CHECK(fu_plan_build(c->f, &o, &p, &err) == FU_OK && p->nkernels == 1);
            const fu_kernel_plan *kp = p && p->nkernels == 1 ? &p->kernels[0] : NULL;
            if (!kp) {
                fprintf(stderr, "outer_norm %s: %s\n", c->name, p ? "not one kernel" : err.message);
                fu_plan_free(p);
                continue;
            }
            if (!on) { /* the default: the row scheduler's strided rows */
                CHECK(kp->sched == FU_SCHED_REDUCTION);
                fu_plan_free(p);
                continue;
            }
            CHECK(kp->sched == FU_SCHED_OUTER && kp->params_json);
            CHECK_CONTAINS(kp->params_json, "\"normalization\": true, \"levels\": 2, \"full_outputs\": true");
            for (int k = 0; want[i].fields[k]; k++) CHECK_CONTAINS(kp->params_json, want[i].fields[k]);
            char shared[48];
            snprintf(shared, sizeof shared, "\"shared_bytes\": %zu", kp->shared_bytes);
            CHECK_CONTAINS(kp->params_json, shared); /* the launch's is the struct's */
            const char *body = body_of(kp->source);
            CHECK_CONTAINS(body, "__shfl_xor_sync(0xffffffffu, r0_0, 16)"); /* the warp's rows of threads */
            CHECK_CONTAINS(body, "for (int grp = 1; grp < "); /* then the warps' groups, in order */
            CHECK((strstr(body, "fu_slot") != NULL) == (kp->shared_bytes > 0));
            fu_executable *x = NULL;
            fu_status st = fu_exec_prepare(rt, p, &x, &err);
            CHECK(st == FU_OK);
            if (st != FU_OK) fprintf(stderr, "outer_norm %s: %s\n", c->name, err.message);
            fu_exec_free(x);
            printf("outer_norm %-5s %s: %s\n", fu_dtype_name(want[i].dt), c->name, kp->config);
            fu_plan_free(p);
        }
        tc_list_free(&l);
    }
    /* an i64, an i32 and an f32 reduction in one level: each partial in a region of its own */
    fu_plan *mixed = plan_file_as(data, "outer_norm_mixed.fusion", NULL, 0, FU_F32, plan_opts(true, true), FU_SCHED_OUTER);
    if (mixed) {
        const char *body = body_of(mixed->kernels[0].source);
        CHECK_CONTAINS(body, "((long long *)(fu_part + 0))[");
        CHECK_CONTAINS(body, "((long long *)(fu_part + 128))[");
        CHECK_CONTAINS(body, "((float *)(fu_part + 256))[");
        fu_executable *x = NULL;
        fu_error err = {0};
        CHECK(fu_exec_prepare(rt, mixed, &x, &err) == FU_OK);
        fu_exec_free(x);
    }
    fu_plan_free(mixed);
    /* too few columns for a block on half the SMs even at 32 bytes a row (33 blocks of 16
     * bf16 columns): the row scheduler's */
    const char *few[] = {"B=1", "R=301", "C=520"};
    fu_plan_free(plan_file_as(data, "outer_norm.fusion", few, 3, FU_BF16, plan_opts(true, true), FU_SCHED_REDUCTION));
}

/* NVRTC compiles every kernel of plan p (the runtime's compile-only preparation). */
static void check_compiles(fu_runtime *rt, const fu_plan *p, const char *what)
{
    fu_executable *x = NULL;
    fu_error err = {0};
    fu_status st = fu_exec_prepare(rt, p, &x, &err);
    CHECK(st == FU_OK);
    if (st != FU_OK) fprintf(stderr, "%s: %s\n", what, err.message);
    fu_exec_free(x);
}

/* Pointwise groups that read an input across the output's innermost axis (k_transpose.c, with
 * fu_plan_options.transpose): the tile's axes, what is staged, the padded rows, the partial
 * tiles' guards, and NVRTC compiles each; short tile axes and the option off leave the group to
 * the pointwise scheduler. */
static void check_transpose(fu_runtime *rt, const char *data)
{
    static const struct {
        const char *rel;
        const char *sets[3];
        fu_dtype dt;
        const char *fields[8]; /* NULL-terminated */
    } want[] = {
        /* [4, 1024, 2048] = [4, 2048, 1024] permuted and added: x staged along axis 1, 32 x 32 */
        {"transpose.fusion", {"B=4", "M=1024", "N=2048"}, FU_F32,
         {"\"axes\": [1, 2]", "\"lanes\": 1", "\"staged\": [\"x\"]", "\"shared_bytes\": 4224", "\"blocks\": [4, 32, 64]",
          "fu_tile0[fu_ty + fu_r][1 * fu_tx + 0] = in0[2097152 * (d0) + (fu_j) + 1024 * (fu_l0 + fu_ty + fu_r)];"}},
        /* bf16: 64 x 64, a 4-byte load of 2 lanes a thread, 2 outputs 32 apart */
        {"transpose.fusion", {"B=4", "M=1024", "N=2048"}, FU_BF16,
         {"\"tile\": [64, 64], \"lanes\": 2", "\"vector_loads\": [true]", "__shared__ fu_bf16 fu_tile0[64][66];",
          "*(unsigned int *)fu_v = __ldg((const unsigned int *)(in0 + 2097152 * (d0) + (fu_j) + 1024 * (fu_l0 + fu_ty + fu_r)));",
          "fu_load(fu_tile0[fu_tx + 32 * fu_k][fu_ty + fu_r])"}},
        /* partial tiles on both axes (77 = 64 + 13, 1000 = 15 x 64 + 40); an odd row: lanes
         * loaded one by one, the second guarded */
        {"transpose.fusion", {"B=64", "M=77", "N=1000"}, FU_BF16,
         {"\"blocks\": [64, 2, 16]", "\"vector_loads\": [false]", "if (fu_j < 77 && fu_l0 + fu_ty + fu_r < 1000) {",
          "if (fu_j + 1 < 77)", "if (d1 < 77 && d2 < 1000) {"}},
        /* the same in a batch of 1: 64 x 64 tiles would be 32 blocks, under a wave: 32 x 32 */
        {"transpose.fusion", {"B=1", "M=77", "N=1000"}, FU_BF16,
         {"\"tile\": [32, 32], \"lanes\": 1", "\"blocks\": [1, 3, 32]", "__shared__ fu_bf16 fu_tile0[32][34];"}},
        /* a read both ways (a), a bool (rows of 68 bytes) and an f32 input beside bf16; 33 x 33
         * tiles of 64 x 64, a wave of blocks */
        {"transpose_both.fusion", {"N=2080"}, FU_BF16,
         {"\"staged\": [\"m\", \"a\", \"b\"]", "__shared__ unsigned char fu_tile0[64][68];",
          "__shared__ float fu_tile2[64][65];", "fu_load(in0[(2080 * d0 + d1)])",
          "*(uint2 *)fu_v = __ldg((const uint2 *)(in2 + (fu_j) + 2080 * (fu_l0 + fu_ty + fu_r)));"}},
    };
    fu_plan_options every_size = plan_opts(false, true); /* (the small cases' tiles too) */
    every_size.transpose_min_bytes = 0;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int nsets = 0;
        while (nsets < 3 && want[i].sets[nsets]) nsets++;
        fu_plan *p = plan_file_as(data, want[i].rel, want[i].sets, nsets, want[i].dt, every_size, FU_SCHED_TRANSPOSE);
        if (!p) continue;
        const fu_kernel_plan *kp = &p->kernels[0];
        CHECK(kp->params_json != NULL && kp->block == 256);
        for (int k = 0; want[i].fields[k]; k++)
            CHECK_CONTAINS(strncmp(want[i].fields[k], "\"", 1) ? kp->source : kp->params_json, want[i].fields[k]);
        CHECK_CONTAINS(kp->source, "__syncthreads();");
        check_compiles(rt, p, want[i].rel);
        printf("transpose %-5s %s: %s\n", fu_dtype_name(want[i].dt), want[i].rel, kp->config);
        fu_plan_free(p);
    }
    /* the option off, and a tile axis of 8 elements: the pointwise scheduler's */
    const char *short_axis[] = {"B=4", "M=8", "N=2048"};
    fu_plan_free(plan_file_as(data, "transpose.fusion", NULL, 0, FU_F32, plan_opts(false, false), FU_SCHED_POINTWISE));
    fu_plan_free(plan_file_as(data, "transpose.fusion", short_axis, 3, FU_F32, every_size, FU_SCHED_POINTWISE));
    /* by default only transposed reads of more than an eighth of the L2 are staged (7.5 MiB of an
     * H200's 60): x of bf16 [256, 64, 128] (4 MiB) is read strided, of f32 (8 MiB) staged */
    CHECK(plan_opts(false, true).transpose_min_bytes == fu_transpose_min_bytes(60 << 20) &&
          fu_transpose_min_bytes(60 << 20) == 7864320 && fu_transpose_min_bytes(0) == 0);
    const char *small[] = {"B=256", "M=128", "N=64"};
    fu_plan_free(plan_file_as(data, "transpose.fusion", small, 3, FU_BF16, plan_opts(false, true), FU_SCHED_POINTWISE));
    fu_plan_free(plan_file_as(data, "transpose.fusion", small, 3, FU_F32, plan_opts(false, true), FU_SCHED_TRANSPOSE));
    fu_plan_free(plan_file_as(data, "transpose.fusion", NULL, 0, FU_BF16, plan_opts(false, true), FU_SCHED_TRANSPOSE));
}

/* A layer norm over a view of its input (x [B, T, D] as [B * T, D]): the input is staged and
 * kept between the passes as the suite's layer norm keeps its [N, D] input, so the kernel below
 * its signature is the suite's, character for character, in both dtypes. */
static void check_row_view_input(fu_runtime *rt, const char *data, const char *suites)
{
    const char *view[] = {"B=4", "T=4096", "D=4096"}, *direct[] = {"N=16384", "D=4096"};
    const fu_dtype dts[] = {FU_F32, FU_BF16};
    for (int d = 0; d < 2; d++) {
        char *a = one_kernel(rt, data, "layer_norm_view.fusion", view, 3, dts[d]);
        char *b = one_kernel(rt, suites, "layer_norm/layer_norm_fwd.fusion", direct, 2, dts[d]);
        const char *ab = a ? strstr(a, "\n{\n") : NULL, *bb = b ? strstr(b, "\n{\n") : NULL;
        CHECK(ab && bb && !strcmp(ab, bb));
        if (ab) CHECK_CONTAINS(ab, "kept in registers between passes");
        free(a);
        free(b);
    }
}

/* A masked mean over T: the bool mask [B, T, 1] is reduced over T beside the states [B, T, D], a
 * reduction broadcast along D in the same outer kernel, read once a row (at the column's batch,
 * not a lane each); with and without row splits; compiled. */
static void check_broadcast_outer(fu_runtime *rt, const char *data)
{
    static const struct {
        const char *sets[3];
        fu_dtype dt;
        const char *fields[3];
    } want[] = {
        {{"B=32", "T=2048", "D=1024"}, FU_BF16, {"const bool v2 = fu_load(in1[(2048 * o0 + k1)]);", "row_splits=4", NULL}},
        {{"B=3", "T=13", "D=100"}, FU_F32, {"const bool v2 = fu_load(in1[(13 * o0 + k1)]);", "row_splits=1", NULL}},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        fu_plan *p = plan_file_as(data, "masked_mean_pool.fusion", want[i].sets, 3, want[i].dt, plan_opts(false, true),
                                  FU_SCHED_OUTER);
        if (!p) continue;
        for (int k = 0; want[i].fields[k]; k++)
            CHECK_CONTAINS(strncmp(want[i].fields[k], "row_", 4) ? p->kernels[0].source : p->kernels[0].config,
                           want[i].fields[k]);
        check_compiles(rt, p, "masked_mean_pool");
        fu_plan_free(p);
    }
    /* with the outer normalizations on, the same (plain column reductions beside it) */
    const char *sets[] = {"B=32", "T=2048", "D=1024"};
    fu_plan_free(plan_file_as(data, "masked_mean_pool.fusion", sets, 3, FU_BF16, plan_opts(true, true), FU_SCHED_OUTER));
}

/* An output that permutes the row kernel's full-size values with the innermost axis in place (a
 * QK norm's heads moved before the tokens): one reduction kernel that stores each row's vectors
 * at the permuted offset, compiled; a permute that moves the innermost axis stays a kernel of
 * its own. */
static void check_permuted_outputs(fu_runtime *rt, const char *data)
{
    static const struct {
        const char *sets[4];
        fu_dtype dt;
        const char *store;
    } want[] = {
        /* [8, 2048, 32, 128] -> [8, 32, 2048, 128]: o1 (the token) strides 128, o2 (the head) 262144 */
        {{"B=8", "T=2048", "H=32", "D=128"}, FU_BF16, "*(uint4 *)(out0 + (8388608 * o0 + 128 * o1 + 262144 * o2 + k3))"},
        {{"B=8", "T=2048", "H=32", "D=128"}, FU_F32, "*(uint4 *)(out0 + (8388608 * o0 + 128 * o1 + 262144 * o2 + k3))"},
        /* rows of 100: 4-lane vectors; a batch of 1 */
        {{"B=1", "T=77", "H=5", "D=100"}, FU_BF16, "*(uint2 *)(out0 + (100 * o1 + 7700 * o2 + k3))"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        fu_plan *p = plan_file_as(data, "qk_norm.fusion", want[i].sets, 4, want[i].dt, plan_opts(false, true),
                                  FU_SCHED_REDUCTION);
        if (!p) continue;
        CHECK_CONTAINS(p->kernels[0].source, want[i].store);
        check_compiles(rt, p, "qk_norm");
        fu_plan_free(p);
    }
    const char *moved = "fusion moved\ninput x: f32[256, 64, 128]\nm = max(x, axes=[2], keepdim=true)\n"
                        "d = sub(x, m)\ny = permute(d, dims=[0, 2, 1])\noutput y\n";
    fu_error err = {0};
    fu_fusion *f = tc_fusion_from_text(moved, &err);
    fu_plan_options o = plan_opts(false, true);
    fu_plan *p = NULL;
    CHECK(f && fu_plan_build(f, &o, &p, &err) == FU_OK && p->nkernels == 2);
    fu_plan_free(p);
    fu_fusion_free(f);
}

/* The row scheduler's parameters: the decisions named, and the launch's numbers the struct's. */
static void check_row_params(const char *data, const char *suites)
{
    const char *ce[] = {"V=128256"}, *ln[] = {"N=16384", "D=768"}, *sr[] = {"C=5"};
    const char *sr_many[] = {"N=1048576", "C=5"}, *odd[] = {"N=4093", "V=50257"}, *odd_short[] = {"N=4093", "V=127"};
    const struct {
        const char *dir;
        const char *rel;
        const char *const *sets;
        int nsets;
        fu_dtype dt;
        unsigned cluster, block;
        const char *fields[6];
    } want[] = {
        {suites, "cross_entropy/cross_entropy_fwdbwd.fusion", ce, 1, FU_F32, 4, 1024,
         {"\"cluster\": 4,", "\"part\": 32064,", "\"rows\": 8192,", "\"inner\": 128256,",
          "{\"name\": \"logits\", \"where\": \"shared\"", NULL}},
        {suites, "layer_norm/layer_norm_fwd.fusion", ln, 2, FU_BF16, 1, 256,
         {"\"warp_rows\": 8,", "\"threads\": 32,", "\"cluster\": 1,", "\"queue\": false,", "\"mufu_rows\": false,", NULL}},
        /* the capped logits lie in [-30.4, 30.4]: a constant shift (LSE_CONST_SHIFT); each
         * element takes a tanh before the exp */
        {data, "softcap_cross_entropy.fusion", NULL, 0, FU_BF16, 1, 128,
         {"\"lse_shift\": 30.36", "\"online_max\": \"loss.max1\"", "\"vec\": 8,", "\"mufu_rows\": true,",
          "\"threads\": 128,", NULL}}, /* 32 vectors a thread (MUFU_ROW_ITERS) */
        /* 4099 rows of 5: 8 lanes a row, 8 rows a warp, 2 warps a block (SHORT_ROW_LANES) */
        {data, "short_rows.fusion", sr, 1, FU_F32, 1, 64,
         {"\"warp_rows\": 8,", "\"threads\": 8,", "\"iters\": 1,", "\"grid_reductions\": 1,", NULL}},
        /* rows of an odd length: 16-byte vectors from each row's first aligned element
         * (ALIGNED_ROWS), not vectors of one element; under 32 vectors a row they stay 1 wide */
        {suites, "cross_entropy/cross_entropy_fwd.fusion", odd, 2, FU_BF16, 1, 512,
         {"\"vec\": 8, \"aligned_rows\": true,", "\"iters\": 13,", NULL}},
        {suites, "cross_entropy/cross_entropy_fwd.fusion", odd_short, 2, FU_F32, 1, 64,
         {"\"vec\": 1, \"aligned_rows\": false,", NULL}},
        /* 1048576 rows of 5 overfill the GPU at a lane an element: 2 lanes of 3 (SHORT_ROW_ITERS) */
        {data, "short_rows.fusion", sr_many, 2, FU_F32, 1, 256,
         {"\"warp_rows\": 128,", "\"threads\": 2,", "\"iters\": 3,", "\"grid_reductions\": 1,", NULL}},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        tc_list l = {0};
        tc_case *c = tc_add_suite(&l, want[i].dir, want[i].rel, "params", want[i].sets, want[i].nsets, want[i].dt, NULL);
        fu_error err = {0};
        fu_plan *p = c ? tc_plan(c, 132, &err) : NULL;
        CHECK(p != NULL);
        if (!p) fprintf(stderr, "%s: %s\n", want[i].rel, err.message);
        const fu_kernel_plan *kp = NULL;
        for (int k = 0; p && k < p->nkernels; k++)
            if (p->kernels[k].sched == FU_SCHED_REDUCTION) kp = &p->kernels[k];
        CHECK(kp && kp->params_json && kp->params_json[0] == '{');
        if (kp && kp->params_json) {
            for (int k = 0; want[i].fields[k]; k++) CHECK_CONTAINS(kp->params_json, want[i].fields[k]);
            CHECK(kp->cluster == want[i].cluster && kp->block == want[i].block);
            char grid[32], block[32], shared[48], ws[48];
            snprintf(grid, sizeof grid, "\"grid\": %u,", kp->grid);
            snprintf(block, sizeof block, "\"block\": %u,", kp->block);
            snprintf(shared, sizeof shared, "\"shared_bytes\": %zu,", kp->shared_bytes);
            snprintf(ws, sizeof ws, "\"workspace_bytes\": %zu,", kp->workspace_bytes);
            CHECK_CONTAINS(kp->params_json, grid); /* the launch is the struct's */
            CHECK_CONTAINS(kp->params_json, block);
            CHECK_CONTAINS(kp->params_json, shared);
            CHECK_CONTAINS(kp->params_json, ws);
            if (kp->cluster > 1) CHECK_CONTAINS(kp->source, "__cluster_dims__(4, 1, 1)");
            for (int lanes = 2; lanes < 32; lanes *= 2) { /* short rows reduce over their lanes only */
                char threads[32], reduce[32];
                snprintf(threads, sizeof threads, "\"threads\": %d,", lanes);
                snprintf(reduce, sizeof reduce, "fu_lanes_reduce<%d>", lanes);
                if (strstr(kp->params_json, threads)) CHECK_CONTAINS(kp->source, reduce);
            }
            /* a constant shift where the parameters say so, and its polynomial lanes */
            const char *lanes_at = strstr(kp->params_json, "\"poly_exp_lanes\": ");
            CHECK((strstr(kp->source, "fu_exp_shifted(") != NULL) == (strstr(kp->params_json, "\"lse_shift\"") != NULL));
            CHECK((strstr(kp->source, "fu_exp_shifted_poly(") != NULL) == (lanes_at && atoi(lanes_at + 18) > 0));
            printf("row params %s %s: %s\n", want[i].rel, fu_dtype_name(want[i].dt), kp->params_json);
        }
        fu_plan_free(p);
        tc_list_free(&l);
    }
}

/* A cluster block's next row part is loaded during this row's pass 2 only where an
 * SM must move many bytes a clock to keep the memory busy (ROW_PREFETCH_CLUSTER_*):
 * an H200 (the default options) or an H100 on 96 SMs, not a whole H100. */
static void check_cluster_prefetch_balance(const char *suites)
{
    const double h200 = fu_dram_bytes_per_sm_clock(3201000, 6144, 132, 1980000);
    const double h100 = fu_dram_bytes_per_sm_clock(2619000, 5120, 132, 1980000);
    const double h100_96 = fu_dram_bytes_per_sm_clock(2619000, 5120, 96, 1980000);
    CHECK(h200 > 18.7 && h200 < 18.9 && h100 > 12.7 && h100 < 12.9 && h100_96 > 17.5 && h100_96 < 17.7);
    CHECK(fu_dram_bytes_per_sm_clock(0, 5120, 132, 1980000) == 0 && fu_dram_bytes_per_sm_clock(2619000, 5120, 0, 1980000) == 0);
    fu_plan_options o;
    fu_plan_options_default(&o);
    CHECK(o.dram_bytes_per_sm_clock == h200);
    fu_plan_options_set_sm_count(&o, 66); /* half the SMs of the same memory: twice the share */
    CHECK(o.sm_count == 66 && fabs(o.dram_bytes_per_sm_clock - 2 * h200) < 1e-9);
    fu_plan_options_set_sm_count(&o, 0); /* (0: as it was) */
    CHECK(o.sm_count == 66);
    const char *ce[] = {"V=128256"};
    const struct {
        double balance;
        const char *want;
    } cards[] = {{h200, "\"row_prefetch\": true"}, {h100_96, "\"row_prefetch\": true"},
                 {h100, "\"row_prefetch\": false"}, {0, "\"row_prefetch\": false"}};
    for (size_t i = 0; i < sizeof cards / sizeof cards[0]; i++) {
        tc_list l = {0};
        tc_case *c = tc_add_suite(&l, suites, "cross_entropy/cross_entropy_fwdbwd.fusion", "balance", ce, 1, FU_BF16, NULL);
        fu_plan_options_default(&o);
        o.dram_bytes_per_sm_clock = cards[i].balance;
        fu_plan *p = NULL;
        fu_error err = {0};
        CHECK(c && fu_plan_build(c->f, &o, &p, &err) == FU_OK && p->nkernels == 1);
        if (p) {
            CHECK(p->kernels[0].cluster > 1 && p->kernels[0].params_json);
            if (p->kernels[0].params_json) CHECK_CONTAINS(p->kernels[0].params_json, cards[i].want);
        }
        fu_plan_free(p);
        tc_list_free(&l);
    }
}

/* The part of body from the first "// no lane is at the position 'name" to its "} else {":
 * the vector work where the compare is known (VECTOR_MISS); NULL where there is none. */
static char *known_branch(const char *body, const char *name)
{
    char mark[96];
    snprintf(mark, sizeof mark, "// no lane is at the position '%s", name);
    const char *a = body ? strstr(body, mark) : NULL, *b = a ? strstr(a, "} else {") : NULL;
    return a && b ? strndup(a, (size_t)(b - a)) : NULL;
}

/* A compare of the row position with a value the same along the row (VECTOR_MISS): the cross
 * entropy backward's pass 2 works in vectors twice, once without the one-hot (no compare, no
 * subtraction of it); its forward has no one-hot. position_compare.fusion: an eq, and an ne
 * with the iota second, split their passes; a compare with a full-size value does not. Every
 * kernel compiles (NVRTC). */
static void check_vector_miss(fu_runtime *rt, const char *data, const char *suites)
{
    const char *sets[] = {"N=64", "V=4096"};
    for (int d = 0; d < 2; d++) {
        const fu_dtype dt = d ? FU_BF16 : FU_F32;
        char *bwd = one_kernel(rt, suites, "cross_entropy/cross_entropy_bwd.fusion", sets, 2, dt);
        char *fwd = one_kernel(rt, suites, "cross_entropy/cross_entropy_fwd.fusion", sets, 2, dt);
        CHECK(count_in(body_of(bwd), "// no lane is at the position") == 2); /* in each copy of the loop, below */
        char *known = known_branch(body_of(bwd), "dlogits.is_target");
        CHECK(known != NULL);
        CHECK(known && !strstr(known, "==") && !strstr(known, "bool") && strstr(known, "fu_exp_sub("));
        CHECK_CONTAINS(body_of(bwd), " == "); /* ... in the other branch */
        CHECK(count_in(body_of(fwd), "// no lane is at the position") == 0);
        /* the row's validity decided once a row (ROW_UNSWITCH): pass 2's loop for a valid row,
         * then for an ignored one, neither with a select on it; the forward's where is per row */
        CHECK(count_in(body_of(bwd), "is one value a row: the pass's loop for each") == 1);
        CHECK(count_in(body_of(bwd), "// pass 2 over the row") == 1);
        CHECK(bwd && !strstr(body_of(bwd), " : 0.0f);") && !strstr(body_of(fwd), "the pass's loop for each"));
        free(known);
        free(bwd);
        free(fwd);
        char *pc = one_kernel(rt, data, "position_compare.fusion", NULL, 0, dt);
        CHECK(count_in(body_of(pc), "// no lane is at the position") == 2);
        char *hit = known_branch(body_of(pc), "hit"), *miss = known_branch(body_of(pc), "miss");
        CHECK(hit && miss && !strstr(body_of(pc), "position 'same'"));
        CHECK(hit && !strstr(hit, "bool") && strstr(hit, "fu_exp_sub("));
        CHECK(miss && !strstr(miss, " != ") && strstr(miss, " == ")); /* ... 'same' stays per lane */
        free(hit);
        free(miss);
        free(pc);
    }
}

/* A gathered index is checked by a compare and a select, and the kernel's fu_index_note reports
 * the first bad one when the thread leaves (docs/perf.md v27): no branch or call between the
 * label's load and the row's. Kernels without a gather declare no note: the embedding
 * backward's scatter reports where it checks (it must not add), the QKV split gathers nothing. */
static void check_index_note(const char *suites)
{
    static const struct {
        const char *rel;
        bool note;
    } cases[] = {
        {"cross_entropy/cross_entropy_bwd.fusion", true},
        {"cross_entropy/cross_entropy_fwdbwd.fusion", true},
        {"embedding/embedding_fwd.fusion", true},
        {"embedding/embedding_bwd.fusion", false},
        {"qkv_split/qkv_split.fusion", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tc_list l = {0};
        fu_error err = {0};
        tc_case *c = tc_add_suite(&l, suites, cases[i].rel, "codegen", NULL, 0, FU_BF16, NULL);
        fu_plan *p = c ? tc_plan(c, 132, &err) : NULL;
        CHECK(p != NULL && p->nkernels >= 1);
        for (int k = 0; p && k < p->nkernels; k++) {
            const char *body = body_of(p->kernels[k].source);
            if (cases[i].note) {
                CHECK_CONTAINS(body, "  fu_index_note fu_oob(fu_err); // the thread's first out-of-range index");
                CHECK_CONTAINS(body, " = fu_oob.check(");
                CHECK(!strstr(body, "fu_report_index(fu_err"));
            } else {
                CHECK(!strstr(p->kernels[k].source, "fu_index_note") && !strstr(body, "@fu_index_note@"));
            }
        }
        fu_plan_free(p);
        tc_list_free(&l);
    }
    printf("index note: in the kernels that gather, in none other\n");
}

int main(void)
{
    const char *data = getenv("FUSER_TEST_DATA");
    if (!data) {
        fprintf(stderr, "test_reduce_codegen: FUSER_TEST_DATA is not set\n");
        return 1;
    }
    check_div_const();
    check_div_const_bf16();
    check_value_ranges();
    check_shift_limits();
    check_shift_only();
    check_bf16_mul();
    check_one_warp_blocks();
    check_outer_params(data);
    const char *suites = getenv("FUSER_SUITES_DIR");
    CHECK(suites != NULL);
    if (suites) check_row_params(data, suites);
    if (suites) check_cluster_prefetch_balance(suites);
    if (suites) check_index_note(suites);
    char cache[512];
    if (!tu_make_temp_dir(cache, sizeof cache, "reduce-codegen")) return 1;
    fu_runtime_options ro = {0};
    ro.cache_dir = cache;
    ro.compile_only = true;
    fu_runtime *rt = NULL;
    fu_error err = {0};
    if (fu_runtime_open(&ro, &rt, &err) != FU_OK) {
        fprintf(stderr, "fu_runtime_open: %s\n", err.message);
        return 1;
    }
    const char *sets[] = {"N=64", "V=4096"};
    char *bf = one_kernel(rt, data, "softcap_cross_entropy.fusion", sets, 2, FU_BF16);
    char *f32 = one_kernel(rt, data, "softcap_cross_entropy.fusion", sets, 2, FU_F32);
    if (suites) check_vector_miss(rt, data, suites);
    check_outer_norm(rt, data);
    check_transpose(rt, data);
    check_permuted_outputs(rt, data);
    check_broadcast_outer(rt, data);
    if (suites) check_row_view_input(rt, data, suites);
    CHECK_CONTAINS(body_of(bf), "fu_tanh_approx(");
    CHECK(!strstr(body_of(bf), "fu_tanh(") && !strstr(body_of(bf), "/ 30.0f"));
    CHECK_CONTAINS(body_of(f32), "fu_tanh(");
    CHECK(!strstr(body_of(f32), "fu_tanh_approx(") && !strstr(body_of(f32), "/ 30.0f"));
    CHECK_CONTAINS(body_of(f32), "fu_div_const(");
    /* its capped logits lie in [-30, 30] (fu_value_range): terms exp(x - 30.x), the row's max
     * kept for the one rescale per thread (check_row_params: the parameters) */
    for (int d = 0; d < 2; d++) {
        const char *b = body_of(d ? f32 : bf);
        CHECK_CONTAINS(b, "fu_exp_shifted(");
        CHECK(!strstr(b, "*= fu_exp_sub(r0, mx")); /* no rescale per vector or batch */
    }
    check_exp_poly(bf);
    /* a transcendental an element, more than one batch a row: loaded in two halves, one ahead
     * (STAGE_HALVES): the second half's loads, then the next batch's first half after the first
     * half's arithmetic; not where the row is one batch (V = 4096: 4 vectors a thread) */
    char *wide = one_kernel(rt, data, "softcap_cross_entropy.fusion", NULL, 0, FU_BF16);
    CHECK(count_in(body_of(wide), "for (int b = 4; b < 8; b++) {") == 2); /* its loads, its terms */
    CHECK(count_in(body_of(wide), "if (it0 + 8 < 32) {") == 1);
    CHECK(count_in(body_of(wide), "const int it = it0 + 8 + b; // the next batch") == 1);
    CHECK(bf && !strstr(body_of(bf), "// the next batch"));
    free(wide);
    /* ... in pass 1 only of two passes from memory (a later pass keeps whole batches) */
    for (int d = 0; d < 2; d++) {
        char *two = one_kernel(rt, data, "softcap_softmax_rows.fusion", NULL, 0, d ? FU_BF16 : FU_F32);
        CHECK(count_in(body_of(two), "// the next batch") == 1);
        CHECK(count_in(body_of(two), "// pass 2 over the row") == 1);
        free(two);
    }
    const char *psets[] = {"N=4096"};
    char *pm = one_kernel(rt, data, "pointwise_math.fusion", psets, 1, FU_F32);
    char *pmb = one_kernel(rt, data, "pointwise_math.fusion", psets, 1, FU_BF16);
    /* 'same' = (x * 1) / 1 is the loaded x: stored from the load's own element */
    CHECK_CONTAINS(body_of(pmb), "_9[0] = x0[0];");
    CHECK(!strstr(body_of(pm), "* 1.0f") && !strstr(body_of(pm), "/ 1.0f"));
    CHECK_CONTAINS(body_of(pm), "* 0.25f"); /* x / 4 */
    /* lanes wider than 16 bytes (WIDE_LANE_LOADS): a bf16 output's 8 lanes of i64 indices in four
     * 16-byte loads and of f32 in two, one base for the thread; the gathered values a load a lane */
    const char *wsets[] = {"N=64", "C=256"};
    char *wl = one_kernel(rt, data, "wide_lanes.fusion", wsets, 2, FU_BF16);
    CHECK_CONTAINS(body_of(wl), "[3] = __ldg((const uint4 *)(in1 + e0) + 3);"); /* 256 * d0_0 + d0_1: e0 */
    CHECK_CONTAINS(body_of(wl), "[1] = __ldg((const uint4 *)(in2 + e0) + 1);");
    /* an offset over a run of the flat position's digits is one division of it (DIGIT_RUNS):
     * the row of [13, 16, 3] at kb, the weight [16, 3] at kb % 48, the top digit without a %;
     * a bf16 quotient of bf16 values by div.full.f32 (BF16_DIV_FULL), f32 by IEEE division */
    char *dr = one_kernel(rt, data, "digit_runs.fusion", NULL, 0, FU_F32);
    char *drb = one_kernel(rt, data, "digit_runs.fusion", NULL, 0, FU_BF16);
    CHECK_CONTAINS(body_of(dr), " = in0[(624 * o0 + kb)];");
    CHECK_CONTAINS(body_of(dr), "fu_load(in1[(kb % 48)])");
    CHECK_CONTAINS(body_of(dr), "const int k1 = kb / 48;");
    CHECK(dr && !strstr(body_of(dr), "48 * k1") && !strstr(body_of(dr), "fu_div_bf16("));
    CHECK_CONTAINS(body_of(drb), " = fu_div_bf16(");
    CHECK(drb && !strstr(body_of(drb), " / v"));
    /* a bf16 square root of bf16 values by sqrt.approx.f32 (BF16_SQRT_APPROX) */
    char *sq = one_kernel(rt, data, "bf16_sqrt.fusion", NULL, 0, FU_F32);
    CHECK_CONTAINS(body_of(sq), " = fu_sqrt_bf16(");
    CHECK(sq && !strstr(body_of(sq), "fu_sqrt(v"));
    free(sq);
    /* a warp a row kept in shared memory, more rows than warps: the warp's next row is loaded
     * after pass 1 (ROW_PREFETCH_WARP_BYTES); not in bf16 (registers), nor with a row a warp */
    const char *wr_few[] = {"N=4000"}, *wr_wide[] = {"N=5003", "C=1024"};
    char *wr = one_kernel(rt, data, "warp_rows_prefetch.fusion", NULL, 0, FU_F32);
    char *wrb = one_kernel(rt, data, "warp_rows_prefetch.fusion", NULL, 0, FU_BF16);
    char *wrf = one_kernel(rt, data, "warp_rows_prefetch.fusion", wr_few, 1, FU_F32);
    CHECK_CONTAINS(body_of(wr), "if ((int)blockIdx.x * 8 + fu_warp < 4500) {");
    CHECK_CONTAINS(body_of(wr), "if (row + (int)gridDim.x * 8 < 4500) {");
    CHECK(wrb && !strstr(body_of(wrb), "fu_row_ahead"));
    CHECK(wrf && !strstr(body_of(wrf), "fu_row_ahead"));
    char *wrw = one_kernel(rt, data, "warp_rows_prefetch.fusion", wr_wide, 2, FU_F32); /* 128 bytes a lane */
    CHECK(wrw && strstr(wrw, "fu_rows[]") && !strstr(body_of(wrw), "fu_row_ahead"));
    free(wrw);
    /* ... with the per-row inputs of the row ahead (ROW_PREFETCH_SCALARS): loaded beside the first
     * row's batch and the next row's, and nowhere else; each row reads the copies it took at its
     * start, in both passes. None where nothing is loaded ahead (bf16: the row in registers) */
    char *ra = one_kernel(rt, data, "row_inputs_ahead.fusion", NULL, 0, FU_F32);
    char *rab = one_kernel(rt, data, "row_inputs_ahead.fusion", NULL, 0, FU_BF16);
    CHECK(count_in(body_of(ra), "fu_ra0 = fu_load(in1[o0]); // 'temp' of that row") == 2);
    CHECK(count_in(body_of(ra), "fu_ra1 = fu_load(in2[o0]); // 'bias' of that row") == 2);
    CHECK(count_in(body_of(ra), "in1[") == 2 && count_in(body_of(ra), "in2[") == 2);
    CHECK_CONTAINS(body_of(ra), "const float fu_rs0 = fu_ra0;");
    CHECK(count_in(body_of(ra), " * fu_rs0);") == 8 && count_in(body_of(ra), " + fu_rs1);") == 8); /* 4 lanes, 2 passes */
    CHECK(rab && !strstr(body_of(rab), "fu_ra0") && !strstr(body_of(rab), "fu_row_ahead"));
    free(ra);
    free(rab);
    /* per-column inputs ([C] and [1, C]) read in the passes of rows a block takes several of:
     * loaded into registers once, before the row loop, and read from them in both passes
     * (ROW_INVARIANT_BYTES); from memory where a rolled pass takes two trips of a thread's
     * vectors (f32 C = 4096: registers indexed at run time), past the 32 bytes a thread (bf16
     * C = 4096: the weight's two vectors only), or where a block takes one row (N = 500) */
    const char *ri_wide[] = {"C=4096"}, *ri_few[] = {"N=500"};
    for (int d = 0; d < 2; d++) {
        fu_dtype dt = d ? FU_BF16 : FU_F32;
        char *ri = one_kernel(rt, data, "row_invariant.fusion", NULL, 0, dt);
        const char *b = body_of(ri);
        const int vec = dt == FU_BF16 ? 8 : 4;
        char decl[80], w0[96], w1[96];
        snprintf(decl, sizeof decl, "fu_w0[%d]; // 'w', the same at every row: loaded once", vec);
        snprintf(w0, sizeof w0, "*(uint4 *)(fu_w0 + it * %d) = __ldg((const uint4 *)(in1 + k1));", vec);
        snprintf(w1, sizeof w1, "*(uint4 *)(fu_w1 + it * %d) = __ldg((const uint4 *)(in2 + k1));", vec);
        CHECK_CONTAINS(b, decl);
        CHECK(count_in(b, w0) == 1 && count_in(b, w1) == 1);
        CHECK(count_in(b, "in1 + ") == 1 && count_in(b, "in2 + ") == 1); /* nowhere else */
        const char *loaded = strstr(b, "fu_w0 +"), *rows = strstr(b, "for (int row = ");
        CHECK(loaded && rows && loaded < rows); /* before the row loop */
        /* each lane's weight, in both passes (bf16: its pair's half; f32: its element) */
        CHECK(count_in(b, dt == FU_BF16 ? "fu_pair_lo(fu_w0, it * 4 + 0)" : "fu_load(fu_w0[it * 4 + 0])") == 2);
        char *riw = one_kernel(rt, data, "row_invariant.fusion", ri_wide, 1, dt);
        char *rif = one_kernel(rt, data, "row_invariant.fusion", ri_few, 1, dt);
        if (dt == FU_BF16) {
            CHECK_CONTAINS(body_of(riw), "fu_w0[16]; // 'w', the same at every row: loaded once");
            CHECK(riw && !strstr(body_of(riw), "fu_w1") && count_in(body_of(riw), "in2 + ") == 2); /* a load in each pass */
        } else {
            CHECK(riw && !strstr(body_of(riw), "fu_w0"));
        }
        CHECK(rif && !strstr(body_of(rif), "fu_w0"));
        free(ri);
        free(riw);
        free(rif);
    }
    /* a warp a row keeps at most WARP_ROW_REGISTER_BYTES a lane in registers: softmax
     * backward's y and dy at 1024 bf16 columns (128 bytes) go to shared memory, at 256 not */
    const char *sb_narrow[] = {"C=256"};
    char *sb = one_kernel(rt, data, "softmax_backward.fusion", NULL, 0, FU_BF16);
    char *sbn = one_kernel(rt, data, "softmax_backward.fusion", sb_narrow, 1, FU_BF16);
    CHECK_CONTAINS(sb, "extern __shared__ __align__(16) unsigned char fu_rows[];");
    CHECK(sb && !strstr(body_of(sb), "fu_row_ahead")); /* 128 bytes ahead: over ROW_PREFETCH_WARP_BYTES */
    CHECK(sbn && !strstr(sbn, "fu_rows[]") && strstr(sbn, "kept in registers between passes"));
    free(sb);
    free(sbn);
    free(wr);
    free(wrb);
    free(wrf);
    free(dr);
    free(drb);
    CHECK(wl && !strstr(body_of(wl), "fu_load(in1[") && !strstr(body_of(wl), "fu_load(in2["));
    CHECK_CONTAINS(body_of(wl), "fu_load(in0[(256 * d0_0 + j");
    free(wl);
    /* a launch of a block a row takes its row in an if (SMALL_ROW_IF): 64 rows, 64 blocks */
    CHECK_CONTAINS(body_of(bf), "if (const int row = blockIdx.x; row < 64) {");
    CHECK(bf && !strstr(body_of(bf), "row += gridDim.x"));
    /* each kernel's prelude: the helper files its code uses, and what they need */
    CHECK_CONTAINS(pm, "fuser prelude 00_core.cuh");
    CHECK_CONTAINS(pm, "fuser prelude 30_tanh.cuh");
    CHECK(pm && !strstr(pm, "fuser prelude 50_reduce.cuh") && !strstr(pm, "fuser prelude 60_lse.cuh") &&
          !strstr(pm, "fuser prelude 70_row_queue.cuh"));
    CHECK_CONTAINS(bf, "fuser prelude 21_exp_shifted.cuh"); /* its lse has a constant shift */
    CHECK_CONTAINS(bf, "fuser prelude 10_minmax.cuh");      /* 21_exp_shifted.cuh needs it */
    CHECK(bf && !strstr(bf, "fuser prelude 60_lse.cuh"));     /* and no online rescales */
    CHECK_CONTAINS(bf, "fuser prelude 30_tanh.cuh");
    /* outer reductions: one kernel, coalesced vector loads; rows split over
     * blocks where the columns are few, not where they are many */
    const char *few[] = {"N=8192", "C=1024"}, *many[] = {"N=64", "C=65536"}, *odd[] = {"N=1000", "C=24"};
    const char *bg[] = {"B=4", "T=512", "C=1024"}, *bg_odd[] = {"B=3", "T=5", "C=100"};
    struct {
        const char *file;
        const char *const *sets;
        int nsets;
        fu_dtype dt;
        bool split;
    } outer[] = {
        {"column_reductions.fusion", few, 2, FU_F32, true},   {"column_reductions.fusion", few, 2, FU_BF16, true},
        {"column_reductions.fusion", many, 2, FU_BF16, false}, {"column_reductions.fusion", odd, 2, FU_F32, true},
        {"bias_grad.fusion", bg, 3, FU_F32, true},            {"bias_grad.fusion", bg_odd, 3, FU_BF16, false},
    };
    for (size_t i = 0; i < sizeof outer / sizeof outer[0]; i++) {
        char *src = one_kernel(rt, data, outer[i].file, outer[i].sets, outer[i].nsets, outer[i].dt);
        CHECK_CONTAINS(src, "scheduler: outer reduction");
        CHECK_CONTAINS(body_of(src), "= __ldg((const uint");
        CHECK((strstr(body_of(src), "atomicAdd(&fu_done[bx]") != NULL) == outer[i].split);
        free(src);
    }
    /* norm backwards: dx per row and dweight (dbias) per column in one kernel */
    const char *nb_sets[][2] = {{"N=8192", "C=1024"}, {"N=1000", "C=100"}, {"N=8", "C=4096"}, {"N=300", "C=2048"}};
    const char *norms[] = {"layer_norm_backward.fusion", "rms_norm_backward.fusion"};
    for (int nf = 0; nf < 2; nf++)
        for (int k = 0; k < 4; k++)
            for (int d = 0; d < 2; d++) {
                char *src = one_kernel(rt, data, norms[nf], nb_sets[k], 2, d ? FU_BF16 : FU_F32);
                /* the column partials combined by the whole grid between two barriers (a
                 * cooperative launch): the helper in the prelude, the plan says so */
                CHECK_CONTAINS(body_of(src), "fu_grid_sync(fu_count + 2); // every block's partial written");
                CHECK_CONTAINS(body_of(src), "fu_grid_sync(fu_count + 2); // every group's partial written");
                CHECK_CONTAINS(src, "__device__ __forceinline__ void fu_grid_sync(unsigned *bar)");
                CHECK(src && !strstr(body_of(src), "fu_group_done")); /* no last blocks */
                CHECK(src && !strstr(body_of(src), "fu_take_row")); /* rows strided, not from the queue */
                free(src);
            }
    /* a bf16 sum read by an f32 op is rounded to bf16 first, in the row, column and grid
     * layouts of the row scheduler and in the outer scheduler (bf16_sums: 2 kernels) */
    {
        tc_list l = {0};
        const char *rows[1] = {"N=1000"}; /* (more than one block's loop: k_block.c) */
        tc_case *c = tc_add_suite(&l, data, "bf16_sums.fusion", "codegen", rows, 1, FU_F32, NULL);
        fu_plan *p = c ? tc_plan(c, 132, &err) : NULL;
        CHECK(p != NULL && p->nkernels == 2);
        for (int k = 0; p && k < p->nkernels; k++) CHECK_CONTAINS(body_of(p->kernels[k].source), "= fu_round_bf16(r0);");
        if (p && p->nkernels == 2) CHECK_CONTAINS(body_of(p->kernels[0].source), "fu_cv1 = fu_round_bf16(fu_cv1);");
        fu_plan_free(p);
        tc_list_free(&l);
        char *col = one_kernel(rt, data, "bf16_column_sum.fusion", NULL, 0, FU_F32);
        CHECK_CONTAINS(body_of(col), "r0_7 = fu_round_bf16(r0_7);");
        /* its 8 f32 lanes (the bf16 input's vector) are stored 16 bytes at a time: a 32-byte
         * store had no type and wrote one byte */
        CHECK_CONTAINS(body_of(col), "*(uint4 *)(out0 + o1 + 4) = *(const uint4 *)((const char *)fu_o0 + 16);");
        free(col);
        /* f32 sums are not rounded again */
        CHECK(!strstr(body_of(f32), "fu_round_"));
    }
    free(bf);
    free(f32);
    free(pm);
    free(pmb);
    fu_runtime_close(rt);
    tu_remove_tree(cache);
    return check_finish("test_reduce_codegen");
}
