/*
 * k_pointwise.c -- the pointwise scheduler: any group without reductions or
 * scatters (pointwise, broadcast, cast, resize and gather ops) in one kernel.
 *
 * Outputs of the same shape share a domain (and their common
 * subexpressions); different shapes become separate domains of one
 * horizontal kernel, each owning a contiguous range of blocks. Outputs of
 * one shape that share nothing (the three permuted outputs of a QKV split)
 * get a domain each too, past one wave (PW_SPLIT_OUTPUTS): one launch, one
 * vector per thread. A thread owns
 * `vec` consecutive elements of the innermost axis (16 bytes of output);
 * each input access whose offset moves by one element per lane from an
 * aligned base becomes one 16-byte load (see cg_offset_vectorizable).
 */
#include <stdio.h>
#include <string.h>

#include "plan.h"

#ifndef PW_THREADS
#define PW_THREADS 256 /* threads per block */
#endif
/* Vectors per thread (measured on the H200, docs/perf.md v7). A grid that
 * fits in one wave at up to ONE_WAVE_ITEMS vectors per thread gets just
 * enough to be one wave: every load is issued at the start (bf16 embedding
 * forward at 50304x768x8192: 11.0 -> 10.7 us; at 6 vectors per thread the f32
 * one spilled and lost 4%). Larger grids: one vector per thread, the finest
 * blocks for the tail (bf16 QKV split at 32x2048x6144: 414 -> 397 us), but up
 * to GATHER_ITEMS where a gather makes each row load wait on its index load:
 * more independent chains per thread (the big embedding forward: 534 us at 4,
 * 562 at 1). */
#ifndef PW_ONE_WAVE_ITEMS
#define PW_ONE_WAVE_ITEMS 4
#endif
#ifndef PW_GATHER_ITEMS
#define PW_GATHER_ITEMS 4
#endif
#ifndef PW_ITEMS
#define PW_ITEMS 1
#endif
/* Outputs of one shape that share no computation and read disjoint slices of
 * their inputs (the q, k and v of a QKV split) get a domain each: a thread
 * then moves one vector, not one per output (1 GiB copies on the H200: 503.8
 * us at one vector per thread, 525.1 at four; the QKV split at 32x2048x6144:
 * bf16 396.7 -> 388.1 us, f32 778.9 -> 763.2; docs/perf.md v13). */
/* A domain that fits one block at half its lanes gets half the lanes (down to
 * one), so more of the block's threads share its elements: in a domain of
 * 256 bf16 elements at 8 lanes, 32 threads did all the math while 224 idled
 * (fz_7_177: 1.78 us of kernel against torch.compile's 1.12 at 2 elements a
 * thread; docs/perf.md v28). 0 keeps the widest lanes. */
#ifndef PW_SMALL_DOMAIN_LANES
#define PW_SMALL_DOMAIN_LANES 1
#endif
#ifndef PW_SPLIT_OUTPUTS
#define PW_SPLIT_OUTPUTS 1
#endif

typedef struct pw_domain {
    int rank;
    int64_t shape[FU_MAX_RANK];
    int64_t numel;
    int vec;
    int items;      /* vectors per thread (loads in flight) */
    int noutputs;
    fu_tensor outputs[16];
    unsigned first_block, nblocks;
} pw_domain;

/* What one output's cone reads of each tensor the group does not compute: a
 * box of its coordinates, [lo, hi) per axis (the whole tensor unless every
 * read is a slice of it). */
typedef struct pw_reads {
    bool any;
    int64_t lo[FU_MAX_RANK], hi[FU_MAX_RANK];
} pw_reads;

static void reads_widen(pw_reads *r, int rank, const int64_t *lo, const int64_t *hi)
{
    for (int a = 0; a < rank; a++) {
        if (!r->any || lo[a] < r->lo[a]) r->lo[a] = lo[a];
        if (!r->any || hi[a] > r->hi[a]) r->hi[a] = hi[a];
    }
    r->any = true;
}

static bool computed_in_group(const fu_group *g, fu_tensor t, const fu_node **producer)
{
    const fu_node *n = fu_producer(g->f, t);
    *producer = n;
    return n && g->in_group[n - g->f->nodes];
}

/* Marks output bit `bit` on every node of t's cone in the group (once per
 * node) and widens `reads` (one per tensor) for the tensors it reads. */
