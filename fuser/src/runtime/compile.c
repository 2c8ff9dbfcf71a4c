/*
 * compile.c -- NVRTC (loaded with dlopen), CUDA C++ -> CUBIN, and the on-disk
 * CUBIN cache.
 *
 * Cache entry, <cache dir>/kernels/<key hex>.cubin:
 *   0  magic "FUCUBIN\1"            8 bytes
 *   8  key (SHA-256)               32
 *   40 cubin length, LE u64         8
 *   48 log length, LE u64           8
 *   56 SHA-256 of cubin then log   32
 *   88 cubin, then NVRTC's log (no NUL)
 * An entry is used only if every field checks out; otherwise it is
 * recompiled and replaced. Entries are written to a temporary file in the same
 * directory and renamed into place, so a reader never sees half an entry.
 */
#define _POSIX_C_SOURCE 200809L

#include "runtime_impl.h"
#include "util.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1: compile with --Ofast-compile=min (NVRTC 12.9+), which trades device-code
 * optimisation for compile time. */
#ifndef NVRTC_FAST_COMPILE
#define NVRTC_FAST_COMPILE 0
#endif

/* ---------------------------------------------------------------- loading NVRTC */

#define NV(field, ...) {offsetof(fu_nvrtc_api, field), {__VA_ARGS__}}
static const fu_sym_spec NVRTC_SYMS[] = {
    NV(GetErrorString, "nvrtcGetErrorString"),
    NV(Version, "nvrtcVersion"),
    NV(CreateProgram, "nvrtcCreateProgram"),
    NV(DestroyProgram, "nvrtcDestroyProgram"),
    NV(CompileProgram, "nvrtcCompileProgram"),
    NV(GetCUBINSize, "nvrtcGetCUBINSize"),
    NV(GetCUBIN, "nvrtcGetCUBIN"),
    NV(GetProgramLogSize, "nvrtcGetProgramLogSize"),
    NV(GetProgramLog, "nvrtcGetProgramLog"),
};
#undef NV

/* Library names, tried first through the loader's search path, then in each
 * directory below. */
static const char *const NVRTC_NAMES[] = {"libnvrtc.so.13", "libnvrtc.so"};

/* Directories: env is a variable naming a toolkit root (dir is then relative
 * to it); with env NULL, dir is absolute. */
static const struct {
    const char *env;
    const char *dir;
} NVRTC_DIRS[] = {
    {"CUDA_HOME", "lib64"},
    {"CUDA_PATH", "lib64"},
    {NULL, "/usr/local/cuda/lib64"},
    {NULL, "/usr/local/cuda/targets/x86_64-linux/lib"},
};

/* Where the toolkit's headers (cuda_fp16.h, cuda_bf16.h, ...) may be: NVRTC
 * has only the core ones built in. Same convention as NVRTC_DIRS. */
static const struct {
    const char *env;
    const char *dir;
} INCLUDE_DIRS[] = {
    {"CUDA_HOME", "include"},
    {"CUDA_PATH", "include"},
    {NULL, "/usr/local/cuda/include"},
    {NULL, "/usr/local/cuda/targets/x86_64-linux/include"},
};

#define NAMES_COUNT (sizeof NVRTC_NAMES / sizeof *NVRTC_NAMES)
#define DIRS_COUNT (sizeof NVRTC_DIRS / sizeof *NVRTC_DIRS)

/* Tries path; on success NVRTC is in rt. *problem gets why not otherwise. */
static bool try_nvrtc(fu_runtime *rt, const char *path, char *problem, size_t n)
{
    void *lib = dlopen(path, FU_DLOPEN_FLAGS);
    if (!lib) return false;
    const char *missing =
        fu_resolve_symbols(lib, NVRTC_SYMS, sizeof NVRTC_SYMS / sizeof *NVRTC_SYMS, &rt->nvrtc);
    int major = 0, minor = 0;
    if (!missing && rt->nvrtc.Version(&major, &minor) != NVRTC_SUCCESS) missing = "nvrtcVersion()";
    if (missing) {
        snprintf(problem, n, "%s lacks %s", path, missing);
        memset(&rt->nvrtc, 0, sizeof rt->nvrtc);
        dlclose(lib);
        return false;
    }
    rt->nvrtc_lib = lib;
    rt->nvrtc_major = major;
    rt->nvrtc_minor = minor;
    snprintf(rt->nvrtc_path, sizeof rt->nvrtc_path, "%s", path);
    return true;
}

