/*
 * test_gate_robust.c -- issue 21 for the gate (fusebench-compare, argv[1]):
 *   - a count that is not a representable integer ("kernels": 1e300, 1e19,
 *     -1, 2.5) is a clear error, exit 2; before, 1e300 was cast to long
 *     (undefined behaviour: this build stops on it under UBSan);
 *   - --markdown F --json G where G cannot be written leaves F as it was
 *     (before, F was overwritten and then the run failed on G).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>

#include "check.h"
#include "test_util.h"

static char dir[256];

static void write_text(const char *name, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    CHECK(tu_write_text(p, text));
}

/* A run with one benchmark whose "kernels" is the given JSON number text. */
static void write_run(const char *name, const char *kernels)
{
    char text[2048];
    snprintf(text, sizeof text,
             "{\"context\": {\"schema\": \"fusebench-run/1\", \"gpu_name\": \"NVIDIA H200\", \"gpu_key\": "
             "\"nvidia_h200\", \"copy_bandwidth_gbps\": 4000},\n"
             " \"benchmarks\": [{\"name\": \"embedding/fwd/fuser/f32/8x4\", \"run_type\": \"iteration\", "
             "\"repetitions\": 1, \"repetition_index\": 0, \"real_time\": 5.0, \"time_unit\": \"us\", "
             "\"suite\": \"embedding\", \"case\": \"fwd\", \"variant\": \"fuser\", \"dtype\": \"f32\", "
             "\"size\": \"8x4\", \"kernels\": %s, \"launches\": 1, \"segments\": 1, \"status\": \"ok\"}]}\n",
             kernels);
    write_text(name, text);
}

static int run(const char *compare, const char *args, char **err)
{
    char line[4096], pe[512];
    snprintf(pe, sizeof pe, "%s/err.txt", dir);
    snprintf(line, sizeof line, "cd '%s' && '%s' %s >/dev/null 2>'%s'", dir, compare, args, pe);
    int st = system(line);
    *err = tu_read_file(pe, NULL);
    if (!*err) *err = calloc(1, 1);
    return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_gate_robust FUSEBENCH-COMPARE\n");
        return 1;
    }
    const char *compare = argv[1];
    if (!tu_make_temp_dir(dir, sizeof dir, "test_gate_robust")) return 1;
    write_run("base.json", "1");
    const char *bad[] = {"1e300", "1e19", "-1", "2.5", "9007199254740993e3"};
    for (int i = 0; i < 5; i++) {
        write_run("bad.json", bad[i]);
        char *err;
        int st = run(compare, "base.json bad.json", &err);
        CHECK(st == 2);
        CHECK_CONTAINS(err, "\"kernels\" is not a non-negative integer");
        if (st != 2) fprintf(stderr, "  kernels %s: exit %d, stderr: %s\n", bad[i], st, err);
        free(err);
    }
    write_run("ok.json", "9007199254740992"); /* 2^53: the largest allowed */
    char *err;
    CHECK(run(compare, "base.json ok.json", &err) == 1); /* baseline first; a rise in kernels: a regression, not an input error */
    free(err);

    /* Unbounded reads: a device or a FIFO is not a run file (before, /dev/zero grew without limit). */
    CHECK(run(compare, "/dev/zero base.json", &err) == 2);
    CHECK_CONTAINS(err, "/dev/zero: not a regular file");
    free(err);

    write_text("report.md", "OLD REPORT");
    CHECK(run(compare, "base.json base.json --markdown report.md --json no_such_dir/report.json", &err) == 2);
    CHECK_CONTAINS(err, "no_such_dir/report.json");
    free(err);
    char p[512];
    snprintf(p, sizeof p, "%s/report.md", dir);
    char *md = tu_read_file(p, NULL);
    CHECK(md && strcmp(md, "OLD REPORT") == 0);
    free(md);
    CHECK(run(compare, "base.json base.json --markdown report.md --json report.json", &err) == 0);
    free(err);
    md = tu_read_file(p, NULL);
    CHECK(md && strstr(md, "embedding/fwd/fuser/f32/8x4"));
    free(md);
    tu_remove_tree(dir);
    return check_finish("test_gate_robust");
}
