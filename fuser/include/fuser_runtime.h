/*
 * fuser_runtime.h -- the fuser's public GPU runtime: the only part of the fuser that talks to the
 * CUDA driver and NVRTC (the .c files of src/runtime include cuda.h and
 * nvrtc.h; this header does not, so the harness and the tests need no CUDA
 * include path).
 *
 * Nothing links libcuda or libnvrtc: fu_runtime_open() loads them with dlopen
 * and resolves every entry point it uses into a table of function pointers
 * held by the runtime object (there is no global state). Open succeeds on a
 * machine without a driver or without a GPU: the runtime is then a "null
 * device" that still compiles with NVRTC (compile-only), and every call that
 * needs the device fails with FU_ERR_NO_DEVICE. fu_runtime_describe() says
 * which case this is, in one line.
 *
 * Compilation goes to CUBIN for one architecture (opts->arch, else env
 * FUSER_ARCH, else the device's, else sm_90) and is cached on disk, keyed by a
 * SHA-256 of the source, the architecture, the options and the NVRTC version;
 * a cache hit calls NVRTC zero times. The cache lives in opts->cache_dir,
 * else $FUSER_CACHE_DIR, else $XDG_CACHE_HOME/fuser, else $HOME/.cache/fuser.
 * Entries are written atomically and checked (key, lengths, a hash of the
 * contents) when read; a bad entry is recompiled and replaced.
 *
 * A runtime, and everything made from it, is used by one thread at a time.
 * Free every module and event, and every device allocation, before
 * fu_runtime_close().
 *
 * Launches, the *_async copies and memsets and event records go to the
 * runtime's own stream, in order. The other copies and memsets are the same
 * operations followed by a synchronization of that stream. A kernel fault
 * (an illegal address, say) is reported by the next call that synchronizes;
 * set opts->sync_launches or env FUSER_LAUNCH_BLOCKING=1 to synchronize after
 * every launch and have the failing launch named.
 */
#ifndef FUSER_RUNTIME_PUBLIC_H
#define FUSER_RUNTIME_PUBLIC_H

#include "fuser.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fu_runtime fu_runtime;
typedef struct fu_module fu_module; /* a compiled CUBIN, loaded if there is a device */
typedef struct fu_kernel fu_kernel; /* a function of a loaded module; owned by the module */
typedef struct fu_event fu_event;
typedef uint64_t fu_devptr;         /* a device address (CUdeviceptr); 0 = none */

typedef struct fu_runtime_options {
    /* "90", "sm_90", "sm_90a", "compute_90", "9.0". NULL: env FUSER_ARCH,
     * else the device's compute capability, else sm_90. */
    const char *arch;
    /* NULL: $FUSER_CACHE_DIR, $XDG_CACHE_HOME/fuser, $HOME/.cache/fuser. */
    const char *cache_dir;
    bool no_disk_cache;  /* compile every time; nothing read or written */
    bool compile_only;   /* do not touch the driver even if a GPU is present */
    int device;          /* CUDA device ordinal (default 0) */
    bool sync_launches;  /* synchronize after each launch (also env FUSER_LAUNCH_BLOCKING=1) */
    /* Run kernels on this many of the GPU's SMs (rounded up to the driver's granularity: 8 on
     * sm_90), through a green context; the device's name then ends "(N of M SMs)". 0: env
     * FUSER_SM_LIMIT, else all. A probe of per-SM bandwidth (docs/perf.md v46), not a run to gate. */
    int sm_limit;
} fu_runtime_options;

/* What the device is; all zero for the null device (but driver_version, when
 * a driver is there without a usable GPU). */
typedef struct fu_device_props {
    char name[256];
    int cc_major, cc_minor;            /* compute capability: 9, 0 for an H100/H200 */
    int sm_count;                      /* the SMs kernels run on: fewer under an SM limit */
    int sm_count_all;                  /* the SMs the device has */
    int64_t l2_bytes;
    int64_t total_mem_bytes;
    int max_threads_per_block;
    int max_threads_per_sm;
    int max_blocks_per_sm;
    int warp_size;
    int max_regs_per_block;
    int max_regs_per_sm;
    int max_shared_per_block;          /* without opt-in (48 KiB) */
    int max_shared_per_block_optin;    /* with cuFuncSetAttribute (227 KiB on sm_90) */
    int max_shared_per_sm;
    int reserved_shared_per_block;     /* taken by the driver from each block's share */
    int clock_khz;                     /* 0 where the driver does not say */
    int memory_clock_khz;              /* 0 where the driver does not say */
    int memory_bus_width_bits;         /* 0 where the driver does not say */
    int driver_version;                /* 13000 = 13.0; 0 without a driver */
} fu_device_props;

