/*
 * gate.h -- the regression gate: a run against a baseline, case by case.
 *
 * The units of the test are repetitions: one value per passing repetition,
 * the median of its samples_us (run.h). Samples of one repetition share its
 * clocks and placement and are not independent; repetitions are.
 *
 * Decision for one case (matched by name), in this order:
 *   1. failed in the run (status "failed" in any repetition)  -> REGRESSION, "correctness"
 *   2. kernels, launches or segments higher than the baseline -> REGRESSION, "launches"
 *      (steps 1-2 hold whatever the timing says, and whatever the sample counts)
 *   3. missing on one side, skipped, fewer than min_reps passing repetitions, or a
 *      repetition with fewer than min_samples samples            -> UNKNOWN
 *      (missing in the run is a REGRESSION, "missing", only with require_all)
 *   4. the repetitions' noise (the larger side's) above max_noise -> AMBIGUOUS, "noise"
 *   5. Welch's t-test on the logs of the repetition medians (welch.h; or the
 *      Mann-Whitney U test on them with test_mwu): p < alpha AND
 *      |change| >= threshold                                  -> SLOWER or FASTER
 *   6. the (1 - alpha) interval of the change inside +-threshold -> SAME
 *   7. otherwise: the data cannot tell                        -> AMBIGUOUS
 * change = exp(mean log run - mean log baseline) - 1 (the ratio of the
 * repetitions' geometric means).
 * The timing verdict (steps 3-7) is kept in `timing` even when steps 1-2 made
 * the case a REGRESSION.
 *
 * Gated and informational cases: only cases whose variant is in gate_variants
 * (default "fuser,reference": the code we own) can fail the gate; the others
 * (torch_eager, torch_compile: measured from someone else's code) get the same
 * verdicts, reported, but never fail it. The gate fails (exit 1) when a gated
 * case is SLOWER or a REGRESSION.
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
    GATE_AMBIGUOUS,
    GATE_UNKNOWN,
    GATE_REGRESSION,
    GATE_VERDICT_COUNT
} gate_verdict;

const char *gate_verdict_name(gate_verdict v);

#define GATE_DEFAULT_VARIANTS "fuser,reference"

typedef struct gate_options {
    double alpha;                        /* significance level, default 0.01 */
    double threshold_pct;                /* minimum effect where no rule matches, default 3 */
    size_t min_samples;                  /* a repetition with fewer samples_us -> UNKNOWN, default 5 */
    size_t min_reps;                     /* fewer passing repetitions a side -> UNKNOWN, default 3 */
    double max_noise_pct;                /* repetition noise above -> AMBIGUOUS, default 5 */
    const char *gate_variants;           /* comma-separated variants that can fail the gate,
                                            "all" or "*" for every one; NULL = the default */
    int test_mwu;                        /* Mann-Whitney U on the repetition medians for p */
    int only_changed;                    /* reports list only cases that are not SAME */
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
    double ci_low_pct, ci_high_pct; /* the (1 - alpha) interval of change_pct; NAN when untested */
    double base_noise_pct, run_noise_pct; /* repetition noise (welch.h); NAN when < 2 reps */
    double noise_pct;             /* the larger of the two (NAN when unknown) */
    double threshold_pct;         /* the threshold that applied */
    size_t n_base, n_run;         /* passing repetitions: the test's units */
    int exact;                    /* p from the exact distribution (test_mwu) */
    int gated;                    /* its variant can fail the gate */
} gate_result;

typedef struct gate_report {
    gate_result *results;         /* run's cases in run order, then baseline-only cases */
    size_t n;
    size_t counts[GATE_VERDICT_COUNT];
    int regressed;                /* any gated SLOWER or REGRESSION */
} gate_report;

/* Compares run against base. Returns 0, or -1 with a message in err (the GPU
 * models differ, or memory ran out). */
int gate_compare(const gate_run *run, const gate_run *base, const gate_options *opt,
                 gate_report *out, char *err, size_t errlen);

void gate_report_free(gate_report *r);

/* Whether variant can fail the gate under opt (gate_variants). */
int gate_variant_gated(const gate_options *opt, const char *variant);

#endif
