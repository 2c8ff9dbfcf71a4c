/*
 * segment.c -- the segmenter: decomposes and simplifies a fusion, then splits
 * it into the fewest kernels the schedulers take.
 *
 * 1. Composites are expanded (fu_fusion_decompose); identical ops are merged
 *    and dead ops dropped (so a fused forward+backward computes its row
 *    statistics once).
 * 2. segment_set outputs start a new level: everything that reads one runs in
 *    a later kernel.
 * 3. Each level is offered whole to the scatter, reduction and pointwise
 *    schedulers. If none takes it, it is split at its reductions and
 *    scatters (their results materialized) and each part offered again; as a
 *    last resort every op becomes its own kernel, which the schedulers always
 *    take.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "reduce_common.h"

static const char *const sched_names[] = {
    [FU_SCHED_POINTWISE] = "pointwise", [FU_SCHED_REDUCTION] = "reduction", [FU_SCHED_SCATTER] = "scatter"};

const char *fu_sched_name(fu_sched s) { return (unsigned)s <= FU_SCHED_SCATTER ? sched_names[s] : "?"; }

void fu_plan_options_default(fu_plan_options *o)
{
    o->sm_count = 132;
    o->max_threads_per_sm = 2048;
    o->max_shared_per_block = 227 * 1024;
    o->max_shared_per_sm = 228 * 1024;
    o->reserved_shared_per_block = 1024;
    o->scatter = FU_SCATTER_DETERMINISTIC;
}

/* ------------------------------------------------------------ simplify */

static bool same_attrs(fu_op op, const fu_attrs *a, const fu_attrs *b)
{
    if (a->axis != b->axis || a->naxes != b->naxes || a->keepdim != b->keepdim || a->rank != b->rank ||
        a->dtype != b->dtype || a->reduction != b->reduction || a->ignore_index != b->ignore_index ||
        a->padding_idx != b->padding_idx || a->num_weights != b->num_weights)
        return false;
    if (memcmp(&a->value, &b->value, sizeof a->value) || memcmp(&a->label_smoothing, &b->label_smoothing, sizeof(double)))
        return false;
    for (int i = 0; i < FU_MAX_RANK; i++)
        if (a->axes[i] != b->axes[i] || a->shape[i] != b->shape[i] || a->perm[i] != b->perm[i] ||
            a->start[i] != b->start[i] || a->stop[i] != b->stop[i] || a->step[i] != b->step[i])
            return false;
    (void)op;
    return true;
}

static bool is_output(const fu_fusion *f, fu_tensor t)
{
    for (int i = 0; i < f->noutputs; i++)
        if (f->outputs[i] == t) return true;
    return false;
}

/* Common-subexpression and dead-op elimination into a new fusion. */
static fu_status simplify(const fu_fusion *f, fu_fusion **out, fu_error *err)
{
    bool *live = fu_calloc((size_t)f->nvalues, sizeof *live);
    fu_tensor *map = fu_calloc((size_t)f->nvalues, sizeof *map);
    fu_fusion *d = fu_fusion_new(f->name);
    if (!live || !map || !d) {
        fu_free(live);
        fu_free(map);
        fu_fusion_free(d);
        return fu_error_set(err, FU_ERR_NOMEM, "out of memory simplifying '%s'", f->name);
    }
    for (int i = 0; i < f->noutputs; i++) live[f->outputs[i]] = true;
    for (int i = f->nnodes - 1; i >= 0; i--)
        if (live[f->nodes[i].output])
            for (int k = 0; k < f->nodes[i].ninputs; k++) live[f->nodes[i].inputs[k]] = true;
    for (int i = 0; i < f->ninputs; i++) {
        const fu_value *v = fu_val(f, f->inputs[i]);
        map[f->inputs[i]] = fu_input_strided(d, v->name, v->dtype, v->rank, v->shape, v->strides);
    }
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (!live[n->output]) continue;
        fu_tensor in[FU_MAX_OP_INPUTS];
        for (int k = 0; k < n->ninputs; k++) in[k] = map[n->inputs[k]];
        fu_tensor found = -1;
        if (!is_output(f, n->output))
            for (int j = 0; j < d->nnodes && found < 0; j++) {
                const fu_node *m = &d->nodes[j];
                if (m->op != n->op || m->ninputs != n->ninputs || !same_attrs(n->op, &m->attrs, &n->attrs)) continue;
                bool same = true;
                for (int k = 0; k < n->ninputs; k++) same &= m->inputs[k] == in[k];
                if (same) found = m->output;
            }
        if (found >= 0) {
            map[n->output] = found;
            continue;
        }
        fu_fusion_set_location(d, NULL, n->line, n->column);
        map[n->output] = fu_add_op(d, n->op, n->ninputs, in, &n->attrs, fu_val(f, n->output)->name);
    }
    for (int i = 0; i < f->noutputs; i++) fu_output(d, map[f->outputs[i]]);
    fu_free(live);
    fu_free(map);
    fu_status s = fu_fusion_verify(d, err);
    if (s) {
        fu_fusion_free(d);
        return s;
    }
    *out = d;
    return FU_OK;
}

