/*
 * test_gpu_fuser.c -- the fuser's kernels on a GPU against the CPU
 * interpreter: every seed workload (suites/, moderate sizes and a few at
 * their default sizes, f32 and bf16) and the C-API variants and multi-kernel
 * fusions of fuser_cases.h, plus odd shapes (vocabulary 50257, one row, a
 * hidden size of 100, ignored targets, repeated and padding ids), on random
 * inputs from several seeds.
 *
 *   max|gpu - cpu| / max|cpu| <= 1e-5 for f32 outputs, 1e-2 for bf16 (the
 *   interpreter's output is rounded to bf16 too); integer outputs exact;
 *   the deterministic embedding backward is bit-identical over 3 runs;
 *   an out-of-range index gives FU_ERR_INDEX naming the op, and no outputs.
 *
 * Without a GPU: prints "test_gpu_fuser: skipped: no GPU (...)" and exits 77.
 * One line per case: name, kernels, max error, PASS/FAIL.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "exec.h"
#include "fuser_cases.h"
#include "gpu_test.h"
#include "runtime.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void free_tensors(fu_host_tensor *t, int n)
{
    for (int i = 0; i < n; i++) fu_host_tensor_free(&t[i]);
}

static int64_t input_elements(const fu_fusion *f)
{
    int64_t n = 0;
    for (int i = 0; i < fu_fusion_num_inputs(f); i++) n += fu_tensor_numel(f, fu_fusion_input(f, i));
    return n;
}

/* Sets every k-th entry (from `first`) of the named input to v. */
static void plant(const fu_fusion *f, fu_host_tensor *in, const char *name, int64_t first, int64_t every, double v)
{
    if (!name) return;
    for (int i = 0; i < fu_fusion_num_inputs(f); i++) {
        if (strcmp(fu_tensor_name(f, fu_fusion_input(f, i)), name) != 0) continue;
        int64_t n = fu_host_tensor_numel(&in[i]);
        for (int64_t k = first; k < n; k += every) fu_host_tensor_set(&in[i], k, v);
    }
}

/* Fills the named index input uniformly in [0, range) when
 * fu_fusion_index_bound cannot trace it (fu_random_inputs then gives [0, 10)). */
static void refill(const fu_fusion *f, fu_host_tensor *in, const char *name, int64_t range, uint64_t seed)
{
    if (!name || range <= 0) return;
    for (int i = 0; i < fu_fusion_num_inputs(f); i++) {
        fu_tensor t = fu_fusion_input(f, i);
        if (strcmp(fu_tensor_name(f, t), name) != 0 || fu_fusion_index_bound(f, t) > 0) continue;
        uint64_t z = seed * 0x9e3779b97f4a7c15ull + 12345;
        for (int64_t k = 0; k < fu_host_tensor_numel(&in[i]); k++) {
            z += 0x9e3779b97f4a7c15ull; /* splitmix64 */
            uint64_t r = z;
            r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ull;
            r = (r ^ (r >> 27)) * 0x94d049bb133111ebull;
            r ^= r >> 31;
            fu_host_tensor_set(&in[i], k, (double)(r % (uint64_t)range));
        }
    }
}

/* max|a - b| / max|b| (fu_host_max_rel_error) */
static double compare(const fu_host_tensor *a, const fu_host_tensor *b) { return fu_host_max_rel_error(a, b); }

static double tolerance(fu_dtype dt)
{
    switch (dt) {
    case FU_F32: return 1e-5;
    case FU_F64: return 1e-12;
    case FU_BF16: return 1e-2;
    case FU_F16: return 2e-3;
    default: return 0; /* integers and bool: exact */
    }
}

