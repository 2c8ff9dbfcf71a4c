/*
 * test_cli.c -- drives the built `fuser` command (FUSER_BIN) as a subprocess
 * on suites/cross_entropy/cross_entropy_fwd.fusion (FUSER_SUITES_DIR):
 * check, print, run with random and given inputs (the loss is compared with a
 * direct C cross entropy), --output files, and every error path (exit 2, a
 * "fuser: " message, nothing written, no temporaries left behind). Also
 * plan (text and --json, compiled through a fresh disk cache: the second plan
 * makes no NVRTC call), codegen, and run --device gpu [--check], which fails
 * with "no GPU" where there is none and agrees with the interpreter where
 * there is one.
 */
#define _XOPEN_SOURCE 700

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_test.h"
#include "fuser.h"

static char suite[1024];
static const char *suites_dir;
static char cache_dir[256]; /* FUSER_CACHE_DIR of the children */

static void expect_success(tu_output *r, int line)
{
    CHECK(r->status == 0);
    if (r->status != 0) fprintf(stderr, "  (case at line %d) exit %d, stderr: %s\n", line, r->status, r->err);
}
#define EXPECT_SUCCESS(r) expect_success(&(r), __LINE__)

/* ------------------------------------------------------------ the suite */

typedef struct suite_info {
    fu_program *prog;
    fu_fusion *f; /* built with N=4, V=7 (and DT=f32 when there is a DT) */
    bool has_dt;
    const char *logits, *target, *loss; /* tensor names */
} suite_info;

static bool load_suite(suite_info *s)
{
    fu_error err;
    memset(s, 0, sizeof *s);
    if (fu_program_parse_file(suite, &s->prog, &err) != FU_OK) {
        fprintf(stderr, "parse %s: %s\n", suite, err.message);
        return false;
    }
    for (int i = 0; i < fu_program_num_params(s->prog); i++)
        if (strcmp(fu_program_param_name(s->prog, i), "DT") == 0) s->has_dt = true;
    fu_param_value ov[3] = {{"N", "4"}, {"V", "7"}, {"DT", "f32"}};
    if (fu_program_build(s->prog, ov, s->has_dt ? 3 : 2, &s->f, &err) != FU_OK) {
        fprintf(stderr, "build %s: %s\n", suite, err.message);
        return false;
    }
    CHECK(fu_fusion_num_inputs(s->f) == 2);
    CHECK(fu_fusion_num_outputs(s->f) == 1);
    for (int i = 0; i < fu_fusion_num_inputs(s->f); i++) {
        fu_tensor t = fu_fusion_input(s->f, i);
        if (fu_dtype_is_float(fu_tensor_dtype(s->f, t))) s->logits = fu_tensor_name(s->f, t);
        else s->target = fu_tensor_name(s->f, t);
    }
    s->loss = fu_tensor_name(s->f, fu_fusion_output(s->f, 0));
    CHECK(s->logits && s->target);
    return s->logits && s->target;
}

static void free_suite(suite_info *s)
{
    if (s->f) fu_fusion_free(s->f);
    if (s->prog) fu_program_free(s->prog);
}

/* "--set" "N=4" "--set" "V=7" ["--set" "DT=f32"] as a prefix of an arg list. */
static int base_args(const suite_info *s, const char *cmd, const char **a)
{
    int n = 0;
    a[n++] = cmd;
    a[n++] = suite;
    a[n++] = "--set";
    a[n++] = "N=4";
    a[n++] = "--set";
    a[n++] = "V=7";
    if (s->has_dt) {
        a[n++] = "--set";
        a[n++] = "DT=f32";
    }
    return n;
}

static void write_tensor(const char *path, fu_dtype dtype, int rank, const int64_t *shape, const double *values)
{
    fu_error err;
    fu_host_tensor t;
    CHECK(fu_host_tensor_alloc(&t, dtype, rank, shape, &err) == FU_OK);
    for (int64_t i = 0; i < fu_host_tensor_numel(&t); i++) fu_host_tensor_set(&t, i, values[i]);
    CHECK(fu_npy_write(path, &t, &err) == FU_OK);
    fu_host_tensor_free(&t);
}

/* ------------------------------------------------------------ tests */

