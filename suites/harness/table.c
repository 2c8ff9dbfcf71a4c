/* table.c -- a run's entries as the table of table.h (run_suite --format md|csv). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "table.h"

static double median_of(double *x, int n)
{
    return n ? hb_median(x, n) : NAN;
}

bool hb_table_write_run(FILE *out, const char *format, const hb_context *c, const hb_entry *e, int n)
{
    hb_table_format f;
    if (!hb_table_format_from_name(format, &f)) return false;
    double *times = malloc((size_t)(n > 0 ? n : 1) * sizeof *times);
    double *gbps = malloc((size_t)(n > 0 ? n : 1) * sizeof *gbps);
    if (!times || !gbps) {
        free(times);
        free(gbps);
        return false;
    }
    hb_table_begin(out, f, c->gpu_name, c->git_commit, c->host.date);
    for (int i = 0; i < n; i++) {
        if (e[i].aggregate) continue;
        const char *key = e[i].run_name[0] ? e[i].run_name : e[i].name;
        int seen = 0;
        for (int k = 0; k < i && !seen; k++)
            seen = !e[k].aggregate && strcmp(e[k].run_name[0] ? e[k].run_name : e[k].name, key) == 0;
        if (seen) continue;
        hb_table_row r = {key, e[i].suite, e[i].case_name, e[i].variant, e[i].dtype, e[i].size, "skipped", 0,
                          NAN, NAN, NAN, NAN, NAN, -1, -1, ""};
        int nt = 0, ng = 0, failed = 0;
        for (int k = i; k < n; k++) {
            const hb_entry *x = &e[k];
            if (x->aggregate || strcmp(x->run_name[0] ? x->run_name : x->name, key) != 0) continue;
            double kern = hb_entry_get_counter(x, "kernels"), launch = hb_entry_get_counter(x, "launches");
            if (isfinite(kern) && (long)kern > r.kernels) r.kernels = (long)kern;
            if (isfinite(launch) && (long)launch > r.launches) r.launches = (long)launch;
            if (x->status == HB_STATUS_FAILED) failed = 1;
            if (x->status != HB_STATUS_OK) {
                if (!*r.error) r.error = x->error;
                continue;
            }
            times[nt++] = x->real_time;
            double g = hb_entry_get_counter(x, "GB/s");
            if (isfinite(g)) gbps[ng++] = g;
            if (isfinite(x->speedup_vs_torch_compile)) r.speedup_vs_torch_compile = x->speedup_vs_torch_compile;
        }
        r.status = failed ? "failed" : nt ? "ok" : "skipped";
        r.reps = nt;
        r.noise_pct = hb_table_noise_pct(times, nt);
        r.median_us = median_of(times, nt);
        r.gbps = median_of(gbps, ng);
        if (isfinite(r.gbps) && c->copy_bandwidth_gbps > 0) r.copy_pct = 100.0 * r.gbps / c->copy_bandwidth_gbps;
        hb_table_row_write(out, f, &r);
    }
    free(times);
    free(gbps);
    fflush(out);
    return !ferror(out);
}
