/*
 * test_interp_ops.c -- every op of the CPU interpreter on small tensors with
 * hand-computed answers, plus its input and index error messages.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fuser.h"

/* ------------------------------------------------------------ helpers */

static fu_host_tensor make(fu_dtype dt, int rank, const int64_t *shape, const double *v)
{
    fu_host_tensor t;
    fu_error e;
    if (fu_host_tensor_alloc(&t, dt, rank, shape, &e) != FU_OK) {
        fprintf(stderr, "alloc: %s\n", e.message);
        exit(2);
    }
    if (v)
        for (int64_t i = 0; i < fu_host_tensor_numel(&t); i++) fu_host_tensor_set(&t, i, v[i]);
    return t;
}

/* 0, 1, 2, ... as the values of a new tensor. */
static fu_host_tensor make_iota(fu_dtype dt, int rank, const int64_t *shape)
{
    fu_host_tensor t = make(dt, rank, shape, NULL);
    for (int64_t i = 0; i < fu_host_tensor_numel(&t); i++) fu_host_tensor_set(&t, i, (double)i);
    return t;
}

static void free_all(fu_host_tensor *t, int n)
{
    for (int i = 0; i < n; i++) fu_host_tensor_free(&t[i]);
}

/* Verifies and runs f; prints the message on failure. */
static fu_status run(fu_fusion *f, fu_host_tensor *in, fu_host_tensor *out, fu_error *err)
{
    fu_status s = fu_fusion_verify(f, err);
    if (s == FU_OK) s = fu_interp_run(f, in, out, err);
    return s;
}

/* Checks dtype, shape and values of t; tol 0 means exact. */
static void expect(const char *what, const fu_host_tensor *t, fu_dtype dt, int rank, const int64_t *shape,
                   const double *want, double tol)
{
    check_count++;
    bool ok = t->data && t->dtype == dt && t->rank == rank;
    for (int i = 0; ok && i < rank; i++) ok = t->shape[i] == shape[i];
    if (!ok) {
        check_failures++;
        fprintf(stderr, "%s: wrong dtype/rank/shape (dtype %d rank %d)\n", what, (int)t->dtype, t->rank);
        return;
    }
    for (int64_t i = 0; i < fu_host_tensor_numel(t); i++) {
        double g = fu_host_tensor_get(t, i), w = want[i];
        bool same = (isnan(g) && isnan(w)) || g == w || fabs(g - w) <= tol * fmax(1.0, fabs(w));
        if (!same) {
            check_failures++;
            fprintf(stderr, "%s: element %lld is %.17g, want %.17g\n", what, (long long)i, g, w);
            return;
        }
    }
}

/* Runs a fusion with one output and checks it; frees the output. */
static void run_expect(const char *what, fu_fusion *f, fu_host_tensor *in, fu_dtype dt, int rank,
                       const int64_t *shape, const double *want, double tol)
{
    fu_error err;
    fu_host_tensor out[1];
    fu_status s = run(f, in, out, &err);
    check_count++;
    if (s != FU_OK) {
        check_failures++;
        fprintf(stderr, "%s: %s: %s\n", what, fu_status_name(s), err.message);
        return;
    }
    expect(what, &out[0], dt, rank, shape, want, tol);
    fu_host_tensor_free(&out[0]);
}

/* ------------------------------------------------------------ pointwise */

