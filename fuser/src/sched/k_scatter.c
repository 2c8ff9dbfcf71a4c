/*
 * k_scatter.c -- the scatter scheduler: index_add and scatter_add, with their
 * base, index and source expressions inlined.
 *
 * Deterministic mode (index_add along axis 0): each block owns a contiguous
 * range of output rows. It reads the whole index once, each warp its own
 * chunk, and keeps the positions that land in its rows, in index order.
 * Warp 0 sorts them by row stably (so sums run in index order) while the
 * other warps store the rows no position lands in (the base alone; with a
 * zero base and a short index, the block's first rows are stored earlier,
 * while the index loads: SCATTER_EARLY_BYTES). Then
 * every row a position lands in is written once: base + the source rows
 * that map to it, accumulated in f32 registers, a thread walking the sorted
 * positions 4 at a time (their source loads in flight together). Results
 * are bit-identical run to run, every output row is written once, and no
 * memset is needed. If more positions land in one block than its
 * shared list holds, the block flushes in index order, re-reading its rows.
 *
 * Atomic mode (any axis, and scatter_add): the output is cleared (or the base
 * copied) before the launch, then one thread per source element adds with an
 * atomic; where the index does not move along contiguous rows, one thread per
 * 16-byte vector, with one vector reduction. Outputs of the threads' domain's
 * shape (the source's for index_add, the index's for scatter_add) that do not
 * read the scatter are written beside it, each thread its element (a scalar a
 * thread then): the pointwise values a scatter's source comes from need no
 * kernel of their own.
 */
#include <stdio.h>
#include <string.h>

#include "plan.h"

#define LIST_CAP 3072 /* positions a block sorts at once: 36 KiB of shared memory */
#define MAX_ROWS_PER_BLOCK 2048 /* fu_cnt: 8 KiB more, under the 48 KiB of static shared memory */
/* The id scan stages a kept position as (position - pass start) << ROW_BITS |
 * row in an int, so a pass spans at most 2^(31 - ROW_BITS) positions. */
#define ROW_BITS 11
_Static_assert(MAX_ROWS_PER_BLOCK <= 1 << ROW_BITS, "a block's rows fit ROW_BITS");
#ifndef ROW_THREADS
/* Narrow rows: at least this many threads write rows side by side. Every
 * block reads the whole index, so fewer, larger blocks read less of it
 * (measured on the H200: 1024 against 512, 11% faster on the small f32
 * embedding backward, 1.5% on the big bf16 one). */
#define ROW_THREADS 1024
#endif
/* warp 0 sorts while the other warps store: a block needs more than one */
_Static_assert(ROW_THREADS >= 64, "a block has at least 2 warps");
/* Registers a thread may use: sets the blocks per SM of the one-wave grid,
 * which the launch bounds then hold ptxas to. */
#ifndef SCATTER_REG_BUDGET
#define SCATTER_REG_BUDGET 48
#endif
/* Slots of the sorted list a thread takes at a time: their source loads are
 * in flight together. */
#ifndef SCATTER_BATCH
#define SCATTER_BATCH 4
#endif
/* 1: a batch's source loads are unrolled, but the slots that use them are
 * one rolled loop, the loaded vectors shifting down a place each turn, so
 * NVRTC compiles one slot's code (measured here: bf16 embedding backward 225
 * -> 205 ms); 0: unrolled. The same for the id scan's ballots saved ~10 ms
 * but cost the bf16 big case 1% (its 32 warps issue the shifts of 64-bit
 * ids), so the scan stays unrolled. */
#ifndef SCATTER_ROLLED
#define SCATTER_ROLLED 1
#endif
/* Index loads in flight per lane of the id scan; a warp's chunk of up to
 * SCATTER_SCAN_ONE_TRIP loads per lane is read in one trip (one latency). */
#ifndef SCATTER_SCAN_LOADS
#define SCATTER_SCAN_LOADS 8
#endif
#ifndef SCATTER_SCAN_ONE_TRIP
#define SCATTER_SCAN_ONE_TRIP 12
#endif
/* Bytes of its first rows a block stores (zeros) while its index loads are
 * in flight, where the base is zero and the scan is one trip: the first
 * microseconds of the kernel otherwise write nothing. A row a position lands
 * in is written again by the walk (the barriers between order the two). */
/* 1: an atomic scatter's kernel also writes the group's outputs of its threads' domain's
 * shape (outputs_beside_ok); 0: the scatter's result is its only output. */
#ifndef SCATTER_BESIDE
#define SCATTER_BESIDE 1
#endif
#ifndef SCATTER_EARLY_BYTES
#define SCATTER_EARLY_BYTES 131072
#endif

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

/* Declares the inner-axis variables d1.. of x (variables first_var..) from the linear inner
 * position `db`. */
static void inner_vars(cg_ctx *c, const fu_value *x, const char *db, int first_var)
{
    int64_t stride = 1;
    for (int a = x->rank - 1; a >= 1; a--) {
        cg_digit_var(c, first_var + a - 1, db, stride, x->shape[a], a == 1);
        stride *= x->shape[a];
    }
}

/* The domain of one item of a row: variables v (output row), i (source row)
 * and the inner axes d1.. from the linear inner position db; xi indexes the
 * output row, si a source row. */
typedef struct row_item {
    cg_index xi[FU_MAX_RANK], si[FU_MAX_RANK];
    const char *acc_t;
    int vec;
} row_item;

static void declare_row_item(cg_ctx *c, const fu_node *s, int vec, row_item *ri);

/* Opens `for (it ...)` over a thread's items of a row (tpr threads, one vector
 * each; side_by_side: several rows at once, the thread's lane in its row is
 * fu_rl) and declares db and the inner variables. Close with cg_close. */
static void open_row_items(fu_kernel_writer *w, const fu_node *s, int items, int tpr, bool side_by_side, int vec,
                           row_item *ri)
{
    cg_ctx *c = &w->cg;
    const fu_value *x = fu_val(c->f, s->inputs[0]);
    int64_t Din = fu_shape_numel(x->rank - 1, x->shape + 1);
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "for (int it = 0; it < %d; it++) {", items);
    c->indent++;
    c->scope++;
    cg_line(c, "const %s db = ((%s)it * %d + %s) * %d;", it, it, tpr, side_by_side ? "fu_rl" : "threadIdx.x", vec);
    cg_line(c, "if (db >= %lld) break;", (long long)Din);
    declare_row_item(c, s, vec, ri);
}

/* Declares the inner variables of inner position db (declared by the
 * caller) and sets up ri over v, i and them. */
