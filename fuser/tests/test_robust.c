/*
 * test_robust.c -- the inputs of issue 21 that crashed the tools or gave a
 * wrong number, each with what it must give now:
 *   - element counts whose product overflows int64, or whose bytes pass what
 *     a host can address: a FILE:LINE:COL error from the builder, exit 2
 *     (text, C API, `fuser run/plan --set`, host tensors);
 *   - a slice step near INT64_MAX: shape [1];
 *   - reads: `fuser check` of /dev/zero, a FIFO, a too-large file fails at
 *     once;
 *   - integers in the interpreter are exact: 2^53 + 1 in i64 ops, reductions,
 *     comparisons, gathers and the out-of-range message; i32 wraps;
 *   - outputs all or none: a failing second --output, a failing fu_npy_write
 *     (the file-size limit makes the write fail, even as root), and the
 *     rollback of fu_outset when a rename fails after another succeeded.
 * With the argument "cache" (test_robust_cache, label compile: NVRTC
 * compiles, no GPU needed), the kernel cache through `fuser plan`:
 *   - an entry that is a FIFO hung `fuser plan`; one that is a link to
 *     /dev/zero took gigabytes: both are now bad entries, recompiled and
 *     replaced at once;
 *   - an entry whose header claims more bytes than the file has is recompiled;
 *   - a cache that cannot be written is said once on stderr, with why.
 * Every plan there runs under `timeout`, so that a hang fails the test
 * instead of stalling CI.
 */
#define _XOPEN_SOURCE 700

#include <signal.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>

#include "cli_test.h"
#include "fuser.h"
#include "outset.h"

static const char *suites_dir;

/* ------------------------------------------------------------ sizes */

/* Parses and builds text; returns the build status and leaves the message. */
static fu_status build_text(const char *text, fu_error *err)
{
    fu_program *p = NULL;
    fu_status s = fu_program_parse(text, "big.fusion", &p, err);
    if (s) return s;
    fu_fusion *f = NULL;
    s = fu_program_build(p, NULL, 0, &f, err);
    fu_fusion_free(f);
    fu_program_free(p);
    return s;
}

static void test_sizes_text(void)
{
    static const struct {
        const char *text, *where;
    } cases[] = {
        /* wraps to 0 elements before */
        {"fusion a\ninput x: f32[4611686018427387904, 2]\ny = neg(x)\noutput y\n", "big.fusion:2:7: "},
        /* wrote past a heap buffer in the interpreter before */
        {"fusion b\ny = iota(shape=[4611686018427387904, 4], axis=0)\noutput y\n", "big.fusion:2:5: "},
        /* wrapped to 4096 elements and ran before */
        {"fusion c\ninput x: f32[4503599627370497, 4096]\ny = neg(x)\noutput y\n", "big.fusion:2:7: "},
        /* fits int64 but not an address space: 2^61 f32 */
        {"fusion d\ninput x: f32[2305843009213693952]\ny = neg(x)\noutput y\n", "big.fusion:2:7: "},
        /* an op output that grows past int64 by broadcasting */
        {"fusion e\ninput a: f32[4294967296, 1]\ninput b: f32[1, 4294967296]\ny = add(a, b)\noutput y\n",
         "big.fusion:4:5: "},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fu_error err = {0};
        fu_status s = build_text(cases[i].text, &err);
        CHECK(s == FU_ERR_VERIFY);
        CHECK_CONTAINS(err.message, cases[i].where);
        CHECK_CONTAINS(err.message, "is too large");
    }
    /* the reshape target's own product */
    fu_error err = {0};
    CHECK(build_text("fusion r\ninput x: f32[4]\ny = reshape(x, shape=[4611686018427387904, 4, -1])\noutput y\n",
                     &err) == FU_ERR_VERIFY);
    CHECK_CONTAINS(err.message, "big.fusion:3:5: ");
    CHECK_CONTAINS(err.message, "does not fit in int64");
}