static void test_binary_broadcast(void)
{
    int64_t sa[2] = {2, 1}, sb[1] = {3}, so[2] = {2, 3};
    double av[2] = {1, 2}, bv[3] = {10, 20, 30};
    struct { fu_op op; double want[6]; } cases[] = {
        {FU_OP_ADD, {11, 21, 31, 12, 22, 32}},
        {FU_OP_SUB, {-9, -19, -29, -8, -18, -28}},
        {FU_OP_MUL, {10, 20, 30, 20, 40, 60}},
        {FU_OP_DIV, {0.1, 0.05, 1.0 / 30, 0.2, 0.1, 2.0 / 30}},
        {FU_OP_MAX, {10, 20, 30, 10, 20, 30}},
        {FU_OP_MIN, {1, 1, 1, 2, 2, 2}},
        {FU_OP_POW, {1, 1, 1, 1024, 1048576, 1073741824}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fu_fusion *f = fu_fusion_new("bin");
        fu_tensor a = fu_input(f, "a", FU_F64, 2, sa), b = fu_input(f, "b", FU_F64, 1, sb);
        fu_output(f, fu_binary(f, cases[i].op, a, b, "y"));
        fu_host_tensor in[2] = {make(FU_F64, 2, sa, av), make(FU_F64, 1, sb, bv)};
        run_expect(fu_op_name(cases[i].op), f, in, FU_F64, 2, so, cases[i].want, 1e-15);
        free_all(in, 2);
        fu_fusion_free(f);
    }

    /* f32: the result is an f32 value (0.1 is not 1/10 in f32). */
    fu_fusion *f = fu_fusion_new("div32");
    fu_tensor a = fu_input(f, "a", FU_F32, 2, sa), b = fu_input(f, "b", FU_F32, 1, sb);
    fu_output(f, fu_binary(f, FU_OP_DIV, a, b, "y"));
    fu_host_tensor in[2] = {make(FU_F32, 2, sa, av), make(FU_F32, 1, sb, bv)};
    double want[6] = {(float)0.1, (float)0.05, (float)(1.0 / 30), (float)0.2, (float)0.1, (float)(2.0 / 30)};
    run_expect("div f32", f, in, FU_F32, 2, so, want, 0);
    free_all(in, 2);
    fu_fusion_free(f);

    /* maximum / minimum propagate NaN like torch. */
    int64_t s3[1] = {3};
    f = fu_fusion_new("nanmax");
    a = fu_input(f, "a", FU_F32, 1, s3);
    b = fu_input(f, "b", FU_F32, 1, s3);
    fu_output(f, fu_binary(f, FU_OP_MAX, a, b, "mx"));
    fu_output(f, fu_binary(f, FU_OP_MIN, a, b, "mn"));
    double nv[3] = {NAN, 1, 5}, mv[3] = {2, NAN, 3};
    fu_host_tensor in2[2] = {make(FU_F32, 1, s3, nv), make(FU_F32, 1, s3, mv)};
    fu_host_tensor out[2];
    fu_error err;
    CHECK(run(f, in2, out, &err) == FU_OK);
    double wmx[3] = {NAN, NAN, 5}, wmn[3] = {NAN, NAN, 3};
    expect("maximum nan", &out[0], FU_F32, 1, s3, wmx, 0);
    expect("minimum nan", &out[1], FU_F32, 1, s3, wmn, 0);
    free_all(out, 2);
    free_all(in2, 2);
    fu_fusion_free(f);
}

static void test_int_ops(void)
{
    int64_t s4[1] = {4}, s0[1] = {1};
    double av[4] = {-3, 7, 2, -5}, bv[1] = {4};
    fu_fusion *f = fu_fusion_new("ints");
    fu_tensor a = fu_input(f, "a", FU_I32, 1, s4), b = fu_input(f, "b", FU_I32, 1, s0);
    fu_output(f, fu_binary(f, FU_OP_ADD, a, b, "add"));
    fu_output(f, fu_binary(f, FU_OP_MUL, a, b, "mul"));
    fu_output(f, fu_binary(f, FU_OP_SUB, a, b, "sub"));
    fu_output(f, fu_binary(f, FU_OP_MAX, a, b, "mx"));
    fu_output(f, fu_unary(f, FU_OP_NEG, a, "neg"));
    fu_output(f, fu_unary(f, FU_OP_ABS, a, "abs"));
    fu_output(f, fu_reduce(f, FU_OP_SUM, a, 0, NULL, false, "sum"));
    fu_host_tensor in[2] = {make(FU_I32, 1, s4, av), make(FU_I32, 1, s0, bv)};
    fu_host_tensor out[7];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    double w0[4] = {1, 11, 6, -1}, w1[4] = {-12, 28, 8, -20}, w2[4] = {-7, 3, -2, -9}, w3[4] = {4, 7, 4, 4};
    double w4[4] = {3, -7, -2, 5}, w5[4] = {3, 7, 2, 5}, w6[1] = {1};
    expect("i32 add", &out[0], FU_I32, 1, s4, w0, 0);
    expect("i32 mul", &out[1], FU_I32, 1, s4, w1, 0);
    expect("i32 sub", &out[2], FU_I32, 1, s4, w2, 0);
    expect("i32 maximum", &out[3], FU_I32, 1, s4, w3, 0);
    expect("i32 neg", &out[4], FU_I32, 1, s4, w4, 0);
    expect("i32 abs", &out[5], FU_I32, 1, s4, w5, 0);
    expect("i32 sum", &out[6], FU_I32, 0, NULL, w6, 0);
    free_all(out, 7);
    free_all(in, 2);
    fu_fusion_free(f);
}

static void test_compare_logical(void)
{
    int64_t s4[1] = {4};
    double av[4] = {1, 2, 3, NAN}, bv[4] = {2, 2, 2, 2};
    fu_fusion *f = fu_fusion_new("cmp");
    fu_tensor a = fu_input(f, "a", FU_F32, 1, s4), b = fu_input(f, "b", FU_F32, 1, s4);
    fu_op ops[6] = {FU_OP_EQ, FU_OP_NE, FU_OP_LT, FU_OP_LE, FU_OP_GT, FU_OP_GE};
    fu_tensor c[6];
    for (int i = 0; i < 6; i++) {
        c[i] = fu_binary(f, ops[i], a, b, fu_op_name(ops[i]));
        fu_output(f, c[i]);
    }
    fu_output(f, fu_binary(f, FU_OP_LOGICAL_AND, c[2], c[1], "and"));
    fu_output(f, fu_binary(f, FU_OP_LOGICAL_OR, c[2], c[0], "or"));
    fu_output(f, fu_unary(f, FU_OP_LOGICAL_NOT, c[3], "not"));
    fu_host_tensor in[2] = {make(FU_F32, 1, s4, av), make(FU_F32, 1, s4, bv)};
    fu_host_tensor out[9];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    double want[9][4] = {
        {0, 1, 0, 0}, {1, 0, 1, 1}, {1, 0, 0, 0}, {1, 1, 0, 0}, {0, 0, 1, 0}, {0, 1, 1, 0}, /* NaN: only ne */
        {1, 0, 0, 0}, {1, 1, 0, 0}, {0, 0, 1, 1},
    };
    const char *names[9] = {"eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not"};
    for (int i = 0; i < 9; i++) expect(names[i], &out[i], FU_BOOL, 1, s4, want[i], 0);
    free_all(out, 9);
    free_all(in, 2);
    fu_fusion_free(f);
}

static void test_unary_math(void)
{
    int64_t s4[1] = {4};
    double xv[4] = {0.25, 1.0, 2.5, 7.0};
    fu_op ops[10] = {FU_OP_NEG, FU_OP_ABS, FU_OP_EXP, FU_OP_LOG, FU_OP_LOG1P,
                     FU_OP_SQRT, FU_OP_RSQRT, FU_OP_TANH, FU_OP_SIGMOID, FU_OP_RECIPROCAL};
    for (int dt = 0; dt < 2; dt++) {
        fu_dtype type = dt ? FU_F32 : FU_F64;
        fu_fusion *f = fu_fusion_new("unary");
        fu_tensor x = fu_input(f, "x", type, 1, s4);
        for (int i = 0; i < 10; i++) fu_output(f, fu_unary(f, ops[i], x, fu_op_name(ops[i])));
        fu_host_tensor in[1] = {make(type, 1, s4, xv)};
        fu_host_tensor out[10];
        fu_error err;
        CHECK(run(f, in, out, &err) == FU_OK);
        for (int i = 0; i < 10; i++) {
            double want[4];
            for (int j = 0; j < 4; j++) {
                double v = xv[j], r = 0;
                switch (ops[i]) {
                case FU_OP_NEG: r = -v; break;
                case FU_OP_ABS: r = v; break;
                case FU_OP_EXP: r = exp(v); break;
                case FU_OP_LOG: r = log(v); break;
                case FU_OP_LOG1P: r = log1p(v); break;
                case FU_OP_SQRT: r = sqrt(v); break;
                case FU_OP_RSQRT: r = 1 / sqrt(v); break;
                case FU_OP_TANH: r = tanh(v); break;
                case FU_OP_SIGMOID: r = 1 / (1 + exp(-v)); break;
                default: r = 1 / v; break;
                }
                want[j] = dt ? (double)(float)r : r; /* f32 results are f32 values */
            }
            expect(fu_op_name(ops[i]), &out[i], type, 1, s4, want, 0);
        }
        free_all(out, 10);
        free_all(in, 1);
        fu_fusion_free(f);
    }
}

static void test_where(void)
{
    int64_t sc[2] = {2, 1}, sa[1] = {3}, so[2] = {2, 3};
    fu_fusion *f = fu_fusion_new("where");
    fu_tensor c = fu_input(f, "c", FU_BOOL, 2, sc), a = fu_input(f, "a", FU_F32, 1, sa);
    fu_tensor b = fu_input(f, "b", FU_F32, 0, sa); /* rank 0: shape unread (NULL trips UBSan in fusion.c memcpy) */
    fu_output(f, fu_where(f, c, a, b, "y"));
    double cv[2] = {1, 0}, av[3] = {1, 2, 3}, bv[1] = {-1};
    fu_host_tensor in[3] = {make(FU_BOOL, 2, sc, cv), make(FU_F32, 1, sa, av), make(FU_F32, 0, NULL, bv)};
    double want[6] = {1, 2, 3, -1, -1, -1};
    run_expect("where", f, in, FU_F32, 2, so, want, 0);
    free_all(in, 3);
    fu_fusion_free(f);
}

static void test_cast(void)
{
    int64_t s6[1] = {6};
    /* 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even (1).
     * 1 + 3*2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (up).
     * f16 has 10 mantissa bits: the same cases at 2^-11. */
    double xv[6] = {1 + ldexp(1, -8), 1 + 3 * ldexp(1, -8), 1 + ldexp(1, -11), 1 + 3 * ldexp(1, -11), -2.7, 0.0};
    fu_fusion *f = fu_fusion_new("cast");
    fu_tensor x = fu_input(f, "x", FU_F32, 1, s6);
    fu_tensor bf = fu_cast(f, x, FU_BF16, "bf");
    fu_output(f, bf);
    fu_output(f, fu_cast(f, x, FU_F16, "h"));
    fu_output(f, fu_cast(f, x, FU_I32, "i"));
    fu_output(f, fu_cast(f, x, FU_BOOL, "b"));
    fu_output(f, fu_cast(f, bf, FU_F32, "back"));
    fu_output(f, fu_cast(f, fu_cast(f, x, FU_I64, "i64"), FU_F64, "d"));
    fu_host_tensor in[1] = {make(FU_F32, 1, s6, xv)};
    fu_host_tensor out[6];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    double wbf[6] = {1.0, 1 + ldexp(1, -6), 1.0, 1.0, -2.703125, 0};
    double wh[6] = {1 + ldexp(1, -8), 1 + 3 * ldexp(1, -8), 1.0, 1 + ldexp(1, -9), -2.69921875, 0};
    double wi[6] = {1, 1, 1, 1, -2, 0}, wb[6] = {1, 1, 1, 1, 1, 0};
    expect("cast bf16", &out[0], FU_BF16, 1, s6, wbf, 0);
    expect("cast f16", &out[1], FU_F16, 1, s6, wh, 0);
    expect("cast i32 truncates", &out[2], FU_I32, 1, s6, wi, 0);
    expect("cast bool", &out[3], FU_BOOL, 1, s6, wb, 0);
    expect("cast bf16->f32", &out[4], FU_F32, 1, s6, wbf, 0);
    expect("cast f32->i64->f64", &out[5], FU_F64, 1, s6, wi, 0);
    free_all(out, 6);
    free_all(in, 1);
    fu_fusion_free(f);
}

/* Out-of-range float -> int casts saturate (never undefined behaviour); NaN gives 0. */
static void test_cast_saturates(void)
{
    int64_t s3[1] = {3};
    fu_fusion *f = fu_fusion_new("sat");
    fu_tensor x = fu_input(f, "x", FU_F32, 1, s3);
    fu_output(f, fu_cast(f, x, FU_I64, "l"));
    fu_output(f, fu_cast(f, x, FU_I32, "i"));
    double xv[3] = {1e30, -1e30, NAN};
    fu_host_tensor in[1] = {make(FU_F32, 1, s3, xv)};
    fu_host_tensor out[2];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    CHECK(((int64_t *)out[0].data)[0] == INT64_MAX && ((int64_t *)out[0].data)[1] == INT64_MIN);
    CHECK(((int64_t *)out[0].data)[2] == 0);
    CHECK(((int32_t *)out[1].data)[0] == INT32_MAX && ((int32_t *)out[1].data)[1] == INT32_MIN);
    CHECK(((int32_t *)out[1].data)[2] == 0);
    free_all(out, 2);
    free_all(in, 1);
    fu_fusion_free(f);
}

static void test_broadcast_op(void)
{
    int64_t sx[2] = {2, 1}, so[3] = {2, 2, 3};
    fu_fusion *f = fu_fusion_new("bc");
    fu_tensor x = fu_input(f, "x", FU_F32, 2, sx);
    fu_output(f, fu_broadcast(f, x, 3, so, "y"));
    double xv[2] = {5, 6};
    fu_host_tensor in[1] = {make(FU_F32, 2, sx, xv)};
    double want[12] = {5, 5, 5, 6, 6, 6, 5, 5, 5, 6, 6, 6};
    run_expect("broadcast", f, in, FU_F32, 3, so, want, 0);
    free_all(in, 1);
    fu_fusion_free(f);
}

/* ------------------------------------------------------------ reductions and shapes */

static void test_reductions(void)
{
    int64_t sx[3] = {2, 3, 4}; /* x[a, j, k] = 12a + 4j + k */
    fu_fusion *f = fu_fusion_new("red");
    fu_tensor x = fu_input(f, "x", FU_F32, 3, sx);
    int ax02[2] = {0, 2}, ax1[1] = {1}, ax12[2] = {1, -1};
    fu_output(f, fu_reduce(f, FU_OP_SUM, x, 2, ax02, false, "sum02"));
    fu_output(f, fu_reduce(f, FU_OP_SUM, x, 2, ax02, true, "sum02k"));
    fu_output(f, fu_reduce(f, FU_OP_SUM, x, 0, NULL, false, "sumall"));
    fu_output(f, fu_reduce(f, FU_OP_RMAX, x, 1, ax1, false, "max1"));
    fu_output(f, fu_reduce(f, FU_OP_RMIN, x, 2, ax02, true, "min02k"));
    fu_output(f, fu_reduce(f, FU_OP_MEAN, x, 2, ax12, false, "mean12"));
    fu_output(f, fu_reduce(f, FU_OP_MEAN, x, 0, NULL, true, "meanallk"));
    fu_host_tensor in[1] = {make_iota(FU_F32, 3, sx)};
    fu_host_tensor out[7];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    int64_t s3[1] = {3}, s131[3] = {1, 3, 1}, s24[2] = {2, 4}, s2[1] = {2}, s111[3] = {1, 1, 1};
    double w_sum02[3] = {60, 92, 124}, w_all[1] = {276};
    double w_max1[8] = {8, 9, 10, 11, 20, 21, 22, 23}, w_min[3] = {0, 4, 8}, w_mean[2] = {5.5, 17.5};
    double w_meanall[1] = {11.5};
    expect("sum axes 0,2", &out[0], FU_F32, 1, s3, w_sum02, 0);
    expect("sum axes 0,2 keepdim", &out[1], FU_F32, 3, s131, w_sum02, 0);
    expect("sum all", &out[2], FU_F32, 0, NULL, w_all, 0);
    expect("max axis 1", &out[3], FU_F32, 2, s24, w_max1, 0);
    expect("min axes 0,2 keepdim", &out[4], FU_F32, 3, s131, w_min, 0);
    expect("mean axes 1,2", &out[5], FU_F32, 1, s2, w_mean, 0);
    expect("mean all keepdim", &out[6], FU_F32, 3, s111, w_meanall, 0);
    free_all(out, 7);
    free_all(in, 1);
    fu_fusion_free(f);

    /* max propagates NaN (torch.amax); an empty mean is NaN. */
    int64_t s23[2] = {2, 3}, s20[2] = {2, 0};
    f = fu_fusion_new("red_nan");
    x = fu_input(f, "x", FU_F32, 2, s23);
    fu_tensor e = fu_input(f, "e", FU_F32, 2, s20);
    int last[1] = {1}, first[1] = {0};
    fu_output(f, fu_reduce(f, FU_OP_RMAX, x, 1, last, false, "mx"));
    fu_output(f, fu_reduce(f, FU_OP_RMIN, x, 1, first, false, "mn"));
    fu_output(f, fu_reduce(f, FU_OP_MEAN, e, 1, last, false, "me"));
    double xv[6] = {1, NAN, 3, 4, 5, 6};
    fu_host_tensor in2[2] = {make(FU_F32, 2, s23, xv), make(FU_F32, 2, s20, NULL)};
    CHECK(run(f, in2, out, &err) == FU_OK);
    double wmx[2] = {NAN, 6}, wmn[3] = {1, NAN, 3}, wme[2] = {NAN, NAN};
    expect("max nan", &out[0], FU_F32, 1, s2, wmx, 0);
    expect("min nan", &out[1], FU_F32, 1, s3, wmn, 0);
    expect("empty mean", &out[2], FU_F32, 1, s2, wme, 0);
    free_all(out, 3);
    free_all(in2, 2);
    fu_fusion_free(f);
}

static void test_shape_ops(void)
{
    /* reshape with -1 keeps row-major order */
    int64_t s23[2] = {2, 3}, t[2] = {3, -1}, s32[2] = {3, 2};
    fu_fusion *f = fu_fusion_new("reshape");
    fu_tensor x = fu_input(f, "x", FU_F32, 2, s23);
    fu_tensor r = fu_reshape(f, x, 2, t, "r");
    fu_output(f, fu_binary(f, FU_OP_ADD, r, r, "y")); /* the same operand twice */
    fu_host_tensor in[1] = {make_iota(FU_F32, 2, s23)};
    double want[6] = {0, 2, 4, 6, 8, 10};
    run_expect("reshape -1", f, in, FU_F32, 2, s32, want, 0);
    free_all(in, 1);
    fu_fusion_free(f);

    /* permute: output axis i is input axis perm[i]; out[i, j, k] = x[j, k, i] */
    int64_t s234[3] = {2, 3, 4}, s423[3] = {4, 2, 3};
    int perm[3] = {2, 0, 1};
    f = fu_fusion_new("permute");
    x = fu_input(f, "x", FU_F32, 3, s234);
    fu_output(f, fu_permute(f, x, perm, "p"));
    in[0] = make_iota(FU_F32, 3, s234);
    fu_host_tensor out[2];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    CHECK(fu_host_tensor_get(&out[0], 1 * 6 + 0 * 3 + 2) == 9);  /* out[1,0,2] = x[0,2,1] */
    CHECK(fu_host_tensor_get(&out[0], 3 * 6 + 1 * 3 + 0) == 15); /* out[3,1,0] = x[1,0,3] */
    double pw[24];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 2; j++)
            for (int k = 0; k < 3; k++) pw[i * 6 + j * 3 + k] = j * 12 + k * 4 + i;
    expect("permute", &out[0], FU_F32, 3, s423, pw, 0);
    free_all(out, 1);
    free_all(in, 1);
    fu_fusion_free(f);

    /* strided slices */
    int64_t s10[1] = {10}, s34[2] = {3, 4};
    f = fu_fusion_new("slice");
    x = fu_input(f, "x", FU_I64, 1, s10);
    fu_tensor m = fu_input(f, "m", FU_F32, 2, s34);
    int64_t a0[1] = {1}, a1[1] = {8}, a2[1] = {3};
    int64_t b0[2] = {0, 1}, b1[2] = {3, 4}, b2[2] = {2, 2};
    int64_t c0[2] = {0, 0}, c1[2] = {3, 4};
    fu_output(f, fu_slice(f, x, a0, a1, a2, "s1"));
    fu_output(f, fu_slice(f, m, b0, b1, b2, "s2"));
    fu_output(f, fu_slice(f, m, c0, c1, NULL, "whole"));
    fu_host_tensor in2[2] = {make_iota(FU_I64, 1, s10), make_iota(FU_F32, 2, s34)};
    fu_host_tensor out3[3];
    CHECK(run(f, in2, out3, &err) == FU_OK);
    int64_t s3[1] = {3}, s22[2] = {2, 2};
    double w1[3] = {1, 4, 7}, w2[4] = {1, 3, 9, 11}, w3[12];
    for (int i = 0; i < 12; i++) w3[i] = i;
    expect("slice 1:8:3", &out3[0], FU_I64, 1, s3, w1, 0);
    expect("slice 2-D step 2", &out3[1], FU_F32, 2, s22, w2, 0);
    expect("slice whole", &out3[2], FU_F32, 2, s34, w3, 0);
    free_all(out3, 3);
    free_all(in2, 2);
    fu_fusion_free(f);
}

