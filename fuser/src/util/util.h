/*
 * util.h -- small shared helpers: the one allocation path, a growable string
 * buffer (printers and code generation build text with it), and an internal
 * assert that prints file:line.
 */
#ifndef FUSER_UTIL_H
#define FUSER_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* All allocation goes through these; they return NULL on failure like malloc. */
void *fu_malloc(size_t n);
void *fu_calloc(size_t count, size_t size);
void *fu_realloc(void *p, size_t n);
void fu_free(void *p);
void *fu_malloc_big(size_t n);
char *fu_strdup(const char *s);
/* Grows *items (of item_size bytes) so that it holds at least need items. */
int fu_grow(void **items, int *cap, int need, size_t item_size);

/* Internal invariant: a bug in the fuser, not bad user input. */
#define FU_ASSERT(cond)                                                                 \
    do {                                                                                \
        if (!(cond)) {                                                                  \
            fprintf(stderr, "fuser: internal error at %s:%d: %s\n", __FILE__, __LINE__, \
                    #cond);                                                             \
            abort();                                                                    \
        }                                                                               \
    } while (0)

/* One chunk [begin, end) of a loop over independent items: false when it could not run (out
 * of memory; shared error state is the caller's to set, after the loop). */
typedef bool (*fu_chunk_fn)(void *ctx, int64_t begin, int64_t end);
/* body over [0, n) in contiguous chunks, one a thread on every core when the loop's `work`
 * (elements touched) pays for the threads, else one chunk; one chunk inside another's
 * (parallel.c). Each item must be computed alone, so that the results do not depend on the
 * split. False when a chunk returned false. */
bool fu_parallel_chunks(int64_t n, int64_t work, fu_chunk_fn body, void *ctx);

/* Monotonic wall time in milliseconds (for durations). */
double fu_now_ms(void);

typedef struct fu_strbuf {
    char *data;
    size_t len, cap;
    int failed; /* set once an allocation failed; the text is then incomplete */
} fu_strbuf;

void fu_sb_init(fu_strbuf *sb);
void fu_sb_free(fu_strbuf *sb);
void fu_sb_puts(fu_strbuf *sb, const char *s);
void fu_sb_printf(fu_strbuf *sb, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void fu_sb_vprintf(fu_strbuf *sb, const char *fmt, va_list ap);
/* Hands the text to the caller (malloc'd; NULL if an allocation failed). */
char *fu_sb_take(fu_strbuf *sb);
/* Appends s as a JSON string literal (quotes, backslashes and control
 * characters escaped). */
void fu_sb_json_string(fu_strbuf *sb, const char *s);

/* Bounded reads: only regular files are read (a FIFO, a device or a link to
 * /dev/zero is refused at once, never waited on or read without end), and
 * never more than the caller's limit. */
#define FU_READ_FILE_MAX ((size_t)1 << 30)
struct stat;
/* Opens path for reading if it is a regular file (non-blocking open, so a FIFO
 * does not hang); fills *st. -1 with errno and why (why_n bytes) set
 * otherwise (errno EINVAL: not a regular file). */
int fu_open_regular(const char *path, struct stat *st, char *why, size_t why_n);
/* Reads exactly n bytes from fd; 0, or an errno value (EIO at an early end). */
int fu_read_exact(int fd, void *buf, size_t n);
/* Reads a whole regular file of at most max_bytes into a NUL-terminated
 * malloc'd buffer; NULL with errno and why set on error (EFBIG: too large). */
char *fu_read_file_max(const char *path, size_t max_bytes, size_t *len_out, char *why, size_t why_n);
/* fu_read_file_max with FU_READ_FILE_MAX (1 GiB). */
char *fu_read_file(const char *path, size_t *len_out);

#endif
