/* outset.c -- output files written together (see outset.h). */
#define _POSIX_C_SOURCE 200809L

#include "outset.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void fu_outset_init(fu_outset *s) { memset(s, 0, sizeof *s); }

/* "DIR/.NAME.KIND.PID.K" beside path, created exclusively (so two runs, or a
 * name that happens to exist, never collide); the fd, or -1 with errno. */
static int create_beside(const char *path, const char *kind, char **name_out)
{
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) + 1 : 0;
    size_t cap = strlen(path) + 64;
    char *name = malloc(cap);
    if (!name) return errno = ENOMEM, -1;
    for (int k = 0; k < 1000; k++) {
        snprintf(name, cap, "%.*s.%s.%s.%ld.%d", dirlen, path, slash ? slash + 1 : path, kind, (long)getpid(), k);
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) {
            *name_out = name;
            return fd;
        }
        if (errno != EEXIST) break;
    }
    int e = errno;
    free(name);
    errno = e;
    return -1;
}

FILE *fu_outset_open(fu_outset *s, const char *path, char *why, size_t why_n)
{
    struct stat st;
    bool existing = stat(path, &st) == 0;
    if (existing && S_ISDIR(st.st_mode)) {
        snprintf(why, why_n, "%s: is a directory", path);
        return NULL;
    }
    if (s->n == s->cap) {
        int ncap = s->cap ? 2 * s->cap : 4;
        fu_outset_file *p = realloc(s->files, (size_t)ncap * sizeof *p);
        if (!p) {
            snprintf(why, why_n, "%s: out of memory", path);
            return NULL;
        }
        s->files = p;
        s->cap = ncap;
    }
    fu_outset_file *f = &s->files[s->n];
    memset(f, 0, sizeof *f);
    f->path = strdup(path);
    int fd = f->path ? create_beside(path, "tmp", &f->tmp) : (errno = ENOMEM, -1);
    if (fd < 0) {
        snprintf(why, why_n, "%s: cannot create a temporary file beside it: %s", path, strerror(errno));
        free(f->path);
        return NULL;
    }
    if (existing && S_ISREG(st.st_mode)) fchmod(fd, st.st_mode & 07777); /* the replacement keeps the file's mode */
    f->fp = fdopen(fd, "wb");
    if (!f->fp) {
        snprintf(why, why_n, "%s: %s", path, strerror(errno));
        close(fd);
        unlink(f->tmp);
        free(f->tmp);
        free(f->path);
        return NULL;
    }
    s->n++;
    return f->fp;
}

/* Keeps the file now at f->path (if any) reachable under a second name, so
 * that a rollback can put it back. 0 or an errno value. */
static int keep_old(fu_outset_file *f)
{
    struct stat st;
    if (lstat(f->path, &st) != 0) return errno == ENOENT ? 0 : errno;
    if (S_ISDIR(st.st_mode)) return 0; /* nothing to keep: the rename fails, and rolls the others back */
    for (int k = 0; k < 1000; k++) {
        size_t cap = strlen(f->path) + 64;
        char *name = malloc(cap);
        if (!name) return ENOMEM;
        const char *slash = strrchr(f->path, '/');
        int dirlen = slash ? (int)(slash - f->path) + 1 : 0;
        snprintf(name, cap, "%.*s.%s.old.%ld.%d", dirlen, f->path, slash ? slash + 1 : f->path, (long)getpid(), k);
        if (link(f->path, name) == 0) {
            f->backup = name;
            return 0;
        }
        int e = errno;
        free(name);
        if (e != EEXIST) return e;
    }
    return EEXIST;
}

int fu_outset_commit(fu_outset *s, char *why, size_t why_n)
{
    int bad = -1, e = 0;
    for (int i = 0; i < s->n; i++) { /* every temporary closed, each close checked */
        fu_outset_file *f = &s->files[i];
        if (!f->fp) continue;
        int werr = ferror(f->fp) ? EIO : 0; /* the stream does not keep the errno of its failed write */
        errno = 0;
        if (fclose(f->fp) != 0 && !werr) werr = errno ? errno : EIO;
        f->fp = NULL;
        if (werr && bad < 0) {
            bad = i;
            e = werr;
        }
    }
    if (bad >= 0) {
        snprintf(why, why_n, "%s: write failed: %s", s->files[bad].path, strerror(e));
        return -1;
    }
    for (int i = 0; i < s->n; i++)
        if ((e = keep_old(&s->files[i])) != 0) {
            snprintf(why, why_n, "%s: cannot keep the existing file while replacing it: %s", s->files[i].path,
                     strerror(e));
            bad = i;
            break;
        }
    int renamed = 0;
    for (; bad < 0 && renamed < s->n; renamed++) {
        fu_outset_file *f = &s->files[renamed];
        if (rename(f->tmp, f->path) != 0) {
            snprintf(why, why_n, "%s: cannot rename %s into place: %s", f->path, f->tmp, strerror(errno));
            bad = renamed;
            break;
        }
        free(f->tmp);
        f->tmp = NULL;
    }
    /* Roll back what was renamed (the old file back, or the new one gone), or
     * on success drop the old files' second names. */
    for (int i = 0; i < s->n; i++) {
        fu_outset_file *f = &s->files[i];
        if (bad >= 0 && i < renamed) {
            if (f->backup) rename(f->backup, f->path);
            else unlink(f->path);
        } else if (f->backup) {
            unlink(f->backup);
        }
        free(f->backup);
        f->backup = NULL;
    }
    return bad >= 0 ? -1 : 0;
}

void fu_outset_free(fu_outset *s)
{
    for (int i = 0; i < s->n; i++) {
        fu_outset_file *f = &s->files[i];
        if (f->fp) fclose(f->fp);
        if (f->tmp) unlink(f->tmp);
        free(f->tmp);
        free(f->backup);
        free(f->path);
    }
    free(s->files);
    fu_outset_init(s);
}
