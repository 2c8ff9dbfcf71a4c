/*
 * runtime.c -- opening the CUDA driver (dlopen + a table of entry points),
 * the device and its properties, memory, launches and events. NVRTC and the
 * compile cache are in compile.c.
 */
#define _POSIX_C_SOURCE 200809L

#include "runtime_impl.h"
#include "util.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- helpers */

void fu_error_append(fu_error *err, const char *fmt, ...)
{
    if (!err) return;
    size_t len = strlen(err->message);
    if (len + 1 >= sizeof err->message) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message + len, sizeof err->message - len, fmt, ap);
    va_end(ap);
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

const char *fu_cu_result_text(const fu_runtime *rt, CUresult r, char *buf, size_t n)
{
    const char *name = NULL, *str = NULL;
    if (rt && rt->cuda_lib) {
        if (rt->cu.GetErrorName(r, &name) != CUDA_SUCCESS) name = NULL;
        if (rt->cu.GetErrorString(r, &str) != CUDA_SUCCESS) str = NULL;
    }
    if (name && str)
        snprintf(buf, n, "%s (%s)", name, str);
    else if (name)
        snprintf(buf, n, "%s", name);
    else
        snprintf(buf, n, "CUresult %d", (int)r);
    return buf;
}

fu_status fu_cu_error(const fu_runtime *rt, fu_error *err, CUresult r, const char *call,
                      const char *file, int line)
{
    char text[256];
    fu_cu_result_text(rt, r, text, sizeof text);
    fu_status s = r == CUDA_ERROR_OUT_OF_MEMORY ? FU_ERR_NOMEM : FU_ERR_RUNTIME;
    return fu_error_set(err, s, "%s failed: %s [%s:%d]", call, text, base_name(file), line);
}

static fu_status need_device(const fu_runtime *rt, const char *what, fu_error *err)
{
    if (!rt) return fu_error_set(err, FU_ERR_ARG, "%s: runtime is NULL", what);
    if (rt->has_device) return FU_OK;
    return fu_error_set(err, FU_ERR_NO_DEVICE, "%s needs a GPU: %s", what, rt->describe);
}

/* ---------------------------------------------------------------- driver table */

/* Every driver entry point the runtime uses, with the exported names to try,
 * newest first (cuda.h maps the plain names onto these versions). */
