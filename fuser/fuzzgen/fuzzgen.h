/*
 * fuzzgen.h -- the random-fusion generator (gen.c) and its checker
 * (check.c), shared by the `fuser-fuzz` command and its tests.
 */
#ifndef FUSER_FUZZGEN_H
#define FUSER_FUZZGEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "fuser.h"

typedef struct fu_runtime fu_runtime;

/* The index-th fusion of a seed (a verified fusion named fz_SEED_INDEX), or
 * NULL when out of memory. The same (seed, index) always gives the same fusion. */
fu_fusion *fz_generate(uint64_t seed, int index);

/* Which ops the generator draws: the default families, or those and the other
 * documented ops (masks, where, iota, log, reciprocal, pow, take, scatter_add;
 * gen.c), or the default families over tall shapes with a per-row input and
 * `where` on one bool a row (rows). Extended fusions are named fx_SEED_INDEX,
 * tall ones fr_SEED_INDEX. */
enum { FZ_OPS_DEFAULT = 0, FZ_OPS_EXTENDED = 1, FZ_OPS_ROWS = 2 };
fu_fusion *fz_generate_ops(uint64_t seed, int index, int ops);
/* "fz" or "fx": the names' prefix for ops */
const char *fz_name_prefix(int ops);

/* The sweep (sweep.c): every op of the text format over every dtype of each
 * operand and extents 0, 1, 3 and 1027, the fusions the verifier accepts (named
 * sw_OP_DTYPES_SEXTENT), in a malloc'd array; its count, or -1 when out of
 * memory. *rejected: the combinations the verifier refused; *empty_cases: the
 * ops of which it refused every combination (each a line on log: a wrong case,
 * or a verifier that refuses what docs/format.md documents). */
int fz_sweep(fu_fusion ***out, int *rejected, int *empty_cases, FILE *log);

typedef enum fz_device {
    FZ_PLAN,    /* plan and interpret only */
    FZ_COMPILE, /* and compile every kernel with NVRTC */
    FZ_GPU      /* and run on the GPU against the interpreter */
} fz_device;

typedef struct fz_report {
    int fusions, failures;
    int unplannable, interp_failures, compile_failures, gpu_failures, mismatches;
    int rewrite_mismatches;   /* the planner's fusion (decomposed, simplified) interprets to other values */
    int above_bound;          /* fusions planned to more kernels than the lower bound */
    int below_bound;          /* more than the bound allows: a bug in one of the two */
    int kernels_hist[9];      /* fusions by kernel count (8: 8 or more) */
    int bound_hist[9];        /* fusions by lower bound */
    int excess_hist[5];       /* fusions by kernels - bound (4: 4 or more) */
    long long ops_hist[FU_OP_COUNT]; /* generated ops by kind */
    int sched_hist[8];        /* kernels by scheduler (fu_sched) */
    int norm_kernels;         /* of them, the outer scheduler's normalizations (fu_plan_options.outer_norm) */
    double seconds;
} fz_report;

/* Checks each fusion (owned by the caller): it plans (fu_plan_build), its
 * kernel count is at least the lower bound, the interpreter runs it with
 * seeded random inputs, and with FZ_COMPILE its kernels compile, with FZ_GPU
 * the GPU agrees with the interpreter (f32: max|gpu - cpu| / max|cpu| <= 1e-5;
 * bf16 and f16: <= 5e-2, the suites' element tolerance; integers exactly).
 * Each failure is one line on `log`. rt: the runtime (compile-only or with a
 * device; NULL for FZ_PLAN). sms > 0 plans for that many SMs instead of the
 * device's: a grid that small is outnumbered by the rows of small fusions, as
 * a real one is by large fusions' (the kernels are right on any GPU). */
void fz_check(fu_fusion *const *fusions, int n, fz_device dev, int sms, fu_runtime *rt, FILE *log, fz_report *rep);
/* max|gpu - cpu| / max|cpu| (NaN against NaN and equal infinities agree;
 * max|gpu - cpu| where the reference is all zero); integers: the count of
 * elements that differ. */
double fz_difference(const fu_host_tensor *gpu, const fu_host_tensor *cpu);
/* What fz_check allows: f32 and f64 1e-5, bf16 and f16 5e-2, integers 0. */
double fz_tolerance(fu_dtype dt);

/* The summary: counts and the kernel-count distribution beside the bound. */
void fz_print_report(FILE *out, const fz_report *rep);

#endif
