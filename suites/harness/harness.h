/*
 * harness.h -- the measuring side of the suites: statistics, CUPTI activity
 * records, CUDA-event timing with a flushed L2, SM-clock sampling, the
 * device's copy bandwidth, output checks, and the run JSON writer
 * (docs/results-schema.md). It drives the device through the fuser's runtime
 * (memory, events, launches); the fuser never depends on it.
 *
 * Worked example: what one call launches, and how long it takes.
 *
 *     hb_timing_options o;  hb_timing_options_default(&o);   // cold L2, >= 10 samples, spread < 2%
 *     hb_timer *t;          hb_timer_open(rt, clocks, &o, &t, &err);   // clocks may be NULL
 *     hb_cupti *cu;         hb_cupti_open(&cu, why, sizeof why);       // NULL without libcupti
 *     hb_call_profile prof; hb_profile_call(cu, t, my_call, ctx, 5, &prof, &err);
 *     hb_samples s;         hb_timer_measure(t, my_call, ctx, &s, &err);
 *     printf("%d kernels, %.1f us kernel time, %.1f us median (+-%.1f%%)\n", prof.last.kernels,
 *            prof.kernel_us, s.summary.median, 100 * s.summary.spread);
 *
 * my_call enqueues one call on the runtime's stream (hb_call_fn). The headline
 * time is CUDA-event time around the whole call (launch gaps included); the
 * CUPTI kernel time is recorded beside it in a separate pass, so that CUPTI's
 * tracing never adds to the headline.
 *
 * No global mutable state, with one exception forced by CUPTI's buffer
 * callbacks, which carry no user pointer (cupti.c says how it is guarded).
 */
#ifndef FUSEBENCH_HARNESS_H
#define FUSEBENCH_HARNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fuser.h"
#include "fuser_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ statistics (stats.c) */

typedef struct hb_summary {
    int n;
    double min, max, mean;
    double stddev;          /* sample standard deviation (n - 1); 0 when n < 2 */
    double median, p25, p75;
    double spread;          /* (p75 - p25) / median; 0 when n < 2 or all equal; inf when median is 0 */
} hb_summary;

/* q-quantile of n sorted values, linear between order statistics (NumPy's
 * default). NaN when n <= 0. */
double hb_quantile_sorted(const double *sorted, int n, double q);
/* Median of n values in any order (a sorted copy is made). NaN when n <= 0
 * or out of memory. */
double hb_median(const double *x, int n);
/* false when n <= 0 or out of memory (out is then zeroed, median NaN). */
bool hb_summarize(const double *x, int n, hb_summary *out);

typedef enum hb_stop {
    HB_CONTINUE = 0,
    HB_STOP_CONVERGED,     /* >= min_samples and spread <= max_spread */
    HB_STOP_MAX_SAMPLES,
    HB_STOP_TIME_LIMIT     /* at least min_samples/2 (>= 3) samples, or twice the limit */
} hb_stop;
const char *hb_stop_name(hb_stop s);

typedef struct hb_stop_rule {
    int min_samples;       /* 10 */
    int max_samples;       /* 1000 */
    double max_spread;     /* 0.02 */
    double time_limit_s;   /* 2.0 */
} hb_stop_rule;

/* Whether a measurement with these samples, after elapsed_s seconds, stops. */
hb_stop hb_should_stop(const hb_stop_rule *r, const double *samples, int n, double elapsed_s);

/* ================================================================ the run JSON (json.c) */

#define HB_JSON_MAX_DEPTH 32

/* A streaming JSON writer: objects, arrays, escaped strings, numbers that
 * read back exactly (NaN and infinities are written as null). Misuse (a value
 * where a key is needed, unbalanced ends, too deep) and I/O errors set
 * `failed`; hb_json_finish reports it. */
typedef struct hb_json {
    FILE *out;
    int indent;                            /* spaces per level; 0 = one line */
    int depth;
    bool is_object[HB_JSON_MAX_DEPTH];
    bool has_items[HB_JSON_MAX_DEPTH];
    bool after_key;
    bool failed;
} hb_json;

void hb_json_init(hb_json *j, FILE *out, int indent);
void hb_json_object_begin(hb_json *j);
void hb_json_object_end(hb_json *j);
void hb_json_array_begin(hb_json *j);
void hb_json_array_end(hb_json *j);
void hb_json_key(hb_json *j, const char *key);
void hb_json_string(hb_json *j, const char *s);    /* NULL is written as null */
void hb_json_number(hb_json *j, double v);
void hb_json_int(hb_json *j, int64_t v);
void hb_json_bool(hb_json *j, bool v);
void hb_json_null(hb_json *j);
/* true when everything was balanced and written. */
bool hb_json_finish(hb_json *j);