static void test_full_iota(void)
{
    int64_t s22[2] = {2, 2}, s23[2] = {2, 3}, s3000[1] = {3000};
    fu_fusion *f = fu_fusion_new("full");
    fu_output(f, fu_full(f, 2, s22, 1.1, FU_F32, "a"));
    fu_output(f, fu_full(f, 2, s22, 1.1, FU_BF16, "b"));
    fu_output(f, fu_full(f, 0, NULL, -3.9, FU_I32, "c"));
    fu_output(f, fu_iota(f, 2, s23, 1, FU_I64, "i1"));
    fu_output(f, fu_iota(f, 2, s23, 0, FU_F32, "i0"));
    fu_output(f, fu_iota(f, 1, s3000, 0, FU_F16, "ih")); /* f16 counts by 2 past 2048 */
    fu_host_tensor out[6];
    fu_error err;
    CHECK(run(f, NULL, out, &err) == FU_OK);
    double wa[4] = {(float)1.1, (float)1.1, (float)1.1, (float)1.1};
    double wb[4] = {1.1015625, 1.1015625, 1.1015625, 1.1015625}, wc[1] = {-3};
    double w1[6] = {0, 1, 2, 0, 1, 2}, w0[6] = {0, 0, 0, 1, 1, 1};
    expect("full f32", &out[0], FU_F32, 2, s22, wa, 0);
    expect("full bf16", &out[1], FU_BF16, 2, s22, wb, 0);
    expect("full i32", &out[2], FU_I32, 0, NULL, wc, 0);
    expect("iota axis 1", &out[3], FU_I64, 2, s23, w1, 0);
    expect("iota axis 0", &out[4], FU_F32, 2, s23, w0, 0);
    CHECK(fu_host_tensor_get(&out[5], 2047) == 2047);
    CHECK(fu_host_tensor_get(&out[5], 2049) == 2048); /* tie to even */
    CHECK(fu_host_tensor_get(&out[5], 2051) == 2052);
    free_all(out, 6);
    fu_fusion_free(f);
}

