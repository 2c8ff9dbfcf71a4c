/*
 * cg_expr.c -- the expression inliner (see cg.h). The device helpers it
 * calls (fu_load, fu_exp, fu_div_const ...) are the .cuh files of prelude/.
 */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cg.h"

/* An affine index over a run of one flat index's digits as one division of the
 * flat index (cg_digit_var); 0: the digits' terms (A/B). */
#ifndef DIGIT_RUNS
#define DIGIT_RUNS 1
#endif
/* A bf16 quotient of two bf16 values by div.full.f32 (fu_div_bf16) rather than
 * IEEE f32 division and its slow path; 0 for the latter (A/B). */
#ifndef BF16_DIV_FULL
#define BF16_DIV_FULL 1
#endif
/* A bf16 square root of a bf16 value by sqrt.approx.f32 (fu_sqrt_bf16) rather
 * than IEEE f32 square root and its slow path; 0 for the latter (A/B). */
#ifndef BF16_SQRT_APPROX
#define BF16_SQRT_APPROX 1
#endif
/* A bf16 product of two bf16 values as one bf16 multiply (fu_mul_bf16) rather
 * than an f32 multiply and a rounding; 0 for the latter (A/B). */
#ifndef BF16_PAIR_MUL
#define BF16_PAIR_MUL 1
#endif

/* ------------------------------------------------------------ types */

const char *cg_compute_type(fu_dtype t)
{
    switch (t) {
    case FU_F64: return "double";
    case FU_I32:
    case FU_I64: return "long long";
    case FU_BOOL: return "bool";
    default: return "float";
    }
}

const char *cg_storage_type(fu_dtype t)
{
    switch (t) {
    case FU_F32: return "float";
    case FU_F16: return "fu_f16";
    case FU_BF16: return "fu_bf16";
    case FU_F64: return "double";
    case FU_I32: return "int";
    case FU_I64: return "long long";
    case FU_BOOL: return "unsigned char";
    default: return "float";
    }
}

const char *cg_vector_type(int bytes)
{
    /* any other width is a caller's bug (a 32-byte vector once became "unsigned char": one byte
     * stored); a name that is no type makes NVRTC stop with it, instead of a wrong store */
    return bytes == 16 ? "uint4" : bytes == 8 ? "uint2" : bytes == 4 ? "unsigned int" : bytes == 2 ? "unsigned short"
         : bytes == 1  ? "unsigned char" : "fu_no_vector_type_of_this_width";
}

void cg_store_expr(const cg_ctx *c, char *buf, size_t n, fu_dtype t, const char *var)
{
    const char *v = cg_store_source(c, var, t);
    switch (t) {
    case FU_BF16: snprintf(buf, n, "fu_to_bf16(%s)", v); break;
    case FU_F16: snprintf(buf, n, "fu_to_f16(%s)", v); break;
    case FU_I32: snprintf(buf, n, "(int)(%s)", v); break;
    case FU_BOOL: snprintf(buf, n, "(unsigned char)(%s)", v); break;
    default: snprintf(buf, n, "(%s)(%s)", cg_storage_type(t), v); break;
    }
}

/* ------------------------------------------------------------ context */

void cg_init(cg_ctx *c, const fu_fusion *f, fu_strbuf *out)
{
    memset(c, 0, sizeof *c);
    c->f = f;
    c->out = out;
    c->vec = 1;
    c->lane_var = -1;
    c->miss_cmp = -1;
}

void cg_free(cg_ctx *c)
{
    for (int i = 0; i < c->nmemo; i++) fu_free(c->memo[i]);
    for (int i = 0; i < c->nretired; i++) fu_free(c->retired[i]);
    fu_free(c->memo);
    fu_free(c->retired);
    c->memo = c->retired = NULL;
    c->nmemo = c->nretired = c->cap_memo = c->cap_retired = 0;
}

void cg_drop_scope(cg_ctx *c)
{
    for (int v = 0; v < CG_MAXVARS; v++) /* a digit declared in a closed scope: its name may mean another now */
        if (c->digit_flat[v] && c->digit_scope[v] > c->scope) c->digit_flat[v] = 0;
    while (c->nmemo > 0 && c->memo[c->nmemo - 1]->scope > c->scope) {
        if (fu_grow((void **)&c->retired, &c->cap_retired, c->nretired + 1, sizeof *c->retired)) {
            cg_fail(c, "out of memory");
            return;
        }
        c->retired[c->nretired++] = c->memo[--c->nmemo];
    }
}

void cg_fail(cg_ctx *c, const char *fmt, ...)
{
    if (c->failed) return;
    c->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
}

void cg_line(cg_ctx *c, const char *fmt, ...)
{
    for (int i = 0; i < c->indent; i++) fu_sb_puts(c->out, "  ");
    va_list ap;
    va_start(ap, fmt);
    fu_sb_vprintf(c->out, fmt, ap);
    va_end(ap);
    fu_sb_puts(c->out, "\n");
}

void cg_open(cg_ctx *c)
{
    cg_line(c, "{");
    c->indent++;
    c->scope++;
}

void cg_close(cg_ctx *c)
{
    c->scope--;
    cg_drop_scope(c);
    c->indent--;
    cg_line(c, "}");
}

int cg_add_var(cg_ctx *c, const char *name)
{
    FU_ASSERT(c->nvars < CG_MAXVARS);
    if (c->nvars == 0) { /* a fresh variable table: no digit is left */
        memset(c->digit_flat, 0, sizeof c->digit_flat);
        c->nflats = 0;
    }
    snprintf(c->var_names[c->nvars], sizeof c->var_names[0], "%s", name);
    c->digit_flat[c->nvars] = 0;
    return c->nvars++;
}

/* Whether C expression s is one operand as it stands: a name, a number, or all in one pair of
 * parentheses. */
static bool is_operand(const char *s)
{
    if (*s == '(') {
        int depth = 0;
        for (const char *q = s; *q; q++) {
            depth += (*q == '(') - (*q == ')');
            if (depth == 0) return q[1] == '\0';
        }
        return false;
    }
    if (!*s) return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return false;
    return true;
}

/* The C text of the digit (flat / place) % radix (no "% radix" where top) into buf. */
static void digit_expr(const char *flat, long long place, long long radix, bool top, char *buf, size_t n)
{
    char f[CG_EXPR + 2];
    snprintf(f, sizeof f, is_operand(flat) ? "%s" : "(%s)", flat);
    if (radix == 1 && !top) snprintf(buf, n, "0");
    else if (place == 1 && top) snprintf(buf, n, "%s", flat);
    else if (place == 1) snprintf(buf, n, "%s %% %lld", f, radix);
    else if (top) snprintf(buf, n, "%s / %lld", f, place);
    else snprintf(buf, n, "(%s / %lld) %% %lld", f, place, radix);
}

