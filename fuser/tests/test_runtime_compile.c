/*
 * test_runtime_compile.c -- the runtime without a GPU: opening (with or
 * without a driver), NVRTC compilation to CUBIN, the on-disk cache (hits,
 * misses, corrupt entries), compile errors, and architecture options.
 * NVRTC must be loadable: CI has the toolkit, so its absence is a failure.
 */
#define _XOPEN_SOURCE 700

#include "check.h"
#include "runtime.h"
#include "test_util.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *SCALE =
    "extern \"C\" __global__ void scale(float *x, float a, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) x[i] *= a;\n"
    "}\n";

/* The error is on line 3. */
static const char *BROKEN =
    "extern \"C\" __global__ void broken(float *x)\n"
    "{\n"
    "    x[threadIdx.x] = undeclared_name + 1.0f;\n"
    "}\n";

static const char *HALVES =
    "#include <cuda_fp16.h>\n"
    "#include <cuda_bf16.h>\n"
    "extern \"C\" __global__ void halves(__half *h, __nv_bfloat16 *b, int n)\n"
    "{\n"
    "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    if (i < n) b[i] = __float2bfloat16(__half2float(h[i]) * 2.0f);\n"
    "}\n";

static bool file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    if (!fp) return;
    CHECK(fwrite(data, 1, n, fp) == n);
    fclose(fp);
}

static fu_runtime_stats stats_of(const fu_runtime *rt)
{
    fu_runtime_stats s;
    fu_runtime_get_stats(rt, &s);
    return s;
}

/* Compiles SCALE (with the given options) and checks hit/miss and the NVRTC
 * call count. */
static void compile_expect(fu_runtime *rt, const char *const *opts, int nopts, bool hit,
                           fu_compile_info *info)
{
    int64_t calls = stats_of(rt).nvrtc_calls;
    fu_module *m = NULL;
    fu_error err = {0};
    fu_status s = fu_runtime_compile(rt, SCALE, "scale.cu", opts, nopts, &m, info, &err);
    CHECK(s == FU_OK);
    if (s != FU_OK) {
        fprintf(stderr, "compile: %s\n", err.message);
        return;
    }
    CHECK(info->cache_hit == hit);
    CHECK(stats_of(rt).nvrtc_calls == calls + (hit ? 0 : 1));
    CHECK(info->cubin_bytes > 0);
    size_t n = 0;
    const unsigned char *cubin = fu_module_cubin(m, &n);
    CHECK(n == info->cubin_bytes);
    CHECK(n > 4 && !memcmp(cubin, "\x7f" "ELF", 4));
    CHECK(!fu_module_loaded(m)); /* compile-only */
    fu_module_free(m);
}

