/*
 * cg.h -- code generation: from a scheduled segment to CUDA C text.
 * No CUDA headers here: codegen is testable on any machine.
 *
 * The heart is an expression inliner: cg_value(c, t, idx) returns the name of
 * a local variable holding tensor t at multi-index idx, emitting the code that
 * computes it from the kernel's global inputs (or from values a scheduler
 * keeps in registers, such as row reductions). View ops (permute, slice,
 * broadcast, reshape) only rewrite the index; gathers evaluate their index
 * tensor and then the source at the gathered position.
 *
 * Each index component carries, when it can, an affine form over the
 * kernel's domain variables (plus the vector lane), so that a load whose
 * offset moves by exactly one element per lane, from a 16-byte aligned base,
 * becomes one vector load shared by all lanes.
 */
#ifndef FUSER_CG_H
#define FUSER_CG_H

#include "ir.h"

#define CG_MAXVARS 24 /* domain variables plus opaque temporaries (gathered indices, div/mod) */
#define CG_EXPR 200

typedef struct cg_index {
    bool affine;                /* expr == sum(coef[v] * var_v) + lane_coef * lane + c */
    long long coef[CG_MAXVARS];
    long long lane_coef;
    long long c;
    char expr[CG_EXPR];         /* C expression of the index, always valid */
} cg_index;

/* How a kernel reads an external (global memory) tensor. */
typedef struct cg_param {
    fu_tensor tensor;
    char name[32];              /* kernel parameter name: in0, out1 ... */
    bool is_output;
} cg_param;

typedef struct cg_memo {
    fu_tensor tensor;
    char key[600];              /* joined index expressions */
    char var[32];
    int scope;
    bool i32;                   /* an integer value known to fit in int: compared in 32 bits */
    fu_dtype round_dt;          /* var = fu_round_<round_dt>(unrounded); FU_F32 when not rounded */
    char unrounded[32];         /* what a store of round_dt converts instead (same bits, one conversion) */
    fu_dtype raw_dt;            /* var = fu_load(raw), raw an element of dtype raw_dt ... */
    char raw[48];               /* ... ("x3[5]"): a store of raw_dt copies it unconverted; "" = none */
} cg_memo;

typedef struct cg_ctx cg_ctx;

/* Scheduler hook: a tensor kept in a register (a reduction result) is looked
 * up here; return its variable name, or NULL when t is not a register value.
 * Setting c->failed rejects the schedule (e.g. a row value read at another row). */
typedef const char *(*cg_register_fn)(cg_ctx *c, fu_tensor t, const cg_index *idx, void *user);

struct cg_ctx {
    const fu_fusion *f;
    fu_strbuf *out;             /* statements go here */
    int indent;
    int tmp;                    /* counter for fresh names */

    /* domain variables of the current loop nest */
    int nvars;
    char var_names[CG_MAXVARS][48];
    int lane;                   /* current vector lane (a compile-time constant) */
    int vec;                    /* lanes per thread; 1 = scalar */
    int lane_var;               /* index of the variable the lane adds to; -1 = none */
    /* The lane variable's value at lane 0 is a multiple of vec where these are all
     * 0; else it is congruent to -sum(lane_align[v] * var_v) modulo vec: a row that
     * starts at any element, read in vectors from its first aligned one (the
     * reduction scheduler's aligned rows). */
    long long lane_align[CG_MAXVARS];
    /* Variables 0 .. lane_fixed_vars-1 have one value for all lanes (a
     * domain's axes): an offset over only these has one base for the
     * thread's lanes, which may then be read in several 16-byte vectors
     * (lanes wider than 16 bytes). Later variables (a gathered position) may
     * differ per lane. 0: none is known to. */
    int lane_fixed_vars;
    /* Digits: variable v, where digit_flat[v] > 0, is (flat / digit_place[v]) %
     * digit_radix[v] of the flat index flats[digit_flat[v] - 1] (no "% radix"
     * where digit_top[v]), declared at scope digit_scope[v] by cg_digit_var. An
     * affine index over a run of one flat index's digits whose coefficients go as
     * their places renders as one division of the flat index instead: 48 * k1 +
     * 3 * k2 + k3 is kb (contiguous axes merged, as the loop walks them). */
    int digit_flat[CG_MAXVARS];
    long long digit_place[CG_MAXVARS], digit_radix[CG_MAXVARS];
    bool digit_top[CG_MAXVARS];
    int digit_scope[CG_MAXVARS];
    char flats[CG_MAXVARS][CG_EXPR];
    int nflats;