/* ------------------------------------------------------------ gathers and scatters */

static void test_gathers(void)
{
    int64_t s32[2] = {3, 2}, s3[1] = {3}, s1[1] = {1};
    double xv[6] = {1, 2, 3, 4, 5, 6};
    fu_fusion *f = fu_fusion_new("index_select");
    fu_tensor x = fu_input(f, "x", FU_F32, 2, s32);
    fu_tensor i3 = fu_input(f, "i3", FU_I64, 1, s3), i1 = fu_input(f, "i1", FU_I32, 1, s1);
    fu_output(f, fu_index_select(f, x, i3, 0, "rows"));
    fu_output(f, fu_index_select(f, x, i1, 1, "cols"));
    double iv3[3] = {2, 0, 2}, iv1[1] = {1};
    fu_host_tensor in[3] = {make(FU_F32, 2, s32, xv), make(FU_I64, 1, s3, iv3), make(FU_I32, 1, s1, iv1)};
    fu_host_tensor out[2];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    int64_t s31[2] = {3, 1};
    double wr[6] = {5, 6, 1, 2, 5, 6}, wc[3] = {2, 4, 6};
    expect("index_select axis 0", &out[0], FU_F32, 2, s32, wr, 0);
    expect("index_select axis 1", &out[1], FU_F32, 2, s31, wc, 0);
    free_all(out, 2);
    free_all(in, 3);
    fu_fusion_free(f);

    /* take: out = x.shape[:axis] + index.shape + x.shape[axis+1:]; out[a, i, j] = x[a, idx[i, j]] */
    int64_t s23[2] = {2, 3}, s22[2] = {2, 2}, s222[3] = {2, 2, 2};
    f = fu_fusion_new("take");
    x = fu_input(f, "x", FU_F32, 2, s23);
    fu_tensor ix = fu_input(f, "ix", FU_I64, 2, s22);
    fu_output(f, fu_take(f, x, ix, 1, "t"));
    double tx[6] = {10, 11, 12, 20, 21, 22}, ti[4] = {2, 0, 1, 1};
    fu_host_tensor tin[2] = {make(FU_F32, 2, s23, tx), make(FU_I64, 2, s22, ti)};
    double tw[8] = {12, 10, 11, 11, 22, 20, 21, 21};
    run_expect("take axis 1", f, tin, FU_F32, 3, s222, tw, 0);
    free_all(tin, 2);
    fu_fusion_free(f);

    /* take_along_axis (torch.gather) on axis 1 and axis 0, index smaller than x */
    int64_t s21[2] = {2, 1}, s12[2] = {1, 2};
    f = fu_fusion_new("take_along_axis");
    x = fu_input(f, "x", FU_F32, 2, s23);
    fu_tensor ia = fu_input(f, "ia", FU_I64, 2, s21), ib = fu_input(f, "ib", FU_I32, 2, s12);
    fu_output(f, fu_take_along_axis(f, x, ia, 1, "a"));
    fu_output(f, fu_take_along_axis(f, x, ib, 0, "b"));
    double iav[2] = {2, 0}, ibv[2] = {1, 0};
    fu_host_tensor gin[3] = {make(FU_F32, 2, s23, tx), make(FU_I64, 2, s21, iav), make(FU_I32, 2, s12, ibv)};
    CHECK(run(f, gin, out, &err) == FU_OK);
    double wa[2] = {12, 20}, wb2[2] = {20, 11};
    expect("take_along_axis axis 1", &out[0], FU_F32, 2, s21, wa, 0);
    expect("take_along_axis axis 0", &out[1], FU_F32, 2, s12, wb2, 0);
    free_all(out, 2);
    free_all(gin, 3);
    fu_fusion_free(f);

    /* embedding of an integer table gathers its values as they are (it once asserted a float table) */
    int64_t s2[1] = {2};
    double iw[6] = {-7, 0, 9, -10, 11, 12}, iid[2] = {2, 0}, ie[4] = {11, 12, -7, 0}, be[4] = {1, 1, 1, 0};
    fu_dtype tables[2] = {FU_I64, FU_BOOL};
    for (int t = 0; t < 2; t++) {
        f = fu_fusion_new("int_embedding");
        fu_tensor w = fu_input(f, "w", tables[t], 2, s32), ids = fu_input(f, "ids", FU_I64, 1, s2);
        fu_output(f, fu_embedding(f, w, ids, -1, "e"));
        fu_host_tensor ein[2] = {make(tables[t], 2, s32, iw), make(FU_I64, 1, s2, iid)};
        run_expect(t ? "embedding of a bool table" : "embedding of an i64 table", f, ein, tables[t], 2,
                   (int64_t[2]){2, 2}, t ? be : ie, 0);
        free_all(ein, 2);
        fu_fusion_free(f);
    }
}

static void test_scatters(void)
{
    /* index_add with a repeated index: rows 0 and 2 of src both land on row 0 */
    int64_t s42[2] = {4, 2}, s3[1] = {3}, s32[2] = {3, 2};
    fu_fusion *f = fu_fusion_new("index_add");
    fu_tensor x = fu_input(f, "x", FU_F32, 2, s42), i = fu_input(f, "i", FU_I64, 1, s3);
    fu_tensor src = fu_input(f, "src", FU_F32, 2, s32);
    fu_output(f, fu_index_add(f, x, i, src, 0, "y"));
    double xv[8] = {1, 1, 1, 1, 1, 1, 1, 1}, iv[3] = {0, 2, 0}, sv[6] = {1, 2, 3, 4, 5, 6};
    fu_host_tensor in[3] = {make(FU_F32, 2, s42, xv), make(FU_I64, 1, s3, iv), make(FU_F32, 2, s32, sv)};
    double want[8] = {7, 9, 1, 1, 4, 5, 1, 1};
    run_expect("index_add", f, in, FU_F32, 2, s42, want, 0);
    free_all(in, 3);
    fu_fusion_free(f);

    /* index_add along axis 1 */
    int64_t s24[2] = {2, 4}, s2[1] = {2}, s22[2] = {2, 2};
    f = fu_fusion_new("index_add1");
    x = fu_input(f, "x", FU_F32, 2, s24);
    i = fu_input(f, "i", FU_I32, 1, s2);
    src = fu_input(f, "src", FU_F32, 2, s22);
    fu_output(f, fu_index_add(f, x, i, src, 1, "y"));
    double i2[2] = {3, 3}, sv2[4] = {1, 2, 3, 4};
    fu_host_tensor in2[3] = {make(FU_F32, 2, s24, NULL), make(FU_I32, 1, s2, i2), make(FU_F32, 2, s22, sv2)};
    double want2[8] = {0, 0, 0, 3, 0, 0, 0, 7};
    run_expect("index_add axis 1", f, in2, FU_F32, 2, s24, want2, 0);
    free_all(in2, 3);
    fu_fusion_free(f);

    /* scatter_add (torch.scatter_add) along axis 1 with repeats; index smaller than src */
    int64_t s23[2] = {2, 3}, s24b[2] = {2, 4};
    f = fu_fusion_new("scatter_add");
    x = fu_input(f, "x", FU_F32, 2, s23);
    i = fu_input(f, "i", FU_I64, 2, s23);
    src = fu_input(f, "src", FU_F32, 2, s24b);
    fu_output(f, fu_scatter_add(f, x, i, src, 1, "y"));
    double xs[6] = {100, 200, 300, 400, 500, 600}, is[6] = {0, 1, 0, 2, 2, 1};
    double ss[8] = {1, 2, 3, 99, 5, 6, 7, 99};
    fu_host_tensor in3[3] = {make(FU_F32, 2, s23, xs), make(FU_I64, 2, s23, is), make(FU_F32, 2, s24b, ss)};
    double want3[6] = {104, 202, 300, 400, 507, 611};
    run_expect("scatter_add", f, in3, FU_F32, 2, s23, want3, 0);
    free_all(in3, 3);
    fu_fusion_free(f);

    /* scatter_add along axis 0 */
    int64_t s13[2] = {1, 3};
    f = fu_fusion_new("scatter_add0");
    x = fu_input(f, "x", FU_F64, 2, s23);
    i = fu_input(f, "i", FU_I64, 2, s13);
    src = fu_input(f, "src", FU_F64, 2, s13);
    fu_output(f, fu_scatter_add(f, x, i, src, 0, "y"));
    double i0[3] = {1, 0, 1}, s0[3] = {5, 6, 7};
    fu_host_tensor in4[3] = {make(FU_F64, 2, s23, NULL), make(FU_I64, 2, s13, i0), make(FU_F64, 2, s13, s0)};
    double want4[6] = {0, 6, 0, 5, 0, 7};
    run_expect("scatter_add axis 0", f, in4, FU_F64, 2, s23, want4, 0);
    free_all(in4, 3);
    fu_fusion_free(f);
}

