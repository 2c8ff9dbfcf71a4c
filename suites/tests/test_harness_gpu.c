/*
 * test_harness_gpu.c -- the harness on a GPU:
 *   1. every seed fusion under suites/ (default sizes): the kernels, memsets
 *      and copies CUPTI records for one call equal what the fuser planned;
 *   2. a known copy kernel (NVRTC, 1 GiB): CUPTI's kernel time agrees with
 *      CUDA-event time within 5%;
 *   3. the copy bandwidth is measured and plausible;
 *   4. the runner through Google Benchmark: a right case is timed (samples,
 *      counters, aggregates); a wrong result (a variant that overwrites an
 *      output) fails its case, which is never timed; a case checked on a row
 *      slice then run at full size is timed; every timed case has its floor
 *      (a copy of its bytes, timed the same way) and its fraction of it;
 *   5. the floor of a large case is a copy at about the copy bandwidth, and
 *      a small case's floor takes longer than its bytes at that bandwidth;
 *   6. outputs that are an input's bytes are views of it: a case with a reshaped
 *      input, a negation and an input itself launches one kernel and no copy,
 *      and a case of views alone launches nothing; both match the interpreter.
 * Without a GPU: prints "test_harness_gpu: skipped: no GPU (...)" and exits 77.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fuser_exec.h"
#include "gpu_test.h"
#include "suite.h"

typedef struct io_ctx {
    const hb_variant *v;
    void *state;
    fu_devptr *in, *out;
} io_ctx;

static fu_status call_variant(void *p, fu_error *err)
{
    io_ctx *c = p;
    return c->v->run(c->state, c->in, c->out, err);
}

static size_t tbytes(const fu_fusion *f, fu_tensor t)
{
    size_t n = (size_t)fu_tensor_numel(f, t) * fu_dtype_size(fu_tensor_dtype(f, t));
    return n ? n : 1;
}

/* ------------------------------------------------------------ 1. seeds */

typedef struct seed {
    const char *file;
    const char *dt;              /* NULL: the file's default */
    fu_scatter_mode scatter;
} seed;

/* What a seed leaves loaded until the end of the test: CUPTI names a kernel
 * through a cache that a module unloaded and another loaded in its place can
 * leave stale (seen: a kernel reported under the name of the one before it),
 * so no module is unloaded while records are read. */
typedef struct kept {
    void *state;
    fu_fusion *f;
    fu_program *p;
} kept;

