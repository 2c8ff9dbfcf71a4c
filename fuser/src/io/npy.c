/*
 * npy.c -- NumPy .npy files (format versions 1.0, 2.0 and 3.0), little
 * endian, C order.
 *
 * Layout: the magic "\x93NUMPY", a major and a minor version byte, the header
 * length (uint16 for 1.0, uint32 for 2.0/3.0, little endian), the header (a
 * Python dict literal such as {'descr': '<f4', 'fortran_order': False,
 * 'shape': (3, 4), } padded with spaces and a newline), then the raw data.
 *
 * Reading accepts '<f8' '<f4' '<f2' '<i8' '<i4' '|b1' natively and widens
 * '|u1' '|i1' '<i2' '<u2' to i32 (one-byte types accept any byte-order mark).
 * The header is parsed by a small strict parser (exactly the keys descr,
 * fortran_order and shape; bounded length; overflow-checked sizes), and the
 * file size is checked against the shape before anything is allocated, so a
 * malicious header can neither crash the reader nor make it allocate more
 * than the file holds. Bytes after the data are ignored, as NumPy does.
 *
 * Writing produces version 1.0 files (the header of a rank <= 8 array always
 * fits) in f64, f32, f16, i32, i64 and bool; bf16 is written as '<f4' since
 * NumPy has no bf16. A failed write removes the partial file.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ir.h"
#include "outset.h"

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_MAX_HEADER (1u << 20) /* NumPy itself refuses far smaller headers by default */
#define NPY_CHUNK 8192            /* elements per conversion chunk */

/* ------------------------------------------------------------ dtypes */

typedef enum npy_conv {
    CONV_RAW,   /* bytes are the host tensor's (after byte order) */
    CONV_BOOL,  /* one byte, normalised to 0/1 */
    CONV_WIDEN, /* small int widened to i32 */
} npy_conv;

typedef struct npy_type {
    char kind;     /* 'f', 'i', 'u', 'b' */
    int itemsize;  /* bytes in the file */
    fu_dtype dtype; /* host dtype it reads into */
    npy_conv conv;
} npy_type;

static const npy_type npy_types[] = {
    {'f', 8, FU_F64, CONV_RAW},  {'f', 4, FU_F32, CONV_RAW},  {'f', 2, FU_F16, CONV_RAW},
    {'i', 8, FU_I64, CONV_RAW},  {'i', 4, FU_I32, CONV_RAW},  {'b', 1, FU_BOOL, CONV_BOOL},
    {'u', 1, FU_I32, CONV_WIDEN}, {'i', 1, FU_I32, CONV_WIDEN}, {'i', 2, FU_I32, CONV_WIDEN},
    {'u', 2, FU_I32, CONV_WIDEN},
};
#define NPY_SUPPORTED "<f8 <f4 <f2 <i8 <i4 <i2 <u2 |i1 |u1 |b1"