/* Counters since fu_runtime_open. */
typedef struct fu_runtime_stats {
    int64_t compiles;            /* fu_runtime_compile calls that succeeded */
    int64_t nvrtc_calls;         /* nvrtcCompileProgram invocations (failed ones too) */
    int64_t cache_hits;          /* compiles served from the disk cache */
    int64_t cache_rejects;       /* cache entries found bad (corrupt, truncated) and recompiled */
    int64_t cache_write_errors;  /* entries that could not be written (not fatal) */
    double compile_ms;           /* wall time spent inside NVRTC */
    int64_t modules_loaded;
    int64_t launches;
    int64_t device_bytes_live;   /* fu_device_alloc'd and not yet freed */
    int64_t device_bytes_peak;
} fu_runtime_stats;

typedef struct fu_compile_info {
    bool cache_hit;
    double compile_ms;           /* NVRTC time for this call; 0 on a cache hit */
    double total_ms;             /* the whole call: hash, cache, NVRTC, module load */
    size_t cubin_bytes;
    char key[65];                /* SHA-256 of the cache key, hex */
    char cache_file[1200];       /* the entry's path ("" when the disk cache is off) */
} fu_compile_info;

/* What a compiled kernel uses (cuFuncGetAttribute), for `fuser plan`. */
typedef struct fu_kernel_attrs {
    int num_regs;
    int local_bytes;             /* per thread: register spills and local arrays */
    int static_shared_bytes;
    int const_bytes;
    int max_threads_per_block;   /* the most this kernel can be launched with */
    int ptx_version;             /* 90 = 9.0 */
    int binary_version;          /* 90 = sm_90 */
} fu_kernel_attrs;

/* ---------------------------------------------------------------- runtime */

/* opts may be NULL (all defaults). Succeeds without a driver, a GPU or NVRTC
 * (see describe); fails only on a bad option (FU_ERR_ARG), out of memory, or
 * a driver that is present and has a device but cannot be set up. */
fu_status fu_runtime_open(const fu_runtime_options *opts, fu_runtime **out, fu_error *err);
void fu_runtime_close(fu_runtime *rt);

/* One line: "GPU: NVIDIA H200 (sm_90, 132 SMs, 60 MiB L2, driver 13.0); NVRTC 13.0"
 * or "no GPU: libcuda.so.1 not found (compile-only, sm_90); NVRTC 13.0". */
const char *fu_runtime_describe(const fu_runtime *rt);
bool fu_runtime_has_device(const fu_runtime *rt);
bool fu_runtime_has_nvrtc(const fu_runtime *rt);
const fu_device_props *fu_runtime_device(const fu_runtime *rt);
const char *fu_runtime_arch(const fu_runtime *rt);       /* "sm_90" */
int fu_runtime_arch_number(const fu_runtime *rt);        /* 90 */
void fu_runtime_nvrtc_version(const fu_runtime *rt, int *major, int *minor); /* 0.0 without */
const char *fu_runtime_cache_dir(const fu_runtime *rt);  /* "" when the disk cache is off */
/* The CUDA toolkit's include directory passed to NVRTC ($CUDA_HOME/include,
 * $CUDA_PATH/include, /usr/local/cuda/include, ...: the first holding
 * cuda_fp16.h), or "" if none was found. */
const char *fu_runtime_include_dir(const fu_runtime *rt);
void fu_runtime_get_stats(const fu_runtime *rt, fu_runtime_stats *out);

/* ---------------------------------------------------------------- compilation */

/* Compiles CUDA C++ to CUBIN with NVRTC, with the options
 * "--gpu-architecture=sm_XX -std=c++17 -default-device", then
 * "-I<toolkit include dir>" where one was found (NVRTC itself lacks
 * cuda_fp16.h and cuda_bf16.h), then extra_options (math flags such as
 * --use_fast_math are the caller's). Kernels looked up by
 * name must be extern "C". name_for_messages names the program in NVRTC's
 * log ("name(12): error: ...") and in our messages. With a device the CUBIN
 * is loaded; without one the module holds only the CUBIN.
 *
 * On a compile error: FU_ERR_RUNTIME, and the message holds the name, the
 * NVRTC log (with line numbers) and the path of a copy of the source (and of
 * the full log) written to <cache dir>/failed/ (or $TMPDIR/fuser-failed/
 * without a disk cache). info may be NULL. */
fu_status fu_runtime_compile(fu_runtime *rt, const char *source, const char *name_for_messages,
                             const char *const *extra_options, int nopts, fu_module **out,
                             fu_compile_info *info, fu_error *err);
void fu_module_free(fu_module *m);
const void *fu_module_cubin(const fu_module *m, size_t *bytes);
/* NVRTC's log of the successful compile (warnings; ptxas -v output if asked
 * for with --ptxas-options=-v); kept in the cache too. Never NULL. */