static void cone_walk(const fu_group *g, fu_tensor t, uint32_t bit, uint32_t *mark, pw_reads *reads)
{
    const fu_fusion *f = g->f;
    const fu_node *n;
    const fu_value *v = fu_val(f, t);
    if (!computed_in_group(g, t, &n)) { /* read whole */
        int64_t lo[FU_MAX_RANK] = {0};
        reads_widen(&reads[t], v->rank, lo, v->shape);
        return;
    }
    int node = (int)(n - f->nodes);
    if (mark[node] & bit) return;
    mark[node] |= bit;
    const fu_node *pn;
    if (n->op == FU_OP_SLICE && !computed_in_group(g, n->inputs[0], &pn)) {
        const fu_value *x = fu_val(f, n->inputs[0]);
        int64_t lo[FU_MAX_RANK], hi[FU_MAX_RANK];
        for (int a = 0; a < x->rank; a++) {
            bool simple = n->attrs.step[a] > 0 && v->shape[a] > 0;
            lo[a] = simple ? n->attrs.start[a] : 0;
            hi[a] = simple ? n->attrs.start[a] + (v->shape[a] - 1) * n->attrs.step[a] + 1 : x->shape[a];
        }
        reads_widen(&reads[n->inputs[0]], x->rank, lo, hi);
        return;
    }
    for (int i = 0; i < n->ninputs; i++) cone_walk(g, n->inputs[i], bit, mark, reads);
}

/* Whether the outputs of a domain are independent: no node computed for two
 * of them, and no element of a tensor read by two (their boxes are apart
 * along some axis). */
static bool outputs_independent(const fu_group *g, const fu_tensor *outs, int nouts)
{
    const fu_fusion *f = g->f;
    uint32_t *mark = fu_calloc((size_t)f->nnodes + 1, sizeof *mark);
    pw_reads *reads = fu_calloc((size_t)nouts * (size_t)f->nvalues + 1, sizeof *reads);
    bool ok = mark && reads && nouts <= 32;
    for (int o = 0; ok && o < nouts; o++) cone_walk(g, outs[o], 1u << o, mark, reads + (size_t)o * f->nvalues);
    for (int i = 0; ok && i < f->nnodes; i++) ok = (mark[i] & (mark[i] - 1)) == 0; /* at most one bit */
    for (fu_tensor t = 0; ok && t < f->nvalues; t++)
        for (int a = 0; ok && a < nouts; a++)
            for (int b = a + 1; ok && b < nouts; b++) {
                const pw_reads *ra = &reads[(size_t)a * f->nvalues + t], *rb = &reads[(size_t)b * f->nvalues + t];
                if (!ra->any || !rb->any) continue;
                bool apart = false;
                for (int x = 0; x < fu_val(f, t)->rank; x++) apart |= ra->hi[x] <= rb->lo[x] || rb->hi[x] <= ra->lo[x];
                ok = apart;
            }
    fu_free(mark);
    fu_free(reads);
    return ok;
}

static bool same_shape(const fu_value *a, const pw_domain *d)
{
    return a->rank == d->rank && !memcmp(a->shape, d->shape, (size_t)a->rank * sizeof *a->shape);
}

static int pick_vec(const fu_fusion *f, const pw_domain *d)
{
    size_t widest = 1;
    for (int i = 0; i < d->noutputs; i++) {
        size_t s = fu_dtype_size(f->values[d->outputs[i]].dtype);
        if (s > widest) widest = s;
    }
    int vec = (int)(16 / widest);
    int64_t inner = d->rank ? d->shape[d->rank - 1] : 1;
    while (vec > 1 && inner % vec) vec /= 2;
    /* a domain within one block at half the lanes takes more threads instead */
    while (PW_SMALL_DOMAIN_LANES && vec > 1 && d->numel * 2 <= (int64_t)PW_THREADS * vec) vec /= 2;
    return vec;
}

