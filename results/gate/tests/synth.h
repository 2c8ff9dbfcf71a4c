/*
 * synth.h -- synthetic run files for the gate's tests (no GPU): the shape of
 * docs/results-schema.md with times drawn from a model (bytes over a bandwidth
 * per variant) times a scale, with relative Gaussian noise.
 */
#ifndef GATE_SYNTH_H
#define GATE_SYNTH_H

#include <stdint.h>

#include <cjson/cJSON.h>

typedef struct synth_rng {
    uint64_t state;
} synth_rng;

/* splitmix64 and Box-Muller: deterministic for a given seed on every machine. */
uint64_t synth_next(synth_rng *r);
double synth_uniform(synth_rng *r); /* (0, 1) */
double synth_normal(synth_rng *r);

typedef struct synth_opts {
    const char *gpu_name;    /* default "NVIDIA H200" */
    const char *schema;      /* default "fusebench-run/1" */
    const char *commit;      /* default "abc1234" */
    const char *date;        /* default "2025-01-01T02:00:00+00:00" */
    uint64_t seed;
    double scale;            /* every time times this (default 1) */
    double noise;            /* relative standard deviation (default 0.01) */
    int reps;                /* repetitions (default 10) */
    int samples;             /* samples_us per repetition; 0 = none, real_time only */
    int kernels_plus;        /* added to the kernels of fuser cases */
    const char *fail;        /* glob: these cases fail their check */
    const char *only;        /* glob: only these cases are written (NULL = all) */
    const char *slow;        /* glob: scale applies to these cases only (NULL = all) */
    double copy_gbps;        /* default 4000 */
    const char *time_unit;   /* default "us" */
} synth_opts;

void synth_defaults(synth_opts *o);

/* A run with the standard grid of cases (3 suites, 2-3 cases, 2-4 variants,
 * 1-2 dtypes, 2-3 sizes each). */
cJSON *synth_run(const synth_opts *o);

/* The same, printed; malloc'd (free with free()). */
char *synth_run_text(const synth_opts *o);

/* Adds delta to `key` (kernels, launches, segments) of every repetition of the
 * case named name. Returns the number of entries changed. */
int synth_bump(cJSON *run, const char *name, const char *key, int delta);

#endif
