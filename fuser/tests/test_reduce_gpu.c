/*
 * test_reduce_gpu.c -- the fusions of fuser/tests/data on a GPU against the CPU
 * interpreter (docs/format.md, Numerics: the interpreter is the judge):
 *   - softcap_cross_entropy (f32, bf16; 256 x 4096 and 16 x 32768, some targets
 *     -100): max|gpu - cpu| / max|cpu| <= 1e-5 (f32), 1e-2 (bf16), as
 *     test_gpu_fuser's tolerances;
 *   - pointwise_math (f32, bf16): element by element, |gpu - cpu| <= 1e-5 |cpu|
 *     (f32) and <= 2^-7 |cpu|, one bf16 ulp (bf16), plus 1e-30 for zeros.
 *   - wide_lanes (a gather by i64 indices plus an f32 input, f32 and bf16
 *     outputs: lanes read in several 16-byte loads), max-relative as below;
 *   - digit_runs (offsets over runs of the row position's digits as one
 *     division of it; a bf16 quotient by div.full.f32), max-relative as below;
 *   - warp_rows_prefetch (a warp a row, the next row's loads during this one's
 *     later passes; 4500 and 9001 rows, and 5003 rows of 1024 without them),
 *     row_inputs_ahead (the same with two per-row inputs loaded a row ahead,
 *     20001 rows: each warp 4 or 5), row_invariant (per-column inputs loaded
 *     into registers once for a block's rows; 768, 1000 and 4096 columns)
 *     and softmax_backward (two inputs kept a warp a row: shared memory at 1024
 *     and 768 bf16 columns, the latter with the next row ahead; registers at
 *     256), max-relative as below;
 *   - column_reductions and bias_grad (outer reductions; f32, bf16; with and
 *     without row splits, odd sizes), masked_mean_pool (beside them a reduction of
 *     a mask broadcast along the columns): max-relative as above;
 *   - outer_norm (a softmax and a layer norm over a non-innermost axis) planned with
 *     fu_plan_options.outer_norm (the plan must hold such a kernel): the tile in
 *     shared memory, scalar lanes at an odd C, and read again where it does not fit;
 *     once as the row scheduler plans it by default; outer_norm_mixed (an i32, an i64
 *     and a float reduction in one level); max-relative as above;
 *   - transpose and transpose_both (pointwise reads across the output's innermost axis)
 *     planned with fu_plan_options.transpose (the plan must hold a transpose kernel):
 *     whole and partial tiles, a read both ways, a bool; element by element as
 *     pointwise_math;
 *   - qk_norm (an RMS norm whose output permutes the rows, the innermost axis in
 *     place: the row kernel stores at the permuted offsets) at four sizes, rows
 *     of 128, 100, 64 and 999 (aligned rows: its stores a lane each); group_norm (the
 *     affine after the view back, computed in the grouped shape) and
 *     layer_norm_view (a norm over x.view(-1, D), x kept between passes) at two
 *     sizes each, max-relative as above;
 *   - layer_norm_backward and rms_norm_backward (one kernel: dx per row, the
 *     column gradients combined by the last blocks) at four sizes;
 *   - bounded_lse (log-sum-exps of tanh and sigmoid values: the constant shift and
 *     the FMA-pipe exp) in every row layout;
 *   - rows of a length no multiple of the vector (aligned rows: vectors from each
 *     row's first aligned element, the edges element by element) in every row
 *     layout;
 *   - bf16_div (a bf16 quotient of bf16 values: div.full.f32): every normal bf16
 *     value over 64 divisors; bf16_sqrt (sqrt.approx.f32): every bf16 value; the
 *     interpreter's bits (subnormal results: within 2^-133); bf16_tanh
 *     (tanh.approx.f32, rounded): every bf16 value, within one bf16 value of the
 *     interpreter's;
 *   - softcap_softmax_rows (two passes from memory, the first loaded in halves,
 *     one ahead: 3 rows of 1000003, guarded, and 2 of 4194304), max-relative as above;
 *   - position_compare (one-hots of the row position: each pass's vectors split
 *     on whether a lane is at the target, VECTOR_MISS) at an odd row length
 *     (aligned rows) and at 4096, max-relative as above;
 *   - every case runs twice and gives the same bits.
 * With --time: the soft-capped cross entropy at 8192 x 32768 in both dtypes,
 * median of 20 launches (CUDA events; the 537 MB / 1.07 GB input is far above
 * the L2), beside a device-to-device copy of the same bytes: % of copy.
 * Without a GPU: one line, exit 77.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "exec.h"
#include "fuser_cases.h"
#include "gpu_test.h"
#include "runtime.h"

static void free_tensors(fu_host_tensor *t, int n)
{
    for (int i = 0; i < n; i++) fu_host_tensor_free(&t[i]);
}

/* Sets every 7th target (from 3) to -100, the fusion's ignore_index. */
static void plant_ignored(const fu_fusion *f, fu_host_tensor *in)
{
    for (int i = 0; i < fu_fusion_num_inputs(f); i++)
        if (!strcmp(fu_tensor_name(f, fu_fusion_input(f, i)), "target"))
            for (int64_t k = 3; k < fu_host_tensor_numel(&in[i]); k += 7) fu_host_tensor_set(&in[i], k, -100.0);
}

