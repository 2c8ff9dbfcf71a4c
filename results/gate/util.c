/* util.c -- see util.h. */
#define _POSIX_C_SOURCE 200809L

#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>
#include <zlib.h>

#define GATE_MAX_FILE_BYTES ((size_t)256 << 20)

char *gate_strdup(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

int gate_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

char *gate_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    /* gzread reads a plain file as it is and a gzip one inflated. Regular
     * files only (a FIFO would hang, /dev/zero would never end), and at most
     * GATE_MAX_FILE_BYTES once inflated (a nightly run is about 1 MB). */
    struct stat st;
    if (stat(path, &st) != 0) {
        gate_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        gate_errf(err, errlen, "%s: not a regular file", path);
        return NULL;
    }
    gzFile f = gzopen(path, "rb");
    if (!f) {
        gate_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        gzclose(f);
        gate_errf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    for (;;) {
        if (n >= GATE_MAX_FILE_BYTES) {
            free(buf);
            gzclose(f);
            gate_errf(err, errlen, "%s: larger than %d MiB (inflated): not a run file", path,
                      (int)(GATE_MAX_FILE_BYTES >> 20));
            return NULL;
        }
        if (n + 1 >= cap) {
            char *nb = cap < ((size_t)1 << 40) ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                gzclose(f);
                gate_errf(err, errlen, "%s: out of memory", path);
                return NULL;
            }
            buf = nb;
            cap *= 2;
        }
        size_t want = cap - 1 - n;
        if (want > (1u << 30)) want = 1u << 30;
        int got = gzread(f, buf + n, (unsigned)want);
        if (got < 0) {
            int zerr = 0;
            const char *msg = gzerror(f, &zerr);
            gate_errf(err, errlen, "%s: read error%s: %s", path,
                      zerr == Z_ERRNO ? "" : " (a broken compressed file)",
                      zerr == Z_ERRNO ? strerror(errno) : msg);
            free(buf);
            gzclose(f);
            return NULL;
        }
        if (got == 0) break;
        n += (size_t)got;
    }
    gzclose(f);
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

int gate_write_file_gz(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
    gzFile f = gzopen(path, "wb9");
    if (!f) return gate_errf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    size_t done = 0;
    while (done < len) {
        size_t chunk = len - done > (1u << 30) ? (1u << 30) : len - done;
        int put = gzwrite(f, text + done, (unsigned)chunk);
        if (put <= 0) {
            gzclose(f);
            return gate_errf(err, errlen, "%s: write error", path);
        }
        done += (size_t)put;
    }
    if (gzclose(f) != Z_OK) return gate_errf(err, errlen, "%s: write error", path);
    return 0;
}

static int gate_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double gate_median(const double *x, size_t n)
{
    if (n == 0) return NAN;
    double *s = malloc(n * sizeof *s);
    if (!s) return NAN;
    memcpy(s, x, n * sizeof *s);
    qsort(s, n, sizeof *s, gate_cmp_double);
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}
