/*
 * cupti.c -- what a call made the device do, from CUPTI's Activity API:
 * every kernel (name, grid, block, registers, shared memory, duration), every
 * memset and every memory copy.
 *
 * libcupti is loaded at run time with dlopen and never linked, so the suites
 * build and run (without these records) where it is absent. It stays mapped
 * once loaded (RTLD_NODELETE): CUPTI keeps threads and callbacks that must
 * not outlive its code.
 *
 * Records arrive through two buffer callbacks that CUPTI calls, possibly from
 * its own thread, with no user pointer. They must reach the open hb_cupti, so
 * this file keeps the one piece of process-wide state in the harness: the
 * owner below, guarded by a mutex. CUPTI itself is one per process, and
 * hb_cupti_open refuses a second owner.
 *
 * One call is recorded at a time: hb_cupti_begin discards anything pending
 * and enables the records, the caller launches and synchronizes, and
 * hb_cupti_end flushes (a blocking, forced flush), disables the records and
 * hands them over. Records are only enabled between the two, so CUPTI never
 * traces the event-timed samples.
 *
 * Kernel names: CUPTI names a kernel through a cache of its own; after a
 * module is unloaded and another loaded, a kernel has been seen reported
 * under the name of the unloaded one (an H200, CUDA 13.0). Keep the modules
 * of what is recorded loaded while recording (the runner does: every item's
 * kernels are loaded before any is recorded, and stay loaded).
 */
#define _GNU_SOURCE /* RTLD_NODELETE */
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "harness.h"

/* The kernel, memcpy and memset records are read through their oldest
 * layouts (CUpti_ActivityKernel4, CUpti_ActivityMemcpy, CUpti_ActivityMemset):
 * every later version keeps these leading fields in place and only appends,
 * so the same code reads the records of CUPTI 10 to 13. */
typedef CUpti_ActivityKernel4 hb_kernel_layout;
typedef CUpti_ActivityMemcpy hb_memcpy_layout;
typedef CUpti_ActivityMemset hb_memset_layout;

typedef CUptiResult (*fn_register_t)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
typedef CUptiResult (*fn_kind_t)(CUpti_ActivityKind);
typedef CUptiResult (*fn_flush_all_t)(uint32_t);
typedef CUptiResult (*fn_next_t)(uint8_t *, size_t, CUpti_Activity **);
typedef CUptiResult (*fn_dropped_t)(CUcontext, uint32_t, size_t *);
typedef CUptiResult (*fn_result_string_t)(CUptiResult, const char **);
typedef CUptiResult (*fn_version_t)(uint32_t *);

struct hb_cupti {
    void *lib;
    fn_register_t register_callbacks;
    fn_kind_t enable, disable;
    fn_flush_all_t flush_all;
    fn_next_t next_record;
    fn_dropped_t dropped;
    fn_result_string_t result_string;
    char describe[160];
    /* guarded by owner_lock: filled by the completion callback */
    bool collecting;
    hb_call_record cur;
    uint64_t first_start, last_end;
};

#define BUFFER_BYTES ((size_t)1 << 20)
#define BUFFER_ALIGN 8

/* ---- the process-wide owner (see the header comment) ---- */
static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;
static hb_cupti *owner;
static bool callbacks_registered; /* once per process: they are static functions, and CUPTI keeps them */

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(BUFFER_ALIGN, BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void copy_name(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "?");
}

static void note_span(hb_cupti *c, uint64_t start, uint64_t end)
{
    if (start == 0 || end < start) return;
    if (c->first_start == 0 || start < c->first_start) c->first_start = start;
    if (end > c->last_end) c->last_end = end;
}