/* Worst error of a against the reference b: max-relative (elementwise false)
 * or the largest |a - b| / (|b| + 1e-30) (elementwise true). */
static double error_of(const fu_host_tensor *a, const fu_host_tensor *b, bool elementwise)
{
    double maxdiff = 0, maxref = 0, worst = 0;
    for (int64_t i = 0; i < fu_host_tensor_numel(b); i++) {
        double x = fu_host_tensor_get(a, i), y = fu_host_tensor_get(b, i), d = gpu_test_diff(x, y);
        if (d > maxdiff) maxdiff = d;
        if (isfinite(y) && fabs(y) > maxref) maxref = fabs(y);
        if (elementwise && d / (fabs(y) + 1e-30) > worst) worst = d / (fabs(y) + 1e-30);
    }
    if (elementwise) return worst;
    return maxref > 0 ? maxdiff / maxref : maxdiff;
}

/* The plan options a case turns on; the plan must then hold such a kernel. */
enum {
    RC_OUTER_NORM = 1, /* fu_plan_options.outer_norm: an outer normalization */
    RC_TRANSPOSE = 2,  /* fu_plan_options.transpose: a transpose kernel */
};

static void run_case_with(fu_runtime *rt, const char *data, const char *rel, const char *const *sets, int nsets,
                          fu_dtype dt, bool elementwise, unsigned options)
{
    tc_list l = {0};
    tc_case *c = tc_add_suite(&l, data, rel, "gpu", sets, nsets, dt, NULL);
    CHECK(c != NULL);
    if (!c) return;
    const fu_fusion *f = c->f;
    int nin = fu_fusion_num_inputs(f), nout = fu_fusion_num_outputs(f), before = check_failures;
    fu_host_tensor in[8] = {0}, gpu[16] = {0}, cpu[16] = {0};
    fu_error err = {0};
    fu_plan_options po;
    fu_plan_options_for_device(rt, &po);
    if (options) {
        po.outer_norm = options & RC_OUTER_NORM;
        po.transpose = options & RC_TRANSPOSE;
        if (po.transpose) po.transpose_min_bytes = 0; /* the tiles at the small sizes too */
        fu_plan *plan = NULL;
        bool planned = fu_plan_build(f, &po, &plan, &err) == FU_OK, held = false;
        for (int k = 0; planned && k < plan->nkernels; k++)
            held |= options & RC_OUTER_NORM ? strstr(plan->kernels[k].config, " normalization:") != NULL
                                            : plan->kernels[k].sched == FU_SCHED_TRANSPOSE;
        CHECK(planned && held);
        if (!(planned && held))
            fprintf(stderr, "%s: no %s kernel in the plan\n", c->name, options & RC_OUTER_NORM ? "outer normalization" : "transpose");
        fu_plan_free(plan);
    }
    double worst = 0;
    double tol = dt == FU_BF16 ? (elementwise ? 1.0 / 128 : 1e-2) : 1e-5;
    OK(fu_random_inputs(f, 1, in, &err));
    plant_ignored(f, in);
    fu_status s = fu_exec_run_host(rt, f, &po, in, gpu, &err);
    CHECK(s == FU_OK);
    if (s != FU_OK) fprintf(stderr, "%s: GPU: %s\n", c->name, err.message);
    fu_status r = fu_interp_run(f, in, cpu, &err);
    CHECK(r == FU_OK);
    for (int i = 0; s == FU_OK && r == FU_OK && i < nout; i++) {
        double e = error_of(&gpu[i], &cpu[i], elementwise);
        if (e > worst || isnan(e)) worst = e;
        CHECK(e <= tol);
        if (!(e <= tol))
            fprintf(stderr, "%s: output '%s': error %.3g > %.3g\n", c->name, fu_tensor_name(f, fu_fusion_output(f, i)), e, tol);
    }
    /* the same bits again: row splits are combined in a fixed order */
    fu_host_tensor again[16] = {0};
    if (s == FU_OK && fu_exec_run_host(rt, f, &po, in, again, &err) == FU_OK) {
        for (int i = 0; i < nout; i++) {
            bool same = fu_host_tensor_bytes(&again[i]) == fu_host_tensor_bytes(&gpu[i]) &&
                        !memcmp(again[i].data, gpu[i].data, fu_host_tensor_bytes(&gpu[i]));
            CHECK(same);
            if (!same) fprintf(stderr, "%s: output %d differs between two runs\n", c->name, i);
        }
        free_tensors(again, nout);
    } else if (s == FU_OK) {
        CHECK(!"second run");
    }
    if (s == FU_OK) free_tensors(gpu, nout);
    if (r == FU_OK) free_tensors(cpu, nout);
    free_tensors(in, nin);
    printf("%-44s %s%s%s error=%-9.3g (tolerance %.3g)  %s\n", c->name, options & RC_OUTER_NORM ? "outer_norm " : "",
           options & RC_TRANSPOSE ? "transpose " : "",
           elementwise ? "elementwise" : "max-relative", worst, tol, check_failures == before ? "PASS" : "FAIL");
    fflush(stdout);
    tc_list_free(&l);
}