static void find_include_dir(fu_runtime *rt)
{
    for (size_t d = 0; d < sizeof INCLUDE_DIRS / sizeof *INCLUDE_DIRS; d++) {
        const char *root = INCLUDE_DIRS[d].env ? getenv(INCLUDE_DIRS[d].env) : "";
        if (!root || (INCLUDE_DIRS[d].env && !*root)) continue;
        char dir[600], probe[700];
        if (INCLUDE_DIRS[d].env)
            snprintf(dir, sizeof dir, "%s/%s", root, INCLUDE_DIRS[d].dir);
        else
            snprintf(dir, sizeof dir, "%s", INCLUDE_DIRS[d].dir);
        snprintf(probe, sizeof probe, "%s/cuda_fp16.h", dir);
        if (access(probe, R_OK) == 0) {
            snprintf(rt->include_option, sizeof rt->include_option, "-I%s", dir);
            return;
        }
    }
}

void fu_nvrtc_load(fu_runtime *rt)
{
    find_include_dir(rt);
    char problem[512] = "";
    for (size_t i = 0; i < NAMES_COUNT; i++)
        if (try_nvrtc(rt, NVRTC_NAMES[i], problem, sizeof problem)) return;
    for (size_t d = 0; d < DIRS_COUNT; d++) {
        const char *root = NVRTC_DIRS[d].env ? getenv(NVRTC_DIRS[d].env) : "";
        if (!root || (NVRTC_DIRS[d].env && !*root)) continue;
        for (size_t i = 0; i < NAMES_COUNT; i++) {
            char path[1024];
            if (NVRTC_DIRS[d].env)
                snprintf(path, sizeof path, "%s/%s/%s", root, NVRTC_DIRS[d].dir, NVRTC_NAMES[i]);
            else
                snprintf(path, sizeof path, "%s/%s", NVRTC_DIRS[d].dir, NVRTC_NAMES[i]);
            if (try_nvrtc(rt, path, problem, sizeof problem)) return;
        }
    }
    if (problem[0]) {
        snprintf(rt->nvrtc_problem, sizeof rt->nvrtc_problem, "%s", problem);
        return;
    }
    /* Not found anywhere: say where we looked. */
    fu_strbuf sb;
    fu_sb_init(&sb);
    fu_sb_printf(&sb, "%s not found (looked in the loader path", NVRTC_NAMES[0]);
    for (size_t d = 0; d < DIRS_COUNT; d++) {
        if (NVRTC_DIRS[d].env)
            fu_sb_printf(&sb, ", $%s/%s", NVRTC_DIRS[d].env, NVRTC_DIRS[d].dir);
        else
            fu_sb_printf(&sb, ", %s", NVRTC_DIRS[d].dir);
    }
    fu_sb_puts(&sb, ")");
    char *text = fu_sb_take(&sb);
    snprintf(rt->nvrtc_problem, sizeof rt->nvrtc_problem, "%s", text ? text : "NVRTC not found");
    fu_free(text);
}

/* ---------------------------------------------------------------- cache dir */

