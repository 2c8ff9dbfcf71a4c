/*
 * test_reference_unit.c -- the merge of PyTorch's rows (no GPU, no NVRTC):
 *   - the selection passed to the script: distinct suite/case/dtype/size of
 *     the benchmark names, in order;
 *   - torch.compile's time (median of its ok repetitions) and the speed-up of
 *     every entry, on synthetic entries: repetitions and median/mean
 *     aggregates get one, stddev/cv, failed entries and cases without a
 *     torch.compile time do not;
 *   - GB/s and peak_fraction recomputed on the run's copy bandwidth;
 *   - a run file written by the harness's own writer reads back,
 *     files of another schema or not JSON are refused with a reason;
 *   - --with-torch without python3, without PyTorch (reference/tests/no_torch
 *     first on PYTHONPATH), and with a script that is not there: one line, and
 *     the run would go on (nothing merged).
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "test_util.h"
#include "torch_merge.h"

static hb_entry mk(const char *suite, const char *cs, const char *variant, const char *dtype, const char *size,
                   double t, int rep)
{
    hb_entry e;
    hb_entry_init(&e);
    snprintf(e.suite, sizeof e.suite, "%s", suite);
    snprintf(e.case_name, sizeof e.case_name, "%s", cs);
    snprintf(e.variant, sizeof e.variant, "%s", variant);
    snprintf(e.dtype, sizeof e.dtype, "%s", dtype);
    snprintf(e.size, sizeof e.size, "%s", size);
    snprintf(e.name, sizeof e.name, "%s/%s/%s/%s/%s", suite, cs, variant, dtype, size);
    snprintf(e.run_name, sizeof e.run_name, "%s", e.name);
    e.real_time = e.cpu_time = t;
    e.repetition_index = rep;
    e.repetitions = 3;
    e.status = HB_STATUS_OK;
    return e;
}

static hb_entry agg(hb_entry e, const char *name, double t)
{
    e.aggregate = true;
    snprintf(e.aggregate_name, sizeof e.aggregate_name, "%s", name);
    snprintf(e.aggregate_unit, sizeof e.aggregate_unit, "%s", strcmp(name, "cv") == 0 ? "percentage" : "time");
    e.real_time = e.cpu_time = t;
    return e;
}

static void test_items(void)
{
    const char *names[] = {
        "cross_entropy/fwd/fuser/f32/8192x32768",  "cross_entropy/fwd/reference/f32/8192x32768",
        "cross_entropy/fwd/fuser/bf16/8192x32768", "cross_entropy/fwd/reference/bf16/8192x32768",
        "qkv_split/fwd/fuser/f32/16x128x3072",     "not/a/name",
        "cross_entropy/fwdbwd/fuser/f32/8192x32768",
    };
    char *items = hb_torch_items(names, 7);
    CHECK(items != NULL);
    if (items)
        CHECK(strcmp(items, "cross_entropy/fwd/f32/8192x32768,cross_entropy/fwd/bf16/8192x32768,"
                            "qkv_split/fwd/f32/16x128x3072,cross_entropy/fwdbwd/f32/8192x32768") == 0);
    free(items);
    items = hb_torch_items(names, 0);
    CHECK(items && items[0] == '\0');
    free(items);
}

static void test_speedups(void)
{
    const char *A = "8192x32768", *B = "1024x32768";
    hb_entry e[32];
    int n = 0;
    /* case A: fuser 100, 110, 90; reference 50; torch_compile 200, 220, 180 (+ a failed rep and an
     * aggregate, neither counted); torch_eager 400 */
    e[n++] = mk("cross_entropy", "fwd", "fuser", "f32", A, 100, 0);
    e[n++] = mk("cross_entropy", "fwd", "fuser", "f32", A, 110, 1);
    e[n++] = mk("cross_entropy", "fwd", "fuser", "f32", A, 90, 2);
    e[n++] = agg(e[0], "median", 100);
    e[n++] = agg(e[0], "stddev", 10);
    e[n++] = agg(e[0], "cv", 0.1);
    e[n++] = mk("cross_entropy", "fwd", "reference", "f32", A, 50, 0);
    e[n++] = mk("cross_entropy", "fwd", "torch_compile", "f32", A, 200, 0);
    e[n++] = mk("cross_entropy", "fwd", "torch_compile", "f32", A, 220, 1);
    e[n++] = mk("cross_entropy", "fwd", "torch_compile", "f32", A, 180, 2);
    hb_entry failed = mk("cross_entropy", "fwd", "torch_compile", "f32", A, 1, 3);
    failed.status = HB_STATUS_FAILED;
    e[n++] = failed;
    e[n++] = agg(e[7], "median", 1); /* an aggregate is not a repetition: not used for the time */
    e[n++] = mk("cross_entropy", "fwd", "torch_eager", "f32", A, 400, 0);
    /* the same case at another size and dtype: no torch.compile time there */
    e[n++] = mk("cross_entropy", "fwd", "fuser", "f32", B, 30, 0);
    e[n++] = mk("cross_entropy", "fwd", "torch_compile", "bf16", A, 77, 0);
    hb_entry fuser_failed = mk("cross_entropy", "fwd", "fuser", "bf16", A, 0, 0);
    fuser_failed.status = HB_STATUS_FAILED;
    e[n++] = fuser_failed;

    CHECK_NEAR(hb_torch_compile_time(e, n, "cross_entropy", "fwd", "f32", A), 200, 1e-12);
    CHECK_NEAR(hb_torch_compile_time(e, n, "cross_entropy", "fwd", "bf16", A), 77, 1e-12);
    CHECK(isnan(hb_torch_compile_time(e, n, "cross_entropy", "fwd", "f32", B)));
    CHECK(isnan(hb_torch_compile_time(e, n, "cross_entropy", "bwd", "f32", A)));

    int set = hb_torch_speedups(e, n);
    CHECK_NEAR(e[0].speedup_vs_torch_compile, 2.0, 1e-12);
    CHECK_NEAR(e[1].speedup_vs_torch_compile, 200.0 / 110, 1e-12);
    CHECK_NEAR(e[2].speedup_vs_torch_compile, 200.0 / 90, 1e-12);
    CHECK_NEAR(e[3].speedup_vs_torch_compile, 2.0, 1e-12); /* median aggregate: a time */
    CHECK(isnan(e[4].speedup_vs_torch_compile));           /* stddev: not a time of the case */
    CHECK(isnan(e[5].speedup_vs_torch_compile));           /* cv */
    CHECK_NEAR(e[6].speedup_vs_torch_compile, 4.0, 1e-12);
    CHECK_NEAR(e[7].speedup_vs_torch_compile, 1.0, 1e-12);
    CHECK(isnan(e[10].speedup_vs_torch_compile)); /* failed */
    CHECK_NEAR(e[11].speedup_vs_torch_compile, 200.0, 1e-12);
    CHECK_NEAR(e[12].speedup_vs_torch_compile, 0.5, 1e-12);
    CHECK(isnan(e[13].speedup_vs_torch_compile)); /* no torch.compile at that size */
    CHECK_NEAR(e[14].speedup_vs_torch_compile, 1.0, 1e-12);
    CHECK(isnan(e[15].speedup_vs_torch_compile));
    CHECK(set == 11);
}

