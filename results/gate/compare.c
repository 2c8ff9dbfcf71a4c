/*
 * compare.c -- fusebench-compare, the regression gate (scripts/compare runs it).
 *
 *   fusebench-compare BASELINE.json RUN.json [options]
 *
 * The baseline first, as Google Benchmark's compare.py and nvbench's
 * nvbench_compare.py take them. Decides SAME, FASTER, SLOWER, AMBIGUOUS,
 * UNKNOWN or REGRESSION for every case (gate.h has the rules) and reports in
 * Markdown (stdout or --markdown FILE), JSON (--json FILE) and TSV (--tsv
 * FILE). Exit status: 0 nothing gated regressed, 1 a gated case is SLOWER or a
 * REGRESSION, 2 bad input (a missing or malformed file, a schema mismatch,
 * runs from different GPU models, a bad option).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"
#include "outset.h"
#include "report.h"
#include "run.h"
#include "thresholds.h"

#define GATE_EXIT_OK 0
#define GATE_EXIT_REGRESSED 1
#define GATE_EXIT_BAD_INPUT 2

static void gate_usage(FILE *f)
{
    fputs("usage: compare BASELINE.json RUN.json [options]   (the baseline first, as compare.py)\n"
          "  --threshold PCT     minimum effect, in percent, where no thresholds rule matches (default 3)\n"
          "  --thresholds FILE   rules `PATTERN PERCENT` (glob on the case name; last match wins);\n"
          "                      scripts/compare passes results/thresholds.txt; the last option given counts\n"
          "  --alpha P           significance level of the test (default 0.01)\n"
          "  --test welch|mwu    Welch's t-test on the logs of the repetition medians (default), or the\n"
          "                      Mann-Whitney U test on them\n"
          "  --min-reps N        fewer passing repetitions on either side => UNKNOWN (default 3)\n"
          "  --min-samples N     a repetition with fewer samples => UNKNOWN (default 5)\n"
          "  --max-noise PCT     repetition noise (relative stddev) above PCT => AMBIGUOUS (default 5)\n"
          "  --gate-variants V   comma-separated variants that can fail the gate, or all\n"
          "                      (default fuser,reference; the others are reported, informational)\n"
          "  --filter GLOB       only the cases whose name matches GLOB\n"
          "  --only-changed      the Markdown table lists only the cases that are not SAME\n"
          "  --require-all       a baseline case missing from the run is a REGRESSION (default: UNKNOWN)\n"
          "  --markdown FILE     the Markdown report to FILE instead of stdout\n"
          "  --json FILE         the JSON report to FILE\n"
          "  --tsv FILE          the TSV report (one line per case) to FILE\n"
          "  -q, --quiet         no report on stdout (files named by options are still written)\n"
          "  --version           the version\n"
          "Files may be gzip-compressed (.json.gz). A warning says so when the baseline is newer\n"
          "than the run (context.date): the files may be swapped.\n"
          "exit status: 0 nothing gated regressed, 1 a gated case is SLOWER or a REGRESSION, 2 bad input\n",
          f);
}

/* Matches "--name VALUE" or "--name=VALUE"; *i advances past what was used.
 * Returns 1 with *value set, 0 when argv[*i] is another option, -1 when the
 * value is missing. */
static int gate_opt(int argc, char **argv, int *i, const char *name, const char **value)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) return 0;
    if (argv[*i][n] == '=') {
        *value = argv[*i] + n + 1;
        return 1;
    }
    if (argv[*i][n] != '\0') return 0;
    if (*i + 1 >= argc) return -1;
    *value = argv[++*i];
    return 1;
}

static int gate_parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end || errno || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

/* Writes one report into the output set (its temporary); -1 on failure. */
static int gate_write_file(fu_outset *set, const char *path, const char *what, const gate_report *r,
                           const gate_run *run, const gate_run *base, const gate_options *opt)
{
    char why[1200];
    FILE *f = fu_outset_open(set, path, why, sizeof why);
    if (!f) {
        fprintf(stderr, "compare: cannot write the %s report: %s\n", what, why);
        return -1;
    }
    int rc;
    if (strcmp(what, "JSON") == 0) rc = gate_write_json(f, r, run, base, opt);
    else if (strcmp(what, "TSV") == 0) rc = gate_write_tsv(f, r);
    else rc = gate_write_markdown(f, r, run, base, opt);
    if (rc) fprintf(stderr, "compare: writing the %s report %s failed\n", what, path);
    return rc;
}