/* ------------------------------------------------------------ plan building */

typedef struct seg_ctx {
    fu_plan *plan;
    const fu_plan_options *opts;
    fu_error *err;
} seg_ctx;

static fu_status add_kernel(seg_ctx *s, const fu_kernel_plan *kp)
{
    fu_plan *p = s->plan;
    fu_kernel_plan *k = fu_realloc(p->kernels, (size_t)(p->nkernels + 1) * sizeof *k);
    if (!k) return fu_error_set(s->err, FU_ERR_NOMEM, "out of memory planning '%s'", p->fusion->name);
    p->kernels = k;
    p->kernels[p->nkernels++] = *kp;
    return FU_OK;
}

static void kernel_plan_clear(fu_kernel_plan *kp)
{
    fu_free(kp->ops);
    fu_free(kp->params);
    fu_free(kp->source);
    memset(kp, 0, sizeof *kp);
}

/* Outputs of a group: tensors it produces that are fusion outputs or are read
 * by ops outside it. */
static int group_outputs(const fu_fusion *f, const bool *in_group, fu_tensor *outs)
{
    int n = 0;
    for (int i = 0; i < f->nnodes; i++) {
        if (!in_group[i]) continue;
        fu_tensor t = f->nodes[i].output;
        bool needed = is_output(f, t);
        for (int j = 0; j < f->nnodes && !needed; j++) {
            if (in_group[j]) continue;
            for (int k = 0; k < f->nodes[j].ninputs; k++) needed |= f->nodes[j].inputs[k] == t;
        }
        if (needed) outs[n++] = t;
    }
    return n;
}

/* Offers a group to the schedulers. Returns 1 when taken, 0 when not (with
 * the reasons in why), -1 on error. */
static int try_group(seg_ctx *s, const bool *in_group, char *why, size_t nwhy)
{
    fu_plan *p = s->plan;
    const fu_fusion *f = p->fusion;
    fu_tensor *outs = fu_malloc((size_t)f->nvalues * sizeof *outs);
    if (!outs) {
        fu_error_set(s->err, FU_ERR_NOMEM, "out of memory");
        return -1;
    }
    fu_group g = {f, s->opts, in_group, p->materialized, outs, group_outputs(f, in_group, outs), p->nkernels};
    bool any_scatter = fu_group_has_op_kind(&g, FU_KIND_SCATTER);
    bool any_reduce = fu_group_has_op_kind(&g, FU_KIND_REDUCE);
    fu_kernel_plan kp;
    memset(&kp, 0, sizeof kp);
    bool ok;
    if (any_scatter) ok = fu_sched_scatter(&g, &kp, why, nwhy);
    else if (any_reduce) ok = fu_sched_outer_reduction(&g, &kp, why, nwhy) || fu_sched_reduction(&g, &kp, why, nwhy);
    else ok = fu_sched_pointwise(&g, &kp, why, nwhy);
    if (ok) {
        for (int i = 0; i < g.noutputs; i++) p->materialized[outs[i]] = true;
        if (add_kernel(s, &kp)) {
            kernel_plan_clear(&kp);
            ok = false;
            fu_free(outs);
            return -1;
        }
    } else {
        kernel_plan_clear(&kp);
    }
    fu_free(outs);
    return ok ? 1 : 0;
}

static bool is_anchor(const fu_node *n)
{
    fu_op_kind k = fu_op_kind_of(n->op);
    return k == FU_KIND_REDUCE || k == FU_KIND_SCATTER;
}

/* Splits `members` (nodes) into levels separated by ops for which
 * cut(node) holds: an op reading such an op's output runs one level later. */
static int levels_by(const fu_fusion *f, const bool *members, bool (*cut)(const fu_node *), int *level)
{
    int max = 0;
    for (int i = 0; i < f->nnodes; i++) {
        if (!members[i]) continue;
        int l = 0;
        const fu_node *n = &f->nodes[i];
        for (int k = 0; k < n->ninputs; k++) {
            int p = f->values[n->inputs[k]].producer;
            if (p < 0 || !members[p]) continue;
            int lp = level[p] + (cut(&f->nodes[p]) ? 1 : 0);
            if (lp > l) l = lp;
        }
        level[i] = l;
        if (l > max) max = l;
    }
    return max;
}