/* ------------------------------------------------------------ composites (small) */

static void test_small_composites(void)
{
    int64_t s3[1] = {3}, s22[2] = {2, 2};
    fu_fusion *f = fu_fusion_new("sm");
    fu_tensor x = fu_input(f, "x", FU_F64, 1, s3), m = fu_input(f, "m", FU_F64, 2, s22);
    fu_output(f, fu_softmax(f, x, 0, "s"));
    fu_output(f, fu_log_softmax(f, x, -1, "ls"));
    fu_output(f, fu_log_softmax(f, m, 0, "ls0")); /* strided axis */
    fu_output(f, fu_segment_set(f, x, "seg"));
    double xv[3] = {1, 2, 3}, mv[4] = {0, 1, 0, 3};
    fu_host_tensor in[2] = {make(FU_F64, 1, s3, xv), make(FU_F64, 2, s22, mv)};
    fu_host_tensor out[4];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    double z = exp(1) + exp(2) + exp(3);
    double ws[3] = {exp(1) / z, exp(2) / z, exp(3) / z}, wl[3] = {1 - log(z), 2 - log(z), 3 - log(z)};
    double l2 = log(2), l13 = log(exp(1) + exp(3));
    double w0[4] = {-l2, 1 - l13, -l2, 3 - l13};
    expect("softmax", &out[0], FU_F64, 1, s3, ws, 1e-15);
    expect("log_softmax", &out[1], FU_F64, 1, s3, wl, 1e-15);
    expect("log_softmax axis 0", &out[2], FU_F64, 2, s22, w0, 1e-15);
    expect("segment_set", &out[3], FU_F64, 1, s3, xv, 0);
    free_all(out, 4);
    free_all(in, 2);
    fu_fusion_free(f);
}

/* ------------------------------------------------------------ graph plumbing */

static void test_plumbing(void)
{
    /* An input listed as an output, an intermediate that is also an output,
     * and a chain that frees as it goes. */
    int64_t s4[1] = {4};
    fu_fusion *f = fu_fusion_new("plumb");
    fu_tensor x = fu_input(f, "x", FU_F32, 1, s4);
    fu_tensor unused = fu_input(f, "unused", FU_F32, 1, s4);
    (void)unused;
    fu_tensor a = fu_binary(f, FU_OP_MUL, x, x, "a");
    fu_tensor b = fu_unary(f, FU_OP_NEG, a, "b");
    fu_tensor c = fu_binary(f, FU_OP_ADD, a, b, "c");
    fu_output(f, c);
    fu_output(f, x);
    fu_output(f, a);
    double xv[4] = {1, 2, 3, 4};
    fu_host_tensor in[2] = {make(FU_F32, 1, s4, xv), make(FU_F32, 1, s4, xv)};
    fu_host_tensor out[3];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    double wc[4] = {0, 0, 0, 0}, wa[4] = {1, 4, 9, 16};
    expect("c", &out[0], FU_F32, 1, s4, wc, 0);
    expect("input as output", &out[1], FU_F32, 1, s4, xv, 0);
    expect("intermediate output", &out[2], FU_F32, 1, s4, wa, 0);
    free_all(out, 3);
    free_all(in, 2);
    fu_fusion_free(f);

    /* An invalid fusion is refused. */
    f = fu_fusion_new("bad");
    x = fu_input(f, "x", FU_F32, 1, s4);
    fu_output(f, x);
    fu_unary(f, FU_OP_LOGICAL_NOT, x, "n"); /* f32 operand: a builder error */
    out[0].data = (void *)&err; /* garbage the interpreter must clear */
    CHECK(fu_interp_run(f, in, out, &err) == FU_ERR_VERIFY);
    CHECK(out[0].data == NULL);
    fu_fusion_free(f);
}

/* ------------------------------------------------------------ errors */

static void test_input_errors(void)
{
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2};
    fu_fusion *f = fu_fusion_new("inerr");
    fu_tensor x = fu_input(f, "logits", FU_F32, 2, s23);
    fu_output(f, fu_unary(f, FU_OP_EXP, x, "y"));
    fu_host_tensor out[1];
    fu_error err;

    fu_host_tensor bad = make(FU_BF16, 2, s23, NULL);
    CHECK(fu_interp_run(f, &bad, out, &err) == FU_ERR_ARG);
    CHECK_CONTAINS(err.message, "'logits'");
    CHECK_CONTAINS(err.message, "expected f32 [2, 3], got bf16 [2, 3]");
    CHECK(out[0].data == NULL);
    fu_host_tensor_free(&bad);

    bad = make(FU_F32, 2, s32, NULL);
    CHECK(fu_interp_run(f, &bad, out, &err) == FU_ERR_ARG);
    CHECK_CONTAINS(err.message, "'logits'");
    CHECK_CONTAINS(err.message, "got f32 [3, 2]");
    fu_host_tensor_free(&bad);

    bad = make(FU_F32, 1, s23, NULL);
    CHECK(fu_interp_run(f, &bad, out, &err) == FU_ERR_ARG);
    CHECK_CONTAINS(err.message, "got f32 [2]");
    fu_host_tensor_free(&bad);

    CHECK(fu_interp_run(f, NULL, out, &err) == FU_ERR_ARG);
    fu_fusion_free(f);
}

/* Runs f expecting FU_ERR_INDEX with the given message parts; outputs must stay unallocated. */
static void expect_index_error(const char *what, fu_fusion *f, fu_host_tensor *in, const char *msg1,
                               const char *msg2)
{
    fu_host_tensor out[2];
    fu_error err;
    fu_status s = run(f, in, out, &err);
    check_count++;
    if (s != FU_ERR_INDEX) {
        check_failures++;
        fprintf(stderr, "%s: got status %s (%s), want index error\n", what, fu_status_name(s), err.message);
        return;
    }
    CHECK_CONTAINS(err.message, msg1);
    if (msg2) CHECK_CONTAINS(err.message, msg2);
    for (int i = 0; i < fu_fusion_num_outputs(f); i++) CHECK(out[i].data == NULL);
}

