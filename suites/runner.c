/*
 * runner.c -- builds, checks and times items (suite/case/variant/dtype/size).
 *
 * prepare (no device needed): parse the case's fusion file, bind the size and
 *   dtype, plan and compile through the variant. Without a GPU this is all.
 * measure (Google Benchmark drives; each repetition calls `body`):
 *   first repetition of an item, `setup`:
 *     1. check: the variant runs the fusion, at full size when it is small
 *        enough, else at the suite's check size (same file, fewer rows), on
 *        fu_random_inputs, outputs poisoned first; every output is compared
 *        with fu_interp_run. A wrong result fails the item: it is never timed.
 *     2. full size: random inputs, outputs poisoned, one call; an index out of
 *        range or an output element left unwritten (or NaN) fails the item.
 *     3. CUPTI records a few calls, one at a time: kernels, memsets, copies,
 *        summed kernel time.
 *   before that, the item's floor: a copy of its fewest bytes timed as the
 *     item is (hb_floor_measure), once per distinct byte count in the run, so
 *     that every variant of a case is held to the same floor.
 *   every repetition: hb_timer_measure (event time, cold or hot L2).
 *   last repetition: the device buffers are freed.
 * Google Benchmark reports each repetition and its aggregates; `on_run` turns
 * them into run-file entries.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_shim.h"
#include "suite.h"
#include "torch_merge.h"

#ifdef HB_HAVE_GIT_COMMIT_H
#include "git_commit.h" /* generated: HB_GIT_COMMIT */
#endif
#ifndef HB_GIT_COMMIT
#define HB_GIT_COMMIT "unknown"
#endif
#ifndef HB_BUILD_TYPE
#define HB_BUILD_TYPE "unknown"
#endif

typedef struct hb_rep {
    bool done;
    hb_status status;
    char error[512];
    hb_samples samples;
} hb_rep;

typedef struct hb_item {
    struct hb_runner *runner;
    int index;
    const hb_suite *suite;
    const hb_case *cs;
    const hb_variant *variant;
    fu_dtype dtype;
    hb_size size;
    char name[256];
    char size_str[64];
    int64_t bytes;                /* fu_fusion_min_bytes at full size (after prepare) */
    char bytes_formula[96];       /* fu_program_bytes_formula */
    /* prepare */
    bool prepared;
    hb_status status;
    char error[512];
    fu_fusion *fusion;            /* full size */
    void *vstate;
    hb_variant_info info;
    double prepare_ms;
    /* setup */
    bool set_up, released;
    bool failure_reported;        /* the progress line said FAILED */
    fu_devptr *din, *dout;
    double max_rel_error;
    char checked_at[96];          /* the size the interpreter checked */
    hb_call_profile profile;
    int kernels, launches;        /* CUPTI's count, or the variant's without CUPTI; -1 unknown */
    double floor_us;              /* median time of a copy of the fewest bytes; NaN unknown */
    /* repetitions */
    int nreps;
    hb_rep *reps;
} hb_item;

struct hb_runner {
    fu_runtime *rt;
    hb_runner_options o;
    hb_item *items;
    int nitems, citems;
    /* measure */
    bool measured;
    hb_timer *timer;
    hb_cupti *cupti;
    hb_clocks *clocks;
    char cupti_note[224], clocks_note[224];
    char argv0[1024];             /* for the context's "executable" */
    double copy_gbps;
    bool have_clock0;
    hb_clock_sample clock0;
    /* floors already measured, by byte count */
    struct hb_floor { int64_t bytes; double us; } *floors;
    int nfloors, cfloors;
    /* entries */
    hb_entry *entries;
    int nentries, centries;
};

void hb_runner_options_default(hb_runner_options *o)
{
    memset(o, 0, sizeof *o);
    hb_timing_options_default(&o->timing);
    o->repetitions = 3;
    o->seed = 20261130;
    o->check_elements = (int64_t)32 << 20;
    o->exact_random_elements = (int64_t)32 << 20;
    o->profile_calls = 5;
    o->copy_bytes = (size_t)1 << 30;
    o->progress = stderr;
}

/* ------------------------------------------------------------ helpers */

