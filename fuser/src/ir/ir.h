/*
 * ir.h -- the fusion IR's layout, shared by the fuser's internal modules
 * (interpreter, segmenter, schedulers, codegen). Users see only fuser.h.
 *
 * A fusion is an SSA graph: tensors (values) and ops (nodes). Every op has one
 * output tensor; ops are stored in topological order because each builder call
 * may only use tensors that already exist.
 */
#ifndef FUSER_IR_H
#define FUSER_IR_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>

#include "fuser.h"
#include "util.h"

typedef struct fu_value {
    char name[FU_MAX_NAME];
    fu_dtype dtype;
    int rank;
    int64_t shape[FU_MAX_RANK];
    int64_t strides[FU_MAX_RANK]; /* elements; contiguous except strided inputs */
    int producer;                 /* index of the op that defines it; -1 for inputs */
    int input_index;              /* position among the inputs, or -1 */
} fu_value;

typedef struct fu_node {
    fu_op op;
    int ninputs;
    fu_tensor inputs[FU_MAX_OP_INPUTS];
    fu_attrs attrs;
    fu_tensor output;
    int line, column; /* source location, 0 when built from C */
} fu_node;

struct fu_fusion {
    char name[FU_MAX_NAME];
    char file[256]; /* source file for messages; "" when built from C */
    int cur_line, cur_column;

    fu_value *values;
    int nvalues, cap_values;
    fu_node *nodes;
    int nnodes, cap_nodes;
    fu_tensor *inputs;
    int ninputs, cap_inputs;
    fu_tensor *outputs;
    int noutputs, cap_outputs;

    fu_error first_error; /* sticky builder error; status FU_OK when none */
};

static inline const fu_value *fu_val(const fu_fusion *f, fu_tensor t) { return &f->values[t]; }
static inline bool fu_tensor_valid(const fu_fusion *f, fu_tensor t) { return t >= 0 && t < f->nvalues; }

/* Shape helpers. */
int64_t fu_shape_numel(int rank, const int64_t *shape);
void fu_shape_contiguous_strides(int rank, const int64_t *shape, int64_t *strides);

/* The largest tensor, in bytes: 2^48 (256 TiB), what x86-64 hosts and CUDA's
 * unified address space can address. Below it every element count, stride and
 * byte offset of a tensor fits in int64 with room to spare. */
#define FU_MAX_TENSOR_BYTES ((int64_t)1 << 48)
/* The product of the nonzero extents (so that the contiguous strides of a
 * zero-size shape fit too) into *out; false when it overflows int64. */
bool fu_shape_extent_product(int rank, const int64_t *shape, int64_t *out);
/* True when a tensor of this shape, strides (NULL: contiguous) and dtype can
 * exist: extents >= 0, every product in int64, the bytes it spans at most
 * FU_MAX_TENSOR_BYTES. Otherwise why (n bytes) says what is wrong. Every
 * tensor of a fusion is checked with it when it is created. */
bool fu_shape_fits(int rank, const int64_t *shape, const int64_t *strides, fu_dtype dtype, char *why, size_t n);
/* NumPy broadcast of two shapes; false if incompatible. */
bool fu_shape_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, int *rout, int64_t *out);
/* fu_shape_str ("[8192, 32768]") is public: fuser.h */

/* The shortest %g form of v that reads back (strtod) to the same double,
 * always with a '.', an exponent, inf or nan so that it reads back as a float
 * (integral values below 1e15 as N.0: -100.0, not -1e+02). Written into buf
 * (40 bytes are enough) and returned. The printer (print.c) and the program
 * text writer (program.c) share it: the print/parse round trip depends on it. */
const char *fu_format_double(double v, char *buf, size_t n);

/* Stores v as an int64 the way fu_round_to_dtype(v, FU_I64) rounds it:
 * truncated toward zero, saturated at INT64_MIN/INT64_MAX (2^63, the double
 * nearest INT64_MAX, stands for it), NaN as 0; never an undefined
 * out-of-range conversion. Inline: the interpreter stores every i64 output
 * element through it. */
static inline int64_t fu_f64_to_i64(double v)
{
    if (isnan(v)) return 0;
    if (v >= 0x1p63) return INT64_MAX;
    if (v <= -0x1p63) return INT64_MIN;
    return (int64_t)v; /* truncates */
}

/* Infers the output dtype and shape of an op from its operands and attrs and
 * checks them; on failure fills err naming the op, tensor and problem. Used by
 * the builder and by fu_fusion_verify. */
fu_status fu_infer(const fu_fusion *f, const fu_node *node, const char *out_name, fu_dtype *dtype,
                   int *rank, int64_t *shape, fu_error *err);

/* Which axes of a rank-`rank` operand the reduction attrs `at` reduce: the
 * listed axes, or all of them when none are listed. Axes outside [0, rank)
 * mark nothing (the builder rejects them before asking). */
static inline void fu_reduced_axes(const fu_attrs *at, int rank, bool reduced[FU_MAX_RANK])
{
    for (int i = 0; i < FU_MAX_RANK; i++) reduced[i] = at->naxes == 0 && i < rank;
    for (int i = 0; i < at->naxes && i < FU_MAX_RANK; i++)
        if (at->axes[i] >= 0 && at->axes[i] < rank) reduced[at->axes[i]] = true;
}

/* ------------------------------------------------------------ located errors
 *
 * Every message of the parser, builder, verifier and interpreter that points
 * into a source file starts with "FILE:LINE:COL: "; these write that prefix. */

/* Sets err (if not NULL) to "FILE:LINE:COL: " and the printf-style message;
 * returns s. FILE is "<input>" when file is NULL (an empty name is printed as
 * it is). The result is cut to fit err->message like fu_error_set's. */
fu_status fu_error_set_at(fu_error *err, fu_status s, const char *file, int line, int col, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;
fu_status fu_error_vset_at(fu_error *err, fu_status s, const char *file, int line, int col, const char *fmt,
                           va_list ap);

/* Copies e into dst (if not NULL), prefixed with "FILE:LINE:COL: " when
 * line > 0, FILE being f's source file or "<input>" when it has none (built
 * from C, or parsed without a file name); returns e->status. */
fu_status fu_error_locate(fu_error *dst, const fu_error *e, const fu_fusion *f, int line, int col);

/* "op 'OP' -> 'OUT': <message>" about node n of f (OUT its output's name),
 * located at the node's source position when it has one. The message part is
 * cut at 767 characters. The verifier and the interpreter report op errors
 * through it. */
fu_status fu_node_error(const fu_fusion *f, const fu_node *n, fu_error *err, fu_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;
fu_status fu_node_verror(const fu_fusion *f, const fu_node *n, fu_error *err, fu_status s, const char *fmt,
                         va_list ap);

/* True when op writes only where it is told to (segment_set: value no-op). */
const fu_node *fu_producer(const fu_fusion *f, fu_tensor t);

#endif