void cg_digit_var(cg_ctx *c, int var, const char *flat, long long place, long long radix, bool top)
{
    char e[CG_EXPR + 64], f[CG_EXPR + 2];
    digit_expr(flat, place, radix, top, e, sizeof e);
    cg_line(c, "const %s %s = %s;", c->index64 ? "long long" : "int", c->var_names[var], e);
    c->digit_flat[var] = 0;
    snprintf(f, sizeof f, is_operand(flat) ? "%s" : "(%s)", flat);
    if (!DIGIT_RUNS || (radix == 1 && !top) || strlen(f) >= CG_EXPR) return;
    int k = 0;
    while (k < c->nflats && strcmp(c->flats[k], f) != 0) k++;
    if (k == c->nflats) {
        if (c->nflats == CG_MAXVARS) return;
        snprintf(c->flats[c->nflats++], CG_EXPR, "%s", f);
    }
    c->digit_flat[var] = k + 1;
    c->digit_place[var] = place;
    c->digit_radix[var] = radix;
    c->digit_top[var] = top;
    c->digit_scope[var] = c->scope;
}

const cg_param *cg_find_param(const cg_ctx *c, fu_tensor t)
{
    for (int i = 0; i < c->nparams; i++)
        if (c->params[i].tensor == t && !c->params[i].is_output) return &c->params[i];
    return NULL;
}

/* ------------------------------------------------------------ indices */


/* The digit of var u's flat index next to var v's (above: place[u] = place[v] * radix[v], below:
 * place[v] = place[u] * radix[u]) whose coefficient in ix goes as the places, among the vars
 * not yet in a run; -1 where none. */
static int next_digit(const cg_ctx *c, const cg_index *ix, const int *run, int v, bool above)
{
    for (int u = 0; u < c->nvars; u++) {
        if (run[u] >= 0 || u == v || c->digit_flat[u] != c->digit_flat[v] || ix->coef[u] == 0) continue;
        int lo = above ? v : u, hi = above ? u : v;
        if (c->digit_top[lo] || c->digit_place[hi] != c->digit_place[lo] * c->digit_radix[lo]) continue;
        if (ix->coef[hi] == ix->coef[lo] * c->digit_radix[lo]) return u;
    }
    return -1;
}

/* Var v's term of ix, or, where v leads a run of digits of one flat index
 * (cg_digit_var) whose coefficients go as their places, the run's: sum over
 * the run of place[u] / place[lo] * digit_u is (flat / place[lo]) % (the run's
 * span), without the % where the run reaches the top digit. */
static size_t render_term(const cg_ctx *c, const cg_index *ix, int v, const int *run, const int *lo_of,
                          const int *hi_of, char *buf, size_t n)
{
    long long coef = ix->coef[v];
    char term[CG_EXPR + 64];
    if (run[v] == v && lo_of[v] != hi_of[v]) {
        int lo = lo_of[v], hi = hi_of[v];
        const char *flat = c->flats[c->digit_flat[v] - 1];
        long long place = c->digit_place[lo], span = c->digit_place[hi] * c->digit_radix[hi] / place;
        coef = ix->coef[lo];
        if (place == 1 && c->digit_top[hi]) snprintf(term, sizeof term, "%s", flat);
        else if (place == 1) snprintf(term, sizeof term, "(%s %% %lld)", flat, span);
        else if (c->digit_top[hi]) snprintf(term, sizeof term, "(%s / %lld)", flat, place);
        else snprintf(term, sizeof term, "((%s / %lld) %% %lld)", flat, place, span);
    } else {
        snprintf(term, sizeof term, "%s", c->var_names[v]);
    }
    if (coef == 1) return (size_t)snprintf(buf, n, "%s", term);
    return (size_t)snprintf(buf, n, "%lld * %s", coef, term);
}

static void affine_expr_runs(const cg_ctx *c, const cg_index *ix, bool runs, char *buf, size_t n)
{
    long long cst = ix->c + ix->lane_coef * c->lane;
    /* runs of digits: run[v] is the var that leads v's run (-1: v is in none), lo_of and
     * hi_of the leader's lowest and highest digit */
    int run[CG_MAXVARS], lo_of[CG_MAXVARS], hi_of[CG_MAXVARS];
    for (int v = 0; v < c->nvars; v++) run[v] = -1;
    for (int v = 0; runs && v < c->nvars; v++) {
        if (ix->coef[v] == 0 || !c->digit_flat[v] || run[v] >= 0) continue;
        run[v] = v;
        lo_of[v] = hi_of[v] = v;
        for (int u; (u = next_digit(c, ix, run, lo_of[v], false)) >= 0; lo_of[v] = u) run[u] = v;
        for (int u; (u = next_digit(c, ix, run, hi_of[v], true)) >= 0; hi_of[v] = u) run[u] = v;
    }
    int terms = 0, only = -1;
    for (int v = 0; v < c->nvars; v++)
        if (ix->coef[v] != 0 && (run[v] < 0 || run[v] == v)) {
            terms++;
            only = v;
        }
    if (terms == 0) {
        snprintf(buf, n, "%lld", cst);
        return;
    }
    bool whole_run = run[only] == only && lo_of[only] != hi_of[only];
    if (terms == 1 && cst == 0 && ix->coef[whole_run ? lo_of[only] : only] == 1) {
        render_term(c, ix, only, run, lo_of, hi_of, buf, n);
        return;
    }
    size_t k = 0;
    bool any = false;
    k += (size_t)snprintf(buf + k, n - k, "(");
    for (int v = 0; v < c->nvars && k < n; v++) {
        if (ix->coef[v] == 0 || (run[v] >= 0 && run[v] != v)) continue;
        if (any) k += (size_t)snprintf(buf + k, n - k, " + ");
        if (k < n) k += render_term(c, ix, v, run, lo_of, hi_of, buf + k, n - k);
        any = true;
    }
    if (k < n && cst != 0) k += (size_t)snprintf(buf + k, n - k, " + %lld", cst);
    if (k < n) snprintf(buf + k, n - k, ")");
}

/* Renders an affine index as C, with the current lane folded into the
 * constant, and runs of digits as a division of their flat position
 * (cg_digit_var). The text is canonical ("o0", "7", "(3 * o0 + k1 + 2)",
 * "(624 * o0 + kb)"), so equal forms give equal strings while the same digits
 * are known (the memo keys on them; the schedulers compare forms: cg_index_same). */
static void affine_expr(const cg_ctx *c, const cg_index *ix, char *buf, size_t n)
{
    affine_expr_runs(c, ix, true, buf, n);
    /* a run's text (its flat position's) may be longer than its digits' names: never cut */
    if (strlen(buf) + 1 >= n) affine_expr_runs(c, ix, false, buf, n);
}

static void refresh_expr(const cg_ctx *c, cg_index *ix)
{
    if (ix->affine) affine_expr(c, ix, ix->expr, sizeof ix->expr);
}

void cg_index_refresh(const cg_ctx *c, cg_index *ix) { refresh_expr(c, ix); }

bool cg_index_same(const cg_ctx *c, const cg_index *a, const cg_index *b)
{
    if (!a->affine || !b->affine) return strcmp(a->expr, b->expr) == 0;
    if (a->c + a->lane_coef * c->lane != b->c + b->lane_coef * c->lane) return false;
    for (int v = 0; v < c->nvars; v++)
        if (a->coef[v] != b->coef[v]) return false;
    return true;
}

