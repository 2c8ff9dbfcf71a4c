/*
 * program.c -- the text format for fusions (docs/format.md): a lexer, a
 * parser into a small AST of parameters, inputs, statements and outputs whose
 * sizes are integer expressions, the canonical printer, and the builder that
 * binds the parameters and turns a program into a verified fusion.
 *
 * Parsing checks syntax, names and the kind of every attribute value; values
 * themselves (division by zero, overflow, shapes) are checked when the
 * program is built, because parameters may be overridden. Every message
 * starts with FILE:LINE:COLUMN.
 *
 * Memory: the AST lives in an arena owned by the program, so that the many
 * early returns of a parser need no cleanup; the four top-level lists and the
 * name table are growable arrays.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"

#define MAX_DEPTH 64          /* parentheses and unary minus nested in one expression */
#define MAX_EXPR_HEIGHT 256   /* AST height: bounds the recursion of eval and print */
#define MAX_ATTRS 4           /* most attributes of any op */
#define FU_PROGRAM_FILE_MAX ((size_t)4 << 20) /* a fusion file is text of a few KB: 4 MiB is plenty */

/* ============================================================ the AST */

typedef struct loc {
    int line, col;
} loc;

typedef enum ex_kind { EX_NUM, EX_PARAM, EX_NEG, EX_BIN } ex_kind;

/* An integer expression over the parameters. */
typedef struct expr {
    ex_kind kind;
    char op;            /* EX_BIN: + - * / % */
    int64_t num;        /* EX_NUM */
    int param;          /* EX_PARAM: index into the program's params */
    const struct expr *a, *b;
    int height;         /* 1 for a leaf */
    loc at;             /* where the expression starts */
    loc op_at;          /* EX_BIN: the operator, for evaluation errors */
} expr;

/* A dtype written as a name (f32) or as a dtype parameter (DT). */
typedef struct dtype_ref {
    int param;          /* index of a dtype parameter, or -1 */
    fu_dtype dt;        /* when param < 0 */
} dtype_ref;

typedef enum val_kind {
    V_EXPR, V_LIST, V_FLOAT, V_BOOL, V_IDENT, /* as parsed */
    V_DTYPE, V_REDUCTION, V_NONE              /* identifiers once typed */
} val_kind;

/* An attribute value. */
typedef struct value {
    val_kind kind;
    loc at;
    const expr *e;                       /* V_EXPR */
    int n;                               /* V_LIST */
    const expr *items[FU_MAX_RANK];
    double f;                            /* V_FLOAT */
    bool b;                              /* V_BOOL */
    const char *ident;                   /* V_IDENT */
    dtype_ref dt;                        /* V_DTYPE */
    fu_reduction red;                    /* V_REDUCTION */
} value;

/* A tensor operand, or a numeric literal standing for a scalar constant. */
typedef struct operand {
    int tensor;         /* index of a tensor declaration, or -1 for a literal */
    bool is_int;        /* literal written as an integer */
    int64_t ival;
    double fval;
    loc at;
} operand;

/* An input or a statement: everything that defines a tensor. */
typedef struct tensor_decl {
    const char *name;
    loc at;                              /* the name */
    bool is_input;
    dtype_ref dt;                        /* input */
    int rank;                            /* input */
    const expr *shape[FU_MAX_RANK];      /* input */
    fu_op op;                            /* statement */
    loc op_at;
    int nops;
    operand ops[FU_MAX_OP_INPUTS];
    const value *attrs[MAX_ATTRS];       /* in schema order; NULL = optional and absent */
} tensor_decl;

typedef struct param {
    const char *name;
    loc at;
    bool is_dtype;
    const expr *def;                     /* integer parameter */
    dtype_ref ddef;                      /* dtype parameter */
    const char *def_text;                /* canonical text of the default */
} param;

typedef struct output_ref {
    int tensor;
    loc at;
} output_ref;

enum { NAME_PARAM = 1, NAME_TENSOR = 2 };

/* One name of the program's single namespace (parameters and tensors). */
typedef struct name_entry {
    const char *name;    /* NULL = empty slot */
    int kind, index;
    loc at;
} name_entry;

typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;    /* in units of max_align_t */
    max_align_t data[];
} arena_block;

struct fu_program {
    arena_block *arena;
    const char *file;
    const char *name;
    param *params;
    int nparams, cap_params;
    tensor_decl *tensors;                /* inputs first, then statements */
    int ntensors, cap_tensors;
    output_ref *outputs;
    int noutputs, cap_outputs;
    name_entry *names;                   /* open addressing, power-of-two capacity */
    int nnames, cap_names;
};

/* ============================================================ attribute schemas */

typedef enum attr_type { A_INT, A_LIST, A_BOOL, A_FLOAT, A_DTYPE, A_REDUCTION, A_OPT_INT } attr_type;

/* def: the default as text (parsed like a written value), REQUIRED, or
 * OPTIONAL (absent means the op's own rule: slice step 1, no reshape check). */
typedef struct attr_spec {
    const char *name;
    attr_type type;
    const char *def;
} attr_spec;

#define REQUIRED NULL
#define OPTIONAL ""

static const attr_spec cast_attrs[] = {{"dtype", A_DTYPE, REQUIRED}};
static const attr_spec broadcast_attrs[] = {{"shape", A_LIST, REQUIRED}};
static const attr_spec reduce_attrs[] = {{"axes", A_LIST, "[]"}, {"keepdim", A_BOOL, "false"}};
static const attr_spec reshape_attrs[] = {{"shape", A_LIST, REQUIRED}, {"old_shape", A_LIST, OPTIONAL}};
static const attr_spec permute_attrs[] = {{"dims", A_LIST, REQUIRED}};
static const attr_spec slice_attrs[] = {
    {"start", A_LIST, REQUIRED}, {"stop", A_LIST, REQUIRED}, {"step", A_LIST, OPTIONAL}};
static const attr_spec full_attrs[] = {
    {"shape", A_LIST, REQUIRED}, {"value", A_FLOAT, REQUIRED}, {"dtype", A_DTYPE, "f32"}};
static const attr_spec iota_attrs[] = {
    {"shape", A_LIST, REQUIRED}, {"axis", A_INT, REQUIRED}, {"dtype", A_DTYPE, "i64"}};
static const attr_spec axis_attrs[] = {{"axis", A_INT, REQUIRED}};
static const attr_spec softmax_attrs[] = {{"axis", A_INT, "-1"}};
static const attr_spec ce_attrs[] = {
    {"reduction", A_REDUCTION, "mean"}, {"ignore_index", A_INT, "-100"}, {"label_smoothing", A_FLOAT, "0.0"}};
static const attr_spec emb_attrs[] = {{"padding_idx", A_OPT_INT, "none"}};
static const attr_spec emb_bwd_attrs[] = {{"num_weights", A_INT, REQUIRED}, {"padding_idx", A_OPT_INT, "none"}};

#define SPEC(a) *n = (int)(sizeof a / sizeof a[0]); return a

/* The attributes of op, in positional order. */
static const attr_spec *schema_of(fu_op op, int *n)
{
    switch (op) {
    case FU_OP_CAST: SPEC(cast_attrs);
    case FU_OP_BROADCAST: SPEC(broadcast_attrs);
    case FU_OP_SUM: case FU_OP_RMAX: case FU_OP_RMIN: case FU_OP_MEAN: SPEC(reduce_attrs);
    case FU_OP_RESHAPE: SPEC(reshape_attrs);
    case FU_OP_PERMUTE: SPEC(permute_attrs);
    case FU_OP_SLICE: SPEC(slice_attrs);
    case FU_OP_FULL: SPEC(full_attrs);
    case FU_OP_IOTA: SPEC(iota_attrs);
    case FU_OP_INDEX_SELECT: case FU_OP_TAKE: case FU_OP_TAKE_ALONG_AXIS:
    case FU_OP_INDEX_ADD: case FU_OP_SCATTER_ADD: SPEC(axis_attrs);
    case FU_OP_SOFTMAX: case FU_OP_LOG_SOFTMAX: SPEC(softmax_attrs);
    case FU_OP_CROSS_ENTROPY: case FU_OP_CROSS_ENTROPY_BWD: SPEC(ce_attrs);
    case FU_OP_EMBEDDING: SPEC(emb_attrs);
    case FU_OP_EMBEDDING_BWD: SPEC(emb_bwd_attrs);
    default: *n = 0; return NULL;
    }
}
#undef SPEC

static const char *type_desc(attr_type t)
{
    switch (t) {
    case A_INT: return "an integer";
    case A_LIST: return "a list";
    case A_BOOL: return "true or false";
    case A_FLOAT: return "a number";
    case A_DTYPE: return "a dtype";
    case A_REDUCTION: return "a reduction (none, mean or sum)";
    case A_OPT_INT: return "an integer or none";
    }
    return "?";
}

/* Words that cannot name a parameter or a tensor (they start statements or
 * are values); parameters additionally cannot take enum words, so that
 * `reduction=mean` never means a parameter. */
static const char *const reserved_words[] = {"fusion", "param", "dtype", "input", "output",
                                             "true", "false", "inf", "nan", "none", NULL};
static const char *const reserved_for_params[] = {"mean", "sum", NULL};

/* ============================================================ arena and names */