/* "NVIDIA H200" -> "nvidia_h200" (lower case; runs of other characters -> one '_'). */
void hb_gpu_key(const char *gpu_name, char *out, size_t cap);

/* Google Benchmark's own context (from its CPUInfo and SystemInfo). */
typedef struct hb_cache_info {
    char type[16];         /* "Data", "Instruction", "Unified" */
    int level;
    int64_t size;
    int num_sharing;
} hb_cache_info;

typedef struct hb_host_info {
    char date[64];         /* 2026-11-30T12:00:00+01:00 */
    char host_name[256];
    char executable[1024];
    int num_cpus;
    double mhz_per_cpu;
    int cpu_scaling;       /* 1 enabled, 0 disabled, -1 unknown (the key is left out) */
    int ncaches;
    hb_cache_info caches[8];
    int nload;
    double load_avg[3];
    char library_build_type[16]; /* "release" / "debug" */
} hb_host_info;

/* The run's context: Google Benchmark's keys plus ours (docs/results-schema.md). */
typedef struct hb_context {
    hb_host_info host;
    char gpu_name[256];       /* "none" without a GPU */
    char gpu_key[256];
    char driver_version[32];  /* "13.0"; "" without a driver */
    char driver_release[64];  /* "580.159.03" from NVML, "" when unknown */
    int sm_count;
    int64_t l2_bytes;
    double copy_bandwidth_gbps;   /* NaN when not measured (left out) */
    double sm_clock_mhz, mem_clock_mhz; /* NaN when unknown (left out) */
    char git_commit[64];
    char build_type[32];
    char timing_mode[8];      /* "cold" / "hot" */
    /* ours, beyond the schema's list */
    char cupti[256];          /* "CUPTI 13.0 (API 130001)" or "unavailable: why" */
    char clock_sampling[256]; /* "NVML" or "unavailable: why" */
    int64_t l2_flush_bytes;
    int min_samples;
    double max_spread;
    double time_limit_s;
    char nvrtc[32];           /* "13.0" */
    char arch[16];            /* "sm_90" */
} hb_context;

typedef enum hb_status {
    HB_STATUS_OK = 0,
    HB_STATUS_FAILED,   /* wrong result or a launch error: never timed as a success */
    HB_STATUS_SKIPPED   /* not timed (no GPU, --compile-only) */
} hb_status;
const char *hb_status_name(hb_status s);

typedef struct hb_kernel_record {
    char name[128];
    unsigned grid[3], block[3];
    int registers;               /* per thread */
    int static_shared, dynamic_shared;
    double us;                   /* duration */
} hb_kernel_record;

#define HB_MAX_COUNTERS 16
typedef struct hb_counter {
    char name[32];
    double value;                /* NaN: left out */
} hb_counter;

/* A name from a fusion file (its file name, fusion, parameters), as a suite, a case or an
 * axis: the fuser's limit, so that no name a file may hold is cut short and then clashes with
 * another or binds nothing. */
#define HB_NAME_MAX FU_MAX_NAME

/* One element of "benchmarks". Strings that are "" and numbers that are NaN
 * are left out. */
typedef struct hb_entry {
    char name[256];
    char run_name[256];
    bool aggregate;
    char aggregate_name[32];     /* median, mean, stddev, cv */
    char aggregate_unit[16];     /* "time" or "percentage" (aggregates only) */
    int64_t family_index, per_family_instance_index;
    int64_t repetitions, repetition_index, threads, iterations;
    double real_time, cpu_time;  /* in time_unit */
    char time_unit[8];           /* "us" */
    char suite[HB_NAME_MAX], case_name[HB_NAME_MAX], variant[32], dtype[8], size[64];
    char bytes_formula[96];
    char kernel_source_hash[17]; /* what ran, as hb_variant_info.source_hash; "" = not known (torch rows) */
    hb_status status;
    char error[512];
    int ncounters;               /* kernels, launches, segments, bytes, GB/s, peak_fraction,
                                  * kernel_time_us, max_rel_error, spread, throttled_samples */
    hb_counter counters[HB_MAX_COUNTERS];
    const double *samples_us;    /* written when nsamples > 0 */
    int nsamples;
    const hb_kernel_record *kernel_records; /* written when nkernel_records > 0 */
    int nkernel_records;
    double speedup_vs_torch_compile; /* NaN: unknown */
} hb_entry;

void hb_entry_init(hb_entry *e);
/* Sets (or adds) a counter. */
void hb_entry_counter(hb_entry *e, const char *name, double value);
/* NaN when absent. */
double hb_entry_get_counter(const hb_entry *e, const char *name);
/* Whether e is of this suite, case, dtype and size (any variant). */
bool hb_entry_same_item(const hb_entry *e, const char *suite, const char *case_name, const char *dtype,
                        const char *size);