static void test_sizes_api(void)
{
    fu_error err;
    fu_fusion *f = fu_fusion_new("api");
    int64_t shape[2] = {INT64_C(4611686018427387904), 2};
    CHECK(fu_input(f, "x", FU_F32, 2, shape) < 0);
    CHECK(fu_fusion_verify(f, &err) == FU_ERR_VERIFY);
    CHECK_CONTAINS(err.message, "tensor 'x' f32[4611686018427387904, 2] is too large");
    fu_fusion_free(f);

    /* strides reaching past int64 */
    f = fu_fusion_new("strided");
    int64_t sh[2] = {3, 3}, st[2] = {INT64_C(4611686018427387904), 1};
    CHECK(fu_input_strided(f, "x", FU_F32, 2, sh, st) < 0);
    CHECK(fu_fusion_verify(f, &err) == FU_ERR_VERIFY);
    CHECK_CONTAINS(err.message, "strides");
    fu_fusion_free(f);

    fu_host_tensor h;
    CHECK(fu_host_tensor_alloc(&h, FU_F32, 2, shape, &err) == FU_ERR_ARG);
    CHECK_CONTAINS(err.message, "does not fit in int64");
}

/* The slice extent ceil((stop - start) / step) without overflow: [1], not [0]. */
static void test_slice_step(void)
{
    fu_error err;
    fu_program *p = NULL;
    CHECK(fu_program_parse("fusion s\ninput x: f32[4]\n"
                           "y = slice(x, start=[0], stop=[4], step=[9223372036854775807])\noutput y\n",
                           "s.fusion", &p, &err) == FU_OK);
    fu_fusion *f = NULL;
    CHECK(p && fu_program_build(p, NULL, 0, &f, &err) == FU_OK);
    if (f) {
        fu_tensor y = fu_fusion_output(f, 0);
        CHECK(fu_tensor_rank(f, y) == 1 && fu_tensor_shape(f, y)[0] == 1);
        fu_host_tensor in, out;
        int64_t four = 4;
        CHECK(fu_host_tensor_alloc(&in, FU_F32, 1, &four, &err) == FU_OK);
        for (int i = 0; i < 4; i++) fu_host_tensor_set(&in, i, 10 + i);
        CHECK(fu_interp_run(f, &in, &out, &err) == FU_OK);
        CHECK(fu_host_tensor_numel(&out) == 1 && fu_host_tensor_get(&out, 0) == 10);
        fu_host_tensor_free(&out);
        fu_host_tensor_free(&in);
    }
    fu_fusion_free(f);
    fu_program_free(p);
    /* the same through the C API, with stop - start + step past INT64_MAX */
    f = fu_fusion_new("s");
    int64_t n = 10, start = 3, stop = 10, step = INT64_MAX - 1;
    fu_tensor x = fu_input(f, "x", FU_F32, 1, &n);
    fu_tensor y = fu_slice(f, x, &start, &stop, &step, "y");
    CHECK(y >= 0 && fu_tensor_shape(f, y)[0] == 1);
    fu_fusion_free(f);
}

static void test_sizes_cli(void)
{
    const char *big = path_in("big.fusion");
    spit(big, "fusion a\ninput x: f32[4611686018427387904, 2]\ny = neg(x)\noutput y\n");
    char where[600];
    snprintf(where, sizeof where, "%s:2:7: ", big);
    EXPECT_FAILURE(RUN("check", big), where, NULL);
    EXPECT_FAILURE(RUN("run", big), where, NULL);

    char fwd[1024], bwd[1024];
    snprintf(fwd, sizeof fwd, "%s/embedding/embedding_fwd.fusion", suites_dir);
    snprintf(bwd, sizeof bwd, "%s/embedding/embedding_bwd.fusion", suites_dir);
    /* segfaulted before */
    EXPECT_FAILURE(RUN("run", fwd, "--set", "V=4611686018427387904", "--set", "D=4"), "is too large", NULL);
    /* SIGFPE in the planner before */
    const char *files[2] = {fwd, bwd};
    for (int i = 0; i < 2; i++) {
        EXPECT_FAILURE(RUN("plan", files[i], "--set", "T=9223372036854775807"), "is too large", NULL);
        EXPECT_FAILURE(RUN("codegen", files[i], "--set", "T=9223372036854775807"), "is too large", NULL);
        EXPECT_FAILURE(RUN("run", files[i], "--set", "T=9223372036854775807"), "is too large", NULL);
    }
    /* logits that fit, whose expansion's i64 class index ([N, V] at 8 bytes) does not (found by
     * fuzz_plan: a verified fusion that failed to plan as an invalid one) */
    char ce[1024];
    snprintf(ce, sizeof ce, "%s/cross_entropy/cross_entropy_fwdbwd.fusion", suites_dir);
    tu_output valid = RUN("check", ce, "--set", "N=1574119351");
    CHECK(valid.status == 0);
    CHECK_CONTAINS(valid.out, "ok: fusion");
    tu_output_free(&valid);
    EXPECT_FAILURE(RUN("plan", ce, "--set", "N=1574119351"),
                   "op 'cross_entropy' -> 'loss': its expansion holds values of the shape [1574119351, 32768]", NULL);
    EXPECT_FAILURE(RUN("codegen", ce, "--set", "N=1574119351"), "at up to 8 bytes an element", NULL);
}

