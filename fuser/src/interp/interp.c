/*
 * interp.c -- the CPU reference interpreter's driver: input checks, value
 * storage with last-use freeing, error messages, and writing the outputs.
 * The ops themselves are in interp_ops.c and interp_composite.c.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "interp.h"

/* ------------------------------------------------------------ conversions */

/* Widens n elements of a host tensor from flat offset off into dst. The dtype
 * switch is outside the loops: this is the hot path of large inputs. */
static void host_to_double(const fu_host_tensor *h, int64_t off, int64_t n, double *dst)
{
    switch (h->dtype) {
    case FU_F32: {
        const float *s = (const float *)h->data + off;
        for (int64_t i = 0; i < n; i++) dst[i] = s[i];
        break;
    }
    case FU_BF16: {
        const uint16_t *s = (const uint16_t *)h->data + off;
        for (int64_t i = 0; i < n; i++) {
            uint32_t u = (uint32_t)s[i] << 16; /* bf16 is the top half of an f32 */
            float v;
            memcpy(&v, &u, sizeof v);
            dst[i] = v;
        }
        break;
    }
    case FU_F16: {
        const uint16_t *s = (const uint16_t *)h->data + off;
        for (int64_t i = 0; i < n; i++) dst[i] = fu_f16_to_f32(s[i]);
        break;
    }
    case FU_F64: memcpy(dst, (const double *)h->data + off, (size_t)n * sizeof *dst); break;
    default: FU_ASSERT(!"host_to_double of an integer tensor");
    }
}

/* Widens the n elements of an integer or bool host tensor into int64. */
static void host_to_int(const fu_host_tensor *h, int64_t n, int64_t *dst)
{
    switch (h->dtype) {
    case FU_I32: {
        const int32_t *s = h->data;
        for (int64_t i = 0; i < n; i++) dst[i] = s[i];
        break;
    }
    case FU_I64: memcpy(dst, h->data, (size_t)n * sizeof *dst); break;
    case FU_BOOL: {
        const uint8_t *s = h->data;
        for (int64_t i = 0; i < n; i++) dst[i] = s[i] != 0;
        break;
    }
    default: FU_ASSERT(!"host_to_int of a float tensor");
    }
}

/* Writes elements [begin, end) of a buffer (already rounded to h's dtype) into a host
 * tensor: doubles for the float dtypes, int64 for the others. */
static void values_to_host_span(const void *src, fu_host_tensor *h, int64_t begin, int64_t end)
{
    const double *f = src;
    const int64_t *q = src;
    switch (h->dtype) {
    case FU_F32: {
        float *d = h->data;
        for (int64_t i = begin; i < end; i++) d[i] = (float)f[i];
        break;
    }
    case FU_BF16: {
        uint16_t *d = h->data;
        for (int64_t i = begin; i < end; i++) d[i] = fu_f64_to_bf16(f[i]);
        break;
    }
    case FU_F16: {
        uint16_t *d = h->data;
        for (int64_t i = begin; i < end; i++) d[i] = fu_f64_to_f16(f[i]);
        break;
    }
    case FU_F64: memcpy((double *)h->data + begin, f + begin, (size_t)(end - begin) * sizeof *f); break;
    case FU_I32: {
        int32_t *d = h->data;
        for (int64_t i = begin; i < end; i++) d[i] = (int32_t)q[i]; /* already in range */
        break;
    }
    case FU_I64: memcpy((int64_t *)h->data + begin, q + begin, (size_t)(end - begin) * sizeof *q); break;
    case FU_BOOL: {
        uint8_t *d = h->data;
        for (int64_t i = begin; i < end; i++) d[i] = q[i] != 0;
        break;
    }
    default: break;
    }
}

typedef struct to_host_job {
    const void *src;
    fu_host_tensor *h;
} to_host_job;

static bool values_to_host_chunk(void *ctx, int64_t begin, int64_t end)
{
    const to_host_job *j = ctx;
    values_to_host_span(j->src, j->h, begin, end);
    return true;
}

/* The whole buffer into the host tensor, on every core. */
static void values_to_host(const void *src, fu_host_tensor *h)
{
    const int64_t n = fu_host_tensor_numel(h);
    to_host_job j = {src, h};
    fu_parallel_chunks(n, n, values_to_host_chunk, &j);
}