static bool host_is_little(void)
{
    uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void swap_bytes(void *data, size_t n, size_t size)
{
    unsigned char *p = data;
    for (size_t i = 0; i < n; i++, p += size)
        for (size_t a = 0, b = size - 1; a < b; a++, b--) {
            unsigned char t = p[a];
            p[a] = p[b];
            p[b] = t;
        }
}

/* Maps a descr string to a type; fills err on failure. */
static fu_status lookup_descr(const char *path, const char *descr, const npy_type **out, fu_error *err)
{
    size_t len = strlen(descr);
    char order = descr[0];
    char kind = len >= 2 ? descr[1] : '\0';
    int size = 0;
    if (len == 3 && descr[2] >= '1' && descr[2] <= '9') size = descr[2] - '0';
    const npy_type *t = NULL;
    for (size_t i = 0; size && i < sizeof npy_types / sizeof npy_types[0]; i++)
        if (npy_types[i].kind == kind && npy_types[i].itemsize == size) t = &npy_types[i];
    bool order_known = order == '<' || order == '>' || order == '|' || order == '=';
    if (!t || !order_known)
        return fu_error_set(err, FU_ERR_IO, "%s: unsupported dtype '%s' (supported: " NPY_SUPPORTED ")",
                            path, descr);
    if (size > 1 && order == '>')
        return fu_error_set(err, FU_ERR_IO, "%s: big-endian dtype '%s' is not supported", path, descr);
    if (size > 1 && order != '<')
        return fu_error_set(err, FU_ERR_IO, "%s: dtype '%s' has no explicit little-endian byte order",
                            path, descr);
    *out = t;
    return FU_OK;
}

/* ------------------------------------------------------------ header parser */

typedef struct npy_header {
    char descr[32];
    bool fortran_order;
    int rank;
    int64_t shape[FU_MAX_RANK];
    const npy_type *type;
    int64_t numel;
    size_t data_bytes;
} npy_header;

typedef struct hparser {
    const char *p, *end;
    const char *path;
    fu_error *err;
} hparser;

static fu_status hfail(hparser *h, const char *what)
{
    return fu_error_set(h->err, FU_ERR_IO, "%s: malformed .npy header: %s", h->path, what);
}

static void hskip_ws(hparser *h)
{
    while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r')) h->p++;
}

static bool haccept(hparser *h, char c)
{
    hskip_ws(h);
    if (h->p < h->end && *h->p == c) {
        h->p++;
        return true;
    }
    return false;
}

static bool hpeek(hparser *h, char c)
{
    hskip_ws(h);
    return h->p < h->end && *h->p == c;
}

/* A quoted string without escapes into buf (cap bytes with the NUL). */
static fu_status hstring(hparser *h, char *buf, size_t cap, const char *what)
{
    hskip_ws(h);
    if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) return hfail(h, what);
    char q = *h->p++;
    size_t n = 0;
    while (h->p < h->end && *h->p != q) {
        if (*h->p == '\\' || n + 1 >= cap) return hfail(h, what);
        buf[n++] = *h->p++;
    }
    if (h->p >= h->end) return hfail(h, "unterminated string");
    h->p++;
    buf[n] = '\0';
    return FU_OK;
}

static bool hword(hparser *h, const char *w)
{
    hskip_ws(h);
    size_t n = strlen(w);
    if ((size_t)(h->end - h->p) < n || memcmp(h->p, w, n) != 0) return false;
    const char *after = h->p + n;
    if (after < h->end && ((*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') ||
                           (*after >= '0' && *after <= '9') || *after == '_'))
        return false;
    h->p = after;
    return true;
}

static fu_status hbool(hparser *h, bool *out)
{
    if (hword(h, "True")) *out = true;
    else if (hword(h, "False")) *out = false;
    else return hfail(h, "'fortran_order' must be True or False");
    return FU_OK;
}

/* A non-negative decimal integer (Python 2 files may append 'L'). */
static fu_status hint(hparser *h, int64_t *out)
{
    hskip_ws(h);
    if (h->p >= h->end || *h->p < '0' || *h->p > '9') return hfail(h, "shape entries must be non-negative integers");
    int64_t v = 0;
    while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
        int d = *h->p++ - '0';
        if (v > (INT64_MAX - d) / 10) return hfail(h, "shape entry too large");
        v = v * 10 + d;
    }
    if (h->p < h->end && (*h->p == 'L' || *h->p == 'l')) h->p++;
    *out = v;
    return FU_OK;
}

static fu_status hshape(hparser *h, npy_header *hd)
{
    if (!haccept(h, '(')) return hfail(h, "'shape' must be a tuple");
    hd->rank = 0;
    while (!hpeek(h, ')')) {
        int64_t v = 0;
        fu_status s = hint(h, &v);
        if (s) return s;
        if (hd->rank >= FU_MAX_RANK)
            return fu_error_set(h->err, FU_ERR_IO, "%s: shape has more than %d dimensions (the maximum rank)",
                                h->path, FU_MAX_RANK);
        hd->shape[hd->rank++] = v;
        if (!haccept(h, ',')) break;
    }
    if (!haccept(h, ')')) return hfail(h, "'shape' tuple is not closed");
    return FU_OK;
}

static fu_status hentry(hparser *h, npy_header *hd, unsigned *seen)
{
    char key[32];
    fu_status s = hstring(h, key, sizeof key, "expected a quoted key");
    if (s) return s;
    if (!haccept(h, ':')) return hfail(h, "expected ':' after a key");
    unsigned bit;
    if (strcmp(key, "descr") == 0) {
        bit = 1;
        if (hpeek(h, '[') || hpeek(h, '('))
            return fu_error_set(h->err, FU_ERR_IO, "%s: structured dtypes are not supported", h->path);
        s = hstring(h, hd->descr, sizeof hd->descr, "'descr' must be a short string");
    } else if (strcmp(key, "fortran_order") == 0) {
        bit = 2;
        s = hbool(h, &hd->fortran_order);
    } else if (strcmp(key, "shape") == 0) {
        bit = 4;
        s = hshape(h, hd);
    } else {
        return fu_error_set(h->err, FU_ERR_IO, "%s: malformed .npy header: unexpected key '%s'", h->path, key);
    }
    if (s) return s;
    if (*seen & bit)
        return fu_error_set(h->err, FU_ERR_IO, "%s: malformed .npy header: key '%s' appears twice", h->path, key);
    *seen |= bit;
    return FU_OK;
}