static void test_index_errors(void)
{
    int64_t s25[2] = {2, 5}, s21[2] = {2, 1}, s3[1] = {3}, s22[2] = {2, 2};
    double xv[10] = {0};

    fu_fusion *f = fu_fusion_new("tae");
    fu_tensor x = fu_input(f, "logp", FU_F32, 2, s25), i = fu_input(f, "target_col", FU_I64, 2, s21);
    fu_tensor ok = fu_unary(f, FU_OP_EXP, x, "ok");
    fu_output(f, ok); /* produced before the failing op: must be freed too */
    fu_output(f, fu_take_along_axis(f, x, i, 1, "picked"));
    double iv[2] = {3, 7};
    fu_host_tensor in[2] = {make(FU_F32, 2, s25, xv), make(FU_I64, 2, s21, iv)};
    expect_index_error("take_along_axis", f, in,
                       "op 'take_along_axis' -> 'picked': index 7 at position [1, 0] of 'target_col' is out of "
                       "range [0, 5)",
                       NULL);
    fu_host_tensor_set(&in[1], 1, -1); /* negative: no Python wrap-around */
    expect_index_error("take_along_axis negative", f, in, "index -1 at position [1, 0]", NULL);
    free_all(in, 2);
    fu_fusion_free(f);

    f = fu_fusion_new("ise");
    x = fu_input(f, "x", FU_F32, 2, s25);
    i = fu_input(f, "rows", FU_I32, 1, s3);
    fu_output(f, fu_index_select(f, x, i, 0, "sel"));
    double iv2[3] = {0, 1, 2};
    fu_host_tensor in2[2] = {make(FU_F32, 2, s25, xv), make(FU_I32, 1, s3, iv2)};
    expect_index_error("index_select", f, in2, "op 'index_select' -> 'sel': index 2 at position [2] of 'rows'",
                       "[0, 2)");
    free_all(in2, 2);
    fu_fusion_free(f);

    f = fu_fusion_new("take");
    x = fu_input(f, "x", FU_F32, 2, s25);
    i = fu_input(f, "ix", FU_I64, 2, s22);
    fu_output(f, fu_take(f, x, i, 1, "tk"));
    double iv3[4] = {0, 4, 5, 1};
    fu_host_tensor in3[2] = {make(FU_F32, 2, s25, xv), make(FU_I64, 2, s22, iv3)};
    expect_index_error("take", f, in3, "op 'take' -> 'tk': index 5 at position [1, 0] of 'ix'", "[0, 5)");
    free_all(in3, 2);
    fu_fusion_free(f);

    f = fu_fusion_new("iadd");
    x = fu_input(f, "x", FU_F32, 2, s25);
    i = fu_input(f, "ix", FU_I64, 1, s3);
    fu_tensor src = fu_input(f, "src", FU_F32, 2, (int64_t[]){3, 5});
    fu_output(f, fu_index_add(f, x, i, src, 0, "acc"));
    double iv4[3] = {1, -3, 0};
    fu_host_tensor in4[3] = {make(FU_F32, 2, s25, xv), make(FU_I64, 1, s3, iv4), make(FU_F32, 2, (int64_t[]){3, 5}, NULL)};
    expect_index_error("index_add", f, in4, "op 'index_add' -> 'acc': index -3 at position [1] of 'ix'", NULL);
    free_all(in4, 3);
    fu_fusion_free(f);

    f = fu_fusion_new("sadd");
    x = fu_input(f, "x", FU_F32, 2, s25);
    i = fu_input(f, "ix", FU_I64, 2, s21);
    src = fu_input(f, "src", FU_F32, 2, s21);
    fu_output(f, fu_scatter_add(f, x, i, src, 1, "sc"));
    double iv5[2] = {5, 0};
    fu_host_tensor in5[3] = {make(FU_F32, 2, s25, xv), make(FU_I64, 2, s21, iv5), make(FU_F32, 2, s21, NULL)};
    expect_index_error("scatter_add", f, in5, "op 'scatter_add' -> 'sc': index 5 at position [0, 0] of 'ix'", NULL);
    free_all(in5, 3);
    fu_fusion_free(f);

    f = fu_fusion_new("emb");
    x = fu_input(f, "wte", FU_F32, 2, s25);
    i = fu_input(f, "idx", FU_I64, 2, s22);
    fu_output(f, fu_embedding(f, x, i, -1, "tok"));
    double iv6[4] = {0, 1, 1, 2};
    fu_host_tensor in6[2] = {make(FU_F32, 2, s25, xv), make(FU_I64, 2, s22, iv6)};
    expect_index_error("embedding", f, in6, "op 'embedding' -> 'tok': index 2 at position [1, 1] of 'idx'",
                       "[0, 2)");
    free_all(in6, 2);
    fu_fusion_free(f);

    f = fu_fusion_new("embb");
    x = fu_input(f, "g", FU_F32, 3, (int64_t[]){2, 2, 5});
    i = fu_input(f, "idx", FU_I64, 2, s22);
    fu_output(f, fu_embedding_backward(f, x, i, 3, 0, "dw"));
    double iv7[4] = {0, 3, 1, 2};
    fu_host_tensor in7[2] = {make(FU_F32, 3, (int64_t[]){2, 2, 5}, NULL), make(FU_I64, 2, s22, iv7)};
    expect_index_error("embedding_backward", f, in7, "op 'embedding_backward' -> 'dw': index 3 at position [0, 1]",
                       "[0, 3)");
    free_all(in7, 2);
    fu_fusion_free(f);

    f = fu_fusion_new("ce");
    x = fu_input(f, "logits", FU_F32, 2, s25);
    i = fu_input(f, "target", FU_I64, 1, (int64_t[]){2});
    fu_output(f, fu_cross_entropy(f, x, i, FU_REDUCTION_MEAN, -100, 0.0, "loss"));
    fu_output(f, fu_cross_entropy_backward(f, x, i, fu_full(f, 0, NULL, 1.0, FU_F32, "one"), FU_REDUCTION_MEAN,
                                           -100, 0.0, "dlogits"));
    double iv8[2] = {-100, 40000};
    fu_host_tensor in8[2] = {make(FU_F32, 2, s25, xv), make(FU_I64, 1, (int64_t[]){2}, iv8)};
    expect_index_error("cross_entropy", f, in8,
                       "op 'cross_entropy' -> 'loss': index 40000 at position [1] of 'target' is out of range [0, 5)",
                       "ignore_index -100");
    free_all(in8, 2);
    fu_fusion_free(f);
}

/* ------------------------------------------------------------ mean, decomposed */

/* Runs f and its decomposition (fu_fusion_decompose, what the GPU path runs)
 * on the interpreter; both must give want (one output). */
static void expect_decomposed(const char *what, fu_fusion *f, fu_host_tensor *in, fu_dtype dt, int rank,
                              const int64_t *shape, const double *want)
{
    char name[128];
    fu_fusion *d = NULL;
    fu_error err;
    snprintf(name, sizeof name, "%s (interpreter)", what);
    run_expect(name, f, in, dt, rank, shape, want, 0);
    CHECK(fu_fusion_decompose(f, &d, &err) == FU_OK);
    if (!d) return;
    snprintf(name, sizeof name, "%s (decomposed)", what);
    run_expect(name, d, in, dt, rank, shape, want, 0);
    fu_fusion_free(d);
}

/* A decomposed f16/bf16 mean sums and divides in f32: in f16 a sum of 70000
 * ones overflows and the count 70000 itself is inf (the result was NaN); in
 * bf16 the sum 771 and the count 257 round differently (772 / 256 gave
 * 3.015625, not 3). */
static void test_mean_decomposed_low_precision(void)
{
    int64_t sh[2] = {2, 70000}, sb[2] = {2, 257}, s2[1] = {2}, s21[2] = {2, 1};
    int ax1[1] = {1};
    double w1[2] = {1, 1}, w3[2] = {3, 3};

    fu_fusion *f = fu_fusion_new("mean_f16");
    fu_tensor x = fu_input(f, "x", FU_F16, 2, sh);
    fu_output(f, fu_reduce(f, FU_OP_MEAN, x, 1, ax1, false, "m"));
    fu_host_tensor in[1] = {make(FU_F16, 2, sh, NULL)};
    for (int64_t i = 0; i < fu_host_tensor_numel(&in[0]); i++) fu_host_tensor_set(&in[0], i, 1.0);
    expect_decomposed("f16 mean of 70000 ones", f, in, FU_F16, 1, s2, w1);
    free_all(in, 1);
    fu_fusion_free(f);

    f = fu_fusion_new("mean_bf16");
    x = fu_input(f, "x", FU_BF16, 2, sb);
    fu_output(f, fu_reduce(f, FU_OP_MEAN, x, 1, ax1, true, "m"));
    in[0] = make(FU_BF16, 2, sb, NULL);
    for (int64_t i = 0; i < fu_host_tensor_numel(&in[0]); i++) fu_host_tensor_set(&in[0], i, 3.0);
    expect_decomposed("bf16 mean of 257 threes", f, in, FU_BF16, 2, s21, w3);
    free_all(in, 1);
    fu_fusion_free(f);
}

/* f32 and f64 means decompose as they always did: a sum and a division by the
 * count in their own dtype, no casts (the GPU kernels were measured so). */
static void test_mean_decomposed_f32_unchanged(void)
{
    static const char *const want[2] = {
        "fusion m\ninput x: f32[2, 3, 4]\n"
        "y.sum0 = sum(x, axes=[0, 2], keepdim=true)\n"
        "y.c1 = full(shape=[], value=8.0, dtype=f32)\n"
        "y = div(y.sum0, y.c1)\noutput y\n",
        "fusion m\ninput x: f64[2, 3, 4]\n"
        "y.sum0 = sum(x, axes=[0, 2], keepdim=true)\n"
        "y.c1 = full(shape=[], value=8.0, dtype=f64)\n"
        "y = div(y.sum0, y.c1)\noutput y\n",
    };
    fu_dtype dts[2] = {FU_F32, FU_F64};
    for (int k = 0; k < 2; k++) {
        int64_t sx[3] = {2, 3, 4};
        int ax[2] = {0, 2};
        fu_fusion *f = fu_fusion_new("m"), *d = NULL;
        fu_error err;
        fu_output(f, fu_reduce(f, FU_OP_MEAN, fu_input(f, "x", dts[k], 3, sx), 2, ax, true, "y"));
        CHECK(fu_fusion_decompose(f, &d, &err) == FU_OK);
        char *text = d ? fu_fusion_print(d) : NULL;
        CHECK(text && strcmp(text, want[k]) == 0);
        if (text && strcmp(text, want[k]) != 0) fprintf(stderr, "decomposed mean:\n%s", text);
        free(text);
        fu_fusion_free(d);
        fu_fusion_free(f);
    }
}

/* A cross entropy over no classes: rows all ignored lose 0 (the mean is 0 / 0), and a row
 * not ignored has no valid target: an index error, in the decomposition (what the GPU runs)
 * as in the interpreter. Its decomposition once built a max over the empty class axis and
 * did not plan. */