/* The median real_time of the ok repetitions with a time (aggregates are not
 * used) among e[0..n) of this suite/case/dtype/size and variant, and in
 * *spread (when not NULL) the median of their "spread" counters. NaN when
 * there are none (or out of memory). */
double hb_entries_median_time(const hb_entry *e, int n, const char *suite, const char *case_name, const char *dtype,
                              const char *size, const char *variant, double *spread);

/* Writes the whole run file. false on an I/O error. */
bool hb_json_write_run(FILE *out, const hb_context *c, const hb_entry *entries, int n);

/* The run as the table of table.h; format "md" or "csv". false on an I/O
 * error, another format or no memory. */
bool hb_table_write_run(FILE *out, const char *format, const hb_context *c, const hb_entry *entries, int n);

/* ================================================================ CUPTI (cupti.c) */

typedef struct hb_cupti hb_cupti;

#define HB_MAX_KERNEL_RECORDS 16

/* What one call made the device do, from the Activity API. */
typedef struct hb_call_record {
    int kernels, memsets, memcpys;
    double kernel_us;            /* summed kernel durations */
    double span_us;              /* first start to last end, over every record */
    int nrecords;                /* kernel records kept (at most HB_MAX_KERNEL_RECORDS) */
    hb_kernel_record records[HB_MAX_KERNEL_RECORDS];
    uint64_t dropped;            /* records CUPTI dropped (buffers full) */
} hb_call_record;

/* Loads libcupti with dlopen ($FUSEBENCH_CUPTI, libcupti.so.13, libcupti.so,
 * then the toolkit's lib64 and extras/CUPTI/lib64) and registers the buffer
 * callbacks. Returns NULL and says why when CUPTI is unavailable, or when
 * another hb_cupti is open in this process (CUPTI is one per process). */
hb_cupti *hb_cupti_open(char *why, size_t nwhy);
void hb_cupti_close(hb_cupti *c);
const char *hb_cupti_describe(const hb_cupti *c);   /* "CUPTI 13.0 (API 130001)" */
/* Starts recording one call: discards anything pending, enables kernel,
 * memset and memcpy records. */
fu_status hb_cupti_begin(hb_cupti *c, fu_error *err);
/* Ends it: the caller has synchronized the stream. Flushes, disables the
 * records and fills out. */
fu_status hb_cupti_end(hb_cupti *c, hb_call_record *out, fu_error *err);

/* ================================================================ clocks (clocks.c) */

typedef struct hb_clocks hb_clocks;

typedef struct hb_clock_sample {
    double sm_mhz, mem_mhz;
    uint64_t reasons;            /* NVML clocks-event (throttle) reasons */
    bool throttled;              /* a thermal, power or hardware slowdown reason is set */
} hb_clock_sample;

/* NVML through dlopen("libnvidia-ml.so.1"); device_index as NVML counts
 * (the first entry of CUDA_VISIBLE_DEVICES when that is a number, else the
 * CUDA ordinal). NULL and why when NVML is unavailable. */
hb_clocks *hb_clocks_open(int cuda_ordinal, char *why, size_t nwhy);
void hb_clocks_close(hb_clocks *c);
bool hb_clocks_sample(hb_clocks *c, hb_clock_sample *out);
const char *hb_clocks_driver_release(const hb_clocks *c); /* "580.159.03" or "" */
/* Which reasons count as throttled (exposed for the tests). */
bool hb_clock_reasons_throttled(uint64_t reasons);

/* ================================================================ timing (timing.c) */

typedef enum hb_mode { HB_MODE_COLD = 0, HB_MODE_HOT } hb_mode;
const char *hb_mode_name(hb_mode m);
bool hb_mode_from_name(const char *name, hb_mode *out);

typedef struct hb_timing_options {
    hb_mode mode;          /* cold: the L2 is flushed before every sample */
    int warmup_calls;      /* 3 */
    hb_stop_rule stop;     /* 10..1000 samples, spread 2%, 2 s */
} hb_timing_options;
void hb_timing_options_default(hb_timing_options *o);

/* Enqueues one call on the runtime's stream. */
typedef fu_status (*hb_call_fn)(void *ctx, fu_error *err);

typedef struct hb_timer hb_timer;

typedef struct hb_samples {
    double *us;            /* kept samples in order (malloc'd; hb_samples_free) */
    int n;
    int throttled;         /* samples discarded because the GPU was throttled */
    bool throttle_ignored; /* too few unthrottled samples: the throttled ones were kept */
    hb_summary summary;    /* of the kept samples, in microseconds */
    hb_stop stop;
    double elapsed_s;
} hb_samples;
void hb_samples_free(hb_samples *s);