static fu_status parse_dict(hparser *h, npy_header *hd)
{
    if (!haccept(h, '{')) return hfail(h, "not a dict");
    unsigned seen = 0;
    while (!hpeek(h, '}')) {
        fu_status s = hentry(h, hd, &seen);
        if (s) return s;
        if (!haccept(h, ',')) break;
    }
    if (!haccept(h, '}')) return hfail(h, "dict is not closed");
    hskip_ws(h);
    if (h->p != h->end) return hfail(h, "unexpected text after the dict");
    if (seen != 7)
        return fu_error_set(h->err, FU_ERR_IO, "%s: malformed .npy header: missing key '%s'", h->path,
                            !(seen & 1) ? "descr" : !(seen & 2) ? "fortran_order" : "shape");
    return FU_OK;
}

/* Checks the parsed header and computes the element count and data size. */
static fu_status check_header(const char *path, npy_header *hd, fu_error *err)
{
    if (hd->fortran_order)
        return fu_error_set(err, FU_ERR_IO, "%s: fortran_order (column-major) arrays are not supported", path);
    fu_status s = lookup_descr(path, hd->descr, &hd->type, err);
    if (s) return s;
    /* The product of the non-zero extents must fit, even when another extent
     * is zero, so that every later prefix product of the shape is defined. */
    int64_t n = 1;
    bool empty = false;
    for (int i = 0; i < hd->rank; i++) {
        int64_t d = hd->shape[i];
        if (d == 0) { empty = true; continue; }
        if (n > INT64_MAX / d || (uint64_t)(n * d) > (uint64_t)(SIZE_MAX / 8))
            return fu_error_set(err, FU_ERR_IO, "%s: shape is too large", path);
        n *= d;
    }
    if (empty) n = 0;
    size_t isz = (size_t)hd->type->itemsize;
    hd->numel = n;
    hd->data_bytes = (size_t)n * isz;
    return FU_OK;
}

static fu_status read_header(FILE *fp, const char *path, npy_header *hd, long long *data_offset, fu_error *err)
{
    unsigned char pre[12];
    size_t got = fread(pre, 1, 8, fp);
    if (got < NPY_MAGIC_LEN || memcmp(pre, NPY_MAGIC, NPY_MAGIC_LEN) != 0)
        return fu_error_set(err, FU_ERR_IO, "%s: not a .npy file (bad magic)", path);
    if (got < 8)
        return fu_error_set(err, FU_ERR_IO, "%s: truncated .npy preamble", path);
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0)
        return fu_error_set(err, FU_ERR_IO, "%s: unsupported .npy format version %d.%d (1.0, 2.0, 3.0 are)",
                            path, major, minor);
    size_t lenbytes = major == 1 ? 2 : 4;
    if (fread(pre + 8, 1, lenbytes, fp) != lenbytes)
        return fu_error_set(err, FU_ERR_IO, "%s: truncated .npy preamble", path);
    uint32_t hlen = (uint32_t)pre[8] | (uint32_t)pre[9] << 8;
    if (lenbytes == 4) hlen |= (uint32_t)pre[10] << 16 | (uint32_t)pre[11] << 24;
    if (hlen > NPY_MAX_HEADER)
        return fu_error_set(err, FU_ERR_IO, "%s: .npy header of %u bytes is too large", path, (unsigned)hlen);
    char *text = fu_malloc(hlen + 1);
    if (!text) return fu_error_set(err, FU_ERR_NOMEM, "%s: out of memory reading the header", path);
    fu_status s = FU_OK;
    if (fread(text, 1, hlen, fp) != hlen) {
        s = fu_error_set(err, FU_ERR_IO, "%s: truncated .npy header", path);
    } else {
        memset(hd, 0, sizeof *hd);
        hparser h = {text, text + hlen, path, err};
        s = parse_dict(&h, hd);
        if (!s) s = check_header(path, hd, err);
    }
    fu_free(text);
    *data_offset = (long long)(8 + lenbytes + hlen);
    return s;
}