#define DRV(field, ...) {offsetof(fu_driver_api, field), {__VA_ARGS__}}
static const fu_sym_spec DRIVER_SYMS[] = {
    DRV(Init, "cuInit"),
    DRV(DriverGetVersion, "cuDriverGetVersion"),
    DRV(GetErrorName, "cuGetErrorName"),
    DRV(GetErrorString, "cuGetErrorString"),
    DRV(DeviceGetCount, "cuDeviceGetCount"),
    DRV(DeviceGet, "cuDeviceGet"),
    DRV(DeviceGetName, "cuDeviceGetName"),
    DRV(DeviceGetAttribute, "cuDeviceGetAttribute"),
    DRV(DeviceTotalMem, "cuDeviceTotalMem_v2"),
    DRV(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"),
    DRV(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease"),
    DRV(CtxSetCurrent, "cuCtxSetCurrent"),
    DRV(ModuleLoadData, "cuModuleLoadData"),
    DRV(ModuleUnload, "cuModuleUnload"),
    DRV(ModuleGetFunction, "cuModuleGetFunction"),
    DRV(FuncGetAttribute, "cuFuncGetAttribute"),
    DRV(FuncSetAttribute, "cuFuncSetAttribute"),
    DRV(OccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor"),
    DRV(OccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters"),
    DRV(LaunchKernel, "cuLaunchKernel"),
    DRV(LaunchCooperativeKernel, "cuLaunchCooperativeKernel"),
    DRV(MemAlloc, "cuMemAlloc_v2"),
    DRV(MemFree, "cuMemFree_v2"),
    DRV(MemGetAddressRange, "cuMemGetAddressRange_v2"),
    DRV(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"),
    DRV(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"),
    DRV(MemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"),
    DRV(MemsetD8Async, "cuMemsetD8Async"),
    DRV(MemsetD32Async, "cuMemsetD32Async"),
    DRV(StreamCreate, "cuStreamCreate"),
    DRV(StreamDestroy, "cuStreamDestroy_v2", "cuStreamDestroy"),
    DRV(StreamSynchronize, "cuStreamSynchronize"),
    DRV(EventCreate, "cuEventCreate"),
    DRV(EventDestroy, "cuEventDestroy_v2", "cuEventDestroy"),
    DRV(EventRecord, "cuEventRecord"),
    DRV(EventSynchronize, "cuEventSynchronize"),
    /* CUDA 12.8 added _v2 (same signature); CUDA 13's cuda.h maps onto it. */
    DRV(EventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
};
#undef DRV

/* The driver library: only the versioned soname (a bare libcuda.so is the
 * toolkit's link stub, which fails every call). */
static const char *const DRIVER_LIBS[] = {"libcuda.so.1"};

const char *fu_resolve_symbols(void *lib, const fu_sym_spec *specs, size_t n, void *table)
{
    for (size_t i = 0; i < n; i++) {
        void *sym = NULL;
        for (int j = 0; j < 3 && specs[i].names[j] && !sym; j++) sym = dlsym(lib, specs[i].names[j]);
        if (!sym) return specs[i].names[0];
        /* POSIX guarantees function pointers and void * have one representation. */
        memcpy((char *)table + specs[i].offset, &sym, sizeof sym);
    }
    return NULL;
}

/* ---------------------------------------------------------------- arch */

/* "90", "sm_90", "sm_90a", "compute_90", "9.0" -> "sm_90a" style and 90. */
static bool parse_arch(const char *s, char *out, size_t outn, int *number)
{
    if (!s) return false;
    if (!strncmp(s, "sm_", 3)) s += 3;
    else if (!strncmp(s, "compute_", 8)) s += 8;
    else if (!strncmp(s, "sm", 2)) s += 2;
    int n = 0, digits = 0;
    if (s[0] >= '1' && s[0] <= '9' && s[1] == '.' && s[2] >= '0' && s[2] <= '9') {
        n = (s[0] - '0') * 10 + (s[2] - '0');
        digits = 2;
        s += 3;
    } else {
        while (*s >= '0' && *s <= '9' && digits < 4) n = n * 10 + (*s++ - '0'), digits++;
    }
    if (digits < 2 || n < 30 || n > 1999) return false;
    char suffix[2] = {0, 0};
    if (*s == 'a' || *s == 'f') suffix[0] = *s++;
    if (*s) return false;
    snprintf(out, outn, "sm_%d%s", n, suffix);
    *number = n;
    return true;
}

/* ---------------------------------------------------------------- open */

static int attr(fu_runtime *rt, CUdevice_attribute a)
{
    int v = 0;
    if (rt->cu.DeviceGetAttribute(&v, a, rt->dev) != CUDA_SUCCESS) v = 0;
    return v;
}

static void read_props(fu_runtime *rt)
{
    fu_device_props *p = &rt->props;
    if (rt->cu.DeviceGetName(p->name, (int)sizeof p->name - 1, rt->dev) != CUDA_SUCCESS)
        snprintf(p->name, sizeof p->name, "CUDA device %d", (int)rt->dev);
    p->cc_major = attr(rt, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    p->cc_minor = attr(rt, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    p->sm_count = p->sm_count_all = attr(rt, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    p->l2_bytes = attr(rt, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
    size_t total = 0;
    if (rt->cu.DeviceTotalMem(&total, rt->dev) == CUDA_SUCCESS) p->total_mem_bytes = (int64_t)total;
    p->max_threads_per_block = attr(rt, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
    p->max_threads_per_sm = attr(rt, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    p->max_blocks_per_sm = attr(rt, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    p->warp_size = attr(rt, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    p->max_regs_per_block = attr(rt, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
    p->max_regs_per_sm = attr(rt, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    p->max_shared_per_block = attr(rt, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
    p->max_shared_per_block_optin = attr(rt, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
    p->max_shared_per_sm = attr(rt, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    p->reserved_shared_per_block = attr(rt, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
    p->clock_khz = attr(rt, CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
    p->memory_clock_khz = attr(rt, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
    p->memory_bus_width_bits = attr(rt, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
    if (p->max_shared_per_block_optin < p->max_shared_per_block)
        p->max_shared_per_block_optin = p->max_shared_per_block;
}

static void unload_driver(fu_runtime *rt)
{
    if (rt->cuda_lib) dlclose(rt->cuda_lib);
    rt->cuda_lib = NULL;
    memset(&rt->cu, 0, sizeof rt->cu);
}

#if defined(__SANITIZE_ADDRESS__)
#define FU_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FU_UNDER_ASAN 1
#endif
#endif

/* Loads the driver and sets up the device. Returns FU_OK with rt->has_device
 * false (and *why filled) when there is simply no usable driver or GPU; an
 * error only when a GPU is there and cannot be set up. */
static fu_status open_device(fu_runtime *rt, const fu_runtime_options *opts, char *why,
                             size_t whyn, fu_error *err)
{
    if (opts->compile_only) {
        snprintf(why, whyn, "compile-only requested");
        return FU_OK;
    }
    const char *lib_name = NULL;
    for (size_t i = 0; i < sizeof DRIVER_LIBS / sizeof *DRIVER_LIBS && !rt->cuda_lib; i++) {
        rt->cuda_lib = dlopen(DRIVER_LIBS[i], FU_DLOPEN_FLAGS);
        lib_name = DRIVER_LIBS[i];
    }
    if (!rt->cuda_lib) {
        snprintf(why, whyn, "%s not found", DRIVER_LIBS[0]);
        return FU_OK;
    }
    const char *missing =
        fu_resolve_symbols(rt->cuda_lib, DRIVER_SYMS, sizeof DRIVER_SYMS / sizeof *DRIVER_SYMS, &rt->cu);
    if (missing) {
        snprintf(why, whyn, "%s lacks %s (driver too old?)", lib_name, missing);
        unload_driver(rt);
        return FU_OK;
    }
    CUresult r = rt->cu.Init(0);
    if (r != CUDA_SUCCESS) {
        const char *name = NULL;
        if (rt->cu.GetErrorName(r, &name) != CUDA_SUCCESS || !name) name = "unknown error";
        snprintf(why, whyn, "cuInit failed: %s", name);
#ifdef FU_UNDER_ASAN
        if (r == CUDA_ERROR_OUT_OF_MEMORY)
            snprintf(why + strlen(why), whyn - strlen(why),
                     " (under AddressSanitizer the driver needs ASAN_OPTIONS=protect_shadow_gap=0)");
#endif
        unload_driver(rt);
        return FU_OK;
    }
    rt->cu.DriverGetVersion(&rt->props.driver_version);
    int count = 0;
    r = rt->cu.DeviceGetCount(&count);
    if (r != CUDA_SUCCESS || count == 0) {
        snprintf(why, whyn, "no CUDA device");
        unload_driver(rt);
        return FU_OK;
    }
    if (opts->device < 0 || opts->device >= count) {
        unload_driver(rt);
        return fu_error_set(err, FU_ERR_ARG, "runtime: device %d requested, %d present",
                            opts->device, count);
    }
    FU_CU(rt, err, DeviceGet, &rt->dev, opts->device);
    read_props(rt);
    FU_CU(rt, err, DevicePrimaryCtxRetain, &rt->ctx, rt->dev);
    FU_CU(rt, err, CtxSetCurrent, rt->ctx);
    fu_status s = fu_sm_limit_open(rt, rt->sm_limit, err);
    if (s != FU_OK) return s;
    FU_CU(rt, err, StreamCreate, &rt->stream, CU_STREAM_DEFAULT);
    rt->has_device = true;
    return FU_OK;
}

static void format_mib(char *buf, size_t n, int64_t bytes)
{
    if (bytes % (1024 * 1024) == 0)
        snprintf(buf, n, "%lld MiB", (long long)(bytes / (1024 * 1024)));
    else
        snprintf(buf, n, "%.1f MiB", (double)bytes / (1024.0 * 1024.0));
}

static void build_describe(fu_runtime *rt, const char *why)
{
    char *d = rt->describe;
    size_t n = sizeof rt->describe;
    if (rt->has_device) {
        const fu_device_props *p = &rt->props;
        char l2[32];
        format_mib(l2, sizeof l2, p->l2_bytes);
        int len = snprintf(d, n, "GPU: %s (sm_%d%d, %d SMs, %s L2, driver %d.%d", p->name,
                           p->cc_major, p->cc_minor, p->sm_count, l2, p->driver_version / 1000,
                           p->driver_version % 1000 / 10);
        if (rt->arch_number != p->cc_major * 10 + p->cc_minor || strchr(rt->arch + 3, 'a') ||
            strchr(rt->arch + 3, 'f'))
            len += snprintf(d + len, n - (size_t)len, ", compiling for %s", rt->arch);
        snprintf(d + len, n - (size_t)len, ")");
    } else {
        snprintf(d, n, "no GPU: %s (compile-only, %s)", why, rt->arch);
    }
    size_t len = strlen(d);
    if (rt->nvrtc_lib)
        snprintf(d + len, n - len, "; NVRTC %d.%d", rt->nvrtc_major, rt->nvrtc_minor);
    else
        snprintf(d + len, n - len, "; NVRTC unavailable: %s", rt->nvrtc_problem);
}

static void release_device(fu_runtime *rt)
{
    if (rt->cuda_lib) {
        if (rt->stream) rt->cu.StreamDestroy(rt->stream);
        fu_sm_limit_close(rt);
        if (rt->ctx) rt->cu.DevicePrimaryCtxRelease(rt->dev);
    }
    rt->stream = NULL;
    rt->ctx = NULL;
    rt->has_device = false;
    unload_driver(rt);
}

fu_status fu_runtime_open(const fu_runtime_options *opts, fu_runtime **out, fu_error *err)
{
    if (!out) return fu_error_set(err, FU_ERR_ARG, "fu_runtime_open: out is NULL");
    *out = NULL;
    fu_runtime_options defaults;
    memset(&defaults, 0, sizeof defaults);
    if (!opts) opts = &defaults;

    /* The architecture asked for, if any, is checked before anything is loaded. */
    const char *arch_src = opts->arch, *arch_what = "options";
    if (!arch_src || !*arch_src) {
        arch_src = getenv("FUSER_ARCH");
        arch_what = "FUSER_ARCH";
        if (arch_src && !*arch_src) arch_src = NULL;
    }
    char arch[16];
    int arch_number = 0;
    if (arch_src && !parse_arch(arch_src, arch, sizeof arch, &arch_number))
        return fu_error_set(err, FU_ERR_ARG,
                            "runtime: bad architecture \"%s\" (from %s); expected e.g. 90, sm_90, "
                            "sm_90a",
                            arch_src, arch_what);

    /* so is the SM limit */
    int sm_limit = 0;
    fu_status limit_status = fu_sm_limit_choose(opts->sm_limit, &sm_limit, err);
    if (limit_status != FU_OK) return limit_status;

    fu_runtime *rt = fu_calloc(1, sizeof *rt);
    if (!rt) return fu_error_set(err, FU_ERR_NOMEM, "runtime: out of memory");
    rt->sm_limit = sm_limit;
    const char *blocking = getenv("FUSER_LAUNCH_BLOCKING");
    rt->sync_launches = opts->sync_launches || (blocking && *blocking && strcmp(blocking, "0"));

    char why[384] = "";
    fu_status s = open_device(rt, opts, why, sizeof why, err);
    if (s != FU_OK) {
        release_device(rt);
        fu_free(rt);
        return s;
    }
    if (arch_src) {
        snprintf(rt->arch, sizeof rt->arch, "%s", arch);
        rt->arch_number = arch_number;
    } else if (rt->has_device) {
        rt->arch_number = rt->props.cc_major * 10 + rt->props.cc_minor;
        snprintf(rt->arch, sizeof rt->arch, "sm_%d", rt->arch_number);
    } else {
        snprintf(rt->arch, sizeof rt->arch, "sm_90");
        rt->arch_number = 90;
    }
    fu_nvrtc_load(rt);
    fu_cache_dir_init(rt, opts);
    build_describe(rt, why);
    *out = rt;
    return FU_OK;
}

void fu_runtime_close(fu_runtime *rt)
{
    if (!rt) return;
    release_device(rt);
    if (rt->nvrtc_lib) dlclose(rt->nvrtc_lib);
    fu_free(rt);
}

const char *fu_runtime_describe(const fu_runtime *rt) { return rt ? rt->describe : "no runtime"; }
bool fu_runtime_has_device(const fu_runtime *rt) { return rt && rt->has_device; }
bool fu_runtime_has_nvrtc(const fu_runtime *rt) { return rt && rt->nvrtc_lib; }
const fu_device_props *fu_runtime_device(const fu_runtime *rt) { return &rt->props; }
const char *fu_runtime_arch(const fu_runtime *rt) { return rt->arch; }
int fu_runtime_arch_number(const fu_runtime *rt) { return rt->arch_number; }
const char *fu_runtime_cache_dir(const fu_runtime *rt) { return rt->cache_dir; }

void fu_runtime_nvrtc_version(const fu_runtime *rt, int *major, int *minor)
{
    if (major) *major = rt->nvrtc_major;
    if (minor) *minor = rt->nvrtc_minor;
}

void fu_runtime_get_stats(const fu_runtime *rt, fu_runtime_stats *out) { *out = rt->stats; }

/* ---------------------------------------------------------------- kernels */

fu_status fu_module_get_kernel(fu_module *m, const char *name, fu_kernel **out, fu_error *err)
{
    if (!m || !name || !out)
        return fu_error_set(err, FU_ERR_ARG, "fu_module_get_kernel: NULL argument");
    *out = NULL;
    for (fu_kernel *k = m->kernels; k; k = k->next)
        if (!strcmp(k->name, name)) {
            *out = k;
            return FU_OK;
        }
    fu_runtime *rt = m->rt;
    if (!m->mod)
        return fu_error_set(err, FU_ERR_NO_DEVICE, "kernel '%s' of '%s' needs a GPU: %s", name,
                            m->name, rt->describe);
    CUfunction fn = NULL;
    CUresult r = rt->cu.ModuleGetFunction(&fn, m->mod, name);
    if (r == CUDA_ERROR_NOT_FOUND)
        return fu_error_set(err, FU_ERR_ARG,
                            "module '%s' has no kernel '%s' (kernels are looked up by their "
                            "extern \"C\" name)",
                            m->name, name);
    if (r != CUDA_SUCCESS) {
        fu_cu_error(rt, err, r, "cuModuleGetFunction", __FILE__, __LINE__);
        fu_error_append(err, " (kernel '%s' of '%s')", name, m->name);
        return FU_ERR_RUNTIME;
    }
    fu_kernel *k = fu_calloc(1, sizeof *k);
    char *kname = fu_strdup(name);
    if (!k || !kname) {
        fu_free(k);
        fu_free(kname);
        return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    }
    k->module = m;
    k->name = kname;
    k->fn = fn;
    static const struct {
        CUfunction_attribute a;
        size_t offset;
    } ATTRS[] = {
        {CU_FUNC_ATTRIBUTE_NUM_REGS, offsetof(fu_kernel_attrs, num_regs)},
        {CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, offsetof(fu_kernel_attrs, local_bytes)},
        {CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, offsetof(fu_kernel_attrs, static_shared_bytes)},
        {CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, offsetof(fu_kernel_attrs, const_bytes)},
        {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, offsetof(fu_kernel_attrs, max_threads_per_block)},
        {CU_FUNC_ATTRIBUTE_PTX_VERSION, offsetof(fu_kernel_attrs, ptx_version)},
        {CU_FUNC_ATTRIBUTE_BINARY_VERSION, offsetof(fu_kernel_attrs, binary_version)},
    };
    for (size_t i = 0; i < sizeof ATTRS / sizeof *ATTRS; i++) {
        int v = 0;
        r = rt->cu.FuncGetAttribute(&v, ATTRS[i].a, fn);
        if (r != CUDA_SUCCESS) {
            fu_free(k->name);
            fu_free(k);
            fu_cu_error(rt, err, r, "cuFuncGetAttribute", __FILE__, __LINE__);
            fu_error_append(err, " (kernel '%s')", name);
            return FU_ERR_RUNTIME;
        }
        memcpy((char *)&k->attrs + ATTRS[i].offset, &v, sizeof v);
    }
    int dyn = 0;
    if (rt->cu.FuncGetAttribute(&dyn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, fn) ==
        CUDA_SUCCESS)
        k->dynamic_shared_limit = dyn;
    k->next = m->kernels;
    m->kernels = k;
    *out = k;
    return FU_OK;
}

const char *fu_kernel_name(const fu_kernel *k) { return k->name; }
const fu_kernel_attrs *fu_kernel_attributes(const fu_kernel *k) { return &k->attrs; }

/* The kernel's limit starts at 48 KiB less its static shared memory; above
 * it, opt in (up to the device's per-block maximum). `where` ends errors. */
static fu_status allow_dynamic_shared(fu_runtime *rt, fu_kernel *k, size_t shared_bytes, const char *where,
                                      fu_error *err)
{
    if (shared_bytes <= (size_t)k->dynamic_shared_limit) return FU_OK;
    size_t limit = (size_t)rt->props.max_shared_per_block_optin;
    size_t total = shared_bytes + (size_t)k->attrs.static_shared_bytes;
    if (total > limit) {
        fu_error_set(err, FU_ERR_ARG,
                     "launch needs %zu B of shared memory (%zu dynamic + %d static), the "
                     "device allows %zu per block",
                     total, shared_bytes, k->attrs.static_shared_bytes, limit);
        fu_error_append(err, "%s", where);
        return FU_ERR_ARG;
    }
    CUresult r = rt->cu.FuncSetAttribute(k->fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)shared_bytes);
    if (r != CUDA_SUCCESS) {
        fu_cu_error(rt, err, r, "cuFuncSetAttribute", __FILE__, __LINE__);
        fu_error_append(err, "%s", where);
        return FU_ERR_RUNTIME;
    }
    k->dynamic_shared_limit = (int)shared_bytes;
    return FU_OK;
}

fu_status fu_kernel_occupancy(fu_kernel *k, int block_threads, size_t dynamic_shared_bytes, int *blocks_per_sm,
                              fu_error *err)
{
    if (!k || !blocks_per_sm) return fu_error_set(err, FU_ERR_ARG, "fu_kernel_occupancy: NULL");
    fu_runtime *rt = k->module->rt;
    *blocks_per_sm = 0;
    /* (above 48 KiB the driver counts no block until the kernel is allowed that much) */
    char where[160];
    snprintf(where, sizeof where, " (kernel '%s', occupancy of blocks of %d threads)", k->name, block_threads);
    fu_status s = allow_dynamic_shared(rt, k, dynamic_shared_bytes, where, err);
    if (s) return s;
    FU_CU(rt, err, OccupancyMaxActiveBlocksPerMultiprocessor, blocks_per_sm, k->fn, block_threads,
          dynamic_shared_bytes);
    return FU_OK;
}

/* ---------------------------------------------------------------- memory */

static void count_alloc(fu_runtime *rt, int64_t bytes)
{
    rt->stats.device_bytes_live += bytes;
    if (rt->stats.device_bytes_live > rt->stats.device_bytes_peak)
        rt->stats.device_bytes_peak = rt->stats.device_bytes_live;
}

fu_status fu_device_alloc(fu_runtime *rt, size_t bytes, fu_devptr *out, fu_error *err)
{
    if (!out) return fu_error_set(err, FU_ERR_ARG, "fu_device_alloc: out is NULL");
    *out = 0;
    fu_status s = need_device(rt, "fu_device_alloc", err);
    if (s != FU_OK) return s;
    if (bytes == 0) return FU_OK;
    CUdeviceptr p = 0;
    CUresult r = rt->cu.MemAlloc(&p, bytes);
    if (r != CUDA_SUCCESS) {
        s = fu_cu_error(rt, err, r, "cuMemAlloc", __FILE__, __LINE__);
        fu_error_append(err, " (%zu bytes; %lld live)", bytes,
                        (long long)rt->stats.device_bytes_live);
        return s;
    }
    count_alloc(rt, (int64_t)bytes);
    *out = (fu_devptr)p;
    return FU_OK;
}

fu_status fu_device_free(fu_runtime *rt, fu_devptr p, fu_error *err)
{
    if (!p) return FU_OK;
    fu_status s = need_device(rt, "fu_device_free", err);
    if (s != FU_OK) return s;
    CUdeviceptr base = 0;
    size_t bytes = 0;
    FU_CU(rt, err, MemGetAddressRange, &base, &bytes, (CUdeviceptr)p);
    if (base != (CUdeviceptr)p)
        return fu_error_set(err, FU_ERR_ARG,
                            "fu_device_free: 0x%llx is inside an allocation, not its start",
                            (unsigned long long)p);
    FU_CU(rt, err, MemFree, (CUdeviceptr)p);
    count_alloc(rt, -(int64_t)bytes);
    return FU_OK;
}

fu_status fu_runtime_synchronize(fu_runtime *rt, fu_error *err)
{
    fu_status s = need_device(rt, "fu_runtime_synchronize", err);
    if (s != FU_OK) return s;
    FU_CU(rt, err, StreamSynchronize, rt->stream);
    return FU_OK;
}

fu_status fu_device_upload_async(fu_runtime *rt, fu_devptr dst, const void *src, size_t bytes,
                                 fu_error *err)
{
    fu_status s = need_device(rt, "fu_device_upload", err);
    if (s != FU_OK || bytes == 0) return s;
    FU_CU(rt, err, MemcpyHtoDAsync, (CUdeviceptr)dst, src, bytes, rt->stream);
    return FU_OK;
}

fu_status fu_device_download_async(fu_runtime *rt, void *dst, fu_devptr src, size_t bytes,
                                   fu_error *err)
{
    fu_status s = need_device(rt, "fu_device_download", err);
    if (s != FU_OK || bytes == 0) return s;
    FU_CU(rt, err, MemcpyDtoHAsync, dst, (CUdeviceptr)src, bytes, rt->stream);
    return FU_OK;
}

fu_status fu_device_copy_async(fu_runtime *rt, fu_devptr dst, fu_devptr src, size_t bytes,
                               fu_error *err)
{
    fu_status s = need_device(rt, "fu_device_copy", err);
    if (s != FU_OK || bytes == 0) return s;
    FU_CU(rt, err, MemcpyDtoDAsync, (CUdeviceptr)dst, (CUdeviceptr)src, bytes, rt->stream);
    return FU_OK;
}

fu_status fu_device_memset8_async(fu_runtime *rt, fu_devptr dst, uint8_t value, size_t count,
                                  fu_error *err)
{
    fu_status s = need_device(rt, "fu_device_memset8", err);
    if (s != FU_OK || count == 0) return s;
    FU_CU(rt, err, MemsetD8Async, (CUdeviceptr)dst, value, count, rt->stream);
    return FU_OK;
}

fu_status fu_device_memset32_async(fu_runtime *rt, fu_devptr dst, uint32_t value, size_t count,
                                   fu_error *err)
{
    fu_status s = need_device(rt, "fu_device_memset32", err);
    if (s != FU_OK || count == 0) return s;
    if (dst % 4)
        return fu_error_set(err, FU_ERR_ARG, "fu_device_memset32: 0x%llx is not 4-byte aligned",
                            (unsigned long long)dst);
    FU_CU(rt, err, MemsetD32Async, (CUdeviceptr)dst, value, count, rt->stream);
    return FU_OK;
}

/* The synchronous forms: the stream-ordered operation, then a wait. */
#define FU_THEN_SYNC(call)                                  \
    do {                                                    \
        fu_status s_ = (call);                              \
        if (s_ != FU_OK) return s_;                         \
        return fu_runtime_synchronize(rt, err);             \
    } while (0)

fu_status fu_device_upload(fu_runtime *rt, fu_devptr dst, const void *src, size_t bytes,
                           fu_error *err)
{
    FU_THEN_SYNC(fu_device_upload_async(rt, dst, src, bytes, err));
}

fu_status fu_device_download(fu_runtime *rt, void *dst, fu_devptr src, size_t bytes,
                             fu_error *err)
{
    FU_THEN_SYNC(fu_device_download_async(rt, dst, src, bytes, err));
}

fu_status fu_device_copy(fu_runtime *rt, fu_devptr dst, fu_devptr src, size_t bytes,
                         fu_error *err)
{
    FU_THEN_SYNC(fu_device_copy_async(rt, dst, src, bytes, err));
}

fu_status fu_device_memset8(fu_runtime *rt, fu_devptr dst, uint8_t value, size_t count,
                            fu_error *err)
{
    FU_THEN_SYNC(fu_device_memset8_async(rt, dst, value, count, err));
}

fu_status fu_device_memset32(fu_runtime *rt, fu_devptr dst, uint32_t value, size_t count,
                             fu_error *err)
{
    FU_THEN_SYNC(fu_device_memset32_async(rt, dst, value, count, err));
}

/* ---------------------------------------------------------------- launch */

fu_status fu_kernel_max_active_clusters(fu_kernel *k, unsigned grid, unsigned block, size_t shared_bytes,
                                        int *clusters, fu_error *err)
{
    if (!k || !clusters) return fu_error_set(err, FU_ERR_ARG, "fu_kernel_max_active_clusters: NULL");
    fu_runtime *rt = k->module->rt;
    *clusters = 0;
    char where[160];
    snprintf(where, sizeof where, " (kernel '%s', clusters of its grid %u x %u threads)", k->name, grid, block);
    fu_status s = allow_dynamic_shared(rt, k, shared_bytes, where, err);
    if (s) return s;
    CUlaunchConfig cfg;
    memset(&cfg, 0, sizeof cfg); /* no attributes: the cluster size is the kernel's own (__cluster_dims__) */
    cfg.gridDimX = grid;
    cfg.gridDimY = cfg.gridDimZ = 1;
    cfg.blockDimX = block;
    cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.sharedMemBytes = (unsigned)shared_bytes;
    cfg.hStream = rt->stream;
    FU_CU(rt, err, OccupancyMaxActiveClusters, clusters, k->fn, &cfg);
    return FU_OK;
}

/* " (kernel ..., grid ..., block ..., shared ...)": what a launch's errors end with. Written
 * only where there is an error: the host's time from a case's first event to its last
 * launch is part of the case's time. */
static void describe_launch(char *buf, size_t n, const fu_kernel *k, const unsigned grid[3], const unsigned block[3],
                            size_t shared_bytes)
{
    snprintf(buf, n, " (kernel '%s' of '%s', grid %ux%ux%u, block %ux%ux%u, %zu B shared)", k->name, k->module->name,
             grid[0], grid[1], grid[2], block[0], block[1], block[2], shared_bytes);
}

static fu_status launch(fu_runtime *rt, fu_kernel *k, const unsigned grid[3], const unsigned block[3],
                        size_t shared_bytes, void **args, bool cooperative, fu_error *err)
{
    const char *api = cooperative ? "cuLaunchCooperativeKernel" : "cuLaunchKernel";
    fu_status s = need_device(rt, "fu_runtime_launch", err);
    if (s != FU_OK) return s;
    if (!k || !grid || !block) return fu_error_set(err, FU_ERR_ARG, "fu_runtime_launch: NULL argument");
    if (k->module->rt != rt)
        return fu_error_set(err, FU_ERR_ARG, "fu_runtime_launch: kernel '%s' belongs to another runtime",
                            k->name);
    char where[256];
    if (shared_bytes > (size_t)k->dynamic_shared_limit) { /* (else allow_dynamic_shared has nothing to do) */
        describe_launch(where, sizeof where, k, grid, block, shared_bytes);
        if ((s = allow_dynamic_shared(rt, k, shared_bytes, where, err))) return s;
    }
    CUresult r = cooperative ? rt->cu.LaunchCooperativeKernel(k->fn, grid[0], grid[1], grid[2], block[0], block[1],
                                                              block[2], (unsigned)shared_bytes, rt->stream, args)
                             : rt->cu.LaunchKernel(k->fn, grid[0], grid[1], grid[2], block[0], block[1], block[2],
                                                   (unsigned)shared_bytes, rt->stream, args, NULL);
    if (r != CUDA_SUCCESS) {
        s = fu_cu_error(rt, err, r, api, __FILE__, __LINE__);
        describe_launch(where, sizeof where, k, grid, block, shared_bytes);
        fu_error_append(err, "%s", where);
        return s;
    }
    rt->stats.launches++;
    if (rt->sync_launches) {
        r = rt->cu.StreamSynchronize(rt->stream);
        if (r != CUDA_SUCCESS) {
            fu_cu_error(rt, err, r, "cuStreamSynchronize after launch", __FILE__, __LINE__);
            describe_launch(where, sizeof where, k, grid, block, shared_bytes);
            fu_error_append(err, "%s", where);
            return FU_ERR_RUNTIME;
        }
    }
    return FU_OK;
}

fu_status fu_runtime_launch(fu_runtime *rt, fu_kernel *k, const unsigned grid[3], const unsigned block[3],
                            size_t shared_bytes, void **args, fu_error *err)
{
    return launch(rt, k, grid, block, shared_bytes, args, false, err);
}

fu_status fu_runtime_launch_cooperative(fu_runtime *rt, fu_kernel *k, const unsigned grid[3],
                                        const unsigned block[3], size_t shared_bytes, void **args,
                                        fu_error *err)
{
    return launch(rt, k, grid, block, shared_bytes, args, true, err);
}

/* ---------------------------------------------------------------- events */

fu_status fu_event_create(fu_runtime *rt, fu_event **out, fu_error *err)
{
    if (!out) return fu_error_set(err, FU_ERR_ARG, "fu_event_create: out is NULL");
    *out = NULL;
    fu_status s = need_device(rt, "fu_event_create", err);
    if (s != FU_OK) return s;
    fu_event *e = fu_calloc(1, sizeof *e);
    if (!e) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    CUresult r = rt->cu.EventCreate(&e->ev, CU_EVENT_DEFAULT);
    if (r != CUDA_SUCCESS) {
        fu_free(e);
        return fu_cu_error(rt, err, r, "cuEventCreate", __FILE__, __LINE__);
    }
    e->rt = rt;
    *out = e;
    return FU_OK;
}

void fu_event_free(fu_event *e)
{
    if (!e) return;
    e->rt->cu.EventDestroy(e->ev);
    fu_free(e);
}

fu_status fu_event_record(fu_event *e, fu_error *err)
{
    if (!e) return fu_error_set(err, FU_ERR_ARG, "fu_event_record: NULL event");
    FU_CU(e->rt, err, EventRecord, e->ev, e->rt->stream);
    return FU_OK;
}

fu_status fu_event_elapsed_ms(fu_event *start, fu_event *end, float *ms, fu_error *err)
{
    if (!start || !end || !ms) return fu_error_set(err, FU_ERR_ARG, "fu_event_elapsed_ms: NULL");
    *ms = 0;
    fu_runtime *rt = end->rt;
    FU_CU(rt, err, EventSynchronize, end->ev);
    FU_CU(rt, err, EventElapsedTime, ms, start->ev, end->ev);
    return FU_OK;
}