void cg_index_var(cg_index *ix, int var, const char *name)
{
    memset(ix, 0, sizeof *ix);
    ix->affine = true;
    ix->coef[var] = 1;
    snprintf(ix->expr, sizeof ix->expr, "%s", name);
}

void cg_index_const(cg_index *ix, long long v)
{
    memset(ix, 0, sizeof *ix);
    ix->affine = true;
    ix->c = v;
    snprintf(ix->expr, sizeof ix->expr, "%lld", v);
}

/* An index computed by arbitrary code (a gathered position, a division) is held
 * in a fresh local and becomes a variable of its own, so that it can still
 * take part in affine offsets: a load at row j * 768 + d is a vector load when
 * 768 is a multiple of the vector width, whatever j is. */
static void opaque_index(cg_ctx *c, cg_index *ix, const char *name)
{
    memset(ix, 0, sizeof *ix);
    if (c->nvars < CG_MAXVARS) {
        int v = cg_add_var(c, name);
        cg_index_var(ix, v, c->var_names[v]);
        return;
    }
    ix->affine = false;
    snprintf(ix->expr, sizeof ix->expr, "%s", name);
}

static void index_from_expr(cg_ctx *c, cg_index *ix, const char *expr)
{
    char name[24];
    snprintf(name, sizeof name, "i%d", c->tmp++);
    cg_line(c, "const %s %s = %s;", c->index64 ? "long long" : "int", name, expr);
    opaque_index(c, ix, name);
}

/* a * s + b, exact on affine forms. */
static void index_scale_add(cg_ctx *c, const cg_index *a, long long s, long long b, cg_index *out)
{
    if (a->affine) {
        *out = *a;
        for (int v = 0; v < CG_MAXVARS; v++) out->coef[v] *= s;
        out->lane_coef *= s;
        out->c = out->c * s + b;
        refresh_expr(c, out);
        return;
    }
    char e[CG_EXPR + 64];
    snprintf(e, sizeof e, "%s * %lld + %lld", a->expr, s, b);
    index_from_expr(c, out, e);
}

/* sum_i idx[i] * mul[i] */
static void index_linear(cg_ctx *c, int rank, const cg_index *idx, const int64_t *mul, cg_index *out)
{
    bool affine = true;
    for (int i = 0; i < rank; i++) affine &= idx[i].affine || mul[i] == 0;
    memset(out, 0, sizeof *out);
    if (affine) {
        out->affine = true;
        for (int i = 0; i < rank; i++) {
            if (mul[i] == 0) continue;
            for (int v = 0; v < CG_MAXVARS; v++) out->coef[v] += idx[i].coef[v] * mul[i];
            out->lane_coef += idx[i].lane_coef * mul[i];
            out->c += idx[i].c * mul[i];
        }
        refresh_expr(c, out);
        return;
    }
    fu_strbuf sb;
    fu_sb_init(&sb);
    fu_sb_puts(&sb, "(");
    bool any = false;
    for (int i = 0; i < rank; i++) {
        if (mul[i] == 0) continue;
        fu_sb_printf(&sb, "%s%s * %lld", any ? " + " : "", idx[i].expr, (long long)mul[i]);
        any = true;
    }
    fu_sb_puts(&sb, any ? ")" : "0)");
    char *s = fu_sb_take(&sb);
    if (s && strlen(s) < CG_EXPR) snprintf(out->expr, sizeof out->expr, "%s", s);
    else if (s) index_from_expr(c, out, s);
    else cg_fail(c, "out of memory");
    fu_free(s);
}

void cg_offset(cg_ctx *c, int rank, const int64_t *shape, const int64_t *strides, const cg_index *idx,
               cg_index *out)
{
    int64_t mul[FU_MAX_RANK];
    for (int i = 0; i < rank; i++) mul[i] = shape[i] == 1 ? 0 : strides[i];
    index_linear(c, rank, idx, mul, out);
}

bool cg_offset_vectorizable(const cg_ctx *c, const cg_index *off, int vec)
{
    if (!off->affine || off->lane_coef != 1 || off->c % vec) return false;
    /* The lane variable k's base is congruent to -sum(lane_align[v] var_v), so
     * coef[k] k adds -coef[k] lane_align[v] to each other variable's coefficient
     * (all 0 where k's base is a multiple of vec: then k drops out). */
    long long k_coef = c->lane_var >= 0 ? off->coef[c->lane_var] : 0;
    for (int v = 0; v < c->nvars; v++) {
        if (v == c->lane_var) continue;
        if ((off->coef[v] - k_coef * c->lane_align[v]) % vec) return false;
    }
    return true;
}

void cg_offset_base_expr(const cg_ctx *c, const cg_index *off, char *buf, size_t n)
{
    cg_index base = *off;
    base.lane_coef = 0;
    affine_expr(c, &base, buf, n);
}

/* ------------------------------------------------------------ memo */

/* The memo key of an index (its axes' expressions); false when it does not
 * fit in n: a cut key could match another index and reuse the wrong value. */
static bool index_key(const cg_index *idx, int rank, char *key, size_t n)
{
    size_t k = 0;
    key[0] = '\0';
    for (int i = 0; i < rank && k < n; i++) k += (size_t)snprintf(key + k, n - k, "%s|", idx[i].expr);
    return k < n;
}

static const char *memo_find(cg_ctx *c, fu_tensor t, const char *key)
{
    for (int i = c->nmemo - 1; i >= 0; i--)
        if (c->memo[i]->tensor == t && strcmp(c->memo[i]->key, key) == 0) return c->memo[i]->var;
    return NULL;
}

const char CG_DEFERRED[] = "(deferred)";

static bool deferred(const char *v) { return v == CG_DEFERRED; }

static const char *memo_add(cg_ctx *c, fu_tensor t, const char *key, const char *var)
{
    if (deferred(var)) return CG_DEFERRED; /* (a view of a value not ready yet) */
    cg_memo *m = fu_malloc(sizeof *m);
    if (!m || fu_grow((void **)&c->memo, &c->cap_memo, c->nmemo + 1, sizeof *c->memo)) {
        fu_free(m);
        cg_fail(c, "out of memory");
        return "0";
    }
    c->memo[c->nmemo++] = m;
    m->tensor = t;
    snprintf(m->key, sizeof m->key, "%s", key);
    if (strlen(var) >= sizeof m->var) /* a cut name would be wrong code */
        cg_fail(c, "codegen: the expression '%s' of '%s' is too long for a value", var, fu_val(c->f, t)->name);
    snprintf(m->var, sizeof m->var, "%s", var);
    m->scope = c->scope;
    m->i32 = false;
    m->round_dt = FU_F32;
    m->unrounded[0] = '\0';
    m->raw_dt = FU_F32;
    m->raw[0] = '\0';
    return m->var;
}

/* The live entry that declared var: the oldest that names it (views and
 * gathers add aliases under their own tensors, and those come later). */
