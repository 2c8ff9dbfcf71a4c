/*
 * k_scatter.c -- the scatter scheduler: index_add and scatter_add, with their
 * base, index and source expressions inlined.
 *
 * Deterministic mode (index_add along axis 0): each block owns a contiguous
 * range of output rows. It scans the index once, keeps the positions that
 * land in its rows (a block-wide ordered compaction), sorts them by row
 * stably (so sums run in index order), then writes each of its rows exactly
 * once: base + the source rows that map to it, accumulated in f32 registers.
 * Results are bit-identical run to run, every output row is written once,
 * and no memset is needed. If more positions land in one block than its
 * shared list holds, the block flushes in index order, re-reading its rows.
 *
 * Atomic mode (any axis, and scatter_add): the output is cleared (or the base
 * copied) before the launch, then one thread per source element adds with an
 * atomic.
 */
#include <stdio.h>
#include <string.h>

#include "plan.h"

#define LIST_CAP 3072 /* positions a block sorts at once: 36 KiB of shared memory */
#define MAX_ROWS_PER_BLOCK 2048 /* fu_cnt: 8 KiB more, under the 48 KiB of static shared memory */
#define ROW_THREADS 512 /* narrow rows: at least this many threads write rows side by side */

static const fu_node *the_scatter(const fu_group *g)
{
    const fu_node *s = NULL;
    for (int i = 0; i < g->f->nnodes; i++)
        if (g->in_group[i] && fu_op_kind_of(g->f->nodes[i].op) == FU_KIND_SCATTER) {
            if (s) return NULL;
            s = &g->f->nodes[i];
        }
    return s;
}

/* The base is a constant zero (through broadcasts), so clearing the output is enough. */
static bool base_is_zero(const fu_group *g, fu_tensor t)
{
    const fu_fusion *f = g->f;
    for (;;) {
        const fu_node *n = fu_producer(f, t);
        if (!n || !g->in_group[n - f->nodes]) return false;
        if (n->op == FU_OP_FULL) return n->attrs.value == 0.0;
        if (n->op != FU_OP_BROADCAST && n->op != FU_OP_RESHAPE && n->op != FU_OP_SEGMENT_SET) return false;
        t = n->inputs[0];
    }
}

static int pick_vec(const fu_value *x)
{
    if (x->rank < 2) return 1;
    int vec = (int)(16 / fu_dtype_size(x->dtype));
    while (vec > 1 && x->shape[x->rank - 1] % vec) vec /= 2;
    return vec;
}

/* Declares the inner-axis variables d1.. of x from the linear inner position `db`. */
static void inner_vars(cg_ctx *c, const fu_value *x, const char *db)
{
    const char *it = c->index64 ? "long long" : "int";
    int64_t stride = 1;
    for (int a = x->rank - 1; a >= 1; a--) {
        if (a == 1) cg_line(c, "const %s d%d = %s / %lld;", it, a, db, (long long)stride);
        else cg_line(c, "const %s d%d = (%s / %lld) %% %lld;", it, a, db, (long long)stride, (long long)x->shape[a]);
        stride *= x->shape[a];
    }
}

/* One owned row v, written by tpr threads (inner position db, item by item):
 * the base (the first flush) or what the row holds (later flushes), plus the
 * source rows fu_sorted[s0..s1) that map to it, stored once with vector stores.
 * side_by_side: several rows at once, the thread's lane in its row is fu_rl. */