/* ------------------------------------------------------------ data */

static fu_status truncated(const char *path, const npy_header *hd, long long have, fu_error *err)
{
    char sbuf[256];
    return fu_error_set(err, FU_ERR_IO, "%s: truncated .npy data: shape %s of '%s' needs %zu bytes, the file has %lld",
                        path, fu_shape_str(hd->rank, hd->shape, sbuf, sizeof sbuf), hd->descr,
                        hd->data_bytes, have);
}

static int32_t widen(const unsigned char *p, const npy_type *t)
{
    if (t->itemsize == 1) return t->kind == 'u' ? (int32_t)p[0] : (int32_t)(int8_t)p[0];
    uint16_t u = (uint16_t)(p[0] | p[1] << 8);
    return t->kind == 'u' ? (int32_t)u : (int32_t)(int16_t)u;
}

/* Converts raw little-endian file bytes into the host tensor's layout. */
static void convert_data(const npy_header *hd, unsigned char *raw, fu_host_tensor *out)
{
    size_t n = (size_t)hd->numel;
    const npy_type *t = hd->type;
    if (t->conv == CONV_RAW) {
        if (!host_is_little()) swap_bytes(raw, n, (size_t)t->itemsize);
        if ((void *)raw != out->data) memcpy(out->data, raw, hd->data_bytes);
    } else if (t->conv == CONV_BOOL) {
        uint8_t *d = out->data;
        for (size_t i = 0; i < n; i++) d[i] = raw[i] != 0;
    } else {
        int32_t *d = out->data;
        for (size_t i = 0; i < n; i++) d[i] = widen(raw + i * (size_t)t->itemsize, t);
    }
}

static fu_status read_data(FILE *fp, const char *path, const npy_header *hd, long long offset,
                           fu_host_tensor *out, fu_error *err)
{
    struct stat st;
    if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode)) {
        long long have = (long long)st.st_size - offset;
        if (have < 0) have = 0;
        if ((unsigned long long)have < (unsigned long long)hd->data_bytes) return truncated(path, hd, have, err);
    }
    fu_status s = fu_host_tensor_alloc(out, hd->type->dtype, hd->rank, hd->shape, err);
    if (s) return s;
    /* Raw types read straight into the tensor; the others go through a buffer. */
    unsigned char *raw = out->data;
    if (hd->type->conv != CONV_RAW) {
        raw = fu_malloc(hd->data_bytes);
        if (!raw) {
            fu_host_tensor_free(out);
            return fu_error_set(err, FU_ERR_NOMEM, "%s: out of memory reading %zu bytes", path, hd->data_bytes);
        }
    }
    size_t got = hd->data_bytes ? fread(raw, 1, hd->data_bytes, fp) : 0;
    if (got != hd->data_bytes) {
        s = ferror(fp) ? fu_error_set(err, FU_ERR_IO, "%s: read error: %s", path, strerror(errno))
                       : truncated(path, hd, (long long)got, err);
    } else {
        convert_data(hd, raw, out);
    }
    if ((void *)raw != out->data) fu_free(raw);
    if (s) fu_host_tensor_free(out);
    return s;
}

fu_status fu_npy_read(const char *path, fu_host_tensor *out, fu_error *err)
{
    if (!path || !out) return fu_error_set(err, FU_ERR_ARG, "fu_npy_read: NULL argument");
    memset(out, 0, sizeof *out);
    FILE *fp = fopen(path, "rb");
    if (!fp) return fu_error_set(err, FU_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(fp);
        return fu_error_set(err, FU_ERR_IO, "%s: is a directory, not a .npy file", path);
    }
    npy_header hd;
    long long offset = 0;
    fu_status s = read_header(fp, path, &hd, &offset, err);
    if (!s) s = read_data(fp, path, &hd, offset, out, err);
    fclose(fp);
    return s;
}

/* ------------------------------------------------------------ writing */

static const char *write_descr(fu_dtype t)
{
    switch (t) {
    case FU_F64: return "<f8";
    case FU_F32: return "<f4";
    case FU_BF16: return "<f4";
    case FU_F16: return "<f2";
    case FU_I32: return "<i4";
    case FU_I64: return "<i8";
    case FU_BOOL: return "|b1";
    default: return NULL;
    }
}

