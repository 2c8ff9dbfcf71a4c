/*
 * test_run_suite_cli.c -- the built `run_suite` (RUN_SUITE_BIN) as a
 * subprocess.
 *
 * Unit (no NVRTC, no GPU): --help; usage errors exit 2 with a message that
 * names what is wrong (no suite, unknown suite, malformed sizes, sizes that
 * do not bind, unknown dtype, mode, format, option, bad regex, a filter that
 * matches nothing, --sizes with all); --list prints the names.
 *
 * Compile (built with TEST_COMPILE; NVRTC, no GPU needed): run_suite plans
 * and compiles small cases, prints the kernel counts and one line saying that
 * timing needs a GPU (with a GPU: --compile-only), exits 0, and writes a run
 * JSON with the planned counts. With a GPU, --with-torch under FUSER_SM_LIMIT
 * exits 2 (PyTorch would run on every SM).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json_read.h"
#include "fuser_runtime.h"
#include "test_util.h"

static const char *bin;
static char dir[256];

/* Runs run_suite with args (NULL-terminated), capturing stdout and stderr. */
static tu_output run(const char *const *args) { return tu_run_capture(bin, args); }

#ifndef TEST_COMPILE
/* A usage error: exit 2, "run_suite: " and the needle on stderr, nothing on stdout. */
static void expect_usage(const char *needle, const char *const *args)
{
    tu_output r = run(args);
    if (r.status != 2) fprintf(stderr, "expected exit 2 for '%s', got %d: %s\n", args[0] ? args[0] : "", r.status, r.err);
    CHECK(r.status == 2);
    CHECK_CONTAINS(r.err, "run_suite: ");
    CHECK_CONTAINS(r.err, needle);
    CHECK(r.out[0] == '\0');
    tu_output_free(&r);
}