static void emit_row_write(fu_kernel_writer *w, const fu_node *s, int items, int tpr, bool side_by_side, int vec)
{
    cg_ctx *c = &w->cg;
    const fu_fusion *f = w->cg.f;
    const fu_value *x = fu_val(f, s->inputs[0]), *out = fu_val(f, s->output);
    const cg_param *po = fu_kw_output(w, s->output);
    int64_t Din = fu_shape_numel(x->rank - 1, x->shape + 1);
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "for (int it = 0; it < %d; it++) {", items);
    c->indent++;
    c->scope++;
    cg_line(c, "const %s db = ((%s)it * %d + %s) * %d;", it, it, tpr, side_by_side ? "fu_rl" : "threadIdx.x", vec);
    cg_line(c, "if (db >= %lld) break;", (long long)Din);
    inner_vars(c, x, "db");
    /* domain variables: v, i, then the inner axes */
    c->nvars = 0;
    int vv = cg_add_var(c, "v"), vi = cg_add_var(c, "i");
    int dvar[FU_MAX_RANK];
    for (int a = 1; a < x->rank; a++) {
        char nm[16];
        snprintf(nm, sizeof nm, "d%d", a);
        dvar[a] = cg_add_var(c, nm);
    }
    c->vec = vec;
    c->lane_var = x->rank >= 2 ? dvar[x->rank - 1] : -1;
    cg_index xi[FU_MAX_RANK], si[FU_MAX_RANK];
    cg_index_var(&xi[0], vv, "v");
    cg_index_var(&si[0], vi, "i");
    for (int a = 1; a < x->rank; a++) {
        char nm[16];
        snprintf(nm, sizeof nm, "d%d", a);
        cg_index_var(&xi[a], dvar[a], nm);
        si[a] = xi[a];
    }
    if (vec > 1) {
        xi[x->rank - 1].lane_coef = si[x->rank - 1].lane_coef = 1;
    }
    const char *acc_t = cg_compute_type(out->dtype);
    cg_line(c, "%s acc[%d];", acc_t, vec);
    cg_line(c, "if (first) {");
    c->indent++;
    c->scope++;
    for (int lane = 0; lane < vec; lane++) {
        c->lane = lane;
        cg_index l[FU_MAX_RANK];
        memcpy(l, xi, sizeof xi);
        cg_index_refresh(c, &l[x->rank - 1]);
        cg_line(c, "acc[%d] = (%s)%s;", lane, acc_t, cg_value(c, s->inputs[0], l));
    }
    c->scope--;
    c->indent--;
    cg_drop_scope(c);
    cg_index off;
    cg_line(c, "} else {");
    c->lane = 0;
    cg_offset(c, out->rank, out->shape, out->strides, xi, &off);
    for (int lane = 0; lane < vec; lane++) {
        c->lane = lane;
        cg_index_refresh(c, &off);
        cg_line(c, "  acc[%d] = (%s)fu_load(%s[%s]);", lane, acc_t, po->name, off.expr);
    }
    cg_line(c, "}");
    cg_line(c, "for (int e = s0; e < s1; e++) {");
    c->indent++;
    c->scope++;
    cg_line(c, "const %s i = fu_sorted[e];", it);
    for (int lane = 0; lane < vec; lane++) {
        c->lane = lane;
        cg_index l[FU_MAX_RANK];
        memcpy(l, si, sizeof si);
        cg_index_refresh(c, &l[x->rank - 1]);
        cg_line(c, "acc[%d] += (%s)%s;", lane, acc_t, cg_value(c, s->inputs[2], l));
    }
    c->scope--;
    c->indent--;
    cg_drop_scope(c);
    cg_line(c, "}");
    c->lane = 0;
    cg_offset(c, out->rank, out->shape, out->strides, xi, &off);
    if (vec > 1) {
        char base[CG_EXPR], lanes[16][32];
        cg_offset_base_expr(c, &off, base, sizeof base);
        for (int lane = 0; lane < vec; lane++) snprintf(lanes[lane], sizeof lanes[lane], "acc[%d]", lane);
        fu_kw_vector_store(w, po, base, "o", (const char (*)[32])lanes, vec);
    } else {
        fu_kw_store(w, po, off.expr, "acc[0]");
    }
    cg_close(c); /* it */
}

/* A block-wide exclusive scan of this thread's count, the int variable
 * `count` (the caller declares lane and warp): declares incl, this thread's
 * inclusive prefix within its warp, and leaves in fu_scan[w] the exclusive
 * prefix of warp w over the block's nwarps warps, so that the thread's
 * exclusive prefix is fu_scan[warp] + incl - count; with `total`, also the
 * block's total in fu_scan[32]. Two barriers. */
static void emit_block_scan(cg_ctx *c, const char *count, int nwarps, bool total)
{
    cg_line(c, "int incl = %s;", count);
    cg_line(c, "for (int o = 1; o < 32; o <<= 1) { const int y = __shfl_up_sync(0xffffffffu, incl, o); if (lane >= o) incl += y; }");
    cg_line(c, "if (lane == 31) fu_scan[warp] = incl;");
    cg_line(c, "__syncthreads();");
    cg_line(c, "if (threadIdx.x == 0) { int s = 0; for (int wq = 0; wq < %d; wq++) { int n = fu_scan[wq]; fu_scan[wq] = s; s += n; }%s }",
            nwarps, total ? " fu_scan[32] = s;" : "");
    cg_line(c, "__syncthreads();");
}

