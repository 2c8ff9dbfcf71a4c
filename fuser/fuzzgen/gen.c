/*
 * gen.c -- seeded random fusions from the documented ops, for stress-testing
 * the planner against the interpreter (see fuzzgen.h).
 *
 * A fusion starts from one to three inputs of a base shape (rank 1 to 4, odd
 * and degenerate extents: 0, 1, primes, powers of two) and grows a pool of
 * tensors by 3 to 14 steps, each picking a recent tensor and one of: a
 * unary op (in a numerically tame form: exp of a tanh, log1p of an abs ...),
 * a binary op with a broadcast-compatible pool tensor or a literal, a
 * reduction over random axes (keepdim or not), a normalization (x minus or
 * over its reduction), a softmax or log_softmax, a slice, a reshape (merge,
 * split or unsqueeze), a permute, a broadcast, a gather (take_along_axis or
 * index_select with an index input), a scatter (index_add into zeros) or a
 * cast between f32 and bf16. The last tensor is an output, and sometimes an
 * earlier one too. Every tensor stays under FZ_MAX_NUMEL elements so that the
 * interpreter checks hundreds in seconds.
 *
 * FZ_OPS_EXTENDED adds the documented ops the default draw leaves out (one step
 * in five): masks (comparisons with a tensor or a literal, logical and / or /
 * not, where, a softmax of a tensor masked with -inf by an iota comparison, as
 * a causal mask is), iota, log, reciprocal, pow, take and scatter_add. Those
 * fusions are named fx_SEED_INDEX; the default draw is the same as before, so
 * a seed's default fusions never change.
 *
 * FZ_OPS_ROWS draws tall fusions (fr_SEED_INDEX): a base of 1057 to 8209 rows
 * of 100 to 1024 columns (up to a quarter of FZ_MAX_NUMEL_ROWS elements),
 * always a per-row input ([rows, 1], as a norm's saved mean is), and one step
 * in five a `where` whose condition is one bool a row (a per-row value against
 * a literal), which the row scheduler decides once a row (ROW_UNSWITCH,
 * docs/perf.md v38). Checked with `fuser-fuzz check --sms 8`, the plans' grids
 * are smaller than the rows, so blocks and warps loop over rows, as they do on
 * a real GPU only at sizes the interpreter cannot check quickly.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fuzzgen.h"
#include "ir.h"

#define FZ_MAX_NUMEL (1 << 16)
#define FZ_MAX_NUMEL_ROWS (1 << 21)
#define FZ_MAX_POOL 64

typedef struct fz_rng {
    uint64_t s;
} fz_rng;

static uint64_t fz_next(fz_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static int below(fz_rng *r, int n) { return n <= 1 ? 0 : (int)(fz_next(r) % (uint64_t)n); }
static bool chance(fz_rng *r, int percent) { return below(r, 100) < percent; }

typedef struct gen {
    fz_rng rng;
    int ops; /* FZ_OPS_* */
    int64_t max_numel; /* FZ_MAX_NUMEL, or FZ_MAX_NUMEL_ROWS for FZ_OPS_ROWS */
    fu_fusion *f;
    fu_tensor pool[FZ_MAX_POOL];
    int npool;
    int nnames;
    int ninputs;
} gen;

static const char *next_name(gen *g, char *buf, size_t n)
{
    snprintf(buf, n, "v%d", g->nnames++);
    return buf;
}

static void push(gen *g, fu_tensor t)
{
    if (t < 0) return;
    if (g->npool == FZ_MAX_POOL) {
        memmove(g->pool + 8, g->pool + 9, (size_t)(FZ_MAX_POOL - 9) * sizeof *g->pool); /* keep the inputs */
        g->npool--;
    }
    g->pool[g->npool++] = t;
}

static int rank_of(gen *g, fu_tensor t) { return fu_tensor_rank(g->f, t); }
static const int64_t *shape_of(gen *g, fu_tensor t) { return fu_tensor_shape(g->f, t); }
static fu_dtype dtype_of(gen *g, fu_tensor t) { return fu_tensor_dtype(g->f, t); }
static bool is_float(fu_dtype d) { return d == FU_F32 || d == FU_BF16; }