static bool cut_segment_set(const fu_node *n) { return n->op == FU_OP_SEGMENT_SET; }

static fu_status schedule_members(seg_ctx *s, const bool *members);

/* Last resort: one kernel per op. Every scheduler takes a single op. */
static fu_status one_op_per_kernel(seg_ctx *s, const bool *members)
{
    const fu_fusion *f = s->plan->fusion;
    bool *one = fu_calloc((size_t)f->nnodes, sizeof *one);
    if (!one) return fu_error_set(s->err, FU_ERR_NOMEM, "out of memory");
    char why[512] = "";
    for (int i = 0; i < f->nnodes; i++) {
        if (!members[i]) continue;
        memset(one, 0, (size_t)f->nnodes * sizeof *one);
        one[i] = true;
        int r = try_group(s, one, why, sizeof why);
        if (r < 0) break;
        if (r == 0) {
            fu_free(one);
            return fu_error_set(s->err, FU_ERR_UNSUPPORTED, "op '%s' -> '%s' cannot be scheduled: %s",
                                fu_op_name(f->nodes[i].op), fu_val(f, f->nodes[i].output)->name, why);
        }
    }
    fu_free(one);
    return s->err->status;
}

/* Schedules the members level by level (levels_by cut); each level is tried
 * as one group (recursively) when always_recurse or the cut split the members
 * at all, else one op per kernel. */
static fu_status schedule_levels(seg_ctx *s, const bool *members, bool (*cut)(const fu_node *), bool always_recurse)
{
    const fu_fusion *f = s->plan->fusion;
    int *level = fu_calloc((size_t)f->nnodes + 1, sizeof *level);
    bool *sub = fu_calloc((size_t)f->nnodes + 1, sizeof *sub);
    fu_status st = FU_OK;
    if (!level || !sub) st = fu_error_set(s->err, FU_ERR_NOMEM, "out of memory");
    int max = st ? -1 : levels_by(f, members, cut, level);
    bool recurse = always_recurse || max > 0;
    for (int l = 0; l <= max && st == FU_OK; l++) {
        bool any = false;
        for (int i = 0; i < f->nnodes; i++) {
            sub[i] = members[i] && level[i] == l;
            any |= sub[i];
        }
        if (!any) continue;
        st = recurse ? schedule_members(s, sub) : one_op_per_kernel(s, sub);
    }
    fu_free(level);
    fu_free(sub);
    return st;
}

static fu_status schedule_members(seg_ctx *s, const bool *members)
{
    char why[512] = "";
    int r = try_group(s, members, why, sizeof why);
    if (r < 0) return s->err->status;
    if (r == 1) return FU_OK;
    /* FUSER_DEBUG=1 says why a group had to be split (the debug ladder's first rung). */
    const char *debug = getenv("FUSER_DEBUG");
    if (debug && atoi(debug) >= 1) fprintf(stderr, "fuser: splitting '%s': %s\n", s->plan->fusion->name, why);
    /* Split at reductions and scatters; if a part still fails, one op each. */
    return schedule_levels(s, members, is_anchor, false) == FU_OK ? FU_OK : s->err->status;
}

static fu_status plan_fusion(seg_ctx *s)
{
    fu_plan *p = s->plan;
    const fu_fusion *f = p->fusion;
    bool *all = fu_calloc((size_t)f->nnodes + 1, sizeof *all);
    if (!all) return fu_error_set(s->err, FU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < f->nnodes; i++) all[i] = true;
    fu_status st = schedule_levels(s, all, cut_segment_set, true);
    fu_free(all);
    return st;
}

fu_status fu_plan_build(const fu_fusion *f, const fu_plan_options *opts, fu_plan **out, fu_error *err)
{
    fu_error local;
    if (!err) err = &local; /* the segmenter reports through err internally */
    *out = NULL;
    fu_plan_options defaults;
    if (!opts) {
        fu_plan_options_default(&defaults);
        opts = &defaults;
    }
    fu_fusion *dec = NULL, *simple = NULL;
    fu_status st = fu_fusion_decompose(f, &dec, err);
    if (st) return st;
    st = simplify(dec, &simple, err);
    fu_fusion_free(dec);
    if (st) return st;
    fu_plan *p = fu_calloc(1, sizeof *p);
    if (!p || !(p->materialized = fu_calloc((size_t)simple->nvalues, sizeof(bool)))) {
        fu_free(p);
        fu_fusion_free(simple);
        return fu_error_set(err, FU_ERR_NOMEM, "out of memory planning '%s'", f->name);
    }
    p->fusion = simple;
    for (int i = 0; i < simple->ninputs; i++) p->materialized[simple->inputs[i]] = true;
    for (int i = 0; i < simple->noutputs; i++)
        if (simple->values[simple->outputs[i]].producer < 0) p->ncopies++;
    err->status = FU_OK; /* schedulers report through err; start clean */
    err->message[0] = '\0';
    seg_ctx s = {p, opts, err};
    st = plan_fusion(&s);
    if (st == FU_OK) {
        p->intermediates = fu_malloc((size_t)simple->nvalues * sizeof *p->intermediates);
        if (!p->intermediates) st = fu_error_set(err, FU_ERR_NOMEM, "out of memory");
        for (int t = 0; st == FU_OK && t < simple->nvalues; t++)
            if (p->materialized[t] && simple->values[t].input_index < 0 && !is_output(simple, t))
                p->intermediates[p->nintermediates++] = t;
    }
    if (st) {
        fu_plan_free(p);
        return st;
    }
    *out = p;
    return FU_OK;
}