/* A stable counting sort of the block's list by row, by the whole block: a
 * thread each (measured: one thread sorting while the rest waited cost up to
 * ~5% of the embedding backward). Counts by shared atomics (the same counts in
 * any order), an inclusive prefix over the row counters (a chunk per thread,
 * then a block scan), then warp 0 places the entries from the end, 32 at a
 * time: lanes of one row (__match_any_sync) take consecutive slots in index
 * order, so each row's positions stay in index order and the sums in the
 * row writes keep a fixed order. After it fu_cnt[r] is row r's first slot and
 * fu_cnt[nrows] = nlist. */
static void emit_list_sort(cg_ctx *c, int threads)
{
    int nwarps = (threads + 31) / 32;
    cg_line(c, "__syncthreads();");
    cg_line(c, "for (int r = threadIdx.x; r <= nrows; r += %d) fu_cnt[r] = 0;", threads);
    cg_line(c, "__syncthreads();");
    cg_line(c, "for (int e = threadIdx.x; e < nlist; e += %d) atomicAdd(&fu_cnt[fu_row[e]], 1);", threads);
    cg_line(c, "__syncthreads();");
    cg_line(c, "{ // inclusive prefix: fu_cnt[r] = the end of row r's slots");
    c->indent++;
    cg_line(c, "const int per = (nrows + %d) / %d, r0 = (int)threadIdx.x * per, r1 = min(r0 + per, nrows + 1);", threads,
            threads);
    cg_line(c, "int run = 0;");
    cg_line(c, "#pragma unroll 1 // a few counters each; unrolled, ptxas spilled at 1024 threads");
    cg_line(c, "for (int r = r0; r < r1; r++) run += fu_cnt[r];");
    cg_line(c, "const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;");
    emit_block_scan(c, "run", nwarps, false);
    cg_line(c, "int acc = fu_scan[warp] + incl - run;");
    cg_line(c, "#pragma unroll 1");
    cg_line(c, "for (int r = r0; r < r1; r++) { acc += fu_cnt[r]; fu_cnt[r] = acc; }");
    c->indent--;
    cg_line(c, "}");
    cg_line(c, "__syncthreads();");
    cg_line(c, "if (threadIdx.x < 32) { // place from the end; each row's end moves down to its start");
    c->indent++;
    cg_line(c, "const int lane = threadIdx.x;");
    cg_line(c, "for (int e0 = (nlist - 1) & ~31; e0 >= 0; e0 -= 32) {");
    c->indent++;
    cg_line(c, "const int e = e0 + lane;");
    cg_line(c, "const int row = e < nlist ? fu_row[e] : -1 - lane; // idle lanes match no one");
    cg_line(c, "const unsigned peers = __match_any_sync(0xffffffffu, row);");
    cg_line(c, "if (e < nlist) fu_sorted[fu_cnt[row] - 1 - __popc(peers >> lane >> 1)] = fu_pos[e];");
    cg_line(c, "__syncwarp();");
    cg_line(c, "if (e < nlist && lane == __ffs(peers) - 1) fu_cnt[row] -= __popc(peers);");
    cg_line(c, "__syncwarp();");
    c->indent--;
    cg_line(c, "}");
    c->indent--;
    cg_line(c, "}");
    cg_line(c, "__syncthreads();");
}