static void declare_row_item(cg_ctx *c, const fu_node *s, int vec, row_item *ri)
{
    const fu_value *x = fu_val(c->f, s->inputs[0]), *out = fu_val(c->f, s->output);
    c->nvars = 0;
    cg_index_var(&ri->xi[0], cg_add_var(c, "v"), "v");
    cg_index_var(&ri->si[0], cg_add_var(c, "i"), "i");
    c->lane_var = -1;
    for (int a = 1; a < x->rank; a++) {
        char nm[16];
        snprintf(nm, sizeof nm, "d%d", a);
        int var = cg_add_var(c, nm);
        cg_index_var(&ri->xi[a], var, nm);
        ri->si[a] = ri->xi[a];
        if (a == x->rank - 1) c->lane_var = var;
    }
    inner_vars(c, x, "db", 2);
    c->vec = vec;
    if (vec > 1) ri->xi[x->rank - 1].lane_coef = ri->si[x->rank - 1].lane_coef = 1;
    ri->acc_t = cg_compute_type(out->dtype);
    ri->vec = vec;
}

/* For each lane, acc[lane] = t at idx (in the accumulator type). */
static void emit_lanes(cg_ctx *c, const row_item *ri, fu_tensor t, const cg_index *idx, const char *acc)
{
    int rank = fu_val(c->f, t)->rank;
    for (int lane = 0; lane < ri->vec; lane++) {
        c->lane = lane;
        cg_index l[FU_MAX_RANK];
        memcpy(l, idx, sizeof l);
        cg_index_refresh(c, &l[rank - 1]);
        cg_line(c, "%s[%d] = (%s)%s;", acc, lane, ri->acc_t, cg_value(c, t, l));
    }
    c->lane = 0;
}

/* The offset of output row v's item, at lane 0. */
static const cg_param *row_offset(fu_kernel_writer *w, const fu_node *s, const row_item *ri, cg_index *off)
{
    cg_ctx *c = &w->cg;
    const fu_value *out = fu_val(c->f, s->output);
    c->lane = 0;
    cg_offset(c, out->rank, out->shape, out->strides, ri->xi, off);
    return fu_kw_output(w, s->output);
}

/* acc[lane] = what output row v holds (a later flush adds to it): one
 * vector load (a plain one: this kernel wrote the row), as the row stores. */
static void emit_current(fu_kernel_writer *w, const fu_node *s, const row_item *ri, const char *acc)
{
    cg_ctx *c = &w->cg;
    cg_index off;
    const cg_param *po = row_offset(w, s, ri, &off);
    if (ri->vec > 1) {
        fu_dtype dt = fu_val(c->f, s->output)->dtype;
        const char *wide = cg_vector_type((int)fu_dtype_size(dt) * ri->vec);
        char base[CG_EXPR];
        cg_offset_base_expr(c, &off, base, sizeof base);
        cg_line(c, "alignas(16) %s cur[%d];", cg_storage_type(dt), ri->vec);
        cg_line(c, "*(%s *)cur = *(const %s *)(%s + %s);", wide, wide, po->name, base);
        for (int lane = 0; lane < ri->vec; lane++) cg_line(c, "%s[%d] = (%s)fu_load(cur[%d]);", acc, lane, ri->acc_t, lane);
        return;
    }
    for (int lane = 0; lane < ri->vec; lane++) {
        c->lane = lane;
        cg_index_refresh(c, &off);
        cg_line(c, "%s[%d] = (%s)fu_load(%s[%s]);", acc, lane, ri->acc_t, po->name, off.expr);
    }
    c->lane = 0;
}

/* Stores acc[0..vec) to output row v, with vector stores. */
static void emit_row_store(fu_kernel_writer *w, const fu_node *s, const row_item *ri, const char *acc)
{
    cg_ctx *c = &w->cg;
    cg_index off;
    const cg_param *po = row_offset(w, s, ri, &off);
    if (ri->vec > 1) {
        char base[CG_EXPR], lanes[16][32];
        cg_offset_base_expr(c, &off, base, sizeof base);
        for (int lane = 0; lane < ri->vec; lane++) snprintf(lanes[lane], sizeof lanes[lane], "%s[%d]", acc, lane);
        fu_kw_vector_store(w, po, base, "o", (const char (*)[32])lanes, ri->vec);
    } else {
        char val[40];
        snprintf(val, sizeof val, "%s[0]", acc);
        fu_kw_store(w, po, off.expr, val);
    }
}

/* Initializes acc[0..vec) for output row v at its first slot: the base at
 * the first flush, what the row holds at a later one. */
static void emit_row_start(fu_kernel_writer *w, const fu_node *s, const row_item *ri, const char *acc)
{
    cg_ctx *c = &w->cg;
    cg_line(c, "if (first) {");
    c->indent++;
    c->scope++;
    emit_lanes(c, ri, s->inputs[0], ri->xi, acc);
    c->scope--;
    c->indent--;
    cg_drop_scope(c);
    cg_line(c, "} else {");
    c->indent++;
    emit_current(w, s, ri, acc);
    c->indent--;
    cg_line(c, "}");
}

/* Base-only rows, one vector per thread in turn from vector k0 of the
 * block's rows up to `end` (a C expression), k0 + `stride` next: the rows
 * no position lands in (skip_hit: fu_hit's bit clear) or every one. */
static void emit_base_row_loop(fu_kernel_writer *w, const fu_node *s, int64_t rows, int64_t vecs, int vec, const char *k0,
                               int stride, const char *end, bool skip_hit)
{
    cg_ctx *c = &w->cg;
    const char *it = c->index64 ? "long long" : "int";
    const char *kt = rows * vecs >= INT32_MAX ? "long long" : "int";
    cg_line(c, "#pragma unroll 1");
    cg_line(c, "for (%s k = %s; k < (%s)%s * %lld; k += %d) {", kt, k0, kt, end, (long long)vecs, stride);
    c->indent++;
    c->scope++;
    cg_line(c, "const int r = (int)(k / %lld);", (long long)vecs);
    if (skip_hit) cg_line(c, "if (fu_hit[r >> 5] >> (r & 31) & 1u) continue;");
    cg_line(c, "const %s v = v0 + r;", it);
    cg_line(c, "const %s db = (%s)(k - (%s)r * %lld) * %d;", it, it, kt, (long long)vecs, vec);
    row_item ri;
    declare_row_item(c, s, vec, &ri);
    cg_line(c, "%s b[%d];", ri.acc_t, ri.vec);
    emit_lanes(c, &ri, s->inputs[0], ri.xi, "b");
    emit_row_store(w, s, &ri, "b");
    cg_close(c);
}

/* The rows no position lands in (fu_hit's bit clear), the base alone,
 * stored by the threads from 32 on, one vector each in turn over the block's
 * rows past the fu_early stored during the scan: warp 0 meanwhile sorts the
 * list, so the sort's latency hides behind these stores, most of the bytes
 * when the index is short. */