/* The --markdown, --json and --tsv reports, all or none: on any failure every
 * file that was there is as it was (fu_outset). */
static int gate_write_reports(const char *md_path, const char *json_path, const char *tsv_path,
                              const gate_report *r, const gate_run *run, const gate_run *base,
                              const gate_options *opt)
{
    fu_outset set;
    fu_outset_init(&set);
    int rc = 0;
    if (md_path) rc = gate_write_file(&set, md_path, "Markdown", r, run, base, opt);
    if (!rc && json_path) rc = gate_write_file(&set, json_path, "JSON", r, run, base, opt);
    if (!rc && tsv_path) rc = gate_write_file(&set, tsv_path, "TSV", r, run, base, opt);
    char why[1200];
    if (!rc && fu_outset_commit(&set, why, sizeof why)) {
        fprintf(stderr, "compare: cannot write the reports: %s\n", why);
        rc = -1;
    }
    fu_outset_free(&set);
    return rc;
}

int main(int argc, char **argv)
{
    gate_options opt;
    gate_options_default(&opt);
    const char *files[2] = {NULL, NULL}, *thresholds_path = NULL;
    const char *md_path = NULL, *json_path = NULL, *tsv_path = NULL;
    int nfiles = 0, quiet = 0;

    for (int i = 1; i < argc; i++) {
        const char *v = NULL;
        int m;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            gate_usage(stdout);
            return GATE_EXIT_OK;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("fusebench-compare %s\n", FUSEBENCH_VERSION);
            return GATE_EXIT_OK;
        } else if (strcmp(argv[i], "--only-changed") == 0) {
            opt.only_changed = 1;
        } else if ((m = gate_opt(argc, argv, &i, "--test", &v)) != 0) {
            if (m < 0 || (strcmp(v, "welch") != 0 && strcmp(v, "mwu") != 0)) goto bad_value;
            opt.test_mwu = strcmp(v, "mwu") == 0;
        } else if ((m = gate_opt(argc, argv, &i, "--min-reps", &v)) != 0) {
            double d;
            if (m < 0 || gate_parse_double(v, 2, 1e9, &d) || d != floor(d)) goto bad_value;
            opt.min_reps = (size_t)d;
        } else if ((m = gate_opt(argc, argv, &i, "--max-noise", &v)) != 0) {
            if (m < 0 || gate_parse_double(v, 0, 1e6, &opt.max_noise_pct)) goto bad_value;
        } else if ((m = gate_opt(argc, argv, &i, "--gate-variants", &v)) != 0) {
            if (m < 0 || !*v) goto bad_value;
            opt.gate_variants = v;
        } else if (strcmp(argv[i], "-q") == 0 || strcmp(argv[i], "--quiet") == 0) {
            quiet = 1;
        } else if (strcmp(argv[i], "--require-all") == 0) {
            opt.require_all = 1;
        } else if ((m = gate_opt(argc, argv, &i, "--threshold", &v)) != 0) {
            if (m < 0 || gate_parse_double(v, 0, 1e6, &opt.threshold_pct)) goto bad_value;
        } else if ((m = gate_opt(argc, argv, &i, "--thresholds", &v)) != 0) {
            if (m < 0) goto bad_value;
            thresholds_path = v;
        } else if ((m = gate_opt(argc, argv, &i, "--alpha", &v)) != 0) {
            if (m < 0 || gate_parse_double(v, 1e-300, 1, &opt.alpha)) goto bad_value;
        } else if ((m = gate_opt(argc, argv, &i, "--min-samples", &v)) != 0) {
            double d;
            if (m < 0 || gate_parse_double(v, 1, 1e9, &d) || d != floor(d)) goto bad_value;
            opt.min_samples = (size_t)d;
        } else if ((m = gate_opt(argc, argv, &i, "--filter", &v)) != 0) {
            if (m < 0) goto bad_value;
            opt.filter = v;
        } else if ((m = gate_opt(argc, argv, &i, "--markdown", &v)) != 0) {
            if (m < 0) goto bad_value;
            md_path = v;
        } else if ((m = gate_opt(argc, argv, &i, "--json", &v)) != 0) {
            if (m < 0) goto bad_value;
            json_path = v;
        } else if ((m = gate_opt(argc, argv, &i, "--tsv", &v)) != 0) {
            if (m < 0) goto bad_value;
            tsv_path = v;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "compare: unknown option '%s'\n", argv[i]);
            gate_usage(stderr);
            return GATE_EXIT_BAD_INPUT;
        } else if (nfiles < 2) {
            files[nfiles++] = argv[i];
        } else {
            fprintf(stderr, "compare: too many files ('%s'); give BASELINE.json and RUN.json\n", argv[i]);
            return GATE_EXIT_BAD_INPUT;
        }
        continue;
    bad_value:
        fprintf(stderr, "compare: option '%s' needs a valid value%s%s%s\n", argv[i], v ? " (got '" : "",
                v ? v : "", v ? "')" : "");
        return GATE_EXIT_BAD_INPUT;
    }
    if (nfiles != 2) {
        fprintf(stderr, "compare: give a baseline and a run (the baseline first)\n");
        gate_usage(stderr);
        return GATE_EXIT_BAD_INPUT;
    }

    char err[1024];
    gate_run run, base;
    gate_thresholds thr = {0};
    gate_report rep = {0};
    int status = GATE_EXIT_BAD_INPUT;
    int have_run = 0, have_base = 0;
    if (gate_run_load(&base, files[0], err, sizeof err)) {
        fprintf(stderr, "compare: baseline: %s\n", err);
        goto done;
    }
    have_base = 1;
    if (gate_run_load(&run, files[1], err, sizeof err)) {
        fprintf(stderr, "compare: run: %s\n", err);
        goto done;
    }
    have_run = 1;
    /* ISO 8601 dates of one form compare as strings. */
    if (*base.date && *run.date && strlen(base.date) == strlen(run.date) &&
        strcmp(base.date, run.date) > 0)
        fprintf(stderr,
                "compare: warning: the baseline %s (%s) is newer than the run %s (%s); the "
                "baseline comes first (compare BASELINE RUN): are the files swapped?\n",
                base.path, base.date, run.path, run.date);
    if (thresholds_path && *thresholds_path) {
        if (gate_thresholds_load(&thr, thresholds_path, err, sizeof err)) {
            fprintf(stderr, "compare: thresholds: %s\n", err);
            goto done;
        }
        opt.thresholds = &thr;
    }
    if (gate_compare(&run, &base, &opt, &rep, err, sizeof err)) {
        fprintf(stderr, "compare: %s\n", err);
        goto done;
    }
    if (gate_write_reports(md_path, json_path, tsv_path, &rep, &run, &base, &opt)) goto done;
    if (!quiet) {
        if (!md_path) {
            if (gate_write_markdown(stdout, &rep, &run, &base, &opt)) {
                fprintf(stderr, "compare: writing the report to stdout failed\n");
                goto done;
            }
        } else {
            printf("compare: %s: %zu cases, %zu REGRESSION, %zu SLOWER, %zu FASTER, %zu SAME, %zu "
                   "UNKNOWN; report in %s\n",
                   rep.regressed ? "FAILED" : "passed", rep.n, rep.counts[GATE_REGRESSION],
                   rep.counts[GATE_SLOWER], rep.counts[GATE_FASTER], rep.counts[GATE_SAME],
                   rep.counts[GATE_UNKNOWN], md_path);
        }
    }
    status = rep.regressed ? GATE_EXIT_REGRESSED : GATE_EXIT_OK;
done:
    gate_report_free(&rep);
    gate_thresholds_free(&thr);
    if (have_base) gate_run_free(&base);
    if (have_run) gate_run_free(&run);
    return status;
}
