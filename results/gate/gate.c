/* gate.c -- see gate.h. */
#define _POSIX_C_SOURCE 200809L

#include "gate.h"

#include <fnmatch.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mwu.h"
#include "welch.h"
#include "util.h"

static const char *const gate_verdict_names[GATE_VERDICT_COUNT] = {
    [GATE_SAME] = "SAME",       [GATE_FASTER] = "FASTER",         [GATE_SLOWER] = "SLOWER",
    [GATE_AMBIGUOUS] = "AMBIGUOUS", [GATE_UNKNOWN] = "UNKNOWN", [GATE_REGRESSION] = "REGRESSION",
};

const char *gate_verdict_name(gate_verdict v)
{
    return (unsigned)v < GATE_VERDICT_COUNT ? gate_verdict_names[v] : "?";
}

void gate_options_default(gate_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->alpha = 0.01;
    opt->threshold_pct = 3.0;
    opt->min_samples = 5;
    opt->min_reps = 3;
    opt->max_noise_pct = 5.0;
}

int gate_variant_gated(const gate_options *opt, const char *variant)
{
    const char *list = opt->gate_variants ? opt->gate_variants : GATE_DEFAULT_VARIANTS;
    size_t vn = strlen(variant ? variant : "");
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if ((n == 3 && strncmp(p, "all", 3) == 0) || (n == 1 && *p == '*')) return 1;
        if (n == vn && vn && strncmp(p, variant, n) == 0) return 1;
        if (!end) break;
        p = end + 1;
    }
    return 0;
}