/* The preamble and the padded header; returns its length (a multiple of 64). */
static size_t build_header(const fu_host_tensor *t, char *buf, size_t cap)
{
    char shape[FU_MAX_RANK * 24 + 4];
    size_t k = 0;
    shape[k++] = '(';
    for (int i = 0; i < t->rank; i++)
        k += (size_t)snprintf(shape + k, sizeof shape - k, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
    if (t->rank == 1) shape[k++] = ',';
    shape[k++] = ')';
    shape[k] = '\0';
    int n = snprintf(buf + 10, cap - 10, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                     write_descr(t->dtype), shape);
    size_t total = 10 + (size_t)n + 1;
    size_t padded = (total + 63) / 64 * 64;
    memset(buf + 10 + n, ' ', padded - total);
    buf[padded - 1] = '\n';
    memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
    buf[6] = 1;
    buf[7] = 0;
    size_t hlen = padded - 10;
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
    return padded;
}

/* Element i in the file's little-endian layout into dst. */
static size_t encode_element(const fu_host_tensor *t, int64_t i, unsigned char *dst)
{
    size_t size = fu_dtype_size(t->dtype);
    if (t->dtype == FU_BF16) {
        float f = fu_bf16_to_f32(((const uint16_t *)t->data)[i]);
        memcpy(dst, &f, 4);
        size = 4;
    } else if (t->dtype == FU_BOOL) {
        dst[0] = ((const uint8_t *)t->data)[i] != 0;
        return 1;
    } else {
        memcpy(dst, (const unsigned char *)t->data + (size_t)i * size, size);
    }
    if (!host_is_little()) swap_bytes(dst, 1, size);
    return size;
}

static bool write_data(FILE *fp, const fu_host_tensor *t)
{
    int64_t n = fu_host_tensor_numel(t);
    if (n == 0) return true;
    bool direct = host_is_little() && t->dtype != FU_BF16 && t->dtype != FU_BOOL;
    if (direct) return fwrite(t->data, 1, fu_host_tensor_bytes(t), fp) == fu_host_tensor_bytes(t);
    unsigned char buf[NPY_CHUNK * 8];
    for (int64_t i = 0; i < n;) {
        size_t k = 0;
        for (int c = 0; c < NPY_CHUNK && i < n; c++, i++) k += encode_element(t, i, buf + k);
        if (fwrite(buf, 1, k, fp) != k) return false;
    }
    return true;
}

static fu_status check_writable(const char *path, const fu_host_tensor *t, fu_error *err)
{
    if (!path || !t) return fu_error_set(err, FU_ERR_ARG, "fu_npy_write: NULL argument");
    if (!write_descr(t->dtype) || t->rank < 0 || t->rank > FU_MAX_RANK)
        return fu_error_set(err, FU_ERR_ARG, "%s: cannot write a tensor of dtype %d and rank %d", path,
                            (int)t->dtype, t->rank);
    for (int i = 0; i < t->rank; i++)
        if (t->shape[i] < 0)
            return fu_error_set(err, FU_ERR_ARG, "%s: negative extent %lld", path, (long long)t->shape[i]);
    if (!t->data && fu_host_tensor_numel(t) > 0)
        return fu_error_set(err, FU_ERR_ARG, "%s: tensor has no data", path);
    return FU_OK;
}

fu_status fu_npy_write_many(int n, const char *const *paths, const fu_host_tensor *const *tensors, fu_error *err)
{
    for (int i = 0; i < n; i++) {
        fu_status s = check_writable(paths[i], tensors[i], err);
        if (s) return s;
    }
    fu_outset set;
    fu_outset_init(&set);
    fu_status s = FU_OK;
    char why[1024];
    for (int i = 0; i < n && !s; i++) {
        FILE *fp = fu_outset_open(&set, paths[i], why, sizeof why);
        if (!fp) {
            s = fu_error_set(err, FU_ERR_IO, "%s", why);
            break;
        }
        char header[512];
        size_t hlen = build_header(tensors[i], header, sizeof header);
        if (fwrite(header, 1, hlen, fp) != hlen || !write_data(fp, tensors[i]))
            s = fu_error_set(err, FU_ERR_IO, "%s: write failed: %s", paths[i], strerror(errno));
    }
    if (!s && fu_outset_commit(&set, why, sizeof why)) s = fu_error_set(err, FU_ERR_IO, "%s", why);
    fu_outset_free(&set); /* removes the temporaries of a failed write */
    return s;
}

fu_status fu_npy_write(const char *path, const fu_host_tensor *t, fu_error *err)
{
    return fu_npy_write_many(1, &path, &t, err);
}
