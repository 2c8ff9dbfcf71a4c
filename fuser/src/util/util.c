#define _POSIX_C_SOURCE 200809L

#include "util.h"

#include <string.h>
#include <time.h>

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

char *fu_sb_take(fu_strbuf *sb)
{
    if (sb->failed) { fu_sb_free(sb); return NULL; }
    if (!sb->data && sb_reserve(sb, 0)) return NULL;
    if (sb->len == 0) sb->data[0] = '\0';
    char *d = sb->data;
    fu_sb_init(sb);
    return d;
}

char *fu_read_file(const char *path, size_t *len_out)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) return NULL;
    fu_strbuf sb;
    fu_sb_init(&sb);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0) {
        if (sb_reserve(&sb, n)) break;
        memcpy(sb.data + sb.len, chunk, n);
        sb.len += n;
        sb.data[sb.len] = '\0';
    }
    int bad = ferror(fp) || sb.failed;
    fclose(fp);
    if (bad) { fu_sb_free(&sb); return NULL; }
    if (len_out) *len_out = sb.len;
    return fu_sb_take(&sb);
}