static void run_case(fu_runtime *rt, const char *data, const char *rel, const char *const *sets, int nsets, fu_dtype dt,
                     bool elementwise)
{
    run_case_with(rt, data, rel, sets, nsets, dt, elementwise, 0);
}

/* The bf16 rules of docs/format.md (Numerics) that bound the distance to the interpreter's bits: a
 * case whose inputs fill() sets (false: they do not fit) and whose output 0 must hold, element by
 * element, the interpreter's value and sign (NaN for NaN), or a bf16 value at most steps bf16 values
 * away from it (0: its bits), except where the interpreter's result is subnormal (below 2^-126),
 * where the rules claim nothing: there within one subnormal bf16 ulp (2^-133). describe() names
 * element i's inputs in a message. */
typedef struct bits_rule {
    const char *file;
    bool (*fill)(fu_host_tensor *in);
    void (*describe)(const fu_host_tensor *in, int64_t i, char *buf, size_t n);
    int steps;
} bits_rule;

/* How many bf16 values lie from a to b (both bf16 values, neither NaN), +-0 one point. */
static long long bf16_steps(double a, double b)
{
    float fa = (float)a, fb = (float)b;
    uint32_t ua, ub;
    memcpy(&ua, &fa, sizeof ua);
    memcpy(&ub, &fb, sizeof ub);
    long long oa = (ua >> 31) ? -(long long)((ua >> 16) & 0x7fff) : (long long)(ua >> 16);
    long long ob = (ub >> 31) ? -(long long)((ub >> 16) & 0x7fff) : (long long)(ub >> 16);
    return oa > ob ? oa - ob : ob - oa;
}

static void run_bits_rule(fu_runtime *rt, const char *data, const bits_rule *rule)
{
    tc_list l = {0};
    /* (its tensors are bf16 by declaration: no DT, so the case is asked for as f32) */
    tc_case *c = tc_add_suite(&l, data, rule->file, "gpu", NULL, 0, FU_F32, NULL);
    CHECK(c != NULL);
    if (!c) return;
    int before = check_failures, nin = fu_fusion_num_inputs(c->f);
    fu_host_tensor in[8] = {0}, gpu[1] = {0}, cpu[1] = {0};
    fu_error err = {0};
    fu_plan_options po;
    fu_plan_options_for_device(rt, &po);
    OK(fu_random_inputs(c->f, 1, in, &err));
    bool filled = rule->fill(in);
    CHECK(filled);
    fu_status s = filled ? fu_exec_run_host(rt, c->f, &po, in, gpu, &err) : FU_ERR_ARG;
    CHECK(s == FU_OK);
    if (filled && s != FU_OK) fprintf(stderr, "%s: GPU: %s\n", c->name, err.message);
    fu_status r = filled ? fu_interp_run(c->f, in, cpu, &err) : FU_ERR_ARG;
    CHECK(r == FU_OK);
    int64_t wrong = 0, subnormal = 0, n = r == FU_OK ? fu_host_tensor_numel(&cpu[0]) : 0;
    for (int64_t i = 0; s == FU_OK && r == FU_OK && i < n; i++) {
        double x = fu_host_tensor_get(&gpu[0], i), y = fu_host_tensor_get(&cpu[0], i);
        bool tiny = y != 0 && fabs(y) < ldexp(1, -126);
        subnormal += tiny;
        bool ok = tiny ? gpu_test_diff(x, y) <= ldexp(1, -133)
                  : (x == y && signbit(x) == signbit(y)) || (isnan(x) && isnan(y)) ||
                        (rule->steps > 0 && !isnan(x) && !isnan(y) && bf16_steps(x, y) <= rule->steps);
        if (!ok && wrong++ < 5) {
            char what[128];
            rule->describe(in, i, what, sizeof what);
            fprintf(stderr, "%s: %s: GPU %.9g, interpreter %.9g\n", c->name, what, x, y);
        }
    }
    CHECK(wrong == 0);
    if (s == FU_OK) free_tensors(gpu, 1);
    if (r == FU_OK) free_tensors(cpu, 1);
    free_tensors(in, nin);
    printf("%-44s bits: %lld of %lld more than %d bf16 steps away (%lld subnormal results, within 2^-133)  %s\n",
           c->name, (long long)wrong, (long long)n, rule->steps, (long long)subnormal,
           check_failures == before ? "PASS" : "FAIL");
    fflush(stdout);
    tc_list_free(&l);
}

