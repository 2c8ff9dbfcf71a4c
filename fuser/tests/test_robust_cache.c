/*
 * test_robust_cache.c -- issue 21 for the kernel cache, through `fuser plan`
 * (FUSER_BIN; NVRTC compiles, no GPU needed):
 *   - an entry that is a FIFO hung `fuser plan`; one that is a link to
 *     /dev/zero took gigabytes: both are now bad entries, recompiled and
 *     replaced at once;
 *   - an entry whose header claims more bytes than the file has is recompiled;
 *   - a cache that cannot be written is said once on stderr, with why.
 * Every plan runs under `timeout` so that a hang fails the test instead of
 * stalling CI.
 */
#define _XOPEN_SOURCE 700

#include <stdint.h>

#include "check.h"
#include "test_util.h"

static const char *fuser_bin;
static char dir[256];

static char *path_in(const char *name)
{
    static char bufs[16][512];
    static int next;
    char *b = bufs[next++ % 16];
    snprintf(b, 512, "%s/%s", dir, name);
    return b;
}

static void spit(const char *path, const char *text)
{
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    if (!fp) return;
    fputs(text, fp);
    fclose(fp);
}

/* `timeout 120 fuser plan FILE` with FUSER_CACHE_DIR=cache. */
static tu_output plan(const char *file, const char *cache)
{
    setenv("FUSER_CACHE_DIR", cache, 1);
    const char *args[] = {"-s", "KILL", "120", fuser_bin, "plan", file, NULL};
    tu_output r = tu_run_capture("/usr/bin/timeout", args);
    CHECK(r.status != TU_NOT_RUN);
    return r;
}

/* The cache's entries (<cache>/kernels/<hex>.cubin), up to max. */
static int entries(const char *cache, char names[][1200], int max)
{
    char kdir[600];
    snprintf(kdir, sizeof kdir, "%s/kernels", cache);
    DIR *d = opendir(kdir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t len = strlen(e->d_name);
        if (len > 6 && strcmp(e->d_name + len - 6, ".cubin") == 0) snprintf(names[n++], 1200, "%s/%s", kdir, e->d_name);
    }
    closedir(d);
    return n;
}

static bool is_regular(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

int main(void)
{
    fuser_bin = getenv("FUSER_BIN");
    if (!fuser_bin) {
        fprintf(stderr, "test_robust_cache: FUSER_BIN must be set (ctest sets it)\n");
        return 1;
    }
    if (access("/usr/bin/timeout", X_OK) != 0) {
        printf("test_robust_cache: skipped: no /usr/bin/timeout\n");
        return 77;
    }
    if (!tu_make_temp_dir(dir, sizeof dir, "test_robust_cache")) return 1;
    /* two kernels: segment_set forces a boundary */
    const char *file = path_in("two.fusion");
    spit(file, "fusion two\ninput x: f32[64]\ny = neg(x)\nz = segment_set(y)\nw = exp(z)\noutput w\n");
    const char *cache = path_in("cache");

    tu_output r = plan(file, cache);
    CHECK(r.status == 0);
    if (r.status != 0) fprintf(stderr, "  first plan: exit %d: %s\n", r.status, r.err);
    tu_output_free(&r);
    char names[4][1200];
    int n = entries(cache, names, 4);
    CHECK(n == 2);
    if (n < 2) {
        tu_remove_tree(dir);
        return check_finish("test_robust_cache");
    }

    /* A FIFO and a link to /dev/zero in place of the two entries. */
    CHECK(unlink(names[0]) == 0 && mkfifo(names[0], 0644) == 0);
    CHECK(unlink(names[1]) == 0 && symlink("/dev/zero", names[1]) == 0);
    r = plan(file, cache);
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "2 NVRTC calls");
    if (r.status != 0) fprintf(stderr, "  FIFO and /dev/zero entries: exit %d: %s\n", r.status, r.err);
    tu_output_free(&r);
    CHECK(is_regular(names[0]) && is_regular(names[1])); /* replaced by good entries */
    r = plan(file, cache);
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "0 NVRTC calls");
    tu_output_free(&r);

    /* A header claiming a CUBIN of 2^40 bytes in a file of a few KB. */
    FILE *fp = fopen(names[0], "r+b");
    CHECK(fp != NULL);
    if (fp) {
        unsigned char big[8] = {0, 0, 0, 0, 0, 1, 0, 0}; /* little-endian 2^40 */
        fseek(fp, 40, SEEK_SET);
        fwrite(big, 1, 8, fp);
        fclose(fp);
    }
    r = plan(file, cache);
    CHECK(r.status == 0);
    CHECK_CONTAINS(r.out, "1 NVRTC call");
    tu_output_free(&r);

    /* A cache below a regular file cannot be written: one warning, why. */
    const char *blocker = path_in("not_a_dir");
    spit(blocker, "x");
    r = plan(file, path_in("not_a_dir/cache"));
    CHECK(r.status == 0);
    CHECK(count(r.err, "the kernel cache could not be written") == 1);
    CHECK_CONTAINS(r.err, "Not a directory");
    if (r.status != 0 || count(r.err, "could not be written") != 1) fprintf(stderr, "  stderr: %s\n", r.err);
    tu_output_free(&r);

    tu_remove_tree(dir);
    return check_finish("test_robust_cache");
}
