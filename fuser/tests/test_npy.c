/* test_npy.c -- .npy reading and writing: round trips for every dtype, hand-
 * made files of every version and widened type, and every error path; and
 * the seeded random inputs (fu_random_inputs) that share src/io. */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fuser.h"
#include "test_util.h"

static char dir[256];
static char pathbuf[512];

static const char *tmp_path(const char *name)
{
    snprintf(pathbuf, sizeof pathbuf, "%s/%s", dir, name);
    return pathbuf;
}

static void write_bytes(const char *path, const void *data, size_t n)
{
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    if (!fp) return;
    CHECK(fwrite(data, 1, n, fp) == n);
    fclose(fp);
}

/* Builds a .npy file: magic, version, header length (2 or 4 bytes), header
 * padded with spaces and '\n' to `align` bytes (0: no padding, no newline),
 * then ndata bytes of data. Returns its size. */
static size_t make_npy(unsigned char *buf, int major, int minor, const char *header, size_t align,
                       const void *data, size_t ndata)
{
    size_t lenbytes = major == 1 ? 2 : 4;
    size_t pre = 8 + lenbytes, hl = strlen(header);
    size_t total = pre + hl + (align ? 1 : 0);
    if (align) total = (total + align - 1) / align * align;
    size_t hlen = total - pre;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = (unsigned char)minor;
    for (size_t i = 0; i < lenbytes; i++) buf[8 + i] = (unsigned char)(hlen >> (8 * i));
    memcpy(buf + pre, header, hl);
    if (align) {
        memset(buf + pre + hl, ' ', hlen - hl);
        buf[total - 1] = '\n';
    }
    if (ndata) memcpy(buf + total, data, ndata);
    return total + ndata;
}

/* ------------------------------------------------------------ round trips */

static void fill(fu_host_tensor *t)
{
    int64_t n = fu_host_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double v;
        switch (t->dtype) {
        case FU_BOOL: v = (double)(i % 3 == 0); break;
        case FU_I32: v = (double)((i * 7919) % 2001 - 1000) * 1000003.0; v = fmod(v, 2147483647.0); break;
        case FU_I64: v = (double)(i - 3) * 4.0e15; break; /* beyond 2^53 multiples of 4 are exact */
        default: v = (double)(i - 5) * 0.375 + (i % 2 ? 1.0 / 64.0 : 0.0); /* exact in bf16/f16 */
        }
        fu_host_tensor_set(t, i, v);
    }
}

static void round_trip(fu_dtype dtype, int rank, const int64_t *shape)
{
    fu_error err;
    fu_host_tensor t, back;
    CHECK(fu_host_tensor_alloc(&t, dtype, rank, shape, &err) == FU_OK);
    fill(&t);
    if (dtype == FU_I64 && fu_host_tensor_numel(&t) > 1) ((int64_t *)t.data)[1] = INT64_MIN + 7;
    const char *p = tmp_path("rt.npy");
    CHECK(fu_npy_write(p, &t, &err) == FU_OK);
    fu_status s = fu_npy_read(p, &back, &err);
    CHECK(s == FU_OK);
    if (s) {
        fprintf(stderr, "  %s\n", err.message);
        fu_host_tensor_free(&t);
        return;
    }
    fu_dtype want = dtype == FU_BF16 ? FU_F32 : dtype;
    CHECK(back.dtype == want);
    CHECK(back.rank == rank);
    for (int i = 0; i < rank && i < back.rank; i++) CHECK(back.shape[i] == shape[i]);
    int64_t n = fu_host_tensor_numel(&t);
    CHECK(fu_host_tensor_numel(&back) == n);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (dtype == FU_I64) bad += ((int64_t *)t.data)[i] != ((int64_t *)back.data)[i];
        else bad += fu_host_tensor_get(&t, i) != fu_host_tensor_get(&back, i);
    }
    CHECK(bad == 0);
    if (dtype != FU_BF16 && n > 0) CHECK(memcmp(t.data, back.data, fu_host_tensor_bytes(&t)) == 0);

    /* The file is a version 1.0 file with a 64-byte aligned header. */
    size_t len;
    unsigned char *raw = (unsigned char *)tu_read_file(p, &len);
    CHECK(raw != NULL);
    if (raw) {
        CHECK(memcmp(raw, "\x93NUMPY\x01\x00", 8) == 0);
        size_t hlen = raw[8] | (size_t)raw[9] << 8;
        CHECK((10 + hlen) % 64 == 0);
        CHECK(raw[10 + hlen - 1] == '\n');
        size_t elem = dtype == FU_BF16 ? 4 : fu_dtype_size(dtype);
        CHECK(len == 10 + hlen + (size_t)n * elem);
        free(raw);
    }
    fu_host_tensor_free(&t);
    fu_host_tensor_free(&back);
}