static void test_seed(fu_runtime *rt, hb_cupti *cu, hb_timer *timer, const char *dir, const seed *sd, kept *keep)
{
    fu_error err;
    memset(&err, 0, sizeof err);
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, sd->file);
    fu_program *p = NULL;
    fu_fusion *f = NULL;
    fu_param_value ov[1] = {{"DT", sd->dt}};
    OK(fu_program_parse_file(path, &p, &err));
    if (!p) return;
    OK(fu_program_build(p, ov, sd->dt ? 1 : 0, &f, &err));
    hb_case c = {.name = "seed", .scatter = sd->scatter};
    void *st = NULL;
    hb_variant_info info;
    if (f) OK(hb_variant_fuser.prepare(rt, f, &c, &st, &info, &err));
    if (!st) {
        if (f) fu_fusion_free(f);
        fu_program_free(p);
        return;
    }
    int nin = fu_fusion_num_inputs(f), nout = fu_fusion_num_outputs(f);
    fu_host_tensor *hin = calloc((size_t)nin, sizeof *hin);
    fu_devptr *din = calloc((size_t)nin, sizeof *din), *dout = calloc((size_t)nout, sizeof *dout);
    OK(hb_fast_random_inputs(f, 1, hin, &err));
    for (int i = 0; i < nin; i++) {
        OK(fu_device_alloc(rt, tbytes(f, fu_fusion_input(f, i)), &din[i], &err));
        OK(fu_device_upload(rt, din[i], hin[i].data, fu_host_tensor_bytes(&hin[i]), &err));
        fu_host_tensor_free(&hin[i]);
    }
    for (int i = 0; i < nout; i++) OK(fu_device_alloc(rt, tbytes(f, fu_fusion_output(f, i)), &dout[i], &err));
    io_ctx ctx = {&hb_variant_fuser, st, din, dout};
    hb_call_profile prof;
    OK(hb_profile_call(cu, timer, call_variant, &ctx, 3, &prof, &err));
    OK(hb_variant_fuser.check(st, &err));
    int k = 0, m = 0, cp = 0;
    hb_variant_fuser.launch_counts(st, &k, &m, &cp);
    printf("%-42s %-5s %-13s plan %d kernel%s %d memset %d copy | CUPTI %d kernel%s %d memset %d copy, %.1f us "
           "(%s, %d registers)\n",
           sd->file, sd->dt ? sd->dt : "f32", sd->scatter == FU_SCATTER_ATOMIC ? "atomic" : "", info.kernels,
           info.kernels == 1 ? "" : "s", info.memsets, info.copies, prof.last.kernels,
           prof.last.kernels == 1 ? "" : "s", prof.last.memsets, prof.last.memcpys, prof.kernel_us,
           prof.last.nrecords ? prof.last.records[0].name : "-", prof.last.nrecords ? prof.last.records[0].registers : 0);
    CHECK(prof.recorded && prof.consistent && prof.ncalls == 3);
    CHECK(prof.last.kernels == info.kernels);   /* the CUPTI count equals the plan */
    CHECK(prof.last.memsets == info.memsets);
    CHECK(prof.last.memcpys == info.copies);
    CHECK(prof.last.kernels == k && prof.last.memsets == m && prof.last.memcpys == cp); /* and the launcher's count */
    CHECK(prof.last.dropped == 0);
    CHECK(prof.kernel_us > 0 && isfinite(prof.kernel_us));
    CHECK(prof.last.span_us >= prof.last.kernel_us * 0.999);
    /* each record is the planned kernel: its name, grid and block */
    fu_plan *plan = NULL;
    OK(fu_plan_for_device(f, rt, sd->scatter, &plan, &err));
    for (int i = 0; plan && i < prof.last.nrecords && i < fu_plan_num_kernels(plan); i++) {
        const hb_kernel_record *r = &prof.last.records[i];
        const char *kname = fu_plan_kernel_name(plan, i);
        CHECK(r->registers > 0 && r->us > 0);
        if (strcmp(r->name, kname) != 0) fprintf(stderr, "  CUPTI names '%s', the plan '%s'\n", r->name, kname);
        CHECK(strcmp(r->name, kname) == 0);
        CHECK(r->grid[0] == fu_plan_kernel_grid(plan, i) && r->grid[1] == 1 &&
              r->block[0] == fu_plan_kernel_block(plan, i) && r->block[1] == 1);
    }
    fu_plan_free(plan);
    for (int i = 0; i < nin; i++) fu_device_free(rt, din[i], NULL);
    for (int i = 0; i < nout; i++) fu_device_free(rt, dout[i], NULL);
    free(hin);
    free(din);
    free(dout);
    keep->state = st;
    keep->f = f;
    keep->p = p;
}

/* ------------------------------------------------------------ 2. copy kernel */

static const char *COPY_SOURCE =
    "extern \"C\" __global__ void copy4(const float4 *__restrict__ src, float4 *__restrict__ dst, long long n4)\n"
    "{\n"
    "    long long stride = (long long)gridDim.x * blockDim.x;\n"
    "    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride)\n"
    "        dst[i] = __ldcs(src + i);\n"
    "}\n";

typedef struct copy_ctx {
    fu_runtime *rt;
    fu_kernel *k;
    unsigned grid[3], block[3];
    fu_devptr src, dst;
    long long n4;
} copy_ctx;

