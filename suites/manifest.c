/*
 * manifest.c -- suites as data: a suite folder's manifest (suite.txt, the
 * language is docs/suites.md), discovery of every folder that has one, a
 * suite made of one fusion file, and the binding of a size to a fusion's
 * parameters.
 *
 * Every error names FILE:LINE:COL of the manifest (or the fusion parser's own
 * FILE:LINE:COL) and what is wrong; run_suite turns it into exit 2.
 */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "suite.h"

/* ------------------------------------------------------------ integer expressions
 *
 * EXPR := CMP; CMP := SUM [(==|!=|<|<=|>|>=) SUM]; SUM := PROD {(+|-) PROD};
 * PROD := UNARY {(*|/|%) UNARY}; UNARY := [-] ATOM;
 * ATOM := NUMBER | NAME | (EXPR) | min(EXPR, EXPR) | max(EXPR, EXPR).
 * Names are looked up in an environment of (name, value) pairs. */

typedef struct hb_env {
    int n;
    const char *names[HB_MAX_DIMS + HB_MAX_LETS];
    int64_t values[HB_MAX_DIMS + HB_MAX_LETS];
} hb_env;

typedef struct expr_ctx {
    const char *text, *p;
    const hb_env *env;
    bool ok;
    char why[256];
    int col; /* of the error, from 1 */
} expr_ctx;

static void expr_fail(expr_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void expr_fail(expr_ctx *c, const char *fmt, ...)
{
    if (!c->ok) return;
    c->ok = false;
    c->col = (int)(c->p - c->text) + 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->why, sizeof c->why, fmt, ap);
    va_end(ap);
}

static void skip_space(expr_ctx *c)
{
    while (*c->p == ' ' || *c->p == '\t') c->p++;
}

static bool accept(expr_ctx *c, const char *tok)
{
    skip_space(c);
    size_t n = strlen(tok);
    if (strncmp(c->p, tok, n) != 0) return false;
    c->p += n;
    return true;
}

static int64_t expr_cmp(expr_ctx *c);

static int64_t expr_atom(expr_ctx *c)
{
    skip_space(c);
    if (isdigit((unsigned char)*c->p)) {
        int64_t v = 0;
        while (isdigit((unsigned char)*c->p)) {
            if (v > (INT64_MAX - 9) / 10) {
                expr_fail(c, "a number too large");
                return 0;
            }
            v = v * 10 + (*c->p++ - '0');
        }
        return v;
    }
    if (accept(c, "(")) {
        int64_t v = expr_cmp(c);
        if (!accept(c, ")")) expr_fail(c, "expected ')'");
        return v;
    }
    if (isalpha((unsigned char)*c->p) || *c->p == '_') {
        const char *s = c->p;
        while (isalnum((unsigned char)*c->p) || *c->p == '_') c->p++;
        size_t n = (size_t)(c->p - s);
        bool is_min = n == 3 && strncmp(s, "min", 3) == 0, is_max = n == 3 && strncmp(s, "max", 3) == 0;
        skip_space(c);
        if ((is_min || is_max) && *c->p == '(') {
            c->p++;
            int64_t a = expr_cmp(c);
            if (!accept(c, ",")) expr_fail(c, "expected ',' in %s(a, b)", is_min ? "min" : "max");
            int64_t b = expr_cmp(c);
            if (!accept(c, ")")) expr_fail(c, "expected ')'");
            return is_min ? (a < b ? a : b) : (a > b ? a : b);
        }
        for (int i = 0; c->env && i < c->env->n; i++)
            if (strlen(c->env->names[i]) == n && strncmp(c->env->names[i], s, n) == 0) return c->env->values[i];
        c->p = s;
        expr_fail(c, "unknown name '%.*s' (the size axes and earlier 'let' names are known)", (int)n, s);
        return 0;
    }
    if (*c->p) expr_fail(c, "unexpected '%c'", *c->p);
    else expr_fail(c, "an expression is missing");
    return 0;
}

static int64_t expr_unary(expr_ctx *c)
{
    if (accept(c, "-")) return -expr_unary(c);
    return expr_atom(c);
}

static int64_t expr_prod(expr_ctx *c)
{
    int64_t v = expr_unary(c);
    for (;;) {
        skip_space(c);
        char op = *c->p;
        if (op != '*' && op != '/' && op != '%') return v;
        c->p++;
        int64_t w = expr_unary(c);
        if (!c->ok) return 0;
        if (op == '*') {
            if (v != 0 && (w > INT64_MAX / (v < 0 ? -v : v) || w < -(INT64_MAX / (v < 0 ? -v : v)))) {
                expr_fail(c, "the product overflows");
                return 0;
            }
            v *= w;
        } else if (w == 0) {
            expr_fail(c, "division by zero");
            return 0;
        } else {
            v = op == '/' ? v / w : v % w;
        }
    }
}

static int64_t expr_sum(expr_ctx *c)
{
    int64_t v = expr_prod(c);
    for (;;) {
        if (accept(c, "+")) v += expr_prod(c);
        else if (accept(c, "-")) v -= expr_prod(c);
        else return v;
    }
}