static void test_check_print(const suite_info *s)
{
    tu_output r = RUN("check", suite);
    EXPECT_SUCCESS(r);
    char want[256];
    fu_fusion *def = NULL;
    fu_error err;
    CHECK(fu_program_build(s->prog, NULL, 0, &def, &err) == FU_OK);
    if (def) {
        snprintf(want, sizeof want, "ok: fusion '%s': %d inputs, %d ops, %d outputs\n", fu_fusion_name(def),
                 fu_fusion_num_inputs(def), fu_fusion_num_ops(def), fu_fusion_num_outputs(def));
        CHECK(strcmp(r.out, want) == 0);
        CHECK_CONTAINS(r.out, "ok: fusion 'cross_entropy_fwd': 2 inputs, ");
        fu_fusion_free(def);
    }
    CHECK(r.err[0] == '\0');
    tu_output_free(&r);

    r = RUN("check", suite, "--set", "N=4", "--set=V=7");
    EXPECT_SUCCESS(r);
    CHECK_CONTAINS(r.out, "ok: fusion 'cross_entropy_fwd'");
    tu_output_free(&r);
    /* a list, as run_suite's --sizes: the bindings shape the printed program */
    r = RUN("print", suite, "--set", "N=4,V=7", "--set", "DT=bf16");
    EXPECT_SUCCESS(r);
    CHECK_CONTAINS(r.out, "input logits: bf16[4, 7]");
    tu_output_free(&r);

    /* print: the canonical program text; with --set, the built fusion */
    r = RUN("print", suite);
    EXPECT_SUCCESS(r);
    char *text = fu_program_print(s->prog);
    CHECK(text && strncmp(r.out, text, strlen(text)) == 0);
    free(text);
    tu_output_free(&r);

    const char *a[16];
    int n = base_args(s, "print", a);
    a[n] = NULL;
    r = run_args(a);
    EXPECT_SUCCESS(r);
    text = fu_fusion_print(s->f);
    CHECK(text && strncmp(r.out, text, strlen(text)) == 0);
    free(text);
    tu_output_free(&r);
}

static void test_run_random(const suite_info *s)
{
    const char *out = path_in("loss.npy");
    const char *a[24];
    int n = base_args(s, "run", a);
    a[n++] = "--output";
    a[n++] = binding(s->loss, out);
    a[n] = NULL;
    tu_output r = run_args(a);
    EXPECT_SUCCESS(r);
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s: %s[] sum=", s->loss, s->has_dt ? "f32" : "");
    CHECK_CONTAINS(r.out, s->has_dt ? prefix : " sum=");
    CHECK_CONTAINS(r.out, " absmax=");
    CHECK_CONTAINS(r.out, " first=");
    CHECK(leftovers() == 0);
    fu_host_tensor t;
    fu_error err;
    fu_status st = fu_npy_read(out, &t, &err);
    CHECK(st == FU_OK);
    if (st == FU_OK) {
        CHECK(t.rank == 0);
        CHECK(fu_host_tensor_numel(&t) == 1);
        double loss = fu_host_tensor_get(&t, 0);
        CHECK(loss > 0.5 && loss < 10.0); /* random logits over 7 classes: about log(7) + 0.5 */
        char first[64];
        snprintf(first, sizeof first, "first=%.9g\n", loss);
        CHECK_CONTAINS(r.out, first);
        fu_host_tensor_free(&t);
    }
    tu_output_free(&r);
    unlink(out);

    /* the same seed gives the same summary, another seed another */
    n = base_args(s, "run", a);
    a[n++] = "--seed";
    a[n++] = "12345";
    a[n] = NULL;
    tu_output r1 = run_args(a), r2 = run_args(a);
    a[n - 1] = "12346";
    tu_output r3 = run_args(a);
    EXPECT_SUCCESS(r1);
    EXPECT_SUCCESS(r2);
    EXPECT_SUCCESS(r3);
    CHECK(strcmp(r1.out, r2.out) == 0);
    CHECK(strcmp(r1.out, r3.out) != 0);
    tu_output_free(&r1);
    tu_output_free(&r2);
    tu_output_free(&r3);
}

/* x[4][7], targets: a direct C cross entropy predicts the loss. */
static const double X[4][7] = {
    {0.5, -1.25, 2.0, 0.0, 0.75, -0.5, 1.5},
    {-2.0, 0.25, 0.125, 3.0, -1.0, 0.5, 0.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0},
    {4.0, -4.0, 2.5, -0.75, 0.375, 1.25, -3.5},
};
static const double T[4] = {2, 0, 6, 3};

static double reference_loss(const double *targets)
{
    double total = 0;
    for (int i = 0; i < 4; i++) {
        double m = X[i][0];
        for (int j = 1; j < 7; j++) m = fmax(m, X[i][j]);
        double z = 0;
        for (int j = 0; j < 7; j++) z += exp(X[i][j] - m);
        total += m + log(z) - X[i][(int)targets[i]];
    }
    return total / 4.0;
}