static void *arena_alloc(fu_program *g, size_t bytes)
{
    size_t units = (bytes + sizeof(max_align_t) - 1) / sizeof(max_align_t);
    if (units == 0) units = 1;
    arena_block *b = g->arena;
    if (!b || b->cap - b->used < units) {
        size_t cap = units > 512 ? units : 512;
        b = fu_malloc(sizeof *b + cap * sizeof(max_align_t));
        if (!b) return NULL;
        b->next = g->arena;
        b->used = 0;
        b->cap = cap;
        g->arena = b;
    }
    void *p = &b->data[b->used];
    b->used += units;
    memset(p, 0, units * sizeof(max_align_t));
    return p;
}

static char *arena_strndup(fu_program *g, const char *s, size_t n)
{
    char *d = arena_alloc(g, n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static uint32_t hash_name(const char *s, size_t n)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

/* The slot holding name s, or the empty slot where it would go. */
static name_entry *names_slot(name_entry *tab, int cap, const char *s, size_t n)
{
    uint32_t mask = (uint32_t)cap - 1;
    for (uint32_t i = hash_name(s, n) & mask;; i = (i + 1) & mask) {
        name_entry *e = &tab[i];
        if (!e->name || (strlen(e->name) == n && memcmp(e->name, s, n) == 0)) return e;
    }
}

static const name_entry *names_find(const fu_program *g, const char *s, size_t n)
{
    if (g->cap_names == 0) return NULL;
    const name_entry *e = names_slot(g->names, g->cap_names, s, n);
    return e->name ? e : NULL;
}

/* Keeps the table at most half full. */
static bool names_reserve(fu_program *g)
{
    if (2 * (g->nnames + 1) <= g->cap_names) return true;
    int cap = g->cap_names ? 2 * g->cap_names : 64;
    name_entry *tab = fu_calloc((size_t)cap, sizeof *tab);
    if (!tab) return false;
    for (int i = 0; i < g->cap_names; i++)
        if (g->names[i].name) {
            const char *s = g->names[i].name;
            *names_slot(tab, cap, s, strlen(s)) = g->names[i];
        }
    fu_free(g->names);
    g->names = tab;
    g->cap_names = cap;
    return true;
}

/* ============================================================ lexer */

typedef enum tok_kind { T_EOF, T_NEWLINE, T_IDENT, T_INT, T_FLOAT, T_PUNCT, T_ERROR } tok_kind;

typedef struct token {
    tok_kind kind;
    const char *s;
    size_t len;
    loc at;
    char punct;
    int64_t ival;
    double fval;
    char msg[192];      /* T_ERROR: what is wrong */
} token;

typedef struct lexer {
    const char *p;
    int line;
    const char *line_start;
} lexer;

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

static void lex_error(token *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void lex_error(token *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->msg, sizeof t->msg, fmt, ap);
    va_end(ap);
    t->kind = T_ERROR;
}

/* Spaces, tabs, carriage returns and comments; not newlines, which end statements. */
static void lex_skip_blank(lexer *lx)
{
    for (;;) {
        char c = *lx->p;
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            lx->p++;
        } else if (c == '#') {
            while (*lx->p && *lx->p != '\n') lx->p++;
        } else {
            return;
        }
    }
}

/* Quoted token text for messages, cut at 40 characters. */
static const char *quote(const char *s, size_t n, char *buf, size_t size)
{
    if (n > 40) snprintf(buf, size, "'%.40s...'", s);
    else snprintf(buf, size, "'%.*s'", (int)n, s);
    return buf;
}

/* Decimal integers and floats (1, 1.5, .5, 1e-3); a number glued to letters is an error. */
static void lex_number(lexer *lx, token *t)
{
    const char *q = lx->p;
    bool is_float = false;
    while (is_digit(*q)) q++;
    if (*q == '.') {
        is_float = true;
        for (q++; is_digit(*q);) q++;
    }
    if (*q == 'e' || *q == 'E') {
        const char *r = q + 1;
        if (*r == '+' || *r == '-') r++;
        if (is_digit(*r)) {
            is_float = true;
            for (q = r; is_digit(*q);) q++;
        }
    }
    const char *end = q;
    while (is_ident_char(*end) || *end == '.') end++;
    t->len = (size_t)(end - lx->p);
    lx->p = end;
    char buf[64];
    if (end != q) {
        lex_error(t, "malformed number %s", quote(t->s, t->len, buf, sizeof buf));
        return;
    }
    if (is_float) {
        t->kind = T_FLOAT;
        t->fval = strtod(t->s, NULL);
        if (isinf(t->fval)) lex_error(t, "float literal %s is out of range", quote(t->s, t->len, buf, sizeof buf));
        return;
    }
    int64_t v = 0;
    for (const char *d = t->s; d < end; d++) {
        if (v > (INT64_MAX - (*d - '0')) / 10) {
            lex_error(t, "integer literal %s is too large", quote(t->s, t->len, buf, sizeof buf));
            return;
        }
        v = v * 10 + (*d - '0');
    }
    t->kind = T_INT;
    t->ival = v;
}

static void lex_next(lexer *lx, token *t)
{
    memset(t, 0, sizeof *t);
    lex_skip_blank(lx);
    t->at.line = lx->line;
    t->at.col = (int)(lx->p - lx->line_start) + 1;
    t->s = lx->p;
    char c = *lx->p;
    if (c == '\0') {
        t->kind = T_EOF;
    } else if (c == '\n') {
        t->kind = T_NEWLINE;
        t->len = 1;
        lx->p++;
        lx->line++;
        lx->line_start = lx->p;
    } else if (is_ident_start(c)) {
        while (is_ident_char(*lx->p)) lx->p++;
        t->kind = T_IDENT;
        t->len = (size_t)(lx->p - t->s);
    } else if (is_digit(c) || (c == '.' && is_digit(lx->p[1]))) {
        lex_number(lx, t);
    } else if (strchr("=()[],:+-*/%", c)) {
        t->kind = T_PUNCT;
        t->punct = c;
        t->len = 1;
        lx->p++;
    } else if (c >= 0x20 && c < 0x7f) {
        lex_error(t, "unexpected character '%c'", c);
        lx->p++;
    } else {
        lex_error(t, "unexpected byte 0x%02x", (unsigned)(unsigned char)c);
        lx->p++;
    }
}

/* ============================================================ parser basics */

typedef struct parser {
    fu_program *g;
    lexer lx;
    token tok;          /* the token at hand */
    token ahead;        /* one token of lookahead, when have_ahead */
    bool have_ahead;
    fu_error *err;
    bool failed;        /* the first error is kept; everything after it unwinds */
    int depth;
    bool seen_op;
} parser;

static bool perr(parser *p, loc at, fu_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* err = "FILE:LINE:COL: <message>" for the parser and the builder. The message
 * is cut at 899 characters before the location is put in front (a long
 * identifier in it can make it longer). */
static void loc_verror(fu_error *err, fu_status s, const char *file, loc at, const char *fmt, va_list ap)
{
    char msg[900];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fu_error_set_at(err, s, file, at.line, at.col, "%s", msg);
}

static bool perr(parser *p, loc at, fu_status s, const char *fmt, ...)
{
    if (p->failed) return false;
    p->failed = true;
    va_list ap;
    va_start(ap, fmt);
    loc_verror(p->err, s, p->g->file, at, fmt, ap);
    va_end(ap);
    return false;
}

static bool nomem(parser *p) { return perr(p, p->tok.at, FU_ERR_NOMEM, "out of memory"); }

static void *palloc(parser *p, size_t n)
{
    void *m = arena_alloc(p->g, n);
    if (!m) nomem(p);
    return m;
}

/* Moves to the next token; a lexical error is reported when it becomes current. */
static void advance(parser *p)
{
    if (p->have_ahead) {
        p->tok = p->ahead;
        p->have_ahead = false;
    } else {
        lex_next(&p->lx, &p->tok);
    }
    if (p->tok.kind == T_ERROR) perr(p, p->tok.at, FU_ERR_PARSE, "%s", p->tok.msg);
}

static const token *peek(parser *p)
{
    if (!p->have_ahead) {
        lex_next(&p->lx, &p->ahead);
        p->have_ahead = true;
    }
    return &p->ahead;
}

static bool tok_is(const token *t, char c) { return t->kind == T_PUNCT && t->punct == c; }

static bool tok_word(const token *t, const char *w)
{
    size_t n = strlen(w);
    return t->kind == T_IDENT && t->len == n && memcmp(t->s, w, n) == 0;
}

/* "'x2'", "end of line" or "end of file", for "found ..." in messages. */
static const char *found(const token *t, char *buf, size_t n)
{
    if (t->kind == T_EOF) return "end of file";
    if (t->kind == T_NEWLINE) return "end of line";
    return quote(t->s, t->len, buf, n);
}

/* Reports "expected WHAT, found <the token at hand>". */
static bool expected(parser *p, const char *what)
{
    char buf[64];
    return perr(p, p->tok.at, FU_ERR_PARSE, "expected %s, found %s", what, found(&p->tok, buf, sizeof buf));
}

static bool expect_eol(parser *p, const char *after)
{
    if (p->failed) return false;
    if (p->tok.kind == T_NEWLINE || p->tok.kind == T_EOF) return true;
    char what[96];
    snprintf(what, sizeof what, "end of line after %s", after);
    return expected(p, what);
}

static bool in_list(const char *const *words, const char *s, size_t n)
{
    for (int i = 0; words[i]; i++)
        if (strlen(words[i]) == n && memcmp(words[i], s, n) == 0) return true;
    return false;
}

static bool is_dtype_word(const char *s, size_t n)
{
    char buf[8];
    fu_dtype dt;
    if (n >= sizeof buf) return false;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return fu_dtype_from_name(buf, &dt);
}

/* Checks that the identifier t may name a new parameter (kind NAME_PARAM) or tensor. */
static bool check_new_name(parser *p, const token *t, int kind)
{
    const char *what = kind == NAME_PARAM ? "parameter" : "tensor";
    char buf[64];
    if (t->len >= FU_MAX_NAME)
        return perr(p, t->at, FU_ERR_PARSE, "name %s is longer than %d characters",
                    quote(t->s, t->len, buf, sizeof buf), FU_MAX_NAME - 1);
    if (in_list(reserved_words, t->s, t->len) || is_dtype_word(t->s, t->len) ||
        (kind == NAME_PARAM && in_list(reserved_for_params, t->s, t->len)))
        return perr(p, t->at, FU_ERR_PARSE, "'%.*s' is a reserved word and cannot name a %s", (int)t->len,
                    t->s, what);
    const name_entry *e = names_find(p->g, t->s, t->len);
    if (!e) return true;
    if (e->kind == kind)
        return perr(p, t->at, FU_ERR_PARSE, "%s '%s' is defined twice (first at %d:%d)", what, e->name,
                    e->at.line, e->at.col);
    return perr(p, t->at, FU_ERR_PARSE, "'%s' is already defined as a %s (at %d:%d)", e->name,
                e->kind == NAME_PARAM ? "parameter" : "tensor", e->at.line, e->at.col);
}

/* Adds a checked name; returns the program's copy. */
static const char *add_name(parser *p, const token *t, int kind, int index)
{
    char *s = arena_strndup(p->g, t->s, t->len);
    if (!s || !names_reserve(p->g)) {
        nomem(p);
        return NULL;
    }
    name_entry *e = names_slot(p->g->names, p->g->cap_names, t->s, t->len);
    e->name = s;
    e->kind = kind;
    e->index = index;
    e->at = t->at;
    p->g->nnames++;
    return s;
}

static const param *find_param(const parser *p, const char *s, size_t n)
{
    const name_entry *e = names_find(p->g, s, n);
    return e && e->kind == NAME_PARAM ? &p->g->params[e->index] : NULL;
}

static bool is_int_param(const parser *p, const token *t)
{
    const param *pr = t->kind == T_IDENT ? find_param(p, t->s, t->len) : NULL;
    return pr && !pr->is_dtype;
}

/* ============================================================ printing helpers */

/* Declared in ir.h: shared with print.c. */
const char *fu_format_double(double v, char *buf, size_t n)
{
    if (isnan(v)) return snprintf(buf, n, "nan"), buf;
    if (isinf(v)) return snprintf(buf, n, v > 0 ? "inf" : "-inf"), buf;
    if (v == 0.0) return snprintf(buf, n, signbit(v) ? "-0.0" : "0.0"), buf;
    if (v == floor(v) && fabs(v) < 1e15) return snprintf(buf, n, "%.1f", v), buf; /* -100.0, not -1e+02 */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    if (!strpbrk(buf, ".e")) {
        size_t k = strlen(buf);
        snprintf(buf + k, n - k, ".0");
    }
    return buf;
}

static int expr_prec(const expr *e)
{
    if (e->kind == EX_BIN) return e->op == '+' || e->op == '-' ? 1 : 2;
    if (e->kind == EX_NEG || (e->kind == EX_NUM && e->num < 0)) return 3;
    return 4;
}

static void print_expr(fu_strbuf *sb, const fu_program *g, const expr *e);

/* A child expression, in parentheses when its precedence needs them. */
static void print_sub(fu_strbuf *sb, const fu_program *g, const expr *e, bool parens)
{
    if (parens) fu_sb_puts(sb, "(");
    print_expr(sb, g, e);
    if (parens) fu_sb_puts(sb, ")");
}

/* Minimal parentheses: operators are left associative, so a right operand of
 * the same precedence keeps its parentheses and the tree reads back the same. */
static void print_expr(fu_strbuf *sb, const fu_program *g, const expr *e)
{
    switch (e->kind) {
    case EX_NUM: fu_sb_printf(sb, "%lld", (long long)e->num); break;
    case EX_PARAM: fu_sb_puts(sb, g->params[e->param].name); break;
    case EX_NEG:
        fu_sb_puts(sb, "-");
        print_sub(sb, g, e->a, expr_prec(e->a) < 3);
        break;
    case EX_BIN: {
        int p = expr_prec(e);
        print_sub(sb, g, e->a, expr_prec(e->a) < p);
        fu_sb_printf(sb, " %c ", e->op);
        print_sub(sb, g, e->b, expr_prec(e->b) <= p);
        break;
    }
    }
}

static void print_list(fu_strbuf *sb, const fu_program *g, int n, const expr *const *items)
{
    fu_sb_puts(sb, "[");
    for (int i = 0; i < n; i++) {
        if (i) fu_sb_puts(sb, ", ");
        print_expr(sb, g, items[i]);
    }
    fu_sb_puts(sb, "]");
}

static const char *dtype_ref_name(const fu_program *g, dtype_ref r)
{
    return r.param >= 0 ? g->params[r.param].name : fu_dtype_name(r.dt);
}

static void print_value(fu_strbuf *sb, const fu_program *g, const value *v)
{
    char buf[40];
    switch (v->kind) {
    case V_EXPR: print_expr(sb, g, v->e); break;
    case V_LIST: print_list(sb, g, v->n, v->items); break;
    case V_FLOAT: fu_sb_puts(sb, fu_format_double(v->f, buf, sizeof buf)); break;
    case V_BOOL: fu_sb_puts(sb, v->b ? "true" : "false"); break;
    case V_IDENT: fu_sb_puts(sb, v->ident); break;
    case V_DTYPE: fu_sb_puts(sb, dtype_ref_name(g, v->dt)); break;
    case V_REDUCTION: fu_sb_puts(sb, fu_reduction_name(v->red)); break;
    case V_NONE: fu_sb_puts(sb, "none"); break;
    }
}

/* A value as text for a message, cut to fit buf. */
static const char *value_text(const fu_program *g, const value *v, char *buf, size_t n)
{
    fu_strbuf sb;
    fu_sb_init(&sb);
    print_value(&sb, g, v);
    snprintf(buf, n, "%s", sb.data && !sb.failed ? sb.data : "?");
    fu_sb_free(&sb);
    return buf;
}

/* ============================================================ expressions */

static const expr *parse_expr(parser *p);

static expr *new_expr(parser *p, ex_kind k, loc at, const expr *a, const expr *b)
{
    int h = 1 + (a ? a->height : 0);
    if (b && b->height + 1 > h) h = b->height + 1;
    if (h > MAX_EXPR_HEIGHT) {
        perr(p, at, FU_ERR_PARSE, "expression is too long (more than %d levels)", MAX_EXPR_HEIGHT);
        return NULL;
    }
    expr *e = palloc(p, sizeof *e);
    if (!e) return NULL;
    e->kind = k;
    e->at = at;
    e->a = a;
    e->b = b;
    e->height = h;
    return e;
}

/* A parameter name inside an expression. */
static const expr *parse_param_ref(parser *p)
{
    const token *t = &p->tok;
    const name_entry *e = names_find(p->g, t->s, t->len);
    char buf[64];
    if (!e) {
        perr(p, t->at, FU_ERR_PARSE, "unknown parameter %s", quote(t->s, t->len, buf, sizeof buf));
        return NULL;
    }
    if (e->kind == NAME_TENSOR) {
        perr(p, t->at, FU_ERR_PARSE, "'%s' is a tensor; an integer expression is expected here", e->name);
        return NULL;
    }
    if (p->g->params[e->index].is_dtype) {
        perr(p, t->at, FU_ERR_PARSE, "parameter '%s' is a dtype, not an integer", e->name);
        return NULL;
    }
    expr *x = new_expr(p, EX_PARAM, t->at, NULL, NULL);
    if (!x) return NULL;
    x->param = e->index;
    advance(p);
    return p->failed ? NULL : x;
}

static const expr *parse_primary(parser *p)
{
    const token *t = &p->tok;
    if (t->kind == T_INT) {
        expr *x = new_expr(p, EX_NUM, t->at, NULL, NULL);
        if (!x) return NULL;
        x->num = t->ival;
        advance(p);
        return p->failed ? NULL : x;
    }
    if (t->kind == T_IDENT) return parse_param_ref(p);
    if (!tok_is(t, '(')) {
        expected(p, "an integer expression");
        return NULL;
    }
    loc open = t->at;
    if (++p->depth > MAX_DEPTH) {
        perr(p, open, FU_ERR_PARSE, "expression nested more than %d levels deep", MAX_DEPTH);
        return NULL;
    }
    advance(p);
    const expr *e = parse_expr(p);
    if (!e) return NULL;
    if (!tok_is(&p->tok, ')')) {
        char what[64];
        snprintf(what, sizeof what, "')' to close the '(' at %d:%d", open.line, open.col);
        expected(p, what);
        return NULL;
    }
    p->depth--;
    advance(p);
    return p->failed ? NULL : e;
}

static const expr *parse_unary(parser *p)
{
    if (!tok_is(&p->tok, '-')) return parse_primary(p);
    loc at = p->tok.at;
    if (++p->depth > MAX_DEPTH) {
        perr(p, at, FU_ERR_PARSE, "expression nested more than %d levels deep", MAX_DEPTH);
        return NULL;
    }
    advance(p);
    const expr *a = parse_unary(p);
    p->depth--;
    return a ? new_expr(p, EX_NEG, at, a, NULL) : NULL;
}

/* One left-associative precedence level: ops are the operator characters. */
static const expr *parse_level(parser *p, const char *ops, const expr *(*next)(parser *))
{
    const expr *e = next(p);
    while (e && p->tok.kind == T_PUNCT && strchr(ops, p->tok.punct)) {
        char op = p->tok.punct;
        loc op_at = p->tok.at;
        advance(p);
        const expr *b = p->failed ? NULL : next(p);
        if (!b) return NULL;
        expr *x = new_expr(p, EX_BIN, e->at, e, b);
        if (!x) return NULL;
        x->op = op;
        x->op_at = op_at;
        e = x;
    }
    return e;
}

static const expr *parse_term(parser *p) { return parse_level(p, "*/%", parse_unary); }
static const expr *parse_expr(parser *p) { return parse_level(p, "+-", parse_term); }

/* ============================================================ values */

/* '[' e1, e2, ... ']' into items (at most FU_MAX_RANK). */
static bool parse_list(parser *p, int *n, const expr **items)
{
    loc open = p->tok.at;
    advance(p);
    *n = 0;
    if (tok_is(&p->tok, ']')) {
        advance(p);
        return !p->failed;
    }
    for (;;) {
        if (p->failed) return false;
        if (*n == FU_MAX_RANK)
            return perr(p, p->tok.at, FU_ERR_PARSE, "list has more than %d elements", FU_MAX_RANK);
        items[*n] = parse_expr(p);
        if (!items[(*n)++]) return false;
        if (tok_is(&p->tok, ']')) break;
        if (!tok_is(&p->tok, ',')) {
            char what[80];
            snprintf(what, sizeof what, "',' or ']' in the list opened at %d:%d", open.line, open.col);
            return expected(p, what);
        }
        advance(p);
    }
    advance(p);
    return !p->failed;
}

static bool is_float_word(const token *t) { return tok_word(t, "inf") || tok_word(t, "nan"); }

/* True when the tokens at hand start a number: 1, 1.5, inf, nan, -1, -inf. */
static bool at_number(parser *p, bool float_only)
{
    const token *t = &p->tok;
    if (tok_is(t, '-')) t = peek(p);
    return t->kind == T_FLOAT || is_float_word(t) || (!float_only && t->kind == T_INT);
}

/* [-] (INT | FLOAT | inf | nan); the caller has checked at_number. */
static bool parse_number(parser *p, bool *is_int, int64_t *iv, double *fv)
{
    bool neg = tok_is(&p->tok, '-');
    if (neg) advance(p);
    const token *t = &p->tok;
    *is_int = t->kind == T_INT;
    *iv = neg ? -t->ival : t->ival;
    if (t->kind == T_INT) *fv = (double)*iv;
    else if (t->kind == T_FLOAT) *fv = t->fval;
    else *fv = tok_word(t, "inf") ? INFINITY : NAN;
    if (neg && !*is_int) *fv = -*fv;
    advance(p);
    return !p->failed;
}

static bool is_arith(const token *t) { return t->kind == T_PUNCT && strchr("+-*/%", t->punct); }

/* An attribute value as written; convert() gives it its type. */
static value *parse_value(parser *p)
{
    value *v = palloc(p, sizeof *v);
    if (!v) return NULL;
    const token *t = &p->tok;
    v->at = t->at;
    if (tok_is(t, '[')) {
        v->kind = V_LIST;
        return parse_list(p, &v->n, v->items) ? v : NULL;
    }
    if (tok_word(t, "true") || tok_word(t, "false")) {
        v->kind = V_BOOL;
        v->b = t->s[0] == 't';
        advance(p);
        return p->failed ? NULL : v;
    }
    if (at_number(p, true)) {
        bool is_int;
        int64_t iv;
        v->kind = V_FLOAT;
        return parse_number(p, &is_int, &iv, &v->f) ? v : NULL;
    }
    if (t->kind == T_IDENT && !is_int_param(p, t) && !is_arith(peek(p))) {
        v->kind = V_IDENT;
        v->ident = arena_strndup(p->g, t->s, t->len);
        if (!v->ident) return nomem(p), NULL;
        advance(p);
        return p->failed ? NULL : v;
    }
    v->kind = V_EXPR;
    v->e = parse_expr(p);
    return v->e ? v : NULL;
}

/* A dtype name or dtype parameter named s. */
static bool resolve_dtype(parser *p, const char *s, size_t n, loc at, dtype_ref *r)
{
    const name_entry *e = names_find(p->g, s, n);
    char buf[64];
    if (e && e->kind == NAME_PARAM) {
        if (!p->g->params[e->index].is_dtype)
            return perr(p, at, FU_ERR_PARSE, "parameter '%s' is an integer, not a dtype", e->name);
        r->param = e->index;
        return true;
    }
    char name[8];
    if (n < sizeof name) {
        memcpy(name, s, n);
        name[n] = '\0';
        if (fu_dtype_from_name(name, &r->dt)) {
            r->param = -1;
            return true;
        }
    }
    return perr(p, at, FU_ERR_PARSE, "unknown dtype %s (expected f32, f16, bf16, f64, i32, i64, bool or a dtype parameter)",
                quote(s, n, buf, sizeof buf));
}

static bool parse_dtype_ref(parser *p, dtype_ref *r)
{
    if (p->tok.kind != T_IDENT) return expected(p, "a dtype");
    if (!resolve_dtype(p, p->tok.s, p->tok.len, p->tok.at, r)) return false;
    advance(p);
    return !p->failed;
}

/* The message for an identifier where a number was expected. */
static const value *ident_mismatch(parser *p, const attr_spec *s, const value *v)
{
    const name_entry *e = names_find(p->g, v->ident, strlen(v->ident));
    if (!e) perr(p, v->at, FU_ERR_PARSE, "unknown parameter '%s'", v->ident);
    else if (e->kind == NAME_TENSOR)
        perr(p, v->at, FU_ERR_PARSE, "attribute '%s' expects %s, found tensor '%s'", s->name, type_desc(s->type), v->ident);
    else perr(p, v->at, FU_ERR_PARSE, "parameter '%s' is a dtype, not an integer", v->ident);
    return NULL;
}

static value *typed_copy(parser *p, const value *v, val_kind k)
{
    value *c = palloc(p, sizeof *c);
    if (!c) return NULL;
    *c = *v;
    c->kind = k;
    return c;
}

/* Checks v against the attribute's type; identifiers become dtypes, reductions or none. */
static const value *convert(parser *p, const attr_spec *s, const value *v)
{
    switch (s->type) {
    case A_INT: if (v->kind == V_EXPR) return v; break;
    case A_LIST: if (v->kind == V_LIST) return v; break;
    case A_BOOL: if (v->kind == V_BOOL) return v; break;
    case A_FLOAT: if (v->kind == V_FLOAT || v->kind == V_EXPR) return v; break;
    case A_OPT_INT:
        if (v->kind == V_EXPR) return v;
        if (v->kind == V_IDENT && strcmp(v->ident, "none") == 0) return typed_copy(p, v, V_NONE);
        break;
    case A_DTYPE:
        if (v->kind == V_IDENT) {
            value *d = typed_copy(p, v, V_DTYPE);
            return d && resolve_dtype(p, v->ident, strlen(v->ident), v->at, &d->dt) ? d : NULL;
        }
        break;
    case A_REDUCTION:
        if (v->kind == V_IDENT) {
            value *r = typed_copy(p, v, V_REDUCTION);
            if (r && !fu_reduction_from_name(v->ident, &r->red)) {
                perr(p, v->at, FU_ERR_PARSE, "unknown reduction '%s' (expected none, mean or sum)", v->ident);
                return NULL;
            }
            return r;
        }
        break;
    }
    if (v->kind == V_IDENT && (s->type == A_INT || s->type == A_OPT_INT || s->type == A_FLOAT))
        return ident_mismatch(p, s, v);
    char buf[80];
    perr(p, v->at, FU_ERR_PARSE, "attribute '%s' expects %s, found %s", s->name, type_desc(s->type),
         value_text(p->g, v, buf, sizeof buf));
    return NULL;
}

/* An absent attribute's default, parsed from its text like a written value. */
static const value *default_value(parser *p, const attr_spec *s, loc at)
{
    parser sub = *p;
    sub.lx.p = s->def;
    sub.lx.line = 1;
    sub.lx.line_start = s->def;
    sub.have_ahead = false;
    sub.depth = 0;
    advance(&sub);
    value *raw = sub.failed ? NULL : parse_value(&sub);
    if (raw) raw->at = at;
    const value *v = raw ? convert(&sub, s, raw) : NULL;
    p->failed = sub.failed;
    FU_ASSERT(v || sub.failed);
    return v;
}

/* ============================================================ statements */

static bool push_tensor(parser *p, const token *name, tensor_decl *d)
{
    fu_program *g = p->g;
    if (fu_grow((void **)&g->tensors, &g->cap_tensors, g->ntensors + 1, sizeof *g->tensors)) return nomem(p);
    d->name = add_name(p, name, NAME_TENSOR, g->ntensors);
    if (!d->name) return false;
    d->at = name->at;
    g->tensors[g->ntensors++] = *d;
    return true;
}

/* Whether the identifier t names an op (into *op). */
static bool ident_op(const token *t, fu_op *op)
{
    char name[64];
    if (t->len >= sizeof name) return false;
    memcpy(name, t->s, t->len);
    name[t->len] = '\0';
    return fu_op_from_name(name, op);
}

/* The tensor named by the identifier at hand. */
static int lookup_tensor(parser *p)
{
    const token *t = &p->tok;
    const name_entry *e = names_find(p->g, t->s, t->len);
    char buf[64];
    if (e && e->kind == NAME_TENSOR) return e->index;
    if (e) {
        perr(p, t->at, FU_ERR_PARSE, "'%s' is a parameter, not a tensor", e->name);
        return -1;
    }
    quote(t->s, t->len, buf, sizeof buf);
    fu_op op;
    if (ident_op(t, &op) && tok_is(peek(p), '('))  /* a nested call: say what the format wants instead */
        perr(p, t->at, FU_ERR_PARSE, "nested call of %s: an operand is a tensor name or a literal; "
             "give the call its own statement (`t = %s(...)`) and use t", buf, fu_op_name(op));
    else
        perr(p, t->at, FU_ERR_PARSE, "unknown tensor %s", buf);
    return -1;
}

static bool parse_fusion_line(parser *p)
{
    if (!tok_word(&p->tok, "fusion")) return expected(p, "'fusion NAME' as the first statement");
    advance(p);
    const token *t = &p->tok;
    char buf[64];
    if (t->kind != T_IDENT) return expected(p, "a fusion name after 'fusion'");
    if (t->len >= FU_MAX_NAME)
        return perr(p, t->at, FU_ERR_PARSE, "fusion name %s is longer than %d characters",
                    quote(t->s, t->len, buf, sizeof buf), FU_MAX_NAME - 1);
    p->g->name = arena_strndup(p->g, t->s, t->len);
    if (!p->g->name) return nomem(p);
    advance(p);
    return expect_eol(p, "the fusion name");
}

/* Keeps the canonical text of a parameter's default. */
static bool set_default_text(parser *p, param *pr)
{
    fu_strbuf sb;
    fu_sb_init(&sb);
    if (pr->is_dtype) fu_sb_puts(&sb, dtype_ref_name(p->g, pr->ddef));
    else print_expr(&sb, p->g, pr->def);
    pr->def_text = sb.failed ? NULL : arena_strndup(p->g, sb.data, sb.len);
    fu_sb_free(&sb);
    return pr->def_text ? true : nomem(p);
}

/* param NAME = EXPR  |  dtype NAME = DTYPE */
static bool parse_param(parser *p, bool is_dtype)
{
    const char *kw = is_dtype ? "dtype" : "param";
    advance(p);
    token name = p->tok;
    char what[96];
    snprintf(what, sizeof what, "a parameter name after '%s'", kw);
    if (name.kind != T_IDENT) return expected(p, what);
    if (!check_new_name(p, &name, NAME_PARAM)) return false;
    advance(p);
    snprintf(what, sizeof what, "'=' after parameter name '%.*s'", (int)(name.len < 40 ? name.len : 40), name.s);
    if (!tok_is(&p->tok, '=')) return expected(p, what);
    advance(p);
    param pr;
    memset(&pr, 0, sizeof pr);
    pr.is_dtype = is_dtype;
    if (is_dtype ? !parse_dtype_ref(p, &pr.ddef) : !(pr.def = parse_expr(p))) return false;
    if (!expect_eol(p, "the parameter's default")) return false;
    fu_program *g = p->g;
    if (fu_grow((void **)&g->params, &g->cap_params, g->nparams + 1, sizeof *g->params)) return nomem(p);
    pr.at = name.at;
    pr.name = add_name(p, &name, NAME_PARAM, g->nparams);
    if (!pr.name || !set_default_text(p, &pr)) return false;
    g->params[g->nparams++] = pr;
    return true;
}

/* input NAME: DTYPE[e1, e2, ...]  (before the first op) */
static bool parse_input(parser *p)
{
    if (p->seen_op)
        return perr(p, p->tok.at, FU_ERR_PARSE, "input declared after the first op; declare inputs before the ops");
    advance(p);
    token name = p->tok;
    if (name.kind != T_IDENT) return expected(p, "an input name after 'input'");
    if (!check_new_name(p, &name, NAME_TENSOR)) return false;
    advance(p);
    if (!tok_is(&p->tok, ':')) return expected(p, "':' and a dtype after the input name");
    advance(p);
    tensor_decl d;
    memset(&d, 0, sizeof d);
    d.is_input = true;
    if (p->failed || !parse_dtype_ref(p, &d.dt)) return false;
    if (!tok_is(&p->tok, '[')) return expected(p, "'[' and the shape after the dtype ([] for a scalar)");
    if (!parse_list(p, &d.rank, d.shape) || !expect_eol(p, "the shape")) return false;
    return push_tensor(p, &name, &d);
}

/* output NAME, NAME, ... */
static bool parse_output(parser *p)
{
    fu_program *g = p->g;
    advance(p);
    for (;;) {
        if (p->failed) return false;
        if (p->tok.kind != T_IDENT) return expected(p, "a tensor name");
        int t = lookup_tensor(p);
        if (t < 0) return false;
        if (fu_grow((void **)&g->outputs, &g->cap_outputs, g->noutputs + 1, sizeof *g->outputs)) return nomem(p);
        g->outputs[g->noutputs].tensor = t;
        g->outputs[g->noutputs++].at = p->tok.at;
        advance(p);
        if (!tok_is(&p->tok, ',')) break;
        advance(p);
    }
    return expect_eol(p, "the output names");
}

/* Positional attribute values and keyword values (by schema slot) of one call. */
typedef struct call_args {
    int npos;
    const value *pos[MAX_ATTRS];
    const value *kw[MAX_ATTRS];
    loc kw_at[MAX_ATTRS];
    bool seen_kw;
} call_args;

static bool literal_allowed(fu_op op, int slot)
{
    fu_op_kind k = fu_op_kind_of(op);
    return k == FU_KIND_BINARY || (k == FU_KIND_WHERE && slot >= 1);
}

/* Tensor operand `slot`: a tensor name, or a number where the op allows one. */
static bool parse_operand(parser *p, tensor_decl *d, int slot)
{
    const token *t = &p->tok;
    operand *o = &d->ops[slot];
    char buf[64];
    o->at = t->at;
    if (t->kind == T_IDENT && !is_float_word(t)) {
        if (tok_is(peek(p), '='))
            return perr(p, t->at, FU_ERR_PARSE, "op '%s' takes %d tensor operand(s) before its attributes, found attribute %s",
                        fu_op_name(d->op), fu_op_arity(d->op), quote(t->s, t->len, buf, sizeof buf));
        o->tensor = lookup_tensor(p);
        if (o->tensor < 0) return false;
        advance(p);
        return !p->failed;
    }
    if (!at_number(p, false)) {
        snprintf(buf, sizeof buf, "operand %d of '%s' (a tensor name)", slot + 1, fu_op_name(d->op));
        return expected(p, buf);
    }
    if (!literal_allowed(d->op, slot)) {
        char num[64];
        const token *n = tok_is(t, '-') ? peek(p) : t;
        return perr(p, t->at, FU_ERR_PARSE, "operand %d of '%s' must be a tensor, found number %s%s", slot + 1,
                    fu_op_name(d->op), tok_is(t, '-') ? "-" : "", found(n, num, sizeof num));
    }
    o->tensor = -1;
    return parse_number(p, &o->is_int, &o->ival, &o->fval);
}

static int find_spec(const attr_spec *spec, int n, const token *t)
{
    for (int k = 0; k < n; k++)
        if (tok_word(t, spec[k].name)) return k;
    return -1;
}

/* One attribute argument: `key=value` or a positional value. */
static bool parse_attr_arg(parser *p, const tensor_decl *d, const attr_spec *spec, int nspec, call_args *a)
{
    const token *t = &p->tok;
    char buf[64];
    if (t->kind == T_IDENT && tok_is(peek(p), '=')) {
        token key = *t;
        int k = find_spec(spec, nspec, &key);
        if (k < 0) {
            fu_strbuf known; /* what the op takes: `sum(x, axis=1)` is told of axes */
            fu_sb_init(&known);
            for (int j = 0; j < nspec; j++) fu_sb_printf(&known, "%s%s", j ? ", " : "", spec[j].name);
            perr(p, key.at, FU_ERR_PARSE, "unknown attribute %s for op '%s' (its attributes: %s)",
                 quote(key.s, key.len, buf, sizeof buf), fu_op_name(d->op), nspec && known.data ? known.data : "none");
            fu_sb_free(&known);
            return false;
        }
        if (a->kw[k]) return perr(p, key.at, FU_ERR_PARSE, "attribute '%s' is given twice", spec[k].name);
        advance(p);
        advance(p);
        a->seen_kw = true;
        a->kw_at[k] = key.at;
        return !p->failed && (a->kw[k] = parse_value(p)) != NULL;
    }
    if (a->seen_kw) return expected(p, "'key=value' (positional arguments come before keyword arguments)");
    if (a->npos >= nspec)
        return perr(p, t->at, FU_ERR_PARSE, "too many arguments for op '%s' (%d tensor operand(s), then at most %d attribute(s)), found %s",
                    fu_op_name(d->op), fu_op_arity(d->op), nspec, found(t, buf, sizeof buf));
    return (a->pos[a->npos++] = parse_value(p)) != NULL;
}

/* Binary ops and where need a tensor to give a literal its dtype. */
static bool check_literals(parser *p, const tensor_decl *d)
{
    fu_op_kind k = fu_op_kind_of(d->op);
    if (k == FU_KIND_BINARY && d->ops[0].tensor < 0 && d->ops[1].tensor < 0)
        return perr(p, d->op_at, FU_ERR_PARSE, "op '%s' needs at least one tensor operand", fu_op_name(d->op));
    if (k == FU_KIND_WHERE && d->ops[1].tensor < 0 && d->ops[2].tensor < 0)
        return perr(p, d->op_at, FU_ERR_PARSE, "op 'where' needs a tensor for at least one of its value operands");
    return true;
}

/* Gives every schema slot its typed value or default. */
static bool assign_attrs(parser *p, tensor_decl *d, const attr_spec *spec, int nspec, const call_args *a)
{
    int order[MAX_ATTRS] = {0, 1, 2, 3};
    if (d->op == FU_OP_RESHAPE && a->npos == 2) { /* nvFuser's form: old shape, then new shape */
        order[0] = 1;
        order[1] = 0;
    }
    const value *raw[MAX_ATTRS] = {NULL};
    for (int i = 0; i < a->npos; i++) raw[order[i]] = a->pos[i];
    for (int k = 0; k < nspec; k++) {
        if (a->kw[k] && raw[k])
            return perr(p, a->kw_at[k], FU_ERR_PARSE, "attribute '%s' is given twice (by position and by keyword)",
                        spec[k].name);
        if (a->kw[k]) raw[k] = a->kw[k];
    }
    for (int k = 0; k < nspec; k++) {
        if (raw[k]) d->attrs[k] = convert(p, &spec[k], raw[k]);
        else if (spec[k].def == REQUIRED)
            return perr(p, d->op_at, FU_ERR_PARSE, "missing attribute '%s' for op '%s'", spec[k].name, fu_op_name(d->op));
        else if (spec[k].def[0]) d->attrs[k] = default_value(p, &spec[k], d->op_at);
        if (p->failed) return false;
    }
    return true;
}

/* '(' operands..., attributes... ')' */
static bool parse_call(parser *p, tensor_decl *d)
{
    int arity = fu_op_arity(d->op), nspec;
    const attr_spec *spec = schema_of(d->op, &nspec);
    call_args a;
    memset(&a, 0, sizeof a);
    char buf[64];
    while (!tok_is(&p->tok, ')')) {
        bool operand = d->nops < arity;
        if (operand ? !parse_operand(p, d, d->nops++) : !parse_attr_arg(p, d, spec, nspec, &a)) return false;
        if (tok_is(&p->tok, ')')) break;
        if (!tok_is(&p->tok, ',')) return expected(p, operand ? "')' or ',' after operand" : "')' or ',' after attribute");
        advance(p);
        if (p->failed) return false;
        if (tok_is(&p->tok, ')')) return expected(p, "an argument after ','");
    }
    if (d->nops < arity)
        return perr(p, p->tok.at, FU_ERR_PARSE, "op '%s' takes %d tensor operand(s), found %s after %d",
                    fu_op_name(d->op), arity, found(&p->tok, buf, sizeof buf), d->nops);
    advance(p);
    return !p->failed && check_literals(p, d) && assign_attrs(p, d, spec, nspec, &a);
}

/* NAME = OP(...) */
static bool parse_op_stmt(parser *p)
{
    token name = p->tok;
    if (!check_new_name(p, &name, NAME_TENSOR)) return false;
    advance(p); /* the name; '=' was seen by the caller */
    advance(p);
    tensor_decl d;
    memset(&d, 0, sizeof d);
    const token *t = &p->tok;
    char buf[64], what[96];
    if (p->failed) return false;
    if (t->kind != T_IDENT) return expected(p, "an op name after '='");
    if (!ident_op(t, &d.op)) {
        const name_entry *e = names_find(p->g, t->s, t->len);
        quote(t->s, t->len, buf, sizeof buf);
        if (e && e->kind == NAME_TENSOR)  /* `z = x * 2` or `z = x`: the format's statements are calls */
            return perr(p, t->at, FU_ERR_PARSE, "%s is a tensor, not an op: a statement is NAME = OP(operands...), "
                        "arithmetic too (`mul(x, 2)`, not `x * 2`)", buf);
        return perr(p, t->at, FU_ERR_PARSE, "unknown op %s", buf);
    }
    d.op_at = t->at;
    advance(p);
    snprintf(what, sizeof what, "'(' after op name '%s'", fu_op_name(d.op));
    if (!p->failed && !tok_is(&p->tok, '(')) return expected(p, what);
    advance(p);
    if (p->failed || !parse_call(p, &d) || !expect_eol(p, "')'")) return false;
    p->seen_op = true;
    return push_tensor(p, &name, &d);
}

static bool parse_statement(parser *p)
{
    const token *t = &p->tok;
    char buf[64];
    if (t->kind != T_IDENT) return expected(p, "a statement (param, dtype, input, output or NAME = OP(...))");
    if (tok_word(t, "fusion"))
        return perr(p, t->at, FU_ERR_PARSE, "'fusion' may appear only once, as the first statement");
    if (tok_word(t, "param")) return parse_param(p, false);
    if (tok_word(t, "dtype")) return parse_param(p, true);
    if (tok_word(t, "input")) return parse_input(p);
    if (tok_word(t, "output")) return parse_output(p);
    if (tok_is(peek(p), '=')) return parse_op_stmt(p);
    char what[96];
    snprintf(what, sizeof what, "'=' after %s", quote(t->s, t->len, buf, sizeof buf));
    advance(p);
    return !p->failed && expected(p, what);
}

static void skip_newlines(parser *p)
{
    while (!p->failed && p->tok.kind == T_NEWLINE) advance(p);
}

static bool parse_program(parser *p)
{
    advance(p);
    skip_newlines(p);
    if (p->failed || !parse_fusion_line(p)) return false;
    for (;;) {
        skip_newlines(p);
        if (p->failed) return false;
        if (p->tok.kind == T_EOF) return true;
        if (!parse_statement(p)) return false;
    }
}

/* ============================================================ public: parse */

fu_status fu_program_parse(const char *text, const char *filename, fu_program **out, fu_error *err)
{
    fu_error local;
    if (!err) err = &local;
    if (!out || !text) return fu_error_set(err, FU_ERR_ARG, "fu_program_parse: text and out are required");
    *out = NULL;
    fu_program *g = fu_calloc(1, sizeof *g);
    if (!g) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    g->file = arena_strndup(g, filename ? filename : "<input>", strlen(filename ? filename : "<input>"));
    if (!g->file) {
        fu_program_free(g);
        return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    }
    parser p;
    memset(&p, 0, sizeof p);
    p.g = g;
    p.lx.p = text;
    p.lx.line = 1;
    p.lx.line_start = text;
    p.err = err;
    if (!parse_program(&p)) {
        fu_program_free(g);
        return err->status;
    }
    err->status = FU_OK;
    err->message[0] = '\0';
    *out = g;
    return FU_OK;
}

/* Where the first NUL byte of a file is, as line and column. */
static loc nul_location(const char *text, size_t at)
{
    loc l = {1, 1};
    for (size_t i = 0; i < at; i++) {
        if (text[i] == '\n') {
            l.line++;
            l.col = 1;
        } else {
            l.col++;
        }
    }
    return l;
}

fu_status fu_program_parse_file(const char *path, fu_program **out, fu_error *err)
{
    if (out) *out = NULL;
    if (!path) return fu_error_set(err, FU_ERR_ARG, "fu_program_parse_file: no path");
    size_t len = 0;
    char why[160];
    char *text = fu_read_file_max(path, FU_PROGRAM_FILE_MAX, &len, why, sizeof why);
    if (!text) return fu_error_set(err, FU_ERR_IO, "cannot read '%s': %s", path, why);
    size_t n = strlen(text);
    fu_status s;
    if (n != len) {
        loc l = nul_location(text, n);
        s = fu_error_set(err, FU_ERR_PARSE, "%s:%d:%d: unexpected byte 0x00", path, l.line, l.col);
    } else {
        s = fu_program_parse(text, path, out, err);
    }
    fu_free(text);
    return s;
}

void fu_program_free(fu_program *g)
{
    if (!g) return;
    for (arena_block *b = g->arena, *next; b; b = next) {
        next = b->next;
        fu_free(b);
    }
    fu_free(g->params);
    fu_free(g->tensors);
    fu_free(g->outputs);
    fu_free(g->names);
    fu_free(g);
}

const char *fu_program_name(const fu_program *g) { return g->name; }
int fu_program_num_params(const fu_program *g) { return g->nparams; }

const char *fu_program_param_name(const fu_program *g, int i)
{
    return i >= 0 && i < g->nparams ? g->params[i].name : NULL;
}

bool fu_program_param_is_dtype(const fu_program *g, int i)
{
    return i >= 0 && i < g->nparams && g->params[i].is_dtype;
}

const char *fu_program_param_default(const fu_program *g, int i)
{
    return i >= 0 && i < g->nparams ? g->params[i].def_text : NULL;
}

/* ============================================================ public: print */

static void print_operand(fu_strbuf *sb, const fu_program *g, const operand *o)
{
    char buf[40];
    if (o->tensor >= 0) fu_sb_puts(sb, g->tensors[o->tensor].name);
    else if (o->is_int) fu_sb_printf(sb, "%lld", (long long)o->ival);
    else fu_sb_puts(sb, fu_format_double(o->fval, buf, sizeof buf));
}

static void print_decl(fu_strbuf *sb, const fu_program *g, const tensor_decl *d)
{
    if (d->is_input) {
        fu_sb_printf(sb, "input %s: %s", d->name, dtype_ref_name(g, d->dt));
        print_list(sb, g, d->rank, d->shape);
        fu_sb_puts(sb, "\n");
        return;
    }
    int nspec;
    const attr_spec *spec = schema_of(d->op, &nspec);
    fu_sb_printf(sb, "%s = %s(", d->name, fu_op_name(d->op));
    for (int i = 0; i < d->nops; i++) {
        if (i) fu_sb_puts(sb, ", ");
        print_operand(sb, g, &d->ops[i]);
    }
    for (int k = 0, n = d->nops; k < nspec; k++) {
        if (!d->attrs[k]) continue;
        fu_sb_printf(sb, "%s%s=", n++ ? ", " : "", spec[k].name);
        print_value(sb, g, d->attrs[k]);
    }
    fu_sb_puts(sb, ")\n");
}

char *fu_program_print(const fu_program *g)
{
    if (!g) return NULL;
    fu_strbuf sb;
    fu_sb_init(&sb);
    fu_sb_printf(&sb, "fusion %s\n", g->name);
    for (int i = 0; i < g->nparams; i++)
        fu_sb_printf(&sb, "%s %s = %s\n", g->params[i].is_dtype ? "dtype" : "param", g->params[i].name,
                     g->params[i].def_text);
    for (int i = 0; i < g->ntensors; i++) print_decl(&sb, g, &g->tensors[i]);
    for (int i = 0; i < g->noutputs; i++)
        fu_sb_printf(&sb, "%s%s", i ? ", " : "output ", g->tensors[g->outputs[i].tensor].name);
    if (g->noutputs) fu_sb_puts(&sb, "\n");
    return fu_sb_take(&sb);
}

/* ============================================================ build: values */

typedef struct builder {
    const fu_program *g;
    int64_t *ivals;     /* per parameter: its bound integer */
    fu_dtype *dvals;    /* per parameter: its bound dtype */
    fu_tensor *ids;     /* per tensor declaration */
    fu_fusion *f;
    fu_error *err;
    int nconst;         /* literal constants made so far (for their names) */
} builder;

static bool berr(builder *b, loc at, fu_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static bool berr(builder *b, loc at, fu_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    loc_verror(b->err, s, b->g->file, at, fmt, ap);
    va_end(ap);
    return false;
}

static bool mul_fits(int64_t a, int64_t b)
{
    if (a == 0 || b == 0) return true;
    if (a > 0) return b > 0 ? a <= INT64_MAX / b : b >= INT64_MIN / a;
    return b > 0 ? a >= INT64_MIN / b : a >= INT64_MAX / b;
}

/* a op b in int64; false on overflow. */
static bool arith(char op, int64_t a, int64_t b, int64_t *r)
{
    switch (op) {
    case '+':
        if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return false;
        *r = a + b;
        return true;
    case '-':
        if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) return false;
        *r = a - b;
        return true;
    case '*':
        if (!mul_fits(a, b)) return false;
        *r = a * b;
        return true;
    case '/':
        if (a == INT64_MIN && b == -1) return false;
        *r = a / b;
        return true;
    default: /* '%' */
        *r = b == -1 ? 0 : a % b;
        return true;
    }
}

static bool eval(builder *b, const expr *e, int64_t *out)
{
    int64_t x, y;
    char buf[200];
    switch (e->kind) {
    case EX_NUM: *out = e->num; return true;
    case EX_PARAM: *out = b->ivals[e->param]; return true;
    case EX_NEG:
        if (!eval(b, e->a, &x)) return false;
        if (x == INT64_MIN) break;
        *out = -x;
        return true;
    case EX_BIN:
        if (!eval(b, e->a, &x) || !eval(b, e->b, &y)) return false;
        if ((e->op == '/' || e->op == '%') && y == 0)
            return berr(b, e->op_at, FU_ERR_PARSE, "division by zero in '%c'", e->op);
        if (!arith(e->op, x, y, out)) break;
        return true;
    }
    fu_strbuf sb;
    fu_sb_init(&sb);
    print_expr(&sb, b->g, e);
    snprintf(buf, sizeof buf, "%s", sb.data && !sb.failed ? sb.data : "?");
    fu_sb_free(&sb);
    return berr(b, e->kind == EX_BIN ? e->op_at : e->at, FU_ERR_PARSE, "integer overflow evaluating '%s'", buf);
}

static bool eval_list(builder *b, const value *v, int64_t *out)
{
    for (int i = 0; i < v->n; i++)
        if (!eval(b, v->items[i], &out[i])) return false;
    return true;
}

static bool eval_double(builder *b, const value *v, double *out)
{
    int64_t i;
    if (v->kind == V_FLOAT) {
        *out = v->f;
        return true;
    }
    if (!eval(b, v->e, &i)) return false;
    *out = (double)i;
    return true;
}

static fu_dtype dtype_of(const builder *b, dtype_ref r) { return r.param >= 0 ? b->dvals[r.param] : r.dt; }

/* Python-style axis: -rank <= v < rank, normalized to 0 <= axis < rank. */
static bool to_axis(builder *b, int64_t v, int rank, loc at, int *out)
{
    if (v < -rank || v >= rank)
        return berr(b, at, FU_ERR_VERIFY, "axis %lld is out of range for rank %d", (long long)v, rank);
    *out = (int)(v < 0 ? v + rank : v);
    return true;
}

/* A list of axes (reduction axes, permutation) normalized against rank. */
static bool eval_axes(builder *b, const value *v, int rank, int *out)
{
    int64_t raw[FU_MAX_RANK];
    if (!eval_list(b, v, raw)) return false;
    for (int i = 0; i < v->n; i++)
        if (!to_axis(b, raw[i], rank, v->items[i]->at, &out[i])) return false;
    return true;
}

static bool eval_axis(builder *b, const value *v, int rank, int *out)
{
    int64_t raw;
    return eval(b, v->e, &raw) && to_axis(b, raw, rank, v->at, out);
}

/* A list that must hold one entry per axis of tensor x. */
static bool eval_per_axis(builder *b, const value *v, const char *attr, fu_tensor x, int64_t *out)
{
    int rank = fu_tensor_rank(b->f, x);
    if (v->n != rank)
        return berr(b, v->at, FU_ERR_VERIFY, "attribute '%s' has %d entries but '%s' has rank %d", attr, v->n,
                    fu_tensor_name(b->f, x), rank);
    return eval_list(b, v, out);
}

/* ============================================================ build: attributes */

static bool fill_shape(builder *b, const value *v, fu_attrs *at)
{
    at->rank = v->n;
    return eval_list(b, v, at->shape);
}

/* reshape: the new shape, and the nvFuser-style old shape, which must be x's. */
static bool fill_reshape(builder *b, const tensor_decl *d, fu_tensor x, fu_attrs *at)
{
    if (!fill_shape(b, d->attrs[0], at)) return false;
    const value *old = d->attrs[1];
    int64_t os[FU_MAX_RANK];
    if (!old || !eval_list(b, old, os)) return old == NULL;
    int xr = fu_tensor_rank(b->f, x);
    const int64_t *xs = fu_tensor_shape(b->f, x);
    if (old->n == xr && memcmp(os, xs, (size_t)xr * sizeof *xs) == 0) return true;
    char s1[160], s2[160];
    return berr(b, old->at, FU_ERR_VERIFY, "reshape: old shape %s does not match the shape %s of '%s'",
                fu_shape_str(old->n, os, s1, sizeof s1), fu_shape_str(xr, xs, s2, sizeof s2), fu_tensor_name(b->f, x));
}

static bool fill_slice(builder *b, const tensor_decl *d, fu_tensor x, fu_attrs *at)
{
    if (!eval_per_axis(b, d->attrs[0], "start", x, at->start) || !eval_per_axis(b, d->attrs[1], "stop", x, at->stop))
        return false;
    if (d->attrs[2]) return eval_per_axis(b, d->attrs[2], "step", x, at->step);
    for (int i = 0; i < FU_MAX_RANK; i++) at->step[i] = 1;
    return true;
}

static bool fill_permute(builder *b, const tensor_decl *d, fu_tensor x, fu_attrs *at)
{
    int rank = fu_tensor_rank(b->f, x);
    const value *v = d->attrs[0];
    if (v->n != rank)
        return berr(b, v->at, FU_ERR_VERIFY, "attribute 'dims' has %d entries but '%s' has rank %d", v->n,
                    fu_tensor_name(b->f, x), rank);
    return eval_axes(b, v, rank, at->perm);
}

/* padding_idx: none is -1; a negative index counts from the end, as in PyTorch. */
static bool fill_padding(builder *b, const value *v, int64_t rows, fu_attrs *at)
{
    at->padding_idx = -1;
    if (v->kind == V_NONE) return true;
    int64_t i;
    if (!eval(b, v->e, &i)) return false;
    if (i < 0 && i + rows < 0)
        return berr(b, v->at, FU_ERR_VERIFY, "padding_idx %lld is out of range for %lld rows", (long long)i,
                    (long long)rows);
    at->padding_idx = i < 0 ? i + rows : i;
    return true;
}

static bool fill_composite(builder *b, const tensor_decl *d, const fu_tensor *in, fu_attrs *at)
{
    const value *const *a = d->attrs;
    int rank = fu_tensor_rank(b->f, in[0]);
    switch (d->op) {
    case FU_OP_SOFTMAX:
    case FU_OP_LOG_SOFTMAX: return eval_axis(b, a[0], rank, &at->axis);
    case FU_OP_CROSS_ENTROPY:
    case FU_OP_CROSS_ENTROPY_BWD:
        at->reduction = a[0]->red;
        return eval(b, a[1]->e, &at->ignore_index) && eval_double(b, a[2], &at->label_smoothing);
    case FU_OP_EMBEDDING: return fill_padding(b, a[0], fu_tensor_shape(b->f, in[0])[0], at);
    case FU_OP_EMBEDDING_BWD:
        return eval(b, a[0]->e, &at->num_weights) && fill_padding(b, a[1], at->num_weights, at);
    default: return true;
    }
}

/* Maps the statement's typed attributes onto fu_attrs. */
static bool fill_attrs(builder *b, const tensor_decl *d, const fu_tensor *in, fu_attrs *at)
{
    const value *const *a = d->attrs;
    int rank = d->nops ? fu_tensor_rank(b->f, in[0]) : 0;
    switch (fu_op_kind_of(d->op)) {
    case FU_KIND_CAST: at->dtype = dtype_of(b, a[0]->dt); return true;
    case FU_KIND_BROADCAST: return fill_shape(b, a[0], at);
    case FU_KIND_REDUCE:
        at->naxes = a[0]->n;
        at->keepdim = a[1]->b;
        return eval_axes(b, a[0], rank, at->axes);
    case FU_KIND_RESHAPE: return fill_reshape(b, d, in[0], at);
    case FU_KIND_PERMUTE: return fill_permute(b, d, in[0], at);
    case FU_KIND_SLICE: return fill_slice(b, d, in[0], at);
    case FU_KIND_FULL:
        at->dtype = dtype_of(b, a[2]->dt);
        return fill_shape(b, a[0], at) && eval_double(b, a[1], &at->value);
    case FU_KIND_IOTA:
        at->dtype = dtype_of(b, a[2]->dt);
        return fill_shape(b, a[0], at) && eval_axis(b, a[1], at->rank, &at->axis);
    case FU_KIND_GATHER:
    case FU_KIND_SCATTER: return eval_axis(b, a[0], rank, &at->axis);
    case FU_KIND_COMPOSITE: return fill_composite(b, d, in, at);
    default: return true;
    }
}

/* ============================================================ build: statements */

static bool literal_fits(double v, fu_dtype dt)
{
    if (fu_dtype_is_float(dt)) return true;
    if (isnan(v) || isinf(v) || v != floor(v)) return false;
    if (dt == FU_BOOL) return v == 0.0 || v == 1.0;
    if (dt == FU_I32) return v >= (double)INT32_MIN && v <= (double)INT32_MAX;
    return v >= -9223372036854775808.0 && v < 9223372036854775808.0;
}

/* A numeric literal operand: a scalar constant with the dtype of the op's
 * first tensor value operand, named _cN (a name the program does not use). */
static bool build_literal(builder *b, const tensor_decl *d, int slot, fu_tensor *out)
{
    int ref = -1;
    for (int k = d->op == FU_OP_WHERE ? 1 : 0; k < d->nops && ref < 0; k++)
        if (d->ops[k].tensor >= 0) ref = k;
    FU_ASSERT(ref >= 0);
    fu_tensor rt = b->ids[d->ops[ref].tensor];
    fu_dtype dt = fu_tensor_dtype(b->f, rt);
    const operand *o = &d->ops[slot];
    char name[FU_MAX_NAME], buf[40];
    if (!literal_fits(o->fval, dt))
        return berr(b, o->at, FU_ERR_VERIFY, "literal %s is not representable as %s, the dtype of '%s'",
                    o->is_int ? (snprintf(buf, sizeof buf, "%lld", (long long)o->ival), buf)
                              : fu_format_double(o->fval, buf, sizeof buf),
                    fu_dtype_name(dt), fu_tensor_name(b->f, rt));
    do snprintf(name, sizeof name, "_c%d", b->nconst++);
    while (names_find(b->g, name, strlen(name)));
    *out = fu_full(b->f, 0, NULL, o->fval, dt, name);
    return *out >= 0;
}

/* Returns false on an error; builder errors stay in the fusion for verify. */
static bool build_stmt(builder *b, const tensor_decl *d, fu_tensor *out)
{
    fu_tensor in[FU_MAX_OP_INPUTS];
    fu_attrs at;
    memset(&at, 0, sizeof at);
    fu_fusion_set_location(b->f, b->g->file, d->op_at.line, d->op_at.col);
    for (int k = 0; k < d->nops; k++) {
        if (d->ops[k].tensor >= 0) in[k] = b->ids[d->ops[k].tensor];
        else if (!build_literal(b, d, k, &in[k])) return false;
    }
    if (!fill_attrs(b, d, in, &at)) return false;
    *out = fu_add_op(b->f, d->op, d->nops, in, &at, d->name);
    return *out >= 0;
}

static bool build_input(builder *b, const tensor_decl *d, fu_tensor *out)
{
    int64_t shape[FU_MAX_RANK];
    for (int i = 0; i < d->rank; i++)
        if (!eval(b, d->shape[i], &shape[i])) return false;
    fu_fusion_set_location(b->f, b->g->file, d->at.line, d->at.col);
    *out = fu_input(b->f, d->name, dtype_of(b, d->dt), d->rank, shape);
    return *out >= 0;
}

/* ============================================================ build: parameters */

/* A whole decimal integer with an optional sign. */
static bool parse_int_text(const char *s, int64_t *out)
{
    bool neg = *s == '-';
    if (*s == '-' || *s == '+') s++;
    if (!is_digit(*s)) return false;
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; is_digit(*s); s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (limit - d) / 10) return false;
        v = v * 10 + d;
    }
    if (*s) return false;
    *out = neg ? (int64_t)(0 - v) : (int64_t)v; /* 0 - v wraps to -2^63 exactly when v = 2^63 */
    return true;
}

