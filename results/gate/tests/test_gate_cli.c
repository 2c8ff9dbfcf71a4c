/*
 * test_gate_cli.c -- the gate's programs as a user meets them, run as
 * subprocesses on synthetic run files in a temporary directory:
 * fusebench-compare's exit status (0 same, 1 regressed, 2 bad input: missing
 * file, other GPU model, other schema, malformed JSON, bad options and
 * thresholds files, an unwritable report) with its message on stderr; its
 * Markdown, JSON and TSV reports; fusebench-json2tsv; fusebench-merge.
 *
 *   test_gate_cli COMPARE JSON2TSV MERGE
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "synth.h"
#include "test_util.h"

typedef struct cli_env {
    const char *compare, *json2tsv, *merge;
    char dir[256];
} cli_env;

static void path_in(const cli_env *env, const char *name, char *out, size_t size)
{
    snprintf(out, size, "%s/%s", env->dir, name);
}

static void write_text(const cli_env *env, const char *name, const char *text)
{
    char p[512];
    path_in(env, name, p, sizeof p);
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

static void write_run(const cli_env *env, const char *name, const synth_opts *o)
{
    char *t = synth_run_text(o);
    write_text(env, name, t);
    free(t);
}

/* Runs "cd DIR && CMD ARGS >out.txt 2>err.txt"; returns the exit status (or
 * -1); stdout and stderr are left in *out and *err (free them). */