/* ------------------------------------------------------------ exact integers */

#define P53 INT64_C(9007199254740992) /* 2^53 */

/* Builds text (no parameters) and runs it on the interpreter with the given
 * inputs; the outputs in out (nout of them). */
static fu_status interp_text(const char *text, const fu_host_tensor *in, fu_host_tensor *out, fu_error *err)
{
    fu_program *p = NULL;
    fu_fusion *f = NULL;
    fu_status s = fu_program_parse(text, "exact.fusion", &p, err);
    if (!s) s = fu_program_build(p, NULL, 0, &f, err);
    if (!s) s = fu_interp_run(f, in, out, err);
    fu_fusion_free(f);
    fu_program_free(p);
    return s;
}

static fu_host_tensor i64_tensor(int n, const int64_t *v)
{
    fu_host_tensor t;
    int64_t shape = n;
    fu_error err;
    CHECK(fu_host_tensor_alloc(&t, FU_I64, 1, &shape, &err) == FU_OK);
    if (t.data) memcpy(t.data, v, (size_t)n * sizeof *v);
    return t;
}

static int64_t i64_at(const fu_host_tensor *t, int i) { return t->data ? ((const int64_t *)t->data)[i] : -12345; }

static void test_exact_integers(void)
{
    fu_error err;
    int64_t av[3] = {P53 + 1, 2, -P53 - 1}, bv[3] = {P53, 2, -P53};
    fu_host_tensor in[2] = {i64_tensor(3, av), i64_tensor(3, bv)};
    fu_host_tensor out[8];

    /* add(a, 1) for a = 2^53 + 1 gave 9007199254740992 */
    CHECK(interp_text("fusion e\ninput a: i64[3]\ninput b: i64[3]\ny = add(a, 1)\nz = sub(a, b)\n"
                      "m = mul(b, 2)\nn = neg(a)\nq = abs(a)\noutput y\noutput z\noutput m\noutput n\noutput q\n",
                      in, out, &err) == FU_OK);
    CHECK(i64_at(&out[0], 0) == P53 + 2);
    CHECK(i64_at(&out[1], 0) == 1 && i64_at(&out[1], 2) == -1); /* equal through double before */
    CHECK(i64_at(&out[2], 0) == 2 * P53);
    CHECK(i64_at(&out[3], 0) == -P53 - 1);
    CHECK(i64_at(&out[4], 2) == P53 + 1);
    for (int i = 0; i < 5; i++) fu_host_tensor_free(&out[i]);

    /* reductions and comparisons */
    CHECK(interp_text("fusion r\ninput a: i64[3]\ninput b: i64[3]\ns = sum(a)\nx = max(a)\nk = min(b)\n"
                      "e = eq(a, b)\nw = where(e, a, b)\noutput s\noutput x\noutput k\noutput e\noutput w\n",
                      in, out, &err) == FU_OK);
    CHECK(i64_at(&out[0], 0) == 2); /* (2^53 + 1) + 2 + (-2^53 - 1) */
    CHECK(i64_at(&out[1], 0) == P53 + 1);
    CHECK(i64_at(&out[2], 0) == -P53);
    CHECK(out[3].data && ((uint8_t *)out[3].data)[0] == 0 && ((uint8_t *)out[3].data)[1] == 1);
    CHECK(i64_at(&out[4], 0) == P53 && i64_at(&out[4], 1) == 2);
    for (int i = 0; i < 5; i++) fu_host_tensor_free(&out[i]);

    /* a gather of i64 data and an i64 -> i64 cast chain keep every bit */
    int64_t iv[2] = {0, 2};
    fu_host_tensor g_in[2] = {in[0], i64_tensor(2, iv)};
    CHECK(interp_text("fusion g\ninput a: i64[3]\ninput i: i64[2]\nt = index_select(a, i, axis=0)\n"
                      "d = cast(t, f64)\nc = cast(t, i64)\noutput c\noutput d\n",
                      g_in, out, &err) == FU_OK);
    CHECK(i64_at(&out[0], 0) == P53 + 1 && i64_at(&out[0], 1) == -P53 - 1);
    CHECK(out[1].data && ((double *)out[1].data)[0] == (double)(P53 + 1)); /* rounds only in the f64 result */
    fu_host_tensor_free(&out[0]);
    fu_host_tensor_free(&out[1]);
    fu_host_tensor_free(&g_in[1]);

    /* i32 arithmetic wraps as on the GPU */
    fu_host_tensor t32;
    int64_t two = 2;
    CHECK(fu_host_tensor_alloc(&t32, FU_I32, 1, &two, &err) == FU_OK);
    ((int32_t *)t32.data)[0] = INT32_MAX;
    ((int32_t *)t32.data)[1] = INT32_MIN;
    CHECK(interp_text("fusion w\ninput a: i32[2]\ny = add(a, 1)\ns = sum(a)\noutput y\noutput s\n", &t32, out, &err) ==
          FU_OK);
    CHECK(out[0].data && ((int32_t *)out[0].data)[0] == INT32_MIN && ((int32_t *)out[0].data)[1] == INT32_MIN + 1);
    CHECK(out[1].data && ((int32_t *)out[1].data)[0] == -1);
    fu_host_tensor_free(&out[0]);
    fu_host_tensor_free(&out[1]);
    fu_host_tensor_free(&t32);

    /* the out-of-range message names the id exactly (it said 9007199254740992) */
    fu_host_tensor e_in[2];
    int64_t wshape[2] = {4, 2};
    CHECK(fu_host_tensor_alloc(&e_in[0], FU_F32, 2, wshape, &err) == FU_OK);
    int64_t ids[3] = {1, P53 + 1, 0};
    e_in[1] = i64_tensor(3, ids);
    CHECK(interp_text("fusion emb\ninput w: f32[4, 2]\ninput ids: i64[3]\ny = embedding(w, ids)\noutput y\n", e_in,
                      out, &err) == FU_ERR_INDEX);
    CHECK_CONTAINS(err.message, "index 9007199254740993 at position [1] of 'ids' is out of range [0, 4)");
    CHECK_CONTAINS(err.message, "exact.fusion:4:5: ");
    fu_host_tensor_free(&e_in[0]);
    fu_host_tensor_free(&e_in[1]);
    fu_host_tensor_free(&in[0]);
    fu_host_tensor_free(&in[1]);
}