static fu_status call_copy(void *p, fu_error *err)
{
    copy_ctx *c = p;
    void *args[3] = {&c->src, &c->dst, &c->n4};
    return fu_runtime_launch(c->rt, c->k, c->grid, c->block, 0, args, err);
}

static void test_copy_kernel(fu_runtime *rt, hb_cupti *cu, hb_timer *timer)
{
    fu_error err;
    memset(&err, 0, sizeof err);
    fu_module *m = NULL;
    OK(fu_runtime_compile(rt, COPY_SOURCE, "harness_copy.cu", NULL, 0, &m, NULL, &err));
    if (!m) return;
    copy_ctx c = {.rt = rt, .n4 = (1ll << 30) / 16};
    OK(fu_module_get_kernel(m, "copy4", &c.k, &err));
    c.grid[0] = (unsigned)fu_runtime_device(rt)->sm_count * 8, c.grid[1] = c.grid[2] = 1;
    c.block[0] = 256, c.block[1] = c.block[2] = 1;
    OK(fu_device_alloc(rt, (size_t)1 << 30, &c.src, &err));
    OK(fu_device_alloc(rt, (size_t)1 << 30, &c.dst, &err));
    if (c.k && c.src && c.dst) {
        OK(fu_device_memset32(rt, c.src, 0x3f800000u, (size_t)1 << 28, &err));
        hb_samples s;
        hb_call_profile prof;
        OK(hb_timer_measure(timer, call_copy, &c, &s, &err));
        OK(hb_profile_call(cu, timer, call_copy, &c, 10, &prof, &err));
        double ev = s.summary.median, kt = prof.kernel_us;
        printf("copy kernel, 1 GiB: events %.2f us (+-%.2f%%, %d samples, %s), CUPTI %.2f us, %.0f GB/s; "
               "difference %.2f%%\n",
               ev, 100 * s.summary.spread, s.n, hb_stop_name(s.stop), kt, 2.0 * (1 << 30) / (ev * 1e-6) / 1e9,
               100 * (ev - kt) / kt);
        CHECK(s.n >= 5 && s.us && ev > 0);
        CHECK(prof.recorded && prof.last.kernels == 1 && prof.last.memsets == 0 && prof.last.memcpys == 0);
        CHECK(prof.last.nrecords == 1 && strcmp(prof.last.records[0].name, "copy4") == 0);
        CHECK(prof.last.records[0].grid[0] == c.grid[0] && prof.last.records[0].block[0] == 256);
        CHECK(fabs(ev - kt) <= 0.05 * kt); /* the harness's kernel time agrees with events within 5% */
        float last;
        OK(fu_device_download(rt, &last, c.dst + ((size_t)1 << 30) - 4, 4, &err));
        CHECK(last == 1.0f); /* the kernel copied */
        hb_samples_free(&s);

        /* Hot mode on a copy that stays in the L2 (16 MiB in, 16 MiB out): the
         * spin kernel ahead of the start event keeps the host's launch
         * latency out; printed, for the record. */
        hb_timing_options ho;
        hb_timing_options_default(&ho);
        ho.mode = HB_MODE_HOT;
        hb_timer *hot = NULL;
        OK(hb_timer_open(rt, NULL, &ho, &hot, &err));
        copy_ctx small = c;
        small.n4 = (16ll << 20) / 16;
        if (hot) {
            OK(hb_timer_measure(hot, call_copy, &small, &s, &err));
            OK(hb_profile_call(cu, hot, call_copy, &small, 10, &prof, &err));
            printf("copy kernel, 16 MiB, hot: events %.2f us (+-%.1f%%, %d samples), CUPTI %.2f us\n",
                   s.summary.median, 100 * s.summary.spread, s.n, prof.kernel_us);
            CHECK(s.n >= 5 && s.summary.median > 0 && prof.kernel_us > 0);
            CHECK(hb_timer_flush_bytes(hot) == 0);
            hb_samples_free(&s);
        }
        hb_timer_close(hot);
    }
    fu_device_free(rt, c.src, NULL);
    fu_device_free(rt, c.dst, NULL);
    fu_module_free(m);
}