static void emit_base_rows(fu_kernel_writer *w, const fu_node *s, int64_t rows, int64_t vecs, int vec, int threads)
{
    char k0[64];
    snprintf(k0, sizeof k0, "fu_early * %lld + threadIdx.x - 32", (long long)vecs);
    emit_base_row_loop(w, s, rows, vecs, vec, k0, threads - 32, "nrows", true);
}

/* Slot e0 + u of the walk, whose source vector is x[xu]: starts its row at
 * the row's first slot, adds, stores at the row's last. */
static void emit_slot(fu_kernel_writer *w, const fu_node *s, const row_item *ri, const char *u, int xu)
{
    cg_ctx *c = &w->cg;
    cg_line(c, "if (e0 + %s < eb) {", u);
    c->indent++;
    c->scope++;
    cg_line(c, "const int e = e0 + %s, r = fu_srow[e];", u);
    cg_line(c, "const %s v = v0 + r;", c->index64 ? "long long" : "int");
    cg_line(c, "if (e == fu_cnt[r]) {");
    c->indent++;
    c->scope++;
    emit_row_start(w, s, ri, "acc");
    c->scope--;
    c->indent--;
    cg_drop_scope(c);
    cg_line(c, "}");
    for (int lane = 0; lane < ri->vec; lane++) cg_line(c, "acc[%d] += x[%d][%d];", lane, xu, lane);
    cg_line(c, "if (e + 1 == fu_cnt[r + 1]) {");
    c->indent++;
    c->scope++;
    emit_row_store(w, s, ri, "acc");
    cg_close(c);
    cg_close(c); /* e < eb */
}

/* The block's rows, after the sort. A thread walks its group's slots of the
 * sorted list in order (rows whole, each row's positions in index order),
 * `batch` slots at a time: the source loads of a batch are all in flight
 * before any is added, whatever the rows' counts (a row of several positions
 * costs no more latencies than as many rows of one). One accumulator carries
 * across batches: set from the base (or, at a later flush, from what the row
 * holds) at a row's first slot, stored at its last. Groups (several rows
 * side by side) split the list at row boundaries near nlist * group / conc. */
static void emit_rows(fu_kernel_writer *w, const fu_node *s, int items, int tpr, int conc, int vec, int batch)
{
    cg_ctx *c = &w->cg;
    const char *it = c->index64 ? "long long" : "int";
    const char *group = conc > 1 ? "fu_r0" : "0";
    cg_line(c, "// this group's slots [ea, eb): whole rows (a cut inside a row moves to the row's end)");
    cg_line(c, "const int ca = %s * nlist / %d, cb = (%s + 1) * nlist / %d;", group, conc, group, conc);
    cg_line(c, "const int ea = ca < nlist && fu_cnt[fu_srow[ca]] != ca ? fu_cnt[fu_srow[ca] + 1] : ca;");
    cg_line(c, "const int eb = cb < nlist && fu_cnt[fu_srow[cb]] != cb ? fu_cnt[fu_srow[cb] + 1] : cb;");
    row_item ri;
    open_row_items(w, s, items, tpr, conc > 1, vec, &ri);
    cg_line(c, "%s acc[%d];", ri.acc_t, vec);
    cg_line(c, "for (int e0 = ea; e0 < eb; e0 += %d) {", batch);
    c->indent++;
    c->scope++;
    cg_line(c, "%s x[%d][%d];", ri.acc_t, batch, vec);
    cg_line(c, "// %d source loads in flight (past eb: slot eb - 1 again, unused)", batch);
    for (int u = 0; u < batch; u++) {
        char xu[16];
        snprintf(xu, sizeof xu, "x[%d]", u);
        cg_open(c);
        if (u == 0) cg_line(c, "const %s i = fu_sorted[e0];", it);
        else cg_line(c, "const %s i = fu_sorted[min(e0 + %d, eb - 1)];", it, u);
        emit_lanes(c, &ri, s->inputs[2], ri.si, xu);
        cg_close(c);
    }
    if (SCATTER_ROLLED && batch > 1) {
        cg_line(c, "#pragma unroll 1 // one slot's code: NVRTC time");
        cg_line(c, "for (int u = 0; u < %d; u++) {", batch);
        c->indent++;
        c->scope++;
        emit_slot(w, s, &ri, "u", 0);
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (int q = 0; q < %d; q++) // the next slot's vector moves to x[0]", batch - 1);
        cg_line(c, "  #pragma unroll");
        cg_line(c, "  for (int l = 0; l < %d; l++) x[q][l] = x[q + 1][l];", vec);
        cg_close(c); /* u */
    } else {
        for (int u = 0; u < batch; u++) {
            char uu[12];
            snprintf(uu, sizeof uu, "%d", u);
            emit_slot(w, s, &ri, uu, u);
        }
    }
    cg_close(c); /* e0 */
    cg_close(c); /* it */
}

/* Counts the list's entries per row (shared atomics: the same counts in any
 * order) into fu_cnt[0..nrows), and marks the rows hit in fu_hit. */
/* The text of the kernel's fixed steps, with ${KEY}s filled in by
 * fu_kw_template from the parameters (det_params). */

/* Counts the list's positions per owned row (fu_cnt) and marks the hit rows (fu_hit). */
static const char list_count_text[] =
    "__syncthreads();\n"
    "#pragma unroll 1\n"
    "for (int r = threadIdx.x; r <= nrows; r += ${THREADS}) fu_cnt[r] = 0;\n"
    "for (int q = threadIdx.x; q < ${HIT_WORDS}; q += ${THREADS}) fu_hit[q] = 0u;\n"
    "__syncthreads();\n"
    "#pragma unroll 1\n"
    "for (int e = threadIdx.x; e < nlist; e += ${THREADS}) {\n"
    "  const int r = fu_row[e];\n"
    "  atomicAdd(&fu_cnt[r], 1);\n"
    "  atomicOr(&fu_hit[r >> 5], 1u << (r & 31));\n"
    "}\n"
    "__syncthreads();\n";

/* Warp 0 sorts the counted list by row, stably: an inclusive prefix over the
 * row counters (a chunk per lane, then a warp scan), then it places the
 * entries from the end, 32 at a time: lanes of one row (__match_any_sync)
 * take consecutive slots in index order, so each row's positions stay in
 * index order and the sums in the row writes keep a fixed order. After it
 * fu_cnt[r] is row r's first slot, fu_cnt[nrows] = nlist, and fu_srow[e]
 * (fu_pos's second use) the row of slot e. One warp, no block barrier: the
 * other warps store the rows no position lands in meanwhile. */