/* bf16_div.fusion: a[A, 1] every normal bf16 value of both signs, b[B] divisors of every kind. */
static const double divisors[] = {1, -1, 2, 0.5, 3, -3, 7, 0.75, 1.5, 1.75, 1.9921875, -1.9921875, 5, 9, 11, 13,
                                  15, 17, 0.1005859375, 255, 127, 129, 0.3330078125, 1e-38, 1.1754944e-38, -1.1754944e-38,
                                  3.3895314e38, -3.3895314e38, 1e30, 1e-30, 65536, 1.0 / 65536, 0, -0.0, INFINITY,
                                  -INFINITY, NAN, 6.25e-2, 100, 1000, 0.01, 1.0078125, 1.00390625, 1.01171875, 2.5, 3.5,
                                  4.5, 6.5, 10.5, 21, 37, 61, 83, 97, 113, 131, 151, 191, 223, 239, 251, 253, 1e10, 1e-10};
#define NDIVISORS ((int64_t)(sizeof divisors / sizeof divisors[0]))

static bool fill_div(fu_host_tensor *in)
{
    if (fu_host_tensor_numel(&in[0]) != 2 * 254 * 128 || fu_host_tensor_numel(&in[1]) != NDIVISORS) return false;
    int64_t k = 0;
    for (int sign = 0; sign < 2; sign++) /* exponent fields 1 .. 254, every significand */
        for (int e = 1; e <= 254; e++)
            for (int m = 0; m < 128; m++) fu_host_tensor_set(&in[0], k++, (sign ? -1 : 1) * ldexp(1 + m / 128.0, e - 127));
    for (k = 0; k < NDIVISORS; k++) fu_host_tensor_set(&in[1], k, divisors[k]);
    return true;
}

static void describe_div(const fu_host_tensor *in, int64_t i, char *buf, size_t n)
{
    snprintf(buf, n, "%.9g / %.9g", fu_host_tensor_get(&in[0], i / NDIVISORS), fu_host_tensor_get(&in[1], i % NDIVISORS));
}

/* bf16_sqrt.fusion, bf16_tanh.fusion: x[65536] every bf16 bit pattern (NaNs as NaN). */
static bool fill_every_bf16(fu_host_tensor *in)
{
    if (fu_host_tensor_numel(&in[0]) != 65536) return false;
    for (uint32_t bits = 0; bits < 65536; bits++) {
        uint32_t word = bits << 16;
        float v;
        memcpy(&v, &word, sizeof v);
        fu_host_tensor_set(&in[0], bits, v);
    }
    return true;
}

static void describe_sqrt(const fu_host_tensor *in, int64_t i, char *buf, size_t n)
{
    snprintf(buf, n, "sqrt(%.9g)", fu_host_tensor_get(&in[0], i));
}