/* ------------------------------------------------------------ 4. runner */

/* A variant that computes the fuser's result, then overwrites the first
 * output with 1.0: every element written, the result wrong. */
typedef struct broken_state {
    void *inner;
    fu_runtime *rt;
    size_t out0_bytes;
} broken_state;

static fu_status broken_prepare(fu_runtime *rt, const fu_fusion *f, const hb_case *c, void **state,
                                hb_variant_info *info, fu_error *err)
{
    broken_state *b = calloc(1, sizeof *b);
    b->rt = rt;
    b->out0_bytes = tbytes(f, fu_fusion_output(f, 0));
    fu_status s = hb_variant_fuser.prepare(rt, f, c, &b->inner, info, err);
    if (s) {
        free(b);
        return s;
    }
    *state = b;
    return FU_OK;
}

static fu_status broken_run(void *p, const fu_devptr *in, const fu_devptr *out, fu_error *err)
{
    broken_state *b = p;
    fu_status s = hb_variant_fuser.run(b->inner, in, out, err);
    return s ? s : fu_device_memset32_async(b->rt, out[0], 0x3f800000u, b->out0_bytes / 4, err);
}

static fu_status broken_check(void *p, fu_error *err) { return hb_variant_fuser.check(((broken_state *)p)->inner, err); }

static void broken_free(void *p)
{
    broken_state *b = p;
    hb_variant_fuser.free(b->inner);
    free(b);
}

static const hb_variant broken = {
    .name = "broken", .prepare = broken_prepare, .run = broken_run, .check = broken_check, .free = broken_free};

/* 5. The floor: 2 GiB moved (a 1 GiB copy) runs at about the copy bandwidth
 * (same method, same bytes: a sanity check of the byte accounting, not a
 * performance bound); 64 KiB moved cannot beat its bytes at that bandwidth,
 * since launch and the first wave come on top. */
static void test_floor(fu_runtime *rt, double copy_gbps)
{
    fu_error err;
    memset(&err, 0, sizeof err);
    hb_timing_options o;
    hb_timing_options_default(&o);
    o.stop.time_limit_s = 0.3;
    hb_timer *t = NULL;
    OK(hb_timer_open(rt, NULL, &o, &t, &err));
    if (!t) return;
    hb_samples big, small;
    int64_t big_bytes = (int64_t)2 << 30, small_bytes = 64 << 10;
    OK(hb_floor_measure(t, big_bytes, &big, &err));
    OK(hb_floor_measure(t, small_bytes, &small, &err));
    double big_gbps = (double)big_bytes / (big.summary.median * 1e-6) / 1e9;
    double small_gbps = (double)small_bytes / (small.summary.median * 1e-6) / 1e9;
    printf("floor: %lld bytes %.1f us (%.0f GB/s), %lld bytes %.2f us (%.0f GB/s); copy %.0f GB/s\n",
           (long long)big_bytes, big.summary.median, big_gbps, (long long)small_bytes, small.summary.median,
           small_gbps, copy_gbps);
    CHECK(big.n >= 3 && small.n >= 3);
    CHECK(big_gbps > 0.5 * copy_gbps && big_gbps < 2 * copy_gbps);
    CHECK(small_gbps < copy_gbps);
    hb_samples_free(&big);
    hb_samples_free(&small);
    hb_samples none;
    CHECK(hb_floor_measure(t, 1, &none, &err) == FU_ERR_ARG);
    hb_timer_close(t);
}

/* 6. Outputs that are an input's bytes are returned as views of it (PyTorch
 * returns a view; torch.compile launches nothing for them): no copy is
 * launched. VIEWS_MIXED: an input reshaped, a negation, an input itself (one
 * kernel, one launch); VIEWS_ONLY: an input reshaped and permuted by the
 * identity (no kernel, no launch). */
