/*
 * util.h -- small helpers shared by the gate's programs: string copies, whole
 * file reads and error messages written into a caller's buffer.
 * Nothing here keeps state between calls.
 */
#ifndef GATE_UTIL_H
#define GATE_UTIL_H

#include <stddef.h>

/* A malloc'd copy of s (NULL when s is NULL or memory ran out). */
char *gate_strdup(const char *s);

/* Reads the whole file at path into a malloc'd, NUL-terminated buffer; a
 * gzip-compressed file is inflated (zlib), a plain one read as it is.
 * Returns NULL and writes "PATH: why" into err on failure. */
char *gate_read_file(const char *path, size_t *len, char *err, size_t errlen);

/* Writes len bytes of text to path, gzip-compressed (zlib, level 9). Returns
 * 0, or -1 with "PATH: why" in err. */
int gate_write_file_gz(const char *path, const char *text, size_t len, char *err, size_t errlen);

/* snprintf into err (when err is not NULL); always returns -1, so that
 * `return gate_errf(err, errlen, ...)` reports and fails in one line. */
int gate_errf(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Median of n values (n > 0); x is left untouched. NAN when n == 0 or memory
 * ran out. */
double gate_median(const double *x, size_t n);

#endif
