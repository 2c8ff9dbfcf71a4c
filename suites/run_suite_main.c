/*
 * run_suite_main.c -- the `run_suite` command: parse the options, list the
 * benchmarks, plan and compile them, and (with a GPU) check and time them.
 * See usage() for the options. Exit status: 0 when every case is ok (or,
 * without a GPU, planned and compiled), 1 when a case failed or the run could
 * not be made, 2 for bad usage.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <dirent.h>

#include "bench_shim.h"
#include "suite.h"
#include "torch_merge.h"

#ifndef HB_SUITES_DIR
#define HB_SUITES_DIR "suites"
#endif

enum { EXIT_OK = 0, EXIT_FAILED = 1, EXIT_USAGE = 2 };

typedef enum { FORMAT_TABLE, FORMAT_JSON, FORMAT_MD, FORMAT_CSV } out_format;

typedef struct options {
    const char *suite;      /* the first target named */
    const char **targets;   /* every one: suites, 'all', .fusion files, folders */
    int ntargets;
    const char *sizes;      /* NULL: the suite's defaults */
    const char *dtypes;     /* NULL: the suite's defaults */
    const char *out;
    const char *filter;
    const char *suites_dir;
    const char *write_fusions; /* --write-fusions FILE */
    out_format format;
    bool list, help, version, compile_only, with_torch;
    hb_runner_options run;
    int ngb;
    char **gb;              /* --benchmark_* flags, pointers into argv */
} options;

static void usage(FILE *f, const hb_suite_set *set)
{
    fputs("usage: run_suite SUITE|all|FILE.fusion|DIR ... [options] [--benchmark_FLAG=VALUE ...]\n"
          "\n"
          "Checks and times a benchmark suite: every case is computed by each variant (the fuser's\n"
          "plan; the hand-written reference kernels), compiled with NVRTC, its output checked against\n"
          "the CPU interpreter, then timed on the GPU (CUDA events around the whole call, the median of\n"
          "repeated samples), with what it launched recorded by CUPTI.\n"
          "\n"
          "suites (every folder of the suites directory with a suite.txt, docs/suites.md):\n",
          f);
    for (int i = 0; set && i < set->n; i++) {
        const hb_suite *s = set->suites[i];
        fprintf(f, "  %-14s %s; cases:", s->name, s->size_help);
        for (int c = 0; c < s->ncases; c++) fprintf(f, "%s %s", c ? "," : "", s->cases[c].name);
        fprintf(f, "\n  %-14s   default sizes %s\n", "", s->default_sizes);
    }
    fputs("  all            every suite at its default (or sweep) sizes\n"
          "  FILE.fusion    one fusion file as a suite: its integer parameters are the axes\n"
          "                 (--sizes N=4096,V=50304 or 4096x50304 in the file's order; several\n"
          "                 sizes joined by ';'), its dtype parameter takes --dtype\n"
          "  DIR            a suite folder (with a suite.txt), or a folder of .fusion files: each\n"
          "                 file a suite of its own, in name order\n"
          "  several .fusion files and folders run together (one run, one run JSON, one PyTorch\n"
          "  process); --sizes then takes only 'default' or 'sweep', as with 'all'\n"
          "\n"
          "options:\n"
          "  --sizes LIST         comma-separated sizes (8192x32768,4096x50304), NAME=VALUE lists\n"
          "                       (N=4096,V=50304;N=8192), or 'default' or 'sweep'\n"
          "  --dtype LIST         f32,bf16,f16,f64 (default: the suite's dtypes, f32 and bf16 for every suite\n"
          "                       above; a fusion file's own: its dtype parameter's value); the reference\n"
          "                       kernels take f32 and bf16, and have no rows of another\n"
          "  --mode cold|hot      flush the L2 before every sample (cold, the default) or not (hot)\n"
          "  --format table|json|md|csv  what goes to standard output (default: table); md and csv: one\n"
          "                       row per case (docs/results-schema.md; scripts/table renders a stored run so)\n"
          "  --out FILE           also write the run JSON (docs/results-schema.md) to FILE\n"
          "  --filter REGEX       only benchmarks whose name, suite/case/variant/dtype/size, matches\n"
          "                       (POSIX extended regular expression)\n"
          "  --list               print the benchmark names and exit\n"
          "  --repetitions N      Google Benchmark repetitions per case (default 3)\n"
          "  --time-limit S       at most S seconds of samples per repetition (default 2)\n"
          "  --min-samples N      at least N samples per repetition (default 10)\n"
          "  --max-noise PCT      sample until (p75-p25)/median is under PCT percent (default 2)\n"
          "  --version            the version\n"
          "  --seed N             seed of the random inputs\n"
          "  --compile-only       plan and compile only, even with a GPU\n"
          "  --with-torch         also run PyTorch eager and torch.compile on the same cases, sizes, dtypes\n"
          "                       and L2 mode (reference/torch_bench.py with $FUSEBENCH_PYTHON or python3),\n"
          "                       merge their rows, and give every row its speed-up over torch.compile;\n"
          "                       without python3, PyTorch or a GPU it says so in one line and goes on\n"
          "  --write-fusions FILE write the selected cases' fusions, as --with-torch hands them to\n"
          "                       reference/torch_bench.py (its --fusions), and stop (implies --compile-only)\n"
          "  --suites-dir DIR     where the suite folders are (default: $FUSEBENCH_SUITES_DIR, else the\n"
          "                       source tree's suites/)\n"
          "  -h, --help           this text\n"
          "  --benchmark_...      passed to Google Benchmark (--benchmark_filter, --benchmark_out, ...)\n"
          "\n"
          "A sample is CUDA-event time around one whole call (every launch and the gaps between them),\n"
          "after a memset of twice the L2 (cold) or a 50 us spin kernel (hot), which keeps the GPU busy\n"
          "while the call is enqueued; samples are taken until (p75-p25)/median is\n"
          "under 2% with at least 10, or the time limit; samples taken while the GPU was throttled are\n"
          "dropped. GB/s is the case's fewest bytes (its formula is in the JSON) over the median time;\n"
          "% copy compares it with a 1 GiB device-to-device copy measured in the same run; % floor is\n"
          "the time of a copy of exactly the case's bytes (half read, half written, timed the same way)\n"
          "over the case's time.\n"
          "\n"
          "Without a GPU, every case is planned and compiled, the kernel counts are printed, and\n"
          "run_suite says that timing needs a GPU and exits 0.\n"
          "\n"
          "exit status: 0 ok; 1 a case failed (wrong result, launch error) or the run could not be\n"
          "made; 2 bad usage or a bad manifest or fusion file (FILE:LINE:COL: what).\n",
          f);
}

