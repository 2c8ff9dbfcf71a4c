/*
 * outset.h -- output files written together: all of them or none.
 *
 * Each output is written to a temporary file beside it (same directory, so the
 * rename is atomic); only when every one of them was written are they renamed
 * into place, and if one rename fails the ones already renamed are put back,
 * so on any failure every file that existed before is as it was and no new
 * file is left. Plain libc and POSIX, no other dependency: the fuser (--output,
 * fu_npy_write) and the regression gate (scripts/compare's reports) share it.
 *
 *     fu_outset s;
 *     fu_outset_init(&s);
 *     FILE *a = fu_outset_open(&s, "a.md", why, sizeof why);   // writes go to a temporary
 *     FILE *b = a ? fu_outset_open(&s, "b.json", why, sizeof why) : NULL;
 *     ... write a and b ...
 *     int rc = b ? fu_outset_commit(&s, why, sizeof why) : -1;  // closes, then renames all or none
 *     fu_outset_free(&s);                                       // removes what was not committed
 */
#ifndef FUSER_OUTSET_H
#define FUSER_OUTSET_H

#include <stddef.h>
#include <stdio.h>

typedef struct fu_outset_file {
    char *path;   /* the final name */
    char *tmp;    /* the temporary beside it */
    char *backup; /* a hard link to the file that was at path, while committing */
    FILE *fp;
} fu_outset_file;

typedef struct fu_outset {
    fu_outset_file *files;
    int n, cap;
} fu_outset;

void fu_outset_init(fu_outset *s);
/* Creates a temporary file beside path (mode 0666 less the umask) and opens
 * it for writing ("wb"). NULL with why (why_n bytes) set on failure: path is
 * a directory, its directory cannot be written, out of memory. The FILE stays
 * the set's: do not fclose it. */
FILE *fu_outset_open(fu_outset *s, const char *path, char *why, size_t why_n);
/* Closes every temporary (a failed write or close fails the commit), then
 * renames each over its path. 0 on success; -1 with why set, every path as it
 * was before. */
int fu_outset_commit(fu_outset *s, char *why, size_t why_n);
/* Closes and removes every temporary not committed; frees the set. */
void fu_outset_free(fu_outset *s);

#endif