void fu_cache_dir_init(fu_runtime *rt, const fu_runtime_options *opts)
{
    rt->cache_dir[0] = '\0';
    if (opts->no_disk_cache) return;
    const char *v;
    if (opts->cache_dir && *opts->cache_dir)
        snprintf(rt->cache_dir, sizeof rt->cache_dir, "%s", opts->cache_dir);
    else if ((v = getenv("FUSER_CACHE_DIR")) && *v)
        snprintf(rt->cache_dir, sizeof rt->cache_dir, "%s", v);
    else if ((v = getenv("XDG_CACHE_HOME")) && v[0] == '/')
        snprintf(rt->cache_dir, sizeof rt->cache_dir, "%s/fuser", v);
    else if ((v = getenv("HOME")) && *v)
        snprintf(rt->cache_dir, sizeof rt->cache_dir, "%s/.cache/fuser", v);
    /* Trailing slashes only make paths ugly. */
    size_t n = strlen(rt->cache_dir);
    while (n > 1 && rt->cache_dir[n - 1] == '/') rt->cache_dir[--n] = '\0';
}

/* mkdir -p; 0 on success, else errno. */
static int make_dirs(const char *path)
{
    char buf[1024];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof buf) return ENAMETOOLONG;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0') continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return errno;
        buf[i] = c;
    }
    struct stat st;
    if (stat(path, &st) != 0) return errno;
    return S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
}

/* Writes data to path atomically (temporary file + rename). 0 or errno. */
static int write_atomic(const char *path, const void *const *parts, const size_t *sizes,
                        int nparts)
{
    char tmp[1200];
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) : 0;
    snprintf(tmp, sizeof tmp, "%.*s%s.tmp-%s-XXXXXX", dirlen, path, slash ? "/" : "",
             slash ? slash + 1 : path);
    int fd = mkstemp(tmp);
    if (fd < 0) return errno;
    int e = 0;
    for (int i = 0; i < nparts && !e; i++) {
        const char *p = parts[i];
        size_t left = sizes[i];
        while (left > 0) {
            ssize_t w = write(fd, p, left);
            if (w < 0) {
                if (errno == EINTR) continue;
                e = errno;
                break;
            }
            p += w;
            left -= (size_t)w;
        }
    }
    if (close(fd) != 0 && !e) e = errno;
    if (!e && rename(tmp, path) != 0) e = errno;
    if (e) unlink(tmp);
    return e;
}

/* ---------------------------------------------------------------- cache entries */

#define ENTRY_MAGIC "FUCUBIN\1"
#define ENTRY_HEADER 88

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void payload_hash(const void *cubin, size_t cubin_n, const char *log, size_t log_n,
                         unsigned char out[32])
{
    fu_sha256 h;
    fu_sha256_init(&h);
    fu_sha256_update(&h, cubin, cubin_n);
    fu_sha256_update(&h, log, log_n);
    fu_sha256_final(&h, out);
}

typedef enum { ENTRY_MISSING, ENTRY_BAD, ENTRY_OK } entry_state;

/* The largest entry body read (a CUBIN and its log); a header claiming more
 * is treated as corrupt. */
#define ENTRY_MAX_BODY ((uint64_t)1 << 30)

/* Reads and checks an entry; on ENTRY_OK, *cubin and *log are malloc'd. Only
 * a regular file is read (a FIFO or a device there is a bad entry, not a hang),
 * and only as many bytes as its header says, which must be the file's size. */
static entry_state read_entry(const char *path, const unsigned char key[32], void **cubin,
                              size_t *cubin_n, char **log)
{
    *cubin = NULL;
    *log = NULL;
    struct stat fs;
    char why[160];
    int fd = fu_open_regular(path, &fs, why, sizeof why);
    if (fd < 0) return errno == ENOENT ? ENTRY_MISSING : ENTRY_BAD;
    unsigned char head[ENTRY_HEADER];
    entry_state st = ENTRY_BAD;
    unsigned char *body = NULL;
    if (fs.st_size < ENTRY_HEADER || fu_read_exact(fd, head, sizeof head) || memcmp(head, ENTRY_MAGIC, 8) ||
        memcmp(head + 8, key, 32))
        goto done;
    uint64_t cn = get_u64(head + 40), ln = get_u64(head + 48);
    if (cn == 0 || cn > ENTRY_MAX_BODY || ln > ENTRY_MAX_BODY || cn + ln != (uint64_t)fs.st_size - ENTRY_HEADER)
        goto done;
    body = fu_malloc((size_t)(cn + ln));
    if (!body) {
        st = ENTRY_MISSING; /* out of memory: just compile */
        goto done;
    }
    if (fu_read_exact(fd, body, (size_t)(cn + ln))) goto done;
    unsigned char h[32];
    payload_hash(body, (size_t)cn, (const char *)body + cn, (size_t)ln, h);
    if (memcmp(h, head + 56, 32)) goto done;
    *log = fu_malloc((size_t)ln + 1);
    if (!*log) {
        st = ENTRY_MISSING;
        goto done;
    }
    memcpy(*log, body + cn, (size_t)ln);
    (*log)[ln] = '\0';
    *cubin = body; /* the CUBIN is the front of the body; the log copy was taken */
    body = NULL;
    *cubin_n = (size_t)cn;
    st = ENTRY_OK;
done:
    fu_free(body);
    close(fd);
    return st;
}