static void test_cache(const char *dir)
{
    fu_runtime_options opts = {0};
    opts.cache_dir = dir;
    opts.compile_only = true;
    opts.arch = "sm_90";
    fu_runtime *rt = NULL;
    fu_error err = {0};
    CHECK(fu_runtime_open(&opts, &rt, &err) == FU_OK);
    if (!rt) return;
    printf("runtime: %s\n", fu_runtime_describe(rt));
    CHECK(strlen(fu_runtime_describe(rt)) > 0);
    CHECK_CONTAINS(fu_runtime_describe(rt), "no GPU: compile-only requested (compile-only, sm_90)");
    CHECK(!fu_runtime_has_device(rt));
    CHECK(!strcmp(fu_runtime_arch(rt), "sm_90"));
    CHECK(fu_runtime_arch_number(rt) == 90);
    CHECK(!strcmp(fu_runtime_cache_dir(rt), dir));
    if (!fu_runtime_has_nvrtc(rt)) {
        /* The toolkit is installed wherever this test runs: no NVRTC is a bug. */
        fprintf(stderr, "NVRTC could not be loaded: %s\n", fu_runtime_describe(rt));
        CHECK(fu_runtime_has_nvrtc(rt));
        fu_runtime_close(rt);
        return;
    }
    int major = 0, minor = 0;
    fu_runtime_nvrtc_version(rt, &major, &minor);
    CHECK(major >= 12);

    /* First compile misses, second hits without calling NVRTC. */
    fu_compile_info info, info2;
    compile_expect(rt, NULL, 0, false, &info);
    CHECK(info.compile_ms > 0);
    CHECK(strlen(info.key) == 64);
    CHECK_CONTAINS(info.cache_file, dir);
    CHECK(file_exists(info.cache_file));
    compile_expect(rt, NULL, 0, true, &info2);
    CHECK(info2.compile_ms == 0);
    CHECK(!strcmp(info.key, info2.key));
    CHECK(info2.cubin_bytes == info.cubin_bytes);
    fu_runtime_stats st = stats_of(rt);
    CHECK(st.nvrtc_calls == 1);
    CHECK(st.cache_hits == 1);
    CHECK(st.compiles == 2);
    CHECK(st.compile_ms > 0);

    /* Another option set, and another architecture, are other entries. */
    const char *lineinfo[] = {"-lineinfo"};
    compile_expect(rt, lineinfo, 1, false, &info2);
    CHECK(strcmp(info.key, info2.key) != 0);
    compile_expect(rt, lineinfo, 1, true, &info2);
    const char *fast[] = {"--use_fast_math", "-lineinfo"};
    compile_expect(rt, fast, 2, false, &info2);

    /* Corrupt entries are recompiled (and replaced), never trusted. */
    size_t n = 0;
    char *entry = fu_read_file(info.cache_file, &n);
    CHECK(entry && n > 100);
    if (entry && n > 100) {
        int64_t rejects = stats_of(rt).cache_rejects;
        char *bad = fu_malloc(n);
        memcpy(bad, entry, n);
        bad[n - 40] ^= 0x5a; /* a flipped bit in the CUBIN */
        write_file(info.cache_file, bad, n);
        compile_expect(rt, NULL, 0, false, &info2);
        CHECK(stats_of(rt).cache_rejects == rejects + 1);
        compile_expect(rt, NULL, 0, true, &info2); /* rewritten */

        write_file(info.cache_file, entry, n / 2); /* truncated */
        compile_expect(rt, NULL, 0, false, &info2);
        write_file(info.cache_file, "", 0); /* empty */
        compile_expect(rt, NULL, 0, false, &info2);
        memcpy(bad, entry, n);
        bad[10] ^= 1; /* the key in the header */
        write_file(info.cache_file, bad, n);
        compile_expect(rt, NULL, 0, false, &info2);
        memcpy(bad, entry, n);
        memset(bad + 40, 0xff, 8); /* an absurd length */
        write_file(info.cache_file, bad, n);
        compile_expect(rt, NULL, 0, false, &info2);
        write_file(info.cache_file, "garbage", 7);
        compile_expect(rt, NULL, 0, false, &info2);
        CHECK(stats_of(rt).cache_rejects == rejects + 6);
        compile_expect(rt, NULL, 0, true, &info2);
        fu_free(bad);
    }
    fu_free(entry);

    /* A syntax error: FU_ERR_RUNTIME, the NVRTC log with the line number,
     * and the source saved where the message says. */
    fu_module *m = NULL;
    fu_status s = fu_runtime_compile(rt, BROKEN, "broken.cu", NULL, 0, &m, NULL, &err);
    CHECK(s == FU_ERR_RUNTIME);
    CHECK(m == NULL);
    printf("expected error: %s\n", err.message);
    CHECK_CONTAINS(err.message, "broken.cu");
    CHECK_CONTAINS(err.message, "broken.cu(3): error");
    CHECK_CONTAINS(err.message, "undeclared_name");
    CHECK_CONTAINS(err.message, "source saved to ");
    CHECK_CONTAINS(err.message, dir);
    const char *p = strstr(err.message, "source saved to ");
    if (p) {
        char saved[1024];
        p += strlen("source saved to ");
        size_t k = strcspn(p, ", )");
        snprintf(saved, sizeof saved, "%.*s", (int)k, p);
        char *text = fu_read_file(saved, NULL);
        CHECK(text && !strcmp(text, BROKEN));
        fu_free(text);
    }

    /* The toolkit's half and bfloat16 headers are found (NVRTC lacks them). */
    CHECK(strlen(fu_runtime_include_dir(rt)) > 0);
    s = fu_runtime_compile(rt, HALVES, "halves.cu", NULL, 0, &m, NULL, &err);
    CHECK(s == FU_OK);
    if (s == FU_OK) fu_module_free(m);
    else fprintf(stderr, "halves.cu: %s\n", err.message);

    /* A bad option is an error too, not a crash. */
    const char *bogus[] = {"--no-such-option"};
    s = fu_runtime_compile(rt, SCALE, "scale.cu", bogus, 1, &m, NULL, &err);
    CHECK(s == FU_ERR_RUNTIME);

    /* NVRTC's log is kept, on a hit too (ptxas -v reports registers). */
    const char *verbose[] = {"--ptxas-options=-v"};
    for (int round = 0; round < 2; round++) {
        fu_compile_info vi;
        s = fu_runtime_compile(rt, SCALE, "scale.cu", verbose, 1, &m, &vi, &err);
        CHECK(s == FU_OK);
        if (s != FU_OK) break;
        CHECK(vi.cache_hit == (round == 1));
        CHECK_CONTAINS(fu_module_log(m), "registers");
        /* Without a device there is no kernel to look up. */
        fu_kernel *k = NULL;
        CHECK(fu_module_get_kernel(m, "scale", &k, &err) == FU_ERR_NO_DEVICE);
        CHECK(k == NULL);
        fu_module_free(m);
    }

    /* Device calls fail cleanly. */
    fu_devptr d = 1;
    CHECK(fu_device_alloc(rt, 16, &d, &err) == FU_ERR_NO_DEVICE);
    CHECK(d == 0);
    CHECK_CONTAINS(err.message, "needs a GPU");
    CHECK(fu_runtime_synchronize(rt, &err) == FU_ERR_NO_DEVICE);
    fu_event *ev = NULL;
    CHECK(fu_event_create(rt, &ev, &err) == FU_ERR_NO_DEVICE);

    fu_runtime_close(rt);
}