static void round_span(double *p, int64_t n, fu_dtype dt)
{
    switch (dt) {
    case FU_F64: break;
    case FU_F32:
        for (int64_t i = 0; i < n; i++) p[i] = (double)(float)p[i];
        break;
    case FU_BOOL:
        for (int64_t i = 0; i < n; i++) p[i] = p[i] != 0.0 ? 1.0 : 0.0;
        break;
    default:
        for (int64_t i = 0; i < n; i++) p[i] = fu_round_to_dtype(p[i], dt);
        break;
    }
}

typedef struct round_job {
    double *p;
    fu_dtype dt;
} round_job;

static bool round_chunk(void *ctx, int64_t begin, int64_t end)
{
    const round_job *j = ctx;
    round_span(j->p + begin, end - begin, j->dt);
    return true;
}

void interp_round(double *p, int64_t n, fu_dtype dt)
{
    if (dt == FU_F64) return;
    round_job j = {p, dt};
    fu_parallel_chunks(n, n, round_chunk, &j);
}

void interp_iround(int64_t *p, int64_t n, fu_dtype dt)
{
    if (dt == FU_I32)
        for (int64_t i = 0; i < n; i++) p[i] = (int32_t)(uint32_t)(uint64_t)p[i]; /* wraps, defined in gcc/clang */
    else if (dt == FU_BOOL)
        for (int64_t i = 0; i < n; i++) p[i] = p[i] != 0;
}

/* ------------------------------------------------------------ errors */

fu_status interp_op_error(interp *it, const fu_node *n, fu_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fu_node_verror(it->f, n, it->err, s, fmt, ap);
    va_end(ap);
    return s;
}

fu_status interp_check_index(interp *it, const fu_node *n, fu_tensor idx, const int64_t *v, int64_t count,
                             int64_t bound, bool has_skip, int64_t skip)
{
    for (int64_t i = 0; i < count; i++) {
        if ((v[i] >= 0 && v[i] < bound) || (has_skip && v[i] == skip)) continue;
        /* Position in the index tensor's own coordinates. */
        const fu_value *iv = &it->f->values[idx];
        int64_t pos[FU_MAX_RANK], rest = i;
        for (int d = iv->rank - 1; d >= 0; d--) {
            pos[d] = iv->shape[d] ? rest % iv->shape[d] : 0;
            rest = iv->shape[d] ? rest / iv->shape[d] : 0;
        }
        char ps[192], extra[96] = "";
        fu_shape_str(iv->rank, pos, ps, sizeof ps);
        if (has_skip) snprintf(extra, sizeof extra, " (and is not ignore_index %lld)", (long long)skip);
        return interp_op_error(it, n, FU_ERR_INDEX, "index %lld at position %s of '%s' is out of range [0, %lld)%s",
                               (long long)v[i], ps, iv->name, (long long)bound, extra);
    }
    return FU_OK;
}

/* ------------------------------------------------------------ storage */

static bool zero_chunk(void *ctx, int64_t begin, int64_t end)
{
    memset((double *)ctx + begin, 0, (size_t)(end - begin) * sizeof(double));
    return true;
}

/* n 8-byte elements (at least one), zeroed when asked; NULL when n is
 * negative, too big for a size_t count of bytes, or the allocation fails.
 * A big zeroed buffer is written with zeros on every core instead of taken
 * from calloc: calloc's fresh pages map the shared zero page on their first
 * read, and the write after it (an accumulation, a rounding in place) then
 * copies the page and flushes its mapping on every CPU that runs one of
 * the interpreter's threads. Written first, a page is the buffer's own; and
 * in 2 MiB pages where the kernel gives them (fu_malloc_big), since faulting
 * and clearing 4 KiB pages took most of the time of a run at gigabytes. */
static void *elems_new(int64_t n, bool zeroed)
{
    if (n < 0 || (uint64_t)n >= SIZE_MAX / sizeof(double)) return NULL;
    size_t count = n ? (size_t)n : 1;
    if (!zeroed) return fu_malloc(count * sizeof(double));
    if (n < ((int64_t)1 << 16)) return fu_calloc(count, sizeof(double));
    double *p = fu_malloc_big(count * sizeof(double));
    if (p) fu_parallel_chunks(n, n, zero_chunk, p);
    return p;
}