static int usage_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("run_suite: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs(" (see run_suite --help)\n", stderr);
    va_end(ap);
    return EXIT_USAGE;
}

/* "--name VALUE" or "--name=VALUE"; advances *i past what it used. */
static bool option_value(int argc, char **argv, int *i, const char *name, const char **value, int *rc)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return false;
    if (a[n] == '=') {
        *value = a + n + 1;
        return true;
    }
    if (a[n] != '\0') return false;
    if (*i + 1 >= argc) {
        *rc = usage_error("%s needs a value", name);
        *value = NULL;
        return true;
    }
    *value = argv[++*i];
    return true;
}

static bool parse_long(const char *s, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static int parse_args(int argc, char **argv, options *o)
{
    memset(o, 0, sizeof *o);
    hb_runner_options_default(&o->run);
    o->gb = calloc((size_t)argc + 1, sizeof *o->gb);
    o->targets = calloc((size_t)argc + 1, sizeof *o->targets);
    if (!o->gb || !o->targets) return usage_error("out of memory");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int rc = 0;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            o->help = true;
        } else if (strcmp(a, "--version") == 0) {
            o->version = true;
        } else if (strncmp(a, "--benchmark_", 12) == 0) {
            o->gb[o->ngb++] = argv[i];
        } else if (option_value(argc, argv, &i, "--sizes", &v, &rc)) {
            if (rc) return rc;
            o->sizes = v;
        } else if (option_value(argc, argv, &i, "--dtype", &v, &rc) ||
                   option_value(argc, argv, &i, "--dtypes", &v, &rc)) {
            if (rc) return rc;
            o->dtypes = v;
        } else if (option_value(argc, argv, &i, "--mode", &v, &rc)) {
            if (rc) return rc;
            if (!hb_mode_from_name(v, &o->run.timing.mode)) return usage_error("--mode: '%s' is not cold or hot", v);
        } else if (option_value(argc, argv, &i, "--format", &v, &rc)) {
            if (rc) return rc;
            if (strcmp(v, "table") == 0) o->format = FORMAT_TABLE;
            else if (strcmp(v, "json") == 0) o->format = FORMAT_JSON;
            else if (strcmp(v, "md") == 0) o->format = FORMAT_MD;
            else if (strcmp(v, "csv") == 0) o->format = FORMAT_CSV;
            else return usage_error("--format: '%s' is not table, json, md or csv", v);
        } else if (option_value(argc, argv, &i, "--min-samples", &v, &rc)) {
            if (rc) return rc;
            long long n;
            if (!parse_long(v, 1, o->run.timing.stop.max_samples, &n))
                return usage_error("--min-samples: '%s' is not a number from 1 to %d", v, o->run.timing.stop.max_samples);
            o->run.timing.stop.min_samples = (int)n;
        } else if (option_value(argc, argv, &i, "--max-noise", &v, &rc)) {
            if (rc) return rc;
            char *end;
            errno = 0;
            double pct = strtod(v, &end);
            if (errno || end == v || *end || !(pct >= 0) || pct > 100)
                return usage_error("--max-noise: '%s' is not a percentage from 0 to 100", v);
            o->run.timing.stop.max_spread = pct / 100.0;
        } else if (option_value(argc, argv, &i, "--out", &v, &rc)) {
            if (rc) return rc;
            if (!v[0]) return usage_error("--out needs a file name");
            o->out = v;
        } else if (option_value(argc, argv, &i, "--filter", &v, &rc)) {
            if (rc) return rc;
            o->filter = v;
        } else if (option_value(argc, argv, &i, "--repetitions", &v, &rc)) {
            if (rc) return rc;
            long long n;
            if (!parse_long(v, 1, 1000, &n)) return usage_error("--repetitions: '%s' is not a number from 1 to 1000", v);
            o->run.repetitions = (int)n;
        } else if (option_value(argc, argv, &i, "--time-limit", &v, &rc)) {
            if (rc) return rc;
            char *end;
            errno = 0;
            double t = strtod(v, &end);
            if (errno || end == v || *end || !(t > 0) || t > 3600)
                return usage_error("--time-limit: '%s' is not a number of seconds above 0 and at most 3600", v);
            o->run.timing.stop.time_limit_s = t;
        } else if (option_value(argc, argv, &i, "--seed", &v, &rc)) {
            if (rc) return rc;
            long long n;
            if (!parse_long(v, 0, INT64_MAX, &n)) return usage_error("--seed: '%s' is not a non-negative integer", v);
            o->run.seed = (uint64_t)n;
        } else if (option_value(argc, argv, &i, "--write-fusions", &v, &rc)) {
            if (rc) return rc;
            if (!v[0]) return usage_error("--write-fusions needs a file name");
            o->write_fusions = v;
            o->compile_only = true;
        } else if (option_value(argc, argv, &i, "--suites-dir", &v, &rc)) {
            if (rc) return rc;
            o->suites_dir = v;
        } else if (strcmp(a, "--list") == 0) {
            o->list = true;
        } else if (strcmp(a, "--compile-only") == 0) {
            o->compile_only = true;
        } else if (strcmp(a, "--with-torch") == 0) {
            o->with_torch = true;
        } else if (a[0] == '-' && a[1] != '\0') {
            return usage_error("unknown option '%s'", a);
        } else {
            if (!o->suite) o->suite = a;
            o->targets[o->ntargets++] = a;
        }
    }
    return EXIT_OK;
}