/* Takes one record into c->cur (owner_lock held). */
static void take_record(hb_cupti *c, const CUpti_Activity *rec)
{
    hb_call_record *r = &c->cur;
    switch (rec->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const hb_kernel_layout *k = (const hb_kernel_layout *)rec;
        double us = k->end > k->start ? (double)(k->end - k->start) / 1e3 : NAN;
        r->kernels++;
        if (isfinite(us)) r->kernel_us += us;
        else r->kernel_us = NAN;
        note_span(c, k->start, k->end);
        if (r->nrecords < HB_MAX_KERNEL_RECORDS) {
            hb_kernel_record *kr = &r->records[r->nrecords++];
            copy_name(kr->name, sizeof kr->name, k->name);
            kr->grid[0] = (unsigned)k->gridX, kr->grid[1] = (unsigned)k->gridY, kr->grid[2] = (unsigned)k->gridZ;
            kr->block[0] = (unsigned)k->blockX, kr->block[1] = (unsigned)k->blockY, kr->block[2] = (unsigned)k->blockZ;
            kr->registers = k->registersPerThread;
            kr->static_shared = k->staticSharedMemory;
            kr->dynamic_shared = k->dynamicSharedMemory;
            kr->us = us;
        }
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const hb_memcpy_layout *m = (const hb_memcpy_layout *)rec;
        r->memcpys++;
        note_span(c, m->start, m->end);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const hb_memset_layout *m = (const hb_memset_layout *)rec;
        r->memsets++;
        note_span(c, m->start, m->end);
        break;
    }
    default: break;
    }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)ctx, (void)size;
    pthread_mutex_lock(&owner_lock);
    hb_cupti *c = owner;
    if (c && buffer && valid > 0) {
        CUpti_Activity *rec = NULL;
        while (c->next_record(buffer, valid, &rec) == CUPTI_SUCCESS)
            if (c->collecting) take_record(c, rec);
        size_t dropped = 0;
        if (c->dropped && c->dropped(NULL, stream, &dropped) == CUPTI_SUCCESS && c->collecting)
            c->cur.dropped += dropped;
    }
    pthread_mutex_unlock(&owner_lock);
    free(buffer);
}

/* ---- loading ---- */

static void *open_library(char *why, size_t nwhy)
{
    const char *env = getenv("FUSEBENCH_CUPTI");
    const char *home = getenv("CUDA_HOME");
    char paths[8][1024];
    int n = 0;
    if (env && env[0]) snprintf(paths[n++], sizeof paths[0], "%s", env);
    snprintf(paths[n++], sizeof paths[0], "libcupti.so.13");
    snprintf(paths[n++], sizeof paths[0], "libcupti.so");
    if (home && home[0]) {
        snprintf(paths[n++], sizeof paths[0], "%s/lib64/libcupti.so", home);
        snprintf(paths[n++], sizeof paths[0], "%s/extras/CUPTI/lib64/libcupti.so", home);
    }
#ifdef HB_CUPTI_HINT
    snprintf(paths[n++], sizeof paths[0], "%s", HB_CUPTI_HINT);
#endif
    snprintf(paths[n++], sizeof paths[0], "/usr/local/cuda/lib64/libcupti.so");
    snprintf(paths[n++], sizeof paths[0], "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
    const char *last = "";
    for (int i = 0; i < n; i++) {
        void *h = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
        if (h) return h;
        last = dlerror();
        if (!last) last = "";
    }
    snprintf(why, nwhy, "libcupti not found (tried libcupti.so.13, libcupti.so, the CUDA toolkit's lib64 and "
                        "extras/CUPTI/lib64; set FUSEBENCH_CUPTI=PATH): %s", last);
    return NULL;
}

#define RESOLVE(field, sym)                                                           \
    do {                                                                              \
        *(void **)(&c->field) = dlsym(c->lib, sym);                                   \
        if (!c->field) {                                                              \
            snprintf(why, nwhy, "libcupti has no %s: too old a CUPTI", sym);          \
            goto fail;                                                                \
        }                                                                             \
    } while (0)

static const char *result_text(const hb_cupti *c, CUptiResult r)
{
    const char *s = NULL;
    if (c->result_string && c->result_string(r, &s) == CUPTI_SUCCESS && s) return s;
    return "unknown CUPTI error";
}

hb_cupti *hb_cupti_open(char *why, size_t nwhy)
{
    hb_cupti *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, nwhy, "out of memory");
        return NULL;
    }
    pthread_mutex_lock(&owner_lock);
    bool taken = owner != NULL;
    pthread_mutex_unlock(&owner_lock);
    if (taken) {
        snprintf(why, nwhy, "CUPTI is already in use in this process (one hb_cupti at a time)");
        free(c);
        return NULL;
    }
    c->lib = open_library(why, nwhy);
    if (!c->lib) {
        free(c);
        return NULL;
    }
    RESOLVE(register_callbacks, "cuptiActivityRegisterCallbacks");
    RESOLVE(enable, "cuptiActivityEnable");
    RESOLVE(disable, "cuptiActivityDisable");
    RESOLVE(flush_all, "cuptiActivityFlushAll");
    RESOLVE(next_record, "cuptiActivityGetNextRecord");
    RESOLVE(result_string, "cuptiGetResultString");
    *(void **)(&c->dropped) = dlsym(c->lib, "cuptiActivityGetNumDroppedRecords"); /* optional */
    fn_version_t version = NULL;
    *(void **)(&version) = dlsym(c->lib, "cuptiGetVersion");
    uint32_t api = 0;
    if (version) version(&api);
    pthread_mutex_lock(&owner_lock);
    if (owner) {
        pthread_mutex_unlock(&owner_lock);
        snprintf(why, nwhy, "CUPTI is already in use in this process (one hb_cupti at a time)");
        goto fail;
    }
    owner = c;
    CUptiResult r = CUPTI_SUCCESS;
    if (!callbacks_registered) r = c->register_callbacks(buffer_requested, buffer_completed);
    if (r == CUPTI_SUCCESS) callbacks_registered = true;
    else owner = NULL;
    pthread_mutex_unlock(&owner_lock);
    if (r != CUPTI_SUCCESS) {
        snprintf(why, nwhy, "cuptiActivityRegisterCallbacks: %s", result_text(c, r));
        goto fail;
    }
    /* the API version is 10000 * major + 100 * minor + patch since CUDA 12 (130001 = 13.0.1) */
    if (api >= 100000)
        snprintf(c->describe, sizeof c->describe, "CUPTI %u.%u (API %u)", api / 10000, api / 100 % 100, api);
    else
        snprintf(c->describe, sizeof c->describe, "CUPTI (API %u)", api);
    return c;
