/*
 * interp.h -- internals of the CPU reference interpreter (fu_interp_run),
 * shared by its three files: interp.c (driver, value storage, I/O),
 * interp_ops.c (primitive ops) and interp_composite.c (composites).
 *
 * Every tensor is held as a dense row-major array of 8-byte elements whose
 * values are already rounded to the tensor's dtype: doubles for the float
 * dtypes, int64 for i32, i64 and bool (so that integers are exact: 2^53 + 1
 * stays 2^53 + 1). Buffers are reference counted so that reshape /
 * segment_set / identity casts share their operand's array instead of
 * copying it, and each is freed right after its last reader ran.
 */
#ifndef FUSER_INTERP_H
#define FUSER_INTERP_H

#include "ir.h"

typedef struct interp_buf {
    void *data; /* double[] or int64_t[], by the dtype (interp_is_int) */
    int refs;
    bool borrowed; /* data is the caller's f64 or i64 input: never freed here */
} interp_buf;

/* Which dtypes are held as int64 (exact) rather than double. */
static inline bool interp_is_int(fu_dtype t) { return t == FU_I32 || t == FU_I64 || t == FU_BOOL; }

typedef struct interp_slot {
    interp_buf *buf;            /* values, NULL until computed or materialized */
    const fu_host_tensor *host; /* inputs: the caller's tensor, read in place */
} interp_slot;

typedef struct interp {
    const fu_fusion *f;
    interp_slot *slots; /* one per tensor */
    fu_error *err;
} interp;

static inline int64_t interp_numel(const interp *it, fu_tensor t)
{
    return fu_shape_numel(it->f->values[t].rank, it->f->values[t].shape);
}

/* v's shape around one axis: outer = the product of the extents before it,
 * ext = its extent, inner = the product of those after it. */
static inline void interp_axis_split(const fu_value *v, int axis, int64_t *outer, int64_t *ext, int64_t *inner)
{
    *outer = fu_shape_numel(axis, v->shape);
    *ext = v->shape[axis];
    *inner = fu_shape_numel(v->rank - axis - 1, v->shape + axis + 1);
}

/* The status to return after a failed allocation: the one already in it->err
 * (an out-of-memory message), FU_ERR_NOMEM if somehow none was set. */
static inline fu_status interp_nomem(const interp *it)
{
    return it->err->status ? it->err->status : FU_ERR_NOMEM;
}

/* The status to return after a composite's row loop ran out of memory for its
 * rows' scratch (`len` doubles a chunk): sets it->err, naming the op. Called
 * after the loop, never from a chunk (the chunks share it->err). */
fu_status interp_rows_nomem(interp *it, const fu_node *n, int64_t len);

/* The whole of a float tensor t as doubles, or of an integer or bool tensor
 * as int64 (an input is converted once, on first use). NULL when out of memory
 * (it->err is set). */
const double *interp_vals(interp *it, fu_tensor t);
const int64_t *interp_ivals(interp *it, fu_tensor t);
/* Either of the two, as 8-byte elements, for ops that only move values. */
const void *interp_raw(interp *it, fu_tensor t);

/* n values of float tensor t from flat offset off: straight from its buffer,
 * or converted from the caller's input tensor into scratch (so a big input
 * read row by row by a composite is never widened to double as a whole).
 * Never fails. */
const double *interp_row(interp *it, fu_tensor t, int64_t off, int64_t n, double *scratch);

/* A fresh zeroed array for the node's output, owned by its slot: doubles for
 * a float output, int64 for the others (raw: either). NULL when out of memory
 * (it->err is set). */
double *interp_new_output(interp *it, const fu_node *n);
int64_t *interp_new_ioutput(interp *it, const fu_node *n);
void *interp_new_raw(interp *it, const fu_node *n);

/* n doubles of uninitialized scratch for the op named `what` (the caller
 * frees them). NULL when out of memory (it->err is set). */
double *interp_scratch_new(interp *it, int64_t n, const char *what);

/* Makes the node's output share the values of src (same numel). */
fu_status interp_alias(interp *it, const fu_node *n, fu_tensor src);

/* Rounds p[0..n) to float dtype dt in place. */
void interp_round(double *p, int64_t n, fu_dtype dt);
/* Brings int64 values to integer dtype dt in place: i32 wraps (two's
 * complement, as the GPU's and PyTorch's int32 arithmetic does), bool is 0/1. */
void interp_iround(int64_t *p, int64_t n, fu_dtype dt);

/* "op 'name' -> 'out': <message>", with the node's source location if any
 * (fu_node_error). */
fu_status interp_op_error(interp *it, const fu_node *n, fu_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Checks that every value of the index tensor idx (its n values in v) lies in
 * [0, bound), except values equal to `skip` when has_skip. The first bad one
 * gives FU_ERR_INDEX naming the op, output, index tensor, position and value. */
fu_status interp_check_index(interp *it, const fu_node *n, fu_tensor idx, const int64_t *v, int64_t count,
                             int64_t bound, bool has_skip, int64_t skip);

fu_status interp_exec_primitive(interp *it, const fu_node *n);
fu_status interp_exec_composite(interp *it, const fu_node *n);

#endif