static const char VIEWS_MIXED[] = "input x: f32[64, 48]\ninput y: f32[1000]\nflat = reshape(x, shape=[3072])\n"
                                  "z = neg(y)\noutput flat\noutput z\noutput y\n";
static const char VIEWS_ONLY[] = "input x: f32[64, 48]\nflat = reshape(x, shape=[3072])\n"
                                 "same = permute(x, dims=[0, 1])\noutput flat\noutput same\n";

static hb_suite *view_suite(const char *name, const char *body)
{
    char path[128], why[1200];
    snprintf(path, sizeof path, "%s.fusion", name);
    FILE *fp = fopen(path, "w");
    CHECK(fp != NULL);
    if (!fp) return NULL;
    fprintf(fp, "fusion %s\n%s", name, body);
    fclose(fp);
    hb_suite *s = NULL;
    CHECK(hb_suite_from_fusion(path, &s, why, sizeof why));
    if (!s) fprintf(stderr, "%s\n", why);
    return s;
}

/* One repetition of a view case: checked against the interpreter, and its
 * launches are the kernels its computed outputs need, nothing for the views. */
static int check_view_entry(const hb_entry *e)
{
    bool mixed = strcmp(e->suite, "test_harness_gpu_views") == 0;
    double kernels = hb_entry_get_counter(e, "kernels"), launches = hb_entry_get_counter(e, "launches");
    CHECK(e->status == HB_STATUS_OK);
    CHECK(kernels == (mixed ? 1 : 0) && launches == kernels);
    CHECK(hb_entry_get_counter(e, "max_rel_error") == 0);
    printf("views: %s %s, %.0f kernel(s), %.0f launch(es), %.2f us\n", e->suite,
           e->status == HB_STATUS_OK ? "ok" : e->error, kernels, launches, e->real_time);
    return 1;
}