static int64_t expr_cmp(expr_ctx *c)
{
    int64_t a = expr_sum(c);
    static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    for (int i = 0; i < 6; i++)
        if (accept(c, ops[i])) {
            int64_t b = expr_sum(c);
            switch (i) {
            case 0: return a == b;
            case 1: return a != b;
            case 2: return a <= b;
            case 3: return a >= b;
            case 4: return a < b;
            default: return a > b;
            }
        }
    return a;
}

/* Evaluates text in env; false, the reason and the column when it fails. */
static bool expr_eval(const char *text, const hb_env *env, int64_t *out, int *col, char *why, size_t nwhy)
{
    expr_ctx c = {.text = text, .p = text, .env = env, .ok = true};
    int64_t v = expr_cmp(&c);
    skip_space(&c);
    if (c.ok && *c.p) expr_fail(&c, "unexpected '%c' after the expression", *c.p);
    if (!c.ok) {
        if (col) *col = c.col;
        snprintf(why, nwhy, "%s", c.why);
        return false;
    }
    *out = v;
    return true;
}

/* ------------------------------------------------------------ binding */

static void env_add(hb_env *e, const char *name, int64_t v)
{
    if (e->n >= HB_MAX_DIMS + HB_MAX_LETS) return;
    e->names[e->n] = name;
    e->values[e->n++] = v;
}

/* The axes and the lets of s at size sz. */
static bool suite_env(const hb_suite *s, const hb_size *sz, hb_env *env, char *why, size_t nwhy)
{
    memset(env, 0, sizeof *env);
    for (int i = 0; i < s->ndims; i++) env_add(env, s->axes[i], sz->d[i]);
    char sstr[96];
    hb_size_str(sz, sstr, sizeof sstr);
    for (int i = 0; i < s->nlets; i++) {
        int64_t v;
        char w[256];
        if (!expr_eval(s->lets[i].expr, env, &v, NULL, w, sizeof w)) {
            snprintf(why, nwhy, "%s size %s: let %s = %s: %s", s->name, sstr, s->lets[i].name, s->lets[i].expr, w);
            return false;
        }
        env_add(env, s->lets[i].name, v);
    }
    for (int i = 0; i < s->nrequires; i++) {
        int64_t v;
        char w[256];
        if (!expr_eval(s->requires[i].expr, env, &v, NULL, w, sizeof w) || !v) {
            snprintf(why, nwhy, "%s size %s: %s", s->name, sstr,
                     s->requires[i].message[0] ? s->requires[i].message : s->requires[i].expr);
            return false;
        }
    }
    return true;
}

static int program_param(const fu_program *p, const char *name)
{
    for (int i = 0; i < fu_program_num_params(p); i++)
        if (strcmp(fu_program_param_name(p, i), name) == 0) return i;
    return -1;
}

bool hb_suite_bind(const hb_suite *s, const hb_case *c, const hb_size *sz, fu_dtype dt, hb_params *out, char *why,
                   size_t nwhy)
{
    memset(out, 0, sizeof *out);
    if (sz->n != s->ndims) {
        snprintf(why, nwhy, "suite %s takes sizes of %d numbers (%s)", s->name, s->ndims, s->size_help);
        return false;
    }
    hb_env env;
    if (!suite_env(s, sz, &env, why, nwhy)) return false;
    for (int i = 0; i < env.n; i++)
        if (program_param(c->prog, env.names[i]) >= 0 && !fu_program_param_is_dtype(c->prog, program_param(c->prog, env.names[i])))
            hb_params_int(out, env.names[i], env.values[i]);
    if (s->dtype_param[0] && program_param(c->prog, s->dtype_param) >= 0)
        hb_params_str(out, s->dtype_param, fu_dtype_name(dt));
    return true;
}

bool hb_suite_check_size(const hb_suite *s, const hb_size *sz, hb_size *out, char *why, size_t nwhy)
{
    *out = *sz;
    hb_env env;
    if (!suite_env(s, sz, &env, why, nwhy)) return false;
    for (int i = 0; i < s->nchecks; i++) {
        int64_t v;
        char w[256];
        if (!expr_eval(s->checks[i].expr, &env, &v, NULL, w, sizeof w)) {
            snprintf(why, nwhy, "%s: check %s = %s: %s", s->name, s->axes[s->checks[i].axis], s->checks[i].expr, w);
            return false;
        }
        if (v < 1) v = 1;
        if (v < out->d[s->checks[i].axis]) out->d[s->checks[i].axis] = v;
    }
    return true;
}

/* ------------------------------------------------------------ the manifest */

typedef struct line_ctx {
    const char *file;
    int line;
    const char *start; /* of the line, for columns */
    char *why;
    size_t nwhy;
} line_ctx;

