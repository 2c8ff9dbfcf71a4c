/*
 * timing.c -- CUDA-event timing of a call, the L2 flush, the sampling loop,
 * CUPTI recording of single calls, the device's copy bandwidth, and the floor
 * of a case (a copy of its fewest bytes, timed as the case is).
 *
 * A sample is: a prelude, then a start event, the call, an end event; the
 * sample is the events' elapsed time. The prelude is, cold, a memset of twice
 * the L2 into a scratch buffer (the L2 then holds none of the call's data)
 * followed by the spin, and, hot, a kernel that spins for 50 us touching no
 * memory, alone. reference/torch_bench.py does the same (its spin is longer:
 * Python's dispatch), so that the start event follows the same work in both
 * and a small call starts on the same state (HB_COLD_SPIN 0: no spin after
 * the flush, as before 2026-12-02; docs/perf.md v18). Either keeps the
 * GPU busy while the host enqueues the start event and the call, so the start
 * event is not recorded on an idle GPU ahead of the first launch (which would
 * time the host's launch latency of a small call rather than the call), and
 * cold and hot differ in the state of the L2 alone. The prelude is never
 * counted; every launch of the call and the gaps between them are. After
 * each sample the SM clock and NVML's throttle reasons are read; a sample
 * taken while the GPU was throttled is discarded and counted.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"

struct hb_timer {
    fu_runtime *rt;
    hb_clocks *clocks;           /* may be NULL */
    hb_timing_options o;
    fu_event *start, *end;
    fu_devptr flush;
    size_t flush_bytes;
    uint32_t flush_value;        /* changes every flush */
    fu_module *spin_module;      /* hot mode, and cold after the flush */
    fu_kernel *spin;
};

#define SPIN_NS 50000ull
#ifndef HB_COLD_SPIN
#define HB_COLD_SPIN 1
#endif

/* One thread waits on the global timer: busy, with no memory traffic. */
static const char *SPIN_SOURCE =
    "extern \"C\" __global__ void hb_spin(unsigned long long ns)\n"
    "{\n"
    "    unsigned long long t0, t;\n"
    "    asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t0));\n"
    "    do {\n"
    "        asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n"
    "    } while (t - t0 < ns);\n"
    "}\n";

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

const char *hb_mode_name(hb_mode m) { return m == HB_MODE_HOT ? "hot" : "cold"; }

bool hb_mode_from_name(const char *name, hb_mode *out)
{
    if (strcmp(name, "cold") == 0) *out = HB_MODE_COLD;
    else if (strcmp(name, "hot") == 0) *out = HB_MODE_HOT;
    else return false;
    return true;
}

void hb_timing_options_default(hb_timing_options *o)
{
    memset(o, 0, sizeof *o);
    o->mode = HB_MODE_COLD;
    o->warmup_calls = 3;
    o->stop.min_samples = 10;
    o->stop.max_samples = 1000;
    o->stop.max_spread = 0.02;
    o->stop.time_limit_s = 2.0;
}

void hb_samples_free(hb_samples *s)
{
    if (!s) return;
    free(s->us);
    memset(s, 0, sizeof *s);
}

void hb_timer_close(hb_timer *t)
{
    if (!t) return;
    fu_event_free(t->start);
    fu_event_free(t->end);
    if (t->flush) fu_device_free(t->rt, t->flush, NULL);
    fu_module_free(t->spin_module);
    free(t);
}

fu_status hb_timer_open(fu_runtime *rt, hb_clocks *clocks, const hb_timing_options *o, hb_timer **out,
                        fu_error *err)
{
    *out = NULL;
    if (!fu_runtime_has_device(rt))
        return fu_error_set(err, FU_ERR_NO_DEVICE, "timing needs a GPU: %s", fu_runtime_describe(rt));
    if (o->stop.min_samples < 1 || o->stop.max_samples < o->stop.min_samples || !(o->stop.time_limit_s > 0) ||
        !(o->stop.max_spread >= 0) || o->warmup_calls < 0)
        return fu_error_set(err, FU_ERR_ARG,
                            "timing options: need 1 <= min_samples (%d) <= max_samples (%d), time limit > 0 "
                            "(%g s), spread >= 0 (%g), warm-up >= 0 (%d)",
                            o->stop.min_samples, o->stop.max_samples, o->stop.time_limit_s, o->stop.max_spread,
                            o->warmup_calls);
    hb_timer *t = calloc(1, sizeof *t);
    if (!t) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    t->rt = rt;
    t->clocks = clocks;
    t->o = *o;
    fu_status s = fu_event_create(rt, &t->start, err);
    if (!s) s = fu_event_create(rt, &t->end, err);
    if (!s && o->mode == HB_MODE_COLD) {
        int64_t l2 = fu_runtime_device(rt)->l2_bytes;
        if (l2 <= 0) l2 = 64ll << 20; /* the driver did not say: more than any L2 so far */
        t->flush_bytes = (size_t)(2 * l2 + 3) & ~(size_t)3;
        s = fu_device_alloc(rt, t->flush_bytes, &t->flush, err);
        if (s) {
            char why[sizeof err->message];
            snprintf(why, sizeof why, "%s", err->message);
            s = fu_error_set(err, s, "allocating the L2 flush buffer (%zu bytes, twice the L2): %s", t->flush_bytes,
                             why);
        }
    }
    if (!s && (o->mode == HB_MODE_HOT || HB_COLD_SPIN)) {
        s = fu_runtime_compile(rt, SPIN_SOURCE, "hb_spin.cu", NULL, 0, &t->spin_module, NULL, err);
        if (!s) s = fu_module_get_kernel(t->spin_module, "hb_spin", &t->spin, err);
    }
    if (s) {
        hb_timer_close(t);
        return s;
    }
    *out = t;
    return FU_OK;
}