static cg_memo *memo_of_var(const cg_ctx *c, const char *var)
{
    for (int i = 0; i < c->nmemo; i++)
        if (strcmp(c->memo[i]->var, var) == 0) return c->memo[i];
    return NULL;
}

static void mark_i32(cg_ctx *c, const char *var)
{
    cg_memo *m = memo_of_var(c, var);
    if (m) m->i32 = true;
}

/* Integer values known to fit in int: iota positions, checked gather indices,
 * int32 loads, small literals. */
static bool value_is_i32(const cg_ctx *c, const char *var)
{
    char *end;
    long long lit = strtoll(var, &end, 10);
    if (end != var && strcmp(end, "ll") == 0) return lit >= INT_MIN && lit <= INT_MAX;
    const cg_memo *m = memo_of_var(c, var);
    return m && m->i32;
}

const char *cg_store_raw(const cg_ctx *c, const char *var, fu_dtype dt)
{
    const cg_memo *m = memo_of_var(c, var);
    return m && m->raw[0] && m->raw_dt == dt ? m->raw : NULL;
}

const char *cg_store_source(const cg_ctx *c, const char *var, fu_dtype dt)
{
    const cg_memo *m = memo_of_var(c, var);
    return m && m->unrounded[0] && m->round_dt == dt ? m->unrounded : var;
}

/* ------------------------------------------------------------ values */

static const char *new_value(cg_ctx *c, fu_tensor t, const char *key, const char *type, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 5, 6)))
#endif
    ;

