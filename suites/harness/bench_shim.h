/*
 * bench_shim.h -- Google Benchmark from C (bench_shim.cc is the project's one
 * C++ file).
 *
 * Suites register one benchmark per case with a C body. Each repetition calls
 * the body once (one iteration, manual time): the body measures (many
 * event-timed samples) and reports the headline time and its counters. A
 * reporter hands every run Google Benchmark produces, repetitions and its
 * aggregates (median, mean, stddev, cv), back to C, which writes the JSON.
 *
 *     hb_gbench *g = hb_gb_new();
 *     hb_gb_init(g, argv0, nflags, flags, why, sizeof why);   // --benchmark_* flags pass through
 *     hb_gb_register(g, "qkv_split/qkv/fuser/f32/16x128x3072", 3, body, item);
 *     hb_gb_run_all(g, on_run, collector);
 *     hb_gb_free(g);
 *     hb_gb_shutdown();                                       // once, when the process is done with it
 *
 * Google Benchmark keeps its registry and flags in its own globals; a process
 * has one hb_gbench at a time, and initializes Google Benchmark once and
 * shuts it down once. Its Shutdown() deletes the custom context
 * (--benchmark_context) without forgetting it, so a second Initialize would
 * write into freed memory and a second Shutdown delete it twice: hb_gb_init
 * refuses a second call in a process, and only hb_gb_shutdown shuts down.
 */
#ifndef FUSEBENCH_BENCH_SHIM_H
#define FUSEBENCH_BENCH_SHIM_H

#include "harness.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the body reports for one repetition. */
typedef struct hb_gb_result {
    bool failed;                 /* Google Benchmark records it as an error; nothing is timed */
    char message[512];
    double seconds;              /* the repetition's headline time (manual time) */
    int ncounters;
    hb_counter counters[HB_MAX_COUNTERS];
} hb_gb_result;

/* repetition: 0, 1, ... in the order Google Benchmark runs them. */
typedef void (*hb_gb_body)(void *user, int repetition, hb_gb_result *out);

/* One run as Google Benchmark reports it. */
typedef struct hb_gb_run {
    const char *run_name;        /* the registered name */
    void *user;                  /* the registration's user pointer */
    bool aggregate;
    const char *aggregate_name;  /* "median", ... ("" for repetitions) */
    const char *aggregate_unit;  /* "time" or "percentage" */
    int64_t family_index, per_family_instance_index;
    int64_t repetitions, repetition_index, threads, iterations;
    double real_time, cpu_time;  /* in microseconds */
    bool error;
    const char *error_message;
    int ncounters;
    hb_counter counters[HB_MAX_COUNTERS];
} hb_gb_run;
typedef void (*hb_gb_report)(void *user, const hb_gb_run *run);

typedef struct hb_gbench hb_gbench;

hb_gbench *hb_gb_new(void);
/* Clears the registrations and frees g; Google Benchmark stays initialized
 * (hb_gb_shutdown ends it). g must outlive the runs: Google Benchmark keeps a
 * pointer to the argv0 it was initialized with. */
void hb_gb_free(hb_gbench *g);
/* Initializes Google Benchmark with argv0 and its own flags (--benchmark_*);
 * false and why when a flag is not one of its own. Once per process: a
 * second call (or one after hb_gb_shutdown) initializes nothing and returns
 * false. Google Benchmark counts as initialized even when this returns false
 * (the flags it knew are set): hb_gb_shutdown is still due. */
bool hb_gb_init(hb_gbench *g, const char *argv0, int nflags, char **flags, char *why, size_t nwhy);
/* Shuts Google Benchmark down (frees its custom context), once per process:
 * later calls, and a call when it was never initialized, do nothing. Call it
 * after the last hb_gb_run_all. */
void hb_gb_shutdown(void);
/* Registers a benchmark: one iteration per repetition, manual time, microseconds. */
bool hb_gb_register(hb_gbench *g, const char *name, int repetitions, hb_gb_body body, void *user);
/* Runs what is registered (and passes --benchmark_filter). Returns the number of runs reported. */
int hb_gb_run_all(hb_gbench *g, hb_gb_report report, void *user);
/* Google Benchmark's context: CPUs, caches, load, host, date (the
 * executable is left empty for the caller). */
void hb_gb_host_info(hb_host_info *out);

#ifdef __cplusplus
}
#endif
#endif