void gate_report_free(gate_report *r)
{
    if (!r) return;
    free(r->results);
    memset(r, 0, sizeof *r);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void gate_appendf(char *buf, size_t size, const char *fmt, ...)
{
    size_t used = strlen(buf);
    if (used + 1 >= size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + used, size - used, fmt, ap);
    va_end(ap);
}

/* The timing verdict (steps 3-5 of gate.h) into res->timing, with its reason
 * and detail in the given buffers. */
static void gate_decide_timing(const gate_case *b, const gate_case *r, const gate_options *opt,
                               gate_result *res, const char **reason, char *detail, size_t dsize)
{
    res->timing = GATE_UNKNOWN;
    *reason = "samples";
    if (!b) {
        *reason = "new";
        snprintf(detail, dsize, "not in the baseline (a new case)");
        return;
    }
    if (!r) {
        *reason = "missing";
        snprintf(detail, dsize, "not in the run (UNKNOWN, not a failure)");
        return;
    }
    if (r->n_ok == 0 && r->n_skipped > 0) {
        *reason = "skipped";
        snprintf(detail, dsize, "skipped in the run%s%s", r->error ? ": " : "",
                 r->error ? r->error : "");
        return;
    }
    if (b->n_ok == 0 && b->n_skipped > 0) {
        *reason = "skipped";
        snprintf(detail, dsize, "skipped in the baseline%s%s", b->error ? ": " : "",
                 b->error ? b->error : "");
        return;
    }
    if (b->n_ok == 0 && b->n_failed > 0) {
        snprintf(detail, dsize, "failed in the baseline, so there is no baseline time");
        return;
    }
    if (res->n_base < opt->min_reps || res->n_run < opt->min_reps) {
        snprintf(detail, dsize,
                 "too few repetitions to tell (baseline %zu, run %zu; at least %zu each)",
                 res->n_base, res->n_run, opt->min_reps);
        return;
    }
    if ((b->min_rep_samples && b->min_rep_samples < opt->min_samples) ||
        (r->min_rep_samples && r->min_rep_samples < opt->min_samples)) {
        snprintf(detail, dsize,
                 "too few samples to tell: a repetition has %zu (baseline) / %zu (run); at least "
                 "%zu each",
                 b->min_rep_samples, r->min_rep_samples, opt->min_samples);
        return;
    }
    gate_welch w;
    if (gate_welch_log_test(r->rep_medians, r->n_reps_ok, b->rep_medians, b->n_reps_ok, opt->alpha,
                            &w)) {
        snprintf(detail, dsize, "a repetition's median is 0; no ratio");
        return;
    }
    double change = (exp(w.diff) - 1.0) * 100.0, thr = res->threshold_pct;
    res->change_pct = change;
    res->ci_low_pct = (exp(w.diff - w.half_width) - 1.0) * 100.0;
    res->ci_high_pct = (exp(w.diff + w.half_width) - 1.0) * 100.0;
    res->p_value = w.p;
    if (opt->test_mwu) {
        gate_mwu t;
        if (gate_mwu_test(r->rep_medians, r->n_reps_ok, b->rep_medians, b->n_reps_ok, &t)) {
            snprintf(detail, dsize, "out of memory for the rank test");
            return;
        }
        res->p_value = t.p;
        res->exact = t.exact;
    }
    if (res->noise_pct > opt->max_noise_pct) {
        res->timing = GATE_AMBIGUOUS;
        *reason = "noise";
        snprintf(detail, dsize, "%+.2f%%, but the repetitions' noise %.2f%% is above %g%%", change,
                 res->noise_pct, opt->max_noise_pct);
        return;
    }
    if (res->p_value < opt->alpha && fabs(change) >= thr) {
        res->timing = change > 0 ? GATE_SLOWER : GATE_FASTER;
        *reason = "time";
        snprintf(detail, dsize, "%+.2f%% [%+.2f, %+.2f] (threshold %g%%), p = %.2g < %g", change,
                 res->ci_low_pct, res->ci_high_pct, thr, res->p_value, opt->alpha);
    } else if (res->ci_low_pct > -thr && res->ci_high_pct < thr) {
        res->timing = GATE_SAME;
        *reason = "";
        snprintf(detail, dsize, "%+.2f%% [%+.2f, %+.2f] is inside the %g%% threshold", change,
                 res->ci_low_pct, res->ci_high_pct, thr);
    } else {
        res->timing = GATE_AMBIGUOUS;
        *reason = "interval";
        snprintf(detail, dsize,
                 "%+.2f%% [%+.2f, %+.2f], p = %.2g: the interval reaches past +-%g%%; more "
                 "repetitions would tell",
                 change, res->ci_low_pct, res->ci_high_pct, res->p_value, thr);
    }
}

static void gate_decide(const char *name, const gate_case *b, const gate_case *r,
                        const gate_options *opt, gate_result *res)
{
    memset(res, 0, sizeof *res);
    res->name = name;
    res->base = b;
    res->run = r;
    res->threshold_pct = gate_thresholds_lookup(opt->thresholds, name, opt->threshold_pct);
    res->n_base = b ? b->n_reps_ok : 0;
    res->n_run = r ? r->n_reps_ok : 0;
    res->base_median = res->n_base ? gate_median(b->rep_medians, b->n_reps_ok) : NAN;
    res->run_median = res->n_run ? gate_median(r->rep_medians, r->n_reps_ok) : NAN;
    /* Until the test says better: the ratio of the medians of the repetitions. */
    res->change_pct = res->base_median > 0 && !isnan(res->run_median)
                          ? (res->run_median / res->base_median - 1.0) * 100.0
                          : NAN;
    res->p_value = res->ci_low_pct = res->ci_high_pct = NAN;
    res->base_noise_pct = b ? gate_log_noise_pct(b->rep_medians, b->n_reps_ok) : NAN;
    res->run_noise_pct = r ? gate_log_noise_pct(r->rep_medians, r->n_reps_ok) : NAN;
    res->noise_pct = isnan(res->base_noise_pct) ? res->run_noise_pct
                     : isnan(res->run_noise_pct) ? res->base_noise_pct
                     : fmax(res->base_noise_pct, res->run_noise_pct);
    const gate_case *any = r ? r : b;
    /* A case that names no variant is someone's code we cannot tell: gated. */
    res->gated = !any || !any->variant || !*any->variant || gate_variant_gated(opt, any->variant);

    const char *treason;
    char tdetail[sizeof res->detail];
    gate_decide_timing(b, r, opt, res, &treason, tdetail, sizeof tdetail);

    /* Counts: rises regress, falls are noted. */
    char rises[160] = "", falls[160] = "";
    if (b && r) {
        static const char *const names[3] = {"kernels", "launches", "segments"};
        const long bc[3] = {b->kernels, b->launches, b->segments};
        const long rc[3] = {r->kernels, r->launches, r->segments};
        for (int k = 0; k < 3; k++) {
            if (bc[k] < 0 || rc[k] < 0 || bc[k] == rc[k]) continue;
            char *buf = rc[k] > bc[k] ? rises : falls;
            gate_appendf(buf, sizeof rises, "%s%s %ld -> %ld", *buf ? ", " : "", names[k], bc[k],
                         rc[k]);
        }
    }

    res->detail[0] = '\0';
    if (r && r->n_failed > 0) {
        res->verdict = GATE_REGRESSION;
        res->reason = "correctness";
        gate_appendf(res->detail, sizeof res->detail, "failed its check in %d of %d repetitions",
                     r->n_failed, r->reps);
        if (r->error) gate_appendf(res->detail, sizeof res->detail, ": %s", r->error);
        if (b && b->n_failed > 0)
            gate_appendf(res->detail, sizeof res->detail, " (failed in the baseline too)");
        else if (!b)
            gate_appendf(res->detail, sizeof res->detail, " (a new case)");
    } else if (*rises) {
        res->verdict = GATE_REGRESSION;
        res->reason = "launches";
        gate_appendf(res->detail, sizeof res->detail, "%s", rises);
        if (res->timing != GATE_UNKNOWN)
            gate_appendf(res->detail, sizeof res->detail, "; time %+.2f%% (%s)", res->change_pct,
                         gate_verdict_name(res->timing));
    } else if (!r && opt->require_all) {
        res->verdict = GATE_REGRESSION;
        res->reason = "missing";
        gate_appendf(res->detail, sizeof res->detail, "missing in the run (every case is required)");
    } else {
        res->verdict = res->timing;
        res->reason = treason;
        gate_appendf(res->detail, sizeof res->detail, "%s", tdetail);
    }
    if (*falls) gate_appendf(res->detail, sizeof res->detail, "; fewer: %s", falls);
}

int gate_compare(const gate_run *run, const gate_run *base, const gate_options *opt,
                 gate_report *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (strcmp(run->gpu_name, base->gpu_name) != 0)
        return gate_errf(err, errlen,
                         "different GPU models: the run %s is from \"%s\" but the baseline %s is "
                         "from \"%s\"; compare a run with the baseline of its own model "
                         "(results/baselines/%s.json)",
                         run->path, run->gpu_name, base->path, base->gpu_name, run->gpu_key);
    size_t cap = run->n_cases + base->n_cases;
    out->results = calloc(cap ? cap : 1, sizeof *out->results);
    if (!out->results) return gate_errf(err, errlen, "out of memory");
    for (size_t i = 0; i < run->n_cases; i++) {
        const gate_case *r = &run->cases[i];
        if (opt->filter && fnmatch(opt->filter, r->name, 0) != 0) continue;
        gate_decide(r->name, gate_run_find(base, r->name), r, opt, &out->results[out->n++]);
    }
    for (size_t i = 0; i < base->n_cases; i++) {
        const gate_case *b = &base->cases[i];
        if (opt->filter && fnmatch(opt->filter, b->name, 0) != 0) continue;
        if (gate_run_find(run, b->name)) continue;
        gate_decide(b->name, b, NULL, opt, &out->results[out->n++]);
    }
    for (size_t i = 0; i < out->n; i++) {
        out->counts[out->results[i].verdict]++;
        if (out->results[i].gated &&
            (out->results[i].verdict == GATE_SLOWER || out->results[i].verdict == GATE_REGRESSION))
            out->regressed = 1;
    }
    return 0;
}
