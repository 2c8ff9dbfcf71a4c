/* thresholds.c -- see thresholds.h. */
#define _POSIX_C_SOURCE 200809L

#include "thresholds.h"

#include <ctype.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void gate_thresholds_free(gate_thresholds *t)
{
    if (!t) return;
    for (size_t i = 0; i < t->n; i++) free(t->rules[i].pattern);
    free(t->rules);
    t->rules = NULL;
    t->n = 0;
}

int gate_thresholds_parse(gate_thresholds *t, const char *text, const char *path, char *err,
                          size_t errlen)
{
    t->rules = NULL;
    t->n = 0;
    size_t cap = 0;
    int line = 0;
    const char *p = text;
    while (*p) {
        line++;
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char buf[1024];
        if (len >= sizeof buf) {
            gate_errf(err, errlen, "%s:%d: line too long", path, line);
            goto fail;
        }
        memcpy(buf, p, len);
        buf[len] = '\0';
        p += len + (eol ? 1 : 0);
        char *hash = strchr(buf, '#');
        if (hash) *hash = '\0';

        char *pattern = buf;
        while (isspace((unsigned char)*pattern)) pattern++;
        if (!*pattern) continue;
        char *q = pattern;
        while (*q && !isspace((unsigned char)*q)) q++;
        char *value = q;
        if (*q) {
            *q = '\0';
            value = q + 1;
        }
        while (isspace((unsigned char)*value)) value++;
        if (!*value) {
            gate_errf(err, errlen, "%s:%d: \"%s\" has no threshold; expected `PATTERN PERCENT`", path,
                      line, pattern);
            goto fail;
        }
        char *end;
        double pct = strtod(value, &end);
        if (end == value) pct = NAN;
        if (*end == '%') end++;
        while (isspace((unsigned char)*end)) end++;
        if (isnan(pct) || !isfinite(pct) || pct < 0 || *end) {
            gate_errf(err, errlen, "%s:%d: \"%s\" is not a percentage (a number >= 0, e.g. 3 or 2.5%%)",
                      path, line, value);
            goto fail;
        }
        if (t->n == cap) {
            size_t nc = cap ? cap * 2 : 8;
            gate_threshold_rule *nr = realloc(t->rules, nc * sizeof *nr);
            if (!nr) {
                gate_errf(err, errlen, "%s: out of memory", path);
                goto fail;
            }
            t->rules = nr;
            cap = nc;
        }
        t->rules[t->n].pattern = gate_strdup(pattern);
        if (!t->rules[t->n].pattern) {
            gate_errf(err, errlen, "%s: out of memory", path);
            goto fail;
        }
        t->rules[t->n].pct = pct;
        t->rules[t->n].line = line;
        t->n++;
    }
    return 0;
fail:
    gate_thresholds_free(t);
    return -1;
}

int gate_thresholds_load(gate_thresholds *t, const char *path, char *err, size_t errlen)
{
    t->rules = NULL;
    t->n = 0;
    char *text = gate_read_file(path, NULL, err, errlen);
    if (!text) return -1;
    int rc = gate_thresholds_parse(t, text, path, err, errlen);
    free(text);
    return rc;
}

double gate_thresholds_lookup(const gate_thresholds *t, const char *name, double dflt)
{
    double pct = dflt;
    if (!t) return pct;
    for (size_t i = 0; i < t->n; i++)
        if (fnmatch(t->rules[i].pattern, name, 0) == 0) pct = t->rules[i].pct;
    return pct;
}