int64_t hb_timer_flush_bytes(const hb_timer *t) { return (int64_t)t->flush_bytes; }
const hb_timing_options *hb_timer_options(const hb_timer *t) { return &t->o; }

fu_status hb_timer_flush_l2(hb_timer *t, fu_error *err)
{
    if (t->o.mode != HB_MODE_COLD || !t->flush) return FU_OK;
    t->flush_value++;
    return fu_device_memset32_async(t->rt, t->flush, t->flush_value, t->flush_bytes / 4, err);
}

/* What precedes the start event (see the header comment). */
static fu_status prelude(hb_timer *t, fu_error *err)
{
    if (t->o.mode == HB_MODE_COLD) {
        fu_status s = hb_timer_flush_l2(t, err);
        if (s || !HB_COLD_SPIN) return s;
    }
    unsigned long long ns = SPIN_NS;
    void *args[1] = {&ns};
    unsigned one[3] = {1, 1, 1};
    return fu_runtime_launch(t->rt, t->spin, one, one, 0, args, err);
}

fu_status hb_timer_time_once(hb_timer *t, hb_call_fn call, void *ctx, double *us, fu_error *err)
{
    float ms = 0;
    fu_status s = prelude(t, err);
    if (!s) s = fu_event_record(t->start, err);
    if (!s) s = call(ctx, err);
    if (!s) s = fu_event_record(t->end, err);
    if (!s) s = fu_event_elapsed_ms(t->start, t->end, &ms, err);
    *us = s ? NAN : (double)ms * 1e3;
    return s;
}

static fu_status push(double **v, int *n, int *cap, double x, fu_error *err)
{
    if (*n == *cap) {
        int nc = *cap ? 2 * *cap : 64;
        double *p = realloc(*v, (size_t)nc * sizeof *p);
        if (!p) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
        *v = p;
        *cap = nc;
    }
    (*v)[(*n)++] = x;
    return FU_OK;
}

fu_status hb_timer_measure(hb_timer *t, hb_call_fn call, void *ctx, hb_samples *out, fu_error *err)
{
    memset(out, 0, sizeof *out);
    fu_status s = FU_OK;
    for (int i = 0; !s && i < t->o.warmup_calls; i++) {
        s = hb_timer_flush_l2(t, err);
        if (!s) s = call(ctx, err);
    }
    if (!s) s = fu_runtime_synchronize(t->rt, err);
    if (s) return s;

    double *kept = NULL, *throttled = NULL;
    int nkept = 0, ckept = 0, nthr = 0, cthr = 0;
    double t0 = now_s();
    hb_stop stop = HB_CONTINUE;
    while (!s && stop == HB_CONTINUE) {
        double us;
        s = hb_timer_time_once(t, call, ctx, &us, err);
        if (s) break;
        hb_clock_sample cs;
        bool thr = t->clocks && hb_clocks_sample(t->clocks, &cs) && cs.throttled;
        s = thr ? push(&throttled, &nthr, &cthr, us, err) : push(&kept, &nkept, &ckept, us, err);
        if (s) break;
        double elapsed = now_s() - t0;
        stop = hb_should_stop(&t->o.stop, kept, nkept, elapsed);
        /* a GPU throttled throughout: stop at the sample cap or twice the limit */
        if (stop == HB_CONTINUE && (nkept + nthr >= t->o.stop.max_samples || elapsed >= 2 * t->o.stop.time_limit_s))
            stop = HB_STOP_TIME_LIMIT;
    }
    if (s) {
        free(kept);
        free(throttled);
        return s;
    }
    out->throttled = nthr;
    int few = t->o.stop.min_samples / 2 > 3 ? t->o.stop.min_samples / 2 : 3;
    if (nkept < few && nthr > 0) { /* too few clean samples to report: keep them all, and say so */
        for (int i = 0; !s && i < nthr; i++) s = push(&kept, &nkept, &ckept, throttled[i], err);
        out->throttle_ignored = true;
    }
    free(throttled);
    if (s) {
        free(kept);
        return s;
    }
    out->us = kept;
    out->n = nkept;
    out->stop = stop;
    out->elapsed_s = now_s() - t0;
    hb_summarize(kept, nkept, &out->summary);
    return FU_OK;
}