/* Declares item u's element index and domain variables; fills idx. */
static void item_vars(cg_ctx *c, const pw_domain *d, int u, cg_index *idx)
{
    int64_t strides[FU_MAX_RANK];
    fu_shape_contiguous_strides(d->rank, d->shape, strides);
    /* Items never share index expressions, so each starts a fresh variable
     * table (strings already rendered stay valid). */
    c->nvars = 0;
    c->lane_var = -1;
    char flat[16];
    snprintf(flat, sizeof flat, "e%d", u);
    for (int a = 0; a < d->rank; a++) {
        char name[24];
        snprintf(name, sizeof name, "d%d_%d", u, a);
        int v = cg_add_var(c, name);
        cg_digit_var(c, v, flat, strides[a], d->shape[a], a == 0);
        cg_index_var(&idx[a], v, name);
    }
    if (d->rank > 0 && d->vec > 1) {
        c->lane_var = d->rank - 1;
        idx[d->rank - 1].lane_coef = 1;
    }
    c->lane_fixed_vars = c->nvars; /* the domain's axes (a gathered position comes later, per lane) */
}

/* Every lane of every output of item u, as variable names. */
static void item_values(cg_ctx *c, const pw_domain *d, const cg_index *idx, char vals[16][16][32])
{
    for (int lane = 0; lane < d->vec; lane++) {
        c->lane = lane;
        cg_index lidx[FU_MAX_RANK];
        memcpy(lidx, idx, sizeof lidx);
        if (d->rank > 0 && d->vec > 1) cg_index_refresh(c, &lidx[d->rank - 1]);
        for (int o = 0; o < d->noutputs; o++)
            snprintf(vals[o][lane], sizeof vals[o][lane], "%s", cg_value(c, d->outputs[o], lidx));
    }
    c->lane = 0;
}

static void item_stores(fu_kernel_writer *w, const pw_domain *d, int u, char vals[16][16][32])
{
    for (int o = 0; o < d->noutputs; o++) {
        const cg_param *p = fu_kw_output(w, d->outputs[o]);
        char at[16], tmp[24];
        snprintf(at, sizeof at, "e%d", u);
        snprintf(tmp, sizeof tmp, "o%d_%d", u, o);
        if (d->vec == 1) fu_kw_store(w, p, at, vals[o][0]);
        else fu_kw_vector_store(w, p, at, tmp, (const char (*)[32])vals[o], d->vec);
    }
}

/* A block owns items x threads x vec consecutive elements. Full blocks load
 * every item before storing any (several 16-byte loads in flight per thread);
 * the last, partial block checks each item. di is the domain's index (for the
 * comment); first: no domain was emitted before it (else it continues the
 * previous one's if-else chain). */
static void emit_domain(fu_kernel_writer *w, const pw_domain *d, int di, bool first)
{
    cg_ctx *c = &w->cg;
    const char *it = c->index64 ? "long long" : "int";
    char shape[160];
    fu_shape_str(d->rank, d->shape, shape, sizeof shape);
    long long per_block = (long long)d->items * PW_THREADS * d->vec;
    cg_line(c, "%sif (blockIdx.x < %uu) { // domain %d: %s, %d item%s of %d lane%s per thread", first ? "" : "} else ",
            d->first_block + d->nblocks, di, shape, d->items, d->items == 1 ? "" : "s", d->vec, d->vec == 1 ? "" : "s");
    c->indent++;
    c->scope++;
    cg_line(c, "const %s eb = (%s)(blockIdx.x - %uu) * %lld; // the block's first element", it, it, d->first_block, per_block);
    c->vec = d->vec;
    char (*vals)[16][16][32] = fu_malloc(sizeof *vals * (size_t)d->items);
    if (!vals) {
        cg_fail(c, "pointwise: out of memory");
        return;
    }
    cg_index idx[FU_MAX_RANK];
    cg_line(c, "if (eb + %lld <= %lld) {", per_block, (long long)d->numel);
    c->indent++;
    c->scope++;
    for (int u = 0; u < d->items; u++) {
        cg_line(c, "const %s e%d = eb + (%d * %d + threadIdx.x) * %d;", it, u, u, PW_THREADS, d->vec);
        item_vars(c, d, u, idx);
        item_values(c, d, idx, vals[u]);
    }
    for (int u = 0; u < d->items; u++) item_stores(w, d, u, vals[u]);
    c->scope--;
    c->indent--;
    cg_drop_scope(c);
    cg_line(c, "} else {");
    c->indent++;
    c->scope++;
    for (int u = 0; u < d->items; u++) {
        cg_line(c, "const %s e%d = eb + (%d * %d + threadIdx.x) * %d;", it, u, u, PW_THREADS, d->vec);
        cg_line(c, "if (e%d < %lld) {", u, (long long)d->numel);
        c->indent++;
        c->scope++;
        item_vars(c, d, u, idx);
        item_values(c, d, idx, vals[u]);
        item_stores(w, d, u, vals[u]);
        c->scope--;
        c->indent--;
        cg_drop_scope(c);
        cg_line(c, "}");
    }
    c->scope--;
    c->indent--;
    cg_drop_scope(c);
    cg_line(c, "}");
    c->scope--;
    c->indent--;
    cg_drop_scope(c);
    fu_free(vals);
}

