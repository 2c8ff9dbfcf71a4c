/*
 * run.h -- a run file (docs/results-schema.md) as the gate sees it: the
 * context fields it needs and one gate_case per benchmark `run_name` (or
 * `name` where run_name is absent), gathered from the `"run_type":
 * "iteration"` entries (one per repetition); aggregates are ignored.
 *
 * Samples of a case: all `samples_us` of all of its passing repetitions, in
 * order, when every passing repetition has them; otherwise one value per
 * passing repetition, its `real_time` (converted to us from `time_unit`).
 * The gate's test uses one value per passing repetition (rep_medians): samples
 * of one repetition share its clocks and placement, so they are not
 * independent; repetitions are.
 *
 * Files are read through zlib: a gzip-compressed run file (.json.gz) reads as
 * the plain one.
 *
 * Loading checks the shape of the file and never crashes on bad input: any
 * problem comes back as -1 with a message that names the file, the entry and
 * the key.
 */
#ifndef GATE_RUN_H
#define GATE_RUN_H

#include <stddef.h>

#include <cjson/cJSON.h>

#define GATE_RUN_SCHEMA "fusebench-run/1"

typedef enum gate_sample_source {
    GATE_FROM_SAMPLES,   /* samples_us of every repetition */
    GATE_FROM_REAL_TIME  /* one real_time per repetition */
} gate_sample_source;

typedef struct gate_case {
    char *name;                                  /* key across runs */
    char *suite, *kase, *variant, *dtype, *size; /* "" when absent */
    int reps;                                    /* iteration entries */
    int n_ok, n_failed, n_skipped;               /* by status */
    double *samples;                             /* us; see gate_sample_source */
    size_t n_samples;
    gate_sample_source source;
    double *rep_medians;                         /* us: one per passing repetition, the
                                                    median of its samples_us (its real_time
                                                    where it has none): the gate's units */
    size_t n_reps_ok;                            /* their number (== n_ok) */
    size_t min_rep_samples;                      /* fewest samples_us of a passing repetition
                                                    that has them; 0 when none has */
    char *kernels_id;                            /* what identifies the kernels it ran:
                                                    kernel_source_hash when written, else
                                                    the kernel_records' names, grids, blocks,
                                                    registers and shared memory; NULL when
                                                    neither is there */
    long kernels, launches, segments;            /* max over repetitions; -1 when absent */
    double bytes;                                /* -1 when absent */
    double gbps;                                 /* median of GB/s fields; NAN when absent */
    double max_rel_error;                        /* max over repetitions; NAN when absent */
    double speedup;                              /* speedup_vs_torch_compile of a passing
                                                    repetition; NAN when absent */
    char *error;                                 /* first `error` of a repetition, or NULL */
} gate_case;

typedef struct gate_run {
    char *path;                 /* as given, for messages */
    cJSON *json;                /* the whole document (owned) */
    /* context; "" when absent (gpu_name and schema are required) */
    const char *gpu_name, *gpu_key, *git_commit, *date, *timing_mode;
    char *gpu_key_owned;        /* gpu_key derived from gpu_name when absent */
    double copy_bandwidth_gbps; /* NAN when absent */
    gate_case *cases;           /* in order of first appearance */
    size_t n_cases;
} gate_run;

/* Parses text (len bytes, and a NUL at text[len]) named path. Returns 0, or -1 with a message in err;
 * run is empty (safe to free) either way. */
int gate_run_parse(gate_run *run, const char *text, size_t len, const char *path, char *err,
                   size_t errlen);

/* Reads and parses the file at path. */
int gate_run_load(gate_run *run, const char *path, char *err, size_t errlen);

void gate_run_free(gate_run *run);

/* The case named name, or NULL. */
const gate_case *gate_run_find(const gate_run *run, const char *name);

/* "NVIDIA H200" -> "nvidia_h200": lower case, runs of other characters as
 * one '_', none at the ends. Writes at most outlen bytes (NUL included). */
void gate_gpu_key_from_name(const char *name, char *out, size_t outlen);

#endif