static void test_cross_entropy_no_classes(void)
{
    int64_t sx[2] = {3, 0}, st[1] = {3};
    double ignored[3] = {-100, -100, -100}, one_valid[3] = {-100, 0, -100};
    double zeros[3] = {0, 0, 0}, zero[1] = {0}, nan[1] = {NAN};
    const fu_reduction reds[3] = {FU_REDUCTION_NONE, FU_REDUCTION_SUM, FU_REDUCTION_MEAN};
    const double *want[3] = {zeros, zero, nan};
    for (int r = 0; r < 3; r++) {
        fu_fusion *f = fu_fusion_new("ce_no_classes"), *d = NULL;
        fu_tensor x = fu_input(f, "x", FU_F32, 2, sx), t = fu_input(f, "t", FU_I64, 1, st);
        fu_output(f, fu_cross_entropy(f, x, t, reds[r], -100, 0.1, "loss"));
        fu_host_tensor in[2] = {make(FU_F32, 2, sx, NULL), make(FU_I64, 1, st, ignored)};
        expect_decomposed("cross entropy over no classes, all ignored", f, in, FU_F32, r ? 0 : 1, st, want[r]);
        fu_host_tensor_free(&in[1]);
        in[1] = make(FU_I64, 1, st, one_valid);
        fu_host_tensor out[1];
        fu_error err;
        CHECK(run(f, in, out, &err) == FU_ERR_INDEX);
        CHECK(fu_fusion_decompose(f, &d, &err) == FU_OK);
        CHECK(d && fu_interp_run(d, in, out, &err) == FU_ERR_INDEX);
        fu_fusion_free(d);
        free_all(in, 2);
        fu_fusion_free(f);
    }
}

/* ------------------------------------------------------------ i64 saturation, shared */

/* fu_round_to_dtype(i64) clamps as i32 does (2^63 stands for INT64_MAX), and
 * fu_host_tensor_set stores through it: no undefined out-of-range conversion. */
static void test_i64_saturates_shared(void)
{
    CHECK(fu_round_to_dtype(1e30, FU_I64) == 0x1p63 && fu_round_to_dtype(-1e30, FU_I64) == -0x1p63);
    CHECK(fu_round_to_dtype(INFINITY, FU_I64) == 0x1p63 && fu_round_to_dtype(-INFINITY, FU_I64) == -0x1p63);
    CHECK(fu_round_to_dtype(NAN, FU_I64) == 0 && fu_round_to_dtype(-2.7, FU_I64) == -2);
    CHECK(fu_round_to_dtype(0x1p62 + 1024, FU_I64) == 0x1p62 + 1024); /* exact: the spacing there */
    int64_t s7[1] = {7};
    double v[7] = {1e30, -1e30, NAN, INFINITY, 0x1p63, -0x1p63, -2.7};
    fu_host_tensor t = make(FU_I64, 1, s7, v);
    const int64_t *d = t.data;
    CHECK(d[0] == INT64_MAX && d[1] == INT64_MIN && d[2] == 0 && d[3] == INT64_MAX);
    CHECK(d[4] == INT64_MAX && d[5] == INT64_MIN && d[6] == -2);
    fu_host_tensor_free(&t);

    /* In the interpreter an i64 intermediate holds the saturated value too. */
    int64_t s2[1] = {2};
    fu_fusion *f = fu_fusion_new("sat64");
    fu_tensor x = fu_input(f, "x", FU_F32, 1, s2);
    fu_output(f, fu_cast(f, fu_cast(f, x, FU_I64, "l"), FU_F64, "back"));
    double xv[2] = {1e30, -1e30}, want[2] = {0x1p63, -0x1p63};
    fu_host_tensor in[1] = {make(FU_F32, 1, s2, xv)};
    run_expect("f32 -> i64 -> f64 saturates", f, in, FU_F64, 1, s2, want, 0);
    free_all(in, 1);
    fu_fusion_free(f);
}


/* ------------------------------------------------------------ rounding to 16-bit floats */

/* The quantum-and-nearbyint form of rounding to `mant` mantissa bits (the interpreter's
 * before the bit form), as the oracle of fu_round_to_dtype's bf16 and f16. */
static double round_oracle(double v, int mant, int emin, double maxv)
{
    if (isnan(v) || isinf(v) || v == 0.0) return v;
    double a = fabs(v);
    int e;
    frexp(a, &e);
    int exp = e - 1 < emin ? emin : e - 1;
    double quantum = ldexp(1.0, exp - mant);
    double r = nearbyint(a / quantum) * quantum;
    if (r > maxv) r = a >= maxv + ldexp(1.0, (int)floor(log2(maxv)) - mant) / 2.0 ? INFINITY : maxv;
    return v < 0 ? -r : r;
}

/* fu_round_to_dtype to bf16 and f16 equals the oracle on random doubles of every exponent the
 * types reach and past them, on exact ties (to even) and one double either side of them, at
 * the largest finite value and the overflow halfway point, in the subnormals, and on the
 * specials; identical bits, the sign of zero included. */
static void test_round_16bit(void)
{
    static const struct { fu_dtype dt; int mant, emin, emax; double maxv; } types[] = {
        {FU_BF16, 7, -126, 127, 3.38953138925153547590470800371487866880e38},
        {FU_F16, 10, -14, 15, 65504.0},
    };
    unsigned long long state = 0x9e3779b97f4a7c15ull;
    int bad = 0;
    for (int t = 0; t < 2; t++) {
        const int mant = types[t].mant, emin = types[t].emin;
        const double maxv = types[t].maxv;
        for (int i = 0; i < 400000 && bad < 5; i++) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            const unsigned long long bits = state >> 11; /* 53 random bits */
            const int exp = emin - mant - 4 + (int)((state >> 3) % (unsigned)(types[t].emax - emin + mant + 10));
            double m = 1.0 + (double)(bits & ((1ull << 52) - 1)) * 0x1p-52; /* [1, 2) */
            double base = ldexp(m, exp);
            /* every 4th a tie: a quantum's midpoint, then one double either side */
            if (i % 4 == 0) {
                const int qexp = (exp < emin ? emin : exp) - mant;
                base = ldexp(floor(ldexp(base, -qexp)) + 0.5, qexp);
            }
            const double cands[3] = {base, nextafter(base, 0.0), nextafter(base, INFINITY)};
            for (int c = 0; c < 3; c++) {
                const double v = (bits >> 52) & 1 ? -cands[c] : cands[c];
                const double got = fu_round_to_dtype(v, types[t].dt), want = round_oracle(v, mant, emin, maxv);
                if (memcmp(&got, &want, sizeof got) != 0 && bad++ < 5)
                    fprintf(stderr, "round %s(%a): got %a, want %a\n", fu_dtype_name(types[t].dt), v, got, want);
            }
        }
        const double halfway = maxv + ldexp(1.0, (int)floor(log2(maxv)) - mant) / 2.0;
        const double edges[] = {maxv, nextafter(halfway, 0.0), halfway, nextafter(halfway, INFINITY),
                                ldexp(1.0, emin), nextafter(ldexp(1.0, emin), 0.0), ldexp(1.0, emin - mant),
                                ldexp(1.0, emin - mant - 1), ldexp(3.0, emin - mant - 1), ldexp(1.0, emin - mant - 2),
                                0x1p-1074, 1e300, 0.0, -0.0, INFINITY, -INFINITY};
        for (size_t k = 0; k < sizeof edges / sizeof edges[0]; k++)
            for (int sgn = 0; sgn < 2; sgn++) {
                const double v = sgn ? -edges[k] : edges[k];
                const double got = fu_round_to_dtype(v, types[t].dt), want = round_oracle(v, mant, emin, maxv);
                if (memcmp(&got, &want, sizeof got) != 0 && bad++ < 5)
                    fprintf(stderr, "round %s(%a): got %a, want %a\n", fu_dtype_name(types[t].dt), v, got, want);
            }
        CHECK(isnan(fu_round_to_dtype(NAN, types[t].dt)));
    }
    CHECK(bad == 0);
    CHECK(fu_round_to_dtype(1.0 + 0x1p-8, FU_BF16) == 1.0);               /* tie, to even */
    CHECK(fu_round_to_dtype(1.0 + 0x1p-8 + 0x1p-7, FU_BF16) == 1.0 + 0x1p-6); /* tie, up to even */
    CHECK(fu_round_to_dtype(0x1.ffp127, FU_BF16) == INFINITY);             /* at the halfway point */
}

/* ------------------------------------------------------------ rows on several threads */

/* The composites' rows over [R, C], above the size where the interpreter splits its row loops
 * over threads (ctest runs this with OMP_NUM_THREADS=4), give the bits that each row gives on
 * its own: cross entropy and its backward (reduction none, some rows ignored, label
 * smoothing), a log_softmax along the rows and a softmax down the columns (strided rows), and
 * primitives: a row sum, broadcast binaries, a select, a unary op and a permute. */