/* The same through `fuser run`: the output file holds 2^53 + 2 exactly and the
 * summary line names the first element exactly. */
static void test_exact_cli(void)
{
    const char *file = path_in("exact.fusion"), *a = path_in("a.npy"), *y = path_in("y.npy");
    spit(file, "fusion e\ninput a: i64[2]\ny = add(a, 1)\noutput y\n");
    int64_t av[2] = {P53 + 1, 5};
    fu_host_tensor t = i64_tensor(2, av);
    fu_error err;
    CHECK(fu_npy_write(a, &t, &err) == FU_OK);
    fu_host_tensor_free(&t);
    char ba[600], by[600];
    snprintf(ba, sizeof ba, "a=%s", a);
    snprintf(by, sizeof by, "y=%s", y);
    tu_output r = RUN("run", file, "--input", ba, "--output", by);
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "first=9007199254740994");
    tu_output_free(&r);
    CHECK(fu_npy_read(y, &t, &err) == FU_OK);
    CHECK(i64_at(&t, 0) == P53 + 2 && i64_at(&t, 1) == 6);
    fu_host_tensor_free(&t);
}

/* ------------------------------------------------------------ reads */

static void test_reads(void)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    EXPECT_FAILURE(RUN("check", "/dev/zero"), "not a regular file", NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(t1.tv_sec - t0.tv_sec < 10); /* refused at once; it grew for as long as it ran before */

    const char *fifo = path_in("fifo.fusion");
    CHECK(mkfifo(fifo, 0600) == 0);
    EXPECT_FAILURE(RUN("check", fifo), "not a regular file (a FIFO)", NULL); /* would hang on open before */
    unlink(fifo);

    /* a fusion file of more than the limit (4 MiB): refused without parsing */
    const char *huge = path_in("huge.fusion");
    FILE *fp = fopen(huge, "wb");
    CHECK(fp != NULL);
    if (fp) {
        fputs("fusion h\ninput x: f32[4]\n", fp);
        for (int i = 0; i < (5 << 20) / 64; i++) fprintf(fp, "# %060d\n", i);
        fputs("y = neg(x)\noutput y\n", fp);
        fclose(fp);
    }
    EXPECT_FAILURE(RUN("check", huge), "more than the 4194304 allowed", NULL);
    unlink(huge);

    /* the library call behind it */
    fu_program *p = NULL;
    fu_error err;
    CHECK(fu_program_parse_file("/dev/zero", &p, &err) == FU_ERR_IO && p == NULL);
    CHECK_CONTAINS(err.message, "a character device");
}