static const char warp_sort_text[] =
    "const int lane = threadIdx.x;\n"
    "{ // inclusive prefix: fu_cnt[r] = the end of row r's slots\n"
    "  const int per = (nrows + 32) / 32, r0 = lane * per, r1 = min(r0 + per, nrows + 1);\n"
    "  int run = 0;\n"
    "  #pragma unroll 1\n"
    "  for (int r = r0; r < r1; r++) run += fu_cnt[r];\n"
    "  int incl = run;\n"
    "  for (int o = 1; o < 32; o <<= 1) { const int y = __shfl_up_sync(0xffffffffu, incl, o); if (lane >= o) incl += y; }\n"
    "  int acc = incl - run;\n"
    "  #pragma unroll 1\n"
    "  for (int r = r0; r < r1; r++) { acc += fu_cnt[r]; fu_cnt[r] = acc; }\n"
    "}\n"
    "__syncwarp();\n"
    "// place from the end; each row's end moves down to its start\n"
    "#pragma unroll 1\n"
    "for (int e0 = (nlist - 1) & ~31; e0 >= 0; e0 -= 32) {\n"
    "  const int e = e0 + lane;\n"
    "  const int row = e < nlist ? fu_row[e] : -1 - lane; // idle lanes match no one\n"
    "  const unsigned peers = __match_any_sync(0xffffffffu, row);\n"
    "  if (e < nlist) fu_sorted[fu_cnt[row] - 1 - __popc(peers >> lane >> 1)] = fu_pos[e];\n"
    "  __syncwarp();\n"
    "  if (e < nlist && lane == __ffs(peers) - 1) fu_cnt[row] -= __popc(peers);\n"
    "  __syncwarp();\n"
    "}\n"
    "#pragma unroll 1\n"
    "for (int r = lane; r < nrows; r += 32)\n"
    "  #pragma unroll 1\n"
    "  for (int e = fu_cnt[r]; e < fu_cnt[r + 1]; e++) fu_srow[e] = r;\n";

/* The shared lists of a block and its rows. */
static const char block_text[] =
    "__shared__ int fu_cnt[${RPB_1}]; // per owned row: end, then start of its positions\n"
    "__shared__ int fu_pos[${LIST_CAP}];    // positions of the index that land in owned rows, in order\n"
    "__shared__ int fu_row[${LIST_CAP}];\n"
    "__shared__ int fu_sorted[${LIST_CAP}]; // the same, stably sorted by row\n"
    "__shared__ int fu_wcount[32]; // kept positions of each warp's chunk in a pass (-1: more than its part)\n"
    "__shared__ unsigned fu_hit[${HIT_WORDS}]; // bit r: a position lands in owned row r\n"
    "int *const fu_srow = fu_pos; // its second use, after the sort: the row of each slot\n"
    "const ${IT} v0 = (${IT})blockIdx.x * ${RPB};\n"
    "const int nrows = (int)(${V} - v0 < ${RPB} ? ${V} - v0 : ${RPB});\n"
    "const int fu_early = min(nrows, ${EARLY}); // rows stored while the index loads\n";

/* The scan's ballots: a position kept when it lands in an owned row, staged in the warp's part. */
static const char scan_keep_text[] =
    "#pragma unroll\n"
    "for (int u = 0; u < ${U}; u++) {\n"
    "  const long long p = p0 + 32 * u, j = jv[u];\n"
    "  if (p < w1 && (j < 0 || j >= ${V})) fu_report_index(fu_err, ${NODE}, j, p);\n"
    "  const bool kept = p < w1 && j >= v0 && j < v0 + nrows;\n"
    "  const unsigned m = __ballot_sync(0xffffffffu, kept);\n"
    "  const int slot = n + __popc(m & ((1u << lane) - 1u));\n"
    "  if (kept && slot < ${CAP}) fu_stage[slot] = (int)((p - pass) << ${ROW_BITS}) | (int)(j - v0);\n"
    "  n += __popc(m);\n"
    "}\n";

/* After a pass's loads: the warps' counts, a redo on overflow, a flush when
 * the list is full, and the warps' positions appended in order. */
static const char pass_end_text[] =
    "if (over) { // a warp kept more than its part: redo this pass, and the rest of it, in chunks that fit\n"
    "  small_until = pass + ${NWARPS} * ch;\n"
    "  ch = ${CAP};\n"
    "  __syncthreads();\n"
    "  continue;\n"
    "}\n"
    "if (past_end ? nlist > 0 || first : nlist + total > ${LIST_CAP}) {\n"
    "  flush(); // the sort takes fu_sorted: a pass that did not fit is read again into the empty list\n"
    "  if (!past_end) continue;\n"
    "}\n"
    "if (past_end) break;\n"
    "#pragma unroll 1\n"
    "for (int k = lane; k < n; k += 32) {\n"
    "  const int e = fu_stage[k];\n"
    "  fu_pos[nlist + before + k] = (int)(pass + (e >> ${ROW_BITS}));\n"
    "  fu_row[nlist + before + k] = e & ${ROW_MASK};\n"
    "}\n"
    "nlist += total;\n"
    "pass += ${NWARPS} * ch;\n"
    "if (pass >= small_until) ch = ${CH};\n"
    "__syncthreads();\n";

/* Each warp's count of a pass, their total and the count before each warp. */
static const char warp_counts_text[] =
    "if (lane == 0) fu_wcount[warp] = n > ${CAP} ? -1 : n;\n"
    "__syncthreads();\n"
    "// every warp: the pass's total and the count of the warps before it\n"
    "const int cw = lane < ${NWARPS} ? fu_wcount[lane] : 0;\n"
    "over = __any_sync(0xffffffffu, cw < 0);\n"
    "int incl = cw;\n"
    "for (int o = 1; o < 32; o <<= 1) { const int y = __shfl_up_sync(0xffffffffu, incl, o); if (lane >= o) incl += y; }\n"
    "total = __shfl_sync(0xffffffffu, incl, 31);\n"
    "before = __shfl_sync(0xffffffffu, incl - cw, warp);\n";

/* The deterministic scatter's decisions: what the kernel is written from. */
typedef struct det_params {
    int64_t V, M, Din;   /* output rows, source rows, elements of a row */
    int vec;             /* elements per vector */
    int64_t vecs;        /* vectors of a row */
    int tpr, conc;       /* threads per row, rows written at once */
    int threads, items;  /* a block's threads; vectors of a row per thread */
    int per_sm;          /* blocks resident per SM (the launch bounds' minimum) */
    int64_t grid, rpb;   /* blocks; output rows a block owns */
    int nwarps, cap;     /* warps; staged positions per warp */
    int64_t ch;          /* positions of a warp's scan chunk */
    int U;               /* index loads in flight per lane */
    int64_t early, early_warps; /* rows stored while the index loads, by that many warps */
} det_params;