    cg_param *params;
    int nparams;

    /* Entries are allocated one by one and never move, so the names that
     * cg_value returns stay valid until cg_free; entries of a closed scope
     * are retired (kept, no longer found). */
    cg_memo **memo;
    int nmemo, cap_memo;
    cg_memo **retired;
    int nretired, cap_retired;
    int scope;

    cg_register_fn lookup_register;
    void *user;

    /* A register cache of rows loaded in an earlier pass (reduction
     * scheduler): given an external tensor and the offset of a load, returns
     * the variable holding that element, or NULL to load from memory. */
    const char *(*lookup_cache)(cg_ctx *c, fu_tensor t, const cg_index *offset, void *user);

    /* Deferring (a scheduler computing ahead what it can): a register value not
     * ready yet is CG_DEFERRED from lookup_register, and cg_value returns
     * CG_DEFERRED for every value that needs it, without emitting it, while the
     * parts that do not need it are emitted and remembered as usual. */
    bool deferring;

    /* A position compare split on (cg_vector_miss_diff): while miss_cmp is that
     * compare's tensor, cg_value gives it as false (eq) or true (ne) where
     * miss_known (no lane is at the value), else from miss_diff, the value less
     * lane 0's position (lane k is at it where that is k). -1: none. */
    fu_tensor miss_cmp;
    bool miss_known;
    char miss_diff[16];

    bool index64;               /* index arithmetic in long long (else int) */
    int failed;
    char error[512];
};

