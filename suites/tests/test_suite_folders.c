/*
 * test_suite_folders.c -- suites as folders, through the built run_suite.
 *
 * Unit (no NVRTC): a suite folder written to a temporary directory (a fusion
 * file and a manifest, nothing else) is listed by `run_suite --list`; bad
 * manifests exit 2 with FILE:LINE:COL and write nothing (a missing fusion
 * file, an axis that binds no parameter, a size with the wrong number of
 * axes, a duplicate case name, an unknown keyword); a fusion file with a
 * parse error exits 2 with the parser's FILE:LINE:COL; --sizes NAME=VALUE.
 *
 * Compile (TEST_COMPILE; NVRTC, no GPU needed): the temporary suite runs
 * (compile-only), its run JSON passes the gate against itself
 * (scripts/compare), and `run_suite FILE.fusion` plans and compiles every
 * .fusion file of the source tree's suites.
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fuser_runtime.h"
#include "test_util.h"

static const char *bin;
static char dir[256];

static tu_output run(const char *const *args) { return tu_run_capture(bin, args); }

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static const char *scale_fusion =
    "# y = x * s + b over rows\n"
    "fusion scale_rows\n"
    "param R = 64\n"
    "param W = 32\n"
    "dtype DT = f32\n"
    "input x: DT[R, W]\n"
    "input b: DT[W]\n"
    "t = mul(x, 2.0)\n"
    "y = add(t, b)\n"
    "output y\n";

static const char *good_manifest =
    "# a suite written by the test\n"
    "suite mysuite\n"
    "size R x W\n"
    "about rows x width\n"
    "dtype DT = f32, bf16\n"
    "sizes default = 64x32, 128x48\n"
    "check R = min(R, 16)\n"
    "spot R\n"
    "case scale = scale.fusion\n";

/* root/NAME/ with suite.txt = manifest and scale.fusion. */
static void make_suite(const char *root, const char *name, const char *manifest)
{
    char path[1100];
    snprintf(path, sizeof path, "%s/%s", root, name);
    mkdir(root, 0777);
    CHECK(mkdir(path, 0777) == 0);
    snprintf(path, sizeof path, "%s/%s/scale.fusion", root, name);
    write_file(path, scale_fusion);
    snprintf(path, sizeof path, "%s/%s/suite.txt", root, name);
    write_file(path, manifest);
}

#ifndef TEST_COMPILE
/* The manifest `text` (in a folder of its own) is refused: exit 2, needle on
 * stderr, nothing on stdout, no --out file. */
static void expect_bad_manifest(const char *tag, const char *text, const char *needle)
{
    char root[512], out[600];
    snprintf(root, sizeof root, "%s/%s", dir, tag);
    make_suite(root, "bad", text);
    snprintf(out, sizeof out, "%s/run.json", root);
    const char *args[] = {"all", "--suites-dir", root, "--out", out, NULL};
    tu_output r = run(args);
    if (r.status != 2 || !strstr(r.err, needle))
        fprintf(stderr, "%s: exit %d, stderr: %s (expected '%s')\n", tag, r.status, r.err, needle);
    CHECK(r.status == 2);
    CHECK_CONTAINS(r.err, needle);
    CHECK_CONTAINS(r.err, "/bad/suite.txt:");
    CHECK(r.out[0] == '\0');
    CHECK(access(out, F_OK) != 0);
    tu_output_free(&r);
}