/* The deterministic scatter's heuristics: every number of the kernel. */
static bool det_heuristics(const fu_group *g, const fu_node *s, det_params *d, fu_kernel_plan *kp, char *why, size_t nwhy)
{
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
    /* One wave: blocks resident per SM by threads, by registers (up to
     * SCATTER_REG_BUDGET per thread, held by the launch bounds) and by shared
     * memory (more, smaller blocks would run as a second wave). */
    int per_sm = g->opts->max_threads_per_sm / threads;
    if (per_sm > 65536 / (threads * SCATTER_REG_BUDGET)) per_sm = 65536 / (threads * SCATTER_REG_BUDGET);
    int smem = 3 * LIST_CAP * 4 + (MAX_ROWS_PER_BLOCK + 1) * 4 + MAX_ROWS_PER_BLOCK / 8 + 32 * 4;
    int smem_fit = g->opts->max_shared_per_sm / (smem + g->opts->reserved_shared_per_block);
    if (per_sm > smem_fit) per_sm = smem_fit;
    if (per_sm < 1) per_sm = 1;
    int64_t grid = (int64_t)g->opts->sm_count * per_sm;
    if (grid > V) grid = V;
    if (grid < 1) grid = 1;
    int64_t rpb = (V + grid - 1) / grid;
    if (rpb > MAX_ROWS_PER_BLOCK) rpb = MAX_ROWS_PER_BLOCK;
    grid = (V + rpb - 1) / rpb;
    /* The id scan: each warp reads its own chunk of the index, `ch` positions,
     * into its own part of the staging list (cap per warp); a pass covers
     * nwarps chunks, at most the 2^(31 - ROW_BITS) positions a staged entry
     * can hold. */
    int nwarps = threads / 32, cap = LIST_CAP / nwarps;
    const int64_t max_pass = (int64_t)1 << (31 - ROW_BITS);
    int64_t ch = (M + nwarps - 1) / nwarps;
    ch = (ch + 31) / 32 * 32;
    if (ch > max_pass / nwarps) ch = max_pass / nwarps / 32 * 32;
    if (ch < cap / 32 * 32) ch = cap / 32 * 32;
    /* the first rows stored while the index loads (SCATTER_EARLY_BYTES) */
    const int64_t row_bytes = Din * (int64_t)fu_dtype_size(fu_val(f, s->output)->dtype);
    const bool one_trip = (ch + 31) / 32 <= SCATTER_SCAN_ONE_TRIP;
    /* stored by the warps whose chunk of the first pass holds a position
     * (each loads once there): the others never reach those loads */
    const int64_t early_warps = M > 0 ? ((M + ch - 1) / ch < nwarps ? (M + ch - 1) / ch : nwarps) : 0;
    int64_t early = base_is_zero(g, s->inputs[0]) && one_trip && early_warps > 0 ? SCATTER_EARLY_BYTES / row_bytes : 0;
    if (early > rpb) early = rpb;
    int U = (int)((ch + 31) / 32);
    if (U > SCATTER_SCAN_ONE_TRIP) U = SCATTER_SCAN_LOADS;
    *d = (det_params){V, M, Din, vec, vecs, tpr, conc, threads, items, per_sm, grid, rpb, nwarps, cap, ch, U, early, early_warps};
    kp->grid = (unsigned)grid;
    kp->block = (unsigned)threads;
    snprintf(kp->config, sizeof kp->config,
             "deterministic: rows=%lld row_size=%lld sources=%lld rows_per_block=%lld vec=%d threads=%d "
             "(%d per row, %d rows at once) list=%d scan_chunk=%lld per_warp=%d",
             (long long)V, (long long)Din, (long long)M, (long long)rpb, vec, threads, tpr, conc, LIST_CAP, (long long)ch, cap);
    fu_strbuf js;
    fu_sb_init(&js);
    fu_sb_printf(&js,
                 "{\"mode\": \"deterministic\", \"rows\": %lld, \"row_size\": %lld, \"sources\": %lld, \"vec\": %d, "
                 "\"threads\": %d, \"threads_per_row\": %d, \"rows_at_once\": %d, \"items\": %d, \"blocks_per_sm\": %d, "
                 "\"grid\": %lld, \"rows_per_block\": %lld, \"list\": %d, \"warps\": %d, \"per_warp\": %d, "
                 "\"scan_chunk\": %lld, \"scan_loads\": %d, \"early_rows\": %lld, \"early_warps\": %lld}",
                 (long long)V, (long long)Din, (long long)M, vec, threads, tpr, conc, items, per_sm, (long long)grid,
                 (long long)rpb, LIST_CAP, nwarps, cap, (long long)ch, U, (long long)early, (long long)early_warps);
    kp->params_json = fu_sb_take(&js);
    return true;
}

/* The values of the templates' ${KEY}s (NULL-terminated pairs). */
typedef struct det_keys {
    char buf[20][32];
    const char *kv[41];
} det_keys;

static void det_keys_fill(det_keys *k, const det_params *d, const cg_ctx *c, int node)
{
    const char *names[] = {"THREADS", "HIT_WORDS", "RPB", "RPB_1", "LIST_CAP", "V", "EARLY", "U", "NODE",
                           "CAP", "ROW_BITS", "ROW_MASK", "NWARPS", "CH", "IT"};
    long long vals[] = {d->threads, MAX_ROWS_PER_BLOCK / 32, (long long)d->rpb, (long long)d->rpb + 1, LIST_CAP,
                        (long long)d->V, (long long)d->early, d->U, node, d->cap, ROW_BITS, (1 << ROW_BITS) - 1,
                        d->nwarps, (long long)d->ch, 0};
    int n = (int)(sizeof names / sizeof names[0]);
    for (int i = 0; i < n; i++) {
        if (!strcmp(names[i], "IT")) snprintf(k->buf[i], sizeof k->buf[i], "%s", c->index64 ? "long long" : "int");
        else snprintf(k->buf[i], sizeof k->buf[i], "%lld", vals[i]);
        k->kv[2 * i] = names[i];
        k->kv[2 * i + 1] = k->buf[i];
    }
    k->kv[2 * n] = NULL;
}

