/* ops.c -- the op table, built from FU_OP_LIST so that names, kinds and
 * arities are defined once. */
#include <string.h>

#include "fuser.h"

typedef struct op_info {
    const char *name;
    fu_op_kind kind;
    int arity;
} op_info;

static const op_info op_table[] = {
#define FU_OP_ROW(e, name, kind, arity) [FU_OP_##e] = {name, kind, arity},
    FU_OP_LIST(FU_OP_ROW)
#undef FU_OP_ROW
};
_Static_assert(sizeof op_table / sizeof op_table[0] == FU_OP_COUNT, "op table out of date");

const char *fu_op_name(fu_op op) { return (unsigned)op < FU_OP_COUNT ? op_table[op].name : "?"; }
fu_op_kind fu_op_kind_of(fu_op op) { return op_table[op].kind; }
int fu_op_arity(fu_op op) { return op_table[op].arity; }

bool fu_op_from_name(const char *name, fu_op *out)
{
    for (int i = 0; i < FU_OP_COUNT; i++)
        if (strcmp(name, op_table[i].name) == 0) { *out = (fu_op)i; return true; }
    return false;
}

static const char *const reduction_names[] = {
    [FU_REDUCTION_NONE] = "none", [FU_REDUCTION_MEAN] = "mean", [FU_REDUCTION_SUM] = "sum"};

const char *fu_reduction_name(fu_reduction r)
{
    return (unsigned)r <= FU_REDUCTION_SUM ? reduction_names[r] : "?";
}

bool fu_reduction_from_name(const char *name, fu_reduction *out)
{
    for (int i = 0; i <= FU_REDUCTION_SUM; i++)
        if (strcmp(name, reduction_names[i]) == 0) { *out = (fu_reduction)i; return true; }
    return false;
}