static void known_suites(const hb_suite_set *set, char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < set->n && k < cap; i++) {
        int w = snprintf(buf + k, cap - k, "%s, ", set->suites[i]->name);
        if (w > 0) k += (size_t)w;
    }
    if (k < cap) snprintf(buf + k, cap - k, "all");
}

/* Adds the items of one suite; many names what was selected when it is more
 * than one suite ("'all'", "several suites"), else NULL. Returns an exit code. */
static int add_suite(hb_runner *r, const options *o, const hb_suite *s, const regex_t *filter, const char *many)
{
    const char *sizes = o->sizes;
    if (!sizes || strcmp(sizes, "default") == 0) sizes = s->default_sizes;
    else if (strcmp(sizes, "sweep") == 0) sizes = s->sweep_sizes;
    else if (many)
        return usage_error("--sizes with %s takes only 'default' or 'sweep': sizes mean different things in each suite",
                           many);
    hb_size *sz = NULL;
    int nsz = 0;
    char why[512];
    if (s->ndims == 0 && (sizes == s->default_sizes || sizes == s->sweep_sizes)) {
        /* a fusion file without size parameters: its one size */
        sz = calloc(1, sizeof *sz);
        if (!sz) return usage_error("out of memory");
        nsz = 1;
    } else if (!hb_suite_parse_sizes(s, sizes, &sz, &nsz, why, sizeof why)) {
        return usage_error("--sizes: %s (%s sizes are %s)", why, s->name, s->size_help);
    }
    fu_dtype dts[8];
    int ndt = 0;
    if (!hb_parse_dtypes(o->dtypes ? o->dtypes : s->default_dtypes, dts, 8, &ndt, why, sizeof why)) {
        free(sz);
        return usage_error("--dtype: %s", why);
    }
    for (int k = 0; k < nsz; k++) { /* every size must bind (qkv_split: 3C a multiple of 192) */
        hb_params p;
        if (!hb_suite_bind(s, &s->cases[0], &sz[k], dts[0], &p, why, sizeof why)) {
            free(sz);
            return usage_error("--sizes: %s", why);
        }
    }
    int rc = EXIT_OK;
    for (int c = 0; c < s->ncases && !rc; c++)
        for (int d = 0; d < ndt && !rc; d++)
            for (int k = 0; k < nsz && !rc; k++)
                for (int v = 0; hb_variants[v] && !rc; v++) {
                    const hb_variant *var = hb_variants[v];
                    /* a reference kernel only where the manifest names one */
                    if (var == &hb_variant_reference && !s->cases[c].reference[0]) continue;
                    if (var->takes_dtype && !var->takes_dtype(dts[d])) continue; /* no row, as without one */
                    char size_str[64], name[256];
                    hb_size_str(&sz[k], size_str, sizeof size_str);
                    snprintf(name, sizeof name, "%s/%s/%s/%s/%s", s->name, s->cases[c].name, var->name,
                             fu_dtype_name(dts[d]), size_str);
                    if (filter && regexec(filter, name, 0, NULL, 0) != 0) continue;
                    fu_error err;
                    if (hb_runner_add(r, s, &s->cases[c], var, dts[d], &sz[k], &err)) {
                        fprintf(stderr, "run_suite: %s\n", err.message);
                        rc = EXIT_FAILED;
                    }
                }
    free(sz);
    return rc;
}

