/*
 * test_reference_compile.c -- NVRTC, no GPU needed (the runtime's null
 * device compiles without launching):
 *   - every reference kernel compiles for sm_90: each case of each suite, f32
 *     and bf16, at the default sizes and at sizes that take the other code
 *     paths (odd widths: scalar vectors; Llama 3's vocabulary: clusters of 8
 *     blocks; a vocabulary of 4: long buckets), and the CUBIN holds the entry
 *     points the variant launches;
 *   - a row too long for the registers of 8 blocks is refused with a reason
 *     for the gradient, and the forward walks it in tiles;
 *   - a fusion with no reference kernel is refused;
 *   - run_suite --with-torch on a machine without PyTorch (the stand-in
 *     reference/tests/no_torch/torch.py first on PYTHONPATH) prints one line
 *     saying so and exits 0;
 *   - run_suite --with-torch with a stand-in script (fake_torch_bench.py:
 *     fixed times) merges its rows into the run file, with
 *     speedup_vs_torch_compile on them.
 */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "json_read.h"
#include "suite_case.h"
#include "test_util.h"
#include "variant_reference.h"


static bool has_bytes(const void *hay, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    const char *h = hay;
    for (size_t i = 0; i + k <= n; i++)
        if (memcmp(h + i, needle, k) == 0 && (i + k == n || h[i + k] == '\0')) return true;
    return false;
}

/* Prepares (compiles) the reference variant for one item; expects success. */
static void compile_one(fu_runtime *rt, const hb_suite *s, const hb_case *c, const char *size, fu_dtype dt)
{
    fu_fusion *f = build_suite_case(s, c, size, dt);
    if (!f) return;
    void *st = NULL;
    hb_variant_info info;
    fu_error err;
    memset(&err, 0, sizeof err);
    fu_status rc = hb_variant_reference.prepare(rt, f, c, &st, &info, &err);
    if (rc) fprintf(stderr, "%s/%s/%s/%s: %s\n", s->name, c->name, fu_dtype_name(dt), size, err.message);
    CHECK(rc == FU_OK);
    if (!rc) {
        const fu_module *m = NULL;
        const char *names[HB_REF_MAX_KERNELS];
        int n = hb_reference_kernels(st, &m, names, HB_REF_MAX_KERNELS);
        size_t bytes = 0;
        const void *cubin = m ? fu_module_cubin(m, &bytes) : NULL;
        CHECK(n >= 1 && n == info.kernels && cubin && bytes > 0);
        for (int i = 0; i < n && cubin; i++) {
            bool found = has_bytes(cubin, bytes, names[i]);
            if (!found) fprintf(stderr, "%s not in the CUBIN of %s/%s\n", names[i], s->name, c->name);
            CHECK(found);
            /* the dtype suffix of typed entry points */
            if (strstr(names[i], "_f32") || strstr(names[i], "_bf16"))
                CHECK_CONTAINS(names[i], dt == FU_BF16 ? "_bf16" : "_f32");
        }
        CHECK(info.segments == 0 && info.compiled == 1);
        printf("%-14s %-18s %-5s %-18s %d kernel%s  %s  [%s]\n", s->name, c->name, fu_dtype_name(dt), size, n,
               n == 1 ? " " : "s", info.detail, hb_reference_options(st));
        hb_variant_reference.free(st);
    }
    fu_fusion_free(f);
}

/* Expects prepare to fail with `needle` in the message. */
static void refuse_one(fu_runtime *rt, const hb_suite *s, const hb_case *c, const char *size, const char *needle)
{
    fu_fusion *f = build_suite_case(s, c, size, FU_F32);
    if (!f) return;
    void *st = NULL;
    hb_variant_info info;
    fu_error err;
    memset(&err, 0, sizeof err);
    CHECK(hb_variant_reference.prepare(rt, f, c, &st, &info, &err) == FU_ERR_UNSUPPORTED);
    CHECK(st == NULL);
    CHECK_CONTAINS(err.message, needle);
    fu_fusion_free(f);
}

static const hb_case *find_case(const hb_suite *s, const char *name)
{
    for (int i = 0; i < s->ncases; i++)
        if (strcmp(s->cases[i].name, name) == 0) return &s->cases[i];
    return NULL;
}