static void test_rebase(void)
{
    hb_entry e[3];
    e[0] = mk("qkv_split", "fwd", "torch_eager", "f32", "16x128x3072", 1000, 0); /* 1e9 bytes in 1 ms */
    hb_entry_counter(&e[0], "bytes", 1e9);
    hb_entry_counter(&e[0], "GB/s", 123);
    hb_entry_counter(&e[0], "peak_fraction", 0.9);
    e[1] = agg(e[0], "stddev", 5);
    e[2] = mk("qkv_split", "fwd", "torch_compile", "f32", "16x128x3072", 500, 0); /* no bytes: untouched */
    hb_torch_rebase(e, 3, 4000);
    CHECK_NEAR(hb_entry_get_counter(&e[0], "GB/s"), 1000, 1e-12);
    CHECK_NEAR(hb_entry_get_counter(&e[0], "peak_fraction"), 0.25, 1e-12);
    CHECK_NEAR(hb_entry_get_counter(&e[1], "GB/s"), 123, 1e-12); /* a stddev is not a time */
    CHECK(isnan(hb_entry_get_counter(&e[2], "GB/s")));
    hb_torch_rebase(e, 1, NAN); /* no copy bandwidth: GB/s only */
    CHECK_NEAR(hb_entry_get_counter(&e[0], "peak_fraction"), 0.25, 1e-12);
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void test_read(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/run.json", dir);
    hb_context ctx;
    memset(&ctx, 0, sizeof ctx);
    snprintf(ctx.gpu_name, sizeof ctx.gpu_name, "NVIDIA H200");
    ctx.copy_bandwidth_gbps = ctx.sm_clock_mhz = ctx.mem_clock_mhz = NAN;
    hb_entry e[3];
    e[0] = mk("embedding", "bwd_atomic", "torch_compile", "bf16", "50304x768x8192", 61.5, 0);
    snprintf(e[0].bytes_formula, sizeof e[0].bytes_formula, "V*D*elem + T*D*elem + 8T");
    hb_entry_counter(&e[0], "kernels", 2);
    hb_entry_counter(&e[0], "launches", 2);
    hb_entry_counter(&e[0], "bytes", 89915392);
    double samples[3] = {61.0, 61.5, 63.25};
    e[0].samples_us = samples;
    e[0].nsamples = 3;
    e[1] = agg(e[0], "median", 61.5);
    snprintf(e[1].name, sizeof e[1].name, "%.200s_median", e[0].name);
    e[1].samples_us = NULL;
    e[1].nsamples = 0;
    e[2] = mk("embedding", "bwd_atomic", "torch_eager", "bf16", "50304x768x8192", 0, 0);
    e[2].status = HB_STATUS_FAILED;
    snprintf(e[2].error, sizeof e[2].error, "RuntimeError: out of memory");
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    CHECK(hb_json_write_run(f, &ctx, e, 3));
    fclose(f);

    hb_torch_rows rows;
    char why[512] = "";
    bool ok = hb_torch_read(path, &rows, why, sizeof why);
    CHECK(ok);
    CHECK(rows.n == 3);
    if (ok && rows.n == 3) {
        const hb_entry *r = rows.entries;
        CHECK(strcmp(r[0].name, e[0].name) == 0);
        CHECK(strcmp(r[0].suite, "embedding") == 0 && strcmp(r[0].case_name, "bwd_atomic") == 0);
        CHECK(strcmp(r[0].variant, "torch_compile") == 0 && strcmp(r[0].dtype, "bf16") == 0);
        CHECK(strcmp(r[0].size, "50304x768x8192") == 0);
        CHECK(strcmp(r[0].bytes_formula, "V*D*elem + T*D*elem + 8T") == 0);
        CHECK(!r[0].aggregate && r[0].status == HB_STATUS_OK);
        CHECK_NEAR(r[0].real_time, 61.5, 1e-12);
        CHECK_NEAR(hb_entry_get_counter(&r[0], "kernels"), 2, 0);
        CHECK_NEAR(hb_entry_get_counter(&r[0], "bytes"), 89915392, 0);
        CHECK(r[0].nsamples == 3 && r[0].samples_us && r[0].samples_us[2] == 63.25);
        CHECK(r[1].aggregate && strcmp(r[1].aggregate_name, "median") == 0);
        CHECK(r[2].status == HB_STATUS_FAILED);
        CHECK_CONTAINS(r[2].error, "out of memory");
    }
    hb_torch_rows_free(&rows);

    write_text(path, "{\"context\": {\"schema\": \"something-else/2\"}, \"benchmarks\": []}");
    CHECK(!hb_torch_read(path, &rows, why, sizeof why));
    CHECK_CONTAINS(why, "something-else/2");
    write_text(path, "{\"context\": {\"schema\": \"fusebench-run/1\"}, \"benchmarks\": [{\"name\": \"x\"}]}");
    CHECK(!hb_torch_read(path, &rows, why, sizeof why));
    CHECK_CONTAINS(why, "lacks");
    write_text(path, "torch is not here\n");
    CHECK(!hb_torch_read(path, &rows, why, sizeof why));
    CHECK_CONTAINS(why, "not JSON");
    remove(path);
}

static bool have_python3(void)
{
    const char *path = getenv("PATH");
    if (!path) return false;
    char *copy = strdup(path);
    bool found = false;
    for (char *save = NULL, *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char p[1024];
        snprintf(p, sizeof p, "%s/python3", d);
        found = access(p, X_OK) == 0;
    }
    free(copy);
    return found;
}

static void test_run_absent(const char *tests_dir, const char *dir)
{
    hb_torch_options o;
    hb_torch_options_default(&o);
    /* the items file run_suite would write */
    char fusions[600];
    snprintf(fusions, sizeof fusions, "%s/fusions.json", dir);
    FILE *ff = fopen(fusions, "w");
    CHECK(ff != NULL);
    if (ff) {
        fputs("{\"items\": [{\"item\": \"qkv_split/fwd/f32/16x128x3072\", \"fusion\": \"fusion q\\ninput x: "
              "f32[4]\\ny = neg(x)\\noutput y\\n\", \"bytes\": 32, \"bytes_formula\": \"32\"}]}\n", ff);
        fclose(ff);
    }
    o.fusions = fusions;
    hb_torch_rows rows;
    char msg[1024];
    const char *items = "qkv_split/fwd/f32/16x128x3072";
    /* no python3 */
    o.python = "/nonexistent/python3";
    CHECK(hb_torch_run(&o, items, &rows, msg, sizeof msg) == HB_TORCH_ABSENT);
    CHECK_CONTAINS(msg, "--with-torch: /nonexistent/python3 not found");
    CHECK_CONTAINS(msg, "PyTorch rows skipped");
    CHECK(strchr(msg, '\n') == NULL);
    CHECK(rows.n == 0 && rows.entries == NULL);
    /* a script that is not there */
    o.python = NULL;
    o.script = "/nonexistent/torch_bench.py";
    CHECK(hb_torch_run(&o, items, &rows, msg, sizeof msg) == HB_TORCH_FAILED);
    CHECK_CONTAINS(msg, "/nonexistent/torch_bench.py");
    o.script = NULL;
    /* python3 without PyTorch: the stand-in torch.py first on PYTHONPATH */
    if (!have_python3()) {
        printf("test_reference_unit: no python3 on PATH: the no-PyTorch case is not run\n");
        return;
    }
    char pp[1024];
    snprintf(pp, sizeof pp, "%s/no_torch", tests_dir);
    setenv("PYTHONPATH", pp, 1);
    unsetenv("FUSEBENCH_PYTHON");
    unsetenv("FUSEBENCH_TORCH_SCRIPT");
    CHECK(hb_torch_run(&o, items, &rows, msg, sizeof msg) == HB_TORCH_ABSENT);
    CHECK_CONTAINS(msg, "--with-torch: PyTorch is not available");
    CHECK_CONTAINS(msg, "stands in for a missing PyTorch");
    CHECK_CONTAINS(msg, "PyTorch rows skipped");
    CHECK(strchr(msg, '\n') == NULL);
    CHECK(rows.n == 0);
    /* a bad selection: the script's usage error is a failure, not an absence */
    CHECK(hb_torch_run(&o, "qkv_split/fwd/f8/16x128x3072", &rows, msg, sizeof msg) == HB_TORCH_FAILED);
    CHECK_CONTAINS(msg, "exited with status 2");
    unsetenv("PYTHONPATH");
}

int main(void)
{
    const char *tests_dir = getenv("REFERENCE_TESTS_DIR");
    if (!tests_dir) tests_dir = "reference/tests";
    char dir[512];
    if (!tu_make_temp_dir(dir, sizeof dir, "test_reference_unit")) return 1;
    test_items();
    test_speedups();
    test_rebase();
    test_read(dir);
    test_run_absent(tests_dir, dir);
    tu_remove_tree(dir);
    return check_finish("test_reference_unit");
}