/* A cache that cannot be written costs speed, not correctness. */
static void test_unwritable_cache(const char *dir)
{
    char file[1024], sub[1100];
    snprintf(file, sizeof file, "%s/a-file", dir);
    write_file(file, "x", 1);
    snprintf(sub, sizeof sub, "%s/cache", file); /* a directory under a file */
    fu_runtime_options opts = {0};
    opts.cache_dir = sub;
    opts.compile_only = true;
    fu_runtime *rt = NULL;
    fu_error err = {0};
    CHECK(fu_runtime_open(&opts, &rt, &err) == FU_OK);
    if (!rt || !fu_runtime_has_nvrtc(rt)) {
        fu_runtime_close(rt);
        return;
    }
    fu_compile_info info;
    compile_expect(rt, NULL, 0, false, &info);
    compile_expect(rt, NULL, 0, false, &info);
    CHECK(stats_of(rt).cache_write_errors == 2);
    /* The failed source cannot go there either; the message says so. */
    fu_module *m = NULL;
    CHECK(fu_runtime_compile(rt, BROKEN, "broken.cu", NULL, 0, &m, NULL, &err) == FU_ERR_RUNTIME);
    CHECK_CONTAINS(err.message, "source not saved");
    CHECK_CONTAINS(err.message, "broken.cu(3): error");
    fu_runtime_close(rt);

    /* No disk cache at all: every compile calls NVRTC. */
    opts.cache_dir = NULL;
    opts.no_disk_cache = true;
    CHECK(fu_runtime_open(&opts, &rt, &err) == FU_OK);
    CHECK(!strcmp(fu_runtime_cache_dir(rt), ""));
    compile_expect(rt, NULL, 0, false, &info);
    CHECK(!strcmp(info.cache_file, ""));
    compile_expect(rt, NULL, 0, false, &info);
    fu_runtime_close(rt);
}