static void test_compile_all(fu_runtime *rt)
{
    /* extra sizes: other vector widths, clusters, tiles, long buckets */
    const char *extra[3][3] = {
        {"1000x6x100", "4x64x5000", NULL},           /* embedding: D = 6 (2-element vectors), V = 4 */
        {"33x1001", "64x128256", "16x4096"},          /* cross_entropy: scalar, clusters of 8 (f32), one block */
        {"2x5x192", "3x7x576", NULL},                 /* qkv_split */
    };
    const hb_suite_set *set = test_suites();
    for (int si = 0; si < set->n; si++) {
        const hb_suite *s = set->suites[si];
        if (strcmp(s->name, "embedding") && strcmp(s->name, "cross_entropy") && strcmp(s->name, "qkv_split"))
            continue; /* the suites with reference kernels */
        int row = strcmp(s->name, "embedding") == 0 ? 0 : strcmp(s->name, "cross_entropy") == 0 ? 1 : 2;
        char defaults[1024];
        snprintf(defaults, sizeof defaults, "%s", s->default_sizes);
        for (int ci = 0; ci < s->ncases; ci++)
            for (int d = 0; d < 2; d++) {
                fu_dtype dt = d ? FU_BF16 : FU_F32;
                char list[1024];
                snprintf(list, sizeof list, "%s", defaults);
                for (char *save = NULL, *sz = strtok_r(list, ",", &save); sz; sz = strtok_r(NULL, ",", &save))
                    compile_one(rt, s, &s->cases[ci], sz, dt);
                for (int k = 0; k < 3 && extra[row][k]; k++) compile_one(rt, s, &s->cases[ci], extra[row][k], dt);
            }
    }
}

static void test_refusals(fu_runtime *rt)
{
    const hb_suite *ce = test_suite("cross_entropy");
    /* at most 8 blocks x 512 threads x 8 vectors x 4 floats = 131072 f32 classes in registers */
    refuse_one(rt, ce, find_case(ce, "fwdbwd"), "8x300000", "does not fit in the registers");
    refuse_one(rt, ce, find_case(ce, "bwd"), "8x300000", "at most 131072");
    compile_one(rt, ce, find_case(ce, "fwd"), "8x300000", FU_F32); /* tiles */

    /* a fusion with no reference kernel */
    fu_program *p = NULL;
    fu_fusion *f = NULL;
    fu_error err;
    char path[1100];
    snprintf(path, sizeof path, "%s/cross_entropy_primitives.fusion", test_suite("cross_entropy")->dir);
    CHECK(fu_program_parse_file(path, &p, &err) == FU_OK);
    if (p) CHECK(fu_program_build(p, NULL, 0, &f, &err) == FU_OK);
    if (f) {
        void *st = NULL;
        hb_variant_info info;
        CHECK(hb_reference_family(f, NULL) == NULL);
        CHECK(hb_variant_reference.prepare(rt, f, NULL, &st, &info, &err) == FU_ERR_UNSUPPORTED);
        CHECK_CONTAINS(err.message, "no reference kernel '(none named)' for fusion 'cross_entropy_primitives'");
        hb_case named = {.name = "x", .reference = "not_a_family"}; /* a name the manifest could give */
        CHECK(hb_variant_reference.prepare(rt, f, &named, &st, &info, &err) == FU_ERR_UNSUPPORTED);
        CHECK_CONTAINS(err.message, "no reference kernel 'not_a_family'");
        fu_fusion_free(f);
    }
    fu_program_free(p);
}

/* run_suite --with-torch with the stand-in script: its rows in the run file,
 * with speed-ups over its torch.compile (100 us): eager (200 us) 0.5. */
