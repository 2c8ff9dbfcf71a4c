/*
 * thresholds.h -- per-suite and per-case minimum effects for the gate.
 *
 * The file (results/thresholds.txt) has one rule a line, `PATTERN PERCENT`:
 * PATTERN is a shell glob (fnmatch, a star also matches '/') on the case name
 * (`suite/case/variant/dtype/size`), PERCENT a number >= 0 with an optional
 * '%'. '#' starts a comment; blank lines are ignored. When several rules match
 * a case the LAST one wins, so put broad rules first and narrow ones after
 * (examples below, in line comments because the globs hold star-slashes).
 */
//   embedding/*                 4      # a whole suite
//   embedding/bwd/*             6
//   qkv_split/*/fuser/bf16/*    2.5%
#ifndef GATE_THRESHOLDS_H
#define GATE_THRESHOLDS_H

#include <stddef.h>

typedef struct gate_threshold_rule {
    char *pattern;
    double pct;
    int line;
} gate_threshold_rule;

typedef struct gate_thresholds {
    gate_threshold_rule *rules;
    size_t n;
} gate_thresholds;

/* Parses text (from file `path`, for messages). Returns 0, or -1 with
 * "PATH:LINE: why" in err. */
int gate_thresholds_parse(gate_thresholds *t, const char *text, const char *path, char *err,
                          size_t errlen);
int gate_thresholds_load(gate_thresholds *t, const char *path, char *err, size_t errlen);
void gate_thresholds_free(gate_thresholds *t);

/* The threshold (percent) for case name: the last matching rule's, else
 * dflt. t may be NULL. */
double gate_thresholds_lookup(const gate_thresholds *t, const char *name, double dflt);

#endif