void cg_init(cg_ctx *c, const fu_fusion *f, fu_strbuf *out);
void cg_free(cg_ctx *c);
void cg_fail(cg_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void cg_line(cg_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void cg_open(cg_ctx *c);  /* "{" + new memo scope */
void cg_close(cg_ctx *c); /* "}" and drop the scope's memo entries */
/* Forget memo entries of scopes deeper than the current one (for callers
 * that manage braces themselves). */
void cg_drop_scope(cg_ctx *c);

int cg_add_var(cg_ctx *c, const char *name);
/* Declares variable `var` as the digit (flat / place) % radix of the flat index
 * `flat` (a C expression; "flat / place" where top: the most significant digit,
 * flat < place * radix or past it as the flat index says) and notes it for the
 * affine renderer until the current scope closes. */
void cg_digit_var(cg_ctx *c, int var, const char *flat, long long place, long long radix, bool top);
void cg_index_var(cg_index *ix, int var, const char *name);
/* Whether two indices name the same position at the current lane: their affine forms where
 * both have one (not their text, which may render a form either way: as digits or as the
 * flat index they make), else their text. */
bool cg_index_same(const cg_ctx *c, const cg_index *a, const cg_index *b);
/* Re-renders an affine index's expression (after changing c->lane or a coefficient). */
void cg_index_refresh(const cg_ctx *c, cg_index *ix);
void cg_index_const(cg_index *ix, long long v);
/* v as a C++ float literal in buf: "0.0f", "2.5e-05f" (never "0f", which is no literal). */
void cg_f32_literal(double v, char *buf, size_t n);

/* Value of t at idx (t's rank entries); returns a variable name (static
 * storage inside the memo) or "0" on failure (c->failed is set); while
 * c->deferring, CG_DEFERRED for a value that needs one not ready yet. */
const char *cg_value(cg_ctx *c, fu_tensor t, const cg_index *idx);
/* Whether cmp is an eq or ne of the position along its last axis (an iota of
 * cmp's shape) with a value of extent 1 along that axis, both integers: in a
 * vector of consecutive positions of that axis, at most one lane is at the
 * value. */
bool cg_is_position_compare(const fu_fusion *f, fu_tensor cmp);
/* For such a compare at the current vector (idx at its lanes, c->vec lanes
 * along the last axis): declares the value less lane 0's position, unsigned
 * (the value first emitted if not yet there), and returns its name, kept in
 * c->miss_diff. No lane is at the value where it is c->vec or more; lane k is
 * where it is k. */
const char *cg_vector_miss_diff(cg_ctx *c, fu_tensor cmp, const cg_index *idx);
extern const char CG_DEFERRED[];
/* Until the current scope closes, bool tensor t at idx is the literal `true` or
 * `false` (a scheduler that branched on its value): what reads it folds (a
 * `where` on it is its branch). */
void cg_assume(cg_ctx *c, fu_tensor t, const cg_index *idx, bool value);

const cg_param *cg_find_param(const cg_ctx *c, fu_tensor t);

/* The variable a store of dtype dt should convert for the value var: the value
 * before its rounding to dt when var is that rounding (converting it again
 * gives the same bits), else var itself. */
const char *cg_store_source(const cg_ctx *c, const char *var, fu_dtype dt);

/* The stored element var was loaded from ("x3[5]"), when var is such a load
 * of dtype dt: a store of dt copies it without converting; else NULL. */
const char *cg_store_raw(const cg_ctx *c, const char *var, fu_dtype dt);

/* a / k for a constant k is emitted as fu_div_const(a, hi, lo) = fmaf(a, hi, a * lo):
 * hi = 1/k rounded toward zero, lo = 1/k - hi (docs/format.md, Numerics). False
 * for k = 0, non-finite k or |k| outside [1e-30, 1e30] (then a plain division). */
bool cg_div_const_split(double k, float *hi, float *lo);

/* C type holding values of dtype t in registers (compute type), and in memory. */
const char *cg_compute_type(fu_dtype t);
const char *cg_storage_type(fu_dtype t);
/* The integer type moved by one access of `bytes` (16: uint4, 8: uint2, 4, 2, 1); for any
 * other width a name that is no type, so that NVRTC stops rather than store part of a vector. */
const char *cg_vector_type(int bytes);
/* Expression storing the value `var` as storage type t: converts the value
 * before its rounding to t when var is that rounding (cg_store_source). */
void cg_store_expr(const cg_ctx *c, char *buf, size_t n, fu_dtype t, const char *var);
/* The device helpers (the .cuh files of fuser/src/codegen/prelude/, embedded at build time by
 * reference/cmake/embed.cmake into cg_prelude_files[]; ends with {NULL, NULL}). */
typedef struct cg_prelude_file {
    const char *name; /* "00_core.cuh" */
    const char *text;
} cg_prelude_file;
extern const cg_prelude_file cg_prelude_files[];
const char *cg_prelude_file_text(const char *name);
/* A line a kernel's text holds where its prelude goes, and the text with that
 * line replaced by the files its code after the line uses (cg_prelude.c),
 * ending in "// ---- end of prelude ----"; malloc'd, NULL when out of memory. */
const char *cg_prelude_marker(void);
char *cg_prelude_expand(const char *source);

/* Contiguous offset of a tensor of `shape` at idx, as an affine-aware index. */
void cg_offset(cg_ctx *c, int rank, const int64_t *shape, const int64_t *strides, const cg_index *idx,
               cg_index *out);
/* Whether an offset advances by one element per lane from a vec-aligned base
 * (given what c->lane_align says of the lane variable's base). */
bool cg_offset_vectorizable(const cg_ctx *c, const cg_index *off, int vec);
/* The offset with the lane term removed (the lane-0 base), as a C expression. */
void cg_offset_base_expr(const cg_ctx *c, const cg_index *off, char *buf, size_t n);

#endif