static void test_runner(fu_runtime *rt, const char *dir)
{
    fu_error err;
    memset(&err, 0, sizeof err);
    hb_runner_options o;
    hb_runner_options_default(&o);
    o.repetitions = 2;
    o.timing.stop.time_limit_s = 0.3;
    hb_suite_set set;
    char why[1200];
    if (!hb_suites_discover(dir, &set, why, sizeof why)) {
        fprintf(stderr, "%s\n", why);
        CHECK(!"the suites load");
        return;
    }
    const hb_suite *qs = hb_suite_set_find(&set, "qkv_split"), *cs = hb_suite_set_find(&set, "cross_entropy");
    CHECK(qs && cs);
    if (!qs || !cs) {
        hb_suite_set_free(&set);
        return;
    }
    o.copy_bytes = (size_t)256 << 20;
    hb_runner *r = NULL;
    OK(hb_runner_new(&o, &r, &err));
    if (!r) return;
    hb_size qkv = {3, {16, 128, 3072}}, ce = {2, {2048, 32768}};
    OK(hb_runner_add(r, qs, &qs->cases[0], &hb_variant_fuser, FU_F32, &qkv, &err));
    OK(hb_runner_add(r, qs, &qs->cases[0], &broken, FU_F32, &qkv, &err));
    /* 2048 x 32768 = 67M logits: checked on a slice of rows, then run at full size */
    OK(hb_runner_add(r, cs, &cs->cases[2], &hb_variant_fuser, FU_BF16, &ce,
                     &err));
    /* 6. outputs that are views, in the same runner (one measure a process) */
    hb_suite *views[2] = {view_suite("test_harness_gpu_views", VIEWS_MIXED),
                          view_suite("test_harness_gpu_only_views", VIEWS_ONLY)};
    hb_size none = {0, {0}};
    for (int i = 0; i < 2; i++)
        if (views[i]) OK(hb_runner_add(r, views[i], &views[i]->cases[0], &hb_variant_fuser, FU_F32, &none, &err));
    CHECK(hb_runner_prepare(r, rt) == 0);
    OK(hb_runner_measure(r, "test_harness_gpu", 0, NULL, &err));
    hb_runner_print_table(r, stdout);
    CHECK(hb_runner_failures(r) == 1);
    const hb_entry *e;
    int n = hb_runner_entries(r, &e);
    int good_reps = 0, good_aggs = 0, broken_reps = 0, broken_aggs = 0, ce_reps = 0, view_reps = 0;
    for (int i = 0; i < n; i++) {
        if (strstr(e[i].suite, "views")) {
            if (!e[i].aggregate) view_reps += check_view_entry(&e[i]);
            continue;
        }
        bool is_broken = strcmp(e[i].variant, "broken") == 0;
        bool is_ce = strcmp(e[i].suite, "cross_entropy") == 0;
        if (e[i].aggregate) {
            if (is_broken) broken_aggs++;
            else good_aggs++;
            CHECK(strncmp(e[i].name, e[i].run_name, strlen(e[i].run_name)) == 0);
            continue;
        }
        if (is_broken) {
            broken_reps++;
            CHECK(e[i].status == HB_STATUS_FAILED && e[i].nsamples == 0);
            CHECK_CONTAINS(e[i].error, "differs from the CPU interpreter");
            continue;
        }
        if (is_ce) ce_reps++;
        else good_reps++;
        CHECK(e[i].status == HB_STATUS_OK);
        CHECK(e[i].nsamples >= 5 && e[i].samples_us && e[i].real_time > 0);
        CHECK(e[i].repetitions == 2 && e[i].repetition_index >= 0 && e[i].repetition_index < 2);
        double kernels = hb_entry_get_counter(&e[i], "kernels"), seg = hb_entry_get_counter(&e[i], "segments");
        CHECK(kernels >= 1 && kernels == seg);
        CHECK(hb_entry_get_counter(&e[i], "launches") >= kernels);
        double gbps = hb_entry_get_counter(&e[i], "GB/s"), peak = hb_entry_get_counter(&e[i], "peak_fraction");
        CHECK(gbps > 0 && peak > 0 && peak < 2);
        CHECK_NEAR(gbps, (double)hb_entry_get_counter(&e[i], "bytes") / (e[i].real_time * 1e-6) / 1e9, 1e-9);
        CHECK(hb_entry_get_counter(&e[i], "kernel_time_us") > 0);
        CHECK(hb_entry_get_counter(&e[i], "max_rel_error") < (is_ce ? 1e-2 : 1e-6));
        CHECK(e[i].nkernel_records == (int)kernels);
        double floor_us = hb_entry_get_counter(&e[i], "floor_us");
        CHECK(floor_us > 0);
        CHECK_NEAR(hb_entry_get_counter(&e[i], "floor_fraction"), floor_us / e[i].real_time, 1e-9);
    }
    CHECK(good_reps == 2 && ce_reps == 2 && broken_reps == 2);
    CHECK(view_reps == 4);
    CHECK(good_aggs >= 8); /* median, mean, stddev, cv of two cases */
    CHECK(broken_aggs == 0);  /* a failed case has no aggregates */
    hb_context c;
    hb_runner_context(r, &c);
    CHECK(isfinite(c.copy_bandwidth_gbps) && c.copy_bandwidth_gbps > 100);
    CHECK(c.sm_count > 0 && c.l2_bytes > 0 && c.l2_flush_bytes == 2 * c.l2_bytes);
    CHECK(strncmp(c.cupti, "CUPTI", 5) == 0);
    CHECK(strcmp(c.host.executable, "test_harness_gpu") == 0);
    printf("context: %s, driver %s (%s), %d SMs, L2 %lld, copy %.0f GB/s, SM clock %.0f MHz, %s, clocks: %s\n",
           c.gpu_name, c.driver_version, c.driver_release, c.sm_count, (long long)c.l2_bytes, c.copy_bandwidth_gbps,
           c.sm_clock_mhz, c.cupti, c.clock_sampling);
    FILE *f = fopen("test_harness_gpu.json", "w");
    if (f) {
        CHECK(hb_json_write_run(f, &c, e, n));
        fclose(f);
    }
    hb_runner_free(r);
    hb_suite_set_free(&set);
    for (int i = 0; i < 2; i++) {
        if (views[i]) hb_suite_free(views[i]);
    }
    remove("test_harness_gpu_views.fusion");
    remove("test_harness_gpu_only_views.fusion");
}