static void test_usage(void)
{
    tu_output r = run((const char *const[]){"--help", NULL});
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "usage: run_suite SUITE|all");
    CHECK_CONTAINS(r.out, "--sizes");
    CHECK_CONTAINS(r.out, "cross_entropy");
    CHECK_CONTAINS(r.out, "timing needs a GPU");
    tu_output_free(&r);

    expect_usage("name a suite", (const char *const[]){NULL});
    expect_usage("unknown suite 'nonesuch' (known: cross_entropy, embedding, ",
                 (const char *const[]){"nonesuch", NULL});
    expect_usage("malformed size '8192x'", (const char *const[]){"cross_entropy", "--sizes", "8192x", NULL});
    expect_usage("NxV", (const char *const[]){"cross_entropy", "--sizes", "8192x", NULL});
    expect_usage("size '8192' has 1 number, expected 2", (const char *const[]){"cross_entropy", "--sizes=8192", NULL});
    expect_usage("at least 1", (const char *const[]){"cross_entropy", "--sizes", "0x32768", NULL});
    expect_usage("too large (the product of its numbers is above 2^58)", (const char *const[]){"cross_entropy", "--sizes", "99999999999x99999999999", NULL});
    expect_usage("multiple of 192", (const char *const[]){"qkv_split", "--sizes", "16x128x3000", NULL});
    expect_usage("unknown dtype 'f8'", (const char *const[]){"cross_entropy", "--dtype", "f32,f8", NULL});
    expect_usage("--mode: 'warm'", (const char *const[]){"cross_entropy", "--mode", "warm", NULL});
    expect_usage("--format: 'xml'", (const char *const[]){"cross_entropy", "--format", "xml", NULL});
    expect_usage("unknown option '--size'", (const char *const[]){"cross_entropy", "--size", "1x2", NULL});
    expect_usage("--sizes needs a value", (const char *const[]){"cross_entropy", "--sizes", NULL});
    expect_usage("--repetitions: 'zero'", (const char *const[]){"cross_entropy", "--repetitions", "zero", NULL});
    expect_usage("--repetitions: '0'", (const char *const[]){"cross_entropy", "--repetitions", "0", NULL});
    expect_usage("--time-limit: '-1'", (const char *const[]){"cross_entropy", "--time-limit", "-1", NULL});
    expect_usage("--filter '('", (const char *const[]){"cross_entropy", "--filter", "(", NULL});
    expect_usage("--min-samples: '0'", (const char *const[]){"cross_entropy", "--min-samples", "0", NULL});
    expect_usage("--max-noise: 'x'", (const char *const[]){"cross_entropy", "--max-noise", "x", NULL});
    expect_usage("no benchmark matches", (const char *const[]){"cross_entropy", "--filter", "nothing_like_this", NULL});
    expect_usage("one suite at a time", (const char *const[]){"cross_entropy", "qkv_split", NULL});
    expect_usage("--sizes with 'all'", (const char *const[]){"all", "--sizes", "16x128x3072", NULL});
    expect_usage("not a Google Benchmark flag: --benchmark_nonsense=1",
                 (const char *const[]){"qkv_split", "--benchmark_nonsense=1", "--list", NULL});

    r = run((const char *const[]){"qkv_split", "--list", "--benchmark_filter=.", NULL});
    CHECK(r.status == 0); /* a flag of Google Benchmark's own passes */
    tu_output_free(&r);
    r = run((const char *const[]){"cross_entropy", "--list", NULL});
    CHECK(r.status == 0);
    CHECK(strcmp(r.out, "cross_entropy/fwd/fuser/f32/8192x32768\ncross_entropy/fwd/reference/f32/8192x32768\n"
                        "cross_entropy/fwd/fuser/bf16/8192x32768\ncross_entropy/fwd/reference/bf16/8192x32768\n"
                        "cross_entropy/bwd/fuser/f32/8192x32768\ncross_entropy/bwd/reference/f32/8192x32768\n"
                        "cross_entropy/bwd/fuser/bf16/8192x32768\ncross_entropy/bwd/reference/bf16/8192x32768\n"
                        "cross_entropy/fwdbwd/fuser/f32/8192x32768\ncross_entropy/fwdbwd/reference/f32/8192x32768\n"
                        "cross_entropy/fwdbwd/fuser/bf16/8192x32768\ncross_entropy/fwdbwd/reference/bf16/8192x32768\n") == 0);
    tu_output_free(&r);
    r = run((const char *const[]){"all", "--list", "--dtype", "bf16", "--filter", "fwd/fuser", NULL});
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "embedding/fwd/fuser/bf16/50304x768x8192\nembedding/fwd/fuser/bf16/128256x4096x65536\n");
    CHECK_CONTAINS(r.out, "qkv_split/fwd/fuser/bf16/32x2048x6144\n");
    CHECK(strstr(r.out, "bwd_atomic") == NULL && strstr(r.out, "/f32/") == NULL);
    tu_output_free(&r);
    r = run((const char *const[]){"cross_entropy", "--list", "--sizes", "sweep", "--dtype", "f32", "--filter", "^cross_entropy/fwd/", NULL});
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "cross_entropy/fwd/fuser/f32/8192x128256\n");
    tu_output_free(&r);
    /* f16: the fuser's rows; the reference kernels take f32 and bf16, so no rows of theirs */
    r = run((const char *const[]){"cross_entropy", "--list", "--dtype", "f16,bf16", "--filter", "/fwd/", NULL});
    CHECK(r.status == 0);
    CHECK(strcmp(r.out, "cross_entropy/fwd/fuser/f16/8192x32768\ncross_entropy/fwd/fuser/bf16/8192x32768\n"
                        "cross_entropy/fwd/reference/bf16/8192x32768\n") == 0);
    tu_output_free(&r);
}
#else
static void test_compile(void)
{
    fu_runtime *rt;
    fu_error err;
    CHECK(fu_runtime_open(NULL, &rt, &err) == FU_OK);
    bool gpu = fu_runtime_has_device(rt);
    fu_runtime_close(rt);
    char json[512];
    snprintf(json, sizeof json, "%s/run.json", dir);
    /* small sizes: one compile each (cached after the first run); the fuser's items
     * (reference/tests checks the reference variant's) */
    const char *args[] = {"qkv_split", "--sizes", "2x64x384", "--dtype", "f32,bf16", "--filter", "/fuser/", "--out", json,
                          gpu ? "--compile-only" : NULL, NULL};
    tu_output r = run(args);
    if (r.status != 0) fprintf(stderr, "stdout:\n%s\nstderr:\n%s\n", r.out, r.err);
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "segments");
    CHECK_CONTAINS(r.out, "qkv_split/fwd");
    CHECK_CONTAINS(r.out, gpu ? "--compile-only: planned and compiled 2 cases, timed none"
                              : "timing needs a GPU (no GPU");
    CHECK_CONTAINS(r.err, "[1/2] qkv_split/fwd/fuser/f32/2x64x384: 1 kernel");
    tu_output_free(&r);
    if (gpu) { /* under an SM limit the PyTorch rows (every SM) would not compare: refused */
        setenv("FUSER_SM_LIMIT", "64", 1);
        const char *torch[] = {"qkv_split", "--sizes", "2x64x384", "--with-torch", NULL};
        r = run(torch);
        CHECK(r.status == 2);
        CHECK_CONTAINS(r.err, "--with-torch under an SM limit");
        CHECK_CONTAINS(r.err, "(64 of ");
        tu_output_free(&r);
        unsetenv("FUSER_SM_LIMIT");
    }
    char *text = tu_read_file(json, NULL);
    CHECK(text != NULL);
    char perr[256];
    jv *v = text ? jv_parse(text, perr, sizeof perr) : NULL;
    if (text && !v) fprintf(stderr, "run.json: %s\n", perr);
    CHECK(v != NULL);
    if (v) {
        const jv *ctx = jv_get(v, "context"), *b = jv_get(v, "benchmarks");
        CHECK(jv_str(ctx, "schema") && strcmp(jv_str(ctx, "schema"), "fusebench-run/1") == 0);
        if (!gpu) CHECK(jv_str(ctx, "gpu_name") && strcmp(jv_str(ctx, "gpu_name"), "none") == 0);
        CHECK(b && b->kind == JV_ARR && b->n == 2);
        for (int i = 0; b && i < b->n; i++) {
            const jv *e = &b->items[i];
            CHECK(strcmp(jv_str(e, "status"), "skipped") == 0);
            CHECK(jv_num(e, "segments") == 1 && jv_num(e, "kernels") == 1 && jv_num(e, "launches") == 1);
            CHECK(jv_num(e, "bytes") == 2.0 * 2 * 64 * 384 * (i == 0 ? 4 : 2));
            CHECK(jv_num(e, "real_time") == 0);
            CHECK(jv_str(e, "bytes_formula") && strcmp(jv_str(e, "bytes_formula"), "6*B*T*C*elem") == 0);
            const char *hash = jv_str(e, "kernel_source_hash");
            CHECK(hash && strlen(hash) == 16 && strspn(hash, "0123456789abcdef") == 16);
        }
        /* f32 and bf16 kernels differ, so their identities do */
        if (b && b->n == 2 && jv_str(&b->items[0], "kernel_source_hash") && jv_str(&b->items[1], "kernel_source_hash"))
            CHECK(strcmp(jv_str(&b->items[0], "kernel_source_hash"), jv_str(&b->items[1], "kernel_source_hash")) != 0);
        /* a skipped entry's name carries /skipped (json.c: compare.py pairs by name); run_name is the case's */
        if (b && b->n == 2) {
            CHECK(strcmp(jv_str(&b->items[1], "run_name"), "qkv_split/fwd/fuser/bf16/2x64x384") == 0);
            CHECK(strcmp(jv_str(&b->items[1], "name"), "qkv_split/fwd/fuser/bf16/2x64x384/skipped") == 0);
        }
    }
    jv_free(v);
    free(text);

    /* JSON on stdout, progress on stderr */
    const char *args2[] = {"cross_entropy", "--sizes", "64x1024", "--dtype", "f32", "--format", "json", "--filter", "/fuser/",
                           gpu ? "--compile-only" : NULL, NULL};
    r = run(args2);
    CHECK(r.status == 0);
    v = jv_parse(r.out, perr, sizeof perr);
    CHECK(v != NULL);
    if (v) {
        const jv *b = jv_get(v, "benchmarks");
        CHECK(b && b->n == 3); /* fwd, bwd, fwdbwd */
    }
    jv_free(v);
    CHECK_CONTAINS(r.err, "cross_entropy/fwdbwd/fuser/f32/64x1024");
    tu_output_free(&r);

    /* outputs that are an input's bytes are views, bound by the runner: no copy is planned */
    char views[512];
    snprintf(views, sizeof views, "%s/views.fusion", dir);
    FILE *fp = fopen(views, "w");
    CHECK(fp != NULL);
    if (!fp) return;
    fputs("fusion views\ninput x: f32[64, 48]\ninput y: f32[1000]\nflat = reshape(x, shape=[3072])\n"
          "z = neg(y)\noutput flat\noutput z\noutput y\n", fp);
    fclose(fp);
    const char *args3[] = {views, "--format", "json", gpu ? "--compile-only" : NULL, NULL};
    r = run(args3);
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.err, "views/views/fuser/f32/default: 1 kernel (pointwise), 0 memsets, 0 copies");
    v = jv_parse(r.out, perr, sizeof perr);
    CHECK(v != NULL);
    const jv *b = v ? jv_get(v, "benchmarks") : NULL;
    CHECK(b && b->n == 1);
    if (b && b->n == 1) CHECK(jv_num(&b->items[0], "kernels") == 1 && jv_num(&b->items[0], "launches") == 1);
    jv_free(v);
    tu_output_free(&r);
}
#endif

int main(void)
{
    bin = getenv("RUN_SUITE_BIN");
    if (!bin) {
        fprintf(stderr, "RUN_SUITE_BIN is not set (ctest sets it)\n");
        return 1;
    }
    if (!tu_make_temp_dir(dir, sizeof dir, "fusebench_cli")) return 1;
#ifndef TEST_COMPILE
    test_usage();
    const char *name = "test_run_suite_cli";
#else
    test_compile();
    const char *name = "test_run_suite_compile";
#endif
    tu_remove_tree(dir);
    return check_finish(name);
}