/* A recent float tensor of the pool (the last three most of the time). */
static fu_tensor pick(gen *g)
{
    for (int tries = 0; tries < 16; tries++) {
        int i = chance(&g->rng, 70) ? g->npool - 1 - below(&g->rng, g->npool < 3 ? g->npool : 3) : below(&g->rng, g->npool);
        if (is_float(dtype_of(g, g->pool[i]))) return g->pool[i];
    }
    return g->pool[0];
}

static int64_t pick_extent(gen *g)
{
    static const int64_t extents[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 31, 32, 64, 100, 128, 255, 256, 384, 1000, 1024};
    if (chance(&g->rng, 2)) return 0;
    return extents[below(&g->rng, (int)(sizeof extents / sizeof extents[0]))];
}

static fu_tensor scalar(gen *g, double v, fu_dtype dt)
{
    char nm[16];
    return fu_full(g->f, 0, NULL, v, dt, next_name(g, nm, sizeof nm));
}

static fu_tensor unary(gen *g, fu_op op, fu_tensor a)
{
    char nm[16];
    return fu_unary(g->f, op, a, next_name(g, nm, sizeof nm));
}

static fu_tensor binary(gen *g, fu_op op, fu_tensor a, fu_tensor b)
{
    char nm[16];
    if (dtype_of(g, b) != dtype_of(g, a)) b = fu_cast(g->f, b, dtype_of(g, a), next_name(g, nm, sizeof nm));
    return fu_binary(g->f, op, a, b, next_name(g, nm, sizeof nm));
}

/* |a| + 1: a safe divisor, log argument or rsqrt argument */
static fu_tensor positive(gen *g, fu_tensor a)
{
    return binary(g, FU_OP_ADD, unary(g, FU_OP_ABS, a), scalar(g, 1.0, dtype_of(g, a)));
}

static fu_tensor step_unary(gen *g, fu_tensor a)
{
    switch (below(&g->rng, 8)) {
    case 0: return unary(g, FU_OP_NEG, a);
    case 1: return unary(g, FU_OP_ABS, a);
    case 2: return unary(g, FU_OP_TANH, a);
    case 3: return unary(g, FU_OP_SIGMOID, a);
    case 4: return unary(g, FU_OP_EXP, unary(g, FU_OP_TANH, a));
    case 5: return unary(g, FU_OP_LOG1P, unary(g, FU_OP_ABS, a));
    case 6: return unary(g, FU_OP_SQRT, unary(g, FU_OP_ABS, a));
    default: return unary(g, FU_OP_RSQRT, positive(g, a));
    }
}

static fu_tensor step_binary(gen *g, fu_tensor a)
{
    static const fu_op ops[] = {FU_OP_ADD, FU_OP_SUB, FU_OP_MUL, FU_OP_MAX, FU_OP_MIN, FU_OP_DIV};
    fu_op op = ops[below(&g->rng, 6)];
    fu_tensor b = -1;
    for (int tries = 0; tries < 6 && b < 0; tries++) {
        fu_tensor c = g->pool[below(&g->rng, g->npool)];
        int r;
        int64_t out[FU_MAX_RANK];
        if (c != a && is_float(dtype_of(g, c)) &&
            fu_shape_broadcast(rank_of(g, a), shape_of(g, a), rank_of(g, c), shape_of(g, c), &r, out) &&
            fu_shape_numel(r, out) <= g->max_numel)
            b = c;
    }
    if (b < 0) b = scalar(g, (double)(below(&g->rng, 7) - 3) * 0.5 + 0.25, dtype_of(g, a));
    /* either operand may be the wider one (b may broadcast a); a divisor is kept at |d| + 1
     * either way: a quotient of a value near zero carries its rounding into values the
     * later ops cancel (fx_7301_71: 1/x through a log_softmax, 1.3e-5 off in f32 on the
     * GPU; fx_7301_166: an ulp of a sigmoid over sigmoid - x, 9.1e-5) and the check could
     * not tell right from wrong */
    bool a_first = chance(&g->rng, 50);
    if (op == FU_OP_DIV) {
        if (a_first) b = positive(g, b);
        else a = positive(g, a);
    }
    return a_first ? binary(g, op, a, b) : binary(g, op, b, a);
}