const char *fu_module_log(const fu_module *m);
bool fu_module_loaded(const fu_module *m);
/* Looks up an extern "C" kernel (FU_ERR_NO_DEVICE without a device,
 * FU_ERR_ARG if there is no such kernel). The module owns the kernel. */
fu_status fu_module_get_kernel(fu_module *m, const char *name, fu_kernel **out, fu_error *err);

const char *fu_kernel_name(const fu_kernel *k);
const fu_kernel_attrs *fu_kernel_attributes(const fu_kernel *k);
/* Resident blocks per SM for this block size and dynamic shared memory (the
 * kernel's dynamic shared memory limit raised to it first, as a launch would). */
fu_status fu_kernel_occupancy(fu_kernel *k, int block_threads, size_t dynamic_shared_bytes,
                              int *blocks_per_sm, fu_error *err);
/* Clusters of a kernel with __cluster_dims__ that the device runs at once, for
 * this grid, block size and dynamic shared memory (cuOccupancyMaxActiveClusters:
 * a cluster's blocks must share a GPC, so fewer than SMs / cluster size may fit). */
fu_status fu_kernel_max_active_clusters(fu_kernel *k, unsigned grid, unsigned block, size_t shared_bytes,
                                        int *clusters, fu_error *err);

/* ---------------------------------------------------------------- memory */

fu_status fu_device_alloc(fu_runtime *rt, size_t bytes, fu_devptr *out, fu_error *err);
/* p may be 0. */
fu_status fu_device_free(fu_runtime *rt, fu_devptr p, fu_error *err);
fu_status fu_device_upload(fu_runtime *rt, fu_devptr dst, const void *src, size_t bytes,
                           fu_error *err);
fu_status fu_device_download(fu_runtime *rt, void *dst, fu_devptr src, size_t bytes,
                             fu_error *err);
fu_status fu_device_copy(fu_runtime *rt, fu_devptr dst, fu_devptr src, size_t bytes,
                         fu_error *err);
fu_status fu_device_memset8(fu_runtime *rt, fu_devptr dst, uint8_t value, size_t count,
                            fu_error *err);
fu_status fu_device_memset32(fu_runtime *rt, fu_devptr dst, uint32_t value, size_t count,
                             fu_error *err);
/* Stream-ordered; a pageable src may be reused on return (the driver stages
 * it); a download is complete only after fu_runtime_synchronize. */
fu_status fu_device_upload_async(fu_runtime *rt, fu_devptr dst, const void *src, size_t bytes,
                                 fu_error *err);
fu_status fu_device_download_async(fu_runtime *rt, void *dst, fu_devptr src, size_t bytes,
                                   fu_error *err);
fu_status fu_device_copy_async(fu_runtime *rt, fu_devptr dst, fu_devptr src, size_t bytes,
                               fu_error *err);
fu_status fu_device_memset8_async(fu_runtime *rt, fu_devptr dst, uint8_t value, size_t count,
                                  fu_error *err);
fu_status fu_device_memset32_async(fu_runtime *rt, fu_devptr dst, uint32_t value, size_t count,
                                   fu_error *err);
fu_status fu_runtime_synchronize(fu_runtime *rt, fu_error *err);

/* ---------------------------------------------------------------- launch */

/* args[i] points at the i-th kernel parameter's value. Raises the kernel's
 * dynamic shared memory limit when shared_bytes is above it (48 KiB less the
 * kernel's static shared memory, at first); FU_ERR_ARG if static + dynamic
 * exceeds the device's opt-in maximum. Asynchronous: a fault in the kernel
 * shows at the next synchronization. */
fu_status fu_runtime_launch(fu_runtime *rt, fu_kernel *k, const unsigned grid[3],
                            const unsigned block[3], size_t shared_bytes, void **args,
                            fu_error *err);
/* The same, launched cooperatively (cuLaunchCooperativeKernel): every block is
 * resident at once, so the kernel may wait for all of them (fu_grid_sync). The
 * grid must fit: at most fu_kernel_occupancy blocks per SM on every SM, else
 * the driver refuses it (FU_ERR_RUNTIME naming the launch). */
fu_status fu_runtime_launch_cooperative(fu_runtime *rt, fu_kernel *k, const unsigned grid[3],
                                        const unsigned block[3], size_t shared_bytes, void **args,
                                        fu_error *err);

/* ---------------------------------------------------------------- events */

fu_status fu_event_create(fu_runtime *rt, fu_event **out, fu_error *err);
void fu_event_free(fu_event *e);
fu_status fu_event_record(fu_event *e, fu_error *err); /* on the runtime's stream */
/* Waits for end, then gives the time from start to end in milliseconds. */
fu_status fu_event_elapsed_ms(fu_event *start, fu_event *end, float *ms, fu_error *err);

#endif