static interp_buf *buf_new(interp *it, int64_t n, const char *name)
{
    interp_buf *b = fu_calloc(1, sizeof *b);
    void *d = elems_new(n, true);
    if (!b || !d) {
        fu_free(b);
        fu_free(d);
        fu_error_set(it->err, FU_ERR_NOMEM, "out of memory: %lld values for tensor '%s'", (long long)n, name);
        return NULL;
    }
    b->data = d;
    b->refs = 1;
    return b;
}

double *interp_scratch_new(interp *it, int64_t n, const char *what)
{
    double *p = elems_new(n, false);
    if (!p) fu_error_set(it->err, FU_ERR_NOMEM, "out of memory: %lld doubles of scratch for %s", (long long)n, what);
    return p;
}

fu_status interp_rows_nomem(interp *it, const fu_node *n, int64_t len)
{
    return fu_error_set(it->err, FU_ERR_NOMEM, "out of memory: rows of %lld doubles of scratch for %s",
                        (long long)len, fu_op_name(n->op));
}

static void release(interp *it, fu_tensor t)
{
    interp_buf *b = it->slots[t].buf;
    it->slots[t].buf = NULL;
    if (b && --b->refs == 0) {
        if (!b->borrowed) fu_free(b->data);
        fu_free(b);
    }
}

const void *interp_raw(interp *it, fu_tensor t)
{
    interp_slot *s = &it->slots[t];
    if (s->buf) return s->buf->data;
    FU_ASSERT(s->host); /* ops run in order, so only inputs can be missing */
    if (s->host->dtype == FU_F64 || s->host->dtype == FU_I64) { /* already 8-byte values: read the caller's array */
        interp_buf *b = fu_calloc(1, sizeof *b);
        if (!b) {
            fu_error_set(it->err, FU_ERR_NOMEM, "out of memory reading input '%s'", it->f->values[t].name);
            return NULL;
        }
        b->data = s->host->data; /* never written: ops write only fresh buffers */
        b->refs = 1;
        b->borrowed = true;
        s->buf = b;
        return b->data;
    }
    int64_t n = interp_numel(it, t);
    interp_buf *b = buf_new(it, n, it->f->values[t].name);
    if (!b) return NULL;
    if (interp_is_int(s->host->dtype)) host_to_int(s->host, n, b->data);
    else host_to_double(s->host, 0, n, b->data);
    s->buf = b;
    return b->data;
}

const double *interp_vals(interp *it, fu_tensor t)
{
    FU_ASSERT(!interp_is_int(it->f->values[t].dtype));
    return interp_raw(it, t);
}

const int64_t *interp_ivals(interp *it, fu_tensor t)
{
    FU_ASSERT(interp_is_int(it->f->values[t].dtype));
    return interp_raw(it, t);
}

const double *interp_row(interp *it, fu_tensor t, int64_t off, int64_t n, double *scratch)
{
    FU_ASSERT(!interp_is_int(it->f->values[t].dtype));
    interp_slot *s = &it->slots[t];
    if (s->buf) return (const double *)s->buf->data + off;
    if (s->host->dtype == FU_F64) return (const double *)s->host->data + off;
    host_to_double(s->host, off, n, scratch);
    return scratch;
}

void *interp_new_raw(interp *it, const fu_node *n)
{
    interp_buf *b = buf_new(it, interp_numel(it, n->output), it->f->values[n->output].name);
    if (!b) return NULL;
    it->slots[n->output].buf = b;
    return b->data;
}

double *interp_new_output(interp *it, const fu_node *n)
{
    FU_ASSERT(!interp_is_int(it->f->values[n->output].dtype));
    return interp_new_raw(it, n);
}

int64_t *interp_new_ioutput(interp *it, const fu_node *n)
{
    FU_ASSERT(interp_is_int(it->f->values[n->output].dtype));
    return interp_new_raw(it, n);
}

fu_status interp_alias(interp *it, const fu_node *n, fu_tensor src)
{
    if (!interp_raw(it, src)) return interp_nomem(it);
    interp_buf *b = it->slots[src].buf;
    b->refs++;
    it->slots[n->output].buf = b;
    return FU_OK;
}

/* ------------------------------------------------------------ driver */