int main(void)
{
    const char *dir = getenv("FUSEBENCH_SUITES_DIR");
    if (!dir) {
        fprintf(stderr, "FUSEBENCH_SUITES_DIR is not set (ctest sets it)\n");
        return 1;
    }
    fu_runtime *rt;
    int skip = gpu_test_open("test_harness_gpu", NULL, &rt);
    if (skip) return skip;
    fu_error err;
    memset(&err, 0, sizeof err);
    printf("%s\n", fu_runtime_describe(rt));
    char why[512];
    hb_cupti *cu = hb_cupti_open(why, sizeof why);
    if (!cu) fprintf(stderr, "CUPTI: %s\n", why);
    CHECK(cu != NULL);
    char why2[256];
    CHECK(hb_cupti_open(why2, sizeof why2) == NULL); /* one per process */
    hb_timing_options o;
    hb_timing_options_default(&o);
    hb_timer *timer = NULL;
    OK(hb_timer_open(rt, NULL, &o, &timer, &err));
    if (cu && timer) {
        printf("%s\n", hb_cupti_describe(cu));
        const seed seeds[] = {
            {"cross_entropy/cross_entropy_fwd.fusion", NULL, FU_SCATTER_DETERMINISTIC},
            {"cross_entropy/cross_entropy_fwd.fusion", "bf16", FU_SCATTER_DETERMINISTIC},
            {"cross_entropy/cross_entropy_bwd.fusion", NULL, FU_SCATTER_DETERMINISTIC},
            {"cross_entropy/cross_entropy_fwdbwd.fusion", "bf16", FU_SCATTER_DETERMINISTIC},
            {"cross_entropy/cross_entropy_primitives.fusion", NULL, FU_SCATTER_DETERMINISTIC},
            {"embedding/embedding_fwd.fusion", NULL, FU_SCATTER_DETERMINISTIC},
            {"embedding/embedding_bwd.fusion", NULL, FU_SCATTER_ATOMIC},
            {"embedding/embedding_bwd.fusion", NULL, FU_SCATTER_DETERMINISTIC},
            {"qkv_split/qkv_split.fusion", NULL, FU_SCATTER_DETERMINISTIC},
            {"qkv_split/seed_repro.fusion", NULL, FU_SCATTER_DETERMINISTIC},
        };
        kept keep[sizeof seeds / sizeof seeds[0]];
        memset(keep, 0, sizeof keep);
        for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) test_seed(rt, cu, timer, dir, &seeds[i], &keep[i]);
        test_copy_kernel(rt, cu, timer);
        for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++) {
            if (keep[i].state) hb_variant_fuser.free(keep[i].state);
            if (keep[i].f) fu_fusion_free(keep[i].f);
            if (keep[i].p) fu_program_free(keep[i].p);
        }
    }
    double gbps = 0;
    OK(hb_copy_bandwidth(rt, (size_t)1 << 30, 5, &gbps, &err));
    printf("copy bandwidth (cuMemcpyDtoD, 1 GiB, read + write): %.0f GB/s\n", gbps);
    CHECK(gbps > 100 && gbps < 20000);
    test_floor(rt, gbps);
    hb_timer_close(timer);
    hb_cupti_close(cu); /* the runner opens its own */
    test_runner(rt, dir);
    fu_runtime_close(rt);
    return check_finish("test_harness_gpu");
}
