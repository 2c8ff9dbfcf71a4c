/*
 * fuzz_main.c -- `fuser-fuzz`: seeded random fusions (gen.c) and their check
 * against the planner, NVRTC, the interpreter and the GPU (check.c).
 *
 *   fuser-fuzz write --count N --seed S --out DIR [--ops default|extended|rows]
 *       writes DIR/fz_S_I.fusion, I = 0 .. N-1, in the text format (for other
 *       tools: torch.compile's kernel counts on the same fusions); with
 *       --ops extended, fx_S_I.fusion: the other documented ops too (masks,
 *       where, iota, log, reciprocal, pow, take, scatter_add; gen.c); with
 *       --ops rows, fr_S_I.fusion: tall ones (1057 to 8209 rows, a per-row
 *       input, `where` on one bool a row)
 *   fuser-fuzz check [--count N] [--seed S] [--dir DIR] [--device plan|compile|gpu]
 *                    [--ops default|extended|rows] [--sms N]
 *       checks the N fusions of seed S (or every .fusion file of DIR) and
 *       prints the failures, then the kernel counts beside the lower bound;
 *       each fusion runs on the interpreter (and on the GPU against it) with
 *       two draws of inputs: normal(0, 1), then those scaled by 1/32; the
 *       planner's rewritten fusion is interpreted too, against the decomposed
 *       fusion (no GPU needed); --sms N plans for N SMs instead of the
 *       device's, so that small fusions' rows outnumber the grid
 *
 *   fuser-fuzz sweep [--device plan|compile|gpu] [--sms N] [--out DIR]
 *       the same checks on the sweep (sweep.c): every op of the text format
 *       over every dtype of each operand and extents 0, 1, 3 and 1027, where the
 *       verifier accepts it; --out DIR writes them (sw_*.fusion) instead
 *
 * Exit status: 0 all passed, 1 some failed, 2 usage or I/O errors, 77 for
 * --device gpu where there is no GPU.
 */
#define _XOPEN_SOURCE 700

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzzgen.h"
#include "runtime.h"

static int usage(FILE *fp, int code)
{
    fprintf(fp, "usage: fuser-fuzz write --count N --seed S --out DIR [--ops default|extended|rows]\n"
                "       fuser-fuzz check [--count N] [--seed S] [--dir DIR] [--device plan|compile|gpu]\n"
                "                        [--ops default|extended|rows] [--sms N]\n"
                "       fuser-fuzz sweep [--device plan|compile|gpu] [--sms N] [--out DIR]\n");
    return code;
}

static bool parse_u64(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') return false;
    *v = x;
    return true;
}

