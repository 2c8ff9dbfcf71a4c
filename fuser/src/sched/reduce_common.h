/*
 * reduce_common.h -- what the reduction schedulers (k_reduction.c: rows,
 * k_outer.c: columns) share: a reduction's identity and its combine step.
 */
#ifndef FUSER_REDUCE_COMMON_H
#define FUSER_REDUCE_COMMON_H

#include "plan.h"

/* The identity of sum, max or min for a value of dtype dt, as C text. */
const char *fu_red_identity(fu_op op, fu_dtype dt);
/* v where cond holds, else op's identity over dt, as C text in buf (v itself where
 * cond is empty): a value that only some threads or rows may add. */
const char *fu_red_guard(fu_op op, fu_dtype dt, const char *cond, const char *v, char *buf, size_t n);
/* Emits acc = acc (op) v. */
void fu_red_combine(cg_ctx *c, fu_op op, const char *acc, const char *v);
/* Emits var = its rounding to dt where a final value of op over dt needs one
 * (a bf16 or f16 sum, accumulated in f32). */
void fu_red_round(cg_ctx *c, fu_op op, fu_dtype dt, const char *var);

#endif