void fu_plan_free(fu_plan *p)
{
    if (!p) return;
    for (int i = 0; i < p->nkernels; i++) kernel_plan_clear(&p->kernels[i]);
    fu_free(p->kernels);
    fu_free(p->materialized);
    fu_free(p->intermediates);
    fu_fusion_free(p->fusion);
    fu_free(p);
}

/* ------------------------------------------------------------ printing */

char *fu_plan_json(const fu_plan *p, char *const *kernel_extra, const char *top_extra)
{
    fu_strbuf sb;
    fu_sb_init(&sb);
    const fu_fusion *f = p->fusion;
    fu_sb_puts(&sb, "{\"fusion\": ");
    fu_sb_json_string(&sb, f->name);
    fu_sb_printf(&sb, ", \"segments\": %d, \"copies\": %d, \"kernels\": [", p->nkernels, p->ncopies);
    for (int i = 0; i < p->nkernels; i++) {
        const fu_kernel_plan *k = &p->kernels[i];
        fu_sb_puts(&sb, i ? ", {\"name\": " : "{\"name\": ");
        fu_sb_json_string(&sb, k->name);
        fu_sb_printf(&sb, ", \"scheduler\": \"%s\", \"ops\": [", fu_sched_name(k->sched));
        for (int j = 0; j < k->nops; j++) {
            const fu_node *n = &f->nodes[k->ops[j]];
            fu_sb_puts(&sb, j ? ", " : "");
            char op[160];
            snprintf(op, sizeof op, "%s = %s", f->values[n->output].name, fu_op_name(n->op));
            fu_sb_json_string(&sb, op);
        }
        fu_sb_printf(&sb, "], \"grid\": [%u, 1, 1], \"block\": [%u, 1, 1], \"shared_bytes\": %zu, "
                          "\"workspace_bytes\": %zu, \"memset_before\": %s, \"config\": ",
                     k->grid, k->block, k->shared_bytes, k->workspace_bytes,
                     k->zero_before >= 0 || k->copy_before >= 0 ? "true" : "false");
        fu_sb_json_string(&sb, k->config);
        if (kernel_extra && kernel_extra[i]) fu_sb_puts(&sb, kernel_extra[i]);
        fu_sb_puts(&sb, "}");
    }
    fu_sb_puts(&sb, "]");
    if (top_extra) fu_sb_puts(&sb, top_extra);
    fu_sb_puts(&sb, "}");
    return fu_sb_take(&sb);
}

char *fu_plan_text(const fu_plan *p)
{
    fu_strbuf sb;
    fu_sb_init(&sb);
    const fu_fusion *f = p->fusion;
    fu_sb_printf(&sb, "fusion '%s': %d kernel%s\n", f->name, p->nkernels, p->nkernels == 1 ? "" : "s");
    for (int i = 0; i < p->nkernels; i++) {
        const fu_kernel_plan *k = &p->kernels[i];
        fu_sb_printf(&sb, "  kernel %d: %s  scheduler=%s  grid=%u block=%u shared=%zu%s\n", i, k->name,
                     fu_sched_name(k->sched), k->grid, k->block, k->shared_bytes,
                     k->zero_before >= 0 ? "  (output zeroed first)" : k->copy_before >= 0 ? "  (base copied first)" : "");
        fu_sb_printf(&sb, "    %s\n    ops:", k->config);
        for (int j = 0; j < k->nops; j++)
            fu_sb_printf(&sb, " %s=%s", f->values[f->nodes[k->ops[j]].output].name, fu_op_name(f->nodes[k->ops[j]].op));
        fu_sb_puts(&sb, "\n    writes:");
        for (int j = 0; j < k->nparams; j++)
            if (k->params[j].is_output) fu_sb_printf(&sb, " %s", f->values[k->params[j].tensor].name);
        fu_sb_puts(&sb, "\n");
    }
    return fu_sb_take(&sb);
}
