/* host_tensor.c -- dense host arrays in their native dtype, and conversions. */
#include <math.h>
#include <string.h>

#include "ir.h"

int64_t fu_host_tensor_numel(const fu_host_tensor *t) { return fu_shape_numel(t->rank, t->shape); }

size_t fu_host_tensor_bytes(const fu_host_tensor *t)
{
    return (size_t)fu_host_tensor_numel(t) * fu_dtype_size(t->dtype);
}

fu_status fu_host_tensor_alloc(fu_host_tensor *t, fu_dtype dtype, int rank, const int64_t *shape,
                               fu_error *err)
{
    memset(t, 0, sizeof *t);
    if ((unsigned)dtype >= FU_DTYPE_COUNT || rank < 0 || rank > FU_MAX_RANK)
        return fu_error_set(err, FU_ERR_ARG, "host tensor: bad dtype %d or rank %d", (int)dtype, rank);
    t->dtype = dtype;
    t->rank = rank;
    char why[192], sh[192];
    if (!fu_shape_fits(rank, shape, NULL, dtype, why, sizeof why))
        return fu_error_set(err, FU_ERR_ARG, "host tensor %s%s: %s", fu_dtype_name(dtype),
                            fu_shape_str(rank, shape, sh, sizeof sh), why);
    for (int i = 0; i < rank; i++) t->shape[i] = shape[i];
    size_t bytes = fu_host_tensor_bytes(t);
    t->data = fu_calloc(bytes ? bytes : 1, 1);
    if (!t->data)
        return fu_error_set(err, FU_ERR_NOMEM, "out of memory allocating a %zu-byte host tensor", bytes);
    return FU_OK;
}

void fu_host_tensor_free(fu_host_tensor *t)
{
    if (!t) return;
    fu_free(t->data);
    t->data = NULL;
}

double fu_host_tensor_get(const fu_host_tensor *t, int64_t i)
{
    const void *d = t->data;
    switch (t->dtype) {
    case FU_F32: return ((const float *)d)[i];
    case FU_F16: return fu_f16_to_f32(((const uint16_t *)d)[i]);
    case FU_BF16: return fu_bf16_to_f32(((const uint16_t *)d)[i]);
    case FU_F64: return ((const double *)d)[i];
    case FU_I32: return ((const int32_t *)d)[i];
    case FU_I64: return (double)((const int64_t *)d)[i];
    case FU_BOOL: return ((const uint8_t *)d)[i] ? 1.0 : 0.0;
    default: return 0.0;
    }
}

void fu_host_tensor_set(fu_host_tensor *t, int64_t i, double v)
{
    void *d = t->data;
    switch (t->dtype) {
    case FU_F32: ((float *)d)[i] = (float)v; break;
    case FU_F16: ((uint16_t *)d)[i] = fu_f64_to_f16(v); break;
    case FU_BF16: ((uint16_t *)d)[i] = fu_f64_to_bf16(v); break;
    case FU_F64: ((double *)d)[i] = v; break;
    case FU_I32: ((int32_t *)d)[i] = (int32_t)fu_round_to_dtype(v, FU_I32); break;
    case FU_I64: ((int64_t *)d)[i] = fu_f64_to_i64(v); break;
    case FU_BOOL: ((uint8_t *)d)[i] = v != 0.0; break;
    default: break;
    }
}

static int64_t get_int(const fu_host_tensor *t, int64_t i)
{
    return t->dtype == FU_I64 ? ((const int64_t *)t->data)[i] : ((const int32_t *)t->data)[i];
}

fu_status fu_host_tensor_convert(const fu_host_tensor *src, fu_dtype dtype, fu_host_tensor *dst,
                                 const char *what, fu_error *err)
{
    bool ok = src->dtype == dtype || (fu_dtype_is_float(src->dtype) && fu_dtype_is_float(dtype)) ||
              (fu_dtype_is_int(src->dtype) && fu_dtype_is_int(dtype));
    if (!ok)
        return fu_error_set(err, FU_ERR_ARG, "%s: cannot convert %s data to %s", what,
                            fu_dtype_name(src->dtype), fu_dtype_name(dtype));
    fu_status s = fu_host_tensor_alloc(dst, dtype, src->rank, src->shape, err);
    if (s) return s;
    int64_t n = fu_host_tensor_numel(src);
    if (src->dtype == dtype) {
        memcpy(dst->data, src->data, fu_host_tensor_bytes(src));
    } else if (fu_dtype_is_int(dtype)) {
        for (int64_t i = 0; i < n; i++) {
            int64_t v = get_int(src, i);
            if (dtype == FU_I32 && (v < INT32_MIN || v > INT32_MAX)) {
                fu_host_tensor_free(dst);
                return fu_error_set(err, FU_ERR_ARG, "%s: element %lld = %lld does not fit in i32", what,
                                    (long long)i, (long long)v);
            }
            if (dtype == FU_I32) ((int32_t *)dst->data)[i] = (int32_t)v;
            else ((int64_t *)dst->data)[i] = v;
        }
    } else {
        for (int64_t i = 0; i < n; i++) fu_host_tensor_set(dst, i, fu_host_tensor_get(src, i));
    }
    return FU_OK;
}
