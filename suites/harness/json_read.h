/*
 * json_read.h -- a strict little JSON reader (the harness only writes JSON,
 * and the suites must not depend on a JSON library), for the tests and for
 * reading PyTorch's rows (reference/torch_merge.c): parses a
 * document into a tree and looks keys up. Rejects trailing commas, bare
 * words, control characters in strings, and anything after the document.
 */
#ifndef FUSEBENCH_JSON_READ_H
#define FUSEBENCH_JSON_READ_H

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum jv_kind { JV_NULL, JV_BOOL, JV_NUM, JV_STR, JV_ARR, JV_OBJ } jv_kind;

typedef struct jv {
    jv_kind kind;
    bool b;
    double num;
    char *str;
    int n;               /* items of an array or object */
    struct jv *items;
    char **keys;         /* objects */
} jv;

typedef struct jv_parser {
    const char *p;
    char *err;
    size_t nerr;
    int depth;
} jv_parser;

static inline void jv_free_inner(jv *v)
{
    free(v->str);
    for (int i = 0; i < v->n; i++) {
        jv_free_inner(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

static inline void jv_free(jv *v)
{
    if (!v) return;
    jv_free_inner(v);
    free(v);
}

static inline bool jv_fail(jv_parser *ps, const char *what)
{
    if (ps->err && !ps->err[0]) snprintf(ps->err, ps->nerr, "%s at '%.20s'", what, ps->p);
    return false;
}

static inline void jv_ws(jv_parser *ps)
{
    while (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t') ps->p++;
}

static inline bool jv_string(jv_parser *ps, char **out)
{
    if (*ps->p != '"') return jv_fail(ps, "expected a string");
    ps->p++;
    size_t cap = 16, n = 0;
    char *s = malloc(cap);
    while (s && *ps->p != '"') {
        unsigned c = (unsigned char)*ps->p;
        if (c == 0 || c < 0x20) {
            free(s);
            return jv_fail(ps, "bad character in a string");
        }
        char buf[4];
        int k = 1;
        if (c == '\\') {
            ps->p++;
            switch (*ps->p) {
            case '"': buf[0] = '"'; break;
            case '\\': buf[0] = '\\'; break;
            case '/': buf[0] = '/'; break;
            case 'b': buf[0] = '\b'; break;
            case 'f': buf[0] = '\f'; break;
            case 'n': buf[0] = '\n'; break;
            case 'r': buf[0] = '\r'; break;
            case 't': buf[0] = '\t'; break;
            case 'u': {
                unsigned u = 0;
                for (int i = 1; i <= 4; i++) {
                    char h = ps->p[i];
                    if (!isxdigit((unsigned char)h)) {
                        free(s);
                        return jv_fail(ps, "bad \\u escape");
                    }
                    u = u * 16 + (unsigned)(isdigit((unsigned char)h) ? h - '0' : (tolower((unsigned char)h) - 'a' + 10));
                }
                ps->p += 4;
                if (u < 0x80) buf[0] = (char)u;
                else if (u < 0x800) buf[0] = (char)(0xc0 | (u >> 6)), buf[1] = (char)(0x80 | (u & 0x3f)), k = 2;
                else
                    buf[0] = (char)(0xe0 | (u >> 12)), buf[1] = (char)(0x80 | ((u >> 6) & 0x3f)),
                    buf[2] = (char)(0x80 | (u & 0x3f)), k = 3;
                break;
            }
            default: free(s); return jv_fail(ps, "bad escape");
            }
        } else {
            buf[0] = (char)c;
        }
        ps->p++;
        if (n + (size_t)k + 1 > cap) {
            cap = 2 * cap + (size_t)k;
            char *t = realloc(s, cap);
            if (!t) {
                free(s);
                return jv_fail(ps, "out of memory");
            }
            s = t;
        }
        memcpy(s + n, buf, (size_t)k);
        n += (size_t)k;
    }
    if (!s) return jv_fail(ps, "out of memory");
    s[n] = '\0';
    ps->p++;
    *out = s;
    return true;
}

static inline bool jv_value(jv_parser *ps, jv *v);

static inline bool jv_push(jv *v, jv *item, char *key)
{
    jv *items = realloc(v->items, (size_t)(v->n + 1) * sizeof *items);
    if (!items) return false;
    v->items = items;
    if (v->kind == JV_OBJ) {
        char **keys = realloc(v->keys, (size_t)(v->n + 1) * sizeof *keys);
        if (!keys) return false;
        v->keys = keys;
        v->keys[v->n] = key;
    }
    v->items[v->n++] = *item;
    return true;
}

static inline bool jv_container(jv_parser *ps, jv *v, bool object)
{
    v->kind = object ? JV_OBJ : JV_ARR;
    ps->p++;
    if (++ps->depth > 64) return jv_fail(ps, "too deep");
    jv_ws(ps);
    char close = object ? '}' : ']';
    if (*ps->p == close) {
        ps->p++;
        ps->depth--;
        return true;
    }
    for (;;) {
        char *key = NULL;
        jv_ws(ps);
        if (object) {
            if (!jv_string(ps, &key)) return false;
            jv_ws(ps);
            if (*ps->p != ':') {
                free(key);
                return jv_fail(ps, "expected ':'");
            }
            ps->p++;
        }
        jv item;
        memset(&item, 0, sizeof item);
        if (!jv_value(ps, &item)) {
            jv_free_inner(&item);
            free(key);
            return false;
        }
        if (!jv_push(v, &item, key)) {
            jv_free_inner(&item);
            free(key);
            return jv_fail(ps, "out of memory");
        }
        jv_ws(ps);
        if (*ps->p == ',') {
            ps->p++;
            continue;
        }
        if (*ps->p == close) {
            ps->p++;
            ps->depth--;
            return true;
        }
        return jv_fail(ps, object ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static inline bool jv_value(jv_parser *ps, jv *v)
{
    jv_ws(ps);
    const char *p = ps->p;
    if (*p == '{') return jv_container(ps, v, true);
    if (*p == '[') return jv_container(ps, v, false);
    if (*p == '"') {
        v->kind = JV_STR;
        return jv_string(ps, &v->str);
    }
    if (strncmp(p, "true", 4) == 0 || strncmp(p, "false", 5) == 0) {
        v->kind = JV_BOOL;
        v->b = p[0] == 't';
        ps->p += v->b ? 4 : 5;
        return true;
    }
    if (strncmp(p, "null", 4) == 0) {
        v->kind = JV_NULL;
        ps->p += 4;
        return true;
    }
    if (*p == '-' || isdigit((unsigned char)*p)) {
        const char *q = p + (*p == '-');
        if (!isdigit((unsigned char)*q)) return jv_fail(ps, "bad number");
        if (*q == '0' && isdigit((unsigned char)q[1])) return jv_fail(ps, "leading zero");
        char *end;
        v->kind = JV_NUM;
        v->num = strtod(p, &end);
        ps->p = end;
        return true;
    }
    return jv_fail(ps, "expected a value");
}

/* The parsed document, or NULL with a message in err. */
static inline jv *jv_parse(const char *text, char *err, size_t nerr)
{
    if (err && nerr) err[0] = '\0';
    jv_parser ps = {text, err, nerr, 0};
    jv *v = calloc(1, sizeof *v);
    if (!v) return NULL;
    if (!jv_value(&ps, v)) {
        jv_free(v);
        return NULL;
    }
    jv_ws(&ps);
    if (*ps.p) {
        jv_fail(&ps, "text after the document");
        jv_free(v);
        return NULL;
    }
    return v;
}

static inline const jv *jv_get(const jv *obj, const char *key)
{
    if (!obj || obj->kind != JV_OBJ) return NULL;
    for (int i = 0; i < obj->n; i++)
        if (strcmp(obj->keys[i], key) == 0) return &obj->items[i];
    return NULL;
}

static inline const char *jv_str(const jv *obj, const char *key)
{
    const jv *v = jv_get(obj, key);
    return v && v->kind == JV_STR ? v->str : NULL;
}

static inline double jv_num(const jv *obj, const char *key)
{
    const jv *v = jv_get(obj, key);
    return v && v->kind == JV_NUM ? v->num : -1e300;
}

#endif