static fu_status check_inputs(const fu_fusion *f, const fu_host_tensor *inputs, fu_error *err)
{
    if (f->ninputs > 0 && !inputs)
        return fu_error_set(err, FU_ERR_ARG, "fusion '%s' has %d inputs but none were given", f->name, f->ninputs);
    for (int i = 0; i < f->ninputs; i++) {
        const fu_value *v = &f->values[f->inputs[i]];
        const fu_host_tensor *h = &inputs[i];
        bool ok = h->dtype == v->dtype && h->rank == v->rank;
        for (int d = 0; ok && d < v->rank; d++) ok = h->shape[d] == v->shape[d];
        if (!ok) {
            char want[192], got[192];
            bool rank_ok = h->rank >= 0 && h->rank <= FU_MAX_RANK;
            return fu_error_set(err, FU_ERR_ARG, "input %d '%s': expected %s %s, got %s %s", i, v->name,
                                fu_dtype_name(v->dtype), fu_shape_str(v->rank, v->shape, want, sizeof want),
                                fu_dtype_name(h->dtype),
                                rank_ok ? fu_shape_str(h->rank, h->shape, got, sizeof got) : "(bad rank)");
        }
        if (!h->data && fu_shape_numel(v->rank, v->shape) > 0)
            return fu_error_set(err, FU_ERR_ARG, "input %d '%s': data is NULL", i, v->name);
    }
    return FU_OK;
}

static fu_status exec_node(interp *it, const fu_node *n)
{
    if (fu_op_kind_of(n->op) == FU_KIND_COMPOSITE) return interp_exec_composite(it, n);
    return interp_exec_primitive(it, n);
}

fu_status fu_interp_run(const fu_fusion *f, const fu_host_tensor *inputs, fu_host_tensor *outputs,
                        fu_error *err)
{
    if (!f || !outputs) return fu_error_set(err, FU_ERR_ARG, "fu_interp_run: fusion and outputs are required");
    for (int i = 0; i < f->noutputs; i++) memset(&outputs[i], 0, sizeof outputs[i]);
    fu_status s = fu_fusion_verify(f, err); /* never run a graph whose shapes are not checked */
    if (s) return s;
    if ((s = check_inputs(f, inputs, err))) return s;

    fu_error local;
    if (!err) err = &local; /* ops report through it->err */
    interp it = {f, NULL, err};
    int *last_use = fu_malloc((size_t)f->nvalues * sizeof *last_use);
    int *out_index = fu_malloc((size_t)f->nvalues * sizeof *out_index);
    it.slots = fu_calloc((size_t)f->nvalues, sizeof *it.slots);
    if (!last_use || !out_index || !it.slots) {
        s = fu_error_set(err, FU_ERR_NOMEM, "out of memory starting the interpreter");
        goto done;
    }
    for (int t = 0; t < f->nvalues; t++) last_use[t] = out_index[t] = -1;
    for (int i = 0; i < f->nnodes; i++)
        for (int k = 0; k < f->nodes[i].ninputs; k++) last_use[f->nodes[i].inputs[k]] = i;
    for (int i = 0; i < f->noutputs; i++) out_index[f->outputs[i]] = i;
    for (int i = 0; i < f->ninputs; i++) it.slots[f->inputs[i]].host = &inputs[i];

    /* An input listed as an output is copied straight through. */
    for (int i = 0; i < f->ninputs; i++) {
        int o = out_index[f->inputs[i]];
        if (o < 0) continue;
        if ((s = fu_host_tensor_alloc(&outputs[o], inputs[i].dtype, inputs[i].rank, inputs[i].shape, err))) goto done;
        memcpy(outputs[o].data, inputs[i].data, fu_host_tensor_bytes(&inputs[i]));
    }

    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if ((s = exec_node(&it, n))) goto done;
        FU_ASSERT(it.slots[n->output].buf);
        int o = out_index[n->output];
        if (o >= 0) { /* write outputs as soon as they exist, so their buffers can go early */
            const fu_value *v = &f->values[n->output];
            if ((s = fu_host_tensor_alloc(&outputs[o], v->dtype, v->rank, v->shape, err))) goto done;
            values_to_host(it.slots[n->output].buf->data, &outputs[o]);
        }
        for (int k = 0; k < n->ninputs; k++)
            if (last_use[n->inputs[k]] == i) release(&it, n->inputs[k]);
        if (last_use[n->output] < 0) release(&it, n->output);
    }
    s = FU_OK;

done:
    if (it.slots)
        for (int t = 0; t < f->nvalues; t++) release(&it, t);
    if (s != FU_OK)
        for (int i = 0; i < f->noutputs; i++) fu_host_tensor_free(&outputs[i]);
    fu_free(it.slots);
    fu_free(last_use);
    fu_free(out_index);
    return s;
}