static void test_run_given(const suite_info *s)
{
    int64_t xs[2] = {4, 7}, ts[1] = {4};
    const char *xp = path_in("x.npy"), *tp = path_in("t.npy"), *out = path_in("loss_given.npy");
    write_tensor(xp, FU_F32, 2, xs, &X[0][0]); /* every value exact in bf16 too */
    write_tensor(tp, FU_I64, 1, ts, T);
    const char *a[24];
    int n = base_args(s, "run", a);
    a[n++] = "--input";
    a[n++] = binding(s->logits, xp);
    a[n++] = "--input";
    a[n++] = binding(s->target, tp);
    a[n++] = "--output";
    a[n++] = binding(s->loss, out);
    a[n] = NULL;
    tu_output r = run_args(a);
    EXPECT_SUCCESS(r);
    fu_host_tensor t;
    fu_error err;
    fu_status st = fu_npy_read(out, &t, &err);
    CHECK(st == FU_OK);
    if (st == FU_OK) {
        double tol = s->has_dt ? 1e-6 : 1e-2; /* without DT=f32 the loss may be rounded to bf16 */
        CHECK_NEAR(fu_host_tensor_get(&t, 0), reference_loss(T), tol);
        fu_host_tensor_free(&t);
    }
    /* the summary line agrees */
    const char *sum = strstr(r.out, "sum=");
    CHECK(sum != NULL);
    if (sum) CHECK_NEAR(strtod(sum + 4, NULL), reference_loss(T), s->has_dt ? 1e-6 : 1e-2);
    tu_output_free(&r);
    unlink(out);

    /* an input's name writes the input as the run had it: the file given, and a random one */
    const char *xcopy = path_in("x_copy.npy"), *tcopy = path_in("t_random.npy");
    n = base_args(s, "run", a);
    const char *as_run[] = {"--input", binding(s->logits, xp), "--output", binding(s->logits, xcopy),
                            "--output", binding(s->target, tcopy)};
    for (int i = 0; i < 6; i++) a[n++] = as_run[i];
    a[n] = NULL;
    r = run_args(a);
    EXPECT_SUCCESS(r);
    tu_output_free(&r);
    fu_host_tensor xc, tc;
    if (fu_npy_read(xcopy, &xc, &err) == FU_OK) {
        CHECK(xc.rank == 2 && xc.shape[0] == 4 && xc.shape[1] == 7);
        for (int i = 0; i < 28 && xc.rank == 2; i++) CHECK(fu_host_tensor_get(&xc, i) == X[i / 7][i % 7]);
        fu_host_tensor_free(&xc);
    } else {
        CHECK(!"--output of an input wrote no file");
    }
    if (fu_npy_read(tcopy, &tc, &err) == FU_OK) { /* random targets: valid classes */
        CHECK(tc.rank == 1 && tc.shape[0] == 4);
        for (int i = 0; i < 4 && tc.rank == 1; i++)
            CHECK(fu_host_tensor_get(&tc, i) >= 0 && fu_host_tensor_get(&tc, i) < 7);
        fu_host_tensor_free(&tc);
    } else {
        CHECK(!"--output of a random input wrote no file");
    }
    unlink(xcopy);
    unlink(tcopy);

    /* i32 targets convert to the declared int type; the seed does not matter */
    write_tensor(tp, FU_I32, 1, ts, T);
    n = base_args(s, "run", a);
    const char *extra[] = {"--input", binding(s->logits, xp), "--input", binding(s->target, tp), "--seed", "99"};
    for (int i = 0; i < 6; i++) a[n++] = extra[i];
    a[n] = NULL;
    r = run_args(a);
    EXPECT_SUCCESS(r);
    sum = strstr(r.out, "sum=");
    CHECK(sum != NULL);
    if (sum) CHECK_NEAR(strtod(sum + 4, NULL), reference_loss(T), s->has_dt ? 1e-6 : 1e-2);
    tu_output_free(&r);
}

/* Runs `fuser run` with the base args plus extra ones and expects a failure. */
static void run_failing(const suite_info *s, const char *const *extra, const char *needle, const char *out,
                        int line)
{
    const char *a[40];
    int n = base_args(s, "run", a);
    for (int i = 0; extra[i] && n < 38; i++) a[n++] = extra[i];
    a[n] = NULL;
    expect_failure(run_args(a), needle, out, line);
}
#define RUN_FAILING(s, needle, out, ...) run_failing((s), (const char *const[]){__VA_ARGS__, NULL}, (needle), (out), __LINE__)