static void test_round_trips(void)
{
    int64_t s23[2] = {2, 3}, s7[1] = {7}, s0[2] = {0, 3}, s8[8] = {1, 2, 1, 3, 1, 1, 2, 1};
    for (int d = 0; d < FU_DTYPE_COUNT; d++) {
        round_trip((fu_dtype)d, 2, s23);
        round_trip((fu_dtype)d, 1, s7);
        round_trip((fu_dtype)d, 0, NULL); /* 0-d */
        round_trip((fu_dtype)d, 2, s0);   /* empty */
        round_trip((fu_dtype)d, 8, s8);   /* the maximum rank */
    }
}

/* The exact header text NumPy writes for a [2, 3] f32 array and a 0-d one. */
static void test_header_text(void)
{
    fu_error err;
    fu_host_tensor t;
    int64_t s23[2] = {2, 3}, s5[1] = {5};
    const char *p = tmp_path("hdr.npy");
    struct {
        fu_dtype dtype;
        int rank;
        const int64_t *shape;
        const char *text;
    } cases[] = {
        {FU_F32, 2, s23, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
        {FU_I64, 1, s5, "{'descr': '<i8', 'fortran_order': False, 'shape': (5,), }"},
        {FU_BOOL, 0, NULL, "{'descr': '|b1', 'fortran_order': False, 'shape': (), }"},
        {FU_BF16, 0, NULL, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }"},
        {FU_F16, 0, NULL, "{'descr': '<f2', 'fortran_order': False, 'shape': (), }"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        CHECK(fu_host_tensor_alloc(&t, cases[c].dtype, cases[c].rank, cases[c].shape, &err) == FU_OK);
        CHECK(fu_npy_write(p, &t, &err) == FU_OK);
        size_t len;
        unsigned char *raw = (unsigned char *)tu_read_file(p, &len);
        CHECK(raw && len > 10 + strlen(cases[c].text));
        if (raw) CHECK(memcmp(raw + 10, cases[c].text, strlen(cases[c].text)) == 0);
        free(raw);
        fu_host_tensor_free(&t);
    }
}

/* ------------------------------------------------------------ hand-made files */

static void expect_read(const unsigned char *buf, size_t n, fu_dtype dtype, int rank, const int64_t *shape,
                        const double *values)
{
    fu_error err;
    fu_host_tensor t;
    const char *p = tmp_path("in.npy");
    write_bytes(p, buf, n);
    fu_status s = fu_npy_read(p, &t, &err);
    CHECK(s == FU_OK);
    if (s) {
        fprintf(stderr, "  %s\n", err.message);
        return;
    }
    CHECK(t.dtype == dtype);
    CHECK(t.rank == rank);
    for (int i = 0; i < rank && i < t.rank; i++) CHECK(t.shape[i] == shape[i]);
    int64_t numel = fu_host_tensor_numel(&t);
    for (int64_t i = 0; i < numel; i++) CHECK(fu_host_tensor_get(&t, i) == values[i]);
    fu_host_tensor_free(&t);
}

static void test_versions(void)
{
    unsigned char buf[1024];
    float f[6] = {1.5f, -2.0f, 0.25f, 3.0f, -0.125f, 100.0f};
    double fv[6] = {1.5, -2.0, 0.25, 3.0, -0.125, 100.0};
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s6[1] = {6};
    /* 2.0: 4-byte header length. */
    size_t n = make_npy(buf, 2, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 64, f, sizeof f);
    expect_read(buf, n, FU_F32, 2, s23, fv);
    /* 3.0 (utf-8 header), keys in another order, double quotes, no trailing comma. */
    n = make_npy(buf, 3, 0, "{\"shape\": (3,2), \"descr\": \"<f4\", \"fortran_order\": False}", 64, f, sizeof f);
    expect_read(buf, n, FU_F32, 2, s32, fv);
    /* 1.0 with the old 16-byte alignment and Python 2 long suffixes. */
    n = make_npy(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6L,), }", 16, f, sizeof f);
    expect_read(buf, n, FU_F32, 1, s6, fv);
    /* No padding at all, and trailing bytes after the data (ignored). */
    unsigned char fx[sizeof f + 3];
    memcpy(fx, f, sizeof f);
    memcpy(fx + sizeof f, "xyz", 3);
    n = make_npy(buf, 1, 0, "{'descr':'<f4','fortran_order':False,'shape':(6,)}", 0, fx, sizeof fx);
    expect_read(buf, n, FU_F32, 1, s6, fv);
    /* f64, f16 */
    double d[2] = {0.1, -1e300};
    double dv[2] = {0.1, -1e300};
    int64_t s2[1] = {2};
    n = make_npy(buf, 1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 64, d, sizeof d);
    expect_read(buf, n, FU_F64, 1, s2, dv);
    unsigned char h[4] = {0x00, 0x3c, 0x00, 0xc0}; /* f16 1.0, -2.0 */
    double hv[2] = {1.0, -2.0};
    n = make_npy(buf, 1, 0, "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", 64, h, sizeof h);
    expect_read(buf, n, FU_F16, 1, s2, hv);
    /* a 0-d i8 and i4 */
    unsigned char i8[8] = {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    double m2 = -2.0;
    n = make_npy(buf, 1, 0, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", 64, i8, 8);
    expect_read(buf, n, FU_I64, 0, NULL, &m2);
    n = make_npy(buf, 1, 0, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }", 64, i8, 4);
    expect_read(buf, n, FU_I32, 0, NULL, &m2);
}

static void test_widened(void)
{
    unsigned char buf[1024];
    int64_t s4[1] = {4}, s2[1] = {2};
    unsigned char bytes[4] = {0, 1, 200, 255};
    double u1[4] = {0, 1, 200, 255}, i1[4] = {0, 1, -56, -1};
    size_t n = make_npy(buf, 1, 0, "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }", 64, bytes, 4);
    expect_read(buf, n, FU_I32, 1, s4, u1);
    n = make_npy(buf, 1, 0, "{'descr': '|i1', 'fortran_order': False, 'shape': (4,), }", 64, bytes, 4);
    expect_read(buf, n, FU_I32, 1, s4, i1);
    unsigned char shorts[4] = {0x34, 0x12, 0xff, 0xff};
    double i2[2] = {0x1234, -1}, u2[2] = {0x1234, 65535};
    n = make_npy(buf, 1, 0, "{'descr': '<i2', 'fortran_order': False, 'shape': (2,), }", 64, shorts, 4);
    expect_read(buf, n, FU_I32, 1, s2, i2);
    n = make_npy(buf, 1, 0, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }", 64, shorts, 4);
    expect_read(buf, n, FU_I32, 1, s2, u2);
    /* bool: any non-zero byte reads as 1 */
    unsigned char bools[4] = {0, 1, 0, 7};
    double bv[4] = {0, 1, 0, 1};
    n = make_npy(buf, 1, 0, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", 64, bools, 4);
    expect_read(buf, n, FU_BOOL, 1, s4, bv);
    fu_host_tensor t;
    fu_error err;
    CHECK(fu_npy_read(tmp_path("in.npy"), &t, &err) == FU_OK);
    CHECK(((uint8_t *)t.data)[3] == 1);
    fu_host_tensor_free(&t);
}

/* ------------------------------------------------------------ errors */

static void expect_error(const unsigned char *buf, size_t n, const char *needle)
{
    fu_error err;
    fu_host_tensor t;
    memset(&t, 0x5a, sizeof t);
    const char *p = tmp_path("bad.npy");
    write_bytes(p, buf, n);
    memset(&err, 0, sizeof err);
    fu_status s = fu_npy_read(p, &t, &err);
    CHECK(s == FU_ERR_IO);
    CHECK(err.status == FU_ERR_IO);
    CHECK_CONTAINS(err.message, needle);
    CHECK_CONTAINS(err.message, "bad.npy"); /* names the file */
    CHECK(t.data == NULL);
}

static void expect_header_error(const char *header, const char *needle)
{
    unsigned char buf[4096];
    float data[64] = {0};
    size_t n = make_npy(buf, 1, 0, header, 64, data, sizeof data);
    expect_error(buf, n, needle);
}

static void test_errors(void)
{
    fu_error err;
    fu_host_tensor t;
    unsigned char buf[4096];
    float f6[6] = {0};

    /* missing file, a directory */
    CHECK(fu_npy_read(tmp_path("does_not_exist.npy"), &t, &err) == FU_ERR_IO);
    CHECK_CONTAINS(err.message, "does_not_exist.npy");
    CHECK_CONTAINS(err.message, "cannot open");
    CHECK(fu_npy_read(dir, &t, &err) == FU_ERR_IO);
    CHECK_CONTAINS(err.message, "directory");

    /* magic, preamble, version */
    expect_error((const unsigned char *)"", 0, "bad magic");
    static const char zip[] = "PK\x03\x04 zip file, not npy";
    expect_error((const unsigned char *)zip, sizeof zip - 1, "bad magic");
    expect_error((const unsigned char *)"\x93NUMPY\x01", 7, "truncated");
    expect_error((const unsigned char *)"\x93NUMPY\x01\x00\x40", 9, "truncated");
    size_t n = make_npy(buf, 4, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 64, f6, sizeof f6);
    expect_error(buf, n, "unsupported .npy format version 4.0");
    n = make_npy(buf, 1, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 64, f6, sizeof f6);
    expect_error(buf, n, "version 1.1");
    n = make_npy(buf, 0, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 64, f6, sizeof f6);
    expect_error(buf, n, "version 0.0");

    /* header length beyond the file, or absurd (2.0 with 0xffffffff) */
    n = make_npy(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 64, NULL, 0);
    expect_error(buf, n - 20, "truncated .npy header");
    memcpy(buf, "\x93NUMPY\x02\x00\xff\xff\xff\xff{", 13);
    expect_error(buf, 13, "too large");

    /* header shapes */
    expect_header_error("[1, 2, 3]", "not a dict");
    expect_header_error("'descr'", "not a dict");
    expect_header_error("", "not a dict");
    expect_header_error("{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'");
    expect_header_error("{'shape': (2,), 'fortran_order': False}", "missing key 'descr'");
    expect_header_error("{'descr': '<f4', 'shape': (2,)}", "missing key 'fortran_order'");
    expect_header_error("{}", "missing key");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", "unexpected key 'extra'");
    expect_header_error("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", "appears twice");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)", "not closed");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk", "after the dict");
    expect_header_error("{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}", "malformed");
    expect_header_error("{'descr: '<f4'}", "malformed");
    expect_header_error("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "True or False");
    expect_header_error("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (2,)}", "True or False");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", "must be a tuple");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1)}", "non-negative");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2,, 3)}", "non-negative");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (2 3)}", "not closed");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "too large");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 0)}",
                        "too large");
    expect_header_error("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 1)}",
                        "more than 8 dimensions");
    expect_header_error("{'descr': 'a very long descr string that does not fit', 'fortran_order': False, 'shape': ()}",
                        "malformed");

    /* order, dtypes */
    expect_header_error("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", "fortran_order");
    expect_header_error("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }", "big-endian");
    expect_header_error("{'descr': '>i8', 'fortran_order': False, 'shape': (2,), }", "big-endian");
    expect_header_error("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", "unsupported dtype '<c8'");
    expect_header_error("{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }", "unsupported dtype");
    expect_header_error("{'descr': '<u8', 'fortran_order': False, 'shape': (2,), }", "unsupported dtype");
    expect_header_error("{'descr': '', 'fortran_order': False, 'shape': (2,), }", "unsupported dtype");
    expect_header_error("{'descr': 'f4', 'fortran_order': False, 'shape': (2,), }", "unsupported dtype");
    expect_header_error("{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }", "byte order");
    expect_header_error("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", "structured");

    /* data shorter than the shape says; a shape far beyond the file */
    n = make_npy(buf, 1, 0, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 64, f6, sizeof f6 - 1);
    expect_error(buf, n, "truncated");
    expect_error(buf, n, "needs 24 bytes, the file has 23");
    n = make_npy(buf, 1, 0, "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000, 1000000000), }", 64,
                 f6, sizeof f6);
    expect_error(buf, n, "truncated");

    /* writing: a directory that does not exist, a bad tensor */
    int64_t s2[1] = {2};
    CHECK(fu_host_tensor_alloc(&t, FU_F32, 1, s2, &err) == FU_OK);
    CHECK(fu_npy_write(tmp_path("no/such/dir/x.npy"), &t, &err) == FU_ERR_IO);
    CHECK_CONTAINS(err.message, "no/such/dir/x.npy");
    t.dtype = FU_DTYPE_COUNT;
    CHECK(fu_npy_write(tmp_path("x.npy"), &t, &err) == FU_ERR_ARG);
    t.dtype = FU_F32;
    fu_host_tensor_free(&t);
}