fu_status hb_profile_call(hb_cupti *cu, hb_timer *t, hb_call_fn call, void *ctx, int ncalls, hb_call_profile *out,
                          fu_error *err)
{
    memset(out, 0, sizeof *out);
    out->kernel_us = NAN;
    if (!cu) return FU_OK;
    if (ncalls < 1) ncalls = 1;
    double *times = calloc((size_t)ncalls, sizeof *times);
    if (!times) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    fu_status s = FU_OK;
    out->consistent = true;
    for (int i = 0; !s && i < ncalls; i++) {
        hb_call_record rec;
        s = hb_timer_flush_l2(t, err);
        if (!s) s = fu_runtime_synchronize(t->rt, err);
        if (!s) s = hb_cupti_begin(cu, err);
        if (s) break;
        s = call(ctx, err);
        fu_status s2 = fu_runtime_synchronize(t->rt, s ? NULL : err);
        if (!s) s = s2;
        fu_status s3 = hb_cupti_end(cu, &rec, s ? NULL : err);
        if (!s) s = s3;
        if (s) break;
        if (i > 0 && (rec.kernels != out->last.kernels || rec.memsets != out->last.memsets ||
                      rec.memcpys != out->last.memcpys))
            out->consistent = false;
        out->last = rec;
        times[i] = rec.kernel_us;
        out->ncalls = i + 1;
    }
    if (!s) {
        out->recorded = true;
        out->kernel_us = hb_median(times, out->ncalls);
    }
    free(times);
    return s;
}

fu_status hb_copy_bandwidth(fu_runtime *rt, size_t bytes, int reps, double *gbps, fu_error *err)
{
    *gbps = NAN;
    if (!fu_runtime_has_device(rt))
        return fu_error_set(err, FU_ERR_NO_DEVICE, "copy bandwidth needs a GPU: %s", fu_runtime_describe(rt));
    if (reps < 1) reps = 1;
    fu_devptr src = 0, dst = 0;
    fu_event *a = NULL, *b = NULL;
    double *ms = calloc((size_t)reps, sizeof *ms);
    fu_status s = ms ? FU_OK : fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    if (!s) s = fu_device_alloc(rt, bytes, &src, err);
    if (!s) s = fu_device_alloc(rt, bytes, &dst, err);
    if (!s) s = fu_device_memset32(rt, src, 0x3f800000u, bytes / 4, err); /* not zeros: 1.0f */
    if (!s) s = fu_event_create(rt, &a, err);
    if (!s) s = fu_event_create(rt, &b, err);
    for (int i = 0; !s && i < 2; i++) s = fu_device_copy_async(rt, dst, src, bytes, err); /* warm-up */
    for (int i = 0; !s && i < reps; i++) {
        float m = 0;
        s = fu_event_record(a, err);
        if (!s) s = fu_device_copy_async(rt, dst, src, bytes, err);
        if (!s) s = fu_event_record(b, err);
        if (!s) s = fu_event_elapsed_ms(a, b, &m, err);
        ms[i] = m;
    }
    if (!s) {
        double med = hb_median(ms, reps);
        if (!(med > 0)) s = fu_error_set(err, FU_ERR_RUNTIME, "copy bandwidth: the copies took no measurable time");
        else *gbps = 2.0 * (double)bytes / (med * 1e-3) / 1e9; /* read + write */
    }
    fu_event_free(a);
    fu_event_free(b);
    fu_device_free(rt, src, NULL);
    fu_device_free(rt, dst, NULL);
    free(ms);
    return s;
}

/* The copy that stands for a case's floor: half the bytes read, half written. */
typedef struct floor_copy {
    fu_runtime *rt;
    fu_devptr src, dst;
    size_t half;
} floor_copy;

static fu_status floor_copy_call(void *p, fu_error *err)
{
    floor_copy *c = p;
    return fu_device_copy_async(c->rt, c->dst, c->src, c->half, err);
}

fu_status hb_floor_measure(hb_timer *t, int64_t bytes, hb_samples *out, fu_error *err)
{
    memset(out, 0, sizeof *out);
    if (bytes < 2) return fu_error_set(err, FU_ERR_ARG, "floor: a case of %lld bytes has nothing to copy", (long long)bytes);
    floor_copy c = {t->rt, 0, 0, (size_t)(bytes / 2)};
    fu_status s = fu_device_alloc(t->rt, c.half, &c.src, err);
    if (!s) s = fu_device_alloc(t->rt, c.half, &c.dst, err);
    if (!s) s = fu_device_memset8(t->rt, c.src, 0x3f, c.half, err); /* not zeros */
    if (!s) s = hb_timer_measure(t, floor_copy_call, &c, out, err);
    if (c.src) fu_device_free(t->rt, c.src, NULL);
    if (c.dst) fu_device_free(t->rt, c.dst, NULL);
    return s;
}
