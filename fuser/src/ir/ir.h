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
/* NumPy broadcast of two shapes; false if incompatible. */
bool fu_shape_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, int *rout, int64_t *out);
/* "[8192, 32768]" into buf. */
const char *fu_shape_str(int rank, const int64_t *shape, char *buf, size_t n);

/* Infers the output dtype and shape of an op from its operands and attrs and
 * checks them; on failure fills err naming the op, tensor and problem. Used by
 * the builder and by fu_fusion_verify. */
fu_status fu_infer(const fu_fusion *f, const fu_node *node, const char *out_name, fu_dtype *dtype,
                   int *rank, int64_t *shape, fu_error *err);

/* True when op writes only where it is told to (segment_set: value no-op). */
const fu_node *fu_producer(const fu_fusion *f, fu_tensor t);

#endif
