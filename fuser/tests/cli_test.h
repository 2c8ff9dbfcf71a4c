/*
 * cli_test.h -- what the tests that drive the built `fuser` command as a
 * subprocess share (test_cli.c, test_robust.c): the command and a scratch
 * directory, paths in it, writing a file there, running the command, and what
 * an error of it must look like. The globals below belong to the one test
 * program that includes this; its main() sets fuser_bin and makes dir.
 * (test_util.h stays free of check.h and fuser: the gate's build uses it.)
 */
#ifndef FUSER_TEST_CLI_TEST_H
#define FUSER_TEST_CLI_TEST_H

#include "check.h"
#include "test_util.h"

static const char *fuser_bin; /* FUSER_BIN: what RUN starts */
static char dir[256];         /* the test's scratch directory (tu_make_temp_dir) */

/* Strings made by path_in and binding live until free_pool(). */
static char *pool[512];
static int npool;

static inline char *pooled(const char *a, const char *sep, const char *b)
{
    size_t n = strlen(a) + strlen(sep) + strlen(b) + 1;
    char *p = malloc(n);
    if (!p) return NULL;
    snprintf(p, n, "%s%s%s", a, sep, b);
    if (npool < (int)(sizeof pool / sizeof pool[0])) pool[npool++] = p;
    return p;
}

/* dir/name */
static inline char *path_in(const char *name) { return pooled(dir, "/", name); }
/* NAME=PATH, as --input and --output take it */
static inline char *binding(const char *name, const char *path) { return pooled(name, "=", path); }

static inline void free_pool(void)
{
    for (int i = 0; i < npool; i++) free(pool[i]);
    npool = 0;
}

static inline bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static inline void spit(const char *path, const char *text) { CHECK(tu_write_text(path, text)); }

/* Runs fuser_bin with the NULL-terminated args, capturing stdout and stderr. */
static inline tu_output run_args(const char *const *args)
{
    tu_output r = tu_run_capture(fuser_bin, args);
    CHECK(r.status != TU_NOT_RUN);
    return r;
}
#define RUN(...) run_args((const char *const[]){__VA_ARGS__, NULL})

/* What a write must not leave in dir, failed or not: temporaries (".tmp.")
 * and kept old files (".old."); -1 when dir cannot be read. */
static inline int leftovers(void)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp.") || strstr(e->d_name, ".old.")) n++;
    closedir(d);
    return n;
}

/* An error: exit 2 (not a signal: 1000 + N), one message on stderr starting
 * with "fuser: " that contains needle (if any), nothing on stdout, no file at
 * output_path (if any), nothing left in dir. Frees r. */
static inline void expect_failure(tu_output r, const char *needle, const char *output_path, int line)
{
    int before = check_failures;
    CHECK(r.status == 2);
    CHECK(strncmp(r.err, "fuser: ", 7) == 0);
    CHECK(strlen(r.err) > 8);
    if (needle) CHECK_CONTAINS(r.err, needle);
    CHECK(r.out[0] == '\0');
    if (output_path) CHECK(!exists(output_path));
    CHECK(leftovers() == 0);
    if (check_failures != before)
        fprintf(stderr, "  (case at line %d) exit %d, stderr: %s  stdout: %s\n", line, r.status, r.err, r.out);
    tu_output_free(&r);
}
#define EXPECT_FAILURE(r, needle, out) expect_failure((r), (needle), (out), __LINE__)

#endif