/* Writes the run JSON to path (through a temporary, renamed into place). */
static bool write_json_file(const char *path, const hb_context *c, const hb_entry *e, int n)
{
    size_t len = strlen(path) + 16;
    char *tmp = malloc(len);
    if (!tmp) return false;
    snprintf(tmp, len, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "run_suite: --out %s: cannot write %s: %s\n", path, tmp, strerror(errno));
        free(tmp);
        return false;
    }
    bool ok = hb_json_write_run(f, c, e, n);
    if (fclose(f) != 0) ok = false;
    if (ok && rename(tmp, path) != 0) {
        fprintf(stderr, "run_suite: --out %s: cannot rename %s into place: %s\n", path, tmp, strerror(errno));
        ok = false;
    } else if (!ok) {
        fprintf(stderr, "run_suite: --out %s: write error\n", path);
    }
    if (!ok) remove(tmp);
    free(tmp);
    return ok;
}

/* --with-torch: PyTorch's rows for the selected suite/case/dtype/size, or a
 * line saying why there are none (the run goes on either way). */
static void run_torch(const hb_runner *r, const options *o, hb_torch_rows *rows)
{
    memset(rows, 0, sizeof *rows);
    if (o->compile_only) {
        fprintf(stderr, "run_suite: --with-torch: --compile-only times nothing; PyTorch rows skipped\n");
        return;
    }
    int n = hb_runner_count(r);
    const char **names = calloc((size_t)n + 1, sizeof *names);
    char *items = NULL;
    if (names) {
        for (int i = 0; i < n; i++) names[i] = hb_runner_item_name(r, i);
        items = hb_torch_items(names, n);
    }
    free(names);
    if (!items) {
        fprintf(stderr, "run_suite: --with-torch: out of memory; PyTorch rows skipped\n");
        return;
    }
    hb_torch_options t;
    hb_torch_options_default(&t);
    t.repetitions = o->run.repetitions;
    t.time_limit_s = o->run.timing.stop.time_limit_s;
    t.mode = hb_mode_name(o->run.timing.mode);
    t.seed = o->run.seed;
    /* the fusions, for torch_bench.py to translate */
    const char *tmpdir = getenv("TMPDIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/fusebench-fusions-XXXXXX", tmpdir && tmpdir[0] ? tmpdir : "/tmp");
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    bool written = f && hb_runner_write_torch_items(r, f);
    if (f && fclose(f) != 0) written = false;
    if (!f && fd >= 0) close(fd);
    if (!written) {
        fprintf(stderr, "run_suite: --with-torch: cannot write the fusions to %s; PyTorch rows skipped\n", path);
        if (fd >= 0) remove(path);
        free(items);
        return;
    }
    t.fusions = path;
    char msg[1024];
    hb_torch_run(&t, items, rows, msg, sizeof msg);
    fprintf(stderr, "run_suite: %s\n", msg);
    remove(path);
    free(items);
}

