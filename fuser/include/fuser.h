/*
 * fuser.h -- the one public header of the fuser.
 *
 * A fusion is a small graph of tensor ops with named inputs and outputs. It is
 * written in a text format (see the .fusion files under suites/ and docs/format.md) or built
 * with the C API below, verified, then run on the CPU reference interpreter or
 * (through the segmenter, schedulers, code generator and runtime) on a GPU.
 *
 * Worked example: cross entropy on the CPU interpreter.
 *
 *     fu_error err;
 *     fu_fusion *f = fu_fusion_new("ce");
 *     int64_t xs[2] = {4, 7}, ts[1] = {4};
 *     fu_tensor x = fu_input(f, "logits", FU_F32, 2, xs);
 *     fu_tensor t = fu_input(f, "target", FU_I64, 1, ts);
 *     fu_tensor loss = fu_cross_entropy(f, x, t, FU_REDUCTION_MEAN, -100, 0.0, "loss");
 *     fu_output(f, loss);
 *     if (fu_fusion_verify(f, &err) != FU_OK) { puts(err.message); ... }
 *     fu_host_tensor in[2] = {...}, out[1];
 *     fu_interp_run(f, in, out, &err);
 *
 * Conventions: every public name starts with fu_ / FU_. Handles are opaque.
 * Functions that can fail return fu_status and fill a caller-owned fu_error
 * whose message names the op, the tensor and the problem. Builder calls
 * (fu_add, fu_slice, ...) return a tensor id, or -1 on error; the first error
 * is kept in the fusion and reported by fu_fusion_verify, so a chain of
 * builder calls needs one check at the end. There is no global mutable state.
 */
#ifndef FUSER_H
#define FUSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FU_MAX_RANK 8
#define FU_MAX_NAME 64
#define FU_MAX_OP_INPUTS 4

/* ---------------------------------------------------------------- status */

typedef enum fu_status {
    FU_OK = 0,
    FU_ERR_ARG,       /* bad argument to an API call or command line */
    FU_ERR_PARSE,     /* malformed fusion text */
    FU_ERR_VERIFY,    /* well-formed text, invalid fusion (shape, dtype, axis...) */
    FU_ERR_INDEX,     /* an index value out of range at run time */
    FU_ERR_IO,        /* file could not be read or written */
    FU_ERR_NOMEM,     /* allocation failed */
    FU_ERR_RUNTIME,   /* driver, NVRTC or kernel failure */
    FU_ERR_NO_DEVICE, /* no GPU or no driver where one is needed */
    FU_ERR_UNSUPPORTED
} fu_status;

typedef struct fu_error {
    fu_status status;
    char message[1024];
} fu_error;