static void test_run_suite_merge(void)
{
    const char *bin = getenv("RUN_SUITE_BIN"), *tests_dir = getenv("REFERENCE_TESTS_DIR");
    if (!bin || !tests_dir) return;
    char script[1024], json[] = "/tmp/test_reference_merge_XXXXXX", err_path[64];
    int fd = mkstemp(json);
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    snprintf(err_path, sizeof err_path, "%s.err", json);
    snprintf(script, sizeof script, "%s/fake_torch_bench.py", tests_dir);
    setenv("FUSEBENCH_TORCH_SCRIPT", script, 1);
    unsetenv("PYTHONPATH");
    const char *args[] = {"qkv_split", "--sizes", "2x5x192", "--dtype", "f32,bf16", "--filter", "reference",
                          "--repetitions", "1", "--time-limit", "0.1", "--with-torch", "--out", json, NULL};
    int code = tu_run_to_files(bin, args, NULL, err_path);
    unsetenv("FUSEBENCH_TORCH_SCRIPT");
    char *err = tu_read_file(err_path, NULL), *text = tu_read_file(json, NULL);
    if (code != 0) fprintf(stderr, "run_suite --with-torch (stand-in): exit %d: %s\n", code, err ? err : "");
    CHECK(code == 0);
    CHECK_CONTAINS(err, "--with-torch: 4 PyTorch entries merged");
    char perr[256];
    jv *v = text ? jv_parse(text, perr, sizeof perr) : NULL;
    CHECK(v != NULL);
    const jv *b = v ? jv_get(v, "benchmarks") : NULL;
    CHECK(b && b->kind == JV_ARR && b->n == 6); /* 2 reference items + 2 x (eager, compile) */
    int eager = 0, compiled = 0;
    for (int i = 0; b && i < b->n; i++) {
        const jv *e = &b->items[i];
        const char *variant = jv_str(e, "variant");
        if (!variant) continue;
        if (strcmp(variant, "torch_eager") == 0) {
            eager++;
            CHECK(jv_num(e, "speedup_vs_torch_compile") == 0.5);
            CHECK(jv_num(e, "kernels") == 2 && jv_num(e, "launches") == 3);
            CHECK(jv_get(e, "samples_us") && jv_get(e, "samples_us")->n == 3);
            /* the stand-in read the fuser's bytes from the fusions file */
            CHECK(jv_num(e, "bytes") == 2.0 * 2 * 5 * 192 * (strcmp(jv_str(e, "dtype"), "f32") == 0 ? 4 : 2));
            CHECK(jv_str(e, "bytes_formula") && strcmp(jv_str(e, "bytes_formula"), "6*B*T*C*elem") == 0);
        } else if (strcmp(variant, "torch_compile") == 0) {
            compiled++;
            CHECK(jv_num(e, "speedup_vs_torch_compile") == 1.0);
        } else {
            CHECK(strcmp(variant, "reference") == 0);
        }
    }
    CHECK(eager == 2 && compiled == 2);
    jv_free(v);
    free(text);
    free(err);
    remove(json);
    remove(err_path);
}

/* run_suite --with-torch where python3 has no PyTorch: one line, exit 0. */
static void test_run_suite_without_torch(void)
{
    const char *bin = getenv("RUN_SUITE_BIN"), *tests_dir = getenv("REFERENCE_TESTS_DIR");
    if (!bin || !tests_dir) {
        printf("test_reference_compile: RUN_SUITE_BIN or REFERENCE_TESTS_DIR unset: run_suite not run\n");
        return;
    }
    char pp[1024], out_path[] = "/tmp/test_reference_compile_XXXXXX";
    int fd = mkstemp(out_path);
    CHECK(fd >= 0);
    if (fd < 0) return;
    close(fd);
    snprintf(pp, sizeof pp, "%s/no_torch", tests_dir);
    setenv("PYTHONPATH", pp, 1);
    unsetenv("FUSEBENCH_PYTHON");
    unsetenv("FUSEBENCH_TORCH_SCRIPT");
    const char *args[] = {"qkv_split", "--sizes", "2x5x192", "--dtype", "f32", "--filter", "reference",
                          "--repetitions", "1", "--time-limit", "0.1", "--with-torch", NULL};
    int code = tu_run_to_files(bin, args, NULL, out_path);
    unsetenv("PYTHONPATH");
    FILE *f = fopen(out_path, "r");
    char line[2048];
    int torch_lines = 0;
    bool said = false;
    while (f && fgets(line, sizeof line, f)) {
        if (strstr(line, "--with-torch")) {
            torch_lines++;
            said = strstr(line, "PyTorch is not available") && strstr(line, "PyTorch rows skipped");
        }
    }
    if (f) fclose(f);
    remove(out_path);
    if (code != 0 || torch_lines != 1 || !said)
        fprintf(stderr, "run_suite --with-torch without PyTorch: exit %d, %d line(s) about it\n", code, torch_lines);
    CHECK(code == 0);
    CHECK(torch_lines == 1);
    CHECK(said);
}

int main(void)
{
    fu_runtime_options o;
    memset(&o, 0, sizeof o);
    o.arch = "sm_90";
    o.compile_only = true;
    fu_runtime *rt = NULL;
    fu_error err;
    if (fu_runtime_open(&o, &rt, &err)) {
        fprintf(stderr, "test_reference_compile: %s\n", err.message);
        return 1;
    }
    if (!fu_runtime_has_nvrtc(rt)) {
        printf("test_reference_compile: skipped: no NVRTC (%s)\n", fu_runtime_describe(rt));
        fu_runtime_close(rt);
        return 77;
    }
    test_compile_all(rt);
    test_refusals(rt);
    fu_runtime_close(rt);
    test_run_suite_without_torch();
    test_run_suite_merge();
    return check_finish("test_reference_compile");
}