/* The last override of parameter i, or NULL. */
static const char *override_of(const fu_program *g, int i, const fu_param_value *ov, int nov)
{
    const char *v = NULL;
    for (int k = 0; k < nov; k++)
        if (strcmp(ov[k].name, g->params[i].name) == 0) v = ov[k].value;
    return v;
}

static bool bind_param(builder *b, int i, const char *ov)
{
    const param *pr = &b->g->params[i];
    if (!ov) return pr->is_dtype ? (b->dvals[i] = dtype_of(b, pr->ddef), true) : eval(b, pr->def, &b->ivals[i]);
    if (pr->is_dtype && !fu_dtype_from_name(ov, &b->dvals[i])) {
        fu_error_set(b->err, FU_ERR_ARG,
                     "parameter '%s' of fusion '%s' is a dtype (f32, f16, bf16, f64, i32, i64, bool), got '%s'",
                     pr->name, b->g->name, ov);
        return false;
    }
    if (!pr->is_dtype && !parse_int_text(ov, &b->ivals[i])) {
        fu_error_set(b->err, FU_ERR_ARG, "parameter '%s' of fusion '%s' is an integer, got '%s'", pr->name, b->g->name, ov);
        return false;
    }
    return true;
}

/* Defaults, then overrides; an override naming no parameter is an error. */
static bool bind_params(builder *b, const fu_param_value *ov, int nov)
{
    const fu_program *g = b->g;
    for (int k = 0; k < nov; k++) {
        if (!ov[k].name || !ov[k].value) {
            fu_error_set(b->err, FU_ERR_ARG, "override %d has no name or no value", k);
            return false;
        }
        const name_entry *e = names_find(g, ov[k].name, strlen(ov[k].name));
        if (!e || e->kind != NAME_PARAM) {
            fu_error_set(b->err, FU_ERR_ARG, "no parameter '%s' in fusion '%s'", ov[k].name, g->name);
            return false;
        }
    }
    for (int i = 0; i < g->nparams; i++)
        if (!bind_param(b, i, override_of(g, i, ov, nov))) return false;
    return true;
}