static void describe_tanh(const fu_host_tensor *in, int64_t i, char *buf, size_t n)
{
    snprintf(buf, n, "tanh(%.9g)", fu_host_tensor_get(&in[0], i));
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Median of 20 timed calls of launch(x) (x an executable, or NULL for the copy). */
static float median_ms(fu_runtime *rt, fu_executable *x, const fu_devptr *ins, const fu_devptr *outs, fu_devptr dst,
                       fu_devptr src, size_t copy_bytes)
{
    fu_error err = {0};
    fu_event *a = NULL, *b = NULL;
    float t[20];
    OK(fu_event_create(rt, &a, &err));
    OK(fu_event_create(rt, &b, &err));
    for (int i = -2; i < 20; i++) {
        OK(fu_event_record(a, &err));
        if (x) OK(fu_exec_launch(x, ins, outs, &err));
        else OK(fu_device_copy_async(rt, dst, src, copy_bytes, &err));
        OK(fu_event_record(b, &err));
        float ms = 0;
        OK(fu_event_elapsed_ms(a, b, &ms, &err));
        if (i >= 0) t[i] = ms;
    }
    if (x) OK(fu_exec_check(x, &err));
    fu_event_free(a);
    fu_event_free(b);
    qsort(t, 20, sizeof t[0], cmp_float);
    return (t[9] + t[10]) / 2;
}

static void time_case(fu_runtime *rt, const char *data, fu_dtype dt)
{
    tc_list l = {0};
    const char *sets[] = {"N=8192", "V=32768"};
    tc_case *c = tc_add_suite(&l, data, "softcap_cross_entropy.fusion", "time", sets, 2, dt, NULL);
    CHECK(c != NULL);
    if (!c) return;
    fu_error err = {0};
    fu_plan_options po;
    fu_plan_options_for_device(rt, &po);
    fu_plan *p = NULL;
    fu_executable *x = NULL;
    fu_host_tensor in[2] = {0};
    fu_devptr din[2] = {0}, dout[1] = {0}, scratch = 0;
    size_t bytes = 0;
    OK(fu_plan_build(c->f, &po, &p, &err));
    if (p) OK(fu_exec_prepare(rt, p, &x, &err));
    OK(fu_random_inputs(c->f, 1, in, &err));
    for (int i = 0; x && i < 2; i++) {
        size_t n = fu_host_tensor_bytes(&in[i]);
        bytes += n;
        OK(fu_device_alloc(rt, n, &din[i], &err));
        OK(fu_device_upload(rt, din[i], in[i].data, n, &err));
    }
    if (x) {
        OK(fu_device_alloc(rt, 16, &dout[0], &err));
        OK(fu_device_alloc(rt, fu_host_tensor_bytes(&in[0]), &scratch, &err));
        float kms = median_ms(rt, x, din, dout, 0, 0, 0);
        float cms = median_ms(rt, NULL, NULL, NULL, scratch, din[0], fu_host_tensor_bytes(&in[0]));
        /* the copy moves its bytes twice (read + write) */
        double kernel_gbs = (double)bytes / (kms * 1e6), copy_gbs = 2.0 * (double)fu_host_tensor_bytes(&in[0]) / (cms * 1e6);
        printf("time softcap_cross_entropy/8192x32768/%-5s kernels=%d  %8.2f us  %7.1f GB/s  copy %7.1f GB/s  %5.1f%% of copy\n",
               fu_dtype_name(dt), p->nkernels, kms * 1e3, kernel_gbs, copy_gbs, 100.0 * kernel_gbs / copy_gbs);
    }
    for (int i = 0; i < 2; i++) fu_device_free(rt, din[i], &err);
    fu_device_free(rt, dout[0], &err);
    fu_device_free(rt, scratch, &err);
    free_tensors(in, 2);
    fu_exec_free(x);
    fu_plan_free(p);
    tc_list_free(&l);
}

int main(int argc, char **argv)
{
    const char *data = getenv("FUSER_TEST_DATA");
    if (!data) {
        fprintf(stderr, "test_reduce_gpu: FUSER_TEST_DATA is not set\n");
        return 1;
    }
    bool timing = argc > 1 && !strcmp(argv[1], "--time");
    fu_runtime *rt = NULL;
    int rc = gpu_test_open("test_reduce_gpu", NULL, &rt);
    if (rc) return rc;
    const char *small[] = {"N=256", "V=4096"}, *wide[] = {"N=16", "V=32768"}, *pm[] = {"N=65536"};
    const char *wl[] = {"N=64", "C=256"}, *wl_odd[] = {"N=7", "C=100"}, *odd_rows[] = {"N=1001"};
    const char *wrp_wide[] = {"N=5003", "C=1024"}, *wrp_many[] = {"N=9001"}, *sb_mid[] = {"C=768"}, *sb_narrow[] = {"C=256"};
    const char *halves_exact[] = {"N=2", "V=4194304"}, *pc_exact[] = {"K=4096"};
    const fu_dtype dts[2] = {FU_F32, FU_BF16};
    const char *ri_odd[] = {"C=1000"}, *ri_wide[] = {"C=4096"};
    for (int d = 0; d < 2; d++) {
        run_case(rt, data, "softcap_cross_entropy.fusion", small, 2, dts[d], false);
        run_case(rt, data, "softcap_cross_entropy.fusion", wide, 2, dts[d], false);
        run_case(rt, data, "pointwise_math.fusion", pm, 1, dts[d], true);
        run_case(rt, data, "wide_lanes.fusion", wl, 2, dts[d], false);
        run_case(rt, data, "wide_lanes.fusion", wl_odd, 2, dts[d], false);
        run_case(rt, data, "digit_runs.fusion", NULL, 0, dts[d], false);
        run_case(rt, data, "digit_runs.fusion", odd_rows, 1, dts[d], false);
        /* more rows than warps: each warp's next row loaded during this one (f32); 1-3 rows a warp */
        run_case(rt, data, "warp_rows_prefetch.fusion", NULL, 0, dts[d], false);
        run_case(rt, data, "warp_rows_prefetch.fusion", wrp_wide, 2, dts[d], false);
        run_case(rt, data, "warp_rows_prefetch.fusion", wrp_many, 1, dts[d], false);
        run_case(rt, data, "row_inputs_ahead.fusion", NULL, 0, dts[d], false);
        run_case(rt, data, "row_invariant.fusion", NULL, 0, dts[d], false);
        run_case(rt, data, "row_invariant.fusion", ri_odd, 1, dts[d], false);
        run_case(rt, data, "row_invariant.fusion", ri_wide, 1, dts[d], false);
        run_case(rt, data, "softmax_backward.fusion", NULL, 0, dts[d], false);
        run_case(rt, data, "softmax_backward.fusion", sb_mid, 1, dts[d], false);
        run_case(rt, data, "softmax_backward.fusion", sb_narrow, 1, dts[d], false);
        run_case(rt, data, "softcap_softmax_rows.fusion", NULL, 0, dts[d], false);
        run_case(rt, data, "softcap_softmax_rows.fusion", halves_exact, 2, dts[d], false);
        run_case(rt, data, "position_compare.fusion", NULL, 0, dts[d], false);
        run_case(rt, data, "position_compare.fusion", pc_exact, 1, dts[d], false);
    }
    const char *few[] = {"N=8192", "C=1024"}, *many[] = {"N=64", "C=65536"}, *odd[] = {"N=1000", "C=24"};
    const char *bg[] = {"B=4", "T=512", "C=1024"}, *bg_odd[] = {"B=3", "T=5", "C=100"};
    const char *mm_sets[][3] = {{"B=4", "T=2048", "D=256"}, {"B=3", "T=13", "D=100"}, {"B=64", "T=40", "D=64"}};
    for (int d = 0; d < 2; d++) {
        run_case(rt, data, "column_reductions.fusion", few, 2, dts[d], false);
        run_case(rt, data, "column_reductions.fusion", many, 2, dts[d], false);
        run_case(rt, data, "column_reductions.fusion", odd, 2, dts[d], false);
        run_case(rt, data, "bias_grad.fusion", bg, 3, dts[d], false);
        run_case(rt, data, "bias_grad.fusion", bg_odd, 3, dts[d], false);
        /* an outer reduction of a mask broadcast along the columns beside the states' sum: with
         * row splits, without, and odd sizes (rows of 13, 100 columns a batch) */
        for (int k = 0; k < 3; k++) run_case(rt, data, "masked_mean_pool.fusion", mm_sets[k], 3, dts[d], false);
    }
    /* normalizations over a non-innermost axis (outer_norm): the tile in shared memory (64-byte
     * rows of 4 f32 or bf16 lanes; rows of scalar lanes at an odd C), and read again (8200 rows:
     * the tile does not fit); 8 rows in blocks of 8 x 8 threads; also as the row scheduler plans
     * them by default */
    const char *on_sets[][3] = {{"B=4", "R=301", "C=1100"}, {"B=3", "R=257", "C=1001"}, {"B=2", "R=8200", "C=1056"},
                                {"B=2", "R=8", "C=4096"}};
    for (int d = 0; d < 2; d++)
        for (size_t k = 0; k < sizeof on_sets / sizeof on_sets[0]; k++) {
            run_case_with(rt, data, "outer_norm.fusion", on_sets[k], 3, dts[d], false, RC_OUTER_NORM);
            if (k == 0) run_case(rt, data, "outer_norm.fusion", on_sets[k], 3, dts[d], false);
        }
    for (int d = 0; d < 2; d++) run_case_with(rt, data, "outer_norm_mixed.fusion", NULL, 0, dts[d], false, RC_OUTER_NORM);
    /* pointwise reads across the output's innermost axis (fu_plan_options.transpose): whole and
     * partial tiles, a batch of 1, a read both ways, a bool and an f32 input beside DT; the
     * same values as the pointwise kernel's, element by element (no op rounds differently) */
    const char *tr_sets[][3] = {{"B=4", "M=1024", "N=2048"}, {"B=1", "M=77", "N=1000"}, {"B=64", "M=77", "N=1000"},
                                {"B=3", "M=33", "N=16"}};
    const char *tb_sets[][1] = {{"N=2080"}, {"N=1000"}, {"N=17"}};
    for (int d = 0; d < 2; d++) {
        for (int k = 0; k < 4; k++) run_case_with(rt, data, "transpose.fusion", tr_sets[k], 3, dts[d], true, RC_TRANSPOSE);
        for (int k = 0; k < 3; k++) run_case_with(rt, data, "transpose_both.fusion", tb_sets[k], 1, dts[d], true, RC_TRANSPOSE);
    }
    /* a QK norm whose output permutes the rows' full-size values (the heads before the tokens):
     * stored by the row kernel at the permuted offsets, in vectors (rows of 128, 100 and 64; a
     * batch of 1), or a lane each where the rows are aligned one by one (999) */
    const char *qk_sets[][4] = {{"B=2", "T=64", "H=4", "D=128"}, {"B=1", "T=77", "H=5", "D=100"},
                                {"B=3", "T=9", "H=16", "D=64"}, {"B=2", "T=9", "H=3", "D=999"}};
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 4; k++) run_case(rt, data, "qk_norm.fusion", qk_sets[k], 4, dts[d], false);
    /* a group norm whose affine, after the view back to [N, C, H, W], is computed in the grouped
     * shape (its weight read per group and channel): rows of 4 x 40 x 30 and of 8 x 7 x 5 */
    const char *gn_sets[][5] = {{"N=3", "C=12", "G=3", "H=40", "W=30"}, {"N=2", "C=64", "G=8", "H=7", "W=5"}};
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 2; k++) run_case(rt, data, "group_norm.fusion", gn_sets[k], 5, dts[d], false);
    /* a layer norm over a view of its input, the input kept between passes as the suite's */
    const char *lv_sets[][3] = {{"B=2", "T=300", "D=1024"}, {"B=3", "T=5", "D=300"}};
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 2; k++) run_case(rt, data, "layer_norm_view.fusion", lv_sets[k], 3, dts[d], false);
    /* bf16 sums read by f32 ops, held to the f32 tolerance: each sum rounded to bf16 first */
    run_case(rt, data, "bf16_sums.fusion", NULL, 0, FU_F32, false);
    run_case(rt, data, "bf16_column_sum.fusion", NULL, 0, FU_F32, false);
    const char *nb_sets[][2] = {{"N=2048", "C=1024"}, {"N=1000", "C=100"}, {"N=8", "C=4096"}, {"N=300", "C=2048"}};
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 4; k++) {
            run_case(rt, data, "layer_norm_backward.fusion", nb_sets[k], 2, dts[d], false);
            run_case(rt, data, "rms_norm_backward.fusion", nb_sets[k], 2, dts[d], false);
        }
    /* Rows shorter than a warp on L lanes each (SHORT_ROW_LANES): 1, 2, 4 and 8 lanes, vec 1, 2
     * and 4; at N = 65539 the rows overfill the GPU and a lane takes up to 4 vectors
     * (SHORT_ROW_ITERS; C = 17: 8 lanes of 3, the last ragged); odd N leaves the last warp ragged. */
    const char *sr[][2] = {{"N=4099", "C=1"}, {"N=4099", "C=2"}, {"N=4099", "C=3"}, {"N=4099", "C=5"},
                           {"N=4099", "C=8"}, {"N=4099", "C=17"}, {"N=4099", "C=33"}, {"N=3", "C=5"},
                           {"N=65539", "C=5"}, {"N=65539", "C=17"}, {"N=65539", "C=24"}};
    for (int d = 0; d < 2; d++)
        for (size_t k = 0; k < sizeof sr / sizeof sr[0]; k++) run_case(rt, data, "short_rows.fusion", sr[k], 2, dts[d], false);
    /* Log-sum-exps over bounded values with a constant shift (LSE_CONST_SHIFT), one lane a
     * vector's exp on the FMA pipe (POLY_EXP_LANES) where vec >= 4: short rows on lanes, a
     * block a row (vec 4 and 8), an odd row (vec 1), rows split over a cluster. */
    const char *bl[][2] = {{"N=4099", "C=5"}, {"N=4099", "C=3"}, {"N=517", "C=1000"},
                           {"N=64", "C=4099"}, {"N=16", "C=32768"}, {"N=3", "C=100000"}};
    for (int d = 0; d < 2; d++)
        for (size_t k = 0; k < sizeof bl / sizeof bl[0]; k++) run_case(rt, data, "bounded_lse.fusion", bl[k], 2, dts[d], false);
    /* The row scheduler's layouts (docs/perf.md v17), on the suites' fusions: rows split over
     * a thread-block cluster (cross entropy fwd+bwd, f32 at V = 65536: 2 blocks a row, at
     * 256000: 8; bf16 at 256000: 4; at V = 128257 more rows than clusters, so that where an SM
     * moves many memory bytes a clock, an H200, each cluster block's next row part is loaded
     * during this row's pass 2, ROW_PREFETCH_CLUSTER_*), a warp a row (layer norm at 768
     * columns; the cross entropy forward at V = 4096, whose mean is a grid reduction over the
     * warps' rows), and both of softmax backward's inputs kept in shared memory (4096 columns). */
    const char *suites = getenv("FUSER_SUITES_DIR");
    CHECK(suites != NULL);
    const char *cl2[] = {"N=24", "V=65536"}, *cl8[] = {"N=9", "V=256000"}, *ln[] = {"N=4096", "D=768"};
    const char *ce_warp[] = {"N=4096", "V=4096"}, *sm[] = {"N=600", "D=4096"};
    const char *ragged[] = {"N=5", "V=100004"}; /* f32: 4 parts of 25004, the last one 24992 */
    const char *cl_rows[] = {"N=150", "V=128257"}; /* f32 4 blocks a row, bf16 2; rows left over */
    for (int d = 0; suites && d < 2; d++) {
        run_case(rt, suites, "cross_entropy/cross_entropy_fwdbwd.fusion", cl2, 2, dts[d], false);
        run_case(rt, suites, "cross_entropy/cross_entropy_fwdbwd.fusion", cl8, 2, dts[d], false);
        run_case(rt, suites, "cross_entropy/cross_entropy_bwd.fusion", cl8, 2, dts[d], false);
        run_case(rt, suites, "layer_norm/layer_norm_fwd.fusion", ln, 2, dts[d], false);
        run_case(rt, suites, "cross_entropy/cross_entropy_fwd.fusion", ce_warp, 2, dts[d], false);
        run_case(rt, suites, "softmax/softmax_bwd.fusion", sm, 2, dts[d], false);
        run_case(rt, suites, "cross_entropy/cross_entropy_fwdbwd.fusion", ragged, 2, dts[d], false);
        run_case(rt, suites, "cross_entropy/cross_entropy_fwdbwd.fusion", cl_rows, 2, dts[d], false);
    }
    /* Rows whose length is no multiple of the vector (ALIGNED_ROWS): each row's vectors from
     * its first aligned element, its edges element by element; the rows start at every residue
     * of the vector. A block a row (the cross entropy forward at the odd vocabulary, its mean a
     * grid reduction), rows from the queue kept in shared memory (cross entropy backward, the
     * masked softmax's bool row in 4-byte slots), in registers (softmax backward at 4097), a warp
     * a row (softmax at 257 columns), split over a cluster (fwd+bwd at V = 65537: f32 4 blocks,
     * bf16 2; bwd at 256001: f32 8, bf16 4), the edges holding the target's logit (V = 1031). */
    const char *ce_odd[] = {"N=67", "V=50257"}, *ce_queue[] = {"N=300", "V=50257"}, *msk[] = {"N=300"};
    const char *sm_reg[] = {"N=600", "D=4097"}, *sm_warp[] = {"N=16384", "D=257"}, *cl_odd[] = {"N=24", "V=65537"};
    const char *cl8_odd[] = {"N=9", "V=256001"}, *ce_small[] = {"N=515", "V=1031"};
    for (int d = 0; suites && d < 2; d++) {
        run_case(rt, suites, "cross_entropy/cross_entropy_fwd.fusion", ce_odd, 2, dts[d], false);
        run_case(rt, suites, "cross_entropy/cross_entropy_bwd.fusion", ce_queue, 2, dts[d], false);
        run_case(rt, data, "masked_softmax.fusion", msk, 1, dts[d], false);
        run_case(rt, suites, "softmax/softmax_bwd.fusion", sm_reg, 2, dts[d], false);
        run_case(rt, suites, "softmax/softmax_fwd.fusion", sm_warp, 2, dts[d], false);
        run_case(rt, suites, "cross_entropy/cross_entropy_fwdbwd.fusion", cl_odd, 2, dts[d], false);
        run_case(rt, suites, "cross_entropy/cross_entropy_bwd.fusion", cl8_odd, 2, dts[d], false);
        run_case(rt, suites, "cross_entropy/cross_entropy_fwdbwd.fusion", ce_small, 2, dts[d], false);
    }
    const bits_rule div_rule = {"bf16_div.fusion", fill_div, describe_div, 0};
    const bits_rule sqrt_rule = {"bf16_sqrt.fusion", fill_every_bf16, describe_sqrt, 0};
    const bits_rule tanh_rule = {"bf16_tanh.fusion", fill_every_bf16, describe_tanh, 1};
    run_bits_rule(rt, data, &div_rule);
    run_bits_rule(rt, data, &sqrt_rule);
    run_bits_rule(rt, data, &tanh_rule);
    for (int d = 0; timing && d < 2; d++) time_case(rt, data, dts[d]);
    fu_runtime_close(rt);
    return check_finish("test_reduce_gpu");
}