static void test_folders(void)
{
    char root[512];
    snprintf(root, sizeof root, "%s/good", dir);
    make_suite(root, "mysuite", good_manifest);
    const char *args[] = {"--suites-dir", root, "--list", NULL};
    tu_output r = run(args);
    if (r.status) fprintf(stderr, "%s\n", r.err);
    CHECK(r.status == 0);
    CHECK(strcmp(r.out, "mysuite/scale/fuser/f32/64x32\nmysuite/scale/fuser/f32/128x48\n"
                        "mysuite/scale/fuser/bf16/64x32\nmysuite/scale/fuser/bf16/128x48\n") == 0);
    tu_output_free(&r);
    const char *help[] = {"--suites-dir", root, "--help", NULL};
    r = run(help);
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "mysuite        RxW (rows x width), e.g. 64x32; cases: scale");
    tu_output_free(&r);
    const char *named[] = {"mysuite", "--suites-dir", root, "--list", "--sizes", "W=8;R=4", "--dtype", "bf16", NULL};
    r = run(named);
    CHECK(r.status == 0);
    CHECK(strcmp(r.out, "mysuite/scale/fuser/bf16/64x8\nmysuite/scale/fuser/bf16/4x32\n") == 0);
    tu_output_free(&r);

    expect_bad_manifest("missing", "suite bad\nsize R x W\nsizes default = 4x4\ncase a = nothere.fusion\n",
                        "suite.txt:4:10: case 'a': fusion file");
    expect_bad_manifest("unbound", "suite bad\nsize R x W x Q\nsizes default = 4x4x4\ncase a = scale.fusion\n",
                        "suite.txt:2:14: axis 'Q' binds no parameter of case 'a' (scale.fusion)");
    expect_bad_manifest("axes", "suite bad\nsize R x W\nsizes default = 4x4, 4x4x4\ncase a = scale.fusion\n",
                        "suite.txt:3:17: size '4x4x4' has more than 2 numbers");
    expect_bad_manifest("duplicate", "suite bad\nsize R x W\nsizes default = 4x4\ncase a = scale.fusion\n"
                                     "case a = scale.fusion, scatter=atomic\n",
                        "suite.txt:5:6: case 'a' is listed twice (first on line 4)");
    expect_bad_manifest("name", "suite other\nsize R x W\nsizes default = 4x4\ncase a = scale.fusion\n",
                        "suite.txt:1:7: suite 'other' is in folder 'bad'");
    expect_bad_manifest("noref", "suite bad\nsize R x W\nsizes default = 4x4\ncase a = scale.fusion, reference=x\n",
                        "suite.txt:4:24: case 'a' names reference=x, but the folder has no reference.cu");
    expect_bad_manifest("keyword", "suite bad\nsize R x W\nsizes default = 4x4\nrows 12\n", "suite.txt:4:1: unknown keyword 'rows'");
    expect_bad_manifest("expr", "suite bad\nsize R x W\nsizes default = 4x4\ncheck R = min(R, Z)\ncase a = scale.fusion\n",
                        "suite.txt:4:18: unknown name 'Z'");
    expect_bad_manifest("require", "suite bad\nsize R x W\nlet HALF = W / 2\nrequire W % 2 == 0 : W must be even\n"
                                   "sizes default = 4x5\ncase a = scale.fusion\n",
                        "W must be even");

    /* a fusion file as a suite: its parameters are the axes */
    char fusion[600], broken[600];
    snprintf(fusion, sizeof fusion, "%s/mysuite/scale.fusion", root);
    const char *file[] = {fusion, "--list", "--sizes", "R=8,W=4", NULL};
    r = run(file);
    CHECK(r.status == 0);
    CHECK(strcmp(r.out, "scale/scale_rows/fuser/f32/8x4\n") == 0);
    tu_output_free(&r);
    snprintf(broken, sizeof broken, "%s/broken.fusion", dir);
    write_file(broken, "fusion broken\ninput x: f32[4]\ny = frobnicate(x)\noutput y\n");
    const char *bad[] = {broken, "--list", NULL};
    r = run(bad);
    CHECK(r.status == 2);
    CHECK_CONTAINS(r.err, "broken.fusion:3:5:");
    CHECK(r.out[0] == '\0');
    tu_output_free(&r);
    const char *badsize[] = {fusion, "--list", "--sizes", "Q=8", NULL};
    r = run(badsize);
    CHECK(r.status == 2);
    CHECK_CONTAINS(r.err, "'Q' is not an axis of scale");
    tu_output_free(&r);

    /* A file's names and axes as the fuser takes them, none cut short: five size parameters (a
     * fifth was once silently no axis), a parameter of 22 characters (one of 16 was), an f16
     * input (the suites took only f32 and bf16); a file's name longer than a suite's is refused */
    char wide[600], longname[700];
    snprintf(wide, sizeof wide, "%s/five_axes_and_f16_of_a_name_longer_than_thirty_two.fusion", dir);
    write_file(wide, "fusion five_axes_and_a_fusion_name_longer_than_thirty_two\nparam A = 2\nparam B = 3\n"
                     "param C = 4\nparam D = 5\nparam SEQUENCE_LENGTH_TOKENS = 6\ninput x: f16[A, B, C, D, "
                     "SEQUENCE_LENGTH_TOKENS]\ny = neg(x)\noutput y\n");
    const char *wide_args[] = {wide, "--list", "--sizes", "SEQUENCE_LENGTH_TOKENS=7,D=1", NULL};
    r = run(wide_args);
    if (r.status) fprintf(stderr, "%s", r.err);
    CHECK(r.status == 0);
    CHECK(strcmp(r.out, "five_axes_and_f16_of_a_name_longer_than_thirty_two/five_axes_and_a_fusion_name_longer_than_"
                        "thirty_two/fuser/f16/2x3x4x1x7\n") == 0);
    tu_output_free(&r);
    snprintf(longname, sizeof longname, "%s/%s.fusion", dir,
             "a_file_name_of_sixty_four_characters_which_no_suite_name_can_take");
    write_file(longname, "fusion f\ninput x: f32[4]\ny = neg(x)\noutput y\n");
    const char *long_args[] = {longname, "--list", NULL};
    r = run(long_args);
    CHECK(r.status == 2);
    CHECK_CONTAINS(r.err, "names its suite, and a suite's name takes at most 63");
    CHECK(r.out[0] == '\0');
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

    /* a new suite folder, compile-only, its JSON through the gate */
    char root[512], json[600];
    snprintf(root, sizeof root, "%s/good", dir);
    make_suite(root, "mysuite", good_manifest);
    snprintf(json, sizeof json, "%s/run.json", dir);
    const char *args[] = {"mysuite", "--suites-dir", root, "--compile-only", "--out", json, NULL};
    tu_output r = run(args);
    if (r.status) fprintf(stderr, "stdout:\n%s\nstderr:\n%s\n", r.out, r.err);
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "mysuite/scale  fuser");
    CHECK_CONTAINS(r.out, "planned and compiled 4 cases");
    tu_output_free(&r);
    char *text = tu_read_file(json, NULL);
    CHECK(text && strstr(text, "\"bytes_formula\": \"2*R*W*elem + W*elem\""));
    free(text);
    const char *gate = getenv("FUSEBENCH_GATE_DIR"), *src = getenv("FUSEBENCH_SOURCE_DIR");
    if (gate && gate[0] && src) {
        char compare[600];
        snprintf(compare, sizeof compare, "%s/scripts/compare", src);
        const char *cargs[] = {json, json, NULL};
        r = tu_run_capture(compare, cargs);
        if (r.status) fprintf(stderr, "scripts/compare: exit %d\n%s\n%s\n", r.status, r.out, r.err);
        CHECK(r.status == 0);
        tu_output_free(&r);
    } else {
        fprintf(stderr, "note: the gate is not built here (no cJSON): scripts/compare not run\n");
    }

    /* every .fusion file of the suites, as a suite of its own */
    const char *suites = getenv("FUSEBENCH_SUITES_DIR");
    DIR *d = opendir(suites);
    CHECK(d != NULL);
    int files = 0;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char sub[1024];
        snprintf(sub, sizeof sub, "%s/%s", suites, e->d_name);
        DIR *s = opendir(sub);
        if (!s) continue;
        struct dirent *f;
        while ((f = readdir(s))) {
            size_t n = strlen(f->d_name);
            if (n < 8 || strcmp(f->d_name + n - 7, ".fusion") != 0) continue;
            char path[2048];
            snprintf(path, sizeof path, "%s/%s", sub, f->d_name);
            const char *fargs[] = {path, gpu ? "--compile-only" : NULL, NULL};
            r = run(fargs);
            if (r.status) fprintf(stderr, "run_suite %s: exit %d\n%s\n%s\n", path, r.status, r.out, r.err);
            CHECK(r.status == 0);
            CHECK_CONTAINS(r.out, "fuser");
            tu_output_free(&r);
            files++;
        }
        closedir(s);
    }
    if (d) closedir(d);
    CHECK(files >= 8);
}
#endif

int main(void)
{
    bin = getenv("RUN_SUITE_BIN");
    if (!bin) {
        fprintf(stderr, "RUN_SUITE_BIN is not set (ctest sets it)\n");
        return 1;
    }
    if (!tu_make_temp_dir(dir, sizeof dir, "fusebench_folders")) return 1;
#ifndef TEST_COMPILE
    test_folders();
    const char *name = "test_suite_folders";
#else
    test_compile();
    const char *name = "test_suite_folders_compile";
#endif
    tu_remove_tree(dir);
    return check_finish(name);
}
