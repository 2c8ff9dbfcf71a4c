/*
 * torch_merge.h -- `run_suite --with-torch`: runs reference/torch_bench.py
 * (PyTorch eager and torch.compile on the same cases, sizes, dtypes and
 * cold-L2 method), reads the run file it writes (docs/results-schema.md),
 * and merges its entries into the run, adding speedup_vs_torch_compile.
 *
 *     hb_torch_options o;  hb_torch_options_default(&o);
 *     hb_torch_rows rows;  char msg[512];
 *     hb_torch_result r = hb_torch_run(&o, "cross_entropy/fwd/f32/8192x32768", &rows, msg, sizeof msg);
 *     if (r != HB_TORCH_OK) fprintf(stderr, "%s\n", msg);   // one line; the run goes on
 *     ... merged = the run's entries + rows.entries; hb_torch_speedups(merged, n);
 *     hb_torch_rows_free(&rows);
 */
#ifndef FUSEBENCH_TORCH_MERGE_H
#define FUSEBENCH_TORCH_MERGE_H

#include "harness.h"

/* The script's exit status when python3 runs but PyTorch or a GPU is not
 * there (it writes the reason, one line, to its output file instead of JSON). */
#define HB_TORCH_EXIT_ABSENT 3

typedef struct hb_torch_options {
    const char *python;     /* NULL: $FUSEBENCH_PYTHON, else "python3" from PATH */
    const char *script;     /* NULL: $FUSEBENCH_TORCH_SCRIPT, else the source tree's reference/torch_bench.py */
    int repetitions;        /* as run_suite's --repetitions */
    double time_limit_s;    /* per repetition */
    const char *mode;       /* "cold" or "hot" */
    uint64_t seed;
    const char *fusions;    /* the items file (hb_runner_write_torch_items), passed as --fusions */
} hb_torch_options;
void hb_torch_options_default(hb_torch_options *o);

/* Entries read from a run file, and the storage they point into. */
typedef struct hb_torch_rows {
    hb_entry *entries;
    int n;
    double **samples;       /* one malloc'd array per entry (or NULL) */
} hb_torch_rows;
void hb_torch_rows_free(hb_torch_rows *r);

typedef enum hb_torch_result {
    HB_TORCH_OK = 0,
    HB_TORCH_ABSENT,        /* no python3, no PyTorch or no GPU: msg says which */
    HB_TORCH_FAILED         /* the script failed or wrote what cannot be read: msg says why */
} hb_torch_result;

/* Runs the script for `items` (comma-separated suite/case/dtype/size) with
 * its standard output sent to standard error (run_suite's standard output
 * may be JSON), reads what it wrote. On anything but HB_TORCH_OK, out is
 * empty and msg holds one line. */
hb_torch_result hb_torch_run(const hb_torch_options *o, const char *items, hb_torch_rows *out, char *msg,
                             size_t nmsg);

/* Reads the entries of a run file (the script's). false and why when the
 * file cannot be read or is not a "fusebench-run/1" run file. */
bool hb_torch_read(const char *path, hb_torch_rows *out, char *why, size_t nwhy);

/* The distinct suite/case/dtype/size of benchmark names
 * ("suite/case/variant/dtype/size"), comma-separated, in first-seen order.
 * malloc'd; NULL when out of memory. */
char *hb_torch_items(const char *const *names, int n);

/* torch.compile's time for each suite/case/dtype/size: the median of the
 * real_time of its ok repetitions (aggregates are not used). NaN when none. */
double hb_torch_compile_time(const hb_entry *e, int n, const char *suite, const char *case_name, const char *dtype,
                             const char *size);

/* Sets speedup_vs_torch_compile = torch.compile's time / real_time on every
 * ok entry with a time (repetitions, and the median and mean aggregates; not
 * stddev or cv, which are not times) of a suite/case/dtype/size that has a
 * torch.compile time. Returns how many were set. */
int hb_torch_speedups(hb_entry *e, int n);

/* Recomputes GB/s (bytes / real_time) and peak_fraction (over copy_gbps,
 * when finite) of the ok entries with a bytes counter: rows measured by the
 * script are put on the run's copy bandwidth. */
void hb_torch_rebase(hb_entry *e, int n, double copy_gbps);

#endif