static void random_axes(gen *g, int rank, int *axes, int *naxes)
{
    *naxes = 0;
    for (int a = 0; a < rank; a++)
        if (chance(&g->rng, 40)) axes[(*naxes)++] = a;
    if (*naxes == 0) axes[(*naxes)++] = below(&g->rng, rank);
}

static fu_op reduce_op(gen *g)
{
    static const fu_op ops[] = {FU_OP_SUM, FU_OP_RMAX, FU_OP_RMIN, FU_OP_MEAN};
    return ops[below(&g->rng, 4)];
}

/* True where a's values sit on an offset much larger than their spread, so that a minus its
 * own reduction keeps mostly the rounding of the offset:
 * - a bf16 log_softmax: log N below zero plus its input's spread, in steps of 2^-8 log N. One
 *   of its values rounded the other way (the GPU's f32 and the interpreter's double may part at
 *   a midpoint) moves the difference by 2^-8 log N, more than the check's 5% of the difference
 *   once the spread is small, as in the draw scaled by 1/32 (fx_13_139: 0.031 against 0.2);
 * - a softmax of any dtype: about 1/N each, computed as exp(x - lse) with lse near log N, whose
 *   f32 rounding (2^-24 log N relative) is 1.7e-5 of the spread left by the draw scaled by 1/32
 *   over 250 columns (fr_17_125), above the check's 1e-5 of it.
 * - a sigmoid, an exp (of a tanh) or an rsqrt (of |x| + 1): about 0.5 or 1 plus a spread of
 *   x / 4, x or x / 2, which the draw scaled by 1/32 makes 0.01-0.03: an ulp or two of the
 *   approximate function is 1e-5 of the spread (fr_19_3, a sigmoid less its mean over 3171
 *   values: 1.67e-5 on an H100, with the outer normalization's kernel).
 * The check could not tell a right answer from a wrong one. Such a value is normalized by a
 * division, which keeps its relative error. */
static bool offset_dominated(gen *g, fu_tensor a)
{
    const fu_node *p = fu_producer(g->f, a);
    return p && ((dtype_of(g, a) == FU_BF16 && p->op == FU_OP_LOG_SOFTMAX) || p->op == FU_OP_SOFTMAX ||
                 p->op == FU_OP_SIGMOID || p->op == FU_OP_EXP || p->op == FU_OP_RSQRT);
}

static fu_tensor step_reduce(gen *g, fu_tensor a, bool normalize)
{
    int rank = rank_of(g, a), axes[FU_MAX_RANK], naxes;
    if (rank == 0) return step_unary(g, a);
    random_axes(g, rank, axes, &naxes);
    fu_op op = reduce_op(g);
    /* max and min of an empty axis have no identity */
    for (int k = 0; k < naxes && op != FU_OP_SUM; k++)
        if (shape_of(g, a)[axes[k]] == 0) op = FU_OP_SUM;
    char nm[16];
    if (!normalize) {
        if (chance(&g->rng, 15)) naxes = 0; /* every axis */
        return fu_reduce(g->f, op, a, naxes, axes, chance(&g->rng, 50), next_name(g, nm, sizeof nm));
    }
    fu_tensor r = fu_reduce(g->f, op, a, naxes, axes, true, next_name(g, nm, sizeof nm));
    bool subtract = chance(&g->rng, 50) && !offset_dominated(g, a);
    return subtract ? binary(g, FU_OP_SUB, a, r) : binary(g, FU_OP_DIV, a, positive(g, r));
}

/* An axis of a drawn at random, or -1 where a is a scalar or the axis drawn has no elements. */
static int draw_axis(gen *g, fu_tensor a)
{
    int rank = rank_of(g, a);
    if (rank == 0) return -1;
    int axis = below(&g->rng, rank);
    return shape_of(g, a)[axis] == 0 ? -1 : axis;
}

static fu_tensor step_softmax(gen *g, fu_tensor a)
{
    int axis = draw_axis(g, a);
    if (axis < 0) return step_unary(g, a);
    char nm[16];
    if (chance(&g->rng, 50)) return fu_softmax(g->f, a, axis, next_name(g, nm, sizeof nm));
    return fu_log_softmax(g->f, a, axis, next_name(g, nm, sizeof nm));
}

