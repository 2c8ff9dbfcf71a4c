/*
 * report.h -- the gate's reports: Markdown for people, JSON for tools, TSV for
 * scripts (scripts/plot history reads it). Each returns 0, or -1 when writing
 * failed or memory ran out.
 */
#ifndef GATE_REPORT_H
#define GATE_REPORT_H

#include <stdio.h>

#include "gate.h"

int gate_write_markdown(FILE *f, const gate_report *r, const gate_run *run, const gate_run *base,
                        const gate_options *opt);

/* {"schema": "fusebench-gate/1", "regressed": bool, "counts": {...}, "cases": [...]} */
int gate_write_json(FILE *f, const gate_report *r, const gate_run *run, const gate_run *base,
                    const gate_options *opt);

/* Header, then one line per case: name verdict timing reason baseline_median_us
 * run_median_us change_pct p_value threshold_pct n_baseline n_run detail
 * (unknown numbers are empty). */
int gate_write_tsv(FILE *f, const gate_report *r);

#endif