static void test_bad_inputs(const suite_info *s)
{
    int64_t xs[2] = {4, 7}, ts[1] = {4}, bad_xs[2] = {3, 7};
    const char *xp = path_in("x.npy"), *tp = path_in("t.npy");
    write_tensor(xp, FU_F32, 2, xs, &X[0][0]);
    write_tensor(tp, FU_I64, 1, ts, T);
    const char *out = path_in("never.npy");
    const char *oarg = binding(s->loss, out);

    /* malformed fusion file */
    const char *badf = path_in("bad.fusion");
    spit(badf, "this is not a fusion {{{\n");
    EXPECT_FAILURE(RUN("run", badf, "--output", oarg), "bad.fusion", out);
    EXPECT_FAILURE(RUN("check", badf), "bad.fusion", NULL);
    EXPECT_FAILURE(RUN("print", badf), "bad.fusion", NULL);
    EXPECT_FAILURE(RUN("check", path_in("missing.fusion")), "missing.fusion", NULL);

    /* parameters */
    EXPECT_FAILURE(RUN("run", suite, "--set", "NOPE=3", "--output", oarg), "NOPE", out);
    EXPECT_FAILURE(RUN("check", suite, "--set", "NOPE=3"), "NOPE", NULL);
    EXPECT_FAILURE(RUN("run", suite, "--set", "N=abc", "--output", oarg), "abc", out);
    EXPECT_FAILURE(RUN("run", suite, "--set", "N4"), "NAME=VALUE", NULL);
    EXPECT_FAILURE(RUN("run", suite, "--set", "=4"), "NAME", NULL);
    EXPECT_FAILURE(RUN("check", suite, "--set", "N=4,N=5"), "--set N is given twice", NULL);
    EXPECT_FAILURE(RUN("check", suite, "--set", "N=4,"), "bad --set ''", NULL);
    EXPECT_FAILURE(RUN("check", suite, "--set", "N=4,V"), "bad --set 'V': expected NAME=VALUE", NULL);
    EXPECT_FAILURE(RUN("run", suite, "--set", "N="), "N=", NULL);
    EXPECT_FAILURE(RUN("run", suite, "--set", "N=4", "--set", "N=5"), "twice", NULL);
    if (s->has_dt) EXPECT_FAILURE(RUN("run", suite, "--set", "DT=f7", "--output", oarg), "f7", out);

    /* inputs */
    RUN_FAILING(s, "nope.npy", out, "--input", binding(s->logits, path_in("nope.npy")), "--output", oarg);
    RUN_FAILING(s, "no input named 'bogus'", out, "--input", binding("bogus", xp), "--output", oarg);
    RUN_FAILING(s, "twice", out, "--input", binding(s->logits, xp), "--input", binding(s->logits, xp));
    const char *wrong = path_in("wrong_shape.npy");
    write_tensor(wrong, FU_F32, 2, bad_xs, &X[0][0]);
    RUN_FAILING(s, "shape", out, "--input", binding(s->logits, wrong), "--output", oarg);
    const char *ints = path_in("int_logits.npy");
    double zeros[28] = {0};
    write_tensor(ints, FU_I64, 2, xs, zeros);
    RUN_FAILING(s, "cannot convert", out, "--input", binding(s->logits, ints), "--output", oarg);
    const char *ftarget = path_in("float_target.npy");
    write_tensor(ftarget, FU_F32, 1, ts, T);
    RUN_FAILING(s, "cannot convert", out, "--input", binding(s->target, ftarget), "--output", oarg);
    const char *notnpy = path_in("not_npy.npy");
    spit(notnpy, "hello");
    RUN_FAILING(s, "bad magic", out, "--input", binding(s->logits, notnpy), "--output", oarg);

    /* a class index out of range: the interpreter's FU_ERR_INDEX. An existing
     * file at the output path is left as it was. */
    const char *oob = path_in("oob.npy");
    double bad_t[4] = {2, 0, 7, 3};
    write_tensor(oob, FU_I64, 1, ts, bad_t);
    RUN_FAILING(s, NULL, out, "--input", binding(s->logits, xp), "--input", binding(s->target, oob), "--output",
                oarg);
    const char *keep = path_in("keep.npy");
    spit(keep, "old contents");
    RUN_FAILING(s, NULL, NULL, "--input", binding(s->target, oob), "--output", binding(s->loss, keep));
    char *kept = tu_read_file(keep, NULL);
    CHECK(kept && strcmp(kept, "old contents") == 0);
    free(kept);

    /* outputs */
    RUN_FAILING(s, "no output or input named 'nothing'", out, "--output", binding("nothing", out));
    RUN_FAILING(s, "twice", out, "--output", oarg, "--output", binding(s->loss, path_in("other.npy")));
    RUN_FAILING(s, "no_such_dir", NULL, "--output", binding(s->loss, path_in("no_such_dir/loss.npy")));
    CHECK(!exists(path_in("no_such_dir")));

    /* options */
    RUN_FAILING(s, "unknown option '--bogus'", out, "--bogus", "--output", oarg);
    RUN_FAILING(s, "unknown option", out, "-x", "--output", oarg);
    RUN_FAILING(s, "--seed", out, "--seed", "abc", "--output", oarg);
    RUN_FAILING(s, "--seed", out, "--seed", "-1", "--output", oarg);
    RUN_FAILING(s, "--seed", out, "--seed", "18446744073709551616", "--output", oarg);
    RUN_FAILING(s, "--seed", out, "--seed", "", "--output", oarg);
    RUN_FAILING(s, "needs a value", out, "--output", oarg, "--seed");
    RUN_FAILING(s, "needs a value", NULL, "--input");
    RUN_FAILING(s, "--device", out, "--device", "tpu", "--output", oarg);
    RUN_FAILING(s, "--scatter", out, "--scatter", "sometimes", "--output", oarg);
    RUN_FAILING(s, "needs --device gpu", out, "--check", "--output", oarg);
    RUN_FAILING(s, "needs --device gpu", out, "--check", "--device", "cpu", "--output", oarg);
    RUN_FAILING(s, "unexpected argument", out, "extra_file.fusion", "--output", oarg);
    RUN_FAILING(s, "takes no value", out, "--help=yes");
    EXPECT_FAILURE(RUN("check", suite, "--seed", "1"), "unknown option '--seed'", NULL);
    EXPECT_FAILURE(RUN("check", suite, "--scatter", "atomic"), "unknown option '--scatter'", NULL);
    EXPECT_FAILURE(RUN("check", suite, "--json"), "unknown option '--json'", NULL);
    EXPECT_FAILURE(RUN("codegen", suite, "--json"), "unknown option '--json'", NULL);
    EXPECT_FAILURE(RUN("codegen", suite, "--check"), "unknown option '--check'", NULL);
    EXPECT_FAILURE(RUN("plan", suite, "--device", "gpu"), "unknown option '--device'", NULL);
    EXPECT_FAILURE(RUN("plan", suite, "--seed", "3"), "unknown option '--seed'", NULL);
    EXPECT_FAILURE(RUN("plan", suite, "--json=yes"), "takes no value", NULL);
    EXPECT_FAILURE(RUN("plan", suite, "--scatter", "random"), "bad --scatter 'random'", NULL);
    EXPECT_FAILURE(RUN("codegen", suite, "--scatter"), "needs a value", NULL);
    EXPECT_FAILURE(RUN("plan"), "missing FILE", NULL);
    EXPECT_FAILURE(RUN("codegen"), "missing FILE", NULL);
    EXPECT_FAILURE(RUN("plan", badf), "bad.fusion", NULL);
    EXPECT_FAILURE(RUN("codegen", badf), "bad.fusion", NULL);
    EXPECT_FAILURE(RUN("plan", suite, "--set", "NOPE=1"), "NOPE", NULL);
    EXPECT_FAILURE(RUN("codegen", path_in("missing.fusion")), "missing.fusion", NULL);
    EXPECT_FAILURE(RUN("print", suite, "--output", oarg), "unknown option '--output'", out);
    EXPECT_FAILURE(RUN("run"), "missing FILE", NULL);
    EXPECT_FAILURE(RUN("frobnicate", suite), "unknown command 'frobnicate'", NULL);
    EXPECT_FAILURE(RUN("--bogus"), "unknown option", NULL);
    EXPECT_FAILURE(RUN("help", "frobnicate"), "unknown command", NULL);
    const char *none[] = {NULL};
    EXPECT_FAILURE(run_args(none), "missing command", NULL);
}