static bool fail_at(line_ctx *l, const char *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static bool fail_at(line_ctx *l, const char *at, const char *fmt, ...)
{
    int col = at ? (int)(at - l->start) + 1 : 1;
    int k = snprintf(l->why, l->nwhy, "%s:%d:%d: ", l->file, l->line, col);
    if (k < 0 || (size_t)k >= l->nwhy) return false;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->why + k, l->nwhy - (size_t)k, fmt, ap);
    va_end(ap);
    return false;
}

static char *skip_ws(char *p)
{
    while (*p == ' ' || *p == '\t') p++;
    return p;
}

static void trim_end(char *p)
{
    size_t n = strlen(p);
    while (n && (p[n - 1] == ' ' || p[n - 1] == '\t' || p[n - 1] == '\r' || p[n - 1] == '\n')) p[--n] = '\0';
}

/* An identifier at *p into out; advances *p. */
static bool take_ident(char **p, char *out, size_t cap)
{
    char *s = *p;
    if (!(isalpha((unsigned char)*s) || *s == '_')) return false;
    while (isalnum((unsigned char)**p) || **p == '_') (*p)++;
    size_t n = (size_t)(*p - s);
    if (n >= cap) return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

static bool copy_str(char *dst, size_t cap, const char *src)
{
    if (strlen(src) >= cap) return false;
    memcpy(dst, src, strlen(src) + 1);
    return true;
}

static bool add_case(hb_suite *s)
{
    hb_case *c = realloc(s->cases, ((size_t)s->ncases + 1) * sizeof *c);
    if (!c) return false;
    s->cases = c;
    memset(&s->cases[s->ncases], 0, sizeof *s->cases);
    s->cases[s->ncases].scatter = FU_SCATTER_DETERMINISTIC;
    s->cases[s->ncases].manifest_line = 0;
    s->ncases++;
    return true;
}

void hb_suite_free(hb_suite *s)
{
    if (!s) return;
    for (int i = 0; i < s->ncases; i++) fu_program_free(s->cases[i].prog);
    free(s->cases);
    free(s);
}

/* "case NAME = FILE[, option=value ...]" after the keyword. */
static bool parse_case(hb_suite *s, line_ctx *l, char *p)
{
    char *at = p;
    if (!add_case(s)) return fail_at(l, at, "out of memory");
    hb_case *c = &s->cases[s->ncases - 1];
    c->manifest_line = l->line;
    if (!take_ident(&p, c->name, sizeof c->name)) return fail_at(l, at, "expected a case name (letters, digits, '_')");
    for (int i = 0; i + 1 < s->ncases; i++)
        if (strcmp(s->cases[i].name, c->name) == 0)
            return fail_at(l, at, "case '%s' is listed twice (first on line %d)", c->name, s->cases[i].manifest_line);
    p = skip_ws(p);
    if (*p != '=') return fail_at(l, p, "expected '=' and a fusion file after the case name");
    p = skip_ws(p + 1);
    char *file = p;
    while (*p && *p != ',' && *p != ' ' && *p != '\t') p++;
    char save = *p;
    *p = '\0';
    if (!*file) return fail_at(l, file, "case '%s' names no fusion file", c->name);
    if (strchr(file, '/') || strcmp(file, "..") == 0)
        return fail_at(l, file, "fusion file '%s': a case names a file of its own folder, without '/'", file);
    char path[sizeof c->fusion_file];
    if (snprintf(path, sizeof path, "%s/%s", s->dir, file) >= (int)sizeof path) return fail_at(l, file, "path too long");
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return fail_at(l, file, "case '%s': fusion file %s does not exist", c->name, path);
    copy_str(c->fusion_file, sizeof c->fusion_file, path);
    copy_str(c->file_name, sizeof c->file_name, file);
    *p = save;
    while (*(p = skip_ws(p))) {
        if (*p != ',') return fail_at(l, p, "expected ',' before the next option");
        p = skip_ws(p + 1);
        char key[32], *kat = p;
        if (!take_ident(&p, key, sizeof key)) return fail_at(l, kat, "expected an option (scatter=atomic|deterministic)");
        p = skip_ws(p);
        if (*p != '=') return fail_at(l, p, "expected '=' after '%s'", key);
        p = skip_ws(p + 1);
        char val[64], *vat = p;
        if (!take_ident(&p, val, sizeof val)) return fail_at(l, vat, "expected a value for '%s'", key);
        if (strcmp(key, "scatter") == 0) {
            c->scatter_named = true;
            if (strcmp(val, "atomic") == 0) c->scatter = FU_SCATTER_ATOMIC;
            else if (strcmp(val, "deterministic") == 0) c->scatter = FU_SCATTER_DETERMINISTIC;
            else return fail_at(l, vat, "scatter=%s: the modes are atomic and deterministic", val);
        } else if (strcmp(key, "reference") == 0) {
            copy_str(c->reference, sizeof c->reference, val);
            snprintf(c->reference_file, sizeof c->reference_file, "%s/reference.cu", s->dir);
            if (stat(c->reference_file, &st) != 0 || !S_ISREG(st.st_mode))
                return fail_at(l, kat, "case '%s' names reference=%s, but the folder has no reference.cu", c->name, val);
        } else {
            return fail_at(l, kat, "unknown case option '%s' (scatter, reference)", key);
        }
    }
    return true;
}

/* A list of sizes, checked against the axes. */
static bool parse_size_list(hb_suite *s, line_ctx *l, char *p, char *dst, size_t cap)
{
    char *q = p, *w = p;
    for (; *q; q++)
        if (*q != ' ' && *q != '\t') *w++ = *q; /* "8192x32768, 4096x50304": spaces are for the eye */
    *w = '\0';
    hb_size *sz = NULL;
    int n = 0;
    char why[256];
    if (!hb_parse_sizes(p, s->ndims, &sz, &n, why, sizeof why)) return fail_at(l, p, "%s (the axes are %s)", why, s->size_help);
    free(sz);
    if (!copy_str(dst, cap, p)) return fail_at(l, p, "the list of sizes is too long");
    return true;
}

static bool parse_line(hb_suite *s, line_ctx *l, char *p, bool *have_size)
{
    char key[16], *kat = p;
    if (!take_ident(&p, key, sizeof key)) return fail_at(l, kat, "expected a keyword (suite, size, about, dtype, sizes, let, require, check, spot, case)");
    p = skip_ws(p);
    bool sized = strcmp(key, "suite") == 0 || strcmp(key, "size") == 0 || strcmp(key, "about") == 0 ||
                 strcmp(key, "dtype") == 0;
    if (!sized && !*have_size) return fail_at(l, kat, "'%s' before the 'size' line", key);
    if (strcmp(key, "suite") == 0) {
        char *at = p;
        if (!take_ident(&p, s->name, sizeof s->name) || *skip_ws(p))
            return fail_at(l, at, "expected the suite's name (letters, digits, '_'; at most %zu)", sizeof s->name - 1);
        const char *base = strrchr(s->dir, '/');
        base = base ? base + 1 : s->dir;
        if (strcmp(base, s->name) != 0)
            return fail_at(l, at, "suite '%s' is in folder '%s': a suite's name is its folder's", s->name, base);
    } else if (strcmp(key, "size") == 0) {
        if (*have_size) return fail_at(l, kat, "a second 'size' line");
        for (;;) {
            char *at = p;
            if (s->ndims == HB_MAX_DIMS) return fail_at(l, at, "more than %d axes", HB_MAX_DIMS);
            if (!take_ident(&p, s->axes[s->ndims], sizeof s->axes[0])) return fail_at(l, at, "expected an axis name");
            for (int i = 0; i < s->ndims; i++)
                if (strcmp(s->axes[i], s->axes[s->ndims]) == 0) return fail_at(l, at, "axis '%s' twice", s->axes[i]);
            s->axis_col[s->ndims++] = (int)(at - l->start) + 1;
            p = skip_ws(p);
            if (!*p) break;
            if (*p != 'x') return fail_at(l, p, "expected 'x' between the axes (size N x V)");
            p = skip_ws(p + 1);
        }
        s->size_line = l->line;
        *have_size = true;
    } else if (strcmp(key, "about") == 0) {
        copy_str(s->about, sizeof s->about, p);
    } else if (strcmp(key, "dtype") == 0) {
        char *at = p;
        if (!take_ident(&p, s->dtype_param, sizeof s->dtype_param)) return fail_at(l, at, "expected the dtype parameter (dtype DT = f32, bf16)");
        p = skip_ws(p);
        if (*p != '=') return fail_at(l, p, "expected '=' and the dtypes");
        p = skip_ws(p + 1);
        char w[256], *q = p, *o = p;
        for (; *q; q++)
            if (*q != ' ' && *q != '\t') *o++ = *q;
        *o = '\0';
        fu_dtype dts[8];
        int n;
        if (!hb_parse_dtypes(p, dts, 8, &n, w, sizeof w)) return fail_at(l, p, "%s", w);
        copy_str(s->default_dtypes, sizeof s->default_dtypes, p);
    } else if (strcmp(key, "sizes") == 0) {
        char which[16], *at = p;
        if (!take_ident(&p, which, sizeof which) || (strcmp(which, "default") && strcmp(which, "sweep")))
            return fail_at(l, at, "expected 'sizes default = ...' or 'sizes sweep = ...'");
        p = skip_ws(p);
        if (*p != '=') return fail_at(l, p, "expected '='");
        p = skip_ws(p + 1);
        bool def = strcmp(which, "default") == 0;
        if (!parse_size_list(s, l, p, def ? s->default_sizes : s->sweep_sizes, sizeof s->default_sizes)) return false;
    } else if (strcmp(key, "let") == 0) {
        if (s->nlets == HB_MAX_LETS) return fail_at(l, kat, "more than %d 'let' lines", HB_MAX_LETS);
        hb_let *lt = &s->lets[s->nlets];
        char *at = p;
        if (!take_ident(&p, lt->name, sizeof lt->name)) return fail_at(l, at, "expected a name (let C = C3 / 3)");
        for (int i = 0; i < s->ndims; i++)
            if (strcmp(s->axes[i], lt->name) == 0) return fail_at(l, at, "'%s' is an axis", lt->name);
        for (int i = 0; i < s->nlets; i++)
            if (strcmp(s->lets[i].name, lt->name) == 0) return fail_at(l, at, "'%s' is defined twice", lt->name);
        p = skip_ws(p);
        if (*p != '=') return fail_at(l, p, "expected '='");
        p = skip_ws(p + 1);
        if (!copy_str(lt->expr, sizeof lt->expr, p)) return fail_at(l, p, "expression too long");
        lt->line = l->line;
        s->nlets++;
        /* the names it uses must exist: evaluated with every known name 1 */
        hb_env env;
        memset(&env, 0, sizeof env);
        for (int i = 0; i < s->ndims; i++) env_add(&env, s->axes[i], 1);
        for (int i = 0; i + 1 < s->nlets; i++) env_add(&env, s->lets[i].name, 1);
        int64_t v;
        int col = 0;
        char w[256];
        expr_ctx c = {.text = p, .p = p, .env = &env, .ok = true};
        (void)v;
        expr_cmp(&c);
        skip_space(&c);
        if (c.ok && *c.p) expr_fail(&c, "unexpected '%c' after the expression", *c.p);
        if (!c.ok && strstr(c.why, "division by zero") == NULL) {
            col = c.col;
            snprintf(w, sizeof w, "%s", c.why);
            return fail_at(l, p + col - 1, "%s", w);
        }
    } else if (strcmp(key, "require") == 0 || strcmp(key, "check") == 0) {
        bool req = key[0] == 'r';
        char *expr = p, *msg = NULL;
        int axis = -1;
        if (!req) {
            char name[16], *at = p;
            if (!take_ident(&p, name, sizeof name)) return fail_at(l, at, "expected an axis (check N = min(N, 4096))");
            for (int i = 0; i < s->ndims; i++)
                if (strcmp(s->axes[i], name) == 0) axis = i;
            if (axis < 0) return fail_at(l, at, "'%s' is not an axis of the size", name);
            p = skip_ws(p);
            if (*p != '=') return fail_at(l, p, "expected '='");
            expr = p = skip_ws(p + 1);
        } else if ((msg = strchr(p, ':'))) {
            *msg = '\0';
            msg = skip_ws(msg + 1);
            trim_end(p);
        }
        hb_env env;
        memset(&env, 0, sizeof env);
        for (int i = 0; i < s->ndims; i++) env_add(&env, s->axes[i], 1);
        for (int i = 0; i < s->nlets; i++) env_add(&env, s->lets[i].name, 1);
        expr_ctx c = {.text = expr, .p = expr, .env = &env, .ok = true};
        expr_cmp(&c);
        skip_space(&c);
        if (c.ok && *c.p) expr_fail(&c, "unexpected '%c' after the expression", *c.p);
        if (!c.ok && strstr(c.why, "division by zero") == NULL) return fail_at(l, expr + c.col - 1, "%s", c.why);
        if (req) {
            if (s->nrequires == HB_MAX_LETS) return fail_at(l, kat, "more than %d 'require' lines", HB_MAX_LETS);
            hb_require *r = &s->requires[s->nrequires++];
            if (!copy_str(r->expr, sizeof r->expr, expr)) return fail_at(l, expr, "expression too long");
            copy_str(r->message, sizeof r->message, msg ? msg : "");
        } else {
            if (s->nchecks == HB_MAX_DIMS * 2) return fail_at(l, kat, "too many 'check' lines");
            hb_check *k = &s->checks[s->nchecks++];
            k->axis = axis;
            if (!copy_str(k->expr, sizeof k->expr, expr)) return fail_at(l, expr, "expression too long");
        }
    } else if (strcmp(key, "spot") == 0) {
        char name[16], *at = p;
        if (!take_ident(&p, name, sizeof name) || *skip_ws(p)) return fail_at(l, at, "expected an axis (spot T)");
        s->spot_axis = -1;
        for (int i = 0; i < s->ndims; i++)
            if (strcmp(s->axes[i], name) == 0) s->spot_axis = i;
        if (s->spot_axis < 0) return fail_at(l, at, "'%s' is not an axis of the size", name);
    } else if (strcmp(key, "case") == 0) {
        return parse_case(s, l, p);
    } else {
        return fail_at(l, kat, "unknown keyword '%s' (suite, size, about, dtype, sizes, let, require, check, spot, case)", key);
    }
    return true;
}

/* Every axis must reach a parameter of every case (directly, or through a
 * let whose expression names it); every case's fusion file must parse. */
static bool check_cases(hb_suite *s, char *why, size_t nwhy)
{
    for (int ci = 0; ci < s->ncases; ci++) {
        hb_case *c = &s->cases[ci];
        fu_error err;
        if (fu_program_parse_file(c->fusion_file, &c->prog, &err)) {
            c->prog = NULL;
            snprintf(why, nwhy, "%s", err.message);
            return false;
        }
        for (int a = 0; a < s->ndims; a++) {
            bool bound = program_param(c->prog, s->axes[a]) >= 0;
            for (int i = 0; !bound && i < s->nlets; i++) {
                if (program_param(c->prog, s->lets[i].name) < 0) continue;
                /* does the let's expression name the axis? */
                const char *e = s->lets[i].expr;
                size_t n = strlen(s->axes[a]);
                for (const char *q = strstr(e, s->axes[a]); q && !bound; q = strstr(q + 1, s->axes[a]))
                    bound = (q == e || !(isalnum((unsigned char)q[-1]) || q[-1] == '_')) &&
                            !(isalnum((unsigned char)q[n]) || q[n] == '_');
            }
            if (!bound) {
                snprintf(why, nwhy, "%s:%d:%d: axis '%s' binds no parameter of case '%s' (%s): name a parameter of "
                         "the file, or a 'let' that binds one",
                         s->manifest, s->size_line, s->axis_col[a], s->axes[a], c->name, c->file_name);
                return false;
            }
        }
        if (s->dtype_param[0] && program_param(c->prog, s->dtype_param) >= 0 &&
            !fu_program_param_is_dtype(c->prog, program_param(c->prog, s->dtype_param))) {
            snprintf(why, nwhy, "%s: dtype parameter '%s' of case '%s' is not a dtype in %s", s->manifest, s->dtype_param,
                     c->name, c->file_name);
            return false;
        }
    }
    return true;
}

static void make_help(hb_suite *s)
{
    size_t k = 0;
    for (int i = 0; i < s->ndims && k < sizeof s->size_help; i++) {
        int w = snprintf(s->size_help + k, sizeof s->size_help - k, "%s%s", i ? "x" : "", s->axes[i]);
        if (w > 0) k += (size_t)w;
    }
    char first[64] = "";
    const char *comma = strchr(s->default_sizes, ',');
    size_t n = comma ? (size_t)(comma - s->default_sizes) : strlen(s->default_sizes);
    if (n < sizeof first) {
        memcpy(first, s->default_sizes, n);
        first[n] = '\0';
    }
    if (k < sizeof s->size_help)
        snprintf(s->size_help + k, sizeof s->size_help - k, "%s%s%s%s%s", s->about[0] ? " (" : "", s->about,
                 s->about[0] ? ")" : "", first[0] ? ", e.g. " : "", first);
}

bool hb_suite_load(const char *dir, hb_suite **out, char *why, size_t nwhy)
{
    *out = NULL;
    hb_suite *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    s->spot_axis = -1;
    copy_str(s->dir, sizeof s->dir, dir);
    snprintf(s->manifest, sizeof s->manifest, "%s/%s", dir, HB_MANIFEST);
    FILE *f = fopen(s->manifest, "r");
    if (!f) {
        snprintf(why, nwhy, "%s: cannot read: %s", s->manifest, strerror(errno));
        hb_suite_free(s);
        return false;
    }
    char buf[2048];
    line_ctx l = {.file = s->manifest, .why = why, .nwhy = nwhy};
    bool ok = true, have_size = false;
    while (ok && fgets(buf, sizeof buf, f)) {
        l.line++;
        l.start = buf;
        if (!strchr(buf, '\n') && !feof(f)) {
            ok = fail_at(&l, NULL, "line longer than %zu characters", sizeof buf - 2);
            break;
        }
        char *hash = strchr(buf, '#');
        if (hash) *hash = '\0';
        trim_end(buf);
        char *p = skip_ws(buf);
        if (*p) ok = parse_line(s, &l, p, &have_size);
    }
    fclose(f);
    if (ok && !s->name[0]) { /* the folder's name */
        const char *base = strrchr(s->dir, '/');
        base = base ? base + 1 : s->dir;
        bool valid = strlen(base) < sizeof s->name && (isalpha((unsigned char)base[0]) || base[0] == '_');
        for (const char *q = base; valid && *q; q++) valid = isalnum((unsigned char)*q) || *q == '_';
        if (valid) copy_str(s->name, sizeof s->name, base);
        else ok = (snprintf(why, nwhy, "%s: folder '%s' is not a suite name (letters, digits, '_')", s->manifest, base), false);
    }
    if (ok && !have_size) ok = (snprintf(why, nwhy, "%s: no 'size A x B' line", s->manifest), false);
    if (ok && !s->default_sizes[0]) ok = (snprintf(why, nwhy, "%s: no 'sizes default = ...' line", s->manifest), false);
    if (ok && !s->ncases) ok = (snprintf(why, nwhy, "%s: no 'case NAME = FILE.fusion' line", s->manifest), false);
    if (ok && !s->default_dtypes[0]) copy_str(s->default_dtypes, sizeof s->default_dtypes, "f32");
    if (ok && !s->sweep_sizes[0]) copy_str(s->sweep_sizes, sizeof s->sweep_sizes, s->default_sizes);
    if (ok) ok = check_cases(s, why, nwhy);
    if (ok) { /* every listed size binds */
        const char *lists[2] = {s->default_sizes, s->sweep_sizes};
        for (int k = 0; ok && k < 2; k++) {
            hb_size *sz = NULL;
            int n = 0;
            hb_parse_sizes(lists[k], s->ndims, &sz, &n, why, nwhy);
            for (int i = 0; ok && i < n; i++) {
                hb_params pv;
                char w[400];
                if (!hb_suite_bind(s, &s->cases[0], &sz[i], FU_F32, &pv, w, sizeof w)) {
                    snprintf(why, nwhy, "%s: %s", s->manifest, w);
                    ok = false;
                }
            }
            free(sz);
        }
    }
    make_help(s);
    if (!ok) {
        hb_suite_free(s);
        return false;
    }
    *out = s;
    return true;
}

/* ------------------------------------------------------------ discovery */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

void hb_suite_set_free(hb_suite_set *set)
{
    for (int i = 0; i < set->n; i++) hb_suite_free(set->suites[i]);
    free(set->suites);
    memset(set, 0, sizeof *set);
}

bool hb_suites_discover(const char *root, hb_suite_set *set, char *why, size_t nwhy)
{
    memset(set, 0, sizeof *set);
    DIR *d = opendir(root);
    if (!d) {
        snprintf(why, nwhy, "suites directory %s: %s", root, strerror(errno));
        return false;
    }
    char **names = NULL;
    int n = 0;
    struct dirent *e;
    bool ok = true;
    while (ok && (e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[2048];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s/%s", root, e->d_name, HB_MANIFEST);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        char **nn = realloc(names, ((size_t)n + 1) * sizeof *nn);
        char *copy = strdup(e->d_name);
        if (!nn || !copy) {
            free(copy);
            if (nn) names = nn;
            snprintf(why, nwhy, "out of memory");
            ok = false;
            break;
        }
        names = nn;
        names[n++] = copy;
    }
    closedir(d);
    if (ok && n) qsort(names, (size_t)n, sizeof *names, cmp_str);
    if (ok) set->suites = calloc((size_t)n + 1, sizeof *set->suites);
    if (ok && !set->suites) ok = (snprintf(why, nwhy, "out of memory"), false);
    for (int i = 0; ok && i < n; i++) {
        char dir[2048];
        snprintf(dir, sizeof dir, "%s/%s", root, names[i]);
        hb_suite *s;
        if (!hb_suite_load(dir, &s, why, nwhy)) {
            ok = false;
            break;
        }
        for (int k = 0; k < set->n; k++)
            if (strcmp(set->suites[k]->name, s->name) == 0) {
                snprintf(why, nwhy, "%s: suite '%s' is also %s", s->manifest, s->name, set->suites[k]->manifest);
                hb_suite_free(s);
                ok = false;
                break;
            }
        if (ok) set->suites[set->n++] = s;
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    if (!ok) hb_suite_set_free(set);
    return ok;
}

const hb_suite *hb_suite_set_find(const hb_suite_set *set, const char *name)
{
    for (int i = 0; i < set->n; i++)
        if (strcmp(set->suites[i]->name, name) == 0) return set->suites[i];
    return NULL;
}

/* ------------------------------------------------------------ one fusion file */

bool hb_suite_from_fusion(const char *path, hb_suite **out, char *why, size_t nwhy)
{
    *out = NULL;
    fu_program *prog = NULL;
    fu_error err;
    if (fu_program_parse_file(path, &prog, &err)) {
        snprintf(why, nwhy, "%s", err.message);
        return false;
    }
    hb_suite *s = calloc(1, sizeof *s);
    if (!s || !add_case(s)) {
        free(s);
        fu_program_free(prog);
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    s->spot_axis = -1;
    s->from_file = true;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t stem = strlen(base) > 7 && strcmp(base + strlen(base) - 7, ".fusion") == 0 ? strlen(base) - 7 : strlen(base);
    if (stem >= sizeof s->name) { /* cut short, two files could share a name */
        snprintf(why, nwhy, "%s: the file's name (%zu characters without .fusion) names its suite, and a suite's name "
                 "takes at most %zu", path, stem, sizeof s->name - 1);
        hb_suite_free(s);
        fu_program_free(prog);
        return false;
    }
    snprintf(s->name, sizeof s->name, "%.*s", (int)stem, base);
    snprintf(s->manifest, sizeof s->manifest, "%s", path);
    hb_case *c = &s->cases[0];
    snprintf(c->name, sizeof c->name, "%s", fu_program_name(prog)[0] ? fu_program_name(prog) : "fusion");
    snprintf(c->fusion_file, sizeof c->fusion_file, "%s", path);
    snprintf(c->file_name, sizeof c->file_name, "%s", base);
    c->prog = prog;
    size_t kd = 0;
    for (int i = 0; i < fu_program_num_params(prog); i++) {
        const char *name = fu_program_param_name(prog, i), *def = fu_program_param_default(prog, i);
        if (fu_program_param_is_dtype(prog, i)) {
            if (!s->dtype_param[0]) {
                copy_str(s->dtype_param, sizeof s->dtype_param, name);
                copy_str(s->default_dtypes, sizeof s->default_dtypes, def);
            }
            continue;
        }
        char *end;
        long long v = strtoll(def, &end, 10);
        if (end == def || *end || v < 1) continue; /* not a size: it keeps its default */
        if (s->ndims == HB_MAX_DIMS || strlen(name) >= sizeof s->axes[0]) {
            snprintf(why, nwhy, "%s: size parameter '%s': a suite takes at most %d axes of names up to %zu characters",
                     path, name, HB_MAX_DIMS, sizeof s->axes[0] - 1);
            hb_suite_free(s);
            return false;
        }
        copy_str(s->axes[s->ndims++], sizeof s->axes[0], name);
        int w = snprintf(s->default_sizes + kd, sizeof s->default_sizes - kd, "%s%lld", kd ? "x" : "", v);
        if (w > 0) kd += (size_t)w;
    }
    if (!s->default_dtypes[0]) {
        /* no dtype parameter: the dtype of the first floating input names the items */
        fu_fusion *f = NULL;
        const char *dt = "f32";
        if (!fu_program_build(prog, NULL, 0, &f, &err))
            for (int i = 0; i < fu_fusion_num_inputs(f); i++)
                if (fu_dtype_is_float(fu_tensor_dtype(f, fu_fusion_input(f, i)))) {
                    dt = fu_dtype_name(fu_tensor_dtype(f, fu_fusion_input(f, i)));
                    break;
                }
        fu_fusion_free(f);
        copy_str(s->default_dtypes, sizeof s->default_dtypes, dt);
    }
    copy_str(s->sweep_sizes, sizeof s->sweep_sizes, s->default_sizes);
    copy_str(s->about, sizeof s->about, "the file's parameters");
    make_help(s);
    *out = s;
    return true;
}

/* ------------------------------------------------------------ NAME=VALUE sizes */

bool hb_suite_parse_sizes(const hb_suite *s, const char *text, hb_size **out, int *n, char *why, size_t nwhy)
{
    if (!strchr(text, '=')) {
        if (s->ndims == 0) {
            snprintf(why, nwhy, "%s has no size parameters; --sizes takes nothing", s->name);
            return false;
        }
        return hb_parse_sizes(text, s->ndims, out, n, why, nwhy);
    }
    /* "N=4096,V=50304;N=8192,V=32768": each size ';'-separated, the axes not named
     * from the first default size */
    *out = NULL;
    *n = 0;
    hb_size *def = NULL;
    int ndef = 0;
    if (s->ndims && !hb_parse_sizes(s->default_sizes, s->ndims, &def, &ndef, why, nwhy)) return false;
    int cap = 1;
    for (const char *p = text; *p; p++) cap += *p == ';';
    hb_size *v = calloc((size_t)cap, sizeof *v);
    if (!v) {
        free(def);
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    const char *p = text;
    bool ok = true;
    while (ok) {
        const char *end = strchr(p, ';');
        if (!end) end = p + strlen(p);
        hb_size *sz = &v[*n];
        if (def) *sz = def[0];
        sz->n = s->ndims;
        const char *q = p;
        while (ok && q < end) {
            const char *eq = memchr(q, '=', (size_t)(end - q)), *comma = memchr(q, ',', (size_t)(end - q));
            if (!comma) comma = end;
            if (!eq || eq > comma) {
                snprintf(why, nwhy, "'%.*s' is not NAME=VALUE", (int)(comma - q), q);
                ok = false;
                break;
            }
            int axis = -1;
            for (int i = 0; i < s->ndims; i++)
                if (strlen(s->axes[i]) == (size_t)(eq - q) && strncmp(s->axes[i], q, (size_t)(eq - q)) == 0) axis = i;
            if (axis < 0) {
                snprintf(why, nwhy, "'%.*s' is not an axis of %s (%s)", (int)(eq - q), q, s->name, s->size_help);
                ok = false;
                break;
            }
            char num[32], *nend;
            int len = (int)(comma - eq - 1);
            snprintf(num, sizeof num, "%.*s", len > 30 ? 30 : len, eq + 1);
            errno = 0;
            long long value = strtoll(num, &nend, 10);
            if (len < 1 || len > 20 || errno || *nend || !isdigit((unsigned char)num[0]) || value < 1 ||
                value >= ((long long)1 << 40)) {
                snprintf(why, nwhy, "%.*s: '%s' is not an integer from 1 to 2^40", (int)(eq - q), q, num);
                ok = false;
                break;
            }
            sz->d[axis] = value;
            q = comma < end ? comma + 1 : end;
        }
        if (!ok) break;
        (*n)++;
        if (!*end) break;
        p = end + 1;
    }
    free(def);
    if (!ok) {
        free(v);
        *n = 0;
        return false;
    }
    *out = v;
    return true;
}