/* The deterministic scatter's kernel, from its parameters. */
static void det_emit(const fu_group *g, const fu_node *s, const det_params *d, fu_kernel_writer *w, fu_kernel_plan *kp)
{
    cg_ctx *c = &w->cg;
    const fu_fusion *f = g->f;
    det_keys keys;
    det_keys_fill(&keys, d, c, (int)(s - f->nodes));
    const char *const *kv = keys.kv;
    fu_kw_signature(w, kp, (unsigned)d->threads, (unsigned)d->per_sm, false);
    fu_kw_template(c, block_text, kv);
    if (d->conc > 1)
        cg_line(c, "const int fu_rl = threadIdx.x %% %d, fu_r0 = threadIdx.x / %d; // lane in a row, first row", d->tpr, d->tpr);
    cg_line(c, "int nlist = 0;");
    cg_line(c, "bool first = true;");
    /* the flush: sort the list by row, then write owned rows */
    cg_line(c, "auto flush = [&]() {");
    c->indent++;
    c->scope++;
    fu_kw_template(c, list_count_text, kv);
    cg_line(c, "if (threadIdx.x < 32) { // warp 0 sorts the list by row");
    c->indent++;
    fu_kw_template(c, warp_sort_text, kv);
    c->indent--;
    cg_line(c, "} else if (first) { // the other warps meanwhile store the rows no position lands in");
    c->indent++;
    emit_base_rows(w, s, d->rpb, d->vecs, d->vec, d->threads);
    c->indent--;
    cg_line(c, "}");
    cg_line(c, "__syncthreads();");
    /* Measured on the H200: the hit rows first in odd blocks (their walk
     * waiting on loads while even blocks store) was 4% slower on both
     * embedding sizes, and in all blocks 1-2%. */
    emit_rows(w, s, d->items, d->tpr, d->conc, d->vec, SCATTER_BATCH);
    cg_line(c, "first = false;");
    cg_line(c, "nlist = 0;");
    cg_line(c, "__syncthreads();");
    c->scope--;
    c->indent--;
    cg_line(c, "};");
    /* Scan the index, keep positions in owned rows, in order: each warp its
     * chunk (coalesced loads, a ballot per load, no block barrier), then the
     * warps' lists are appended to the block's in warp order, which is index
     * order. A chunk that keeps more than its part of the staging list makes
     * the block redo the pass, and the rest of it, in chunks of `cap`
     * positions (which cannot overflow), so the list is the same whatever the
     * timing. One more round past the end flushes what is left: flush() has
     * one call site, so it is compiled once (two inlined copies cost NVRTC
     * ~50 ms). */
    const int U = d->U;
    cg_line(c, "const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;");
    cg_line(c, "int *const fu_stage = fu_sorted + warp * %d; // this warp's kept positions in a pass (fu_sorted is free until the sort)", d->cap);
    cg_line(c, "long long ch = %lld, small_until = 0; // chunk per warp; %d (cannot overflow) until small_until", (long long)d->ch, d->cap);
    cg_line(c, "for (long long pass = 0;;) {");
    c->indent++;
    c->scope++;
    cg_line(c, "const bool past_end = pass >= %lld; // the same in every thread", (long long)d->M);
    cg_line(c, "int n = 0, total = 0, before = 0; // this warp's kept positions, the pass's, the warps' before this one");
    cg_line(c, "bool over = false;");
    cg_line(c, "if (!past_end) {");
    c->indent++;
    c->scope++;
    cg_line(c, "const long long w0 = pass + warp * ch, w1 = min(w0 + ch, %lldll);", (long long)d->M);
    cg_line(c, "for (long long p1 = w0; p1 < w1; p1 += %d) { // the same trip count in all lanes: the ballots need them", 32 * U);
    c->indent++;
    c->scope++;
    cg_line(c, "const long long p0 = p1 + lane;");
    cg_line(c, "long long jv[%d]; // %d loads in flight", U, U);
    c->nvars = 0;
    c->vec = 1;
    c->lane = 0;
    c->lane_var = -1;
    int pv = cg_add_var(c, "p0");
    for (int u = 0; u < U; u++) {
        cg_line(c, "jv[%d] = -1;", u);
        cg_line(c, "if (p0 + %d < w1) {", 32 * u);
        c->indent++;
        c->scope++;
        cg_index ii;
        cg_index_var(&ii, pv, "p0");
        ii.c = 32 * u;
        cg_index_refresh(c, &ii);
        cg_line(c, "jv[%d] = %s;", u, cg_value(c, s->inputs[1], &ii));
        c->scope--;
        c->indent--;
        cg_drop_scope(c);
        cg_line(c, "}");
    }
    if (d->early > 0) {
        cg_line(c, "if (pass == 0 && warp < %lld) { // the first rows, while the loads are in flight (their latency is most of the scan)",
                (long long)d->early_warps);
        c->indent++;
        c->scope++;
        emit_base_row_loop(w, s, d->rpb, d->vecs, d->vec, "threadIdx.x", (int)d->early_warps * 32, "fu_early", false);
        c->scope--;
        cg_drop_scope(c);
        c->indent--;
        cg_line(c, "}");
        /* the loop's variables: the scan's again */
        c->nvars = 0;
        c->vec = 1;
        c->lane = 0;
        c->lane_var = -1;
        pv = cg_add_var(c, "p0");
    }
    fu_kw_template(c, scan_keep_text, kv);
    cg_close(c); /* p0 */
    fu_kw_template(c, warp_counts_text, kv);
    cg_close(c); /* !past_end */
    fu_kw_template(c, pass_end_text, kv);
    cg_close(c); /* pass */
    cg_close(c);
}

/* Elements one atomic adds in the atomic mode: a 16-byte vector along the
 * last axis where the index does not move along it (index_add on another
 * axis) and the output's rows are contiguous and aligned to the vector; 1
 * elsewhere, and for dtypes without vector reductions. */
static int atomic_vec(const fu_node *s, const fu_value *out)
{
    int last = out->rank - 1;
    if (s->op != FU_OP_INDEX_ADD || out->rank < 2 || s->attrs.axis == last || out->strides[last] != 1) return 1;
    int vec = out->dtype == FU_F32 ? 4 : out->dtype == FU_BF16 || out->dtype == FU_F16 ? 8 : 1;
    while (vec > 1 && out->shape[last] % vec) vec /= 2;
    for (int a = 0; a < last; a++)
        if (out->strides[a] % vec) return 1;
    return vec;
}

/* The reduction of lanes val[0..vec) into out[off..off+vec): one vector red
 * on sm_90+ (.v2/.v4 f32, bf16x2 and f16x2 pairs), element by element below. */