static bool deterministic(const fu_group *g, const fu_node *s, fu_kernel_writer *w, fu_kernel_plan *kp, char *why,
                          size_t nwhy)
{
    cg_ctx *c = &w->cg;
    const fu_fusion *f = g->f;
    const fu_value *x = fu_val(f, s->inputs[0]);
    int64_t V = x->shape[0], M = fu_val(f, s->inputs[1])->shape[0];
    if (M >= (int64_t)1 << 31) { /* positions are kept in int lists */
        snprintf(why, nwhy, "scatter: more than 2^31 source rows");
        return false;
    }
    int64_t Din = fu_shape_numel(x->rank - 1, x->shape + 1);
    int vec = pick_vec(x);
    int64_t vecs = (Din + vec - 1) / vec;
    /* tpr threads per row, one vector each (a row wider than 1024 threads loops);
     * narrow rows are written several at a time so that a block has at least
     * ROW_THREADS threads: fewer, larger blocks each scan the index (every block
     * reads all of it, so the scan's traffic is blocks x sources) */
    int64_t tpr64 = (vecs + 31) / 32 * 32;
    int tpr = tpr64 > 1024 ? 1024 : (int)tpr64;
    int conc = tpr < ROW_THREADS ? ROW_THREADS / tpr : 1;
    int threads = tpr * conc;
    int items = (int)((vecs + tpr - 1) / tpr);
    /* One wave: blocks resident per SM by threads, by registers assuming up to
     * 48 per thread and by shared memory (more, smaller blocks would run as a
     * second wave). */
    int per_sm = g->opts->max_threads_per_sm / threads;
    if (per_sm > 65536 / (threads * 48)) per_sm = 65536 / (threads * 48);
    int smem = 3 * LIST_CAP * 4 + (MAX_ROWS_PER_BLOCK + 1) * 4;
    if (per_sm > 227 * 1024 / smem) per_sm = 227 * 1024 / smem;
    if (per_sm < 1) per_sm = 1;
    int64_t grid = (int64_t)g->opts->sm_count * per_sm;
    if (grid > V) grid = V;
    if (grid < 1) grid = 1;
    int64_t rpb = (V + grid - 1) / grid;
    if (rpb > MAX_ROWS_PER_BLOCK) rpb = MAX_ROWS_PER_BLOCK;
    grid = (V + rpb - 1) / rpb;
    /* A thread takes `ipt` consecutive positions of the index per window, so a
     * window of threads * ipt positions costs one block-wide prefix sum (two
     * barriers); every position of a window may land in the block's rows, so a
     * window is at most the list. */
    int ipt = LIST_CAP / threads;
    if (ipt > 8) ipt = 8;
    if (ipt < 1) ipt = 1;
    kp->grid = (unsigned)grid;
    kp->block = (unsigned)threads;
    snprintf(kp->config, sizeof kp->config,
             "deterministic: rows=%lld row_size=%lld sources=%lld rows_per_block=%lld vec=%d threads=%d "
             "(%d per row, %d rows at once) list=%d ids_per_thread=%d",
             (long long)V, (long long)Din, (long long)M, (long long)rpb, vec, threads, tpr, conc, LIST_CAP, ipt);
    fu_kw_signature(w, kp, (unsigned)threads, 1, false);
    const char *it = c->index64 ? "long long" : "int";
    cg_open(c);
    cg_line(c, "__shared__ int fu_cnt[%lld]; // per owned row: end, then start of its positions", (long long)rpb + 1);
    cg_line(c, "__shared__ int fu_pos[%d];    // positions of the index that land in owned rows, in order", LIST_CAP);
    cg_line(c, "__shared__ int fu_row[%d];", LIST_CAP);
    cg_line(c, "__shared__ int fu_sorted[%d]; // the same, stably sorted by row", LIST_CAP);
    cg_line(c, "__shared__ int fu_scan[33];");
    cg_line(c, "const %s v0 = (%s)blockIdx.x * %lld;", it, it, (long long)rpb);
    cg_line(c, "const int nrows = (int)(%lld - v0 < %lld ? %lld - v0 : %lld);", (long long)V, (long long)rpb, (long long)V,
             (long long)rpb);
    if (conc > 1) cg_line(c, "const int fu_rl = threadIdx.x %% %d, fu_r0 = threadIdx.x / %d; // lane in a row, first row", tpr, tpr);
    cg_line(c, "int nlist = 0;");
    cg_line(c, "bool first = true;");
    /* the flush: sort the list by row, then write owned rows */
    cg_line(c, "auto flush = [&]() {");
    c->indent++;
    c->scope++;
    emit_list_sort(c, threads);
    if (conc > 1) cg_line(c, "for (int r = fu_r0; r < nrows; r += %d) {", conc);
    else cg_line(c, "for (int r = 0; r < nrows; r++) {");
    c->indent++;
    c->scope++;
    cg_line(c, "const int s0 = fu_cnt[r], s1 = fu_cnt[r + 1];");
    cg_line(c, "if (!first && s0 == s1) continue;");
    cg_line(c, "const %s v = v0 + r;", it);
    emit_row_write(w, s, items, tpr, conc > 1, vec);
    cg_close(c); /* r */
    cg_line(c, "first = false;");
    cg_line(c, "nlist = 0;");
    cg_line(c, "__syncthreads();");
    c->scope--;
    c->indent--;
    cg_line(c, "};");
    /* Scan the index, keep positions in owned rows, in order. One more round
     * past the end flushes what is left: flush() has one call site, so it is
     * compiled once (two inlined copies cost NVRTC ~50 ms). */
    cg_line(c, "for (%s base = 0;; base += %d) {", it, threads * ipt);
    c->indent++;
    c->scope++;
    cg_line(c, "const bool past_end = base >= %lld; // the same in every thread", (long long)M);
    cg_line(c, "const %s ib = base + (%s)threadIdx.x * %d;", it, it, ipt);
    cg_line(c, "unsigned keep = 0u;");
    cg_line(c, "int rows[%d];", ipt);
    cg_line(c, "int total = 0, at = 0;");
    cg_line(c, "if (!past_end) {");
    c->indent++;
    c->scope++;
    c->nvars = 0;
    c->vec = 1;
    c->lane = 0;
    c->lane_var = -1;
    int iv = cg_add_var(c, "ib");
    for (int k = 0; k < ipt; k++) {
        cg_line(c, "if (ib + %d < %lld) {", k, (long long)M);
        c->indent++;
        c->scope++;
        cg_index ii;
        cg_index_var(&ii, iv, "ib");
        ii.c = k;
        cg_index_refresh(c, &ii);
        const char *j = cg_value(c, s->inputs[1], &ii);
        cg_line(c, "const long long j = %s;", j);
        cg_line(c, "if (j < 0 || j >= %lld) fu_report_index(fu_err, %d, j, (long long)(ib + %d));", (long long)V,
                (int)(s - f->nodes), k);
        cg_line(c, "else if (j >= v0 && j < v0 + nrows) { keep |= 1u << %d; rows[%d] = (int)(j - v0); }", k, k);
        c->scope--;
        c->indent--;
        cg_drop_scope(c);
        cg_line(c, "}");
    }
    cg_line(c, "// ordered compaction: exclusive prefix of the kept counts over the block");
    cg_line(c, "const int cnt = __popc(keep), lane = threadIdx.x & 31, warp = threadIdx.x >> 5;");
    emit_block_scan(c, "cnt", (threads + 31) / 32, true);
    cg_line(c, "total = fu_scan[32];");
    cg_line(c, "at = fu_scan[warp] + incl - cnt;");
    cg_close(c); /* !past_end */
    cg_line(c, "if (past_end ? nlist > 0 || first : nlist + total > %d) flush();", LIST_CAP);
    cg_line(c, "if (past_end) break;");
    cg_line(c, "for (int k = 0; k < %d; k++)", ipt);
    cg_line(c, "  if (keep >> k & 1u) { fu_pos[nlist + at] = (int)(ib + k); fu_row[nlist + at] = rows[k]; at++; }");
    cg_line(c, "nlist += total;");
    cg_line(c, "__syncthreads();");
    cg_close(c);
    cg_close(c);
    return true;
}