static void run_case(fu_runtime *rt, const tc_case *c)
{
    const fu_fusion *f = c->f;
    int nin = fu_fusion_num_inputs(f), nout = fu_fusion_num_outputs(f);
    int before = check_failures;
    double t0 = now_s(), worst = 0;
    fu_plan_options po;
    fu_plan_options_for_device(rt, &po);
    po.scatter = c->scatter;
    int nkernels = -1;
    fu_error err = {0};
    fu_plan *plan = NULL;
    if (fu_plan_build(f, &po, &plan, &err) == FU_OK) {
        nkernels = plan->nkernels;
        CHECK(tc_plan_ok(c, plan));
        fu_plan_free(plan);
    } else {
        CHECK(!"fu_plan_build");
        fprintf(stderr, "%s: fu_plan_build: %s\n", c->name, err.message);
    }
    int64_t elems = input_elements(f);
    int nseeds = elems < 2000000 ? 3 : elems < 20000000 ? 2 : 1; /* the interpreter is the slow part */
    fu_host_tensor *in = calloc((size_t)nin + 1, sizeof *in);
    fu_host_tensor *gpu = calloc((size_t)nout + 1, sizeof *gpu);
    fu_host_tensor *cpu = calloc((size_t)nout + 1, sizeof *cpu);
    fu_host_tensor *again = calloc((size_t)nout + 1, sizeof *again);
    for (int seed = 1; seed <= nseeds && nkernels > 0; seed++) {
        if (fu_random_inputs(f, (uint64_t)seed, in, &err) != FU_OK) {
            CHECK(!"fu_random_inputs");
            fprintf(stderr, "%s: %s\n", c->name, err.message);
            break;
        }
        refill(f, in, c->ignore_input, c->index_range, (uint64_t)seed);
        plant(f, in, c->ignore_input, 3, 7, (double)c->ignore_value);
        plant(f, in, c->pad_input, 2, 5, (double)c->pad_value);
        fu_status s = fu_exec_run_host(rt, f, &po, in, gpu, &err);
        CHECK(s == FU_OK);
        if (s != FU_OK) fprintf(stderr, "%s seed %d: GPU: %s\n", c->name, seed, err.message);
        fu_status r = fu_interp_run(f, in, cpu, &err);
        CHECK(r == FU_OK);
        if (r != FU_OK) fprintf(stderr, "%s seed %d: interpreter: %s\n", c->name, seed, err.message);
        if (s == FU_OK && r == FU_OK) {
            for (int i = 0; i < nout; i++) {
                double e = compare(&gpu[i], &cpu[i]);
                double tol = tolerance(cpu[i].dtype);
                if (e > worst || isnan(e)) worst = e;
                CHECK(e <= tol);
                if (!(e <= tol))
                    fprintf(stderr, "%s seed %d: output '%s' (%s): error %.3g > %.3g\n", c->name, seed,
                            fu_tensor_name(f, fu_fusion_output(f, i)), fu_dtype_name(cpu[i].dtype), e, tol);
            }
            /* deterministic scatter: the same bits twice more */
            for (int rep = 0; c->deterministic && seed == 1 && rep < 2; rep++) {
                fu_status s2 = fu_exec_run_host(rt, f, &po, in, again, &err);
                CHECK(s2 == FU_OK);
                for (int i = 0; s2 == FU_OK && i < nout; i++) {
                    bool same = fu_host_tensor_bytes(&again[i]) == fu_host_tensor_bytes(&gpu[i]) &&
                                memcmp(again[i].data, gpu[i].data, fu_host_tensor_bytes(&gpu[i])) == 0;
                    CHECK(same);
                    if (!same) fprintf(stderr, "%s: run %d is not bit-identical to run 1\n", c->name, rep + 2);
                }
                if (s2 == FU_OK) free_tensors(again, nout);
            }
        }
        if (s == FU_OK) free_tensors(gpu, nout);
        if (r == FU_OK) free_tensors(cpu, nout);
        free_tensors(in, nin);
    }
    free(in);
    free(gpu);
    free(cpu);
    free(again);
    printf("%-48s kernels=%d  seeds=%d  max_error=%-9.3g %6.2f s  %s\n", c->name, nkernels, nseeds, worst,
           now_s() - t0, check_failures == before ? "PASS" : "FAIL");
    fflush(stdout);
}

static size_t tensor_bytes(const fu_fusion *f, fu_tensor t)
{
    size_t n = (size_t)fu_tensor_numel(f, t) * fu_dtype_size(fu_tensor_dtype(f, t));
    return n ? n : 1;
}

/* One executable launched `launches` times, new inputs and poisoned outputs
 * each time, every result against the interpreter: what a kernel keeps in its
 * workspace between launches (the finished-blocks counter, the row queue, the
 * scatter's counters) must be back at zero, or a later launch computes
 * nothing or garbage. */