/* A fusion with two outputs: when the second cannot be written, the first
 * (already written to its temporary) is removed too. */
static void test_partial_write(void)
{
    fu_error err;
    fu_fusion *f = fu_fusion_new("two_outputs");
    int64_t shape[1] = {3};
    fu_tensor a = fu_input(f, "a", FU_F32, 1, shape);
    fu_output(f, fu_unary(f, FU_OP_NEG, a, "first_out"));
    fu_output(f, fu_unary(f, FU_OP_EXP, a, "second_out"));
    CHECK(fu_fusion_verify(f, &err) == FU_OK);
    char *text = fu_fusion_print(f);
    fu_fusion_free(f);
    CHECK(text != NULL);
    if (!text) return;
    const char *file = path_in("two.fusion");
    spit(file, text);
    free(text);

    const char *o1 = path_in("first.npy"), *o2 = path_in("second.npy");
    tu_output r = RUN("run", file, "--output", binding("first_out", o1), "--output", binding("second_out", o2));
    EXPECT_SUCCESS(r);
    CHECK(exists(o1) && exists(o2));
    CHECK_CONTAINS(r.out, "first_out: f32[3] ");
    CHECK_CONTAINS(r.out, "second_out: f32[3] ");
    tu_output_free(&r);
    unlink(o1);
    unlink(o2);

    EXPECT_FAILURE(RUN("run", file, "--output", binding("first_out", o1), "--output",
                       binding("second_out", path_in("missing_dir/second.npy"))),
                   "missing_dir", o1);
    CHECK(!exists(o1));
}

