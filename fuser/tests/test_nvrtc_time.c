/*
 * test_nvrtc_time.c -- FUSER_NVRTC_TIME=FILE (scripts/compile_times.sh --phases): NVRTC
 * writes its time per phase to FILE, and the CUBIN and the cache key stay what they are
 * without it (the key leaves the option out). No GPU needed; NVRTC must be present.
 */
#define _XOPEN_SOURCE 700

#include "check.h"
#include "runtime.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SRC = "extern \"C\" __global__ void twice(float *x, int n)\n"
                         "{\n"
                         "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "    if (i < n) x[i] *= 2.0f;\n"
                         "}\n";

/* Compiles SRC in a fresh cache under root/sub; copies out the key and the CUBIN. */
static bool compile_once(const char *root, const char *sub, char *key, size_t key_n,
                         unsigned char **cubin, size_t *cubin_n, bool *hit)
{
    char dir[700];
    snprintf(dir, sizeof dir, "%s/%s", root, sub);
    fu_runtime_options opts = {0};
    opts.compile_only = true;
    opts.cache_dir = dir;
    opts.arch = "sm_90";
    fu_runtime *rt = NULL;
    fu_error err = {0};
    if (fu_runtime_open(&opts, &rt, &err) != FU_OK) {
        fprintf(stderr, "open: %s\n", err.message);
        return false;
    }
    CHECK(fu_runtime_has_nvrtc(rt));
    fu_module *m = NULL;
    fu_compile_info info;
    fu_status s = fu_runtime_compile(rt, SRC, "twice.cu", NULL, 0, &m, &info, &err);
    CHECK(s == FU_OK);
    if (s != FU_OK) fprintf(stderr, "compile: %s\n", err.message);
    bool ok = s == FU_OK;
    if (ok) {
        snprintf(key, key_n, "%s", info.key);
        *hit = info.cache_hit;
        const void *c = fu_module_cubin(m, cubin_n);
        *cubin = malloc(*cubin_n);
        if (*cubin) memcpy(*cubin, c, *cubin_n);
        ok = *cubin != NULL;
    }
    fu_module_free(m);
    fu_runtime_close(rt);
    return ok;
}

int main(void)
{
    char root[512];
    if (!tu_make_temp_dir(root, sizeof root, "fuser-nvrtc-time")) return 1;
    char key0[80] = "", key1[80] = "", key2[80] = "";
    unsigned char *c0 = NULL, *c1 = NULL, *c2 = NULL;
    size_t n0 = 0, n1 = 0, n2 = 0;
    bool hit = true;
    unsetenv("FUSER_NVRTC_TIME");
    CHECK(compile_once(root, "plain", key0, sizeof key0, &c0, &n0, &hit));
    CHECK(!hit);

    char tfile[700];
    snprintf(tfile, sizeof tfile, "%s/phases.csv", root);
    setenv("FUSER_NVRTC_TIME", tfile, 1);
    CHECK(compile_once(root, "timed", key1, sizeof key1, &c1, &n1, &hit));
    CHECK(!hit);
    CHECK(!strcmp(key0, key1));                         /* the same cache entry */
    CHECK(n0 == n1 && c0 && c1 && !memcmp(c0, c1, n0)); /* the same CUBIN, byte for byte */
    char *text = tu_read_file(tfile, NULL);
    CHECK(text != NULL);
    if (text) { /* one row per phase, each naming the program */
        CHECK_CONTAINS(text, "twice.cu, CUDA C++ Frontend, ");
        CHECK_CONTAINS(text, "twice.cu, NVVM Optimizer, ");
        CHECK_CONTAINS(text, "twice.cu, PTX Translation, ");
    }
    free(text);

    /* From the cache NVRTC is not called: the file stays as it was. */
    remove(tfile);
    CHECK(compile_once(root, "timed", key2, sizeof key2, &c2, &n2, &hit));
    CHECK(hit);
    CHECK(!strcmp(key0, key2));
    CHECK(tu_read_file(tfile, NULL) == NULL);
    unsetenv("FUSER_NVRTC_TIME");

    free(c0);
    free(c1);
    free(c2);
    tu_remove_tree(root);
    return check_finish("test_nvrtc_time");
}