static void test_arch_and_env(const char *dir)
{
    static const struct {
        const char *in, *out;
    } cases[] = {{"90", "sm_90"},       {"sm_90a", "sm_90a"}, {"compute_80", "sm_80"},
                 {"9.0", "sm_90"},      {"sm_100f", "sm_100f"}, {"sm_120", "sm_120"}};
    fu_error err = {0};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        fu_runtime_options opts = {0};
        opts.compile_only = true;
        opts.cache_dir = dir;
        opts.arch = cases[i].in;
        fu_runtime *rt = NULL;
        CHECK(fu_runtime_open(&opts, &rt, &err) == FU_OK);
        if (!rt) continue;
        CHECK(!strcmp(fu_runtime_arch(rt), cases[i].out));
        fu_runtime_close(rt);
    }
    const char *bad[] = {"sm_", "banana", "sm_90x", "7", "sm_90aa"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        fu_runtime_options opts = {0};
        opts.compile_only = true;
        opts.arch = bad[i];
        fu_runtime *rt = NULL;
        CHECK(fu_runtime_open(&opts, &rt, &err) == FU_ERR_ARG);
        CHECK(rt == NULL);
        CHECK_CONTAINS(err.message, bad[i]);
    }

    /* FUSER_ARCH and FUSER_CACHE_DIR from the environment. */
    setenv("FUSER_ARCH", "sm_80", 1);
    setenv("FUSER_CACHE_DIR", dir, 1);
    fu_runtime_options opts = {0};
    opts.compile_only = true;
    fu_runtime *rt = NULL;
    CHECK(fu_runtime_open(&opts, &rt, &err) == FU_OK);
    if (rt) {
        CHECK(!strcmp(fu_runtime_arch(rt), "sm_80"));
        CHECK(!strcmp(fu_runtime_cache_dir(rt), dir));
        CHECK_CONTAINS(fu_runtime_describe(rt), "sm_80");
        fu_compile_info info;
        if (fu_runtime_has_nvrtc(rt)) compile_expect(rt, NULL, 0, false, &info); /* sm_80: new key */
        fu_runtime_close(rt);
    }
    setenv("FUSER_ARCH", "nonsense", 1);
    CHECK(fu_runtime_open(&opts, &rt, &err) == FU_ERR_ARG);
    CHECK_CONTAINS(err.message, "FUSER_ARCH");
    unsetenv("FUSER_ARCH");
    unsetenv("FUSER_CACHE_DIR");
    /* FUSER_SM_LIMIT: a count of SMs, checked before anything is loaded, GPU or not */
    const char *bad_limits[] = {"abc", "-8", "12x", "99999999999"};
    for (size_t i = 0; i < sizeof bad_limits / sizeof *bad_limits; i++) {
        setenv("FUSER_SM_LIMIT", bad_limits[i], 1);
        rt = NULL;
        CHECK(fu_runtime_open(&opts, &rt, &err) == FU_ERR_ARG && rt == NULL);
        CHECK_CONTAINS(err.message, "FUSER_SM_LIMIT");
        CHECK_CONTAINS(err.message, bad_limits[i]);
    }
    setenv("FUSER_SM_LIMIT", "0", 1); /* all of them */
    CHECK(fu_runtime_open(&opts, &rt, &err) == FU_OK);
    fu_runtime_close(rt);
    unsetenv("FUSER_SM_LIMIT");
    opts.sm_limit = -3;
    rt = NULL;
    CHECK(fu_runtime_open(&opts, &rt, &err) == FU_ERR_ARG && rt == NULL);
    CHECK_CONTAINS(err.message, "SM limit -3");
    opts.sm_limit = 0;

    /* The plain open, as a command would do it: whatever this machine has. */
    rt = NULL;
    CHECK(fu_runtime_open(NULL, &rt, &err) == FU_OK);
    if (rt) {
        printf("default runtime: %s\n", fu_runtime_describe(rt));
        CHECK(strlen(fu_runtime_describe(rt)) > 0);
        CHECK(fu_runtime_has_nvrtc(rt));
        fu_runtime_close(rt);
    }
}

int main(void)
{
    char dir[512];
    if (!tu_make_temp_dir(dir, sizeof dir, "fuser-rt-compile")) return 1;
    test_cache(dir);
    test_unwritable_cache(dir);
    test_arch_and_env(dir);
    tu_remove_tree(dir);
    return check_finish("test_runtime_compile");
}
