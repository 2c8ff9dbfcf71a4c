/*
 * pack.c -- fusebench-pack: a run file, checked and gzip-compressed (zlib).
 *
 *   fusebench-pack IN OUT     IN plain or compressed; OUT written compressed
 *                             through OUT.tmp.PID and a rename
 *   fusebench-pack -d IN      IN, inflated, to stdout (for people and tools
 *                             without zlib)
 *
 * IN must read as a run file (run.h): a broken one exits 2 with the file and
 * key at fault and writes nothing. Exit status 0, or 2.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"
#include "util.h"

static void usage(FILE *f)
{
    fputs("usage: pack IN.json OUT.json.gz   (IN checked as a run file, OUT written gzip-compressed)\n"
          "       pack -d IN                 (IN, plain or compressed, to stdout)\n"
          "       pack --version\n",
          f);
}

int main(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("fusebench-pack %s\n", FUSEBENCH_VERSION);
        return 0;
    }
    char err[1024];
    size_t len = 0;
    if (argc == 3 && !strcmp(argv[1], "-d")) {
        char *text = gate_read_file(argv[2], &len, err, sizeof err);
        if (!text) {
            fprintf(stderr, "pack: %s\n", err);
            return 2;
        }
        int ok = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0;
        free(text);
        return ok ? 0 : 2;
    }
    if (argc != 3 || argv[1][0] == '-') {
        usage(stderr);
        return 2;
    }
    char *text = gate_read_file(argv[1], &len, err, sizeof err);
    if (!text) {
        fprintf(stderr, "pack: %s\n", err);
        return 2;
    }
    gate_run run;
    if (gate_run_parse(&run, text, len, argv[1], err, sizeof err)) {
        fprintf(stderr, "pack: %s\n", err);
        free(text);
        return 2;
    }
    gate_run_free(&run);
    size_t tlen = strlen(argv[2]) + 32;
    char *tmp = malloc(tlen);
    if (!tmp) {
        free(text);
        return 2;
    }
    snprintf(tmp, tlen, "%s.tmp.%ld", argv[2], (long)getpid());
    int rc = gate_write_file_gz(tmp, text, len, err, sizeof err);
    free(text);
    if (rc || rename(tmp, argv[2]) != 0) {
        if (!rc) snprintf(err, sizeof err, "%s: cannot rename into place", argv[2]);
        fprintf(stderr, "pack: %s\n", err);
        remove(tmp);
        free(tmp);
        return 2;
    }
    free(tmp);
    return 0;
}