static fu_tensor step_slice(gen *g, fu_tensor a)
{
    int rank = rank_of(g, a);
    const int64_t *sh = shape_of(g, a);
    int64_t start[FU_MAX_RANK], stop[FU_MAX_RANK], step[FU_MAX_RANK];
    bool any = false;
    for (int i = 0; i < rank; i++) {
        start[i] = 0;
        stop[i] = sh[i];
        step[i] = 1;
        if (sh[i] >= 2 && chance(&g->rng, 60)) {
            start[i] = below(&g->rng, (int)(sh[i] / 2));
            stop[i] = start[i] + 1 + below(&g->rng, (int)(sh[i] - start[i]));
            step[i] = chance(&g->rng, 25) ? 2 : 1;
            any = true;
        }
    }
    if (!any) return step_unary(g, a);
    char nm[16];
    return fu_slice(g->f, a, start, stop, step, next_name(g, nm, sizeof nm));
}

static fu_tensor step_reshape(gen *g, fu_tensor a)
{
    int rank = rank_of(g, a);
    const int64_t *sh = shape_of(g, a);
    int64_t out[FU_MAX_RANK];
    int r = 0;
    int kind = below(&g->rng, 3);
    char nm[16];
    if (kind == 0 && rank >= 2) { /* merge two neighbouring axes */
        int at = below(&g->rng, rank - 1);
        for (int i = 0; i < rank; i++) {
            if (i == at + 1) continue;
            out[r++] = i == at ? sh[i] * sh[i + 1] : sh[i];
        }
    } else if (kind == 1 && rank < FU_MAX_RANK && rank >= 1) { /* split an axis by 2 or 3 */
        int at = below(&g->rng, rank);
        int64_t by = sh[at] % 2 == 0 && sh[at] > 0 ? 2 : sh[at] % 3 == 0 && sh[at] > 0 ? 3 : 0;
        if (!by) return step_unary(g, a);
        for (int i = 0; i < rank; i++) {
            if (i == at) {
                out[r++] = sh[i] / by;
                out[r++] = by;
            } else {
                out[r++] = sh[i];
            }
        }
    } else if (rank < 4) { /* unsqueeze */
        int at = below(&g->rng, rank + 1);
        for (int i = 0; i <= rank; i++) out[r++] = i == at ? 1 : sh[i < at ? i : i - 1];
    } else {
        return step_unary(g, a);
    }
    return fu_reshape(g->f, a, r, out, next_name(g, nm, sizeof nm));
}