static void test_help(void)
{
    const char *cmds[] = {"check", "print", "run", "plan", "codegen"};
    for (int i = 0; i < 5; i++) {
        const char *flags[] = {"--help", "-h"};
        for (int k = 0; k < 2; k++) {
            tu_output r = RUN(cmds[i], flags[k]);
            CHECK(r.status == 0);
            char want[64];
            snprintf(want, sizeof want, "usage: fuser %s FILE", cmds[i]);
            CHECK_CONTAINS(r.out, want);
            CHECK_CONTAINS(r.out, "--set NAME=VALUE");
            CHECK(r.err[0] == '\0');
            tu_output_free(&r);
        }
    }
    tu_output r = RUN("run", "--help");
    const char *opts[] = {"--input NAME=PATH", "--output NAME=PATH", "--seed N", "--device cpu|gpu", "--help"};
    for (int i = 0; i < 5; i++) CHECK_CONTAINS(r.out, opts[i]);
    tu_output_free(&r);
    r = RUN("run", suite, "--set", "N=4", "--help"); /* help wins over running */
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "usage: fuser run");
    tu_output_free(&r);
    const char *top[][2] = {{"--help", NULL}, {"-h", NULL}, {"help", NULL}, {"help", "run"}};
    for (int i = 0; i < 4; i++) {
        r = top[i][1] ? RUN(top[i][0], top[i][1]) : RUN(top[i][0]);
        CHECK(r.status == 0);
        CHECK_CONTAINS(r.out, top[i][1] ? "usage: fuser run" : "usage: fuser COMMAND");
        if (!top[i][1])
            for (int k = 0; k < 5; k++) CHECK_CONTAINS(r.out, cmds[k]);
        tu_output_free(&r);
    }
    r = RUN("run", "--help");
    CHECK_CONTAINS(r.out, "--check");
    CHECK_CONTAINS(r.out, "--scatter");
    tu_output_free(&r);
    r = RUN("plan", "--help");
    const char *plan_opts[] = {"--json", "--scatter", "compile_ms", "cache_hit", "registers", "local_bytes", "ready_ms",
                               "nvrtc_calls"};
    for (int i = 0; i < 8; i++) CHECK_CONTAINS(r.out, plan_opts[i]);
    tu_output_free(&r);
    r = RUN("codegen", "-h");
    CHECK_CONTAINS(r.out, "// ==== kernel");
    CHECK_CONTAINS(r.out, "--scatter");
    tu_output_free(&r);
    r = RUN("help", "plan");
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "usage: fuser plan");
    tu_output_free(&r);
}

/* ------------------------------------------------------------ plan, codegen, run --device gpu */

/* Braces and brackets balance outside strings, and the text is one object. */
static bool json_balanced(const char *s)
{
    int depth = 0;
    bool in_string = false, escaped = false, closed = false;
    while (*s == ' ' || *s == '\n') s++;
    if (*s != '{') return false;
    for (; *s; s++) {
        if (in_string) {
            if (escaped) escaped = false;
            else if (*s == '\\') escaped = true;
            else if (*s == '"') in_string = false;
            else if ((unsigned char)*s < 0x20) return false;
        } else if (*s == '"') {
            if (closed) return false;
            in_string = true;
        } else if (*s == '{' || *s == '[') {
            if (closed) return false;
            depth++;
        } else if (*s == '}' || *s == ']') {
            if (--depth < 0) return false;
            if (depth == 0) closed = true;
        } else if (closed && *s != '\n' && *s != ' ') {
            return false;
        }
    }
    return closed && !in_string && depth == 0;
}

/* The integer after `"key": ` in a JSON text; -1 if absent. */
static long long json_int(const char *text, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(text, k);
    if (!p || p[strlen(k)] < '0' || p[strlen(k)] > '9') return -1;
    return strtoll(p + strlen(k), NULL, 10);
}

