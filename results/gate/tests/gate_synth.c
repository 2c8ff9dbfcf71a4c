/*
 * gate_synth.c -- writes a synthetic run file (synth.h) for the shell tests
 * (plot, save_baseline, ci/nightly with a stand-in run_suite).
 *
 *   gate_synth OUT.json [--gpu NAME] [--schema S] [--commit C] [--date D]
 *     [--seed N] [--scale F] [--slow GLOB] [--noise F] [--reps N] [--samples N]
 *     [--kernels-plus N] [--fail GLOB] [--only GLOB] [--copy GBPS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "synth.h"

int main(int argc, char **argv)
{
    synth_opts o;
    synth_defaults(&o);
    const char *out = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (a[0] != '-') {
            out = a;
            continue;
        }
        if (!v) {
            fprintf(stderr, "gate_synth: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (!strcmp(a, "--gpu")) o.gpu_name = v;
        else if (!strcmp(a, "--schema")) o.schema = v;
        else if (!strcmp(a, "--commit")) o.commit = v;
        else if (!strcmp(a, "--date")) o.date = v;
        else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 10);
        else if (!strcmp(a, "--scale")) o.scale = atof(v);
        else if (!strcmp(a, "--slow")) o.slow = v;
        else if (!strcmp(a, "--noise")) o.noise = atof(v);
        else if (!strcmp(a, "--reps")) o.reps = atoi(v);
        else if (!strcmp(a, "--samples")) o.samples = atoi(v);
        else if (!strcmp(a, "--kernels-plus")) o.kernels_plus = atoi(v);
        else if (!strcmp(a, "--fail")) o.fail = v;
        else if (!strcmp(a, "--only")) o.only = v;
        else if (!strcmp(a, "--copy")) o.copy_gbps = atof(v);
        else {
            fprintf(stderr, "gate_synth: unknown option %s\n", a);
            return 2;
        }
    }
    if (!out) {
        fprintf(stderr, "usage: gate_synth OUT.json [options]\n");
        return 2;
    }
    char *text = synth_run_text(&o);
    FILE *f = text ? fopen(out, "w") : NULL;
    if (!f) {
        fprintf(stderr, "gate_synth: cannot write %s\n", out);
        free(text);
        return 2;
    }
    fputs(text, f);
    fputc('\n', f);
    free(text);
    return fclose(f) == 0 ? 0 : 2;
}