static bool atomic_mode(const fu_group *g, const fu_node *s, fu_kernel_writer *w, fu_kernel_plan *kp, char *why,
                        size_t nwhy)
{
    cg_ctx *c = &w->cg;
    const fu_fusion *f = g->f;
    const fu_value *out = fu_val(f, s->output), *idxv = fu_val(f, s->inputs[1]), *src = fu_val(f, s->inputs[2]);
    const cg_param *po = fu_kw_output(w, s->output);
    if (base_is_zero(g, s->inputs[0])) kp->zero_before = s->output;
    else if (g->materialized[s->inputs[0]]) kp->copy_before = s->inputs[0];
    else {
        snprintf(why, nwhy, "scatter: atomic mode needs a zero or stored base for '%s'", out->name);
        return false;
    }
    if (out->dtype == FU_BOOL) {
        snprintf(why, nwhy, "scatter: cannot add bools");
        return false;
    }
    /* one thread per source element (index_add) or per index element (scatter_add) */
    const fu_value *dom = s->op == FU_OP_INDEX_ADD ? src : idxv;
    int64_t n = fu_shape_numel(dom->rank, dom->shape);
    int threads = 256;
    kp->grid = (unsigned)((n + threads - 1) / threads);
    if (kp->grid == 0) kp->grid = 1;
    kp->block = (unsigned)threads;
    snprintf(kp->config, sizeof kp->config, "atomic: elements=%lld threads=%d%s", (long long)n, threads,
             kp->zero_before >= 0 ? " (output zeroed before launch)" : " (base copied before launch)");
    fu_kw_signature(w, kp, (unsigned)threads, 1, false);
    const char *it = c->index64 ? "long long" : "int";
    cg_open(c);
    cg_line(c, "const %s e = (%s)blockIdx.x * %d + threadIdx.x;", it, it, threads);
    cg_line(c, "if (e >= %lld) return;", (long long)n);
    cg_index di[FU_MAX_RANK];
    int64_t strides[FU_MAX_RANK];
    fu_shape_contiguous_strides(dom->rank, dom->shape, strides);
    c->nvars = 0;
    for (int a = 0; a < dom->rank; a++) {
        char nm[16];
        snprintf(nm, sizeof nm, "p%d", a);
        int v = cg_add_var(c, nm);
        cg_line(c, "const %s %s = (e / %lld) %% %lld;", it, nm, (long long)strides[a], (long long)dom->shape[a]);
        cg_index_var(&di[a], v, nm);
    }
    int axis = s->attrs.axis;
    cg_index jidx[FU_MAX_RANK];
    if (s->op == FU_OP_INDEX_ADD) jidx[0] = di[axis];
    else memcpy(jidx, di, sizeof di);
    cg_line(c, "const long long j = %s;", cg_value(c, s->inputs[1], jidx));
    cg_line(c, "if (j < 0 || j >= %lld) { fu_report_index(fu_err, %d, j, (long long)e); return; }", (long long)out->shape[axis],
            (int)(s - f->nodes));
    const char *val = cg_value(c, s->inputs[2], di);
    cg_index oi[FU_MAX_RANK], off;
    memcpy(oi, di, sizeof di);
    memset(&oi[axis], 0, sizeof oi[axis]);
    snprintf(oi[axis].expr, sizeof oi[axis].expr, "j");
    cg_offset(c, out->rank, out->shape, out->strides, oi, &off);
    switch (out->dtype) {
    case FU_F32: cg_line(c, "atomicAdd(%s + %s, %s);", po->name, off.expr, val); break;
    case FU_F64: cg_line(c, "atomicAdd(%s + %s, %s);", po->name, off.expr, val); break;
    case FU_BF16:
        cg_line(c, "asm volatile(\"red.global.add.noftz.bf16 [%%0], %%1;\" :: \"l\"(%s + %s), \"h\"(fu_to_bf16(%s).x) : \"memory\");",
                po->name, off.expr, val);
        break;
    case FU_F16:
        cg_line(c, "asm volatile(\"red.global.add.noftz.f16 [%%0], %%1;\" :: \"l\"(%s + %s), \"h\"(fu_to_f16(%s).x) : \"memory\");",
                po->name, off.expr, val);
        break;
    case FU_I32: cg_line(c, "atomicAdd(%s + %s, (int)%s);", po->name, off.expr, val); break;
    case FU_I64:
        cg_line(c, "atomicAdd((unsigned long long *)(%s + %s), (unsigned long long)%s);", po->name, off.expr, val);
        break;
    default: break;
    }
    cg_close(c);
    return true;
}

