/*
 * table.c -- fusebench-table: a stored run (plain or .json.gz) as the table
 * that `./run_suite --format md|csv` prints (suites/harness/table.h writes
 * both, so the two cannot drift apart).
 *
 *   fusebench-table RUN.json [--format md|csv]
 *
 * Exit status 0, or 2 on bad input (the file and key at fault).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"
#include "table.h"
#include "util.h"
#include "welch.h"

int main(int argc, char **argv)
{
    const char *file = NULL, *format = "md";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            puts("usage: table RUN.json [--format md|csv]   (a stored run as run_suite --format md|csv prints it)");
            return 0;
        } else if (!strcmp(argv[i], "--version")) {
            printf("fusebench-table %s\n", FUSEBENCH_VERSION);
            return 0;
        } else if (!strcmp(argv[i], "--format") && i + 1 < argc) {
            format = argv[++i];
        } else if (!strncmp(argv[i], "--format=", 9)) {
            format = argv[i] + 9;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "table: unknown option '%s' (usage: table RUN.json [--format md|csv])\n", argv[i]);
            return 2;
        } else if (!file) {
            file = argv[i];
        } else {
            fprintf(stderr, "table: one run file at a time ('%s', then '%s')\n", file, argv[i]);
            return 2;
        }
    }
    hb_table_format f;
    if (!file || !hb_table_format_from_name(format, &f)) {
        fprintf(stderr, "table: give a run file, and --format md or csv (not '%s')\n", format);
        return 2;
    }
    gate_run run;
    char err[1024];
    if (gate_run_load(&run, file, err, sizeof err)) {
        fprintf(stderr, "table: %s\n", err);
        return 2;
    }
    hb_table_begin(stdout, f, run.gpu_name, run.git_commit, run.date);
    for (size_t i = 0; i < run.n_cases; i++) {
        const gate_case *c = &run.cases[i];
        const char *status = c->n_failed ? "failed" : c->n_ok ? "ok" : "skipped";
        double median = c->n_reps_ok ? gate_median(c->rep_medians, c->n_reps_ok) : NAN;
        hb_table_row r = {c->name, c->suite, c->kase, c->variant, c->dtype, c->size, status, (int)c->n_reps_ok,
                          median, gate_log_noise_pct(c->rep_medians, c->n_reps_ok), c->gbps, NAN, c->speedup,
                          c->kernels, c->launches, c->error ? c->error : ""};
        if (isfinite(c->gbps) && run.copy_bandwidth_gbps > 0) r.copy_pct = 100.0 * c->gbps / run.copy_bandwidth_gbps;
        hb_table_row_write(stdout, f, &r);
    }
    gate_run_free(&run);
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "table: writing to stdout failed\n");
        return 2;
    }
    return 0;
}