static int finish_output(hb_runner *r, const options *o, const char *argv0, const char *no_timing_line,
                         const hb_torch_rows *torch)
{
    const hb_entry *run_entries;
    int nrun = hb_runner_entries(r, &run_entries);
    hb_context ctx;
    hb_runner_context(r, &ctx);
    if (!ctx.host.executable[0]) snprintf(ctx.host.executable, sizeof ctx.host.executable, "%s", argv0);
    /* the run's entries, then PyTorch's (on this run's copy bandwidth), with speed-ups */
    const hb_entry *entries = run_entries;
    int n = nrun;
    hb_entry *merged = NULL;
    if (torch && torch->n > 0) {
        merged = malloc((size_t)(nrun + torch->n) * sizeof *merged);
        if (!merged) {
            fprintf(stderr, "run_suite: out of memory merging the PyTorch rows\n");
            return EXIT_FAILED;
        }
        if (nrun) memcpy(merged, run_entries, (size_t)nrun * sizeof *merged);
        memcpy(merged + nrun, torch->entries, (size_t)torch->n * sizeof *merged);
        hb_torch_rebase(merged + nrun, torch->n, ctx.copy_bandwidth_gbps);
        hb_runner_add_floors(r, merged + nrun, torch->n);
        hb_torch_speedups(merged, nrun + torch->n);
        entries = merged;
        n = nrun + torch->n;
    }
    int rc = EXIT_OK;
    if (o->format == FORMAT_JSON) {
        if (!hb_json_write_run(stdout, &ctx, entries, n)) rc = EXIT_FAILED;
        if (no_timing_line) fprintf(stderr, "%s\n", no_timing_line);
    } else if (o->format == FORMAT_MD || o->format == FORMAT_CSV) {
        if (!hb_table_write_run(stdout, o->format == FORMAT_MD ? "md" : "csv", &ctx, entries, n)) rc = EXIT_FAILED;
        if (no_timing_line) fprintf(stderr, "%s\n", no_timing_line);
    } else {
        hb_runner_print_table_with(r, merged ? merged + nrun : NULL, merged ? torch->n : 0, stdout);
        if (no_timing_line) printf("%s\n", no_timing_line);
    }
    if (o->out && !write_json_file(o->out, &ctx, entries, n)) rc = EXIT_FAILED;
    free(merged);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "run_suite: cannot write to standard output\n");
        rc = EXIT_FAILED;
    }
    if (hb_runner_failures(r) > 0) {
        fprintf(stderr, "run_suite: %d of %d case%s failed\n", hb_runner_failures(r), hb_runner_count(r),
                hb_runner_count(r) == 1 ? "" : "s");
        rc = EXIT_FAILED;
    }
    return rc;
}

/* Google Benchmark initialized with its flags (o->gb), which a process does
 * once (bench_shim.h); NULL and why when a flag is not one of its own or out
 * of memory. The caller frees it, then calls hb_gb_shutdown. */
