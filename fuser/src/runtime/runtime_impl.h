/*
 * runtime_impl.h -- private to src/runtime: the driver and NVRTC entry-point
 * tables, the runtime object, and the checked-call macro.
 */
#ifndef FUSER_RUNTIME_IMPL_H
#define FUSER_RUNTIME_IMPL_H

#include "runtime.h"

#include <cuda.h>
#include <dlfcn.h>
#include <nvrtc.h>

/* How the driver and NVRTC are opened. RTLD_NODELETE: fu_runtime_close()
 * dlclose's them, but their code stays mapped. Neither library is made to be
 * unloaded: the driver leaves threads behind, and NVRTC's static C++ runtime
 * allocates at load time and never frees (unmapping it turns that memory
 * into a true leak, which LeakSanitizer reports; reopening it would redo its
 * start-up for every runtime). A later open finds them still loaded. */
#ifndef RTLD_NODELETE
#define RTLD_NODELETE 0
#endif
#define FU_DLOPEN_FLAGS (RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)

/* The driver entry points we use. Each field is filled by dlsym from the
 * names listed for it in runtime.c (versioned names first). */
typedef struct fu_driver_api {
    CUresult(CUDAAPI *Init)(unsigned int flags);
    CUresult(CUDAAPI *DriverGetVersion)(int *version);
    CUresult(CUDAAPI *GetErrorName)(CUresult r, const char **s);
    CUresult(CUDAAPI *GetErrorString)(CUresult r, const char **s);
    CUresult(CUDAAPI *DeviceGetCount)(int *count);
    CUresult(CUDAAPI *DeviceGet)(CUdevice *dev, int ordinal);
    CUresult(CUDAAPI *DeviceGetName)(char *name, int len, CUdevice dev);
    CUresult(CUDAAPI *DeviceGetAttribute)(int *v, CUdevice_attribute a, CUdevice dev);
    CUresult(CUDAAPI *DeviceTotalMem)(size_t *bytes, CUdevice dev);
    CUresult(CUDAAPI *DevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
    CUresult(CUDAAPI *DevicePrimaryCtxRelease)(CUdevice dev);
    CUresult(CUDAAPI *CtxSetCurrent)(CUcontext ctx);
    CUresult(CUDAAPI *ModuleLoadData)(CUmodule *m, const void *image);
    CUresult(CUDAAPI *ModuleUnload)(CUmodule m);
    CUresult(CUDAAPI *ModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
    CUresult(CUDAAPI *FuncGetAttribute)(int *v, CUfunction_attribute a, CUfunction f);
    CUresult(CUDAAPI *FuncSetAttribute)(CUfunction f, CUfunction_attribute a, int v);
    CUresult(CUDAAPI *OccupancyMaxActiveBlocksPerMultiprocessor)(int *blocks, CUfunction f,
                                                                 int block_size,
                                                                 size_t dyn_shared);
    CUresult(CUDAAPI *OccupancyMaxActiveClusters)(int *clusters, CUfunction f, const CUlaunchConfig *config);
    CUresult(CUDAAPI *LaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                    CUstream s, void **params, void **extra);
    CUresult(CUDAAPI *LaunchCooperativeKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                               unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                               CUstream s, void **params);
    CUresult(CUDAAPI *MemAlloc)(CUdeviceptr *p, size_t bytes);
    CUresult(CUDAAPI *MemFree)(CUdeviceptr p);
    CUresult(CUDAAPI *MemGetAddressRange)(CUdeviceptr *base, size_t *bytes, CUdeviceptr p);
    CUresult(CUDAAPI *MemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t n, CUstream s);
    CUresult(CUDAAPI *MemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t n, CUstream s);
    CUresult(CUDAAPI *MemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
    CUresult(CUDAAPI *MemsetD8Async)(CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
    CUresult(CUDAAPI *MemsetD32Async)(CUdeviceptr dst, unsigned int v, size_t n, CUstream s);
    CUresult(CUDAAPI *StreamCreate)(CUstream *s, unsigned int flags);
    CUresult(CUDAAPI *StreamDestroy)(CUstream s);
    CUresult(CUDAAPI *StreamSynchronize)(CUstream s);
    CUresult(CUDAAPI *EventCreate)(CUevent *e, unsigned int flags);
    CUresult(CUDAAPI *EventDestroy)(CUevent e);
    CUresult(CUDAAPI *EventRecord)(CUevent e, CUstream s);
    CUresult(CUDAAPI *EventSynchronize)(CUevent e);
    CUresult(CUDAAPI *EventElapsedTime)(float *ms, CUevent start, CUevent end);
} fu_driver_api;

/* Green contexts (CUDA 12.4+ drivers), for an SM limit (sm_limit.c): looked up
 * only when one is asked for, so that older drivers serve everything else. */
typedef struct fu_green_api {
    CUresult(CUDAAPI *DeviceGetDevResource)(CUdevice dev, CUdevResource *res, CUdevResourceType type);
    CUresult(CUDAAPI *DevSmResourceSplitByCount)(CUdevResource *result, unsigned *groups, const CUdevResource *input,
                                                 CUdevResource *remaining, unsigned flags, unsigned min_count);
    CUresult(CUDAAPI *DevResourceGenerateDesc)(CUdevResourceDesc *desc, CUdevResource *res, unsigned n);
    CUresult(CUDAAPI *GreenCtxCreate)(CUgreenCtx *ctx, CUdevResourceDesc desc, CUdevice dev, unsigned flags);
    CUresult(CUDAAPI *CtxFromGreenCtx)(CUcontext *ctx, CUgreenCtx green);
    CUresult(CUDAAPI *GreenCtxDestroy)(CUgreenCtx green);
} fu_green_api;

typedef struct fu_nvrtc_api {
    const char *(*GetErrorString)(nvrtcResult r);
    nvrtcResult (*Version)(int *major, int *minor);
    nvrtcResult (*CreateProgram)(nvrtcProgram *p, const char *src, const char *name,
                                 int nheaders, const char *const *headers,
                                 const char *const *include_names);
    nvrtcResult (*DestroyProgram)(nvrtcProgram *p);
    nvrtcResult (*CompileProgram)(nvrtcProgram p, int nopts, const char *const *opts);
    nvrtcResult (*GetCUBINSize)(nvrtcProgram p, size_t *n);
    nvrtcResult (*GetCUBIN)(nvrtcProgram p, char *cubin);
    nvrtcResult (*GetProgramLogSize)(nvrtcProgram p, size_t *n);
    nvrtcResult (*GetProgramLog)(nvrtcProgram p, char *log);
} fu_nvrtc_api;

struct fu_runtime {
    void *cuda_lib;         /* dlopen handle of libcuda.so.1, or NULL */
    void *nvrtc_lib;        /* dlopen handle of NVRTC, or NULL */
    fu_driver_api cu;       /* valid when cuda_lib */
    fu_nvrtc_api nvrtc;     /* valid when nvrtc_lib */
    int nvrtc_major, nvrtc_minor;
    char nvrtc_path[512];   /* what was loaded */
    char nvrtc_problem[512]; /* why NVRTC is unavailable ("" when it is) */
    char include_option[640]; /* "-I<toolkit include dir>", or "" if none was found */

    bool has_device;
    CUdevice dev;
    CUcontext ctx;          /* the retained primary context */
    CUgreenCtx green;       /* an SM limit's green context (sm_limit.c), or NULL */
    CUresult(CUDAAPI *green_destroy)(CUgreenCtx green);
    CUcontext ctx_used;     /* the green context as a context, or NULL: ctx is current */
    CUstream stream;
    fu_device_props props;

    char arch[16];          /* "sm_90", "sm_90a" */
    int arch_number;        /* 90 */
    char cache_dir[1024];   /* "" = no disk cache */
    bool sync_launches;
    int sm_limit;           /* SMs asked for (0: all), from the options or FUSER_SM_LIMIT */

    char describe[512];
    fu_runtime_stats stats;
};

struct fu_kernel {
    fu_module *module;
    char *name;
    CUfunction fn;
    fu_kernel_attrs attrs;
    int dynamic_shared_limit; /* what CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is set to */
    fu_kernel *next;
};

struct fu_module {
    fu_runtime *rt;
    char *name;
    void *cubin;
    size_t cubin_bytes;
    char *log;
    CUmodule mod;           /* NULL without a device */
    fu_kernel *kernels;     /* looked up so far */
};

struct fu_event {
    fu_runtime *rt;
    CUevent ev;
};

/* One entry point: where its pointer goes in a table, and the exported names
 * to try in order (NULL-terminated when fewer than 3). */
typedef struct fu_sym_spec {
    size_t offset;
    const char *names[3];
} fu_sym_spec;
/* dlsym's every entry into table; returns the first name missing, or NULL. */
const char *fu_resolve_symbols(void *lib, const fu_sym_spec *specs, size_t n, void *table);

/* The SM limit (sm_limit.c) asked for: the options' count, else FUSER_SM_LIMIT's; 0 for all SMs. */
fu_status fu_sm_limit_choose(int asked, int *limit, fu_error *err);
/* With the device open and its context current: kernels on limit of its SMs (rounded up to the
 * driver's granularity) through a green context, made current; props.sm_count and props.name
 * say so. limit <= 0 or >= the SMs there are: nothing changes. */
fu_status fu_sm_limit_open(fu_runtime *rt, int limit, fu_error *err);
void fu_sm_limit_close(fu_runtime *rt);

/* Fills err with "<call> failed: CUDA_ERROR_X (string) [file:line]"; returns
 * FU_ERR_RUNTIME (FU_ERR_NOMEM for CUDA_ERROR_OUT_OF_MEMORY). */
fu_status fu_cu_error(const fu_runtime *rt, fu_error *err, CUresult r, const char *call,
                      const char *file, int line);
/* "CUDA_ERROR_X (string)" for r, into buf. */
const char *fu_cu_result_text(const fu_runtime *rt, CUresult r, char *buf, size_t n);

/* Calls the driver entry point rt->cu.FN(...) and, on failure, fills err
 * naming cuFN, the error and file:line, then makes the enclosing function
 * return the status. */
#define FU_CU(rt, err, FN, ...)                                                           \
    do {                                                                                  \
        CUresult fu_cu_r_ = (rt)->cu.FN(__VA_ARGS__);                                     \
        if (fu_cu_r_ != CUDA_SUCCESS)                                                     \
            return fu_cu_error((rt), (err), fu_cu_r_, "cu" #FN, __FILE__, __LINE__);      \
    } while (0)

/* Appends printf-style text to err->message (truncating). */
void fu_error_append(fu_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* SHA-256 (sha256.c). */
typedef struct fu_sha256 {
    uint32_t h[8];
    uint64_t len;
    unsigned char buf[64];
    size_t nbuf;
} fu_sha256;
void fu_sha256_init(fu_sha256 *s);
void fu_sha256_update(fu_sha256 *s, const void *data, size_t n);
void fu_sha256_final(fu_sha256 *s, unsigned char out[32]);

/* compile.c: loads NVRTC into rt (never fails; records the problem). */
void fu_nvrtc_load(fu_runtime *rt);
/* compile.c: picks rt->cache_dir from opts and the environment. */
void fu_cache_dir_init(fu_runtime *rt, const fu_runtime_options *opts);

#endif