static int run_cmd(const cli_env *env, const char *cmd, const char *args, char **out, char **err)
{
    char line[4096], po[512], pe[512];
    path_in(env, "out.txt", po, sizeof po);
    path_in(env, "err.txt", pe, sizeof pe);
    snprintf(line, sizeof line, "cd '%s' && '%s' %s >'%s' 2>'%s'", env->dir, cmd, args, po, pe);
    int st = system(line);
    *out = tu_read_file(po, NULL);
    *err = tu_read_file(pe, NULL);
    if (!*out) *out = calloc(1, 1);
    if (!*err) *err = calloc(1, 1);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Expects status `want` and, when needle is not NULL, needle in stderr (for
 * status 2) or stdout. */
static void expect(const cli_env *env, const char *cmd, const char *args, int want, const char *needle)
{
    char *out, *err;
    int got = run_cmd(env, cmd, args, &out, &err);
    CHECK(got == want);
    if (got != want) fprintf(stderr, "  %s %s: exit %d, want %d\n  stderr: %s\n", cmd, args, got, want, err);
    if (needle) CHECK_CONTAINS(want == 2 ? err : out, needle);
    if (want == 2) {
        CHECK(err[0] != '\0');   /* a message */
        CHECK(strlen(err) < 2000); /* one clear message, not a dump */
    }
    free(out);
    free(err);
}

static void test_compare(const cli_env *env)
{
    const char *c = env->compare;
    synth_opts o;
    synth_defaults(&o);
    write_run(env, "base.json", &o);
    o.seed = 2;
    write_run(env, "aa.json", &o);
    o.scale = 1.05;
    write_run(env, "slow.json", &o);
    o.scale = 1.0;
    o.kernels_plus = 1;
    write_run(env, "kernels.json", &o);
    o.kernels_plus = 0;
    o.fail = "embedding/fwd/fuser/*";
    write_run(env, "failed.json", &o);
    o.fail = NULL;
    o.gpu_name = "NVIDIA A100-SXM4-80GB";
    write_run(env, "a100.json", &o);
    o.gpu_name = "NVIDIA H200";
    o.schema = "fusebench-run/0";
    write_run(env, "v0.json", &o);
    write_text(env, "broken.json", "{\"context\": {\"schema\": \"fusebench-run/1\", \"gpu_name\": \"NVIDIA H200\"},\n"
                                   "\"benchmarks\": [ {\"name\": \"x\", \"real_time\": 1,, } ] }\n");
    write_text(env, "empty.json", "");
    write_text(env, "gb.json", "{\"context\": {\"date\": \"2025\"}, \"benchmarks\": []}\n");
    write_text(env, "thr.txt", "# overrides\nembedding/* 10\n");
    write_text(env, "badthr.txt", "embedding/* ten\n");

    expect(env, c, "base.json aa.json", 0, "## Regression gate: passed");
    expect(env, c, "base.json base.json", 0, "0 SLOWER");
    expect(env, c, "base.json slow.json", 1, "**SLOWER**");
    expect(env, c, "base.json kernels.json", 1, "launches: kernels 1 -> 2");
    expect(env, c, "base.json failed.json", 1, "correctness");
    expect(env, c, "base.json slow.json --threshold 8", 0, NULL);
    expect(env, c, "base.json slow.json --threshold=8", 0, NULL);
    expect(env, c, "base.json slow.json --filter 'embedding/*' --thresholds thr.txt", 0, "SAME");
    expect(env, c, "base.json slow.json --thresholds thr.txt", 1, NULL);
    expect(env, c, "base.json slow.json --alpha 1e-300", 0, NULL);
    expect(env, c, "--help", 0, "usage");

    /* Bad input: exit 2 and a message that says what is wrong. */
    expect(env, c, "base.json nothere.json", 2, "nothere.json: cannot open");
    expect(env, c, "nothere.json aa.json", 2, "baseline: nothere.json");
    expect(env, c, "base.json a100.json", 2, "different GPU models");
    expect(env, c, "base.json a100.json", 2, "NVIDIA A100-SXM4-80GB");
    expect(env, c, "base.json a100.json", 2, "\"NVIDIA H200\"");
    expect(env, c, "base.json v0.json", 2, "schema mismatch");
    expect(env, c, "aa.json v0.json", 2, "fusebench-run/0");
    expect(env, c, "base.json gb.json", 2, "schema mismatch");
    expect(env, c, "base.json broken.json", 2, "broken.json:2:");
    expect(env, c, "base.json empty.json", 2, "empty file");
    expect(env, c, "aa.json", 2, "give a baseline and a run");
    expect(env, c, "base.json aa.json more.json", 2, "too many files");
    expect(env, c, "base.json aa.json --bogus", 2, "unknown option '--bogus'");
    expect(env, c, "base.json aa.json --threshold", 2, "needs a valid value");
    expect(env, c, "base.json aa.json --threshold -3", 2, "needs a valid value");
    expect(env, c, "base.json aa.json --alpha 2", 2, "needs a valid value");
    expect(env, c, "base.json aa.json --min-samples 2.5", 2, "needs a valid value");
    expect(env, c, "base.json aa.json --thresholds none.txt", 2, "none.txt");
    expect(env, c, "base.json aa.json --thresholds badthr.txt", 2, "badthr.txt:1:");
    expect(env, c, "base.json aa.json --json /nonexistent/dir/g.json", 2, "cannot write the JSON report");

    /* Reports in files. */
    expect(env, c, "base.json slow.json --markdown g.md --json g.json --tsv g.tsv", 1,
           "compare: FAILED");
    char p[512];
    path_in(env, "g.md", p, sizeof p);
    char *md = tu_read_file(p, NULL);
    CHECK_CONTAINS(md, "| case | gated | baseline median (us) | run median (us) | change | 99% interval | noise | p-value | verdict | reason |");
    CHECK_CONTAINS(md, "| embedding/fwd/fuser/bf16/8192x768 |");
    free(md);
    path_in(env, "g.json", p, sizeof p);
    char *js = tu_read_file(p, NULL);
    cJSON *j = js ? cJSON_Parse(js) : NULL;
    CHECK(j != NULL);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "regressed")));
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "cases")) > 30);
    cJSON_Delete(j);
    free(js);
    path_in(env, "g.tsv", p, sizeof p);
    char *tsv = tu_read_file(p, NULL);
    CHECK_CONTAINS(tsv, "name\tverdict\ttiming\treason\t");
    CHECK_CONTAINS(tsv, "\tSLOWER\tSLOWER\ttime\t");
    free(tsv);
    expect(env, c, "base.json aa.json -q", 0, NULL);
    expect(env, c, "--version", 0, "fusebench-compare ");
    expect(env, c, "--help", 0, "BASELINE.json RUN.json");
    expect(env, c, "base.json slow.json --only-changed", 1, "(only those not SAME)");
    expect(env, c, "base.json slow.json --gate-variants torch_eager --filter '*/fuser/*'", 0, "| no |");
    expect(env, c, "base.json slow.json --max-noise 0", 0, "AMBIGUOUS");
    expect(env, c, "base.json slow.json --test mwu", 1, "Mann-Whitney");
    expect(env, c, "base.json slow.json --test t", 2, "needs a valid value");
    expect(env, c, "base.json slow.json --min-reps 1", 2, "needs a valid value");
    expect(env, c, "base.json slow.json --gate-variants=", 2, "needs a valid value");
    expect(env, c, "base.json aa.json", 0, "Geometric mean of the change");
}