static int write_entry(const char *dir, const char *path, const unsigned char key[32],
                       const void *cubin, size_t cubin_n, const char *log)
{
    int e = make_dirs(dir);
    if (e) return e;
    size_t log_n = strlen(log);
    unsigned char header[ENTRY_HEADER];
    memcpy(header, ENTRY_MAGIC, 8);
    memcpy(header + 8, key, 32);
    put_u64(header + 40, cubin_n);
    put_u64(header + 48, log_n);
    payload_hash(cubin, cubin_n, log, log_n, header + 56);
    const void *parts[3] = {header, cubin, log};
    size_t sizes[3] = {sizeof header, cubin_n, log_n};
    return write_atomic(path, parts, sizes, 3);
}

/* ---------------------------------------------------------------- key */

static void hash_field(fu_sha256 *h, const void *data, size_t n)
{
    unsigned char len[8];
    put_u64(len, n);
    fu_sha256_update(h, len, 8);
    fu_sha256_update(h, data, n);
}

/* Everything that decides the CUBIN: a format tag, NVRTC's version, the full
 * option list (which holds the architecture and the toolkit include path)
 * and the source. The program name is left out: it only names the source in
 * messages. Included headers are not hashed: the only ones found are NVRTC's
 * built-ins and the toolkit's, whose version goes with NVRTC's. */
static void compute_key(const fu_runtime *rt, const char *source, const char *const *opts,
                        int nopts, unsigned char key[32])
{
    fu_sha256 h;
    fu_sha256_init(&h);
    static const char tag[] = "fuser cubin cache v1";
    hash_field(&h, tag, sizeof tag - 1);
    char ver[32];
    snprintf(ver, sizeof ver, "nvrtc %d.%d", rt->nvrtc_major, rt->nvrtc_minor);
    hash_field(&h, ver, strlen(ver));
    unsigned char count[8];
    put_u64(count, (uint64_t)nopts);
    fu_sha256_update(&h, count, 8);
    for (int i = 0; i < nopts; i++) hash_field(&h, opts[i], strlen(opts[i]));
    hash_field(&h, source, strlen(source));
    fu_sha256_final(&h, key);
}