/* ------------------------------------------------------------ random inputs */

/* A float input's values are its stream's prefix whatever its size and however the fill is
 * split over threads (ctest runs this with OMP_NUM_THREADS=4): an input of 600001 elements
 * (two blocks of draws, each on several threads) begins with the 524289 of a smaller one
 * (one block and one pair more) and with the 7 of a tiny one (one thread); and its values are
 * the generator's of before the split (pinned). */
static void test_random_prefix(void)
{
    const int64_t sizes[3] = {600001, 524289, 7};
    fu_host_tensor in[3][1];
    fu_error err;
    for (int k = 0; k < 3; k++) {
        fu_fusion *f = fu_fusion_new("prefix");
        fu_output(f, fu_unary(f, FU_OP_NEG, fu_input(f, "x", FU_BF16, 1, &sizes[k]), "y"));
        CHECK(fu_random_inputs(f, 3, in[k], &err) == FU_OK);
        fu_fusion_free(f);
    }
    CHECK(memcmp(in[0][0].data, in[1][0].data, fu_host_tensor_bytes(&in[1][0])) == 0);
    CHECK(memcmp(in[0][0].data, in[2][0].data, fu_host_tensor_bytes(&in[2][0])) == 0);
    /* and the values themselves, at the start and across the first block's end: a change of
     * the generator changes every seeded run's inputs, so it must be deliberate */
    const double want[6] = {0.349609375, 0.0087890625, -1.2421875, -0.609375, -2.921875, 0.96484375};
    const int64_t at[6] = {0, 1, 2, 524287, 524288, 524289};
    for (int i = 0; i < 6; i++) CHECK(fu_host_tensor_get(&in[0][0], at[i]) == want[i]);
    for (int k = 0; k < 3; k++) fu_host_tensor_free(&in[k][0]);
}