fail:
    /* the library stays mapped (RTLD_NODELETE); dropping our reference is safe */
    dlclose(c->lib);
    free(c);
    return NULL;
}

static const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                           CUPTI_ACTIVITY_KIND_MEMSET};
#define NKINDS ((int)(sizeof kinds / sizeof kinds[0]))

void hb_cupti_close(hb_cupti *c)
{
    if (!c) return;
    for (int i = 0; i < NKINDS; i++) c->disable(kinds[i]);
    c->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    pthread_mutex_lock(&owner_lock);
    if (owner == c) owner = NULL;
    pthread_mutex_unlock(&owner_lock);
    dlclose(c->lib);
    free(c);
}

const char *hb_cupti_describe(const hb_cupti *c) { return c ? c->describe : "unavailable"; }

fu_status hb_cupti_begin(hb_cupti *c, fu_error *err)
{
    /* Nothing earlier counts. Records are off between calls, so this finds
     * nothing as a rule; before the first call CUPTI may not be initialized
     * yet and say so, which is harmless. */
    c->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    CUptiResult r;
    pthread_mutex_lock(&owner_lock);
    memset(&c->cur, 0, sizeof c->cur);
    c->first_start = c->last_end = 0;
    c->collecting = true;
    pthread_mutex_unlock(&owner_lock);
    for (int i = 0; i < NKINDS; i++) {
        r = c->enable(kinds[i]);
        if (r != CUPTI_SUCCESS) {
            for (int k = 0; k < i; k++) c->disable(kinds[k]);
            pthread_mutex_lock(&owner_lock);
            c->collecting = false;
            pthread_mutex_unlock(&owner_lock);
            return fu_error_set(err, FU_ERR_RUNTIME, "cuptiActivityEnable(kind %d): %s", (int)kinds[i],
                                result_text(c, r));
        }
    }
    return FU_OK;
}

fu_status hb_cupti_end(hb_cupti *c, hb_call_record *out, fu_error *err)
{
    CUptiResult r = c->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    for (int i = 0; i < NKINDS; i++) c->disable(kinds[i]);
    pthread_mutex_lock(&owner_lock);
    c->collecting = false;
    *out = c->cur;
    out->span_us = c->last_end > c->first_start ? (double)(c->last_end - c->first_start) / 1e3 : 0.0;
    pthread_mutex_unlock(&owner_lock);
    if (r != CUPTI_SUCCESS) return fu_error_set(err, FU_ERR_RUNTIME, "cuptiActivityFlushAll: %s", result_text(c, r));
    if (out->dropped)
        return fu_error_set(err, FU_ERR_RUNTIME, "CUPTI dropped %llu activity records (buffers full)",
                            (unsigned long long)out->dropped);
    return FU_OK;
}