/* ------------------------------------------------------------ outputs */

static char *slurp(const char *path)
{
    char *s = tu_read_file(path, NULL);
    return s ? s : calloc(1, 1);
}

/* Two outputs, the second of which cannot be renamed into place (an existing
 * directory): the first, an existing file, keeps its old contents. Before,
 * it was replaced, then deleted. */
static void test_outputs_cli(void)
{
    const char *file = path_in("two.fusion");
    spit(file, "fusion two\ninput a: f32[3]\nb = neg(a)\nc = exp(a)\noutput b\noutput c\n");
    const char *o1 = path_in("first.npy"), *o2 = path_in("second_dir");
    spit(o1, "OLD CONTENTS");
    CHECK(mkdir(o2, 0755) == 0);
    char b1[600], b2[600];
    snprintf(b1, sizeof b1, "b=%s", o1);
    snprintf(b2, sizeof b2, "c=%s", o2);
    EXPECT_FAILURE(RUN("run", file, "--output", b1, "--output", b2), "is a directory", NULL);
    char *s = slurp(o1);
    CHECK(strcmp(s, "OLD CONTENTS") == 0);
    free(s);
    CHECK(leftovers() == 0);
    rmdir(o2);

    /* and both written when both can be */
    snprintf(b2, sizeof b2, "c=%s", path_in("second.npy"));
    tu_output r = RUN("run", file, "--output", b1, "--output", b2);
    CHECK(r.status == 0);
    tu_output_free(&r);
    fu_host_tensor t;
    fu_error err;
    CHECK(fu_npy_read(o1, &t, &err) == FU_OK && t.dtype == FU_F32 && t.shape[0] == 3);
    fu_host_tensor_free(&t);
    CHECK(leftovers() == 0);
}

/* A write that fails half way (the file-size limit: EFBIG, even for root)
 * leaves the existing file as it was. Before, fu_npy_write truncated it and
 * then removed it. */