/* True where `fuser plan --json` reports a GPU (so run --device gpu works). */
static bool test_plan(const suite_info *s)
{
    const char *a[24];
    int n = base_args(s, "plan", a);
    a[n++] = "--json";
    a[n] = NULL;
    /* first plan in a fresh cache: one kernel, compiled by NVRTC */
    tu_output r = run_args(a);
    EXPECT_SUCCESS(r);
    CHECK(json_balanced(r.out));
    CHECK_CONTAINS(r.out, "\"fusion\": \"cross_entropy_fwd\"");
    CHECK_CONTAINS(r.out, "\"segments\": 1,");
    CHECK_CONTAINS(r.out, "\"kernels\": [{");
    const char *keys[] = {"\"compile_ms\": ", "\"cache_hit\": false", "\"registers\": ", "\"local_bytes\": ",
                          "\"ready_ms\": ", "\"device\": \"", "\"arch\": \"sm_", "\"scatter\": \"deterministic\"",
                          "\"compiled\": true"};
    for (int i = 0; i < 9; i++) CHECK_CONTAINS(r.out, keys[i]);
    CHECK(json_int(r.out, "nvrtc_calls") == 1);
    CHECK(json_int(r.out, "cache_hits") == 0);
    CHECK(json_int(r.out, "sm_count") > 0);
    bool gpu = strstr(r.out, "\"device\": \"GPU: ") != NULL;
    if (gpu) {
        CHECK(json_int(r.out, "registers") > 0);
        CHECK(json_int(r.out, "local_bytes") >= 0);
    } else {
        CHECK_CONTAINS(r.out, "\"device\": \"no GPU");
        CHECK_CONTAINS(r.out, "\"registers\": null, \"local_bytes\": null");
        CHECK(json_int(r.out, "sm_count") == 132);
    }
    CHECK(r.err[0] == '\0');
    tu_output_free(&r);

    /* the second plan of the same fusion: all from the cache */
    r = run_args(a);
    EXPECT_SUCCESS(r);
    CHECK(json_balanced(r.out));
    CHECK(json_int(r.out, "nvrtc_calls") == 0);
    CHECK(json_int(r.out, "cache_hits") == 1);
    CHECK_CONTAINS(r.out, "\"cache_hit\": true");
    CHECK_CONTAINS(r.out, "\"compile_ms\": 0.000");
    tu_output_free(&r);

    /* text: the plan, the device, per kernel the compile, ready to launch */
    n = base_args(s, "plan", a);
    a[n] = NULL;
    r = run_args(a);
    EXPECT_SUCCESS(r);
    CHECK(strncmp(r.out, "fusion 'cross_entropy_fwd': 1 kernel\n", 37) == 0);
    CHECK_CONTAINS(r.out, "  kernel 0: ");
    CHECK_CONTAINS(r.out, "scheduler=");
    CHECK_CONTAINS(r.out, "\ndevice: ");
    CHECK_CONTAINS(r.out, ": cache hit");
    CHECK_CONTAINS(r.out, "\nready to launch in ");
    CHECK_CONTAINS(r.out, "0 NVRTC calls, 1 cache hit\n");
    if (gpu) CHECK_CONTAINS(r.out, " registers, ");
    tu_output_free(&r);

    /* the embedding backward: deterministic by default, a memset first in atomic mode */
    char emb[1100];
    snprintf(emb, sizeof emb, "%s/embedding/embedding_bwd.fusion", suites_dir);
    r = RUN("plan", emb, "--set", "V=50", "--set", "T=64", "--set", "D=24", "--json");
    EXPECT_SUCCESS(r);
    CHECK(json_balanced(r.out));
    CHECK_CONTAINS(r.out, "\"segments\": 1,");
    CHECK_CONTAINS(r.out, "\"memset_before\": false");
    tu_output_free(&r);
    r = RUN("plan", emb, "--set", "V=50", "--set", "T=64", "--set", "D=24", "--json", "--scatter", "atomic");
    EXPECT_SUCCESS(r);
    CHECK(json_balanced(r.out));
    CHECK_CONTAINS(r.out, "\"segments\": 1,");
    CHECK_CONTAINS(r.out, "\"memset_before\": true");
    CHECK_CONTAINS(r.out, "\"scatter\": \"atomic\"");
    tu_output_free(&r);
    return gpu;
}

static void test_codegen(const suite_info *s)
{
    const char *a[24];
    int n = base_args(s, "codegen", a);
    a[n] = NULL;
    tu_output r = run_args(a);
    EXPECT_SUCCESS(r);
    CHECK(strncmp(r.out, "// ==== kernel 0: ", 18) == 0);
    CHECK_CONTAINS(r.out, "extern \"C\" __global__");
    CHECK(strstr(r.out, "// ==== kernel 1: ") == NULL);
    CHECK(r.err[0] == '\0');
    /* the same kernel name as the plan's */
    char name[128] = "";
    sscanf(r.out, "// ==== kernel 0: %127s", name);
    CHECK(name[0] != '\0');
    if (name[0]) CHECK_CONTAINS(r.out, name);
    tu_output_free(&r);

    /* two kernels: a segment_set cuts the chain */
    const char *file = path_in("cut.fusion");
    spit(file, "fusion cut\ninput x: f32[4, 5]\na = exp(x)\nb = segment_set(a)\nc = mul(b, 2.0)\noutput c\n");
    r = RUN("codegen", file);
    EXPECT_SUCCESS(r);
    CHECK_CONTAINS(r.out, "// ==== kernel 0: ");
    CHECK_CONTAINS(r.out, "\n// ==== kernel 1: ");
    tu_output_free(&r);
    r = RUN("plan", file, "--json");
    EXPECT_SUCCESS(r);
    CHECK(json_balanced(r.out));
    CHECK_CONTAINS(r.out, "\"segments\": 2,");
    CHECK(json_int(r.out, "nvrtc_calls") == 2);
    tu_output_free(&r);
}