/* Writes each fusion to DIR/NAME.fusion in the text format. */
static int write_fusions(fu_fusion *const *fs, int n, const char *dir)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "fuser-fuzz: cannot create '%s': %s\n", dir, strerror(errno));
        return 2;
    }
    for (int i = 0; i < n; i++) {
        char *text = fu_fusion_print(fs[i]);
        char path[4096];
        snprintf(path, sizeof path, "%s/%s.fusion", dir, fu_fusion_name(fs[i]));
        FILE *fp = text ? fopen(path, "w") : NULL;
        bool ok = fp && fputs(text, fp) >= 0;
        if (fp && fclose(fp) != 0) ok = false;
        free(text);
        if (!ok) {
            fprintf(stderr, "fuser-fuzz: cannot write '%s'\n", path);
            return 2;
        }
    }
    printf("wrote %d fusions to %s\n", n, dir);
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every .fusion file of dir, built with its defaults. */
static int load_dir(const char *dir, fu_fusion ***out, int *n)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "fuser-fuzz: cannot read '%s': %s\n", dir, strerror(errno));
        return 2;
    }
    char **names = NULL;
    int nn = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 8 || strcmp(e->d_name + len - 7, ".fusion")) continue;
        names = realloc(names, (size_t)(nn + 1) * sizeof *names);
        names[nn++] = strdup(e->d_name);
    }
    closedir(d);
    if (nn) qsort(names, (size_t)nn, sizeof *names, by_name);
    *out = calloc((size_t)nn + 1, sizeof **out);
    *n = 0;
    int rc = 0;
    for (int i = 0; i < nn; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        fu_program *p = NULL;
        fu_error err;
        if (fu_program_parse_file(path, &p, &err) || fu_program_build(p, NULL, 0, &(*out)[*n], &err)) {
            fprintf(stderr, "fuser-fuzz: %s\n", err.message);
            rc = 2;
        } else {
            (*n)++;
        }
        fu_program_free(p);
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) return usage(stderr, 2);
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) return usage(stdout, 0);
    bool write = !strcmp(argv[1], "write"), sweep = !strcmp(argv[1], "sweep");
    if (!write && !sweep && strcmp(argv[1], "check")) return usage(stderr, 2);
    uint64_t seed = 1, count = 200, sms = 0;
    const char *out = NULL, *dir = NULL, *device = "compile";
    int ops = FZ_OPS_DEFAULT;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout, 0);
        if (!v) {
            fprintf(stderr, "fuser-fuzz: option '%s' needs a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--count") && !sweep && parse_u64(v, &count) && count <= 100000) continue;
        if (!strcmp(a, "--seed") && !sweep && parse_u64(v, &seed)) continue;
        if (!strcmp(a, "--sms") && !write && parse_u64(v, &sms) && sms >= 1 && sms <= 4096) continue;
        if (!strcmp(a, "--out") && (write || sweep)) out = v;
        else if (!strcmp(a, "--dir") && !write && !sweep) dir = v;
        else if (!strcmp(a, "--ops") && !sweep &&
                 (!strcmp(v, "default") || !strcmp(v, "extended") || !strcmp(v, "rows")))
            ops = !strcmp(v, "extended") ? FZ_OPS_EXTENDED : !strcmp(v, "rows") ? FZ_OPS_ROWS : FZ_OPS_DEFAULT;
        else if (!strcmp(a, "--device") && !write &&
                 (!strcmp(v, "plan") || !strcmp(v, "compile") || !strcmp(v, "gpu"))) device = v;
        else {
            fprintf(stderr, "fuser-fuzz: bad option '%s %s'\n", a, v);
            return usage(stderr, 2);
        }
    }
    if (write && !out) {
        fprintf(stderr, "fuser-fuzz: write needs --out DIR\n");
        return 2;
    }
    fz_device dev = !strcmp(device, "plan") ? FZ_PLAN : !strcmp(device, "gpu") ? FZ_GPU : FZ_COMPILE;
    fu_fusion **fs = NULL;
    int n = 0, rc = 0, sweep_failures = 0;
    if (dir) {
        rc = load_dir(dir, &fs, &n);
    } else if (sweep) {
        int rejected = 0, empty = 0;
        if ((n = fz_sweep(&fs, &rejected, &empty, stdout)) < 0) {
            n = 0;
            rc = 2;
        } else {
            printf("sweep: %d fusions the verifier accepts (%d combinations refused)\n", n, rejected);
            sweep_failures = empty;
        }
    } else {
        fs = calloc((size_t)count + 1, sizeof *fs);
        for (int i = 0; fs && i < (int)count; i++)
            if ((fs[n] = fz_generate_ops(seed, i, ops))) n++;
        if (!fs || n < (int)count) rc = 2;
    }
    if (rc == 2 && !dir) fprintf(stderr, "fuser-fuzz: out of memory generating fusions\n");
    if (!rc && out) {
        rc = write_fusions(fs, n, out);
        if (!rc && sweep_failures) rc = 1; /* written, and said which case the verifier refused whole */
        for (int i = 0; i < n; i++) fu_fusion_free(fs[i]);
        free(fs);
        return rc;
    }
    fu_runtime *rt = NULL;
    fu_error err;
    fu_runtime_options ro = {0};
    ro.compile_only = dev != FZ_GPU;
    if (!rc && dev != FZ_PLAN && fu_runtime_open(&ro, &rt, &err) != FU_OK) {
        fprintf(stderr, "fuser-fuzz: %s\n", err.message);
        rc = 2;
    }
    if (!rc && dev == FZ_GPU && !fu_runtime_has_device(rt)) {
        printf("no GPU: %s\n", fu_runtime_describe(rt));
        rc = 77;
    }
    if (!rc && dev == FZ_COMPILE && !fu_runtime_has_nvrtc(rt)) {
        printf("no NVRTC: %s\n", fu_runtime_describe(rt));
        rc = 77;
    }
    if (!rc) {
        fz_report rep;
        memset(&rep, 0, sizeof rep);
        fz_check(fs, n, dev, (int)sms, rt, stdout, &rep);
        fz_print_report(stdout, &rep);
        rc = rep.failures || sweep_failures ? 1 : 0;
    }
    if (rt) fu_runtime_close(rt);
    for (int i = 0; i < n; i++) fu_fusion_free(fs[i]);
    free(fs);
    return rc;
}