static void test_npy_write_fails(void)
{
    const char *path = path_in("old.npy");
    spit(path, "OLD CONTENTS");
    fu_host_tensor t;
    fu_error err;
    int64_t n = 100000;
    CHECK(fu_host_tensor_alloc(&t, FU_F32, 1, &n, &err) == FU_OK);
    struct rlimit old, small = {4096, 4096};
    CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
    small.rlim_max = old.rlim_max; /* lowered soft limit only, so it can be put back */
    void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
    CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
    fu_status s = fu_npy_write(path, &t, &err);
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, prev);
    CHECK(s == FU_ERR_IO);
    CHECK_CONTAINS(err.message, "old.npy");
    char *text = slurp(path);
    CHECK(strcmp(text, "OLD CONTENTS") == 0);
    free(text);
    CHECK(leftovers() == 0);
    fu_host_tensor_free(&t);
}

/* fu_outset: the second rename fails (a directory appeared at its path after
 * it was opened), so the first, already renamed, is put back. */
static void test_outset_rollback(void)
{
    const char *a = path_in("a.txt"), *b = path_in("b.txt");
    spit(a, "OLD A");
    fu_outset set;
    fu_outset_init(&set);
    char why[1200];
    FILE *fa = fu_outset_open(&set, a, why, sizeof why);
    FILE *fb = fa ? fu_outset_open(&set, b, why, sizeof why) : NULL;
    CHECK(fa && fb);
    if (fa && fb) {
        fputs("NEW A", fa);
        fputs("NEW B", fb);
        CHECK(mkdir(b, 0755) == 0);
        spit(path_in("b.txt/keep"), "x"); /* non-empty: rename(file, dir) must fail */
        CHECK(fu_outset_commit(&set, why, sizeof why) == -1);
        CHECK_CONTAINS(why, "b.txt");
    }
    fu_outset_free(&set);
    char *s = slurp(a);
    CHECK(strcmp(s, "OLD A") == 0);
    free(s);
    CHECK(leftovers() == 0);
    unlink(path_in("b.txt/keep"));
    rmdir(b);

    /* a new file that did not exist before is gone again after a rollback */
    unlink(a);
    fu_outset_init(&set);
    fa = fu_outset_open(&set, a, why, sizeof why);
    fb = fa ? fu_outset_open(&set, b, why, sizeof why) : NULL;
    CHECK(fa && fb);
    if (fa && fb) {
        CHECK(mkdir(b, 0755) == 0);
        spit(path_in("b.txt/keep"), "x");
        CHECK(fu_outset_commit(&set, why, sizeof why) == -1);
    }
    fu_outset_free(&set);
    CHECK(access(a, F_OK) != 0);
    CHECK(leftovers() == 0);
    unlink(path_in("b.txt/keep"));
    rmdir(b);

    /* success: both replaced, the old contents gone, the old file's mode kept */
    spit(a, "OLD A");
    CHECK(chmod(a, 0640) == 0);
    fu_outset_init(&set);
    fa = fu_outset_open(&set, a, why, sizeof why);
    fb = fa ? fu_outset_open(&set, b, why, sizeof why) : NULL;
    CHECK(fa && fb);
    if (fa && fb) {
        fputs("NEW A", fa);
        fputs("NEW B", fb);
        CHECK(fu_outset_commit(&set, why, sizeof why) == 0);
    }
    fu_outset_free(&set);
    s = slurp(a);
    CHECK(strcmp(s, "NEW A") == 0);
    free(s);
    struct stat st;
    CHECK(stat(a, &st) == 0 && (st.st_mode & 0777) == 0640);
    s = slurp(b);
    CHECK(strcmp(s, "NEW B") == 0);
    free(s);
    CHECK(leftovers() == 0);
}

/* ------------------------------------------------------------ the kernel cache */

/* `timeout 120 fuser plan FILE` with FUSER_CACHE_DIR=cache. */
static tu_output plan(const char *file, const char *cache)
{
    setenv("FUSER_CACHE_DIR", cache, 1);
    const char *args[] = {"-s", "KILL", "120", fuser_bin, "plan", file, NULL};
    tu_output r = tu_run_capture("/usr/bin/timeout", args);
    CHECK(r.status != TU_NOT_RUN);
    return r;
}