static hb_gbench *open_gbench(const options *o, const char *argv0, char *why, size_t nwhy)
{
    hb_gbench *g = hb_gb_new();
    if (!g) {
        snprintf(why, nwhy, "out of memory");
        return NULL;
    }
    if (!hb_gb_init(g, argv0, o->ngb, o->gb, why, nwhy)) {
        hb_gb_free(g);
        return NULL;
    }
    return g;
}

/* Everything after the options and Google Benchmark's flags are checked;
 * *gb is initialized here when it is still NULL and something is timed. */
/* Whether name is a fusion file (ends in .fusion, or names a file). */
static bool is_fusion_file(const char *name)
{
    size_t n = strlen(name);
    return (n > 7 && strcmp(name + n - 7, ".fusion") == 0) || strchr(name, '/') != NULL;
}

/* The suites a run selects, in the order named; owned[] are those made here
 * (from .fusion files and folders given by path), freed with the selection. */
typedef struct selection {
    const hb_suite **suites;
    int n, cap;
    hb_suite **owned;
    int nowned;
} selection;

static void selection_free(selection *sel)
{
    for (int i = 0; i < sel->nowned; i++) hb_suite_free(sel->owned[i]);
    free(sel->owned);
    free(sel->suites);
    memset(sel, 0, sizeof *sel);
}

/* Appends s (taking it over when own); a second suite of the same name would
 * give two benchmarks one name, so it is refused. Returns an exit code. */