const char *fu_status_name(fu_status s);
/* Fills err (if not NULL) with a printf-style message; returns s. */
fu_status fu_error_set(fu_error *err, fu_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---------------------------------------------------------------- dtypes */

/* ORDER fu_dtype: must match the table in src/ir/dtype.c */
typedef enum fu_dtype {
    FU_F32 = 0,
    FU_F16,
    FU_BF16,
    FU_F64,
    FU_I32,
    FU_I64,
    FU_BOOL,
    FU_DTYPE_COUNT
} fu_dtype;

const char *fu_dtype_name(fu_dtype t);               /* "f32", "bf16", ... */
bool fu_dtype_from_name(const char *name, fu_dtype *out);
size_t fu_dtype_size(fu_dtype t);                    /* bytes per element */
bool fu_dtype_is_float(fu_dtype t);
bool fu_dtype_is_int(fu_dtype t);                    /* i32, i64 (not bool) */
/* A shape as "[8192, 32768]" into buf (cut short if n is too small); returns buf. */
const char *fu_shape_str(int rank, const int64_t *shape, char *buf, size_t n);
/* s as a quoted JSON string (malloc'd; free with free()), or NULL when out of memory. */
char *fu_json_quote(const char *s);

/* Rounds a double to the nearest value representable in t (round to nearest
 * even for f32/f16/bf16, as PyTorch does; truncation toward zero for ints,
 * saturated at the int's range, NaN as 0; 0/1 for bool). */
double fu_round_to_dtype(double v, fu_dtype t);
uint16_t fu_f64_to_bf16(double v);
uint16_t fu_f64_to_f16(double v);
float fu_bf16_to_f32(uint16_t bits);
float fu_f16_to_f32(uint16_t bits);

/* --------------------------------------------------------------- ops */

typedef enum fu_op_kind {
    FU_KIND_UNARY,
    FU_KIND_BINARY,
    FU_KIND_WHERE,
    FU_KIND_CAST,
    FU_KIND_BROADCAST,
    FU_KIND_REDUCE,
    FU_KIND_RESHAPE,
    FU_KIND_PERMUTE,
    FU_KIND_SLICE,
    FU_KIND_FULL,
    FU_KIND_IOTA,
    FU_KIND_GATHER,   /* index_select, take, take_along_axis */
    FU_KIND_SCATTER,  /* index_add, scatter_add */
    FU_KIND_COMPOSITE,
    FU_KIND_HINT      /* segment_set */
} fu_op_kind;

/*
 * The op table. X(ENUM, "text name", kind, number of tensor operands).
 * ORDER fu_op: src/ir/ops.c builds its table from this list, so tables
 * cannot drift.
 *
 * Composites (softmax, log_softmax, cross_entropy, cross_entropy_backward,
 * embedding, embedding_backward) are kept whole in the IR: the interpreter
 * evaluates them directly in double precision (accurate and fast enough for
 * [8192, 32768] in seconds), and fu_fusion_decompose() expands them into the
 * primitives above them in the list before the GPU schedulers see the fusion,
 * so a cross entropy written by hand gets the same kernel as the composite.
 */
#define FU_OP_LIST(X)                                         \
    /* pointwise unary */                                     \
    X(NEG, "neg", FU_KIND_UNARY, 1)                           \
    X(ABS, "abs", FU_KIND_UNARY, 1)                           \
    X(EXP, "exp", FU_KIND_UNARY, 1)                           \
    X(LOG, "log", FU_KIND_UNARY, 1)                           \
    X(LOG1P, "log1p", FU_KIND_UNARY, 1)                       \
    X(SQRT, "sqrt", FU_KIND_UNARY, 1)                         \
    X(RSQRT, "rsqrt", FU_KIND_UNARY, 1)                       \
    X(TANH, "tanh", FU_KIND_UNARY, 1)                         \
    X(SIGMOID, "sigmoid", FU_KIND_UNARY, 1)                   \
    X(RECIPROCAL, "reciprocal", FU_KIND_UNARY, 1)             \
    X(LOGICAL_NOT, "logical_not", FU_KIND_UNARY, 1)           \
    /* pointwise binary, NumPy broadcasting */                \
    X(ADD, "add", FU_KIND_BINARY, 2)                          \
    X(SUB, "sub", FU_KIND_BINARY, 2)                          \
    X(MUL, "mul", FU_KIND_BINARY, 2)                          \
    X(DIV, "div", FU_KIND_BINARY, 2)                          \
    X(MAX, "maximum", FU_KIND_BINARY, 2)                      \
    X(MIN, "minimum", FU_KIND_BINARY, 2)                      \
    X(POW, "pow", FU_KIND_BINARY, 2)                          \
    X(EQ, "eq", FU_KIND_BINARY, 2)                            \
    X(NE, "ne", FU_KIND_BINARY, 2)                            \
    X(LT, "lt", FU_KIND_BINARY, 2)                            \
    X(LE, "le", FU_KIND_BINARY, 2)                            \
    X(GT, "gt", FU_KIND_BINARY, 2)                            \
    X(GE, "ge", FU_KIND_BINARY, 2)                            \
    X(LOGICAL_AND, "logical_and", FU_KIND_BINARY, 2)          \
    X(LOGICAL_OR, "logical_or", FU_KIND_BINARY, 2)            \
    X(WHERE, "where", FU_KIND_WHERE, 3)                       \
    X(CAST, "cast", FU_KIND_CAST, 1)                          \
    /* shape */                                               \
    X(BROADCAST, "broadcast", FU_KIND_BROADCAST, 1)           \
    X(SUM, "sum", FU_KIND_REDUCE, 1)                          \
    X(RMAX, "max", FU_KIND_REDUCE, 1)                         \
    X(RMIN, "min", FU_KIND_REDUCE, 1)                         \
    X(MEAN, "mean", FU_KIND_REDUCE, 1)                        \
    X(RESHAPE, "reshape", FU_KIND_RESHAPE, 1)                 \
    X(PERMUTE, "permute", FU_KIND_PERMUTE, 1)                 \
    X(SLICE, "slice", FU_KIND_SLICE, 1)                       \
    X(FULL, "full", FU_KIND_FULL, 0)                          \
    X(IOTA, "iota", FU_KIND_IOTA, 0)                          \
    /* gather / scatter */                                    \
    X(INDEX_SELECT, "index_select", FU_KIND_GATHER, 2)        \
    X(TAKE, "take", FU_KIND_GATHER, 2)                        \
    X(TAKE_ALONG_AXIS, "take_along_axis", FU_KIND_GATHER, 2)  \
    X(INDEX_ADD, "index_add", FU_KIND_SCATTER, 3)             \
    X(SCATTER_ADD, "scatter_add", FU_KIND_SCATTER, 3)         \
    /* composites */                                          \
    X(SOFTMAX, "softmax", FU_KIND_COMPOSITE, 1)               \
    X(LOG_SOFTMAX, "log_softmax", FU_KIND_COMPOSITE, 1)       \
    X(CROSS_ENTROPY, "cross_entropy", FU_KIND_COMPOSITE, 2)   \
    X(CROSS_ENTROPY_BWD, "cross_entropy_backward", FU_KIND_COMPOSITE, 3) \
    X(EMBEDDING, "embedding", FU_KIND_COMPOSITE, 2)           \
    X(EMBEDDING_BWD, "embedding_backward", FU_KIND_COMPOSITE, 2) \
    /* hints */                                               \
    X(SEGMENT_SET, "segment_set", FU_KIND_HINT, 1)

typedef enum fu_op {
#define FU_OP_ENUM(e, name, kind, arity) FU_OP_##e,
    FU_OP_LIST(FU_OP_ENUM)
#undef FU_OP_ENUM
    FU_OP_COUNT
} fu_op;

const char *fu_op_name(fu_op op);
bool fu_op_from_name(const char *name, fu_op *out);
fu_op_kind fu_op_kind_of(fu_op op);
int fu_op_arity(fu_op op);

typedef enum fu_reduction {
    FU_REDUCTION_NONE = 0,
    FU_REDUCTION_MEAN,
    FU_REDUCTION_SUM
} fu_reduction;
const char *fu_reduction_name(fu_reduction r);       /* "none", "mean", "sum" */
bool fu_reduction_from_name(const char *name, fu_reduction *out);

/*
 * Attributes of an op; each op reads the fields its comment names, the others
 * stay zero. Shapes and index lists are int64 so sizes above 2^31 are exact.
 */
typedef struct fu_attrs {
    int axis;                          /* gather/scatter, iota, softmax */
    int naxes;                         /* reductions: axes reduced */
    int axes[FU_MAX_RANK];
    bool keepdim;                      /* reductions */
    int rank;                          /* broadcast, reshape, full, iota: target shape */
    int64_t shape[FU_MAX_RANK];
    int perm[FU_MAX_RANK];             /* permute: output axis i is input axis perm[i] */
    int64_t start[FU_MAX_RANK];        /* slice, one per input axis */
    int64_t stop[FU_MAX_RANK];
    int64_t step[FU_MAX_RANK];
    fu_dtype dtype;                    /* cast, full, iota */
    double value;                      /* full */
    fu_reduction reduction;            /* cross_entropy(_backward) */
    int64_t ignore_index;              /* cross_entropy(_backward); torch default -100 */
    double label_smoothing;            /* cross_entropy(_backward) */
    int64_t padding_idx;               /* embedding(_backward); -1 = none */
    int64_t num_weights;               /* embedding_backward: rows of the weight */
} fu_attrs;

/* ---------------------------------------------------------------- fusions */

typedef struct fu_fusion fu_fusion;
typedef int fu_tensor; /* id of a tensor in its fusion; -1 = invalid */

fu_fusion *fu_fusion_new(const char *name);
void fu_fusion_free(fu_fusion *f);
fu_fusion *fu_fusion_clone(const fu_fusion *f);
const char *fu_fusion_name(const fu_fusion *f);

/* Source location attached to the ops built next (the parser sets it so that
 * verifier messages point at file:line:column). line 0 = none. */
void fu_fusion_set_location(fu_fusion *f, const char *file, int line, int column);

/* Inputs are contiguous unless strides are given (in elements). */
fu_tensor fu_input(fu_fusion *f, const char *name, fu_dtype dtype, int rank, const int64_t *shape);
fu_tensor fu_input_strided(fu_fusion *f, const char *name, fu_dtype dtype, int rank,
                           const int64_t *shape, const int64_t *strides);
void fu_output(fu_fusion *f, fu_tensor t);

/* Generic builder: every named builder below is a thin wrapper over it.
 * name may be NULL (an automatic "tN" name is given). */
fu_tensor fu_add_op(fu_fusion *f, fu_op op, int ninputs, const fu_tensor *inputs,
                    const fu_attrs *attrs, const char *name);

fu_tensor fu_unary(fu_fusion *f, fu_op op, fu_tensor x, const char *name);
fu_tensor fu_binary(fu_fusion *f, fu_op op, fu_tensor a, fu_tensor b, const char *name);
fu_tensor fu_where(fu_fusion *f, fu_tensor cond, fu_tensor a, fu_tensor b, const char *name);
fu_tensor fu_cast(fu_fusion *f, fu_tensor x, fu_dtype dtype, const char *name);
fu_tensor fu_broadcast(fu_fusion *f, fu_tensor x, int rank, const int64_t *shape, const char *name);
fu_tensor fu_reduce(fu_fusion *f, fu_op op, fu_tensor x, int naxes, const int *axes, bool keepdim,
                    const char *name);
fu_tensor fu_reshape(fu_fusion *f, fu_tensor x, int rank, const int64_t *shape, const char *name);
fu_tensor fu_permute(fu_fusion *f, fu_tensor x, const int *perm, const char *name);
fu_tensor fu_slice(fu_fusion *f, fu_tensor x, const int64_t *start, const int64_t *stop,
                   const int64_t *step, const char *name);
fu_tensor fu_full(fu_fusion *f, int rank, const int64_t *shape, double value, fu_dtype dtype,
                  const char *name);
fu_tensor fu_iota(fu_fusion *f, int rank, const int64_t *shape, int axis, fu_dtype dtype,
                  const char *name);
fu_tensor fu_index_select(fu_fusion *f, fu_tensor x, fu_tensor index, int axis, const char *name);
fu_tensor fu_take(fu_fusion *f, fu_tensor x, fu_tensor index, int axis, const char *name);
fu_tensor fu_take_along_axis(fu_fusion *f, fu_tensor x, fu_tensor index, int axis, const char *name);
fu_tensor fu_index_add(fu_fusion *f, fu_tensor x, fu_tensor index, fu_tensor src, int axis,
                       const char *name);
fu_tensor fu_scatter_add(fu_fusion *f, fu_tensor x, fu_tensor index, fu_tensor src, int axis,
                         const char *name);
fu_tensor fu_softmax(fu_fusion *f, fu_tensor x, int axis, const char *name);
fu_tensor fu_log_softmax(fu_fusion *f, fu_tensor x, int axis, const char *name);
fu_tensor fu_cross_entropy(fu_fusion *f, fu_tensor logits, fu_tensor target, fu_reduction reduction,
                           int64_t ignore_index, double label_smoothing, const char *name);
fu_tensor fu_cross_entropy_backward(fu_fusion *f, fu_tensor logits, fu_tensor target,
                                    fu_tensor grad_loss, fu_reduction reduction,
                                    int64_t ignore_index, double label_smoothing, const char *name);
fu_tensor fu_embedding(fu_fusion *f, fu_tensor weight, fu_tensor ids, int64_t padding_idx,
                       const char *name);
fu_tensor fu_embedding_backward(fu_fusion *f, fu_tensor grad, fu_tensor ids, int64_t num_weights,
                                int64_t padding_idx, const char *name);
fu_tensor fu_segment_set(fu_fusion *f, fu_tensor x, const char *name);

/* Checks the whole fusion (every op's shapes, dtypes, axes and bounds; at
 * least one output; unique names). Returns the first builder error if any. */
fu_status fu_fusion_verify(const fu_fusion *f, fu_error *err);

/* Introspection. */
int fu_fusion_num_tensors(const fu_fusion *f);
int fu_fusion_num_inputs(const fu_fusion *f);
int fu_fusion_num_outputs(const fu_fusion *f);
int fu_fusion_num_ops(const fu_fusion *f);
fu_tensor fu_fusion_input(const fu_fusion *f, int i);
fu_tensor fu_fusion_output(const fu_fusion *f, int i);
fu_tensor fu_fusion_find(const fu_fusion *f, const char *name); /* -1 if absent */
const char *fu_tensor_name(const fu_fusion *f, fu_tensor t);
fu_dtype fu_tensor_dtype(const fu_fusion *f, fu_tensor t);
int fu_tensor_rank(const fu_fusion *f, fu_tensor t);
const int64_t *fu_tensor_shape(const fu_fusion *f, fu_tensor t);
int64_t fu_tensor_numel(const fu_fusion *f, fu_tensor t);

/* For an integer input used as an index (directly or through reshape,
 * permute, slice, cast, broadcast, segment_set), the exclusive upper bound of
 * valid values (the smallest indexed extent); 0 if it is not used as an index.
 * Random input generation uses it. */
int64_t fu_fusion_index_bound(const fu_fusion *f, fu_tensor input);

/* Prints the fusion in the text format with every size a number. malloc'd. */
char *fu_fusion_print(const fu_fusion *f);

/* Expands composites into primitives (a new, verified fusion with the same
 * inputs and outputs by name). */
fu_status fu_fusion_decompose(const fu_fusion *f, fu_fusion **out, fu_error *err);

/* The fewest bytes one perfect kernel must move for f: every input read once,
 * every output written once; a gathered input counted by the rows its index
 * selects, a sliced input by the part it keeps; scalars (rank 0) left out.
 * -1 when out of memory. (src/analysis/bytes.c says each rule.) */
int64_t fu_fusion_min_bytes(const fu_fusion *f);

/* ---------------------------------------------------------------- text format */

/*
 * A program is a parsed fusion file: size parameters with defaults, and
 * statements whose sizes are integer expressions over the parameters. It is
 * printed back canonically (print(parse(text)) round-trips) and built into a
 * fusion once the parameters are bound.
 */
typedef struct fu_program fu_program;

typedef struct fu_param_value {
    const char *name;
    const char *value; /* an integer ("8192") or, for a dtype parameter, a dtype ("bf16") */
} fu_param_value;

fu_status fu_program_parse(const char *text, const char *filename, fu_program **out, fu_error *err);
fu_status fu_program_parse_file(const char *path, fu_program **out, fu_error *err);
void fu_program_free(fu_program *p);
char *fu_program_print(const fu_program *p); /* malloc'd canonical text */
const char *fu_program_name(const fu_program *p);
int fu_program_num_params(const fu_program *p);
const char *fu_program_param_name(const fu_program *p, int i);
bool fu_program_param_is_dtype(const fu_program *p, int i);
/* The default as written: "8192" or "f32". */
const char *fu_program_param_default(const fu_program *p, int i);
/* Binds the parameters (defaults, then overrides; an override naming no
 * parameter, or of the wrong kind, is an error), then builds and verifies the
 * fusion. Errors carry file:line:column. */
fu_status fu_program_build(const fu_program *p, const fu_param_value *overrides, int noverrides,
                           fu_fusion **out, fu_error *err);

/* fu_fusion_min_bytes of the program built with `bound` as a formula over its
 * parameters, e.g. "2*N*V*elem + 8*N" (elem: the bytes of an element of its
 * dtype parameter); the number itself where the count is not a product of
 * powers of the parameters. Errors are the build's. */
fu_status fu_program_bytes_formula(const fu_program *p, const fu_param_value *bound, int nbound, char *out,
                                   size_t cap, fu_error *err);

/* ---------------------------------------------------------------- host tensors */

/* A dense, contiguous, row-major host array. f16/bf16 elements are stored as
 * their 16-bit patterns, bool as one byte (0 or 1). */
typedef struct fu_host_tensor {
    fu_dtype dtype;
    int rank;
    int64_t shape[FU_MAX_RANK];
    void *data;
} fu_host_tensor;

fu_status fu_host_tensor_alloc(fu_host_tensor *t, fu_dtype dtype, int rank, const int64_t *shape,
                               fu_error *err);
void fu_host_tensor_free(fu_host_tensor *t);
int64_t fu_host_tensor_numel(const fu_host_tensor *t);
size_t fu_host_tensor_bytes(const fu_host_tensor *t);
double fu_host_tensor_get(const fu_host_tensor *t, int64_t flat_index);
void fu_host_tensor_set(fu_host_tensor *t, int64_t flat_index, double v); /* rounds to dtype */
/* Converts src into a new tensor of dtype (float<->float rounds to nearest
 * even; int<->int checks range; float<->int and bool<->other are errors).
 * `what` names the tensor in the message. */
fu_status fu_host_tensor_convert(const fu_host_tensor *src, fu_dtype dtype, fu_host_tensor *dst,
                                 const char *what, fu_error *err);

/* NumPy .npy (format 1.0-3.0, little endian, C order): f64, f32, f16, i32,
 * i64, bool, plus u8/i8/i16 read as their widened ints. */
fu_status fu_npy_read(const char *path, fu_host_tensor *out, fu_error *err);
/* Writes go to a temporary beside the file, renamed into place at the end: on
 * failure every file that existed is as it was. */
fu_status fu_npy_write(const char *path, const fu_host_tensor *t, fu_error *err);
/* Writes n tensors to n files, all or none (see fu_npy_write). */
fu_status fu_npy_write_many(int n, const char *const *paths, const fu_host_tensor *const *tensors, fu_error *err);

/* Seeded random inputs for every input of f, shaped as declared: normal(0,1)
 * for floats, uniform in [0, fu_fusion_index_bound) for index inputs, in
 * [0, 10) for other ints, 0/1 for bool. Same seed, same values. */
fu_status fu_random_inputs(const fu_fusion *f, uint64_t seed, fu_host_tensor *inputs, fu_error *err);

/* ---------------------------------------------------------------- interpreter */

/* Runs a verified fusion on the CPU. inputs[i] matches fu_fusion_input(f, i)
 * in dtype and shape; outputs[i] is allocated here (free each with
 * fu_host_tensor_free). On error nothing is left allocated. */
fu_status fu_interp_run(const fu_fusion *f, const fu_host_tensor *inputs, fu_host_tensor *outputs,
                        fu_error *err);

#ifdef __cplusplus
}
#endif
#endif /* FUSER_H */