static fu_tensor step_permute(gen *g, fu_tensor a)
{
    int rank = rank_of(g, a);
    if (rank < 2) return step_unary(g, a);
    int perm[FU_MAX_RANK];
    for (int i = 0; i < rank; i++) perm[i] = i;
    for (int i = rank - 1; i > 0; i--) {
        int j = below(&g->rng, i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    char nm[16];
    return fu_permute(g->f, a, perm, next_name(g, nm, sizeof nm));
}

static fu_tensor step_broadcast(gen *g, fu_tensor a)
{
    int rank = rank_of(g, a);
    const int64_t *sh = shape_of(g, a);
    int64_t out[FU_MAX_RANK];
    int r = 0;
    int64_t numel = fu_shape_numel(rank, sh);
    if (rank < 4 && chance(&g->rng, 40)) { /* a new leading axis */
        int64_t k = 1 + below(&g->rng, 4);
        out[r++] = k;
        numel *= k;
    }
    for (int i = 0; i < rank; i++) {
        out[r] = sh[i];
        if (sh[i] == 1 && chance(&g->rng, 70)) out[r] = pick_extent(g);
        if (out[r] > 0 && numel * out[r] / (sh[i] ? sh[i] : 1) > g->max_numel) out[r] = sh[i];
        numel = numel / (sh[i] ? sh[i] : 1) * out[r];
        r++;
    }
    char nm[16];
    return fu_broadcast(g->f, a, r, out, next_name(g, nm, sizeof nm));
}

static fu_tensor index_input(gen *g, int rank, const int64_t *shape)
{
    char nm[16];
    snprintf(nm, sizeof nm, "idx%d", g->ninputs++);
    return fu_input(g->f, nm, FU_I64, rank, shape);
}

static fu_tensor step_gather(gen *g, fu_tensor a)
{
    int axis = draw_axis(g, a);
    if (axis < 0) return step_unary(g, a);
    int rank = rank_of(g, a);
    const int64_t *sh = shape_of(g, a);
    char nm[16];
    int64_t k = 1 + below(&g->rng, 5);
    if (chance(&g->rng, 50)) {
        int64_t ishape[FU_MAX_RANK];
        memcpy(ishape, sh, (size_t)rank * sizeof *sh);
        ishape[axis] = k;
        return fu_take_along_axis(g->f, a, index_input(g, rank, ishape), axis, next_name(g, nm, sizeof nm));
    }
    return fu_index_select(g->f, a, index_input(g, 1, &k), axis, next_name(g, nm, sizeof nm));
}

/* index_add of a rank-2 tensor's rows into zeros of another height */
static fu_tensor step_scatter(gen *g, fu_tensor a)
{
    if (rank_of(g, a) != 2) return step_reshape(g, a);
    int64_t sh[2] = {shape_of(g, a)[0], shape_of(g, a)[1]}; /* copied: adding ops moves the shapes */
    int64_t rows = 1 + below(&g->rng, 40), base_shape[2] = {rows, sh[1]};
    if (rows * sh[1] > g->max_numel) return step_unary(g, a);
    char nm[16];
    fu_tensor base = fu_full(g->f, 2, base_shape, 0.0, dtype_of(g, a), next_name(g, nm, sizeof nm));
    fu_tensor ids = index_input(g, 1, &sh[0]);
    return fu_index_add(g->f, base, ids, a, 0, next_name(g, nm, sizeof nm));
}

static fu_tensor step_cast(gen *g, fu_tensor a)
{
    char nm[16];
    return fu_cast(g->f, a, dtype_of(g, a) == FU_F32 ? FU_BF16 : FU_F32, next_name(g, nm, sizeof nm));
}

/* ---- FZ_OPS_EXTENDED */

static const fu_op compare_ops[] = {FU_OP_EQ, FU_OP_NE, FU_OP_LT, FU_OP_LE, FU_OP_GT, FU_OP_GE};

/* A bool mask over a's shape (or one that broadcasts to it): a compared with a pool tensor
 * or a literal. */
static fu_tensor mask_of(gen *g, fu_tensor a)
{
    fu_op op = compare_ops[below(&g->rng, 6)];
    fu_tensor b = -1;
    for (int tries = 0; tries < 4 && b < 0; tries++) {
        fu_tensor c = g->pool[below(&g->rng, g->npool)];
        int r;
        int64_t out[FU_MAX_RANK];
        if (c != a && is_float(dtype_of(g, c)) && rank_of(g, c) <= rank_of(g, a) &&
            fu_shape_broadcast(rank_of(g, a), shape_of(g, a), rank_of(g, c), shape_of(g, c), &r, out) &&
            r == rank_of(g, a) && fu_shape_numel(r, out) == fu_tensor_numel(g->f, a))
            b = c;
    }
    if (b < 0) b = scalar(g, (double)(below(&g->rng, 5) - 2) * 0.5, dtype_of(g, a));
    return binary(g, op, a, b);
}

/* where(m, a, other) or where(m, other, a): other a literal (0, -1.5) or -a */
static fu_tensor where_of(gen *g, fu_tensor m, fu_tensor a)
{
    char nm[16];
    fu_tensor other = chance(&g->rng, 50) ? scalar(g, chance(&g->rng, 50) ? 0.0 : -1.5, dtype_of(g, a))
                                          : unary(g, FU_OP_NEG, a);
    return chance(&g->rng, 50) ? fu_where(g->f, m, a, other, next_name(g, nm, sizeof nm))
                               : fu_where(g->f, m, other, a, next_name(g, nm, sizeof nm));
}

/* where on a mask of a (compared with a pool tensor or a literal; combined or negated) */
static fu_tensor step_where(gen *g, fu_tensor a)
{
    char nm[16];
    fu_tensor m = mask_of(g, a);
    int k = below(&g->rng, 3);
    if (k == 1) { /* two masks combined */
        fu_tensor m2 = mask_of(g, a);
        m = fu_binary(g->f, chance(&g->rng, 50) ? FU_OP_LOGICAL_AND : FU_OP_LOGICAL_OR, m, m2, next_name(g, nm, sizeof nm));
    } else if (k == 2) {
        m = fu_unary(g->f, FU_OP_LOGICAL_NOT, m, next_name(g, nm, sizeof nm));
    }
    return where_of(g, m, a);
}

/* an iota along one of a's axes: compared with a position (a causal-like mask for a
 * softmax over -inf), or added to a as a float ramp */
static fu_tensor iota_like(gen *g, fu_tensor a, int axis, fu_dtype dt)
{
    char nm[16];
    int rank = rank_of(g, a);
    int64_t sh[FU_MAX_RANK];
    memcpy(sh, shape_of(g, a), (size_t)rank * sizeof *sh); /* (copied: adding ops moves the shapes) */
    return fu_iota(g->f, rank, sh, axis, dt, next_name(g, nm, sizeof nm));
}

static fu_tensor step_masked_softmax(gen *g, fu_tensor a)
{
    int axis = draw_axis(g, a);
    if (axis < 0) return step_where(g, a);
    int rank = rank_of(g, a);
    char nm[16];
    fu_tensor pos = iota_like(g, a, axis, FU_I64), m;
    int other = rank >= 2 ? (axis + 1 + below(&g->rng, rank - 1)) % rank : axis;
    if (other != axis && chance(&g->rng, 60)) { /* position <= the other axis' position: causal */
        fu_tensor q = iota_like(g, a, other, FU_I64);
        m = fu_binary(g->f, FU_OP_LE, pos, q, next_name(g, nm, sizeof nm));
    } else { /* the first k positions */
        double k = (double)(1 + below(&g->rng, 8));
        fu_tensor kt = fu_full(g->f, 0, NULL, k, FU_I64, next_name(g, nm, sizeof nm));
        m = fu_binary(g->f, FU_OP_LT, pos, kt, next_name(g, nm, sizeof nm));
    }
    fu_tensor ninf = scalar(g, -INFINITY, dtype_of(g, a));
    fu_tensor x = fu_where(g->f, m, a, ninf, next_name(g, nm, sizeof nm));
    return chance(&g->rng, 50) ? fu_softmax(g->f, x, axis, next_name(g, nm, sizeof nm))
                               : fu_log_softmax(g->f, x, axis, next_name(g, nm, sizeof nm));
}

static fu_tensor step_iota(gen *g, fu_tensor a)
{
    int rank = rank_of(g, a);
    if (rank == 0) return step_where(g, a);
    fu_tensor i = iota_like(g, a, below(&g->rng, rank), dtype_of(g, a));
    return binary(g, FU_OP_ADD, a, binary(g, FU_OP_MUL, i, scalar(g, 0.125, dtype_of(g, a))));
}

static fu_tensor step_math(gen *g, fu_tensor a)
{
    switch (below(&g->rng, 3)) {
    case 0: return unary(g, FU_OP_LOG, positive(g, a));
    case 1: return unary(g, FU_OP_RECIPROCAL, positive(g, a));
    default: {
        static const double exps[] = {0.5, 2.0, 3.0, -1.0};
        fu_tensor base = positive(g, a);
        fu_tensor e = scalar(g, exps[below(&g->rng, 4)], dtype_of(g, a));
        return binary(g, FU_OP_POW, base, e);
    }
    }
}

/* take along an axis with an index of rank 1 or 2, or scatter_add into zeros (the index
 * and the source of a's shape) */
static fu_tensor step_take_scatter(gen *g, fu_tensor a)
{
    int axis = draw_axis(g, a);
    if (axis < 0) return step_math(g, a);
    int rank = rank_of(g, a);
    const int64_t *sh = shape_of(g, a);
    char nm[16];
    if (chance(&g->rng, 60)) {
        int64_t ish[2];
        ish[0] = 1 + below(&g->rng, 4); /* (one statement each: the draws in order) */
        ish[1] = 1 + below(&g->rng, 3);
        int irank = rank < FU_MAX_RANK && chance(&g->rng, 40) ? 2 : 1;
        if (fu_tensor_numel(g->f, a) / sh[axis] * ish[0] * (irank == 2 ? ish[1] : 1) > g->max_numel) irank = 1;
        return fu_take(g->f, a, index_input(g, irank, ish), axis, next_name(g, nm, sizeof nm));
    }
    int64_t ash[FU_MAX_RANK], bsh[FU_MAX_RANK];
    memcpy(ash, sh, (size_t)rank * sizeof *sh);
    memcpy(bsh, sh, (size_t)rank * sizeof *sh);
    bsh[axis] = 1 + below(&g->rng, 8); /* the base's extent on the axis the index picks */
    if (fu_shape_numel(rank, bsh) > g->max_numel) bsh[axis] = 1;
    fu_tensor base = fu_full(g->f, rank, bsh, 0.0, dtype_of(g, a), next_name(g, nm, sizeof nm));
    fu_tensor ids = index_input(g, rank, ash);
    return fu_scatter_add(g->f, base, ids, a, axis, next_name(g, nm, sizeof nm));
}

static fu_tensor step_extended(gen *g, fu_tensor a)
{
    switch (below(&g->rng, 5)) {
    case 0: return step_where(g, a);
    case 1: return step_masked_softmax(g, a);
    case 2: return step_iota(g, a);
    case 3: return step_math(g, a);
    default: return step_take_scatter(g, a);
    }
}

/* ---- FZ_OPS_ROWS */

/* A per-row tensor of a (a's shape with its last axis 1): one of the pool's, or a's
 * reduction over its last axis, kept. -1 where a has no rows or an empty last axis. */
static fu_tensor per_row_of(gen *g, fu_tensor a)
{
    int rank = rank_of(g, a);
    if (rank == 0 || shape_of(g, a)[rank - 1] == 0 || fu_tensor_numel(g->f, a) == 0) return -1;
    for (int tries = 0; tries < 4; tries++) {
        fu_tensor c = g->pool[below(&g->rng, g->npool)];
        if (c == a || !is_float(dtype_of(g, c)) || rank_of(g, c) != rank || shape_of(g, c)[rank - 1] != 1) continue;
        if (!memcmp(shape_of(g, c), shape_of(g, a), (size_t)(rank - 1) * sizeof(int64_t))) return c;
    }
    int last = rank - 1;
    char nm[16];
    return fu_reduce(g->f, chance(&g->rng, 50) ? FU_OP_SUM : FU_OP_RMAX, a, 1, &last, true, next_name(g, nm, sizeof nm));
}

/* where(cond, a, other) with cond one bool a row (a per-row value compared with a literal,
 * as a cross entropy's valid-target test is), other a literal or -a */
static fu_tensor step_row_where(gen *g, fu_tensor a)
{
    fu_tensor r = per_row_of(g, a);
    if (r < 0) return step_unary(g, a);
    char nm[16];
    fu_op op = compare_ops[below(&g->rng, 6)];
    fu_tensor m = binary(g, op, r, scalar(g, (double)(below(&g->rng, 5) - 2) * 0.5, dtype_of(g, r)));
    if (chance(&g->rng, 25)) m = fu_unary(g->f, FU_OP_LOGICAL_NOT, m, next_name(g, nm, sizeof nm));
    return where_of(g, m, a);
}

static fu_tensor step(gen *g)
{
    fu_tensor a = pick(g);
    if (g->ops == FZ_OPS_EXTENDED && chance(&g->rng, 20)) return step_extended(g, a);
    if (g->ops == FZ_OPS_ROWS && chance(&g->rng, 20)) return step_row_where(g, a);
    int w = below(&g->rng, 100);
    if (w < 17) return step_unary(g, a);
    if (w < 36) return step_binary(g, a);
    if (w < 50) return step_reduce(g, a, false);
    if (w < 60) return step_reduce(g, a, true);
    if (w < 65) return step_softmax(g, a);
    if (w < 71) return step_slice(g, a);
    if (w < 77) return step_reshape(g, a);
    if (w < 83) return step_permute(g, a);
    if (w < 87) return step_broadcast(g, a);
    if (w < 93) return step_gather(g, a);
    if (w < 95) return step_scatter(g, a);
    return step_cast(g, a);
}

static fu_fusion *try_generate(uint64_t seed, int index, int attempt, int ops)
{
    gen g;
    memset(&g, 0, sizeof g);
    g.ops = ops;
    g.max_numel = ops == FZ_OPS_ROWS ? FZ_MAX_NUMEL_ROWS : FZ_MAX_NUMEL;
    g.rng.s = seed * 0x100000001B3ull ^ ((uint64_t)index << 20) ^ (uint64_t)attempt;
    fz_next(&g.rng);
    char name[64];
    snprintf(name, sizeof name, "%s_%llu_%d", fz_name_prefix(ops), (unsigned long long)seed, index);
    g.f = fu_fusion_new(name);
    if (!g.f) return NULL;
    fu_dtype dt = chance(&g.rng, 30) ? FU_BF16 : FU_F32;
    int rank;
    int64_t shape[FU_MAX_RANK];
    if (ops == FZ_OPS_ROWS) { /* [rows, columns], or [b, rows, columns] */
        static const int64_t rows[] = {1057, 2053, 4099, 8209}, cols[] = {100, 128, 255, 256, 384, 768, 1000, 1024};
        rank = chance(&g.rng, 20) ? 3 : 2;
        if (rank == 3) shape[0] = 2 + below(&g.rng, 3);
        shape[rank - 2] = rows[below(&g.rng, 4)];
        shape[rank - 1] = cols[below(&g.rng, 8)];
        while (shape[rank - 1] > 100 && fu_shape_numel(rank, shape) > g.max_numel / 4) /* the rows stay many */
            shape[rank - 1] = (shape[rank - 1] + 1) / 2;
    } else {
        rank = chance(&g.rng, 8) ? 4 : 1 + below(&g.rng, 3);
        for (int i = 0; i < rank; i++) shape[i] = pick_extent(&g);
    }
    for (;;) { /* shrink the largest axis until it fits */
        int64_t n = fu_shape_numel(rank, shape);
        if (n <= g.max_numel / 4) break;
        int big = 0;
        for (int i = 1; i < rank; i++)
            if (shape[i] > shape[big]) big = i;
        shape[big] = (shape[big] + 1) / 2;
    }
    push(&g, fu_input(g.f, "x0", dt, rank, shape));
    if (ops == FZ_OPS_ROWS) { /* a per-row operand */
        int64_t s1[FU_MAX_RANK];
        memcpy(s1, shape, (size_t)rank * sizeof *s1);
        s1[rank - 1] = 1;
        push(&g, fu_input(g.f, "x1", dt, rank, s1));
    } else if (chance(&g.rng, 50)) { /* a broadcast operand: some axes 1 */
        int64_t s1[FU_MAX_RANK];
        for (int i = 0; i < rank; i++) s1[i] = chance(&g.rng, 50) ? 1 : shape[i];
        push(&g, fu_input(g.f, "x1", dt, rank, s1));
    }
    if (chance(&g.rng, 30)) push(&g, fu_input(g.f, "x2", dt, 1, &shape[rank - 1])); /* a row vector */
    int nsteps = 3 + below(&g.rng, 12);
    fu_tensor last = -1;
    for (int s = 0; s < nsteps; s++) {
        last = step(&g);
        if (last < 0 || g.f->first_error.status != FU_OK) break;
        if (fu_tensor_numel(g.f, last) > g.max_numel) break;
        push(&g, last);
    }
    fu_error err;
    if (last < 0 || g.f->first_error.status != FU_OK || fu_tensor_numel(g.f, last) > g.max_numel) {
        fu_fusion_free(g.f);
        return NULL;
    }
    fu_output(g.f, last);
    /* sometimes an earlier computed tensor too */
    if (chance(&g.rng, 35)) {
        fu_tensor o = g.pool[below(&g.rng, g.npool)];
        if (o != last && fu_producer(g.f, o) != NULL) fu_output(g.f, o);
    }
    if (fu_fusion_verify(g.f, &err) != FU_OK) {
        fu_fusion_free(g.f);
        return NULL;
    }
    return g.f;
}

const char *fz_name_prefix(int ops) { return ops == FZ_OPS_EXTENDED ? "fx" : ops == FZ_OPS_ROWS ? "fr" : "fz"; }

fu_fusion *fz_generate_ops(uint64_t seed, int index, int ops)
{
    for (int attempt = 0; attempt < 64; attempt++) {
        fu_fusion *f = try_generate(seed, index, attempt, ops);
        if (f) return f;
    }
    return NULL;
}

fu_fusion *fz_generate(uint64_t seed, int index) { return fz_generate_ops(seed, index, FZ_OPS_DEFAULT); }