static void test_json2tsv(const cli_env *env)
{
    const char *t = env->json2tsv;
    expect(env, t, "context base.json", 0, "gpu_key\tnvidia_h200\n");
    expect(env, t, "context base.json", 0, "copy_bandwidth_gbps\t4000\n");
    expect(env, t, "cases base.json", 0,
           "name\tsuite\tcase\tvariant\tdtype\tsize\tstatus\treps\tn_samples\tmedian_us\tgbps\t");
    expect(env, t, "cases base.json", 0, "embedding/fwd/fuser/bf16/8192x768\tembedding\tfwd\tfuser\tbf16\t8192x768\tok\t10\t10\t");
    expect(env, t, "cases failed.json", 0, "embedding/fwd/fuser/bf16/8192x768\tembedding\tfwd\tfuser\tbf16\t8192x768\tfailed\t10\t0\t\t");
    expect(env, t, "samples base.json", 0, "qkv_split/fwd/fuser/bf16/12x1024x768\t9\t");
    expect(env, t, "cases broken.json", 2, "not valid JSON");
    expect(env, t, "cases v0.json", 2, "schema mismatch");
    expect(env, t, "tables base.json", 2, "usage");
    expect(env, t, "", 2, "usage");

    /* gbps is bytes over the median time: the model's GB/s, within the noise. */
    char *out, *err;
    CHECK(run_cmd(env, t, "cases base.json", &out, &err) == 0);
    const char *row = strstr(out, "qkv_split/fwd/fuser/bf16/12x1024x768\t");
    double gbps = 0;
    if (row) {
        const char *f = row;
        for (int k = 0; k < 10 && f; k++) f = strchr(f + 1, '\t');
        if (f) gbps = atof(f + 1);
    }
    CHECK(gbps > 0.8 * 4000 * 0.86 && gbps < 4000 * 0.86);
    free(out);
    free(err);
}

static void test_merge(const cli_env *env)
{
    const char *m = env->merge;
    synth_opts o;
    synth_defaults(&o);
    o.only = "embedding/*";
    o.copy_gbps = 4000;
    write_run(env, "s_embedding.json", &o);
    o.only = "qkv_split/*";
    o.copy_gbps = 4100;
    write_run(env, "s_qkv.json", &o);
    o.only = "embedding/fwd/*";
    write_run(env, "s_dup.json", &o);
    o.only = "cross_entropy/*";
    o.commit = "fff0000";
    write_run(env, "s_other_commit.json", &o);
    o.commit = "abc1234";
    o.gpu_name = "NVIDIA H100";
    write_run(env, "s_h100.json", &o);

    expect(env, m, "-o merged.json s_embedding.json s_qkv.json", 0, NULL);
    char p[512];
    path_in(env, "merged.json", p, sizeof p);
    char *js = tu_read_file(p, NULL);
    cJSON *j = js ? cJSON_Parse(js) : NULL;
    CHECK(j != NULL);
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(j, "context");
    CHECK_NEAR(cJSON_GetObjectItemCaseSensitive(ctx, "copy_bandwidth_gbps")->valuedouble, 4050, 1e-12);
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(ctx, "shards")) == 2);
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(ctx, "schema")->valuestring, "fusebench-run/1") == 0);
    cJSON_Delete(j);
    free(js);
    /* The merged file is a run the gate reads: every case of both shards. */
    expect(env, env->json2tsv, "cases merged.json", 0, "embedding/bwd/torch_compile/bf16/32768x4096\t");
    expect(env, env->json2tsv, "cases merged.json", 0, "qkv_split/fwd/torch_compile/bf16/16x1024x1600\t");
    expect(env, env->compare, "base.json merged.json", 0, "not in the run");

    expect(env, m, "-o m2.json s_embedding.json s_h100.json", 2, "different GPU models");
    expect(env, m, "-o m2.json s_embedding.json s_dup.json", 2, "is in both");
    expect(env, m, "-o m2.json s_embedding.json s_other_commit.json", 2, "different builds");
    expect(env, m, "-o m2.json s_embedding.json broken.json", 2, "not valid JSON");
    expect(env, m, "s_embedding.json", 2, "usage");
    path_in(env, "m2.json", p, sizeof p);
    struct stat st;
    CHECK(stat(p, &st) != 0); /* nothing written on failure */
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: test_gate_cli COMPARE JSON2TSV MERGE\n");
        return 2;
    }
    cli_env env = {argv[1], argv[2], argv[3], ""};
    if (!tu_make_temp_dir(env.dir, sizeof env.dir, "gate_cli")) return 1;
    test_compare(&env);
    test_json2tsv(&env);
    test_merge(&env);
    int rc = check_finish("test_gate_cli");
    if (rc == 0) {
        if (tu_remove_tree(env.dir) != 0) fprintf(stderr, "could not remove %s\n", env.dir);
    } else {
        fprintf(stderr, "files kept in %s\n", env.dir);
    }
    return rc;
}
