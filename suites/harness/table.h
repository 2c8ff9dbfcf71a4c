/*
 * table.h -- a run as a table, in Markdown or CSV (`./run_suite --format
 * md|csv`, and `scripts/table` for a stored run, which renders the same
 * rows from the file). Header-only, with no other dependency, so that both
 * run_suite and the gate (which has no harness) write exactly one format.
 *
 * One row per case (a benchmark run_name): its status (failed when any
 * repetition failed, skipped when none ran), the passing repetitions, the
 * median of their times, their noise (the standard deviation of the logs of
 * the repetition times, in percent: what the gate's test sees), GB/s, the
 * fraction of the run's copy bandwidth, the kernels and launches of one call,
 * and torch.compile's time over this one. Unknown numbers are empty (CSV) or
 * "-" (Markdown).
 */
#ifndef FUSEBENCH_TABLE_H
#define FUSEBENCH_TABLE_H

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct hb_table_row {
    const char *name, *suite, *kase, *variant, *dtype, *size;
    const char *status;      /* ok, failed, skipped */
    int reps;                /* passing repetitions */
    double median_us, noise_pct, gbps, copy_pct, speedup_vs_torch_compile; /* NAN: unknown */
    long kernels, launches;  /* -1: unknown */
    const char *error;       /* why not ok, or "" */
} hb_table_row;

typedef enum { HB_TABLE_MD, HB_TABLE_CSV } hb_table_format;

/* "md" or "csv" into *f; 0 when the name is neither. */
static inline int hb_table_format_from_name(const char *name, hb_table_format *f)
{
    if (strcmp(name, "md") == 0) *f = HB_TABLE_MD;
    else if (strcmp(name, "csv") == 0) *f = HB_TABLE_CSV;
    else return 0;
    return 1;
}

/* A CSV field, quoted where it holds a comma, quote or line break. */
static inline void hb_table_csv_str(FILE *out, const char *s)
{
    if (!s) s = "";
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"') fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static inline void hb_table_md_str(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '|') fputs("\\|", out);
        else fputc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
    }
}

static inline void hb_table_num(FILE *out, hb_table_format f, const char *fmt, double v)
{
    if (isfinite(v)) fprintf(out, fmt, v);
    else if (f == HB_TABLE_MD) fputc('-', out);
}

static inline void hb_table_count(FILE *out, hb_table_format f, long v)
{
    if (v >= 0) fprintf(out, "%ld", v);
    else if (f == HB_TABLE_MD) fputc('-', out);
}

/* The noise of n repetition times (> 0): the sample standard deviation of
 * their logarithms, in percent; NAN with fewer than 2. */
static inline double hb_table_noise_pct(const double *x, int n)
{
    if (n < 2) return NAN;
    double m = 0, ss = 0;
    for (int i = 0; i < n; i++) {
        if (!(x[i] > 0)) return NAN;
        m += log(x[i]);
    }
    m /= n;
    for (int i = 0; i < n; i++) ss += (log(x[i]) - m) * (log(x[i]) - m);
    return 100.0 * sqrt(ss / (n - 1));
}

/* The title (Markdown only) and the header. */
static inline void hb_table_begin(FILE *out, hb_table_format f, const char *gpu_name, const char *commit,
                                  const char *date)
{
    if (f == HB_TABLE_CSV) {
        fputs("name,suite,case,variant,dtype,size,status,reps,median_us,noise_pct,gbps,copy_pct,kernels,"
              "launches,speedup_vs_torch_compile,error\n",
              out);
        return;
    }
    fprintf(out, "## %s, commit %s, %s\n\n", gpu_name && *gpu_name ? gpu_name : "no GPU",
            commit && *commit ? commit : "?", date && *date ? date : "no date");
    fputs("| case | status | reps | median (us) | noise | GB/s | % copy | kernels | launches | vs torch.compile "
          "|\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
          out);
}

/* The numeric columns, median to speed-up, sep between them. */
static inline void hb_table_numbers(FILE *out, hb_table_format f, const hb_table_row *r, const char *sep)
{
    const int md = f == HB_TABLE_MD;
    const double nums[4] = {r->median_us, r->noise_pct, r->gbps, r->copy_pct};
    const char *const fmts[2][4] = {{"%.4f", "%.3f", "%.1f", "%.1f"}, {"%.3f", "%.2f%%", "%.1f", "%.1f%%"}};
    for (int k = 0; k < 4; k++) {
        hb_table_num(out, f, fmts[md][k], nums[k]);
        fputs(sep, out);
    }
    hb_table_count(out, f, r->kernels);
    fputs(sep, out);
    hb_table_count(out, f, r->launches);
    fputs(sep, out);
    hb_table_num(out, f, md ? "%.2fx" : "%.3f", r->speedup_vs_torch_compile);
}

static inline void hb_table_row_write(FILE *out, hb_table_format f, const hb_table_row *r)
{
    if (f == HB_TABLE_CSV) {
        const char *ids[7] = {r->name, r->suite, r->kase, r->variant, r->dtype, r->size, r->status};
        for (int i = 0; i < 7; i++) {
            hb_table_csv_str(out, ids[i]);
            fputc(',', out);
        }
        fprintf(out, "%d,", r->reps);
        hb_table_numbers(out, f, r, ",");
        fputc(',', out);
        hb_table_csv_str(out, r->error);
        fputc('\n', out);
        return;
    }
    fputs("| ", out);
    hb_table_md_str(out, r->name);
    fputs(" | ", out);
    hb_table_md_str(out, r->status);
    if (r->error && *r->error && strcmp(r->status, "ok") != 0) {
        fputs(": ", out);
        hb_table_md_str(out, r->error);
    }
    fprintf(out, " | %d | ", r->reps);
    hb_table_numbers(out, f, r, " | ");
    fputs(" |\n", out);
}

#endif
