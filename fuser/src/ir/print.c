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

/* An op's attribute list being written: ", " goes before every key but the
 * first when the op has no tensor operands (`full(shape=[], ...)`). */
typedef struct attr_out {
    fu_strbuf *sb;
    bool first;
} attr_out;

/* Starts the next attribute: "key=" (", key=" after another item). */
static void put_key(attr_out *o, const char *key)
{
    fu_sb_printf(o->sb, "%s%s=", o->first ? "" : ", ", key);
    o->first = false;
}

static void put_i64_list(attr_out *o, const char *key, int n, const int64_t *v)
{
    put_key(o, key);
    fu_sb_puts(o->sb, "[");
    for (int i = 0; i < n; i++) fu_sb_printf(o->sb, "%s%lld", i ? ", " : "", (long long)v[i]);
    fu_sb_puts(o->sb, "]");
}

static void put_int_list(attr_out *o, const char *key, int n, const int *v)
{
    put_key(o, key);
    fu_sb_puts(o->sb, "[");
    for (int i = 0; i < n; i++) fu_sb_printf(o->sb, "%s%d", i ? ", " : "", v[i]);
    fu_sb_puts(o->sb, "]");
}

static void put_int(attr_out *o, const char *key, long long v)
{
    put_key(o, key);
    fu_sb_printf(o->sb, "%lld", v);
}

static void put_word(attr_out *o, const char *key, const char *word)
{
    put_key(o, key);
    fu_sb_puts(o->sb, word);
}

static void put_padding(attr_out *o, int64_t padding_idx)
{
    if (padding_idx < 0) put_word(o, "padding_idx", "none");
    else put_int(o, "padding_idx", (long long)padding_idx);
}

static void put_composite_attrs(attr_out *o, const fu_node *n)
{
    const fu_attrs *a = &n->attrs;
    switch (n->op) {
    case FU_OP_SOFTMAX:
    case FU_OP_LOG_SOFTMAX: put_int(o, "axis", a->axis); break;
    case FU_OP_CROSS_ENTROPY:
    case FU_OP_CROSS_ENTROPY_BWD:
        put_word(o, "reduction", fu_reduction_name(a->reduction));
        put_int(o, "ignore_index", (long long)a->ignore_index);
        put_key(o, "label_smoothing");
        put_double(o->sb, a->label_smoothing);
        break;
    case FU_OP_EMBEDDING: put_padding(o, a->padding_idx); break;
    case FU_OP_EMBEDDING_BWD:
        put_int(o, "num_weights", (long long)a->num_weights);
        put_padding(o, a->padding_idx);
        break;
    default: break;
    }
}

/* The attributes of one op as key=value pairs, in the parser's order, each
 * after ", " unless it opens the argument list. */
static void put_attrs(fu_strbuf *sb, const fu_fusion *f, const fu_node *n)
{
    attr_out o = {sb, n->ninputs == 0};
    const fu_attrs *a = &n->attrs;
    int xr = n->ninputs > 0 ? fu_val(f, n->inputs[0])->rank : 0;
    switch (fu_op_kind_of(n->op)) {
    case FU_KIND_CAST: put_word(&o, "dtype", fu_dtype_name(a->dtype)); break;
    case FU_KIND_BROADCAST:
    case FU_KIND_RESHAPE: put_i64_list(&o, "shape", a->rank, a->shape); break;
    case FU_KIND_REDUCE:
        put_int_list(&o, "axes", a->naxes, a->axes);
        put_word(&o, "keepdim", a->keepdim ? "true" : "false");
        break;
    case FU_KIND_PERMUTE: put_int_list(&o, "dims", xr, a->perm); break;
    case FU_KIND_SLICE:
        put_i64_list(&o, "start", xr, a->start);
        put_i64_list(&o, "stop", xr, a->stop);
        put_i64_list(&o, "step", xr, a->step);
        break;
    case FU_KIND_FULL:
        put_i64_list(&o, "shape", a->rank, a->shape);
        put_key(&o, "value");
        if (!fu_dtype_is_float(a->dtype) && a->value == floor(a->value) && fabs(a->value) < 9e15)
            fu_sb_printf(sb, "%lld", (long long)a->value); /* integer constants read as integers; -0 is 0 */
        else put_double(sb, a->value);
        put_word(&o, "dtype", fu_dtype_name(a->dtype));
        break;
    case FU_KIND_IOTA:
        put_i64_list(&o, "shape", a->rank, a->shape);
        put_int(&o, "axis", a->axis);
        put_word(&o, "dtype", fu_dtype_name(a->dtype));
        break;
    case FU_KIND_GATHER:
    case FU_KIND_SCATTER: put_int(&o, "axis", a->axis); break;
    case FU_KIND_COMPOSITE: put_composite_attrs(&o, n); break;
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
        put_attrs(&sb, f, n);
        fu_sb_puts(&sb, ")\n");
    }
    for (int i = 0; i < f->noutputs; i++) fu_sb_printf(&sb, "%s%s", i ? ", " : "output ", fu_val(f, f->outputs[i])->name);
    if (f->noutputs) fu_sb_puts(&sb, "\n");
    return fu_sb_take(&sb);
}
