/*
 * print.c -- fu_fusion_print: a concrete fusion in the text format
 * (docs/format.md) with every size a number, every attribute written as a
 * keyword in the order the parser lists them, and scalar constants as their
 * own `full(shape=[], ...)` statements, so that the text parses back (with
 * fu_program_parse and fu_program_build) to a fusion that prints the same.
 *
 * The attribute names here must match the parser's schemas in program.c; the
 * round-trip tests in tests/test_parse.c hold the two together.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

static void put_double(fu_strbuf *sb, double v)
{
    char buf[40];
    fu_sb_puts(sb, fu_format_double(v, buf, sizeof buf));
}

static void put_i64_list(fu_strbuf *sb, const char *key, int n, const int64_t *v)
{
    fu_sb_printf(sb, ", %s=[", key);
    for (int i = 0; i < n; i++) fu_sb_printf(sb, "%s%lld", i ? ", " : "", (long long)v[i]);
    fu_sb_puts(sb, "]");
}

static void put_int_list(fu_strbuf *sb, const char *key, int n, const int *v)
{
    fu_sb_printf(sb, ", %s=[", key);
    for (int i = 0; i < n; i++) fu_sb_printf(sb, "%s%d", i ? ", " : "", v[i]);
    fu_sb_puts(sb, "]");
}

static void put_padding(fu_strbuf *sb, int64_t padding_idx)
{
    if (padding_idx < 0) fu_sb_puts(sb, ", padding_idx=none");
    else fu_sb_printf(sb, ", padding_idx=%lld", (long long)padding_idx);
}

static void put_composite_attrs(fu_strbuf *sb, const fu_node *n)
{
    const fu_attrs *a = &n->attrs;
    switch (n->op) {
    case FU_OP_SOFTMAX:
    case FU_OP_LOG_SOFTMAX: fu_sb_printf(sb, ", axis=%d", a->axis); break;
    case FU_OP_CROSS_ENTROPY:
    case FU_OP_CROSS_ENTROPY_BWD:
        fu_sb_printf(sb, ", reduction=%s, ignore_index=%lld, label_smoothing=", fu_reduction_name(a->reduction),
                     (long long)a->ignore_index);
        put_double(sb, a->label_smoothing);
        break;
    case FU_OP_EMBEDDING: put_padding(sb, a->padding_idx); break;
    case FU_OP_EMBEDDING_BWD:
        fu_sb_printf(sb, ", num_weights=%lld", (long long)a->num_weights);
        put_padding(sb, a->padding_idx);
        break;
    default: break;
    }
}

/* The attributes of one op as ", key=value" pairs, in the parser's order. */
static void put_attrs(fu_strbuf *sb, const fu_fusion *f, const fu_node *n)
{
    const fu_attrs *a = &n->attrs;
    int xr = n->ninputs > 0 ? fu_val(f, n->inputs[0])->rank : 0;
    switch (fu_op_kind_of(n->op)) {
    case FU_KIND_CAST: fu_sb_printf(sb, ", dtype=%s", fu_dtype_name(a->dtype)); break;
    case FU_KIND_BROADCAST:
    case FU_KIND_RESHAPE: put_i64_list(sb, "shape", a->rank, a->shape); break;
    case FU_KIND_REDUCE:
        put_int_list(sb, "axes", a->naxes, a->axes);
        fu_sb_printf(sb, ", keepdim=%s", a->keepdim ? "true" : "false");
        break;
    case FU_KIND_PERMUTE: put_int_list(sb, "dims", xr, a->perm); break;
    case FU_KIND_SLICE:
        put_i64_list(sb, "start", xr, a->start);
        put_i64_list(sb, "stop", xr, a->stop);
        put_i64_list(sb, "step", xr, a->step);
        break;
    case FU_KIND_FULL:
        put_i64_list(sb, "shape", a->rank, a->shape);
        fu_sb_puts(sb, ", value=");
        if (!fu_dtype_is_float(a->dtype) && a->value == floor(a->value) && fabs(a->value) < 9e15)
            fu_sb_printf(sb, "%lld", (long long)a->value); /* integer constants read as integers; -0 is 0 */
        else put_double(sb, a->value);
        fu_sb_printf(sb, ", dtype=%s", fu_dtype_name(a->dtype));
        break;
    case FU_KIND_IOTA:
        put_i64_list(sb, "shape", a->rank, a->shape);
        fu_sb_printf(sb, ", axis=%d, dtype=%s", a->axis, fu_dtype_name(a->dtype));
        break;
    case FU_KIND_GATHER:
    case FU_KIND_SCATTER: fu_sb_printf(sb, ", axis=%d", a->axis); break;
    case FU_KIND_COMPOSITE: put_composite_attrs(sb, n); break;
    default: break;
    }
}

static void put_input(fu_strbuf *sb, const fu_value *v)
{
    char buf[256];
    fu_sb_printf(sb, "input %s: %s%s", v->name, fu_dtype_name(v->dtype), fu_shape_str(v->rank, v->shape, buf, sizeof buf));
    int64_t contiguous[FU_MAX_RANK];
    fu_shape_contiguous_strides(v->rank, v->shape, contiguous);
    if (v->rank > 0 && memcmp(contiguous, v->strides, (size_t)v->rank * sizeof *contiguous) != 0)
        fu_sb_printf(sb, "  # strides %s (not expressible in the text format)",
                     fu_shape_str(v->rank, v->strides, buf, sizeof buf));
    fu_sb_puts(sb, "\n");
}

char *fu_fusion_print(const fu_fusion *f)
{
    if (!f) return NULL;
    fu_strbuf sb;
    fu_sb_init(&sb);
    fu_sb_printf(&sb, "fusion %s\n", f->name);
    for (int i = 0; i < f->ninputs; i++) put_input(&sb, fu_val(f, f->inputs[i]));
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        fu_sb_printf(&sb, "%s = %s(", fu_val(f, n->output)->name, fu_op_name(n->op));
        for (int k = 0; k < n->ninputs; k++)
            fu_sb_printf(&sb, "%s%s", k ? ", " : "", fu_tensor_valid(f, n->inputs[k]) ? fu_val(f, n->inputs[k])->name : "?");
        /* ops without tensor operands start their attribute list without a comma */
        size_t mark = sb.len;
        put_attrs(&sb, f, n);
        if (n->ninputs == 0 && !sb.failed && sb.len >= mark + 2) {
            memmove(sb.data + mark, sb.data + mark + 2, sb.len - mark - 1);
            sb.len -= 2;
        }
        fu_sb_puts(&sb, ")\n");
    }
    for (int i = 0; i < f->noutputs; i++) fu_sb_printf(&sb, "%s%s", i ? ", " : "output ", fu_val(f, f->outputs[i])->name);
    if (f->noutputs) fu_sb_puts(&sb, "\n");
    return fu_sb_take(&sb);
}