static void relaunch_case(fu_runtime *rt, const tc_case *c, int launches)
{
    const fu_fusion *f = c->f;
    int nin = fu_fusion_num_inputs(f), nout = fu_fusion_num_outputs(f);
    int before = check_failures;
    double worst = 0;
    fu_plan_options po;
    fu_plan_options_for_device(rt, &po);
    po.scatter = c->scatter;
    CHECK(nin <= 16 && nout <= 16);
    if (nin > 16 || nout > 16) return;
    fu_error err = {0};
    fu_plan *plan = NULL;
    fu_executable *x = NULL;
    fu_status s = fu_plan_build(f, &po, &plan, &err);
    if (!s) s = fu_exec_prepare(rt, plan, &x, &err);
    fu_devptr din[16] = {0}, dout[16] = {0};
    for (int i = 0; !s && i < nin; i++) s = fu_device_alloc(rt, tensor_bytes(f, fu_fusion_input(f, i)), &din[i], &err);
    for (int i = 0; !s && i < nout; i++) s = fu_device_alloc(rt, tensor_bytes(f, fu_fusion_output(f, i)), &dout[i], &err);
    fu_host_tensor in[16], gpu[16], cpu[16];
    for (int launch = 1; !s && launch <= launches; launch++) {
        uint64_t seed = 100 + (uint64_t)launch;
        s = fu_random_inputs(f, seed, in, &err);
        if (s) break;
        refill(f, in, c->ignore_input, c->index_range, seed);
        plant(f, in, c->ignore_input, (int64_t)launch, 7, (double)c->ignore_value);
        for (int i = 0; !s && i < nin; i++)
            if (fu_host_tensor_bytes(&in[i])) s = fu_device_upload(rt, din[i], in[i].data, fu_host_tensor_bytes(&in[i]), &err);
        for (int i = 0; !s && i < nout; i++) s = fu_device_memset8(rt, dout[i], 0xff, tensor_bytes(f, fu_fusion_output(f, i)), &err);
        if (!s) s = fu_exec_launch(x, din, dout, &err);
        if (!s) s = fu_runtime_synchronize(rt, &err);
        if (!s) s = fu_exec_check(x, &err);
        fu_status r = s ? s : fu_interp_run(f, in, cpu, &err);
        for (int i = 0; !s && !r && i < nout; i++) {
            fu_tensor t = fu_fusion_output(f, i);
            if (fu_host_tensor_alloc(&gpu[i], fu_tensor_dtype(f, t), fu_tensor_rank(f, t), fu_tensor_shape(f, t), &err)) {
                CHECK(!"fu_host_tensor_alloc");
                continue;
            }
            if (fu_host_tensor_bytes(&gpu[i])) CHECK(fu_device_download(rt, gpu[i].data, dout[i], fu_host_tensor_bytes(&gpu[i]), &err) == FU_OK);
            double e = compare(&gpu[i], &cpu[i]);
            if (e > worst || isnan(e)) worst = e;
            CHECK(e <= tolerance(cpu[i].dtype));
            if (!(e <= tolerance(cpu[i].dtype)))
                fprintf(stderr, "%s launch %d: output '%s': error %.3g\n", c->name, launch, fu_tensor_name(f, t), e);
            fu_host_tensor_free(&gpu[i]);
        }
        if (!s && !r) free_tensors(cpu, nout);
        CHECK(r == FU_OK);
        free_tensors(in, nin);
    }
    if (s) fprintf(stderr, "%s: %s\n", c->name, err.message);
    CHECK(s == FU_OK);
    for (int i = 0; i < nin; i++)
        if (din[i]) fu_device_free(rt, din[i], NULL);
    for (int i = 0; i < nout; i++)
        if (dout[i]) fu_device_free(rt, dout[i], NULL);
    fu_exec_free(x);
    fu_plan_free(plan);
    printf("relaunch/%-39s launches=%d  max_error=%-9.3g %s\n", c->name, launches, worst,
           check_failures == before ? "PASS" : "FAIL");
    fflush(stdout);
}

/* An out-of-range index: FU_ERR_INDEX naming the op, no outputs; the
 * interpreter agrees that it is an index error. */