/* Declares `const type vN = expr;` and remembers it for (t, key). */
static const char *new_value(cg_ctx *c, fu_tensor t, const char *key, const char *type, const char *fmt, ...)
{
    char expr[1024], var[32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(expr, sizeof expr, fmt, ap);
    va_end(ap);
    snprintf(var, sizeof var, "v%d", c->tmp++);
    cg_line(c, "const %s %s = %s;", type, var, expr);
    return memo_add(c, t, key, var);
}

/* Rounds a float result to the tensor's dtype when that is narrower than the
 * compute type, so the GPU matches the interpreter op by op. */
static void rounded(fu_dtype dt, const char *expr, char *buf, size_t n)
{
    if (dt == FU_BF16) snprintf(buf, n, "fu_round_bf16(%s)", expr);
    else if (dt == FU_F16) snprintf(buf, n, "fu_round_f16(%s)", expr);
    else snprintf(buf, n, "%s", expr);
}

/* A float-computed result of dtype dt: rounded to dt when that is narrower,
 * keeping the unrounded value for stores of dt (see cg_store_source). */
static const char *result_value(cg_ctx *c, fu_tensor t, const char *key, fu_dtype dt, const char *raw)
{
    const char *ct = cg_compute_type(dt);
    if (dt != FU_BF16 && dt != FU_F16) return new_value(c, t, key, ct, "%s", raw);
    char e[1100], pre[32];
    snprintf(pre, sizeof pre, "v%d", c->tmp++);
    cg_line(c, "const %s %s = %s;", ct, pre, raw);
    rounded(dt, pre, e, sizeof e);
    const char *var = new_value(c, t, key, ct, "%s", e);
    cg_memo *m = memo_of_var(c, var);
    if (m) {
        m->round_dt = dt;
        snprintf(m->unrounded, sizeof m->unrounded, "%s", pre);
    }
    return var;
}

/* Lanes wider than one 16-byte load (i64 indices or f32 inputs of a kernel
 * whose bf16 outputs set 8 lanes) are read in several 16-byte loads where
 * they share one base, instead of one scalar load a lane (a warp's 8-byte
 * loads 64 bytes apart: 16 cache lines an instruction); 0: scalar loads. */
#ifndef WIDE_LANE_LOADS
#define WIDE_LANE_LOADS 1
#endif

/* Whether an offset uses only variables that are the same in every lane. */
static bool lane_fixed(const cg_ctx *c, const cg_index *off)
{
    for (int v = c->lane_fixed_vars; v < c->nvars; v++)
        if (off->coef[v] != 0) return false;
    return true;
}

static const char *load_external(cg_ctx *c, const cg_param *p, fu_tensor t, const cg_index *idx, const char *key)
{
    const fu_value *v = fu_val(c->f, t);
    cg_index off;
    cg_offset(c, v->rank, v->shape, v->strides, idx, &off);
    const char *ct = cg_compute_type(v->dtype), *st = cg_storage_type(v->dtype);
    int esize = (int)fu_dtype_size(v->dtype);
    if (c->lookup_cache) {
        const char *r = c->lookup_cache(c, t, &off, c->user);
        if (r) return memo_add(c, t, key, r);
    }
    const int bytes = esize * c->vec;
    /* the lanes in one load of up to 16 bytes, or, wider (i64 or f32 lanes of a
     * bf16 output), in several 16-byte loads where every lane has the same base */
    const bool one_load = bytes <= 16 && 16 % bytes == 0;
    const bool loads16 = WIDE_LANE_LOADS && bytes > 16 && bytes % 16 == 0 && lane_fixed(c, &off);
    if (c->vec > 1 && cg_offset_vectorizable(c, &off, c->vec) && (one_load || loads16)) {
        char base[CG_EXPR], vkey[CG_EXPR + 8];
        cg_offset_base_expr(c, &off, base, sizeof base);
        snprintf(vkey, sizeof vkey, "vec:%s", base);
        const char *arr = memo_find(c, t, vkey);
        if (!arr) {
            char name[32];
            snprintf(name, sizeof name, "x%d", c->tmp++);
            cg_line(c, "alignas(16) %s %s[%d];", st, name, c->vec);
            if (one_load) {
                const char *wide = cg_vector_type(bytes);
                cg_line(c, "*(%s *)%s = __ldg((const %s *)(%s + %s));", wide, name, wide, p->name, base);
            } else {
                for (int j = 0; j < bytes / 16; j++)
                    cg_line(c, "((uint4 *)%s)[%d] = __ldg((const uint4 *)(%s + %s) + %d);", name, j, p->name, base, j);
            }
            arr = memo_add(c, t, vkey, name);
        }
        const char *r = new_value(c, t, key, ct, "fu_load(%s[%d])", arr, c->lane);
        if (v->dtype == FU_I32) mark_i32(c, r);
        cg_memo *m = memo_of_var(c, r);
        if (m) {
            m->raw_dt = v->dtype;
            snprintf(m->raw, sizeof m->raw, "%s[%d]", arr, c->lane);
        }
        return r;
    }
    const char *r = new_value(c, t, key, ct, "fu_load(%s[%s])", p->name, off.expr);
    if (v->dtype == FU_I32) mark_i32(c, r);
    return r;
}

static const char *unary_fn(fu_op op)
{
    switch (op) {
    case FU_OP_EXP: return "fu_exp";
    case FU_OP_LOG: return "fu_log";
    case FU_OP_LOG1P: return "fu_log1p";
    case FU_OP_SQRT: return "fu_sqrt";
    case FU_OP_RSQRT: return "fu_rsqrt";
    case FU_OP_TANH: return "fu_tanh";
    case FU_OP_SIGMOID: return "fu_sigmoid";
    case FU_OP_ABS: return "fu_abs";
    default: return NULL;
    }
}

static const char *binary_fmt(fu_op op)
{
    switch (op) {
    case FU_OP_ADD: return "(%s + %s)";
    case FU_OP_SUB: return "(%s - %s)";
    case FU_OP_MUL: return "(%s * %s)";
    case FU_OP_DIV: return "(%s / %s)";
    case FU_OP_MAX: return "fu_max(%s, %s)";
    case FU_OP_MIN: return "fu_min(%s, %s)";
    case FU_OP_POW: return "fu_pow(%s, %s)";
    case FU_OP_EQ: return "(%s == %s)";
    case FU_OP_NE: return "(%s != %s)";
    case FU_OP_LT: return "(%s < %s)";
    case FU_OP_LE: return "(%s <= %s)";
    case FU_OP_GT: return "(%s > %s)";
    case FU_OP_GE: return "(%s >= %s)";
    case FU_OP_LOGICAL_AND: return "(%s && %s)";
    case FU_OP_LOGICAL_OR: return "(%s || %s)";
    default: return NULL;
    }
}

/* NumPy broadcasting: the operand's index from the result's index. */
static void broadcast_index(const fu_value *operand, int out_rank, const cg_index *idx, cg_index *oidx)
{
    for (int i = 0; i < operand->rank; i++) {
        int o = out_rank - operand->rank + i;
        if (operand->shape[i] == 1) cg_index_const(&oidx[i], 0);
        else oidx[i] = idx[o];
    }
}

/* A C floating literal: "1000.0f", "2.5e-05f" (a bare "1000f" is not C++). */
static void float_literal(double v, int digits, const char *suffix, char *buf, size_t n)
{
    char num[64];
    snprintf(num, sizeof num, "%.*g", digits, v);
    bool has_point = strpbrk(num, ".e") != NULL;
    snprintf(buf, n, "%s%s%s", num, has_point ? "" : ".0", suffix);
}

void cg_f32_literal(double v, char *buf, size_t n) { float_literal((double)(float)v, 9, "f", buf, n); }

static void literal(double v, fu_dtype dt, char *buf, size_t n)
{
    if (dt == FU_BOOL) snprintf(buf, n, "%s", v != 0 ? "true" : "false");
    else if (fu_dtype_is_int(dt)) snprintf(buf, n, "%lldll", (long long)fu_f64_to_i64(v));
    else if (dt == FU_F64) {
        if (isnan(v)) snprintf(buf, n, "FU_DNAN");
        else if (isinf(v)) snprintf(buf, n, "%sFU_DINF", v < 0 ? "-" : "");
        else float_literal(v, 17, "", buf, n);
    } else {
        double r = fu_round_to_dtype(v, dt);
        if (isnan(r)) snprintf(buf, n, "FU_NAN");
        else if (isinf(r)) snprintf(buf, n, "%sFU_INF", r < 0 ? "-" : "");
        else float_literal(r, 9, "f", buf, n);
    }
}

/* Reshape: row-major position is unchanged, so map the output index to the
 * input index group by group (axes whose products match); a group with one
 * input axis stays affine, others use division and remainder. */
static void reshape_index(cg_ctx *c, const fu_value *in, const fu_value *out, const cg_index *idx, cg_index *iidx)
{
    int i = 0, o = 0;
    while (i < in->rank || o < out->rank) {
        int i0 = i, o0 = o;
        int64_t pi = 1, po = 1;
        /* grow the side with the smaller product until the products meet */
        if (i < in->rank) pi *= in->shape[i++];
        if (o < out->rank) po *= out->shape[o++];
        while (pi != po) {
            if (pi < po) {
                if (i >= in->rank) break;
                pi *= in->shape[i++];
            } else {
                if (o >= out->rank) break;
                po *= out->shape[o++];
            }
        }
        /* extent-1 axes fit in any group */
        while (i < in->rank && in->shape[i] == 1) i++;
        while (o < out->rank && out->shape[o] == 1) o++;
        /* row-major position inside the group, from the output side */
        int64_t mul[FU_MAX_RANK], s = 1;
        for (int k = o - 1; k >= o0; k--) {
            mul[k - o0] = out->shape[k] == 1 ? 0 : s;
            s *= out->shape[k];
        }
        cg_index lin;
        index_linear(c, o - o0, idx + o0, mul, &lin);
        int64_t div = 1;
        for (int k = i - 1; k >= i0; k--) {
            char e[CG_EXPR + 64];
            if (in->shape[k] == 1) {
                cg_index_const(&iidx[k], 0);
                continue;
            }
            bool outermost = true;
            for (int q = i0; q < k; q++) outermost &= in->shape[q] == 1;
            if (outermost && div == 1) iidx[k] = lin; /* one real axis: stays affine */
            else if (c->nvars < CG_MAXVARS) { /* a digit of lin: runs of them render as lin again */
                char name[24];
                snprintf(name, sizeof name, "i%d", c->tmp++);
                int var = cg_add_var(c, name);
                cg_digit_var(c, var, lin.expr, div, in->shape[k], outermost);
                cg_index_var(&iidx[k], var, name);
            } else { /* no variable left: the digit as an opaque index */
                digit_expr(lin.expr, div, in->shape[k], outermost, e, sizeof e);
                index_from_expr(c, &iidx[k], e);
            }
            div *= in->shape[k];
        }
    }
}

/* GATHER_INDEX_NOTE=0 reports a bad index where it is checked, a branch around a call (the
 * v26 form, for A/B: scripts/gpu/variants.sh); 1 notes it in fu_index_note. */
#ifndef GATHER_INDEX_NOTE
#define GATHER_INDEX_NOTE 1
#endif

static const char *gather_value(cg_ctx *c, const fu_node *n, const cg_index *idx, const char *key)
{
    const fu_fusion *f = c->f;
    const fu_value *x = fu_val(f, n->inputs[0]), *ix = fu_val(f, n->inputs[1]);
    int axis = n->attrs.axis;
    cg_index iidx[FU_MAX_RANK], xidx[FU_MAX_RANK];
    /* index tensor position */
    if (n->op == FU_OP_TAKE_ALONG_AXIS) {
        for (int i = 0; i < ix->rank; i++) iidx[i] = idx[i];
    } else if (n->op == FU_OP_INDEX_SELECT) {
        iidx[0] = idx[axis];
    } else {
        for (int i = 0; i < ix->rank; i++) iidx[i] = idx[axis + i];
    }
    const char *j = cg_value(c, n->inputs[1], iidx);
    if (deferred(j)) return CG_DEFERRED;
    int64_t extent = x->shape[axis];
    /* one checked position per distinct index value (shared by the lanes) */
    char jkey[64], jname[40];
    snprintf(jkey, sizeof jkey, "gather:%s", j);
    const char *known = memo_find(c, n->output, jkey);
    if (known) {
        snprintf(jname, sizeof jname, "%s", known);
    } else {
        cg_index pos; /* reported: the position in the index tensor */
        int64_t mul[FU_MAX_RANK];
        fu_shape_contiguous_strides(ix->rank, ix->shape, mul);
        index_linear(c, ix->rank, iidx, mul, &pos);
        snprintf(jname, sizeof jname, "j%d", c->tmp++);
        /* noted, not reported here (fu_index_note): no call between this gather's loads and the next */
        if (GATHER_INDEX_NOTE) {
            cg_line(c, "const long long %s = fu_oob.check(%s, %lld, %d, (long long)%s);", jname, j, (long long)extent,
                    (int)(n - f->nodes), pos.expr);
        } else {
            cg_line(c, "long long %s = %s;", jname, j);
            cg_line(c, "if (%s < 0 || %s >= %lld) { fu_report_index(fu_err, %d, %s, (long long)%s); %s = 0; }", jname,
                    jname, (long long)extent, (int)(n - f->nodes), jname, pos.expr, jname);
        }
        memo_add(c, n->output, jkey, jname);
    }
    for (int i = 0; i < x->rank; i++) {
        if (i == axis && extent == 1) {
            cg_index_const(&xidx[i], 0); /* the one position the check lets through: the source's
                                          * value needs no wait for the index, and is shared */
        } else if (i == axis) {
            opaque_index(c, &xidx[i], jname);
        } else if (n->op == FU_OP_TAKE && i > axis) {
            xidx[i] = idx[i - 1 + ix->rank];
        } else {
            xidx[i] = idx[i];
        }
    }
    const char *v = cg_value(c, n->inputs[0], xidx);
    return memo_add(c, n->output, key, v);
}

/* The value of a constant tensor (a full, maybe broadcast or reshaped). */
static bool constant_of(const fu_fusion *f, fu_tensor t, double *value)
{
    for (int depth = 0; depth < 16; depth++) {
        const fu_node *n = fu_producer(f, t);
        if (!n) return false;
        fu_op_kind k = fu_op_kind_of(n->op);
        if (k == FU_KIND_FULL) {
            *value = fu_round_to_dtype(n->attrs.value, fu_val(f, t)->dtype);
            return true;
        }
        if (k != FU_KIND_BROADCAST && k != FU_KIND_RESHAPE && k != FU_KIND_HINT) return false;
        t = n->inputs[0];
    }
    return false;
}

/* Every value of dtype `from` is a value of dtype `to`. */
static bool cast_is_exact(fu_dtype from, fu_dtype to)
{
    if (from == to) return true;
    if (to == FU_F64) return from == FU_F32 || from == FU_BF16 || from == FU_F16;
    if (to == FU_F32) return from == FU_BF16 || from == FU_F16;
    return false;
}

/* a / k in f32 for a finite nonzero constant k (docs/format.md, Numerics): a
 * product where 1/k is a power of two (exact), else fu_div_const with 1/k
 * split into a float rounded toward zero and the rest. */
bool cg_div_const_split(double k, float *hi, float *lo)
{
    if (!isfinite(k) || k == 0.0 || fabs(k) > 1e30 || fabs(k) < 1e-30) return false;
    double d = 1.0 / k;
    *hi = (float)d;
    if (fabs((double)*hi) > fabs(d)) *hi = nextafterf(*hi, 0.0f);
    *lo = (float)(d - (double)*hi);
    return true;
}

static bool div_const_expr(const char *a, double k, fu_dtype dt, char *buf, size_t n)
{
    float hi, lo;
    if (!cg_div_const_split(k, &hi, &lo)) return false;
    char h[80], l[80];
    float_literal((double)hi, 9, "f", h, sizeof h);
    float_literal((double)lo, 9, "f", l, sizeof l);
    int e;
    if (frexp(fabs(k), &e) == 0.5) {
        snprintf(buf, n, "(%s * %s)", a, h); /* 1/k = 2^-(e-1) exactly */
    } else if (dt == FU_BF16) {
        /* a and k bf16: a * RN(1/k) in f32 rounds to bf16 as a / k does (the
         * quotient is 2^-17 or more from a bf16 midpoint, the product within 2^-23) */
        float_literal((double)(float)(1.0 / k), 9, "f", h, sizeof h);
        snprintf(buf, n, "(%s * %s)", a, h);
    } else {
        snprintf(buf, n, "fu_div_const(%s, %s, %s)", a, h, l);
    }
    return true;
}

/* A bool value known when the kernel is written (a constant, a compare split on by
 * cg_vector_miss_diff, a condition under cg_assume) is the literal itself: 1 for
 * `true`, 0 for `false`, -1 for a value known only at run time. */
static int known_bool(const char *v)
{
    return !strcmp(v, "true") ? 1 : !strcmp(v, "false") ? 0 : -1;
}

void cg_assume(cg_ctx *c, fu_tensor t, const cg_index *idx, bool value)
{
    char key[sizeof c->memo[0]->key];
    if (!index_key(idx, fu_val(c->f, t)->rank, key, sizeof key)) {
        cg_fail(c, "codegen: the index of '%s' is too long", fu_val(c->f, t)->name);
        return;
    }
    memo_add(c, t, key, value ? "true" : "false");
}

const char *cg_value(cg_ctx *c, fu_tensor t, const cg_index *idx)
{
    if (c->failed) return "0";
    const fu_fusion *f = c->f;
    const fu_value *v = fu_val(f, t);
    char key[sizeof c->memo[0]->key];
    if (!index_key(idx, v->rank, key, sizeof key)) {
        cg_fail(c, "codegen: the index of '%s' is too long (%d axes)", v->name, v->rank);
        return "0";
    }
    const char *hit = memo_find(c, t, key);
    if (hit) return hit;
    if (c->lookup_register) {
        const char *r = c->lookup_register(c, t, idx, c->user);
        if (c->failed) return "0";
        if (r) return memo_add(c, t, key, r); /* (not remembered when deferred) */
    }
    const cg_param *p = cg_find_param(c, t);
    if (p) return load_external(c, p, t, idx, key);
    const fu_node *n = fu_producer(f, t);
    if (!n) {
        cg_fail(c, "input '%s' is not a parameter of this kernel", v->name);
        return "0";
    }
    const char *ct = cg_compute_type(v->dtype);
    char e[1024];
    cg_index sub[FU_MAX_OP_INPUTS][FU_MAX_RANK];
    switch (fu_op_kind_of(n->op)) {
    case FU_KIND_UNARY: {
        char raw[512];
        const fu_node *pn = fu_producer(f, n->inputs[0]);
        if (n->op == FU_OP_EXP && v->dtype == FU_F32 && pn && pn->op == FU_OP_SUB && fu_val(f, pn->output)->dtype == FU_F32) {
            /* exp(a - b): one fused multiply-add before the exponential */
            broadcast_index(fu_val(f, pn->inputs[0]), v->rank, idx, sub[0]);
            broadcast_index(fu_val(f, pn->inputs[1]), v->rank, idx, sub[1]);
            const char *va = cg_value(c, pn->inputs[0], sub[0]);
            const char *vb = cg_value(c, pn->inputs[1], sub[1]);
            if (deferred(va) || deferred(vb)) return CG_DEFERRED;
            return new_value(c, t, key, ct, "fu_exp_sub(%s, %s)", va, vb);
        }
        const char *a = cg_value(c, n->inputs[0], idx);
        if (deferred(a)) return CG_DEFERRED;
        if (n->op == FU_OP_NEG) snprintf(raw, sizeof raw, "(-%s)", a);
        else if (n->op == FU_OP_RECIPROCAL) snprintf(raw, sizeof raw, "(%s(1) / %s)", ct, a);
        else if (n->op == FU_OP_LOGICAL_NOT) snprintf(raw, sizeof raw, "(!%s)", a);
        else if (n->op == FU_OP_TANH && (v->dtype == FU_BF16 || v->dtype == FU_F16))
            snprintf(raw, sizeof raw, "fu_tanh_approx(%s)", a); /* docs/format.md, Numerics */
        else if (BF16_SQRT_APPROX && n->op == FU_OP_SQRT && v->dtype == FU_BF16 && fu_val(f, n->inputs[0])->dtype == FU_BF16)
            snprintf(raw, sizeof raw, "fu_sqrt_bf16(%s)", a); /* docs/format.md, Numerics */
        else snprintf(raw, sizeof raw, "%s(%s)", unary_fn(n->op), a);
        /* -x and |x| of a value of the dtype are values of the dtype: no rounding */
        if (n->op == FU_OP_NEG || n->op == FU_OP_ABS) return new_value(c, t, key, ct, "%s", raw);
        return result_value(c, t, key, v->dtype, raw);
    }
    case FU_KIND_BINARY: {
        if (t == c->miss_cmp) { /* a position compare split on (cg_vector_miss_diff) */
            if (c->miss_known) return memo_add(c, t, key, n->op == FU_OP_EQ ? "false" : "true");
            return new_value(c, t, key, "bool", "(%s %s %du)", c->miss_diff, n->op == FU_OP_EQ ? "==" : "!=", c->lane);
        }
        const fu_value *a = fu_val(f, n->inputs[0]), *b = fu_val(f, n->inputs[1]);
        broadcast_index(a, v->rank, idx, sub[0]);
        broadcast_index(b, v->rank, idx, sub[1]);
        const char *va = cg_value(c, n->inputs[0], sub[0]);
        const char *vb = cg_value(c, n->inputs[1], sub[1]);
        if (deferred(va) || deferred(vb)) return CG_DEFERRED;
        char raw[512];
        double k = 0.0; /* set where kb (gcc -O3 cannot see it) */
        bool kb = fu_dtype_is_float(v->dtype) && constant_of(f, n->inputs[1], &k);
        double ka = 0.0;
        bool kaf = fu_dtype_is_float(v->dtype) && constant_of(f, n->inputs[0], &ka);
        /* x * 1, 1 * x, x / 1, x - (+0): x itself, bit for bit (same dtype, already rounded) */
        if (kb && ((k == 1.0 && (n->op == FU_OP_MUL || n->op == FU_OP_DIV)) || (k == 0.0 && !signbit(k) && n->op == FU_OP_SUB)))
            return memo_add(c, t, key, va);
        /* (+0 as a known compare's cast: cg_vector_miss_diff) */
        if (n->op == FU_OP_SUB && fu_dtype_is_float(v->dtype) && (!strcmp(vb, "0.0f") || !strcmp(vb, "0.0")))
            return memo_add(c, t, key, va);
        if (kaf && ka == 1.0 && n->op == FU_OP_MUL) return memo_add(c, t, key, vb);
        if (kb && n->op == FU_OP_DIV && (v->dtype == FU_F32 || v->dtype == FU_BF16 || v->dtype == FU_F16) &&
            div_const_expr(va, k, v->dtype, raw, sizeof raw))
            return result_value(c, t, key, v->dtype, raw);
        /* a quotient of two bf16 values rounded to bf16: div.full.f32 (docs/format.md, Numerics) */
        if (BF16_DIV_FULL && n->op == FU_OP_DIV && v->dtype == FU_BF16 && a->dtype == FU_BF16 && b->dtype == FU_BF16) {
            snprintf(raw, sizeof raw, "fu_div_bf16(%s, %s)", va, vb);
            return result_value(c, t, key, v->dtype, raw);
        }
        /* the larger or smaller of two values of the dtype is one of them: no rounding */
        if (n->op == FU_OP_MAX || n->op == FU_OP_MIN) {
            snprintf(raw, sizeof raw, binary_fmt(n->op), va, vb);
            return new_value(c, t, key, ct, "%s", raw);
        }
        /* a product of two bf16 values is exact in f32, so one bf16 multiply rounds it as
         * the interpreter does (fu_mul_bf16; BF16_PAIR_MUL) */
        if (BF16_PAIR_MUL && n->op == FU_OP_MUL && v->dtype == FU_BF16 && a->dtype == FU_BF16 && b->dtype == FU_BF16)
            return new_value(c, t, key, ct, "fu_mul_bf16(%s, %s)", va, vb);
        bool compare = v->dtype == FU_BOOL && n->op != FU_OP_LOGICAL_AND && n->op != FU_OP_LOGICAL_OR;
        if (compare && fu_dtype_is_int(a->dtype) && fu_dtype_is_int(b->dtype) && value_is_i32(c, va) &&
            value_is_i32(c, vb)) {
            /* both sides fit in int: one 32-bit compare instead of a 64-bit pair */
            char ia[48], ib[48];
            snprintf(ia, sizeof ia, "(int)%s", va);
            snprintf(ib, sizeof ib, "(int)%s", vb);
            snprintf(raw, sizeof raw, binary_fmt(n->op), ia, ib);
        } else {
            snprintf(raw, sizeof raw, binary_fmt(n->op), va, vb);
        }
        return result_value(c, t, key, v->dtype, raw);
    }
    case FU_KIND_WHERE: {
        for (int k = 0; k < 3; k++) broadcast_index(fu_val(f, n->inputs[k]), v->rank, idx, sub[k]);
        const char *vc = cg_value(c, n->inputs[0], sub[0]);
        if (deferred(vc)) return CG_DEFERRED;
        if (known_bool(vc) >= 0) { /* a known condition: its branch alone */
            const int k = known_bool(vc) ? 1 : 2;
            const char *vk = cg_value(c, n->inputs[k], sub[k]);
            return deferred(vk) ? CG_DEFERRED : memo_add(c, t, key, vk);
        }
        const char *va = cg_value(c, n->inputs[1], sub[1]);
        const char *vb = cg_value(c, n->inputs[2], sub[2]);
        if (deferred(va) || deferred(vb)) return CG_DEFERRED;
        bool small = fu_dtype_is_int(v->dtype) && value_is_i32(c, va) && value_is_i32(c, vb);
        const char *r = new_value(c, t, key, ct, "(%s ? %s : %s)", vc, va, vb);
        if (small) mark_i32(c, r);
        return r;
    }
    case FU_KIND_CAST: {
        const fu_value *in = fu_val(f, n->inputs[0]);
        const char *a = cg_value(c, n->inputs[0], idx);
        if (deferred(a)) return CG_DEFERRED;
        char raw[512];
        /* every value of the input dtype is one of the output dtype, in the same
         * compute type: the value itself (no new variable, no conversion) */
        if (cast_is_exact(in->dtype, v->dtype) && !strcmp(cg_compute_type(in->dtype), ct)) return memo_add(c, t, key, a);
        if (in->dtype == FU_BOOL && fu_dtype_is_float(v->dtype)) {
            if (known_bool(a) >= 0) { /* a known bool: 0 or 1 */
                literal(known_bool(a), v->dtype, e, sizeof e);
                return memo_add(c, t, key, e);
            }
            return new_value(c, t, key, ct, "(%s)(%s)", ct, a);
        }
        if (v->dtype == FU_BOOL) snprintf(raw, sizeof raw, "(%s != 0)", a);
        else if (v->dtype == FU_I32) snprintf(raw, sizeof raw, "(long long)(int)(%s)", a);
        else snprintf(raw, sizeof raw, "(%s)(%s)", ct, a);
        const char *r = result_value(c, t, key, v->dtype, raw);
        bool small = v->dtype == FU_I32 || (fu_dtype_is_int(v->dtype) && (in->dtype == FU_BOOL || value_is_i32(c, a)));
        if (small) mark_i32(c, r);
        return r;
    }
    case FU_KIND_BROADCAST:
        broadcast_index(fu_val(f, n->inputs[0]), v->rank, idx, sub[0]);
        return memo_add(c, t, key, cg_value(c, n->inputs[0], sub[0]));
    case FU_KIND_RESHAPE: {
        const fu_value *in = fu_val(f, n->inputs[0]);
        if (in->rank == v->rank && !memcmp(in->shape, v->shape, (size_t)v->rank * sizeof *v->shape))
            return memo_add(c, t, key, cg_value(c, n->inputs[0], idx));
        reshape_index(c, in, v, idx, sub[0]);
        return memo_add(c, t, key, cg_value(c, n->inputs[0], sub[0]));
    }
    case FU_KIND_PERMUTE:
        for (int i = 0; i < v->rank; i++) sub[0][n->attrs.perm[i]] = idx[i];
        return memo_add(c, t, key, cg_value(c, n->inputs[0], sub[0]));
    case FU_KIND_SLICE:
        for (int i = 0; i < v->rank; i++) index_scale_add(c, &idx[i], n->attrs.step[i], n->attrs.start[i], &sub[0][i]);
        return memo_add(c, t, key, cg_value(c, n->inputs[0], sub[0]));
    case FU_KIND_FULL:
        literal(n->attrs.value, v->dtype, e, sizeof e);
        if (e[0] == '-' || strlen(e) >= sizeof ((cg_memo *)0)->var) return new_value(c, t, key, ct, "%s", e);
        return memo_add(c, t, key, e);
    case FU_KIND_IOTA: {
        /* a position along the axis: in [0, extent) */
        const char *r = new_value(c, t, key, ct, "(%s)(%s)", ct, idx[n->attrs.axis].expr);
        if (fu_dtype_is_int(v->dtype) && v->shape[n->attrs.axis] <= INT_MAX) mark_i32(c, r);
        return r;
    }
    case FU_KIND_GATHER:
        return gather_value(c, n, idx, key);
    case FU_KIND_HINT:
        return memo_add(c, t, key, cg_value(c, n->inputs[0], idx));
    case FU_KIND_REDUCE:
        cg_fail(c, "reduction '%s' is not available in this kernel", v->name);
        return "0";
    case FU_KIND_SCATTER:
    case FU_KIND_COMPOSITE:
        break;
    }
    cg_fail(c, "op '%s' -> '%s' cannot be inlined", fu_op_name(n->op), v->name);
    return "0";
}

/* The input of position compare cmp that is the iota (0 or 1), or -1. */
static int position_side(const fu_fusion *f, const fu_node *n)
{
    const fu_value *v = fu_val(f, n->output);
    if ((n->op != FU_OP_EQ && n->op != FU_OP_NE) || v->rank < 1 || v->shape[v->rank - 1] < 2) return -1;
    for (int s = 0; s < 2; s++) {
        const fu_node *pi = fu_producer(f, n->inputs[s]);
        const fu_value *iv = fu_val(f, n->inputs[s]), *ov = fu_val(f, n->inputs[1 - s]);
        if (!pi || fu_op_kind_of(pi->op) != FU_KIND_IOTA || pi->attrs.axis != v->rank - 1 || iv->rank != v->rank ||
            memcmp(iv->shape, v->shape, (size_t)v->rank * sizeof *v->shape))
            continue;
        if (fu_dtype_is_int(iv->dtype) && fu_dtype_is_int(ov->dtype) && (ov->rank == 0 || ov->shape[ov->rank - 1] == 1))
            return s;
    }
    return -1;
}

bool cg_is_position_compare(const fu_fusion *f, fu_tensor cmp)
{
    const fu_node *n = fu_producer(f, cmp);
    return n && position_side(f, n) >= 0;
}

const char *cg_vector_miss_diff(cg_ctx *c, fu_tensor cmp, const cg_index *idx)
{
    const fu_fusion *f = c->f;
    const fu_node *nd = fu_producer(f, cmp);
    const int s = nd ? position_side(f, nd) : -1;
    const fu_value *v = fu_val(f, cmp);
    char *diff = c->miss_diff;
    snprintf(diff, sizeof c->miss_diff, "fu_d%d", c->tmp++);
    if (s < 0 || c->vec < 2 || c->lane_var != v->rank - 1) {
        cg_fail(c, "codegen: '%s' is not a compare of the vector's positions", v->name);
        return diff;
    }
    const int saved = c->lane;
    c->lane = 0;
    cg_index li[FU_MAX_RANK], sub[FU_MAX_RANK];
    memcpy(li, idx, sizeof li);
    cg_index_refresh(c, &li[v->rank - 1]);
    broadcast_index(fu_val(f, nd->inputs[1 - s]), v->rank, li, sub);
    const char *at = cg_value(c, nd->inputs[1 - s], sub);
    c->lane = saved;
    /* Unsigned, so that no difference overflows. In 32 bits where the value fits in int, as
     * the positions do (extents up to INT_MAX): then value - position is in (-2^32, 2^32),
     * and it is k in [0, vec) exactly where its low 32 bits are (k - 2^32 would need a
     * position past INT_MAX - 1). Else in 64 bits, where equality is exact. */
    const bool narrow = value_is_i32(c, at) && v->shape[v->rank - 1] <= INT_MAX;
    const char *ut = narrow ? "unsigned" : "unsigned long long";
    cg_line(c, "const %s %s = (%s)%s - (%s)(%s); // '%s': lane k is at the position where this is k", ut, diff, ut, at,
            ut, li[v->rank - 1].expr, v->name);
    return diff;
}
