/*
 * gate.h -- the regression gate: a run against a baseline, case by case.
 *
 * Decision for one case (matched by name; see run.h for its samples), in this
 * order:
 *   1. failed in the run (status "failed" in any repetition)  -> REGRESSION, "correctness"
 *   2. kernels, launches or segments higher than the baseline -> REGRESSION, "launches"
 *      (steps 1-2 hold whatever the timing says, and whatever the sample counts)
 *   3. missing on one side, skipped, or < min_samples samples  -> UNKNOWN
 *      (missing in the run is a REGRESSION, "missing", only with require_all)
 *   4. Mann-Whitney U two-sided p < alpha AND |median ratio - 1| >= threshold
 *                                                              -> SLOWER or FASTER
 *   5. otherwise                                               -> SAME
 * The timing verdict (steps 3-5) is kept in `timing` even when steps 1-2 made
 * the case a REGRESSION. The gate fails (exit 1) when any case is SLOWER or a
 * REGRESSION.
 */
#ifndef GATE_GATE_H
#define GATE_GATE_H

#include <stddef.h>

#include "run.h"
#include "thresholds.h"

typedef enum gate_verdict { /* ORDER: gate_verdict_names */
    GATE_SAME,
    GATE_FASTER,
    GATE_SLOWER,
    GATE_UNKNOWN,
    GATE_REGRESSION,
    GATE_VERDICT_COUNT
} gate_verdict;

const char *gate_verdict_name(gate_verdict v);

typedef struct gate_options {
    double alpha;                        /* significance level, default 0.01 */
    double threshold_pct;                /* minimum effect where no rule matches, default 3 */
    size_t min_samples;                  /* fewer on either side -> UNKNOWN, default 5 */
    const gate_thresholds *thresholds;   /* per-case rules, or NULL */
    const char *filter;                  /* glob on case names; NULL = every case */
    int require_all;                     /* a baseline case missing in the run regresses */
} gate_options;

void gate_options_default(gate_options *opt);

typedef struct gate_result {
    const char *name;
    const gate_case *base, *run;  /* NULL when missing on that side */
    gate_verdict verdict;         /* the decision */
    gate_verdict timing;          /* SAME, FASTER, SLOWER or UNKNOWN from the samples alone */
    const char *reason;           /* "correctness", "launches", "missing", "time", "samples",
                                     "new", "skipped", "" (a static string) */
    char detail[320];             /* for people: what exactly */
    double base_median, run_median; /* us; NAN when unknown */
    double change_pct;            /* (run / base - 1) * 100; NAN when unknown */
    double p_value;               /* NAN when not tested */
    double threshold_pct;         /* the threshold that applied */
    size_t n_base, n_run;         /* samples */
    int exact;                    /* p from the exact distribution */
} gate_result;

typedef struct gate_report {
    gate_result *results;         /* run's cases in run order, then baseline-only cases */
    size_t n;
    size_t counts[GATE_VERDICT_COUNT];
    int regressed;                /* any SLOWER or REGRESSION */
} gate_report;

/* Compares run against base. Returns 0, or -1 with a message in err (the GPU
 * models differ, or memory ran out). */
int gate_compare(const gate_run *run, const gate_run *base, const gate_options *opt,
                 gate_report *out, char *err, size_t errlen);

void gate_report_free(gate_report *r);

#endif
