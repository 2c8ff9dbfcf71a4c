/*
 * test_gate_stored.c -- the gate on the stored H200 runs (results/runs), real
 * data (issue 20, item 2):
 *
 *   A/A: every pair of stored runs of one GPU model, older as the baseline;
 *        among the gated cases whose kernels are the same on both sides, no
 *        SLOWER (and no FASTER).
 *   A/B: the same pairs with the run side made 5% slower (every repetition
 *        time times 1.05): SLOWER on every such case whose spread allows it,
 *        i.e. where the A/A change c and the 99% half-width h leave room:
 *        (1 + c)(1.05) - 1 - h >= threshold + 0.5 (percent).
 *
 * "Same kernels" (byte-identical generated code): both runs were built from
 * the same git commit, and where both entries carry kernel_source_hash
 * (kernels_id, run.h) it is equal. The stored files hold no hash of the
 * kernel source, and the CUPTI records (names, grids, blocks, registers) are
 * not enough: between commits they stay equal while the code changes by 27%
 * (cross_entropy fwdbwd bf16, 7959498 -> 157556e), and every commit in the
 * history changed fuser/src. So the pairs are those of one commit (four in
 * the stored H200 history, each a full run and a partial re-run).
 *
 * The rule is the nightly's: results/thresholds.txt and the default options.
 *
 *   test_gate_stored RUNS_DIR THRESHOLDS_FILE
 */
#define _POSIX_C_SOURCE 200809L

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gate.h"
#include "run.h"

/* The two sides ran the same kernels (see above). */
static int same_kernels(const gate_run *base, const gate_run *run, const gate_result *x)
{
    if (!x->base || !x->run || strcmp(base->git_commit, run->git_commit) != 0) return 0;
    const char *a = x->base->kernels_id, *b = x->run->kernels_id;
    int hashed = a && b && strchr(a, ':') == NULL && strchr(b, ':') == NULL;
    return !hashed || strcmp(a, b) == 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_gate_stored RUNS_DIR THRESHOLDS_FILE\n");
        return 2;
    }
    DIR *d = opendir(argv[1]);
    CHECK(d != NULL);
    if (!d) return 1;
    char *names[512];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < 512) {
        size_t len = strlen(de->d_name);
        if (de->d_name[0] == '.' || !(strstr(de->d_name, ".json") && (len > 5))) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", argv[1], de->d_name);
        names[n++] = strdup(path);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp_str);
    gate_run *runs = calloc(n, sizeof *runs);
    char err[1024];
    for (size_t i = 0; i < n; i++) {
        int rc = gate_run_load(&runs[i], names[i], err, sizeof err);
        if (rc) fprintf(stderr, "%s\n", err);
        CHECK(rc == 0);
    }
    CHECK(n >= 10);

    gate_options opt;
    gate_options_default(&opt);
    gate_thresholds thr = {0};
    CHECK(gate_thresholds_load(&thr, argv[2], err, sizeof err) == 0);
    opt.thresholds = &thr;
    size_t pairs = 0, compared = 0, aa_slower = 0, aa_faster = 0, ab_expected = 0, ab_slower = 0;
    size_t ab_missed = 0, not_allowed = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            gate_run *base = &runs[i], *run = &runs[j];
            if (strcmp(base->gpu_key, run->gpu_key) != 0) continue;
            if (strcmp(base->git_commit, run->git_commit) != 0) continue;
            pairs++;
            gate_report rep;
            CHECK(gate_compare(run, base, &opt, &rep, err, sizeof err) == 0);
            for (size_t k = 0; k < rep.n; k++) {
                gate_result *x = &rep.results[k];
                if (!x->gated || !same_kernels(base, run, x)) continue;
                compared++;
                if (x->verdict == GATE_SLOWER) {
                    aa_slower++;
                    fprintf(stderr, "A/A SLOWER: %s: %s against %s: %s\n", x->name, run->path,
                            base->path, x->detail);
                }
                if (x->verdict == GATE_FASTER) {
                    aa_faster++;
                    fprintf(stderr, "A/A FASTER: %s: %s against %s: %s\n", x->name, run->path,
                            base->path, x->detail);
                }
            }
            /* A/B: the run side 5% slower. */
            for (size_t c = 0; c < run->n_cases; c++) {
                gate_case *rc = &run->cases[c];
                for (size_t r = 0; r < rc->n_reps_ok; r++) rc->rep_medians[r] *= 1.05;
            }
            gate_report slow;
            CHECK(gate_compare(run, base, &opt, &slow, err, sizeof err) == 0);
            for (size_t k = 0; k < rep.n && k < slow.n; k++) {
                gate_result *x = &rep.results[k], *y = &slow.results[k];
                if (!x->gated || !same_kernels(base, run, x) || x->verdict == GATE_UNKNOWN ||
                    x->verdict == GATE_REGRESSION || isnan(x->ci_low_pct))
                    continue;
                double half = 0.5 * (x->ci_high_pct - x->ci_low_pct);
                double shifted = ((1 + x->change_pct / 100) * 1.05 - 1) * 100;
                int allowed = shifted - half >= x->threshold_pct + 0.5 && !(x->noise_pct > opt.max_noise_pct);
                if (!allowed) {
                    not_allowed++;
                    continue;
                }
                ab_expected++;
                if (y->verdict == GATE_SLOWER) ab_slower++;
                else {
                    ab_missed++;
                    fprintf(stderr, "A/B not SLOWER: %s: %s against %s: %s\n", y->name, run->path,
                            base->path, y->detail);
                }
            }
            for (size_t c = 0; c < run->n_cases; c++) {
                gate_case *rc = &run->cases[c];
                for (size_t r = 0; r < rc->n_reps_ok; r++) rc->rep_medians[r] /= 1.05;
            }
            gate_report_free(&rep);
            gate_report_free(&slow);
        }
    printf("stored runs: %zu, pairs of one commit: %zu, gated cases with the same kernels compared: %zu\n", n, pairs,
           compared);
    printf("A/A: %zu SLOWER, %zu FASTER\n", aa_slower, aa_faster);
    printf("A/B (+5%%): %zu of %zu cases whose spread allows it are SLOWER (%zu missed); %zu cases "
           "too noisy for a 5%% step at this many repetitions\n",
           ab_slower, ab_expected, ab_missed, not_allowed);
    CHECK(compared >= 10);
    CHECK(aa_slower == 0);
    CHECK(ab_expected > 0 && ab_missed == 0);
    for (size_t i = 0; i < n; i++) {
        gate_run_free(&runs[i]);
        free(names[i]);
    }
    free(runs);
    gate_thresholds_free(&thr);
    return check_finish("test_gate_stored");
}
