/*
 * test_util.h -- what the tests share besides check.h: reading a whole file,
 * running a program and capturing its output, and temporary directories.
 * POSIX.1-2008 only (no fuser, no CUDA): the gate's tests use it in the gate's
 * stand-alone build too. Define _POSIX_C_SOURCE 200809L (or _XOPEN_SOURCE 700)
 * before the first #include.
 */
#ifndef FUSER_TEST_UTIL_H
#define FUSER_TEST_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#if !defined(_POSIX_C_SOURCE) || _POSIX_C_SOURCE < 200809L
#error "test_util.h needs POSIX.1-2008: #define _POSIX_C_SOURCE 200809L before the first #include"
#endif

extern char **environ;

/* ------------------------------------------------------------ files */

/* Everything in f from its start to its end, NUL-terminated (a file may hold
 * NULs: *size, when not NULL, gets the byte count); NULL when it cannot be
 * read. Free it. */
static inline char *tu_read_stream(FILE *f, size_t *size)
{
    if (size) *size = 0;
    if (fseek(f, 0, SEEK_SET) != 0) return NULL;
    size_t n = 0, cap = 4096;
    char *s = malloc(cap);
    while (s) {
        n += fread(s + n, 1, cap - 1 - n, f);
        if (n < cap - 1) break; /* end of file, or an error */
        char *t = realloc(s, cap *= 2);
        if (!t) free(s);
        s = t;
    }
    if (!s) return NULL;
    if (ferror(f)) {
        free(s);
        return NULL;
    }
    s[n] = '\0';
    if (size) *size = n;
    return s;
}

/* The whole file at path, as tu_read_stream; NULL when it cannot be opened or
 * read. */
static inline char *tu_read_file(const char *path, size_t *size)
{
    if (size) *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *s = tu_read_stream(f, size);
    fclose(f);
    return s;
}

/* Writes text to path (created or truncated); false when it cannot. */
static inline bool tu_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* ------------------------------------------------------------ temporary directories */

/* $TMPDIR, or /tmp where it is unset or empty. */
static inline const char *tu_tmpdir(void)
{
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

/* Makes a fresh directory "<tu_tmpdir()>/<name>.XXXXXX" and writes its path to
 * buf. false, and why on stderr, when it cannot. */
static inline bool tu_make_temp_dir(char *buf, size_t size, const char *name)
{
    int n = snprintf(buf, size, "%s/%s.XXXXXX", tu_tmpdir(), name);
    if (n < 0 || (size_t)n >= size) {
        fprintf(stderr, "%s/%s.XXXXXX: the path is too long\n", tu_tmpdir(), name);
        return false;
    }
    if (!mkdtemp(buf)) {
        fprintf(stderr, "mkdtemp %s: %s\n", buf, strerror(errno));
        return false;
    }
    return true;
}

/* Removes path and, where it is a directory, everything in it (a symbolic
 * link is removed, never followed). 0, or -1 when something stayed. */
static inline int tu_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) return unlink(path);
    int rc = 0;
    DIR *d = opendir(path);
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        size_t n = strlen(path) + strlen(e->d_name) + 2;
        char *sub = malloc(n);
        if (!sub) {
            rc = -1;
            continue;
        }
        snprintf(sub, n, "%s/%s", path, e->d_name);
        if (tu_remove_tree(sub) != 0) rc = -1;
        free(sub);
    }
    closedir(d);
    return rmdir(path) == 0 ? rc : -1;
}

/* ------------------------------------------------------------ running programs */

/* The status of a program that could not be started or waited for. */
#define TU_NOT_RUN (-1)

/* Starts bin (a path; no PATH search) with argv {bin, args..., NULL} (args
 * NULL-terminated) and this process's environment, its stdout and stderr to
 * the open descriptors out_fd and err_fd, and waits for it. Its exit status,
 * 1000 + the signal that killed it, or TU_NOT_RUN. */
static inline int tu_run_fds(const char *bin, const char *const *args, int out_fd, int err_fd)
{
    int nargs = 0;
    while (args[nargs]) nargs++;
    const char **argv = malloc(sizeof *argv * (size_t)(nargs + 2));
    if (!argv) return TU_NOT_RUN;
    argv[0] = bin;
    for (int i = 0; i <= nargs; i++) argv[i + 1] = args[i];
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
    if (out_fd > 2) posix_spawn_file_actions_addclose(&fa, out_fd);
    if (err_fd > 2 && err_fd != out_fd) posix_spawn_file_actions_addclose(&fa, err_fd);
    pid_t pid;
    int status = TU_NOT_RUN, st;
    if (posix_spawn(&pid, bin, &fa, NULL, (char *const *)argv, environ) == 0) {
        pid_t w;
        while ((w = waitpid(pid, &st, 0)) < 0 && errno == EINTR) {
        }
        if (w == pid) status = WIFEXITED(st) ? WEXITSTATUS(st) : 1000 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    }
    posix_spawn_file_actions_destroy(&fa);
    free(argv);
    return status;
}

/* tu_run_fds with stdout written to the file out_path and stderr to err_path
 * (created or truncated; NULL: /dev/null). */
static inline int tu_run_to_files(const char *bin, const char *const *args, const char *out_path,
                                  const char *err_path)
{
    int out_fd = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err_fd = open(err_path ? err_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int status = out_fd >= 0 && err_fd >= 0 ? tu_run_fds(bin, args, out_fd, err_fd) : TU_NOT_RUN;
    if (out_fd >= 0) close(out_fd);
    if (err_fd >= 0) close(err_fd);
    return status;
}

typedef struct tu_output {
    int status;      /* as tu_run_fds */
    char *out, *err; /* all of its stdout and stderr, NUL-terminated, never NULL */
} tu_output;

static inline void tu_output_free(tu_output *o)
{
    free(o->out);
    free(o->err);
    memset(o, 0, sizeof *o);
}

/* An unlinked temporary file in tu_tmpdir(): its descriptor, or -1. */
static inline int tu_anonymous_file(void)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/tu_output.XXXXXX", tu_tmpdir());
    int fd = mkstemp(path);
    if (fd >= 0) unlink(path);
    return fd;
}

/* What is left in the anonymous file fd (closed here), never NULL. */
static inline char *tu_take_output(int fd)
{
    FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
    char *s = f ? tu_read_stream(f, NULL) : NULL;
    if (f) fclose(f);
    else if (fd >= 0) close(fd);
    return s ? s : calloc(1, 1);
}

/* tu_run_fds capturing stdout and stderr whole (through unlinked temporary
 * files, so nothing is left behind). */
static inline tu_output tu_run_capture(const char *bin, const char *const *args)
{
    int out_fd = tu_anonymous_file(), err_fd = tu_anonymous_file();
    tu_output o;
    o.status = out_fd >= 0 && err_fd >= 0 ? tu_run_fds(bin, args, out_fd, err_fd) : TU_NOT_RUN;
    o.out = tu_take_output(out_fd);
    o.err = tu_take_output(err_fd);
    return o;
}

#endif
