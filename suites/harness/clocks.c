/*
 * clocks.c -- the GPU's clocks and throttle reasons through NVML, loaded
 * with dlopen("libnvidia-ml.so.1") (the driver installs it; the toolkit has
 * no nvml.h here, so the few types used are declared below as NVML defines
 * them). Where NVML is absent the harness records that clock sampling was
 * unavailable and keeps every sample.
 */
#define _GNU_SOURCE /* RTLD_NODELETE */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* From nvml.h (stable ABI). */
typedef int nvml_return;                 /* nvmlReturn_t; 0 = NVML_SUCCESS */
typedef struct nvml_device_st *nvml_device;
enum { NVML_CLOCK_GRAPHICS = 0, NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
/* nvmlClocksEventReason* (formerly nvmlClocksThrottleReason*) */
#define NVML_REASON_GPU_IDLE 0x1ull
#define NVML_REASON_APP_CLOCKS 0x2ull
#define NVML_REASON_SW_POWER_CAP 0x4ull
#define NVML_REASON_HW_SLOWDOWN 0x8ull
#define NVML_REASON_SYNC_BOOST 0x10ull
#define NVML_REASON_SW_THERMAL 0x20ull
#define NVML_REASON_HW_THERMAL 0x40ull
#define NVML_REASON_HW_POWER_BRAKE 0x80ull

typedef nvml_return (*fn_void_t)(void);
typedef nvml_return (*fn_handle_t)(unsigned, nvml_device *);
typedef nvml_return (*fn_clock_t)(nvml_device, int, unsigned *);
typedef nvml_return (*fn_reasons_t)(nvml_device, unsigned long long *);
typedef nvml_return (*fn_driver_t)(char *, unsigned);
typedef const char *(*fn_error_string_t)(nvml_return);

struct hb_clocks {
    void *lib;
    fn_void_t shutdown;
    fn_clock_t clock;
    fn_reasons_t reasons;
    nvml_device dev;
    char driver[64];
};

bool hb_clock_reasons_throttled(uint64_t reasons)
{
    /* Idle, application clocks and sync boost are not slowdowns of a busy
     * GPU; a power cap, thermal or hardware slowdown is. */
    return (reasons & (NVML_REASON_SW_POWER_CAP | NVML_REASON_HW_SLOWDOWN | NVML_REASON_SW_THERMAL |
                       NVML_REASON_HW_THERMAL | NVML_REASON_HW_POWER_BRAKE)) != 0;
}

/* NVML numbers devices in PCI order, CUDA (by default) fastest first; the
 * first entry of CUDA_VISIBLE_DEVICES, when it is a plain number, is the NVML
 * index of CUDA device 0. On a one-GPU machine both are 0. */
static unsigned nvml_index(int cuda_ordinal)
{
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (v && cuda_ordinal == 0 && v[0] >= '0' && v[0] <= '9') {
        char *end;
        long i = strtol(v, &end, 10);
        if ((*end == '\0' || *end == ',') && i >= 0) return (unsigned)i;
    }
    return cuda_ordinal >= 0 ? (unsigned)cuda_ordinal : 0u;
}

hb_clocks *hb_clocks_open(int cuda_ordinal, char *why, size_t nwhy)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!lib) {
        const char *e = dlerror();
        snprintf(why, nwhy, "libnvidia-ml.so.1 not found (%s)", e ? e : "?");
        return NULL;
    }
    hb_clocks *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(why, nwhy, "out of memory");
        dlclose(lib);
        return NULL;
    }
    c->lib = lib;
    fn_void_t init = NULL;
    fn_handle_t handle = NULL;
    fn_driver_t driver = NULL;
    fn_error_string_t error_string = NULL;
    *(void **)(&init) = dlsym(lib, "nvmlInit_v2");
    *(void **)(&c->shutdown) = dlsym(lib, "nvmlShutdown");
    *(void **)(&handle) = dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
    *(void **)(&c->clock) = dlsym(lib, "nvmlDeviceGetClockInfo");
    *(void **)(&c->reasons) = dlsym(lib, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!c->reasons) *(void **)(&c->reasons) = dlsym(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
    *(void **)(&driver) = dlsym(lib, "nvmlSystemGetDriverVersion");
    *(void **)(&error_string) = dlsym(lib, "nvmlErrorString");
    if (!init || !c->shutdown || !handle || !c->clock) {
        snprintf(why, nwhy, "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByIndex_v2 or "
                            "nvmlDeviceGetClockInfo");
        goto fail;
    }
    nvml_return r = init();
    if (r != 0) {
        snprintf(why, nwhy, "nvmlInit: %s", error_string ? error_string(r) : "error");
        goto fail;
    }
    unsigned index = nvml_index(cuda_ordinal);
    r = handle(index, &c->dev);
    if (r != 0) {
        snprintf(why, nwhy, "nvmlDeviceGetHandleByIndex(%u): %s", index, error_string ? error_string(r) : "error");
        c->shutdown();
        goto fail;
    }
    unsigned mhz;
    r = c->clock(c->dev, NVML_CLOCK_SM, &mhz);
    if (r != 0) {
        snprintf(why, nwhy, "nvmlDeviceGetClockInfo: %s", error_string ? error_string(r) : "error");
        c->shutdown();
        goto fail;
    }
    if (driver && driver(c->driver, sizeof c->driver) != 0) c->driver[0] = '\0';
    return c;
fail:
    dlclose(lib);
    free(c);
    return NULL;
}

void hb_clocks_close(hb_clocks *c)
{
    if (!c) return;
    c->shutdown();
    dlclose(c->lib);
    free(c);
}

bool hb_clocks_sample(hb_clocks *c, hb_clock_sample *out)
{
    memset(out, 0, sizeof *out);
    if (!c) return false;
    unsigned sm = 0, mem = 0;
    if (c->clock(c->dev, NVML_CLOCK_SM, &sm) != 0) return false;
    if (c->clock(c->dev, NVML_CLOCK_MEM, &mem) != 0) mem = 0;
    unsigned long long reasons = 0;
    if (c->reasons && c->reasons(c->dev, &reasons) != 0) reasons = 0;
    out->sm_mhz = sm;
    out->mem_mhz = mem;
    out->reasons = reasons;
    out->throttled = hb_clock_reasons_throttled(reasons);
    return true;
}

const char *hb_clocks_driver_release(const hb_clocks *c) { return c ? c->driver : ""; }