static void emit_atomic_add(cg_ctx *c, fu_dtype dt, const char *out, const char *off, const char (*val)[CG_EXPR], int vec)
{
    const char *half = dt == FU_BF16 ? "bf16" : "f16";
    if (vec > 1) {
        bool packed = dt != FU_F32;
        int words = packed ? vec / 2 : vec;
        fu_strbuf ops, args; /* "%1, %2 ..." and the operands */
        fu_sb_init(&ops);
        fu_sb_init(&args);
        for (int k = 0; k < words; k++) {
            fu_sb_printf(&ops, "%s%%%d", k ? ", " : "", k + 1);
            if (packed) fu_sb_printf(&args, ", \"r\"(fu_pack_%sx2(%s, %s))", half, val[2 * k], val[2 * k + 1]);
            else fu_sb_printf(&args, ", \"f\"(%s)", val[k]);
        }
        char type[32];
        if (!packed) snprintf(type, sizeof type, "v%d.f32", vec);
        else if (words == 1) snprintf(type, sizeof type, "noftz.%sx2", half);
        else snprintf(type, sizeof type, "noftz.v%d.%sx2", words, half);
        cg_line(c, "#if __CUDA_ARCH__ >= 900");
        cg_line(c, "asm volatile(\"red.global.add.%s [%%0], %s%s%s;\" :: \"l\"(%s + %s)%s : \"memory\");", type,
                words > 1 ? "{" : "", ops.data ? ops.data : "", words > 1 ? "}" : "", out, off, args.data ? args.data : "");
        fu_sb_free(&ops);
        fu_sb_free(&args);
        cg_line(c, "#else");
    }
    for (int lane = 0; lane < vec; lane++) {
        char at[CG_EXPR + 16]; /* off, " + ", the lane (gcc counts 10 digits) */
        snprintf(at, sizeof at, lane ? "%s + %d" : "%s", off, lane);
        switch (dt) {
        case FU_F32:
        case FU_F64: cg_line(c, "atomicAdd(%s + %s, %s);", out, at, val[lane]); break;
        case FU_BF16:
        case FU_F16:
            cg_line(c, "asm volatile(\"red.global.add.noftz.%s [%%0], %%1;\" :: \"l\"(%s + %s), \"h\"(fu_to_%s(%s).x) : \"memory\");",
                    half, out, at, half, val[lane]);
            break;
        case FU_I32: cg_line(c, "atomicAdd(%s + %s, (int)%s);", out, at, val[lane]); break;
        case FU_I64:
            cg_line(c, "atomicAdd((unsigned long long *)(%s + %s), (unsigned long long)%s);", out, at, val[lane]);
            break;
        default: break;
        }
    }
    if (vec > 1) cg_line(c, "#endif");
}

/* The atomic scatter's decisions. */
/* The domain whose elements atomic mode gives a thread each: the source (index_add),
 * the index (scatter_add). */
static const fu_value *atomic_domain(const fu_fusion *f, const fu_node *s)
{
    return fu_val(f, s->inputs[s->op == FU_OP_INDEX_ADD ? 2 : 1]);
}

/* Whether an op of the group reads tensor t. */
static bool group_reads(const fu_group *g, fu_tensor t)
{
    for (int i = 0; i < g->f->nnodes; i++)
        if (g->in_group[i])
            for (int k = 0; k < g->f->nodes[i].ninputs; k++)
                if (g->f->nodes[i].inputs[k] == t) return true;
    return false;
}

/* The group's outputs but the scatter's: each of the atomic domain's shape, and nothing in
 * the group reads the scatter's result (so none of them does). Else why says which. */
static bool outputs_beside_ok(const fu_group *g, const fu_node *s, bool atomic, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    if (g->noutputs == 1 && g->outputs[0] == s->output) return true;
    if (!atomic || !SCATTER_BESIDE) {
        snprintf(why, nwhy, "scatter: the scatter's result must be the group's only output");
        return false;
    }
    if (group_reads(g, s->output)) {
        snprintf(why, nwhy, "scatter: the group reads the scatter's result '%s'", fu_val(f, s->output)->name);
        return false;
    }
    const fu_value *dom = atomic_domain(f, s);
    for (int i = 0; i < g->noutputs; i++) {
        const fu_value *o = fu_val(f, g->outputs[i]);
        if (g->outputs[i] == s->output) continue;
        if (o->rank != dom->rank || memcmp(o->shape, dom->shape, (size_t)dom->rank * sizeof *dom->shape)) {
            snprintf(why, nwhy, "scatter: output '%s' beside the scatter is not of its %s '%s''s shape", o->name,
                     s->op == FU_OP_INDEX_ADD ? "source" : "index", dom->name);
            return false;
        }
    }
    return true;
}

typedef struct atomic_params {
    int vec;       /* elements one atomic adds */
    int64_t n;     /* threads with work: source vectors (index_add) or index elements */
    int threads;
} atomic_params;

static bool atomic_heuristics(const fu_group *g, const fu_node *s, atomic_params *a, fu_kernel_plan *kp, char *why,
                              size_t nwhy)
{
    const fu_fusion *f = g->f;
    const fu_value *out = fu_val(f, s->output);
    const fu_node *base = fu_producer(f, s->inputs[0]);
    bool base_here = base && g->in_group[base - f->nodes]; /* (a probe counts it as materialized) */
    if (base_is_zero(g, s->inputs[0])) kp->zero_before = s->output;
    else if (g->materialized[s->inputs[0]] && !base_here) kp->copy_before = s->inputs[0];
    else {
        snprintf(why, nwhy, "scatter: atomic mode needs a zero or stored base for '%s'%s", out->name,
                 base_here ? ": the group computes it, the copy before the launch cannot" : "");
        return false;
    }
    if (out->dtype == FU_BOOL) {
        snprintf(why, nwhy, "scatter: cannot add bools");
        return false;
    }
    /* one thread per vector of source elements (index_add) or per index element (scatter_add);
     * a scalar a thread where it writes outputs beside the scatter */
    const fu_value *dom = atomic_domain(f, s);
    a->vec = g->noutputs > 1 ? 1 : atomic_vec(s, out);
    a->n = fu_shape_numel(dom->rank, dom->shape) / a->vec;
    a->threads = 256;
    kp->grid = (unsigned)((a->n + a->threads - 1) / a->threads);
    if (kp->grid == 0) kp->grid = 1;
    kp->block = (unsigned)a->threads;
    snprintf(kp->config, sizeof kp->config, "atomic: elements=%lld vec=%d threads=%d%s%s", (long long)a->n * a->vec, a->vec,
             a->threads, kp->zero_before >= 0 ? " (output zeroed before launch)" : " (base copied before launch)",
             g->noutputs > 1 ? " outputs_beside=1" : "");
    fu_strbuf js;
    fu_sb_init(&js);
    fu_sb_printf(&js, "{\"mode\": \"atomic\", \"elements\": %lld, \"vec\": %d, \"threads\": %d, \"before\": \"%s\", "
                      "\"outputs_beside\": %d}",
                 (long long)a->n * a->vec, a->vec, a->threads, kp->zero_before >= 0 ? "zero" : "copy", g->noutputs - 1);
    kp->params_json = fu_sb_take(&js);
    return true;
}