static void index_error_case(fu_runtime *rt, const char *name, fu_fusion *f, fu_scatter_mode scatter,
                             const char *input, int64_t pos, int64_t value)
{
    int before = check_failures;
    fu_error err = {0};
    CHECK(fu_fusion_verify(f, &err) == FU_OK);
    int nin = fu_fusion_num_inputs(f), nout = fu_fusion_num_outputs(f);
    fu_host_tensor in[4], out[4];
    memset(out, 0, sizeof out);
    CHECK(fu_random_inputs(f, 7, in, &err) == FU_OK);
    plant(f, in, input, pos, 1 << 30, (double)value);
    fu_plan_options po;
    fu_plan_options_for_device(rt, &po);
    po.scatter = scatter;
    fu_status s = fu_exec_run_host(rt, f, &po, in, out, &err);
    CHECK(s == FU_ERR_INDEX);
    if (s == FU_ERR_INDEX) {
        CHECK_CONTAINS(err.message, "op '");
        CHECK_CONTAINS(err.message, "out of range");
        char v[64];
        snprintf(v, sizeof v, "index %lld (from '", (long long)value);
        CHECK_CONTAINS(err.message, v);
        snprintf(v, sizeof v, "at position %lld)", (long long)pos); /* in the index tensor */
        CHECK_CONTAINS(err.message, v);
    } else {
        fprintf(stderr, "%s: got %s: %s\n", name, fu_status_name(s), err.message);
    }
    if (s == FU_OK) free_tensors(out, nout);
    else
        for (int i = 0; i < nout; i++) CHECK(out[i].data == NULL);
    fu_error ierr;
    fu_status r = fu_interp_run(f, in, out, &ierr);
    CHECK(r == FU_ERR_INDEX);
    if (r == FU_OK) free_tensors(out, nout);
    free_tensors(in, nin);
    printf("%-48s FU_ERR_INDEX: %s  %s\n", name, s == FU_ERR_INDEX ? err.message : fu_status_name(s),
           check_failures == before ? "PASS" : "FAIL");
    fu_fusion_free(f);
}