static void to_hex(const unsigned char *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

/* ---------------------------------------------------------------- failed sources */

/* Saves the source and the full log of a failed compile; fills saved with a
 * phrase naming where (or why not). */
static void save_failure(const fu_runtime *rt, const char *name, const char *hex,
                         const char *source, const char *log, char *saved, size_t n)
{
    char dir[1100];
    if (rt->cache_dir[0]) {
        snprintf(dir, sizeof dir, "%s/failed", rt->cache_dir);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/fuser-failed", tmp && *tmp ? tmp : "/tmp");
    }
    char safe[65];
    size_t k = 0;
    for (const char *p = name; *p && k < sizeof safe - 1; p++) {
        char c = *p;
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '-' || c == '.';
        safe[k++] = ok ? c : '_';
    }
    safe[k] = '\0';
    char src_path[1300], log_path[1300];
    snprintf(src_path, sizeof src_path, "%s/%s-%.16s.cu", dir, safe, hex);
    snprintf(log_path, sizeof log_path, "%s/%s-%.16s.log", dir, safe, hex);
    int e = make_dirs(dir);
    const void *sp[1] = {source};
    size_t ss[1] = {strlen(source)};
    if (!e) e = write_atomic(src_path, sp, ss, 1);
    if (e) {
        snprintf(saved, n, "source not saved: %s: %s", dir, strerror(e));
        return;
    }
    const void *lp[1] = {log};
    size_t ls[1] = {strlen(log)};
    if (write_atomic(log_path, lp, ls, 1) == 0)
        snprintf(saved, n, "source saved to %s (full log beside it, .log)", src_path);
    else
        snprintf(saved, n, "source saved to %s", src_path);
}

/* ---------------------------------------------------------------- NVRTC */

/* Compiles with NVRTC; on success *cubin and *log are malloc'd. */
static fu_status nvrtc_compile(fu_runtime *rt, const char *source, const char *name,
                               const char *const *opts, int nopts, const char *hex, void **cubin,
                               size_t *cubin_n, char **log, double *ms, fu_error *err)
{
    *cubin = NULL;
    *log = NULL;
    double t0 = fu_now_ms();
    nvrtcProgram prog = NULL;
    nvrtcResult r = rt->nvrtc.CreateProgram(&prog, source, name, 0, NULL, NULL);
    if (r != NVRTC_SUCCESS)
        return fu_error_set(err, r == NVRTC_ERROR_OUT_OF_MEMORY ? FU_ERR_NOMEM : FU_ERR_RUNTIME,
                            "nvrtcCreateProgram failed for '%s': %s", name,
                            rt->nvrtc.GetErrorString(r));
    rt->stats.nvrtc_calls++;
    nvrtcResult cr = rt->nvrtc.CompileProgram(prog, nopts, opts);
    size_t log_n = 0;
    char *text = NULL;
    if (rt->nvrtc.GetProgramLogSize(prog, &log_n) == NVRTC_SUCCESS && log_n > 0) {
        text = fu_malloc(log_n + 1);
        if (text && rt->nvrtc.GetProgramLog(prog, text) != NVRTC_SUCCESS) text[0] = '\0';
        if (text) text[log_n] = '\0';
    }
    if (!text) text = fu_strdup("");
    fu_status s = FU_OK;
    if (!text) {
        s = fu_error_set(err, FU_ERR_NOMEM, "out of memory reading NVRTC's log");
    } else if (cr != NVRTC_SUCCESS) {
        char saved[1400];
        save_failure(rt, name, hex, source, text, saved, sizeof saved);
        /* Drop the log's trailing newlines; it goes last, so a long log is
         * what gets cut, not the names. */
        size_t tl = strlen(text);
        while (tl > 0 && (text[tl - 1] == '\n' || text[tl - 1] == '\r')) text[--tl] = '\0';
        s = fu_error_set(err, cr == NVRTC_ERROR_OUT_OF_MEMORY ? FU_ERR_NOMEM : FU_ERR_RUNTIME,
                         "NVRTC failed to compile '%s' for %s: %s (%s)\n%s", name, rt->arch,
                         rt->nvrtc.GetErrorString(cr), saved, text);
    } else {
        size_t n = 0;
        r = rt->nvrtc.GetCUBINSize(prog, &n);
        if (r != NVRTC_SUCCESS || n == 0) {
            s = fu_error_set(err, FU_ERR_RUNTIME, "nvrtcGetCUBINSize failed for '%s': %s", name,
                             r != NVRTC_SUCCESS ? rt->nvrtc.GetErrorString(r) : "empty CUBIN");
        } else if (!(*cubin = fu_malloc(n))) {
            s = fu_error_set(err, FU_ERR_NOMEM, "out of memory for a %zu-byte CUBIN", n);
        } else if ((r = rt->nvrtc.GetCUBIN(prog, *cubin)) != NVRTC_SUCCESS) {
            s = fu_error_set(err, FU_ERR_RUNTIME, "nvrtcGetCUBIN failed for '%s': %s", name,
                             rt->nvrtc.GetErrorString(r));
        } else {
            *cubin_n = n;
        }
    }
    rt->nvrtc.DestroyProgram(&prog);
    *ms = fu_now_ms() - t0;
    rt->stats.compile_ms += *ms;
    if (s != FU_OK) {
        fu_free(*cubin);
        fu_free(text);
        *cubin = NULL;
        return s;
    }
    *log = text;
    return FU_OK;
}

/* ---------------------------------------------------------------- compile */

static bool nvrtc_at_least(const fu_runtime *rt, int major, int minor)
{
    return rt->nvrtc_major > major || (rt->nvrtc_major == major && rt->nvrtc_minor >= minor);
}

fu_status fu_runtime_compile(fu_runtime *rt, const char *source, const char *name_for_messages,
                             const char *const *extra_options, int nopts, fu_module **out,
                             fu_compile_info *info, fu_error *err)
{
    double t0 = fu_now_ms();
    fu_compile_info local;
    if (!info) info = &local;
    memset(info, 0, sizeof *info);
    if (out) *out = NULL;
    if (!rt || !source || !out || nopts < 0 || (nopts > 0 && !extra_options))
        return fu_error_set(err, FU_ERR_ARG, "fu_runtime_compile: bad argument");
    const char *name = name_for_messages && *name_for_messages ? name_for_messages : "kernel.cu";
    for (int i = 0; i < nopts; i++)
        if (!extra_options[i])
            return fu_error_set(err, FU_ERR_ARG, "fu_runtime_compile('%s'): option %d is NULL",
                                name, i);
    if (!rt->nvrtc_lib)
        return fu_error_set(err, FU_ERR_RUNTIME, "cannot compile '%s': NVRTC unavailable: %s", name,
                            rt->nvrtc_problem);

    /* The full option list: ours, then the caller's. */
    char arch_opt[48];
    snprintf(arch_opt, sizeof arch_opt, "--gpu-architecture=%s", rt->arch);
    const char *defaults[8] = {arch_opt, "-std=c++17", "-default-device"};
    int ndef = 3;
    if (rt->include_option[0]) defaults[ndef++] = rt->include_option;
    /* NVRTC 12.9+ keeps its own cache of compiled programs: off, so that the
     * compile times we report are compiles (our disk cache does the caching) */
    bool v12_9 = nvrtc_at_least(rt, 12, 9);
    if (v12_9) defaults[ndef++] = "--no-cache";
    if (v12_9 && NVRTC_FAST_COMPILE) defaults[ndef++] = "--Ofast-compile=min";
    /* 12.4+: leave out the runtime's types and device-side launch, which no
     * kernel here uses (the same CUBIN for the seed kernels, ~4 ms less) */
    if (nvrtc_at_least(rt, 12, 4)) defaults[ndef++] = "-minimal";
    /* Options tried against these defaults on the suite kernels (NVRTC 13.0, sm_90; CUBINs
     * compared section by section): -dopt=on, --Ofast-compile=0, -split-compile=1, -std=c++14,
     * -w, -Xptxas=-O3, --extra-device-vectorization, no -minimal and another malloc give the
     * same SASS and save nothing but the allocator's 3-5%; --Ofast-compile=min/mid/max (10-45%
     * faster) and -split-compile=0/2 change the SASS. NVVM and ptxas share the time ~45/55 and
     * follow the unrolled bodies' size; the prelude costs < 1 ms. */
    const char **opts = fu_malloc(sizeof *opts * (size_t)(ndef + nopts + 1));
    if (!opts) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    for (int i = 0; i < ndef; i++) opts[i] = defaults[i];
    for (int i = 0; i < nopts; i++) opts[ndef + i] = extra_options[i];
    int nall = ndef + nopts;

    unsigned char key[32];
    compute_key(rt, source, opts, nall, key);
    /* FUSER_NVRTC_TIME=FILE: NVRTC appends its time per phase (front end, NVVM, ptxas) to
     * FILE, a CSV (scripts/compile_times.sh --phases). Not in the key: the CUBIN is the same. */
    char time_opt[1100];
    const char *time_file = getenv("FUSER_NVRTC_TIME");
    int ncompile = nall;
    if (time_file && *time_file) {
        snprintf(time_opt, sizeof time_opt, "--time=%s", time_file);
        opts[ncompile++] = time_opt;
    }
    to_hex(key, 32, info->key);
    char dir[1100] = "", path[1200] = ""; /* (a cache_dir of 1023 bytes: 1171 with the key) */
    if (rt->cache_dir[0]) {
        snprintf(dir, sizeof dir, "%s/kernels", rt->cache_dir);
        snprintf(path, sizeof path, "%s/%s.cubin", dir, info->key);
        snprintf(info->cache_file, sizeof info->cache_file, "%s", path);
    }

    void *cubin = NULL;
    size_t cubin_n = 0;
    char *log = NULL;
    entry_state st = ENTRY_MISSING;
    if (path[0]) {
        st = read_entry(path, key, &cubin, &cubin_n, &log);
        if (st == ENTRY_BAD) rt->stats.cache_rejects++;
    }
    if (st == ENTRY_OK) {
        info->cache_hit = true;
        rt->stats.cache_hits++;
    } else {
        fu_status s = nvrtc_compile(rt, source, name, opts, ncompile, info->key, &cubin, &cubin_n,
                                    &log, &info->compile_ms, err);
        if (s != FU_OK) {
            fu_free(opts);
            info->total_ms = fu_now_ms() - t0;
            return s;
        }
        int we = path[0] ? write_entry(dir, path, key, cubin, cubin_n, log) : 0;
        if (we != 0 && rt->stats.cache_write_errors++ == 0) /* said once per runtime: the count has the rest */
            fprintf(stderr, "fuser: warning: the kernel cache could not be written (%s: %s); kernels are compiled "
                            "again next time\n", path, strerror(we));
    }
    fu_free(opts);

    fu_module *m = fu_calloc(1, sizeof *m);
    char *mname = fu_strdup(name);
    if (!m || !mname) {
        fu_free(m);
        fu_free(mname);
        fu_free(cubin);
        fu_free(log);
        return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    }
    m->rt = rt;
    m->name = mname;
    m->cubin = cubin;
    m->cubin_bytes = cubin_n;
    m->log = log;
    if (rt->has_device) {
        CUresult r = rt->cu.ModuleLoadData(&m->mod, cubin);
        if (r != CUDA_SUCCESS) {
            m->mod = NULL;
            fu_status s = fu_cu_error(rt, err, r, "cuModuleLoadData", __FILE__, __LINE__);
            fu_error_append(err, " (module '%s', %zu-byte CUBIN for %s, device sm_%d%d)", name,
                            cubin_n, rt->arch, rt->props.cc_major, rt->props.cc_minor);
            fu_module_free(m);
            return s;
        }
        rt->stats.modules_loaded++;
    }
    rt->stats.compiles++;
    info->cubin_bytes = cubin_n;
    info->total_ms = fu_now_ms() - t0;
    *out = m;
    return FU_OK;
}

void fu_module_free(fu_module *m)
{
    if (!m) return;
    for (fu_kernel *k = m->kernels, *next; k; k = next) {
        next = k->next;
        fu_free(k->name);
        fu_free(k);
    }
    if (m->mod) m->rt->cu.ModuleUnload(m->mod);
    fu_free(m->cubin);
    fu_free(m->log);
    fu_free(m->name);
    fu_free(m);
}

const void *fu_module_cubin(const fu_module *m, size_t *bytes)
{
    if (bytes) *bytes = m->cubin_bytes;
    return m->cubin;
}

const char *fu_module_log(const fu_module *m) { return m->log ? m->log : ""; }
bool fu_module_loaded(const fu_module *m) { return m && m->mod; }

const char *fu_runtime_include_dir(const fu_runtime *rt)
{
    return rt->include_option[0] ? rt->include_option + 2 : "";
}