/* The cache's entries (<cache>/kernels/<hex>.cubin), up to max. */
static int entries(const char *cache, char names[][1200], int max)
{
    char kdir[600];
    snprintf(kdir, sizeof kdir, "%s/kernels", cache);
    DIR *d = opendir(kdir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t len = strlen(e->d_name);
        if (len > 6 && strcmp(e->d_name + len - 6, ".cubin") == 0) snprintf(names[n++], 1200, "%s/%s", kdir, e->d_name);
    }
    closedir(d);
    return n;
}

static bool is_regular(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* The kernel cache's bad entries and write failures (label compile: NVRTC). */
static int test_cache(void)
{
    if (access("/usr/bin/timeout", X_OK) != 0) {
        printf("test_robust cache: skipped: no /usr/bin/timeout\n");
        return 77;
    }
    /* two kernels: segment_set forces a boundary */
    const char *file = path_in("two.fusion");
    spit(file, "fusion two\ninput x: f32[64]\ny = neg(x)\nz = segment_set(y)\nw = exp(z)\noutput w\n");
    const char *cache = path_in("cache");

    tu_output r = plan(file, cache);
    CHECK(r.status == 0);
    if (r.status != 0) fprintf(stderr, "  first plan: exit %d: %s\n", r.status, r.err);
    tu_output_free(&r);
    char names[4][1200];
    int n = entries(cache, names, 4);
    CHECK(n == 2);
    if (n < 2) return 0;

    /* A FIFO and a link to /dev/zero in place of the two entries. */
    CHECK(unlink(names[0]) == 0 && mkfifo(names[0], 0644) == 0);
    CHECK(unlink(names[1]) == 0 && symlink("/dev/zero", names[1]) == 0);
    r = plan(file, cache);
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "2 NVRTC calls");
    if (r.status != 0) fprintf(stderr, "  FIFO and /dev/zero entries: exit %d: %s\n", r.status, r.err);
    tu_output_free(&r);
    CHECK(is_regular(names[0]) && is_regular(names[1])); /* replaced by good entries */
    r = plan(file, cache);
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "0 NVRTC calls");
    tu_output_free(&r);

    /* A header claiming a CUBIN of 2^40 bytes in a file of a few KB. */
    FILE *fp = fopen(names[0], "r+b");
    CHECK(fp != NULL);
    if (fp) {
        unsigned char big[8] = {0, 0, 0, 0, 0, 1, 0, 0}; /* little-endian 2^40 */
        fseek(fp, 40, SEEK_SET);
        fwrite(big, 1, 8, fp);
        fclose(fp);
    }
    r = plan(file, cache);
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "1 NVRTC call");
    tu_output_free(&r);

    /* A cache below a regular file cannot be written: one warning, why. */
    const char *blocker = path_in("not_a_dir");
    spit(blocker, "x");
    r = plan(file, path_in("not_a_dir/cache"));
    CHECK(r.status == 0);
    CHECK(count(r.err, "the kernel cache could not be written") == 1);
    CHECK_CONTAINS(r.err, "Not a directory");
    if (r.status != 0 || count(r.err, "could not be written") != 1) fprintf(stderr, "  stderr: %s\n", r.err);
    tu_output_free(&r);

    return 0;
}

int main(int argc, char **argv)
{
    bool cache = argc > 1 && strcmp(argv[1], "cache") == 0;
    fuser_bin = getenv("FUSER_BIN");
    suites_dir = getenv("FUSER_SUITES_DIR");
    if (!fuser_bin || !suites_dir) {
        fprintf(stderr, "test_robust: FUSER_BIN and FUSER_SUITES_DIR must be set (ctest sets them)\n");
        return 1;
    }
    if (!tu_make_temp_dir(dir, sizeof dir, "test_robust")) return 1;
    if (cache) {
        int rc = test_cache();
        tu_remove_tree(dir);
        free_pool();
        return rc ? rc : check_finish("test_robust cache");
    }
    test_sizes_text();
    test_sizes_api();
    test_slice_step();
    test_sizes_cli();
    test_exact_integers();
    test_exact_cli();
    test_reads();
    test_outputs_cli();
    test_npy_write_fails();
    test_outset_rollback();
    tu_remove_tree(dir);
    free_pool();
    return check_finish("test_robust");
}