bool fu_sched_scatter(const fu_group *g, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    const fu_node *s = the_scatter(g);
    if (!s) {
        snprintf(why, nwhy, "scatter: the group needs exactly one scatter");
        return false;
    }
    if (fu_group_has_op_kind(g, FU_KIND_REDUCE)) {
        snprintf(why, nwhy, "scatter: the group also has reductions");
        return false;
    }
    if (g->noutputs != 1 || g->outputs[0] != s->output) {
        snprintf(why, nwhy, "scatter: the scatter's result must be the group's only output");
        return false;
    }
    bool det = g->opts->scatter == FU_SCATTER_DETERMINISTIC && s->op == FU_OP_INDEX_ADD && s->attrs.axis == 0 &&
               fu_val(f, s->inputs[0])->rank >= 1;
    fu_kernel_writer *w = fu_calloc(1, sizeof *w);
    if (!w) {
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    bool ok = fu_kw_begin(w, g, kp, det ? "scatter (deterministic, rows owned by blocks)" : "scatter (atomic)", why, nwhy);
    kp->sched = FU_SCHED_SCATTER;
    if (ok) ok = det ? deterministic(g, s, w, kp, why, nwhy) : atomic_mode(g, s, w, kp, why, nwhy);
    if (ok) ok = fu_kw_finish(w, kp, why, nwhy);
    else fu_kw_abort(w);
    fu_free(w);
    return ok;
}