/* Events, and the L2 flush buffer (2 x the device's L2) in cold mode or the
 * spin kernel (NVRTC, 50 us, no memory traffic) in hot mode: what runs ahead
 * of every sample's start event (timing.c says why). */
fu_status hb_timer_open(fu_runtime *rt, hb_clocks *clocks, const hb_timing_options *o, hb_timer **out,
                        fu_error *err);
void hb_timer_close(hb_timer *t);
int64_t hb_timer_flush_bytes(const hb_timer *t);  /* 0 in hot mode */
const hb_timing_options *hb_timer_options(const hb_timer *t);
/* Enqueues the L2 flush (a memset of the flush buffer); nothing in hot mode. */
fu_status hb_timer_flush_l2(hb_timer *t, fu_error *err);
/* Times `call` with events: warm-up, then samples until the stop rule says so.
 * Throttled samples (clocks sampled after each) are discarded and counted. */
fu_status hb_timer_measure(hb_timer *t, hb_call_fn call, void *ctx, hb_samples *out, fu_error *err);
/* Times one event-bracketed call, after the prelude (flush or spin). */
fu_status hb_timer_time_once(hb_timer *t, hb_call_fn call, void *ctx, double *us, fu_error *err);

/* What `ncalls` calls launched, recorded by CUPTI one call at a time (L2
 * flushed first in cold mode). */
typedef struct hb_call_profile {
    bool recorded;         /* false without CUPTI */
    bool consistent;       /* every call launched the same kernels, memsets and copies */
    hb_call_record last;   /* the last call */
    double kernel_us;      /* median over the calls of the summed kernel time */
    int ncalls;
} hb_call_profile;
fu_status hb_profile_call(hb_cupti *cu, hb_timer *t, hb_call_fn call, void *ctx, int ncalls,
                          hb_call_profile *out, fu_error *err);

/* Device-to-device copy bandwidth: cuMemcpyDtoD of `bytes` (>= 1 GiB is what
 * the suites use), read + write bytes over the median of `reps` event-timed
 * copies, in GB/s (1e9 bytes per second). */
fu_status hb_copy_bandwidth(fu_runtime *rt, size_t bytes, int reps, double *gbps, fu_error *err);

/* The floor of a case that must move `bytes` (its fewest bytes, read and
 * written): a device-to-device copy (cuMemcpyDtoDAsync) of bytes / 2, so that
 * half is read and half written, timed exactly as a case is (hb_timer_measure:
 * the same prelude, cold or hot L2, warm-up and stop rule). Its median is the
 * speed of light of the case at its own size, launch latency and first wave
 * included, which a 1 GiB copy does not show. Buffers are allocated for the
 * measurement and freed after it. */
fu_status hb_floor_measure(hb_timer *t, int64_t bytes, hb_samples *out, fu_error *err);

/* ================================================================ checks and inputs (verify.c) */

/* Relative error of out against ref: ||out - ref||_2 / ||ref||_2 (||out||_2
 * when ref is all zeros), and the worst element by
 * |out - ref| / (|ref| + rms(ref)). NaN in out where ref is not NaN, or a
 * shape or dtype mismatch, makes rel_l2 infinite. */
typedef struct hb_compare {
    double rel_l2;
    double worst_elem;           /* |out - ref| / (|ref| + rms(ref)) at worst_index */
    int64_t worst_index;
    double worst_out, worst_ref;
    int64_t nan_count;           /* NaN in out where ref is not NaN */
} hb_compare;
void hb_compare_tensors(const fu_host_tensor *out, const fu_host_tensor *ref, hb_compare *c);

/* Tolerances for an output of this dtype: rel_l2 and per-element. */
void hb_tolerance(fu_dtype dt, double *rel_l2, double *elem);

/* Fast seeded random inputs for every input of f, for sizes where
 * fu_random_inputs would take long: floats approximately normal(0, 1)
 * (a sum of four uniforms, scaled), index inputs uniform in
 * [0, fu_fusion_index_bound), other ints in [0, 10), bools 0/1. An element's
 * value depends on the seed, the input's position and its own index alone
 * (filled on every core, the same however many). Same contract as
 * fu_random_inputs. */
fu_status hb_fast_random_inputs(const fu_fusion *f, uint64_t seed, fu_host_tensor *inputs, fu_error *err);

/* Downloads a device tensor in chunks and counts NaN elements (the harness
 * poisons outputs with 0xff bytes, a NaN in every float dtype, before a
 * call). first_nan is the first such element, -1 if none. */
fu_status hb_scan_device_nan(fu_runtime *rt, fu_devptr p, fu_dtype dt, int64_t numel, int64_t *nan_count,
                             int64_t *first_nan, fu_error *err);

#ifdef __cplusplus
}
#endif
#endif /* FUSEBENCH_HARNESS_H */