static void progress(const hb_runner *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void progress(const hb_runner *r, const char *fmt, ...)
{
    if (!r->o.progress) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(r->o.progress, fmt, ap);
    va_end(ap);
    fputc('\n', r->o.progress);
    fflush(r->o.progress);
}

static size_t tensor_bytes(const fu_fusion *f, fu_tensor t)
{
    size_t n = (size_t)fu_tensor_numel(f, t) * fu_dtype_size(fu_tensor_dtype(f, t));
    return n ? n : 1;
}

static int64_t io_elements(const fu_fusion *f)
{
    int64_t n = 0;
    for (int i = 0; i < fu_fusion_num_inputs(f); i++) n += fu_tensor_numel(f, fu_fusion_input(f, i));
    for (int i = 0; i < fu_fusion_num_outputs(f); i++) n += fu_tensor_numel(f, fu_fusion_output(f, i));
    return n;
}

static int64_t input_elements(const fu_fusion *f)
{
    int64_t n = 0;
    for (int i = 0; i < fu_fusion_num_inputs(f); i++) n += fu_tensor_numel(f, fu_fusion_input(f, i));
    return n;
}

static void free_host(fu_host_tensor *t, int n)
{
    if (!t) return;
    for (int i = 0; i < n; i++) fu_host_tensor_free(&t[i]);
    free(t);
}

/* Whether output buffer out is one of the inputs' (a view, bind_views). */
static bool is_view(const fu_fusion *f, const fu_devptr *din, fu_devptr out)
{
    for (int j = 0; din && j < fu_fusion_num_inputs(f); j++)
        if (din[j] == out) return true;
    return false;
}

static void free_io(fu_runtime *rt, const fu_fusion *f, fu_devptr **din, fu_devptr **dout)
{
    if (*dout)
        for (int i = 0; i < fu_fusion_num_outputs(f); i++)
            if (!is_view(f, *din, (*dout)[i])) fu_device_free(rt, (*dout)[i], NULL);
    if (*din)
        for (int i = 0; i < fu_fusion_num_inputs(f); i++) fu_device_free(rt, (*din)[i], NULL);
    free(*din);
    free(*dout);
    *din = *dout = NULL;
}

/* Device buffers for f's inputs (uploaded from host) and outputs (poisoned
 * with 0xff bytes: NaN in every float dtype). */
static fu_status alloc_io(fu_runtime *rt, const fu_fusion *f, const fu_host_tensor *host, fu_devptr **din,
                          fu_devptr **dout, fu_error *err)
{
    int nin = fu_fusion_num_inputs(f), nout = fu_fusion_num_outputs(f);
    *din = calloc((size_t)nin + 1, sizeof **din);
    *dout = calloc((size_t)nout + 1, sizeof **dout);
    fu_status s = *din && *dout ? FU_OK : fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    for (int i = 0; !s && i < nin; i++) {
        fu_tensor t = fu_fusion_input(f, i);
        s = fu_device_alloc(rt, tensor_bytes(f, t), &(*din)[i], err);
        if (!s && fu_host_tensor_bytes(&host[i]))
            s = fu_device_upload(rt, (*din)[i], host[i].data, fu_host_tensor_bytes(&host[i]), err);
    }
    for (int i = 0; !s && i < nout; i++) {
        fu_tensor t = fu_fusion_output(f, i);
        s = fu_device_alloc(rt, tensor_bytes(f, t), &(*dout)[i], err);
    }
    if (s) free_io(rt, f, din, dout);
    return s;
}

/* The outputs the variant (state st) returns as views of an input get that
 * input's buffer instead of their own. */
static void bind_views(fu_runtime *rt, const hb_variant *v, void *st, const fu_fusion *f, const fu_devptr *din,
                       fu_devptr *dout)
{
    for (int i = 0; v->output_view && i < fu_fusion_num_outputs(f); i++) {
        int j = v->output_view(st, i);
        if (j < 0 || j >= fu_fusion_num_inputs(f) || dout[i] == din[j]) continue;
        fu_device_free(rt, dout[i], NULL);
        dout[i] = din[j];
    }
}

/* (not the views: they are the inputs) */
static fu_status poison_outputs(fu_runtime *rt, const fu_fusion *f, const fu_devptr *din, const fu_devptr *dout,
                                fu_error *err)
{
    fu_status s = FU_OK;
    for (int i = 0; !s && i < fu_fusion_num_outputs(f); i++)
        if (!is_view(f, din, dout[i])) s = fu_device_memset8(rt, dout[i], 0xff, tensor_bytes(f, fu_fusion_output(f, i)), err);
    return s;
}

static void set_failed(hb_item *it, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void set_failed(hb_item *it, const char *fmt, ...)
{
    it->status = HB_STATUS_FAILED;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(it->error, sizeof it->error, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------ runner */

fu_status hb_runner_new(const hb_runner_options *o, hb_runner **out, fu_error *err)
{
    *out = NULL;
    if (o->repetitions < 1) return fu_error_set(err, FU_ERR_ARG, "repetitions must be at least 1 (got %d)", o->repetitions);
    hb_runner *r = calloc(1, sizeof *r);
    if (!r) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    r->o = *o;
    r->copy_gbps = NAN;
    *out = r;
    return FU_OK;
}

static void item_release_device(hb_runner *r, hb_item *it)
{
    if (it->fusion) free_io(r->rt, it->fusion, &it->din, &it->dout);
    it->released = true;
}

void hb_runner_free(hb_runner *r)
{
    if (!r) return;
    for (int i = 0; i < r->nitems; i++) {
        hb_item *it = &r->items[i];
        item_release_device(r, it);
        if (it->vstate) it->variant->free(it->vstate);
        if (it->fusion) fu_fusion_free(it->fusion);
        for (int k = 0; k < it->nreps; k++) hb_samples_free(&it->reps[k].samples);
        free(it->reps);
    }
    free(r->items);
    free(r->floors);
    free(r->entries);
    hb_timer_close(r->timer);
    hb_cupti_close(r->cupti);
    hb_clocks_close(r->clocks);
    free(r);
}

fu_status hb_runner_add(hb_runner *r, const hb_suite *s, const hb_case *c, const hb_variant *v, fu_dtype dt,
                        const hb_size *size, fu_error *err)
{
    if (size->n != s->ndims)
        return fu_error_set(err, FU_ERR_ARG, "suite %s takes sizes of %d numbers", s->name, s->ndims);
    if (r->nitems == r->citems) {
        int nc = r->citems ? 2 * r->citems : 16;
        hb_item *p = realloc(r->items, (size_t)nc * sizeof *p);
        if (!p) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
        r->items = p;
        r->citems = nc;
    }
    hb_item *it = &r->items[r->nitems];
    memset(it, 0, sizeof *it);
    it->index = r->nitems;
    it->suite = s;
    it->cs = c;
    it->variant = v;
    it->dtype = dt;
    it->size = *size;
    it->kernels = it->launches = -1;
    it->max_rel_error = NAN;
    it->floor_us = NAN;
    hb_size_str(size, it->size_str, sizeof it->size_str);
    snprintf(it->name, sizeof it->name, "%s/%s/%s/%s/%s", s->name, c->name, v->name, fu_dtype_name(dt), it->size_str);
    it->nreps = r->o.repetitions;
    it->reps = calloc((size_t)it->nreps, sizeof *it->reps);
    if (!it->reps) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    r->nitems++;
    return FU_OK;
}

int hb_runner_count(const hb_runner *r) { return r->nitems; }
const char *hb_runner_item_name(const hb_runner *r, int i) { return r->items[i].name; }
const hb_variant_info *hb_runner_item_info(const hb_runner *r, int i) { return &r->items[i].info; }


static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void prepare_item(hb_runner *r, hb_item *it)
{
    fu_error err;
    memset(&err, 0, sizeof err);
    double t0 = now_ms();
    fu_status s = hb_build_case(it->suite, it->cs, &it->size, it->dtype, &it->fusion, &err);
    if (!s) {
        it->bytes = fu_fusion_min_bytes(it->fusion);
        hb_params p;
        char why[256];
        if (hb_suite_bind(it->suite, it->cs, &it->size, it->dtype, &p, why, sizeof why))
            s = fu_program_bytes_formula(it->cs->prog, p.v, p.n, it->bytes_formula, sizeof it->bytes_formula, &err);
    }
    if (!s) s = it->variant->prepare(r->rt, it->fusion, it->cs, &it->vstate, &it->info, &err);
    it->prepare_ms = now_ms() - t0;
    it->prepared = true;
    if (s) {
        set_failed(it, "%s", err.message[0] ? err.message : fu_status_name(s));
        progress(r, "[%d/%d] %s: FAILED to plan or compile: %s", it->index + 1, r->nitems, it->name, it->error);
        return;
    }
    /* the outputs the runner binds as views (bind_views) are not copied */
    for (int i = 0; it->variant->output_view && i < fu_fusion_num_outputs(it->fusion); i++)
        it->info.copies -= it->variant->output_view(it->vstate, i) >= 0;
    const hb_variant_info *in = &it->info;
    progress(r, "[%d/%d] %s: %d kernel%s (%s), %d memset%s, %d cop%s; %s", it->index + 1, r->nitems, it->name,
             in->kernels, in->kernels == 1 ? "" : "s", in->detail[0] ? in->detail : "-", in->memsets,
             in->memsets == 1 ? "" : "s", in->copies, in->copies == 1 ? "y" : "ies",
             in->cache_hits == in->compiled ? "compiled (cached)" : "compiled");
}

int hb_runner_prepare(hb_runner *r, fu_runtime *rt)
{
    r->rt = rt;
    int failed = 0;
    for (int i = 0; i < r->nitems; i++) {
        if (!r->items[i].prepared) prepare_item(r, &r->items[i]);
        failed += r->items[i].status == HB_STATUS_FAILED;
    }
    return failed;
}

/* ------------------------------------------------------------ setup: check, full size, CUPTI */

static fu_status call_item(void *p, fu_error *err)
{
    hb_item *it = p;
    return it->variant->run(it->vstate, it->din, it->dout, err);
}

/* Runs the variant on fusion f (state st) with fu_random_inputs, compares
 * with the interpreter. Returns FU_OK when the comparison ran; *ok says
 * whether it passed (the reason in it->error). On success with keep, the
 * device buffers are handed over in *din / *dout. */
static fu_status check_against_interpreter(hb_runner *r, hb_item *it, const fu_fusion *f, void *st, bool keep,
                                           bool *ok, fu_devptr **din_out, fu_devptr **dout_out, fu_error *err)
{
    *ok = false;
    int nin = fu_fusion_num_inputs(f), nout = fu_fusion_num_outputs(f);
    fu_host_tensor *hin = calloc((size_t)nin + 1, sizeof *hin);
    fu_host_tensor *got = calloc((size_t)nout + 1, sizeof *got);
    fu_host_tensor *ref = calloc((size_t)nout + 1, sizeof *ref);
    fu_devptr *din = NULL, *dout = NULL;
    int ngot = 0;
    bool have_ref = false;
    fu_status s = hin && got && ref ? FU_OK : fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    bool have_in = false;
    if (!s) s = fu_random_inputs(f, r->o.seed, hin, err);
    if (!s) have_in = true;
    if (!s) s = alloc_io(r->rt, f, hin, &din, &dout, err);
    if (!s) bind_views(r->rt, it->variant, st, f, din, dout);
    if (!s) s = poison_outputs(r->rt, f, din, dout, err);
    if (!s) s = it->variant->run(st, din, dout, err);
    if (!s && it->variant->check) s = it->variant->check(st, err);
    if (!s) s = fu_runtime_synchronize(r->rt, err);
    for (; !s && ngot < nout; ngot++) {
        fu_tensor t = fu_fusion_output(f, ngot);
        s = fu_host_tensor_alloc(&got[ngot], fu_tensor_dtype(f, t), fu_tensor_rank(f, t), fu_tensor_shape(f, t), err);
        if (!s && fu_host_tensor_bytes(&got[ngot]))
            s = fu_device_download(r->rt, got[ngot].data, dout[ngot], fu_host_tensor_bytes(&got[ngot]), err);
        if (s) fu_host_tensor_free(&got[ngot]);
    }
    if (!s) {
        s = fu_interp_run(f, hin, ref, err);
        have_ref = !s;
    }
    if (!s) {
        *ok = true;
        it->max_rel_error = 0;
        for (int i = 0; i < nout; i++) {
            hb_compare c;
            hb_compare_tensors(&got[i], &ref[i], &c);
            double tol_l2, tol_elem;
            hb_tolerance(got[i].dtype, &tol_l2, &tol_elem);
            if (!(c.rel_l2 <= it->max_rel_error)) it->max_rel_error = c.rel_l2;
            const char *oname = fu_tensor_name(f, fu_fusion_output(f, i));
            if (c.nan_count) {
                set_failed(it, "output '%s' at %s: %" PRId64 " element%s NaN or not written where the CPU "
                               "interpreter has a number (first at flat index %" PRId64 ": %.9g vs %.9g)",
                           oname, it->checked_at, c.nan_count, c.nan_count == 1 ? " is" : "s are", c.worst_index,
                           c.worst_out, c.worst_ref);
                *ok = false;
                break;
            }
            if (!(c.rel_l2 <= tol_l2) || !(c.worst_elem <= tol_elem)) {
                set_failed(it, "output '%s' at %s differs from the CPU interpreter: relative L2 error %.3g (tolerance "
                               "%.0e), worst element at flat index %" PRId64 ": %.9g vs %.9g (%.3g, tolerance %.0e)",
                           oname, it->checked_at, c.rel_l2, tol_l2, c.worst_index, c.worst_out, c.worst_ref,
                           c.worst_elem, tol_elem);
                *ok = false;
                break;
            }
        }
    }
    for (int i = 0; i < ngot; i++) fu_host_tensor_free(&got[i]);
    if (have_ref)
        for (int i = 0; i < nout; i++) fu_host_tensor_free(&ref[i]);
    free(got);
    free(ref);
    if (have_in) free_host(hin, nin);
    else free(hin);
    if (!s && *ok && keep) {
        *din_out = din;
        *dout_out = dout;
    } else {
        free_io(r->rt, f, &din, &dout);
    }
    return s;
}

/* Reads pieces of the full-size outputs for the spot checks. */
typedef struct fetch_ctx {
    fu_runtime *rt;
    const fu_fusion *f;
    const fu_devptr *dout;
    void *buf;
    size_t cap;
} fetch_ctx;

static bool fetch_device(void *p, int output, int64_t offset, int64_t count, double *dst)
{
    fetch_ctx *c = p;
    if (output < 0 || output >= fu_fusion_num_outputs(c->f) || offset < 0 || count < 0) return false;
    fu_tensor t = fu_fusion_output(c->f, output);
    if (offset + count > fu_tensor_numel(c->f, t)) return false;
    fu_dtype dt = fu_tensor_dtype(c->f, t);
    size_t es = fu_dtype_size(dt), bytes = (size_t)count * es;
    if (bytes > c->cap) {
        void *nb = realloc(c->buf, bytes);
        if (!nb) return false;
        c->buf = nb;
        c->cap = bytes;
    }
    if (bytes && fu_device_download(c->rt, c->buf, c->dout[output] + (fu_devptr)offset * es, bytes, NULL)) return false;
    fu_host_tensor h = {.dtype = dt, .rank = 1, .shape = {count}, .data = c->buf};
    for (int64_t i = 0; i < count; i++) dst[i] = fu_host_tensor_get(&h, i);
    return true;
}

/* The spot check of a full-size result (the manifest's `spot AXIS`): the
 * fusion built with AXIS = a few rows (the first, the last, random ones) runs
 * on the interpreter with those rows of the full-size inputs, and its outputs
 * are compared with the same rows of the full-size outputs. It catches what
 * only the full size shows (an index that overflows, say). The axis must be
 * the first dimension of every input and output that has it; the others
 * (a table) are passed whole. */
static fu_status spot_check(hb_runner *r, hb_item *it, const fu_host_tensor *full_in, bool *ok, fu_error *err)
{
    const fu_fusion *f = it->fusion;
    int axis = it->suite->spot_axis;
    int64_t rows[HB_SPOT_ROWS];
    int k = hb_spot_rows(it->size.d[axis], r->o.seed, rows);
    if (k < 1 || it->size.d[axis] <= k) return FU_OK; /* the interpreter has checked every row */
    hb_size small = it->size;
    small.d[axis] = k;
    fu_fusion *sf = NULL;
    fu_status s = hb_build_case(it->suite, it->cs, &small, it->dtype, &sf, err);
    if (s) return s;
    int nin = fu_fusion_num_inputs(sf), nout = fu_fusion_num_outputs(sf);
    bool any_rows = false; /* an output along the axis: else there is nothing to compare */
    for (int o = 0; o < nout; o++) {
        fu_tensor ts = fu_fusion_output(sf, o), tf = fu_fusion_output(f, o);
        any_rows |= fu_tensor_rank(sf, ts) > 0 && fu_tensor_shape(sf, ts)[0] == k &&
                    fu_tensor_shape(f, tf)[0] == it->size.d[axis];
    }
    if (!any_rows) {
        fu_fusion_free(sf);
        return FU_OK;
    }
    fu_host_tensor *in = calloc((size_t)nin + 1, sizeof *in), *ref = calloc((size_t)nout + 1, sizeof *ref);
    double *got = NULL, *want = NULL;
    int nalloc = 0;
    if (!in || !ref) s = fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    for (; !s && nalloc < nin; nalloc++) { /* the rows of each input, or the whole input */
        fu_tensor t = fu_fusion_input(sf, nalloc);
        int rank = fu_tensor_rank(sf, t);
        const int64_t *ss = fu_tensor_shape(sf, t), *fs = full_in[nalloc].shape;
        bool same = true, by_rows = rank > 0 && ss[0] == k && fs[0] == it->size.d[axis];
        for (int d = 0; d < rank; d++) same &= ss[d] == fs[d], by_rows &= d == 0 || ss[d] == fs[d];
        if (same) {
            in[nalloc] = full_in[nalloc];
            in[nalloc].data = NULL; /* borrowed: set below */
            continue;
        }
        if (!by_rows) {
            s = fu_error_set(err, FU_ERR_ARG, "spot %s: input '%s' does not have the axis as its first dimension",
                             it->suite->axes[axis], fu_tensor_name(sf, t));
            break;
        }
        s = fu_host_tensor_alloc(&in[nalloc], fu_tensor_dtype(sf, t), rank, ss, err);
        size_t row = fu_host_tensor_bytes(&in[nalloc]) / (size_t)k;
        for (int i = 0; !s && i < k; i++)
            memcpy((char *)in[nalloc].data + (size_t)i * row, (const char *)full_in[nalloc].data + (size_t)rows[i] * row, row);
        if (s) break;
    }
    fu_host_tensor *use = s ? NULL : calloc((size_t)nin + 1, sizeof *use);
    if (!s && !use) s = fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    for (int i = 0; !s && i < nin; i++) use[i] = in[i].data ? in[i] : full_in[i];
    bool have_ref = false;
    if (!s) {
        s = fu_interp_run(sf, use, ref, err);
        have_ref = !s;
    }
    fetch_ctx fc = {r->rt, f, it->dout, NULL, 0};
    for (int o = 0; !s && *ok && o < nout; o++) {
        fu_tensor ts = fu_fusion_output(sf, o), tf = fu_fusion_output(f, o);
        int rank = fu_tensor_rank(sf, ts);
        if (rank == 0 || fu_tensor_shape(sf, ts)[0] != k || fu_tensor_shape(f, tf)[0] != it->size.d[axis]) continue;
        int64_t row = fu_tensor_numel(sf, ts) / k;
        free(got);
        free(want);
        got = malloc((size_t)(row + 1) * sizeof *got);
        want = malloc((size_t)(row + 1) * sizeof *want);
        if (!got || !want) {
            s = fu_error_set(err, FU_ERR_NOMEM, "out of memory");
            break;
        }
        for (int i = 0; *ok && i < k; i++) {
            for (int64_t j = 0; j < row; j++) want[j] = fu_host_tensor_get(&ref[o], i * row + j);
            if (!fetch_device(&fc, o, rows[i] * row, row, got)) {
                s = fu_error_set(err, FU_ERR_RUNTIME, "could not read row %lld of '%s'", (long long)rows[i],
                                 fu_tensor_name(f, tf));
                break;
            }
            char what[128], why[400];
            snprintf(what, sizeof what, "%s[%lld, ...]", fu_tensor_name(f, tf), (long long)rows[i]);
            if (!hb_spot_compare(got, want, row, fu_tensor_dtype(f, tf), what, why, sizeof why)) {
                set_failed(it, "at full size %s, rows checked on the interpreter: %s", it->size_str, why);
                *ok = false;
            }
        }
    }
    free(fc.buf);
    free(got);
    free(want);
    if (have_ref)
        for (int o = 0; o < nout; o++) fu_host_tensor_free(&ref[o]);
    for (int i = 0; in && i < nalloc; i++)
        if (in[i].data) fu_host_tensor_free(&in[i]);
    free(in);
    free(use);
    free(ref);
    fu_fusion_free(sf);
    return s;
}

/* The item's full-size buffers: random inputs, one call, every output element
 * written, and rows checked on the interpreter (spot_check). */
static fu_status full_size_run(hb_runner *r, hb_item *it, bool *ok, fu_error *err)
{
    *ok = false;
    const fu_fusion *f = it->fusion;
    int nin = fu_fusion_num_inputs(f);
    fu_host_tensor *hin = calloc((size_t)nin + 1, sizeof *hin);
    if (!hin) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    fu_status s = input_elements(f) <= r->o.exact_random_elements ? fu_random_inputs(f, r->o.seed + 1, hin, err)
                                                                     : hb_fast_random_inputs(f, r->o.seed + 1, hin, err);
    if (s) {
        free(hin);
        return s;
    }
    s = alloc_io(r->rt, f, hin, &it->din, &it->dout, err);
    if (!s) bind_views(r->rt, it->variant, it->vstate, f, it->din, it->dout);
    if (!s) s = poison_outputs(r->rt, f, it->din, it->dout, err);
    if (!s) s = call_item(it, err);
    if (!s && it->variant->check) s = it->variant->check(it->vstate, err);
    if (!s) s = fu_runtime_synchronize(r->rt, err);
    *ok = !s;
    for (int i = 0; !s && i < fu_fusion_num_outputs(f); i++) {
        fu_tensor t = fu_fusion_output(f, i);
        int64_t nan_count, first;
        s = hb_scan_device_nan(r->rt, it->dout[i], fu_tensor_dtype(f, t), fu_tensor_numel(f, t), &nan_count, &first,
                               err);
        if (!s && nan_count) {
            set_failed(it, "output '%s' at full size %s: %" PRId64 " of %" PRId64 " elements not written or NaN "
                           "(first at flat index %" PRId64 ")",
                       fu_tensor_name(f, t), it->size_str, nan_count, fu_tensor_numel(f, t), first);
            *ok = false;
            break;
        }
    }
    if (!s && *ok && it->suite->spot_axis >= 0) s = spot_check(r, it, hin, ok, err);
    free_host(hin, nin);
    return s;
}

/* The floor's median time for this many bytes, NaN when not measured. */
static double floor_of(const hb_runner *r, int64_t bytes)
{
    for (int i = 0; i < r->nfloors; i++)
        if (r->floors[i].bytes == bytes) return r->floors[i].us;
    return NAN;
}

/* The item's floor, measured when its byte count has none yet; a floor that
 * cannot be measured (no memory for the copy) is left unknown and said. */
static void measure_floor(hb_runner *r, hb_item *it)
{
    it->floor_us = floor_of(r, it->bytes);
    if (isfinite(it->floor_us)) return;
    if (r->nfloors == r->cfloors) {
        int nc = r->cfloors ? 2 * r->cfloors : 16;
        struct hb_floor *p = realloc(r->floors, (size_t)nc * sizeof *p);
        if (!p) return;
        r->floors = p;
        r->cfloors = nc;
    }
    fu_error err;
    memset(&err, 0, sizeof err);
    hb_samples smp;
    if (hb_floor_measure(r->timer, it->bytes, &smp, &err)) {
        progress(r, "[%d/%d] %s: note: no floor (%s)", it->index + 1, r->nitems, it->name, err.message);
        return;
    }
    it->floor_us = smp.summary.median;
    hb_samples_free(&smp);
    r->floors[r->nfloors++] = (struct hb_floor){it->bytes, it->floor_us};
}

static void setup_item(hb_runner *r, hb_item *it)
{
    it->set_up = true;
    measure_floor(r, it);
    fu_error err;
    memset(&err, 0, sizeof err);
    fu_status s = FU_OK;
    bool ok = false;
    bool full = io_elements(it->fusion) <= r->o.check_elements;
    if (full) {
        snprintf(it->checked_at, sizeof it->checked_at, "%s (full size)", it->size_str);
        s = check_against_interpreter(r, it, it->fusion, it->vstate, true, &ok, &it->din, &it->dout, &err);
    } else {
        hb_size cs;
        char cwhy[256];
        if (!hb_suite_check_size(it->suite, &it->size, &cs, cwhy, sizeof cwhy)) {
            set_failed(it, "%s", cwhy);
            return;
        }
        char cstr[64];
        hb_size_str(&cs, cstr, sizeof cstr);
        snprintf(it->checked_at, sizeof it->checked_at, "%s", cstr);
        fu_fusion *cf = NULL;
        void *cstate = NULL;
        hb_variant_info cinfo;
        s = hb_build_case(it->suite, it->cs, &cs, it->dtype, &cf, &err);
        if (!s) s = it->variant->prepare(r->rt, cf, it->cs, &cstate, &cinfo, &err);
        if (!s) s = check_against_interpreter(r, it, cf, cstate, false, &ok, NULL, NULL, &err);
        if (cstate) it->variant->free(cstate);
        if (cf) fu_fusion_free(cf);
        if (!s && ok) s = full_size_run(r, it, &ok, &err);
    }
    if (s) {
        set_failed(it, "%s", err.message[0] ? err.message : fu_status_name(s));
        return;
    }
    if (!ok) return; /* the reason is in it->error */
    s = hb_profile_call(r->cupti, r->timer, call_item, it, r->o.profile_calls, &it->profile, &err);
    if (s) {
        set_failed(it, "recording the call with CUPTI: %s", err.message);
        return;
    }
    if (it->profile.recorded) {
        it->kernels = it->profile.last.kernels;
        it->launches = it->profile.last.kernels + it->profile.last.memsets + it->profile.last.memcpys;
    } else if (it->variant->launch_counts) {
        int k, m, c;
        it->variant->launch_counts(it->vstate, &k, &m, &c);
        it->kernels = k;
        it->launches = k + m + c;
    }
}

/* ------------------------------------------------------------ Google Benchmark body and reports */

static void put_counters(const hb_item *it, const hb_samples *smp, hb_counter *out, int *n)
{
    double median_us = smp->summary.median;
    double copy = it->runner->copy_gbps;
    double gbps = median_us > 0 ? (double)it->bytes / (median_us * 1e-6) / 1e9 : NAN;
    struct {
        const char *name;
        double v;
    } c[] = {
        {"kernels", it->kernels >= 0 ? it->kernels : NAN},
        {"launches", it->launches >= 0 ? it->launches : NAN},
        {"segments", it->info.segments},
        {"bytes", (double)it->bytes},
        {"GB/s", gbps},
        {"peak_fraction", isfinite(copy) && copy > 0 ? gbps / copy : NAN},
        {"floor_us", it->floor_us},
        {"floor_fraction", median_us > 0 ? it->floor_us / median_us : NAN},
        {"kernel_time_us", it->profile.recorded ? it->profile.kernel_us : NAN},
        {"max_rel_error", it->max_rel_error},
        {"spread", smp->summary.spread},
        {"throttled_samples", smp->throttled},
    };
    *n = 0;
    for (size_t i = 0; i < sizeof c / sizeof c[0] && *n < HB_MAX_COUNTERS; i++) {
        snprintf(out[*n].name, sizeof out[*n].name, "%s", c[i].name);
        out[*n].value = c[i].v;
        (*n)++;
    }
}

static void body(void *user, int repetition, hb_gb_result *out)
{
    hb_item *it = user;
    hb_runner *r = it->runner;
    hb_rep *rep = repetition >= 0 && repetition < it->nreps ? &it->reps[repetition] : NULL;
    if (!it->set_up && it->status == HB_STATUS_OK) setup_item(r, it);
    if (it->status == HB_STATUS_OK && rep) {
        fu_error err;
        memset(&err, 0, sizeof err);
        fu_status s = hb_timer_measure(r->timer, call_item, it, &rep->samples, &err);
        if (!s && it->variant->check) s = it->variant->check(it->vstate, &err);
        if (s) set_failed(it, "timing: %s", err.message);
    }
    if (it->status != HB_STATUS_OK || !rep) {
        out->failed = true;
        snprintf(out->message, sizeof out->message, "%s", it->status != HB_STATUS_OK ? it->error : "too many repetitions");
        if (rep) {
            rep->done = true;
            rep->status = HB_STATUS_FAILED;
            snprintf(rep->error, sizeof rep->error, "%s", it->error);
            hb_samples_free(&rep->samples);
        }
        if (!it->failure_reported)
            progress(r, "[%d/%d] %s: FAILED: %s", it->index + 1, r->nitems, it->name, it->error);
        it->failure_reported = true;
    } else {
        rep->done = true;
        rep->status = HB_STATUS_OK;
        const hb_summary *sm = &rep->samples.summary;
        out->seconds = sm->median * 1e-6;
        put_counters(it, &rep->samples, out->counters, &out->ncounters);
        double gbps = (double)it->bytes / (sm->median * 1e-6) / 1e9;
        progress(r, "[%d/%d] %s: rep %d/%d: %.2f us +-%.1f%% (%d samples, %s%s), %.0f GB/s, %d kernel%s, %d launch%s",
                 it->index + 1, r->nitems, it->name, repetition + 1, it->nreps, sm->median, 100 * sm->spread,
                 rep->samples.n, hb_stop_name(rep->samples.stop),
                 rep->samples.throttled ? ", throttled samples dropped" : "", gbps, it->kernels,
                 it->kernels == 1 ? "" : "s", it->launches, it->launches == 1 ? "" : "es");
    }
    if (repetition >= it->nreps - 1) item_release_device(r, it);
}

static hb_entry *new_entry(hb_runner *r)
{
    if (r->nentries == r->centries) {
        int nc = r->centries ? 2 * r->centries : 32;
        hb_entry *p = realloc(r->entries, (size_t)nc * sizeof *p);
        if (!p) return NULL;
        r->entries = p;
        r->centries = nc;
    }
    hb_entry *e = &r->entries[r->nentries++];
    hb_entry_init(e);
    return e;
}

static void fill_entry_strings(hb_entry *e, const hb_item *it)
{
    snprintf(e->name, sizeof e->name, "%s", it->name);
    snprintf(e->run_name, sizeof e->run_name, "%s", it->name);
    snprintf(e->suite, sizeof e->suite, "%s", it->suite->name);
    snprintf(e->case_name, sizeof e->case_name, "%s", it->cs->name);
    snprintf(e->variant, sizeof e->variant, "%s", it->variant->name);
    snprintf(e->dtype, sizeof e->dtype, "%s", fu_dtype_name(it->dtype));
    snprintf(e->size, sizeof e->size, "%s", it->size_str);
    snprintf(e->bytes_formula, sizeof e->bytes_formula, "%s", it->bytes_formula);
    snprintf(e->kernel_source_hash, sizeof e->kernel_source_hash, "%s", it->info.source_hash);
    e->per_family_instance_index = 0;
    e->family_index = it->index;
}

/* An entry for an item that was not timed: failed, or skipped (no GPU). */
static void add_untimed_entry(hb_runner *r, const hb_item *it, hb_status st, const char *why)
{
    hb_entry *e = new_entry(r);
    if (!e) return;
    fill_entry_strings(e, it);
    e->repetitions = 1;
    e->status = st;
    snprintf(e->error, sizeof e->error, "%s", why);
    hb_entry_counter(e, "segments", it->info.segments);
    if (st == HB_STATUS_SKIPPED) { /* what the plan would launch */
        hb_entry_counter(e, "kernels", it->info.kernels);
        hb_entry_counter(e, "launches", it->info.kernels + it->info.memsets + it->info.copies);
    }
    hb_entry_counter(e, "bytes", (double)it->bytes);
}

static void on_run(void *user, const hb_gb_run *run)
{
    hb_runner *r = user;
    hb_item *it = run->user;
    if (!it) return;
    hb_entry *e = new_entry(r);
    if (!e) return;
    fill_entry_strings(e, it);
    e->family_index = run->family_index;
    e->per_family_instance_index = run->per_family_instance_index;
    e->repetitions = run->repetitions;
    e->threads = run->threads;
    e->iterations = run->iterations;
    if (run->aggregate) {
        e->aggregate = true;
        snprintf(e->name, sizeof e->name, "%.220s_%.31s", it->name, run->aggregate_name);
        snprintf(e->aggregate_name, sizeof e->aggregate_name, "%s", run->aggregate_name);
        snprintf(e->aggregate_unit, sizeof e->aggregate_unit, "%s", run->aggregate_unit);
        e->real_time = run->real_time;
        e->cpu_time = run->cpu_time;
        e->status = HB_STATUS_OK;
        for (int i = 0; i < run->ncounters; i++) hb_entry_counter(e, run->counters[i].name, run->counters[i].value);
        return;
    }
    e->repetition_index = run->repetition_index;
    const hb_rep *rep = run->repetition_index >= 0 && run->repetition_index < it->nreps ? &it->reps[run->repetition_index]
                                                                                        : NULL;
    if (run->error || !rep || rep->status != HB_STATUS_OK) {
        e->status = HB_STATUS_FAILED;
        snprintf(e->error, sizeof e->error, "%s", rep && rep->error[0] ? rep->error : run->error_message);
        hb_entry_counter(e, "segments", it->info.segments);
        hb_entry_counter(e, "bytes", (double)it->bytes);
        if (isfinite(it->max_rel_error)) hb_entry_counter(e, "max_rel_error", it->max_rel_error);
        return;
    }
    e->status = HB_STATUS_OK;
    e->real_time = rep->samples.summary.median;
    e->cpu_time = run->cpu_time;
    int n = 0;
    put_counters(it, &rep->samples, e->counters, &n);
    e->ncounters = n;
    e->samples_us = rep->samples.us;
    e->nsamples = rep->samples.n;
    if (it->profile.recorded) {
        e->kernel_records = it->profile.last.records;
        e->nkernel_records = it->profile.last.nrecords;
    }
    if (rep->samples.throttle_ignored)
        snprintf(e->error, sizeof e->error, "the GPU was throttled for most samples; they were kept");
    else if (it->profile.recorded && !it->profile.consistent)
        snprintf(e->error, sizeof e->error, "CUPTI saw different launches in different calls");
}

/* ------------------------------------------------------------ measure */

static void open_instruments(hb_runner *r)
{
    char why[192];
    r->clocks = hb_clocks_open(0, why, sizeof why);
    if (!r->clocks) snprintf(r->clocks_note, sizeof r->clocks_note, "unavailable: %s", why);
    else snprintf(r->clocks_note, sizeof r->clocks_note, "NVML");
    r->have_clock0 = r->clocks && hb_clocks_sample(r->clocks, &r->clock0);
    r->cupti = hb_cupti_open(why, sizeof why);
    if (!r->cupti) snprintf(r->cupti_note, sizeof r->cupti_note, "unavailable: %s", why);
    else snprintf(r->cupti_note, sizeof r->cupti_note, "%s", hb_cupti_describe(r->cupti));
}

fu_status hb_runner_measure_gb(hb_runner *r, hb_gbench *g, const char *argv0, fu_error *err)
{
    if (!r->rt) return fu_error_set(err, FU_ERR_ARG, "hb_runner_measure before hb_runner_prepare");
    if (!fu_runtime_has_device(r->rt))
        return fu_error_set(err, FU_ERR_NO_DEVICE, "timing needs a GPU: %s", fu_runtime_describe(r->rt));
    r->measured = true;
    snprintf(r->argv0, sizeof r->argv0, "%s", argv0 ? argv0 : "");
    open_instruments(r);
    if (!r->cupti) progress(r, "note: CUPTI %s; launch counts come from the launcher, no kernel time", r->cupti_note);
    if (!r->clocks) progress(r, "note: clock sampling %s; no sample is discarded as throttled", r->clocks_note);
    fu_status s = hb_timer_open(r->rt, r->clocks, &r->o.timing, &r->timer, err);
    if (s) return s;
    fu_error cerr;
    memset(&cerr, 0, sizeof cerr);
    if (hb_copy_bandwidth(r->rt, r->o.copy_bytes, 10, &r->copy_gbps, &cerr))
        progress(r, "note: copy bandwidth not measured: %s", cerr.message);
    else
        progress(r, "%s; copy bandwidth %.0f GB/s (%zu MiB device-to-device, read + write); %s L2, %s", fu_runtime_describe(r->rt),
                 r->copy_gbps, r->o.copy_bytes >> 20, hb_mode_name(r->o.timing.mode), r->cupti_note);

    for (int i = 0; i < r->nitems; i++) {
        hb_item *it = &r->items[i];
        it->runner = r;
        if (it->status != HB_STATUS_OK) {
            add_untimed_entry(r, it, HB_STATUS_FAILED, it->error);
            continue;
        }
        if (!hb_gb_register(g, it->name, it->nreps, body, it))
            return fu_error_set(err, FU_ERR_ARG, "benchmark '%s' is listed twice", it->name);
    }
    hb_gb_run_all(g, on_run, r);
    for (int i = 0; i < r->nitems; i++) item_release_device(r, &r->items[i]);
    return FU_OK;
}

fu_status hb_runner_measure(hb_runner *r, const char *argv0, int ngb_flags, char **gb_flags, fu_error *err)
{
    hb_gbench *g = hb_gb_new();
    if (!g) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    char why[512];
    fu_status s = hb_gb_init(g, argv0, ngb_flags, gb_flags, why, sizeof why)
                      ? hb_runner_measure_gb(r, g, argv0, err)
                      : fu_error_set(err, FU_ERR_ARG, "%s", why);
    hb_gb_free(g);
    hb_gb_shutdown();
    return s;
}

int hb_runner_failures(const hb_runner *r)
{
    int n = 0;
    for (int i = 0; i < r->nitems; i++) n += r->items[i].status == HB_STATUS_FAILED;
    return n;
}

void hb_runner_add_floors(const hb_runner *r, hb_entry *e, int n)
{
    for (int i = 0; i < n; i++) {
        hb_entry *x = &e[i];
        double bytes = hb_entry_get_counter(x, "bytes");
        double fl = isfinite(bytes) ? floor_of(r, (int64_t)bytes) : NAN;
        if (!isfinite(fl) || x->status != HB_STATUS_OK || !(x->real_time > 0)) continue;
        if (x->aggregate && (strcmp(x->aggregate_unit[0] ? x->aggregate_unit : "time", "time") != 0 ||
                             strcmp(x->aggregate_name, "stddev") == 0))
            continue;
        hb_entry_counter(x, "floor_us", fl);
        hb_entry_counter(x, "floor_fraction", fl / x->real_time);
    }
}

/* ------------------------------------------------------------ context, entries, table */

void hb_runner_context(hb_runner *r, hb_context *c)
{
    memset(c, 0, sizeof *c);
    hb_gb_host_info(&c->host);
    snprintf(c->host.executable, sizeof c->host.executable, "%s", r->argv0);
    c->copy_bandwidth_gbps = c->sm_clock_mhz = c->mem_clock_mhz = NAN;
    snprintf(c->gpu_name, sizeof c->gpu_name, "none");
    snprintf(c->gpu_key, sizeof c->gpu_key, "none");
    if (!r->rt) return; /* nothing prepared */
    const fu_device_props *p = fu_runtime_device(r->rt);
    bool dev = fu_runtime_has_device(r->rt);
    snprintf(c->gpu_name, sizeof c->gpu_name, "%s", dev && p->name[0] ? p->name : "none");
    hb_gpu_key(c->gpu_name, c->gpu_key, sizeof c->gpu_key);
    if (p->driver_version > 0)
        snprintf(c->driver_version, sizeof c->driver_version, "%d.%d", p->driver_version / 1000,
                 p->driver_version % 1000 / 10);
    snprintf(c->driver_release, sizeof c->driver_release, "%s", hb_clocks_driver_release(r->clocks));
    c->sm_count = dev ? p->sm_count : 0;
    c->l2_bytes = dev ? p->l2_bytes : 0;
    c->copy_bandwidth_gbps = r->copy_gbps;
    c->sm_clock_mhz = r->have_clock0 ? r->clock0.sm_mhz : NAN;
    c->mem_clock_mhz = r->have_clock0 ? r->clock0.mem_mhz : NAN;
    /* A tree copied without .git (a GPU machine) builds as "unknown";
     * FUSEBENCH_GIT_COMMIT names the commit that was copied. */
    const char *commit = getenv("FUSEBENCH_GIT_COMMIT");
    snprintf(c->git_commit, sizeof c->git_commit, "%s", commit && *commit ? commit : HB_GIT_COMMIT);
    snprintf(c->build_type, sizeof c->build_type, "%s", HB_BUILD_TYPE);
    snprintf(c->timing_mode, sizeof c->timing_mode, "%s", hb_mode_name(r->o.timing.mode));
    snprintf(c->cupti, sizeof c->cupti, "%s", r->measured ? r->cupti_note : "not loaded (nothing timed)");
    snprintf(c->clock_sampling, sizeof c->clock_sampling, "%s", r->measured ? r->clocks_note : "not loaded (nothing timed)");
    c->l2_flush_bytes = r->timer ? hb_timer_flush_bytes(r->timer) : 0;
    c->min_samples = r->o.timing.stop.min_samples;
    c->max_spread = r->o.timing.stop.max_spread;
    c->time_limit_s = r->o.timing.stop.time_limit_s;
    int maj, min;
    fu_runtime_nvrtc_version(r->rt, &maj, &min);
    if (maj) snprintf(c->nvrtc, sizeof c->nvrtc, "%d.%d", maj, min);
    snprintf(c->arch, sizeof c->arch, "%s", fu_runtime_arch(r->rt));
}

int hb_runner_entries(hb_runner *r, const hb_entry **out)
{
    if (!r->measured && r->nentries == 0) { /* prepare only: one untimed entry per item */
        hb_runner *w = r;
        char why[512];
        snprintf(why, sizeof why, "timing needs a GPU: %s", fu_runtime_describe(r->rt));
        for (int i = 0; i < r->nitems; i++) {
            const hb_item *it = &r->items[i];
            if (it->status == HB_STATUS_FAILED) add_untimed_entry(w, it, HB_STATUS_FAILED, it->error);
            else add_untimed_entry(w, it, HB_STATUS_SKIPPED, fu_runtime_has_device(r->rt) ? "--compile-only" : why);
        }
    }
    *out = r->entries;
    return r->nentries;
}

static const char *fmt_num(char *buf, size_t cap, const char *fmt, double v)
{
    if (!isfinite(v)) snprintf(buf, cap, "-");
    else snprintf(buf, cap, fmt, v);
    return buf;
}

/* Rows measured elsewhere (PyTorch's): whether entry e has the suite, case,
 * dtype and size of item it. */
static bool extra_matches(const hb_entry *e, const hb_item *it)
{
    return hb_entry_same_item(e, it->suite->name, it->cs->name, fu_dtype_name(it->dtype), it->size_str);
}

/* Whether entries a and b have the same suite/case/dtype/size. */
static bool same_item(const hb_entry *a, const hb_entry *b)
{
    return hb_entry_same_item(a, b->suite, b->case_name, b->dtype, b->size);
}

/* torch.compile's time for like's suite/case/dtype/size (the "vs compile" column). */
static double compile_time(const hb_entry *x, int n, const hb_entry *like)
{
    return hb_torch_compile_time(x, n, like->suite, like->case_name, like->dtype, like->size);
}

static void print_extra_rows(const hb_runner *r, const hb_entry *x, int n, bool *printed, const hb_entry *group,
                             int wcase, int wvar, int wsize, FILE *out)
{
    double tc = group ? compile_time(x, n, group) : NAN;
    for (int i = 0; i < n; i++) {
        const hb_entry *e = &x[i];
        if (printed[i] || e->aggregate) continue;
        if (group && !same_item(e, group)) continue;
        /* one row per variant: mark its repetitions printed */
        const char *failure = NULL;
        for (int k = i; k < n; k++)
            if (!x[k].aggregate && strcmp(x[k].variant, e->variant) == 0 && same_item(&x[k], e)) {
                printed[k] = true;
                if (x[k].status == HB_STATUS_FAILED && !failure) failure = x[k].error;
            }
        double sp, t = hb_entries_median_time(x, n, e->suite, e->case_name, e->dtype, e->size, e->variant, &sp);
        double tcg = group ? tc : compile_time(x, n, e);
        double bytes = hb_entry_get_counter(e, "bytes");
        double gbps = isfinite(t) && isfinite(bytes) ? bytes / (t * 1e-6) / 1e9 : NAN;
        double frac = isfinite(r->copy_gbps) ? gbps / r->copy_gbps : NAN;
        double ffrac = isfinite(bytes) ? floor_of(r, (int64_t)bytes) / t : NAN; /* the same floor as our rows */
        char cse[128], b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32], b9[32];
        snprintf(cse, sizeof cse, "%s/%s", e->suite, e->case_name);
        const char *status = isfinite(t) ? "ok" : failure ? "FAILED" : "not run";
        fprintf(out, "%-*s  %-*s %-5s %-*s %7s %8s %11s %6s %9s %7s %8s %9s %10s  %s%s%s\n", wcase, cse, wvar,
                e->variant, e->dtype, wsize, e->size, fmt_num(b1, sizeof b1, "%.0f", hb_entry_get_counter(e, "kernels")),
                fmt_num(b2, sizeof b2, "%.0f", hb_entry_get_counter(e, "launches")), fmt_num(b3, sizeof b3, "%.2f", t),
                fmt_num(b4, sizeof b4, "%.1f", 100 * sp), fmt_num(b5, sizeof b5, "%.0f", gbps),
                fmt_num(b6, sizeof b6, "%.1f%%", 100 * frac), fmt_num(b9, sizeof b9, "%.1f%%", 100 * ffrac), "-",
                fmt_num(b7, sizeof b7, "%.2fx", tcg / t), status,
                !isfinite(t) && failure ? ": " : "", !isfinite(t) && failure ? failure : "");
    }
}

/* The median of the item's ok repetitions' medians (*t) and of their
 * spreads (*sp), NaN when there are none (or out of memory). Returns the
 * number of ok repetitions. */
static int rep_time(const hb_item *it, double *t, double *sp)
{
    *t = *sp = NAN;
    int n = 0;
    for (int k = 0; k < it->nreps; k++) n += it->reps[k].done && it->reps[k].status == HB_STATUS_OK;
    if (!n) return 0;
    double *med = malloc(2 * (size_t)n * sizeof *med);
    if (!med) return n;
    double *spreads = med + n;
    int m = 0;
    for (int k = 0; k < it->nreps; k++)
        if (it->reps[k].done && it->reps[k].status == HB_STATUS_OK) {
            med[m] = it->reps[k].samples.summary.median;
            spreads[m++] = it->reps[k].samples.summary.spread;
        }
    *t = hb_median(med, n);
    *sp = hb_median(spreads, n);
    free(med);
    return n;
}

void hb_runner_print_table(const hb_runner *r, FILE *out) { hb_runner_print_table_with(r, NULL, 0, out); }

/* s as a quoted JSON string (fu_json_quote: the fuser's one escaper); false
 * when out of memory. */
static bool json_string(FILE *out, const char *s)
{
    char *q = fu_json_quote(s);
    if (!q) return false;
    fputs(q, out);
    free(q);
    return true;
}

bool hb_runner_write_torch_items(const hb_runner *r, FILE *out)
{
    fputs("{\"items\": [", out);
    int written = 0;
    bool ok = true;
    for (int i = 0; i < r->nitems; i++) {
        const hb_item *it = &r->items[i];
        if (!it->fusion) continue;
        bool seen = false;
        for (int k = 0; k < i && !seen; k++) {
            const hb_item *o = &r->items[k];
            seen = o->fusion && o->suite == it->suite && o->cs == it->cs && o->dtype == it->dtype &&
                   strcmp(o->size_str, it->size_str) == 0;
        }
        if (seen) continue;
        char *text = fu_fusion_print(it->fusion);
        if (!text) return false;
        char item[256];
        snprintf(item, sizeof item, "%s/%s/%s/%s", it->suite->name, it->cs->name, fu_dtype_name(it->dtype), it->size_str);
        fprintf(out, "%s\n {\"item\": ", written++ ? "," : "");
        ok &= json_string(out, item);
        fputs(", \"fusion\": ", out);
        ok &= json_string(out, text);
        free(text);
        fprintf(out, ", \"bytes\": %" PRId64 ", \"bytes_formula\": ", it->bytes);
        ok &= json_string(out, it->bytes_formula);
        fprintf(out, ", \"deterministic\": %s, \"inputs\": [",
                it->cs->scatter_named && it->cs->scatter == FU_SCATTER_DETERMINISTIC ? "true" : "false");
        for (int k = 0; k < fu_fusion_num_inputs(it->fusion); k++) {
            fu_tensor t = fu_fusion_input(it->fusion, k);
            fprintf(out, "%s{\"name\": ", k ? ", " : "");
            ok &= json_string(out, fu_tensor_name(it->fusion, t));
            fprintf(out, ", \"index_bound\": %" PRId64 "}", fu_fusion_index_bound(it->fusion, t));
        }
        fputs("]}", out);
    }
    fputs("\n]}\n", out);
    return ok && !ferror(out);
}

void hb_runner_print_table_with(const hb_runner *r, const hb_entry *extra, int nextra, FILE *out)
{
    int wcase = 4, wsize = 4, wvar = 7;
    for (int i = 0; i < r->nitems; i++) {
        const hb_item *it = &r->items[i];
        int n = (int)(strlen(it->suite->name) + 1 + strlen(it->cs->name));
        if (n > wcase) wcase = n;
        if ((int)strlen(it->size_str) > wsize) wsize = (int)strlen(it->size_str);
        if ((int)strlen(it->variant->name) > wvar) wvar = (int)strlen(it->variant->name);
    }
    for (int i = 0; i < nextra; i++) {
        const hb_entry *e = &extra[i];
        int n = (int)(strlen(e->suite) + 1 + strlen(e->case_name));
        if (n > wcase) wcase = n;
        if ((int)strlen(e->size) > wsize) wsize = (int)strlen(e->size);
        if ((int)strlen(e->variant) > wvar) wvar = (int)strlen(e->variant);
    }
    if (!r->measured) {
        fprintf(out, "%-*s  %-*s %-5s %-*s %8s %7s %7s %6s  %s\n", wcase, "case", wvar, "variant", "dtype", wsize, "size",
                "segments", "kernels", "memsets", "copies", "compile");
        for (int i = 0; i < r->nitems; i++) {
            const hb_item *it = &r->items[i];
            char cse[128];
            snprintf(cse, sizeof cse, "%s/%s", it->suite->name, it->cs->name);
            if (it->status == HB_STATUS_FAILED) {
                fprintf(out, "%-*s  %-*s %-5s %-*s  FAILED: %s\n", wcase, cse, wvar, it->variant->name,
                        fu_dtype_name(it->dtype), wsize, it->size_str, it->error);
                continue;
            }
            const hb_variant_info *in = &it->info;
            char how[64];
            if (in->cache_hits == in->compiled) snprintf(how, sizeof how, "disk cache");
            else snprintf(how, sizeof how, "NVRTC %.0f ms", in->compile_ms);
            fprintf(out, "%-*s  %-*s %-5s %-*s %8d %7d %7d %6d  %s\n", wcase, cse, wvar, it->variant->name,
                    fu_dtype_name(it->dtype), wsize, it->size_str, in->segments, in->kernels, in->memsets, in->copies,
                    how);
        }
        return;
    }
    fprintf(out, "%-*s  %-*s %-5s %-*s %7s %8s %11s %6s %9s %7s %8s %9s %10s  %s\n", wcase, "case", wvar, "variant",
            "dtype", wsize, "size", "kernels", "launches", "time us", "+-%", "GB/s", "% copy", "% floor", "max err",
            "vs compile", "status");
    bool *printed = nextra > 0 ? calloc((size_t)nextra, sizeof *printed) : NULL;
    if (nextra > 0 && !printed) nextra = 0; /* out of memory: the items alone */
    for (int i = 0; i < r->nitems; i++) {
        const hb_item *it = &r->items[i];
        char cse[128];
        snprintf(cse, sizeof cse, "%s/%s", it->suite->name, it->cs->name);
        hb_entry group; /* suite/case/dtype/size of the item, to find extra rows */
        hb_entry_init(&group);
        snprintf(group.suite, sizeof group.suite, "%s", it->suite->name);
        snprintf(group.case_name, sizeof group.case_name, "%s", it->cs->name);
        snprintf(group.dtype, sizeof group.dtype, "%s", fu_dtype_name(it->dtype));
        snprintf(group.size, sizeof group.size, "%s", it->size_str);
        double tc = nextra > 0 ? compile_time(extra, nextra, &group) : NAN;
        double t, sp;
        int n = rep_time(it, &t, &sp);
        double gbps = isfinite(t) && t > 0 ? (double)it->bytes / (t * 1e-6) / 1e9 : NAN;
        double frac = isfinite(r->copy_gbps) ? gbps / r->copy_gbps : NAN;
        char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32], b7[32], b8[32], b9[32];
        const char *status = it->status == HB_STATUS_FAILED ? "FAILED" : n ? "ok" : "not run";
        fprintf(out, "%-*s  %-*s %-5s %-*s %7s %8s %11s %6s %9s %7s %8s %9s %10s  %s%s%s\n", wcase, cse, wvar,
                it->variant->name, fu_dtype_name(it->dtype), wsize, it->size_str,
                fmt_num(b1, sizeof b1, "%.0f", it->kernels >= 0 ? it->kernels : NAN),
                fmt_num(b2, sizeof b2, "%.0f", it->launches >= 0 ? it->launches : NAN), fmt_num(b3, sizeof b3, "%.2f", t),
                fmt_num(b4, sizeof b4, "%.1f", 100 * sp), fmt_num(b5, sizeof b5, "%.0f", gbps),
                fmt_num(b6, sizeof b6, "%.1f%%", 100 * frac), fmt_num(b9, sizeof b9, "%.1f%%", 100 * it->floor_us / t),
                fmt_num(b7, sizeof b7, "%.1e", it->max_rel_error),
                fmt_num(b8, sizeof b8, "%.2fx", tc / t), status, it->status == HB_STATUS_FAILED ? ": " : "",
                it->status == HB_STATUS_FAILED ? it->error : "");
        /* after the last item of its suite/case/dtype/size: the rows measured elsewhere */
        bool group_ends = i + 1 == r->nitems || !extra_matches(&group, &r->items[i + 1]); /* items are in groups */
        if (nextra > 0 && group_ends) print_extra_rows(r, extra, nextra, printed, &group, wcase, wvar, wsize, out);
    }
    if (nextra > 0) print_extra_rows(r, extra, nextra, printed, NULL, wcase, wvar, wsize, out); /* the rest */
    free(printed);
}