static int select_suite(selection *sel, const hb_suite *s, hb_suite *own, const char *target)
{
    if (own) {
        hb_suite **p = realloc(sel->owned, (size_t)(sel->nowned + 1) * sizeof *p);
        if (!p) {
            hb_suite_free(own);
            return usage_error("out of memory");
        }
        sel->owned = p;
        sel->owned[sel->nowned++] = own;
    }
    for (int i = 0; i < sel->n; i++)
        if (strcmp(sel->suites[i]->name, s->name) == 0) {
            fprintf(stderr, "run_suite: %s: suite '%s' is named twice (also %s); its benchmarks would have the "
                            "same names\n", target, s->name, sel->suites[i]->manifest);
            return EXIT_USAGE;
        }
    if (sel->n == sel->cap) {
        int nc = sel->cap ? 2 * sel->cap : 16;
        const hb_suite **p = realloc(sel->suites, (size_t)nc * sizeof *p);
        if (!p) return usage_error("out of memory");
        sel->suites = p;
        sel->cap = nc;
    }
    sel->suites[sel->n++] = s;
    return EXIT_OK;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

/* A folder named by path: a suite folder (it has a suite.txt), or a folder of
 * .fusion files, each a suite of its own, in name order. Returns an exit code. */
static int select_folder(selection *sel, const char *target)
{
    char dir[1024], path[2048], why[1200];
    size_t n = strlen(target);
    while (n > 1 && target[n - 1] == '/') n--; /* "dir/": the folder's name is its last part */
    snprintf(dir, sizeof dir, "%.*s", (int)n, target);
    snprintf(path, sizeof path, "%s/%s", dir, HB_MANIFEST);
    if (access(path, F_OK) == 0) {
        hb_suite *s = NULL;
        if (!hb_suite_load(dir, &s, why, sizeof why)) {
            fprintf(stderr, "run_suite: %s\n", why);
            return EXIT_USAGE;
        }
        return select_suite(sel, s, s, target);
    }
    struct dirent **ents = NULL;
    int nents = scandir(dir, &ents, NULL, by_name);
    if (nents < 0) {
        fprintf(stderr, "run_suite: %s: cannot read the folder: %s\n", target, strerror(errno));
        return EXIT_USAGE;
    }
    int rc = EXIT_OK, nfiles = 0;
    for (int i = 0; i < nents; i++) {
        const char *name = ents[i]->d_name;
        size_t len = strlen(name);
        if (!rc && name[0] != '.' && len > 7 && strcmp(name + len - 7, ".fusion") == 0) {
            snprintf(path, sizeof path, "%s/%s", dir, name);
            hb_suite *s = NULL;
            if (!hb_suite_from_fusion(path, &s, why, sizeof why)) {
                fprintf(stderr, "run_suite: %s\n", why);
                rc = EXIT_USAGE;
            } else {
                rc = select_suite(sel, s, s, path);
                nfiles++;
            }
        }
        free(ents[i]);
    }
    free(ents);
    if (!rc && nfiles == 0) {
        fprintf(stderr, "run_suite: %s: no %s and no .fusion files in the folder\n", target, HB_MANIFEST);
        rc = EXIT_USAGE;
    }
    return rc;
}

static bool is_folder(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Every target: 'all' (alone), a suite's name, a folder, a .fusion file.
 * Returns an exit code; errors are said here. */
static int select_targets(const options *o, const hb_suite_set *set, selection *sel)
{
    char known[1024];
    known_suites(set, known, sizeof known);
    for (int t = 0; t < o->ntargets; t++) {
        const char *a = o->targets[t];
        int rc = EXIT_OK;
        const hb_suite *named = hb_suite_set_find(set, a);
        if (o->ntargets > 1 && (named || strcmp(a, "all") == 0)) /* sizes and dtypes are one suite's */
            return usage_error("one suite at a time: '%s' and '%s' (or 'all'); several .fusion files and folders of "
                               "them run together", o->targets[t ? 0 : 1], a);
        if (strcmp(a, "all") == 0) {
            for (int i = 0; i < set->n && !rc; i++) rc = select_suite(sel, set->suites[i], NULL, a);
        } else if (named) {
            rc = select_suite(sel, named, NULL, a);
        } else if (is_folder(a)) {
            rc = select_folder(sel, a);
        } else if (is_fusion_file(a)) {
            char why[1200];
            hb_suite *s = NULL;
            if (!hb_suite_from_fusion(a, &s, why, sizeof why)) {
                fprintf(stderr, "run_suite: %s\n", why);
                return EXIT_USAGE;
            }
            rc = select_suite(sel, s, s, a);
        } else {
            return usage_error("unknown suite '%s' (known: %s; or a .fusion file)", a, known);
        }
        if (rc) return rc;
    }
    return EXIT_OK;
}

static int run(options *o, const hb_suite_set *set, const char *argv0, hb_gbench **gb)
{
    char known[1024];
    known_suites(set, known, sizeof known);
    if (!o->suite && o->list) o->targets[o->ntargets++] = o->suite = "all"; /* --list alone: every suite */
    if (!o->suite) return usage_error("name a suite (%s) or a .fusion file", known);
    selection sel;
    memset(&sel, 0, sizeof sel);
    int src = select_targets(o, set, &sel);
    if (src) {
        selection_free(&sel);
        return src;
    }
    /* --sizes are one suite's: with 'all' or several suites, only default or sweep */
    const char *many = strcmp(o->suite, "all") == 0 ? "'all'" : sel.n > 1 ? "several suites" : NULL;
    regex_t re;
    bool have_re = false;
    if (o->filter) {
        int e = regcomp(&re, o->filter, REG_EXTENDED | REG_NOSUB);
        if (e) {
            char msg[256];
            regerror(e, &re, msg, sizeof msg);
            selection_free(&sel);
            return usage_error("--filter '%s': %s", o->filter, msg);
        }
        have_re = true;
    }
    o->run.compile_only = o->compile_only;

    int rc = EXIT_OK;
    fu_runtime *rt = NULL;
    hb_runner *r = NULL;
    hb_torch_rows torch;
    memset(&torch, 0, sizeof torch);
    fu_error err;
    memset(&err, 0, sizeof err);
    if (hb_runner_new(&o->run, &r, &err)) {
        fprintf(stderr, "run_suite: %s\n", err.message);
        rc = EXIT_FAILED;
        goto done;
    }
    for (int i = 0; i < sel.n && !rc; i++) rc = add_suite(r, o, sel.suites[i], have_re ? &re : NULL, many);
    if (rc) goto done;
    if (o->list) {
        for (int i = 0; i < hb_runner_count(r); i++) printf("%s\n", hb_runner_item_name(r, i));
        goto done;
    }
    if (hb_runner_count(r) == 0) {
        rc = usage_error("no benchmark matches --filter '%s'", o->filter ? o->filter : "");
        goto done;
    }
    fu_runtime_options ro;
    memset(&ro, 0, sizeof ro);
    ro.compile_only = o->compile_only;
    if (fu_runtime_open(&ro, &rt, &err)) {
        fprintf(stderr, "run_suite: %s\n", err.message);
        rc = EXIT_FAILED;
        goto done;
    }
    if (o->with_torch && fu_runtime_has_device(rt) && fu_runtime_device(rt)->sm_count < fu_runtime_device(rt)->sm_count_all) {
        /* the PyTorch process would run on every SM: no row of it would compare */
        rc = usage_error("--with-torch under an SM limit (%s): PyTorch's kernels would run on every SM",
                         fu_runtime_describe(rt));
        goto done;
    }
    hb_runner_prepare(r, rt);
    if (o->write_fusions) {
        FILE *f = fopen(o->write_fusions, "w");
        bool ok = f && hb_runner_write_torch_items(r, f);
        if (f && fclose(f) != 0) ok = false;
        if (!ok) fprintf(stderr, "run_suite: --write-fusions %s: cannot write: %s\n", o->write_fusions, strerror(errno));
        else fprintf(stderr, "run_suite: wrote the fusions of %d benchmarks to %s\n", hb_runner_count(r), o->write_fusions);
        rc = ok && hb_runner_failures(r) == 0 ? EXIT_OK : EXIT_FAILED;
        goto done;
    }
    if (!fu_runtime_has_device(rt) || o->compile_only) {
        char line[1024];
        if (o->compile_only)
            snprintf(line, sizeof line, "--compile-only: planned and compiled %d case%s, timed none",
                     hb_runner_count(r), hb_runner_count(r) == 1 ? "" : "s");
        else
            snprintf(line, sizeof line, "timing needs a GPU (%s): planned and compiled %d case%s, timed none",
                     fu_runtime_describe(rt), hb_runner_count(r), hb_runner_count(r) == 1 ? "" : "s");
        if (o->with_torch) run_torch(r, o, &torch);
        rc = finish_output(r, o, argv0, line, &torch);
        goto done;
    }
    if (!*gb) {
        char why[512];
        if (!(*gb = open_gbench(o, argv0, why, sizeof why))) {
            fprintf(stderr, "run_suite: %s\n", why);
            rc = EXIT_FAILED;
            goto done;
        }
    }
    if (hb_runner_measure_gb(r, *gb, argv0, &err)) {
        fprintf(stderr, "run_suite: %s\n", err.message);
        rc = err.status == FU_ERR_ARG ? EXIT_USAGE : EXIT_FAILED;
        goto done;
    }
    if (o->with_torch) run_torch(r, o, &torch);
    rc = finish_output(r, o, argv0, NULL, &torch);
done:
    hb_torch_rows_free(&torch);
    hb_runner_free(r);
    if (rt) fu_runtime_close(rt);
    if (have_re) regfree(&re);
    selection_free(&sel);
    return rc;
}

static const char *suites_dir(const options *o)
{
    const char *dir = o->suites_dir;
    if (!dir) dir = getenv("FUSEBENCH_SUITES_DIR");
    if (!dir || !dir[0]) dir = HB_SUITES_DIR;
    return dir;
}

int main(int argc, char **argv)
{
    options o;
    int rc = parse_args(argc, argv, &o);
    if (rc) {
        free(o.gb);
        free(o.targets);
        return rc;
    }
    if (o.version) {
        printf("run_suite (fusebench) %s\n", FUSEBENCH_VERSION);
        free(o.gb);
        free(o.targets);
        return EXIT_OK;
    }
    /* the suites: every folder with a manifest; a bad one is a usage error */
    hb_suite_set set;
    char swhy[1200];
    if (!hb_suites_discover(suites_dir(&o), &set, swhy, sizeof swhy)) {
        fprintf(stderr, "run_suite: %s\n", swhy);
        free(o.gb);
        free(o.targets);
        return EXIT_USAGE;
    }
    if (o.help) {
        usage(stdout, &set);
        hb_suite_set_free(&set);
        free(o.gb);
        free(o.targets);
        return EXIT_OK;
    }
    /* Google Benchmark's flags: checked now, used when timing. The one
     * initialization of Google Benchmark in the process (without flags, it
     * waits until something is timed); shut down once, at the end. */
    hb_gbench *gb = NULL;
    char why[512];
    if (o.ngb > 0 && !(gb = open_gbench(&o, argv[0], why, sizeof why))) rc = usage_error("%s", why);
    else rc = run(&o, &set, argv[0], &gb);
    hb_gb_free(gb);
    hb_gb_shutdown();
    hb_suite_set_free(&set);
    free(o.gb);
    free(o.targets);
    return rc;
}
