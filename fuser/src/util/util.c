#define _DEFAULT_SOURCE
#define _POSIX_C_SOURCE 200809L

#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double fu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void *fu_malloc(size_t n) { return malloc(n ? n : 1); }
void *fu_calloc(size_t count, size_t size) { return calloc(count ? count : 1, size ? size : 1); }
void *fu_realloc(void *p, size_t n) { return realloc(p, n ? n : 1); }
void fu_free(void *p) { free(p); }

/* Big buffers in 2 MiB pages where the kernel offers them (transparent huge
 * pages on request, "madvise"): the interpreter's tensors of doubles run to
 * gigabytes, and in 4 KiB pages most of the time of a run went to faulting and
 * clearing them page by page. Freed with fu_free. */
void *fu_malloc_big(size_t n)
{
    const size_t huge = (size_t)2 << 20;
    if (n < huge) return fu_malloc(n);
    void *p = NULL;
    if (posix_memalign(&p, huge, n) != 0) return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(p, n / huge * huge, MADV_HUGEPAGE); /* a hint: without it, 4 KiB pages */
#endif
    return p;
}

char *fu_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = fu_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

int fu_grow(void **items, int *cap, int need, size_t item_size)
{
    if (need <= *cap) return 0;
    int ncap = *cap ? *cap : 8;
    while (ncap < need) ncap *= 2;
    void *p = fu_realloc(*items, (size_t)ncap * item_size);
    if (!p) return -1;
    *items = p;
    *cap = ncap;
    return 0;
}

void fu_sb_init(fu_strbuf *sb) { memset(sb, 0, sizeof *sb); }
void fu_sb_free(fu_strbuf *sb) { fu_free(sb->data); fu_sb_init(sb); }

static int sb_reserve(fu_strbuf *sb, size_t extra)
{
    if (sb->failed) return -1;
    if (sb->len + extra + 1 <= sb->cap) return 0;
    size_t ncap = sb->cap ? sb->cap : 256;
    while (ncap < sb->len + extra + 1) ncap *= 2;
    char *p = fu_realloc(sb->data, ncap);
    if (!p) { sb->failed = 1; return -1; }
    sb->data = p;
    sb->cap = ncap;
    return 0;
}

void fu_sb_puts(fu_strbuf *sb, const char *s)
{
    size_t n = strlen(s);
    if (sb_reserve(sb, n)) return;
    memcpy(sb->data + sb->len, s, n + 1);
    sb->len += n;
}

void fu_sb_vprintf(fu_strbuf *sb, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0 || sb_reserve(sb, (size_t)n)) return;
    vsnprintf(sb->data + sb->len, (size_t)n + 1, fmt, ap);
    sb->len += (size_t)n;
}

void fu_sb_printf(fu_strbuf *sb, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fu_sb_vprintf(sb, fmt, ap);
    va_end(ap);
}

void fu_sb_json_string(fu_strbuf *sb, const char *s)
{
    fu_sb_puts(sb, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fu_sb_printf(sb, "\\%c", c);
        else if (c == '\n') fu_sb_puts(sb, "\\n");
        else if (c < 0x20) fu_sb_printf(sb, "\\u%04x", c);
        else fu_sb_printf(sb, "%c", c);
    }
    fu_sb_puts(sb, "\"");
}

char *fu_json_quote(const char *s)
{
    fu_strbuf sb;
    fu_sb_init(&sb);
    fu_sb_json_string(&sb, s);
    return fu_sb_take(&sb);
}

char *fu_sb_take(fu_strbuf *sb)
{
    if (sb->failed) { fu_sb_free(sb); return NULL; }
    if (!sb->data && sb_reserve(sb, 0)) return NULL;
    if (sb->len == 0) sb->data[0] = '\0';
    char *d = sb->data;
    fu_sb_init(sb);
    return d;
}

/* What kind of file st is, for "not a regular file" messages. */
static const char *file_kind(const struct stat *st)
{
    if (S_ISDIR(st->st_mode)) return "a directory";
    if (S_ISFIFO(st->st_mode)) return "a FIFO";
    if (S_ISCHR(st->st_mode)) return "a character device";
    if (S_ISBLK(st->st_mode)) return "a block device";
    if (S_ISSOCK(st->st_mode)) return "a socket";
    return "not a plain file";
}

int fu_open_regular(const char *path, struct stat *st, char *why, size_t why_n)
{
    /* O_NONBLOCK: opening a FIFO must not wait for a writer */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(why, why_n, "%s", strerror(e));
        errno = e;
        return -1;
    }
    if (fstat(fd, st) != 0) {
        int e = errno;
        snprintf(why, why_n, "%s", strerror(e));
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(st->st_mode)) {
        snprintf(why, why_n, "not a regular file (%s)", file_kind(st));
        close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

int fu_read_exact(int fd, void *buf, size_t n)
{
    unsigned char *p = buf;
    while (n > 0) {
        ssize_t got = read(fd, p, n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return got < 0 ? errno : EIO; /* EIO: the file shrank under us */
        p += got;
        n -= (size_t)got;
    }
    return 0;
}

char *fu_read_file_max(const char *path, size_t max_bytes, size_t *len_out, char *why, size_t why_n)
{
    struct stat st;
    int fd = fu_open_regular(path, &st, why, why_n);
    if (fd < 0) return NULL;
    if (st.st_size < 0 || (uint64_t)st.st_size > max_bytes) {
        snprintf(why, why_n, "the file has %lld bytes, more than the %zu allowed", (long long)st.st_size, max_bytes);
        close(fd);
        errno = EFBIG;
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    char *text = fu_malloc(n + 1);
    int e = text ? fu_read_exact(fd, text, n) : ENOMEM;
    close(fd);
    if (e) {
        snprintf(why, why_n, "%s", strerror(e));
        fu_free(text);
        errno = e;
        return NULL;
    }
    text[n] = '\0';
    if (len_out) *len_out = n;
    return text;
}

char *fu_read_file(const char *path, size_t *len_out)
{
    char why[128];
    return fu_read_file_max(path, FU_READ_FILE_MAX, len_out, why, sizeof why);
}
