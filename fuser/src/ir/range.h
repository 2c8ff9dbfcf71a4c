/*
 * range.h -- the interval every value of a tensor lies in, from the ops that
 * produce it (a forward interval analysis over the fusion).
 */
#ifndef FUSER_RANGE_H
#define FUSER_RANGE_H
#include <stdbool.h>

#include "ir.h"

/* Bounds [lo, hi] (f64, possibly infinite) such that every value of t that is
 * not NaN, as the interpreter or a generated kernel computes it, lies in
 * them. Inputs are unbounded; tanh, sigmoid, comparisons, constants, iota and
 * the ops over bounded operands narrow it. Each float result is widened by
 * 2^-8 of its magnitude, which covers its rounding to the dtype and every
 * approximation of docs/format.md (Numerics). Returns true when both bounds
 * are finite. On a malformed tensor id, *lo = -inf, *hi = inf, false. */
bool fu_value_range(const fu_fusion *f, fu_tensor t, double *lo, double *hi);

#endif