int main(void)
{
    const char *suites = getenv("FUSER_SUITES_DIR");
    if (!suites) {
        fprintf(stderr, "test_gpu_fuser: FUSER_SUITES_DIR must be set\n");
        return 1;
    }
    fu_runtime *rt = NULL;
    int skip = gpu_test_open("test_gpu_fuser", NULL, &rt);
    if (skip) return skip;
    printf("%s\n", fu_runtime_describe(rt));
    double t0 = now_s();

    tc_list l = {0};
    const fu_dtype dts[2] = {FU_F32, FU_BF16};
    /* the seed workloads at moderate sizes (odd ones: V not a multiple of 8, D = 100) */
    const char *mid[] = {"N=512", "V=8191", "D=100", "T=1000", "B=2", "C=384", "H=3"};
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < TC_NSUITES; i++) tc_add_suite(&l, suites, tc_suite_files[i], "mid", mid, 7, dts[d], NULL);
    /* default sizes: the cheap-to-check ones, and the cross entropy forward in f32 */
    tc_add_suite(&l, suites, "cross_entropy/cross_entropy_fwd.fusion", "default", NULL, 0, FU_F32, NULL);
    const char *ce_mid[] = {"N=1024"};
    tc_add_suite(&l, suites, "cross_entropy/cross_entropy_fwdbwd.fusion", "n1024", ce_mid, 1, FU_F32, NULL);
    tc_add_suite(&l, suites, "cross_entropy/cross_entropy_fwdbwd.fusion", "n1024", ce_mid, 1, FU_BF16, NULL);
    for (int d = 0; d < 2; d++) {
        tc_add_suite(&l, suites, "embedding/embedding_fwd.fusion", "default", NULL, 0, dts[d], NULL);
        tc_case *c = tc_add_suite(&l, suites, "embedding/embedding_bwd.fusion", "default", NULL, 0, dts[d], NULL);
        if (c) c->deterministic = true;
        c = tc_add_suite(&l, suites, "embedding/embedding_bwd.fusion", "default_atomic", NULL, 0, dts[d], NULL);
        if (c) c->scatter = FU_SCATTER_ATOMIC, c->want_zero_before = true, c->want_kernels = dts[d] == FU_BF16 ? 2 : 1;
        tc_add_suite(&l, suites, "qkv_split/qkv_split.fusion", "default", NULL, 0, dts[d], NULL);
    }
    tc_add_suite(&l, suites, "qkv_split/seed_repro.fusion", "default", NULL, 0, FU_F32, NULL);
    /* a QKV split big enough for a domain per output (more than one wave) */
    const char *qkv_split[] = {"B=16", "T=1024", "C=768", "H=12"};
    for (int d = 0; d < 2; d++) tc_add_suite(&l, suites, "qkv_split/qkv_split.fusion", "split", qkv_split, 4, dts[d], NULL);
    /* the C-API variants and multi-kernel fusions */
    tc_sizes z = {.ce_n = 300, .ce_v = 5003, .emb_v = 1000, .emb_d = 256, .emb_t = 2048,
                  .qkv_b = 2, .qkv_t = 64, .qkv_c = 512, .multi_n = 200, .multi_v = 1000};
    for (int d = 0; d < 2; d++) tc_add_api_cases(&l, &z, dts[d]);
    CHECK(l.errors == 0);

    for (int i = 0; i < l.n; i++) run_case(rt, &l.v[i]);
    /* state kept between launches: the row queue and grid counters, the scatter's */
    for (int i = 0; i < l.n; i++)
        if (strstr(l.v[i].name, "/n1024/") || !strncmp(l.v[i].name, "embedding_bwd/default/", 22))
            relaunch_case(rt, &l.v[i], 3);

    /* out-of-range indices */
    const fu_scatter_mode det = FU_SCATTER_DETERMINISTIC, atomic = FU_SCATTER_ATOMIC;
    index_error_case(rt, "index_error/ce_fwd_target40000",
                     tc_ce(FU_F32, 16, 32768, FU_REDUCTION_MEAN, -100, 0.0, true, false), det, "target", 5, 40000);
    index_error_case(rt, "index_error/ce_fwdbwd_target-5",
                     tc_ce(FU_F32, 16, 32768, FU_REDUCTION_MEAN, -100, 0.0, true, true), det, "target", 9, -5);
    index_error_case(rt, "index_error/ce_bwd_none_target40000",
                     tc_ce(FU_BF16, 16, 32768, FU_REDUCTION_NONE, -100, 0.0, false, true), det, "target", 0, 40000);
    index_error_case(rt, "index_error/embedding_fwd_id_V", tc_embedding(FU_F32, 1000, 64, 300, -1), det, "ids", 17,
                     1000);
    index_error_case(rt, "index_error/embedding_fwd_id-1", tc_embedding(FU_F32, 1000, 64, 300, -1), det, "ids", 299,
                     -1);
    index_error_case(rt, "index_error/embedding_bwd_id_V", tc_embedding_bwd(FU_F32, 1000, 64, 300, -1), det, "ids", 17,
                     1000);
    index_error_case(rt, "index_error/embedding_bwd_id_V_pad", tc_embedding_bwd(FU_F32, 1000, 64, 300, 0), det, "ids",
                     0, 1000);
    index_error_case(rt, "index_error/embedding_bwd_atomic_id_V", tc_embedding_bwd(FU_F32, 1000, 64, 300, -1), atomic,
                     "ids", 17, 1000);
    index_error_case(rt, "index_error/embedding_bwd_atomic_bf16_id-3", tc_embedding_bwd(FU_BF16, 1000, 64, 300, -1),
                     atomic, "ids", 123, -3);
    /* the runtime is still usable after index errors */
    tc_list after = {0};
    tc_push(&after, tc_ce(FU_F32, 16, 32768, FU_REDUCTION_MEAN, -100, 0.0, true, false), "after_index_errors/ce_fwd",
            1);
    for (int i = 0; i < after.n; i++) run_case(rt, &after.v[i]);
    tc_list_free(&after);

    fu_runtime_stats st;
    fu_runtime_get_stats(rt, &st);
    printf("%d cases in %.1f s; nvrtc_calls=%lld cache_hits=%lld compile_ms=%.0f launches=%lld peak=%lld MiB\n",
           l.n, now_s() - t0, (long long)st.nvrtc_calls, (long long)st.cache_hits, st.compile_ms,
           (long long)st.launches, (long long)(st.device_bytes_peak >> 20));
    CHECK(st.device_bytes_live == 0);
    tc_list_free(&l);
    fu_runtime_close(rt);
    return check_finish("test_gpu_fuser");
}