static fu_fusion *rows_fusion(int64_t R, int64_t C)
{
    int64_t sx[2] = {R, C}, st[1] = {R};
    fu_fusion *f = fu_fusion_new("rows");
    fu_tensor x = fu_input(f, "x", FU_BF16, 2, sx), t = fu_input(f, "t", FU_I64, 1, st);
    fu_tensor g = fu_input(f, "g", FU_BF16, 1, st);
    fu_output(f, fu_cross_entropy(f, x, t, FU_REDUCTION_NONE, -100, 0.1, "loss"));
    fu_output(f, fu_cross_entropy_backward(f, x, t, g, FU_REDUCTION_NONE, -100, 0.1, "dx"));
    fu_output(f, fu_log_softmax(f, x, 1, "ls"));
    fu_output(f, fu_softmax(f, x, 0, "sm0"));
    /* primitives: a row sum (each row one output's whole reduction), a broadcast difference, a
     * comparison, a unary op and a select */
    const int axis1[1] = {1};
    fu_tensor rs = fu_reduce(f, FU_OP_SUM, fu_binary(f, FU_OP_MUL, x, x, NULL), 1, axis1, true, "rs");
    fu_tensor d = fu_binary(f, FU_OP_SUB, x, rs, NULL);
    fu_output(f, fu_where(f, fu_binary(f, FU_OP_GT, x, d, NULL), fu_unary(f, FU_OP_EXP, d, NULL), d, "wd"));
    const int swap[2] = {1, 0};
    fu_output(f, fu_permute(f, x, swap, "xt")); /* a strided copy */
    return f;
}

static void test_parallel_rows(void)
{
    enum { R = 300, C = 400 };
    int64_t sx[2] = {R, C}, st[1] = {R}, s1[1] = {1}, sr[2] = {1, C};
    fu_fusion *f = rows_fusion(R, C), *one = rows_fusion(1, C);
    fu_host_tensor in[3] = {make(FU_BF16, 2, sx, NULL), make(FU_I64, 1, st, NULL), make(FU_BF16, 1, st, NULL)};
    unsigned long long state = 12345;
    for (int64_t i = 0; i < R * C; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        fu_host_tensor_set(&in[0], i, (double)(int64_t)(state >> 40) / (double)(1 << 21) - 4.0);
    }
    for (int64_t r = 0; r < R; r++) {
        fu_host_tensor_set(&in[1], r, r % 7 == 3 ? -100.0 : (double)(r * 37 % C));
        fu_host_tensor_set(&in[2], r, 0.5 + (double)(r % 5) / 8.0);
    }
    fu_host_tensor out[6];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    int bad = 0;
    for (int64_t r = 0; r < R && !bad; r++) { /* each row alone */
        fu_host_tensor rin[3] = {make(FU_BF16, 2, sr, NULL), make(FU_I64, 1, s1, NULL), make(FU_BF16, 1, s1, NULL)};
        for (int64_t c = 0; c < C; c++) fu_host_tensor_set(&rin[0], c, fu_host_tensor_get(&in[0], r * C + c));
        fu_host_tensor_set(&rin[1], 0, fu_host_tensor_get(&in[1], r));
        fu_host_tensor_set(&rin[2], 0, fu_host_tensor_get(&in[2], r));
        fu_host_tensor rout[6];
        if (run(one, rin, rout, &err) != FU_OK) {
            bad++;
            fprintf(stderr, "row %lld alone: %s\n", (long long)r, err.message);
            free_all(rin, 3);
            break;
        }
        bad += fu_host_tensor_get(&rout[0], 0) != fu_host_tensor_get(&out[0], r);
        for (int64_t c = 0; c < C; c++) {
            bad += fu_host_tensor_get(&rout[1], c) != fu_host_tensor_get(&out[1], r * C + c);
            bad += fu_host_tensor_get(&rout[2], c) != fu_host_tensor_get(&out[2], r * C + c);
            bad += fu_host_tensor_get(&rout[4], c) != fu_host_tensor_get(&out[4], r * C + c);
            bad += fu_host_tensor_get(&rout[5], c) != fu_host_tensor_get(&out[5], c * R + r);
        }
        if (bad) fprintf(stderr, "row %lld: the rows together differ from the row alone\n", (long long)r);
        free_all(rout, 6);
        free_all(rin, 3);
    }
    /* softmax down the columns: column c alone, as a row */
    int64_t scol[2] = {1, R};
    fu_fusion *col = fu_fusion_new("col");
    fu_output(col, fu_softmax(col, fu_input(col, "x", FU_BF16, 2, scol), 1, "sm"));
    for (int64_t c = 0; c < C && !bad; c += 7) {
        fu_host_tensor cin[1] = {make(FU_BF16, 2, scol, NULL)}, cout[1];
        for (int64_t r = 0; r < R; r++) fu_host_tensor_set(&cin[0], r, fu_host_tensor_get(&in[0], r * C + c));
        CHECK(run(col, cin, cout, &err) == FU_OK);
        for (int64_t r = 0; r < R; r++) bad += fu_host_tensor_get(&cout[0], r) != fu_host_tensor_get(&out[3], r * C + c);
        if (bad) fprintf(stderr, "column %lld: the softmax down the columns differs from the column alone\n", (long long)c);
        free_all(cout, 1);
        free_all(cin, 1);
    }
    CHECK(bad == 0);
    fu_fusion_free(col);
    free_all(out, 6);
    free_all(in, 3);
    fu_fusion_free(one);
    fu_fusion_free(f);
}

/* The embedding and its backward above the split size (4 threads): the forward's rows are the
 * weight's rows; the backward's row r is the sum, in index order and in double, of the grad rows
 * whose id is r, then rounded to bf16 (the padding row 0), as a direct loop computes it. */
static void test_parallel_embedding(void)
{
    enum { W = 300, D = 400, P = 700, PAD = 5 };
    int64_t sw[2] = {W, D}, sp[1] = {P}, sg[2] = {P, D};
    fu_fusion *f = fu_fusion_new("emb");
    fu_tensor w = fu_input(f, "w", FU_BF16, 2, sw), ids = fu_input(f, "ids", FU_I64, 1, sp);
    fu_tensor g = fu_input(f, "g", FU_BF16, 2, sg);
    fu_output(f, fu_embedding(f, w, ids, PAD, "e"));
    fu_output(f, fu_embedding_backward(f, g, ids, W, PAD, "dw"));
    fu_host_tensor in[3] = {make(FU_BF16, 2, sw, NULL), make(FU_I64, 1, sp, NULL), make(FU_BF16, 2, sg, NULL)};
    unsigned long long state = 777;
    for (int64_t i = 0; i < W * D; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        fu_host_tensor_set(&in[0], i, (double)(int64_t)(state >> 40) / (double)(1 << 20) - 8.0);
    }
    for (int64_t i = 0; i < P * D; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        fu_host_tensor_set(&in[2], i, (double)(int64_t)(state >> 40) / (double)(1 << 20) - 8.0);
    }
    for (int64_t i = 0; i < P; i++) fu_host_tensor_set(&in[1], i, (double)(i * i % 97 * 3 % W)); /* repeats; id 5 too */
    fu_host_tensor out[2];
    fu_error err;
    CHECK(run(f, in, out, &err) == FU_OK);
    double *want = calloc((size_t)W * D, sizeof *want);
    int bad = 0;
    for (int64_t i = 0; i < P; i++) {
        const int64_t id = (int64_t)fu_host_tensor_get(&in[1], i);
        for (int64_t c = 0; c < D; c++) {
            bad += fu_host_tensor_get(&out[0], i * D + c) != fu_host_tensor_get(&in[0], id * D + c);
            if (id != PAD) want[id * D + c] += fu_host_tensor_get(&in[2], i * D + c);
        }
    }
    for (int64_t i = 0; i < W * D; i++) bad += fu_host_tensor_get(&out[1], i) != fu_round_to_dtype(want[i], FU_BF16);
    CHECK(bad == 0);
    free(want);
    free_all(out, 2);
    free_all(in, 3);
    fu_fusion_free(f);
}

int main(void)
{
    test_binary_broadcast();
    test_int_ops();
    test_compare_logical();
    test_unary_math();
    test_where();
    test_cast();
    test_cast_saturates();
    test_broadcast_op();
    test_reductions();
    test_shape_ops();
    test_full_iota();
    test_gathers();
    test_scatters();
    test_small_composites();
    test_plumbing();
    test_input_errors();
    test_index_errors();
    test_mean_decomposed_low_precision();
    test_mean_decomposed_f32_unchanged();
    test_cross_entropy_no_classes();
    test_i64_saturates_shared();
    test_round_16bit();
    test_parallel_rows();
    test_parallel_embedding();
    return check_finish("test_interp_ops");
}