/* fu_random_inputs (src/io/random.c) lives next to the .npy code. */
static void test_random_inputs(void)
{
    fu_error err;
    fu_fusion *f = fu_fusion_new("rnd");
    int64_t xs[2] = {64, 37}, ts[1] = {64}, ks[1] = {200}, hs[1] = {300};
    fu_tensor x = fu_input(f, "x", FU_F32, 2, xs);
    fu_tensor y = fu_input(f, "y", FU_F32, 2, xs);
    fu_tensor t = fu_input(f, "t", FU_I64, 1, ts);
    fu_tensor k = fu_input(f, "k", FU_I32, 1, ks);
    fu_tensor m = fu_input(f, "m", FU_BOOL, 1, ks);
    fu_tensor h = fu_input(f, "h", FU_F16, 1, hs);
    fu_tensor b = fu_input(f, "b", FU_BF16, 1, hs);
    fu_output(f, fu_cross_entropy(f, fu_binary(f, FU_OP_ADD, x, y, NULL), t, FU_REDUCTION_MEAN, -100, 0.0, "loss"));
    fu_output(f, fu_binary(f, FU_OP_ADD, fu_cast(f, k, FU_F32, NULL), fu_cast(f, m, FU_F32, NULL), "km"));
    fu_output(f, fu_binary(f, FU_OP_ADD, h, fu_cast(f, b, FU_F16, NULL), "hb"));
    fu_status s = fu_fusion_verify(f, &err);
    CHECK(s == FU_OK);
    if (s) {
        fprintf(stderr, "  %s\n", err.message);
        fu_fusion_free(f);
        return;
    }
    enum { NIN = 7 };
    CHECK(fu_fusion_num_inputs(f) == NIN);
    fu_host_tensor a[NIN], a2[NIN], c[NIN];
    CHECK(fu_random_inputs(f, 0, a, &err) == FU_OK);
    CHECK(fu_random_inputs(f, 0, a2, &err) == FU_OK);
    CHECK(fu_random_inputs(f, 1, c, &err) == FU_OK);
    for (int i = 0; i < NIN; i++) {
        fu_tensor in = fu_fusion_input(f, i);
        CHECK(a[i].dtype == fu_tensor_dtype(f, in));
        CHECK(a[i].rank == fu_tensor_rank(f, in));
        CHECK(fu_host_tensor_numel(&a[i]) == fu_tensor_numel(f, in));
        CHECK(memcmp(a[i].data, a2[i].data, fu_host_tensor_bytes(&a[i])) == 0); /* same seed */
        CHECK(memcmp(a[i].data, c[i].data, fu_host_tensor_bytes(&a[i])) != 0); /* other seed */
    }
    CHECK(memcmp(a[0].data, a[1].data, fu_host_tensor_bytes(&a[0])) != 0); /* separate streams */

    /* floats ~ normal(0, 1) */
    int64_t n = fu_host_tensor_numel(&a[0]);
    double sum = 0, sq = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = fu_host_tensor_get(&a[0], i);
        sum += v;
        sq += v * v;
    }
    double mean = sum / (double)n, var = sq / (double)n - mean * mean;
    CHECK(fabs(mean) < 0.1);
    CHECK(fabs(var - 1.0) < 0.1);
    for (int d = 5; d <= 6; d++) { /* f16, bf16: rounded, not all equal */
        double lo = 1e9, hi = -1e9;
        for (int64_t i = 0; i < fu_host_tensor_numel(&a[d]); i++) {
            double v = fu_host_tensor_get(&a[d], i);
            lo = fmin(lo, v);
            hi = fmax(hi, v);
        }
        CHECK(lo < -1.0 && hi > 1.0 && hi < 8.0 && lo > -8.0);
    }
    /* the index input: in [0, 37), spread over the range */
    int64_t tmin = INT64_MAX, tmax = INT64_MIN;
    for (int i = 0; i < 64; i++) {
        int64_t v = ((int64_t *)a[2].data)[i];
        tmin = v < tmin ? v : tmin;
        tmax = v > tmax ? v : tmax;
    }
    CHECK(fu_fusion_index_bound(f, t) == 37);
    CHECK(tmin >= 0 && tmax < 37 && tmax - tmin > 20);
    /* other ints in [0, 10), each value seen; bools 0/1, both seen */
    int seen[10] = {0}, bseen[2] = {0}, bad = 0;
    for (int i = 0; i < 200; i++) {
        int32_t v = ((int32_t *)a[3].data)[i];
        if (v < 0 || v >= 10) bad++;
        else seen[v]++;
        uint8_t bv = ((uint8_t *)a[4].data)[i];
        if (bv > 1) bad++;
        else bseen[bv]++;
    }
    CHECK(bad == 0);
    for (int v = 0; v < 10; v++) CHECK(seen[v] > 0);
    CHECK(bseen[0] > 50 && bseen[1] > 50);
    for (int i = 0; i < NIN; i++) {
        fu_host_tensor_free(&a[i]);
        fu_host_tensor_free(&a2[i]);
        fu_host_tensor_free(&c[i]);
    }
    fu_fusion_free(f);
}

static void cleanup(void)
{
    const char *names[] = {"rt.npy", "hdr.npy", "in.npy", "bad.npy", "x.npy"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) unlink(tmp_path(names[i]));
    CHECK(rmdir(dir) == 0);
}

int main(void)
{
    if (!tu_make_temp_dir(dir, sizeof dir, "test_npy")) return 1;
    test_round_trips();
    test_header_text();
    test_versions();
    test_widened();
    test_errors();
    test_random_inputs();
    test_random_prefix();
    cleanup();
    return check_finish("test_npy");
}