bool fu_pw_can_schedule(const fu_group *g, char *why, size_t nwhy)
{
    if (!fu_group_has_op_kind(g, FU_KIND_REDUCE) && !fu_group_has_op_kind(g, FU_KIND_SCATTER)) return true;
    snprintf(why, nwhy, "pointwise (and transpose): the group has reductions or scatters");
    return false;
}

/* The pointwise scheduler's decisions: what emit writes the kernel from. */
typedef struct pw_params {
    int ndoms;
    pw_domain doms[16];
    bool one_wave;      /* every load of the grid issued in one wave of resident blocks */
    unsigned resident;  /* blocks an SM must hold (the launch bounds' minimum) */
} pw_params;

bool fu_pw_heuristics(const fu_group *g, void **params, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    *params = NULL;
    pw_params *pp = fu_calloc(1, sizeof *pp);
    if (!pp) {
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    pw_domain *doms = pp->doms;
    int ndoms = 0;
    for (int i = 0; i < g->noutputs; i++) {
        const fu_value *v = fu_val(f, g->outputs[i]);
        int d = 0;
        while (d < ndoms && !same_shape(v, &doms[d])) d++;
        if (d == ndoms) {
            if (ndoms == 16) {
                snprintf(why, nwhy, "pointwise: more than 16 output shapes");
                fu_free(pp);
                return false;
            }
            memset(&doms[d], 0, sizeof doms[d]);
            doms[d].rank = v->rank;
            memcpy(doms[d].shape, v->shape, sizeof v->shape);
            doms[d].numel = fu_shape_numel(v->rank, v->shape);
            ndoms++;
        }
        if (doms[d].noutputs == 16) {
            snprintf(why, nwhy, "pointwise: more than 16 outputs of one shape");
            fu_free(pp);
            return false;
        }
        doms[d].outputs[doms[d].noutputs++] = g->outputs[i];
    }
    int blocks_per_sm = g->opts->max_threads_per_sm / PW_THREADS;
    if (blocks_per_sm < 1) blocks_per_sm = 1;
    const int64_t wave = (int64_t)g->opts->sm_count * blocks_per_sm; /* blocks resident at once */
    const int64_t wave_threads = wave * PW_THREADS;
    int64_t merged_vectors = 0;
    for (int d = 0; d < ndoms; d++) {
        const int vec = pick_vec(f, &doms[d]);
        merged_vectors += (doms[d].numel + vec - 1) / vec;
    }
    /* independent outputs of one shape: a domain each, unless the grid fits
     * one wave as it is, every load issued at once already (split, the bf16
     * QKV split at 16x128x3072 went from 9.57 to 9.94 us) */
    const bool split = PW_SPLIT_OUTPUTS && merged_vectors > wave_threads * PW_ONE_WAVE_ITEMS;
    for (int d = 0; split && d < ndoms; d++) {
        if (doms[d].noutputs < 2 || ndoms + doms[d].noutputs - 1 > 16 || !outputs_independent(g, doms[d].outputs, doms[d].noutputs))
            continue;
        for (int o = doms[d].noutputs - 1; o >= 1; o--) {
            memmove(&doms[d + 2], &doms[d + 1], (size_t)(ndoms - d - 1) * sizeof doms[0]);
            doms[d + 1] = doms[d];
            doms[d + 1].noutputs = 1;
            doms[d + 1].outputs[0] = doms[d].outputs[o];
            ndoms++;
        }
        doms[d].noutputs = 1;
    }
    int64_t all_vectors = 0;
    for (int d = 0; d < ndoms; d++) {
        doms[d].vec = pick_vec(f, &doms[d]);
        all_vectors += (doms[d].numel + doms[d].vec - 1) / doms[d].vec;
    }
    const bool one_wave = all_vectors <= wave_threads * PW_ONE_WAVE_ITEMS;
    const int max_items = fu_group_has_op_kind(g, FU_KIND_GATHER) ? PW_GATHER_ITEMS : PW_ITEMS;
    unsigned blocks = 0;
    for (int d = 0; d < ndoms; d++) {
        int64_t vectors = (doms[d].numel + doms[d].vec - 1) / doms[d].vec;
        if (one_wave) {
            doms[d].items = (int)((all_vectors + wave_threads - 1) / wave_threads);
            if (doms[d].items < 1) doms[d].items = 1; /* no elements at all */
        } else { /* up to max_items per thread while that still fills one wave of blocks */
            doms[d].items = 1;
            while (doms[d].items < max_items && (vectors + (int64_t)PW_THREADS * doms[d].items * 2 - 1) /
                                                             ((int64_t)PW_THREADS * doms[d].items * 2) >= wave)
                doms[d].items *= 2;
        }
        doms[d].first_block = blocks;
        doms[d].nblocks = (unsigned)((vectors + (int64_t)PW_THREADS * doms[d].items - 1) / ((int64_t)PW_THREADS * doms[d].items));
        blocks += doms[d].nblocks;
    }
    pp->ndoms = ndoms;
    pp->one_wave = one_wave;
    kp->sched = FU_SCHED_POINTWISE;
    kp->grid = blocks ? blocks : 1;
    kp->block = PW_THREADS;
    size_t k = 0;
    k += (size_t)snprintf(kp->config + k, sizeof kp->config - k, "%s%d domain%s:", one_wave ? "one wave, " : "", ndoms,
                          ndoms == 1 ? "" : "s");
    for (int d = 0; d < ndoms && k < sizeof kp->config; d++) {
        char s[128];
        fu_shape_str(doms[d].rank, doms[d].shape, s, sizeof s);
        k += (size_t)snprintf(kp->config + k, sizeof kp->config - k, " %s x%d vec=%d items=%d blocks=%u;", s,
                              doms[d].noutputs, doms[d].vec, doms[d].items, doms[d].nblocks);
    }
    /* one wave only if every block is resident: cap the registers to fit */
    unsigned resident = one_wave ? (kp->grid + (unsigned)g->opts->sm_count - 1) / (unsigned)g->opts->sm_count : 1u;
    if (resident > (unsigned)blocks_per_sm) resident = (unsigned)blocks_per_sm; /* per-domain rounding */
    pp->resident = resident;
    fu_strbuf js;
    fu_sb_init(&js);
    fu_sb_printf(&js, "{\"threads\": %d, \"one_wave\": %s, \"min_blocks_per_sm\": %u, \"domains\": [", PW_THREADS,
                 one_wave ? "true" : "false", resident);
    for (int d = 0; d < ndoms; d++) {
        fu_sb_printf(&js, "%s{\"shape\": [", d ? ", " : "");
        for (int a = 0; a < doms[d].rank; a++) fu_sb_printf(&js, "%s%lld", a ? ", " : "", (long long)doms[d].shape[a]);
        fu_sb_printf(&js, "], \"outputs\": %d, \"vec\": %d, \"items\": %d, \"first_block\": %u, \"blocks\": %u}",
                     doms[d].noutputs, doms[d].vec, doms[d].items, doms[d].first_block, doms[d].nblocks);
    }
    fu_sb_puts(&js, "]}");
    kp->params_json = fu_sb_take(&js);
    *params = pp;
    return true;
}

bool fu_pw_emit(const fu_group *g, const void *params, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    const pw_params *pp = params;
    fu_kernel_writer w;
    /* kw_begin resets what the launch does before the kernel; the launch numbers stay */
    if (!fu_kw_begin(&w, g, kp, "pointwise (horizontal over output shapes)", why, nwhy)) {
        fu_kw_abort(&w);
        return false;
    }
    fu_kw_signature(&w, kp, PW_THREADS, pp->resident, false);
    bool any = false;
    for (int d = 0; d < pp->ndoms; d++) {
        if (pp->doms[d].nblocks == 0) continue;
        emit_domain(&w, &pp->doms[d], d, !any);
        any = true;
    }
    if (any) cg_line(&w.cg, "}");
    cg_close(&w.cg);
    return fu_kw_finish(&w, kp, why, nwhy);
}