static void atomic_emit(const fu_group *g, const fu_node *s, const atomic_params *a, fu_kernel_writer *w,
                        fu_kernel_plan *kp)
{
    cg_ctx *c = &w->cg;
    const fu_fusion *f = g->f;
    const fu_value *out = fu_val(f, s->output);
    const cg_param *po = fu_kw_output(w, s->output);
    const fu_value *dom = atomic_domain(f, s);
    const int vec = a->vec, threads = a->threads;
    const int64_t n = a->n;
    fu_kw_signature(w, kp, (unsigned)threads, 1, false);
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "const %s e = (%s)blockIdx.x * %d + threadIdx.x;%s", it, it, threads,
            vec > 1 ? " // a vector of the source" : "");
    cg_line(c, "if (e >= %lld) return;", (long long)n);
    cg_index di[FU_MAX_RANK];
    int64_t strides[FU_MAX_RANK];
    fu_shape_contiguous_strides(dom->rank, dom->shape, strides);
    c->nvars = 0;
    c->lane_var = -1;
    char flat[24];
    snprintf(flat, sizeof flat, "e * %d", vec);
    for (int a = 0; a < dom->rank; a++) {
        char nm[16];
        snprintf(nm, sizeof nm, "p%d", a);
        int v = cg_add_var(c, nm);
        cg_digit_var(c, v, flat, strides[a], dom->shape[a], false);
        cg_index_var(&di[a], v, nm);
        if (a == dom->rank - 1 && vec > 1) c->lane_var = v;
    }
    c->vec = vec;
    if (vec > 1) di[dom->rank - 1].lane_coef = 1;
    /* the outputs beside the scatter (vec 1): this thread's element of each, before the
     * index check (a bad index stops the thread, not the other outputs) */
    for (int i = 0; i < g->noutputs; i++) {
        if (g->outputs[i] == s->output) continue;
        const fu_value *ov = fu_val(f, g->outputs[i]);
        cg_index off;
        const char *v = cg_value(c, g->outputs[i], di);
        cg_offset(c, ov->rank, ov->shape, ov->strides, di, &off);
        fu_kw_store(w, fu_kw_output(w, g->outputs[i]), off.expr, v);
    }
    int axis = s->attrs.axis;
    cg_index jidx[FU_MAX_RANK];
    if (s->op == FU_OP_INDEX_ADD) jidx[0] = di[axis];
    else memcpy(jidx, di, sizeof di);
    cg_line(c, "const long long j = %s;", cg_value(c, s->inputs[1], jidx));
    /* reported: the position in the index (index_add: along the axis; scatter_add: the element) */
    char ipos[16];
    snprintf(ipos, sizeof ipos, s->op == FU_OP_INDEX_ADD ? "p%d" : "e", axis);
    cg_line(c, "if (j < 0 || j >= %lld) { fu_report_index(fu_err, %d, j, (long long)%s); return; }",
            (long long)out->shape[axis], (int)(s - f->nodes), ipos);
    char val[16][CG_EXPR];
    for (int lane = 0; lane < vec; lane++) {
        c->lane = lane;
        cg_index l[FU_MAX_RANK];
        memcpy(l, di, sizeof l);
        cg_index_refresh(c, &l[dom->rank - 1]);
        snprintf(val[lane], sizeof val[lane], "%s", cg_value(c, s->inputs[2], l));
    }
    c->lane = 0;
    cg_index oi[FU_MAX_RANK], off;
    memcpy(oi, di, sizeof di);
    memset(&oi[axis], 0, sizeof oi[axis]);
    snprintf(oi[axis].expr, sizeof oi[axis].expr, "j");
    cg_offset(c, out->rank, out->shape, out->strides, oi, &off);
    emit_atomic_add(c, out->dtype, po->name, off.expr, (const char (*)[CG_EXPR])val, vec);
    cg_close(c);
}

bool fu_scatter_is_atomic(const fu_fusion *f, const fu_node *s, const fu_plan_options *opts)
{
    return !(opts->scatter == FU_SCATTER_DETERMINISTIC && s->op == FU_OP_INDEX_ADD && s->attrs.axis == 0 &&
             fu_val(f, s->inputs[0])->rank >= 1);
}

/* The scatter scheduler's parameters: one of the two modes. */
typedef struct scatter_params {
    bool det;
    det_params d;
    atomic_params a;
} scatter_params;

bool fu_scatter_heuristics(const fu_group *g, void **params, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    *params = NULL;
    const fu_node *s = the_scatter(g);
    if (!s) {
        snprintf(why, nwhy, "scatter: the group needs exactly one scatter");
        return false;
    }
    if (fu_group_has_op_kind(g, FU_KIND_REDUCE)) {
        snprintf(why, nwhy, "scatter: the group also has reductions");
        return false;
    }
    if (!outputs_beside_ok(g, s, fu_scatter_is_atomic(f, s, g->opts), why, nwhy)) return false;
    scatter_params *sp = fu_calloc(1, sizeof *sp);
    if (!sp) {
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    sp->det = !fu_scatter_is_atomic(f, s, g->opts);
    kp->sched = FU_SCHED_SCATTER;
    kp->zero_before = kp->copy_before = -1;
    bool ok = sp->det ? det_heuristics(g, s, &sp->d, kp, why, nwhy) : atomic_heuristics(g, s, &sp->a, kp, why, nwhy);
    if (!ok) {
        fu_free(sp);
        return false;
    }
    *params = sp;
    return true;
}

bool fu_scatter_emit(const fu_group *g, const void *params, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    const scatter_params *sp = params;
    const fu_node *s = the_scatter(g);
    fu_kernel_writer *w = fu_calloc(1, sizeof *w);
    if (!w || !s) {
        fu_free(w);
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    /* fu_kw_begin resets what runs before the launch: the heuristics decided it */
    fu_tensor zero_before = kp->zero_before, copy_before = kp->copy_before;
    bool ok = fu_kw_begin(w, g, kp, sp->det ? "scatter (deterministic, rows owned by blocks)" : "scatter (atomic)", why, nwhy);
    kp->zero_before = zero_before;
    kp->copy_before = copy_before;
    if (ok) {
        if (sp->det) det_emit(g, s, &sp->d, w, kp);
        else atomic_emit(g, s, &sp->a, w, kp);
        ok = fu_kw_finish(w, kp, why, nwhy);
    } else {
        fu_kw_abort(w);
    }
    fu_free(w);
    return ok;
}