/* ============================================================ public: build */

static fu_status build_all(builder *b)
{
    const fu_program *g = b->g;
    for (int i = 0; i < g->ntensors; i++) {
        const tensor_decl *d = &g->tensors[i];
        bool ok = d->is_input ? build_input(b, d, &b->ids[i]) : build_stmt(b, d, &b->ids[i]);
        /* our own errors are in err already; the builder's wait in the fusion */
        if (!ok) return b->err->status != FU_OK ? b->err->status : fu_fusion_verify(b->f, b->err);
    }
    for (int i = 0; i < g->noutputs; i++) {
        fu_fusion_set_location(b->f, g->file, g->outputs[i].at.line, g->outputs[i].at.col);
        fu_output(b->f, b->ids[g->outputs[i].tensor]);
    }
    fu_fusion_set_location(b->f, g->file, 0, 0);
    return fu_fusion_verify(b->f, b->err);
}

fu_status fu_program_build(const fu_program *g, const fu_param_value *overrides, int noverrides,
                           fu_fusion **out, fu_error *err)
{
    fu_error local;
    if (!err) err = &local;
    if (!g || !out || noverrides < 0 || (noverrides > 0 && !overrides))
        return fu_error_set(err, FU_ERR_ARG, "fu_program_build: bad arguments");
    *out = NULL;
    builder b;
    memset(&b, 0, sizeof b);
    b.g = g;
    b.err = err;
    err->status = FU_OK;
    b.ivals = fu_calloc((size_t)g->nparams, sizeof *b.ivals);
    b.dvals = fu_calloc((size_t)g->nparams, sizeof *b.dvals);
    b.ids = fu_calloc((size_t)g->ntensors, sizeof *b.ids);
    b.f = fu_fusion_new(g->name);
    fu_status s;
    if (!b.ivals || !b.dvals || !b.ids || !b.f) s = fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    else if (!bind_params(&b, overrides, noverrides)) s = err->status;
    else s = build_all(&b);
    fu_free(b.ivals);
    fu_free(b.dvals);
    fu_free(b.ids);
    if (s != FU_OK) fu_fusion_free(b.f);
    else *out = b.f;
    return s;
}