static void test_run_gpu(const suite_info *s, bool gpu)
{
    const char *out = path_in("gpu_loss.npy");
    const char *a[32];
    int n = base_args(s, "run", a);
    const char *extra[] = {"--device", "gpu", "--check", "--output", binding(s->loss, out)};
    for (int i = 0; i < 5; i++) a[n++] = extra[i];
    a[n] = NULL;
    if (!gpu) {
        expect_failure(run_args(a), "no GPU", out, __LINE__);
        n = base_args(s, "run", a);
        a[n++] = "--device";
        a[n++] = "gpu";
        a[n] = NULL;
        tu_output r = run_args(a);
        CHECK(r.status == 2);
        CHECK(strncmp(r.err, "fuser: --device gpu: no GPU", 27) == 0);
        tu_output_free(&r);
        return;
    }
    /* with a GPU: the loss of given inputs, and --check against the interpreter */
    int64_t xs[2] = {4, 7}, ts[1] = {4};
    const char *xp = path_in("gx.npy"), *tp = path_in("gt.npy");
    write_tensor(xp, FU_F32, 2, xs, &X[0][0]);
    write_tensor(tp, FU_I64, 1, ts, T);
    a[n++] = "--input";
    a[n++] = binding(s->logits, xp);
    a[n++] = "--input";
    a[n++] = binding(s->target, tp);
    a[n] = NULL;
    tu_output r = run_args(a);
    EXPECT_SUCCESS(r);
    char want[128];
    snprintf(want, sizeof want, "\n%s: max_rel_error=", s->loss);
    CHECK_CONTAINS(r.out, want);
    const char *e = strstr(r.out, want);
    if (e) CHECK(strtod(e + strlen(want), NULL) <= 1e-5);
    fu_host_tensor t;
    fu_error err;
    fu_status st = fu_npy_read(out, &t, &err);
    CHECK(st == FU_OK);
    if (st == FU_OK) {
        CHECK_NEAR(fu_host_tensor_get(&t, 0), reference_loss(T), 1e-5);
        fu_host_tensor_free(&t);
    }
    tu_output_free(&r);
    unlink(out);

    /* an out-of-range class index on the GPU: an error naming the op; nothing written */
    double bad_t[4] = {2, 0, 7, 3};
    write_tensor(tp, FU_I64, 1, ts, bad_t);
    expect_failure(run_args(a), "out of range", out, __LINE__);

    /* the atomic scatter mode of the embedding backward, checked */
    char emb[1100];
    snprintf(emb, sizeof emb, "%s/embedding/embedding_bwd.fusion", suites_dir);
    r = RUN("run", emb, "--set", "V=50", "--set", "T=300", "--set", "D=24", "--device", "gpu", "--check", "--scatter",
            "atomic", "--seed", "5");
    EXPECT_SUCCESS(r);
    CHECK_CONTAINS(r.out, "dweight: max_rel_error=");
    e = strstr(r.out, "dweight: max_rel_error=");
    if (e) CHECK(strtod(e + 23, NULL) <= 1e-5);
    tu_output_free(&r);
}

int main(void)
{
    fuser_bin = getenv("FUSER_BIN");
    const char *suites = getenv("FUSER_SUITES_DIR");
    if (!fuser_bin || !suites) {
        fprintf(stderr, "test_cli: FUSER_BIN and FUSER_SUITES_DIR must be set\n");
        return 1;
    }
    suites_dir = suites;
    snprintf(suite, sizeof suite, "%s/cross_entropy/cross_entropy_fwd.fusion", suites);
    if (!tu_make_temp_dir(dir, sizeof dir, "test_cli")) return 1;
    /* Children that open the CUDA driver under AddressSanitizer need its
     * shadow gap unprotected (see runtime.cmake); a fresh compile cache makes
     * the NVRTC call counts of `fuser plan` predictable. */
    const char *asan = getenv("ASAN_OPTIONS");
    char asan_opts[1024];
    snprintf(asan_opts, sizeof asan_opts, "%s%sprotect_shadow_gap=0", asan && *asan ? asan : "",
             asan && *asan ? ":" : "");
    setenv("ASAN_OPTIONS", asan_opts, 1);
    if (!tu_make_temp_dir(cache_dir, sizeof cache_dir, "test_cli_cache")) return 1;
    setenv("FUSER_CACHE_DIR", cache_dir, 1);
    test_help();
    suite_info s;
    if (load_suite(&s)) {
        test_check_print(&s);
        test_run_random(&s);
        test_run_given(&s);
        test_bad_inputs(&s);
        bool gpu = test_plan(&s);
        test_codegen(&s);
        test_run_gpu(&s, gpu);
    } else {
        CHECK(!"the cross entropy suite loads");
    }
    free_suite(&s);
    test_partial_write();
    CHECK(tu_remove_tree(dir) == 0);
    tu_remove_tree(cache_dir);
    free_pool();
    return check_finish("test_cli");
}
