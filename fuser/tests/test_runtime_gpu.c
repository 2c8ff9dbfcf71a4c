/*
 * test_runtime_gpu.c -- the runtime on a GPU: memory, copies, memsets,
 * launches (a vector add with float4 and a scalar tail, dynamic shared memory
 * above 48 KiB), events, and errors that must be reported, not crash; then all
 * of it again on part of the SMs (fu_runtime_options.sm_limit), whose kernels
 * must run on that many SMs and no more.
 * Without a GPU it prints one line and exits 77 (skipped).
 */
#define _XOPEN_SOURCE 700

#include "check.h"
#include "gpu_test.h"
#include "runtime.h"
#include "test_util.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *SOURCE =
    "extern \"C\" __global__ void vadd(const float *a, const float *b, float *c, long long n)\n"
    "{\n"
    "    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
    "    long long n4 = n / 4;\n"
    "    if (i < n4) {\n"
    "        float4 x = reinterpret_cast<const float4 *>(a)[i];\n"
    "        float4 y = reinterpret_cast<const float4 *>(b)[i];\n"
    "        reinterpret_cast<float4 *>(c)[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z,\n"
    "                                                      x.w + y.w);\n"
    "    }\n"
    "    long long t = n4 * 4 + i;\n"
    "    if (t < n) c[t] = a[t] + b[t];\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void reverse_smem(float *out, int n)\n"
    "{\n"
    "    extern __shared__ float s[];\n"
    "    for (int j = threadIdx.x; j < n; j += blockDim.x) s[j] = (float)j;\n"
    "    __syncthreads();\n"
    "    for (int j = threadIdx.x; j < n; j += blockDim.x) out[j] = s[n - 1 - j];\n"
    "}\n"
    "\n"
    "extern \"C\" __global__ void which_sms(unsigned *seen)\n"
    "{\n"
    "    unsigned id; asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(id));\n"
    "    if (threadIdx.x == 0) atomicOr(&seen[id / 32], 1u << (id % 32));\n"
    "    __nanosleep(20000); /* the blocks stay a while, so that they spread over every SM there is */\n"
    "}\n";

/* How many SMs a grid of 32 blocks an SM (of those the device reports) ran on (%smid). */
static int sms_used(fu_runtime *rt, fu_module *m)
{
    fu_error err = {0};
    fu_kernel *k = NULL;
    OK(fu_module_get_kernel(m, "which_sms", &k, &err));
    fu_devptr seen = 0;
    unsigned words[64] = {0};
    OK(fu_device_alloc(rt, sizeof words, &seen, &err));
    OK(fu_device_memset8(rt, seen, 0, sizeof words, &err));
    unsigned grid[3] = {(unsigned)fu_runtime_device(rt)->sm_count * 32, 1, 1}, block[3] = {64, 1, 1};
    void *args[] = {&seen};
    if (k) OK(fu_runtime_launch(rt, k, grid, block, 0, args, &err));
    OK(fu_device_download(rt, words, seen, sizeof words, &err));
    fu_device_free(rt, seen, &err);
    int n = 0;
    for (int i = 0; i < 64; i++) n += __builtin_popcount(words[i]);
    return n;
}

/* A kernel with compile-time cluster dimensions (sm_90): each block writes its rank in the
 * cluster, read back through distributed shared memory by the next rank. */
static const char *const CLUSTER_SOURCE =
    "extern \"C\" __global__ void __cluster_dims__(4, 1, 1) ranks(unsigned *out)\n"
    "{\n"
    "    extern __shared__ unsigned s[];\n"
    "    unsigned rank; asm volatile(\"mov.u32 %0, %%cluster_ctarank;\" : \"=r\"(rank));\n"
    "    if (threadIdx.x == 0) s[0] = rank;\n"
    "    asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n"
    "    unsigned a = (unsigned)__cvta_generic_to_shared(s), ra, v;\n"
    "    asm volatile(\"mapa.shared::cluster.u32 %0, %1, %2;\" : \"=r\"(ra) : \"r\"(a), \"r\"((rank + 1) % 4));\n"
    "    asm volatile(\"ld.shared::cluster.u32 %0, [%1];\" : \"=r\"(v) : \"r\"(ra) : \"memory\");\n"
    "    asm volatile(\"barrier.cluster.arrive.release.aligned;\\n\\tbarrier.cluster.wait.acquire.aligned;\" ::: \"memory\");\n"
    "    if (threadIdx.x == 0) out[blockIdx.x] = v;\n"
    "}\n";

/* Clusters: how many run at once (a cluster's blocks share a GPC), and a launch through
 * cuLaunchKernel of a kernel whose cluster size is compiled in. */
static void run_cluster(fu_runtime *rt)
{
    fu_error err = {0};
    const fu_device_props *p = fu_runtime_device(rt);
    if (p->cc_major < 9) {
        printf("  clusters: sm_%d%d has none, not checked\n", p->cc_major, p->cc_minor);
        return;
    }
    fu_module *m = NULL;
    fu_compile_info info;
    OK(fu_runtime_compile(rt, CLUSTER_SOURCE, "cluster_gpu.cu", NULL, 0, &m, &info, &err));
    fu_kernel *k = NULL;
    if (m) OK(fu_module_get_kernel(m, "ranks", &k, &err));
    if (!k) {
        fu_module_free(m);
        return;
    }
    const unsigned grid = (unsigned)p->sm_count / 4 * 4, block = 1024;
    const size_t shared = 128 * 1024; /* one block an SM */
    int fit = 0;
    OK(fu_kernel_max_active_clusters(k, grid, block, shared, &fit, &err));
    printf("  clusters of 4 blocks of %u threads, %zu KiB shared: %d at once (%d SMs)\n", block, shared >> 10, fit,
           p->sm_count);
    CHECK(fit > 0 && fit * 4 <= p->sm_count);
    fu_devptr d = 0;
    OK(fu_device_alloc(rt, grid * sizeof(unsigned), &d, &err));
    void *args[] = {&d};
    OK(fu_runtime_launch(rt, k, (unsigned[3]){grid, 1, 1}, (unsigned[3]){block, 1, 1}, shared, args, &err));
    unsigned *h = fu_malloc(grid * sizeof *h);
    if (h) {
        OK(fu_device_download(rt, h, d, grid * sizeof *h, &err));
        int bad = 0;
        for (unsigned b = 0; b < grid; b++) bad += h[b] != (b % 4 + 1) % 4;
        CHECK(bad == 0);
    }
    fu_free(h);
    OK(fu_device_free(rt, d, &err));
    fu_module_free(m);
}

static void run(fu_runtime *rt)
{
    fu_error err = {0};
    const fu_device_props *p = fu_runtime_device(rt);
    printf("%s\n", fu_runtime_describe(rt));
    printf("  %d SMs, %lld MiB L2, %lld MiB memory, shared %d/%d (opt-in) per block, %d per SM, "
           "%d threads per SM, memory clock %d kHz x %d bits\n",
           p->sm_count, (long long)(p->l2_bytes >> 20), (long long)(p->total_mem_bytes >> 20),
           p->max_shared_per_block, p->max_shared_per_block_optin, p->max_shared_per_sm,
           p->max_threads_per_sm, p->memory_clock_khz, p->memory_bus_width_bits);
    CHECK(p->sm_count > 0);
    CHECK(p->l2_bytes > 0);
    CHECK(p->cc_major >= 5);
    CHECK(p->max_shared_per_block_optin >= p->max_shared_per_block);
    CHECK(p->driver_version >= 12000);

    fu_module *m = NULL;
    fu_compile_info info;
    OK(fu_runtime_compile(rt, SOURCE, "runtime_gpu.cu", NULL, 0, &m, &info, &err));
    if (!m) return;
    CHECK(fu_module_loaded(m));
    const int used = sms_used(rt, m);
    printf("  a grid of %d blocks ran on %d SMs\n", p->sm_count * 32, used);
    CHECK(used == p->sm_count);
    fu_kernel *vadd = NULL, *rev = NULL, *none = NULL;
    OK(fu_module_get_kernel(m, "vadd", &vadd, &err));
    OK(fu_module_get_kernel(m, "reverse_smem", &rev, &err));
    CHECK(fu_module_get_kernel(m, "no_such_kernel", &none, &err) == FU_ERR_ARG);
    CHECK_CONTAINS(err.message, "no_such_kernel");
    fu_kernel *again = NULL;
    OK(fu_module_get_kernel(m, "vadd", &again, &err));
    CHECK(again == vadd);
    if (!vadd || !rev) {
        fu_module_free(m);
        return;
    }
    const fu_kernel_attrs *ka = fu_kernel_attributes(vadd);
    printf("  vadd: %d registers, %d B local, %d B static shared, max %d threads, sm_%d\n",
           ka->num_regs, ka->local_bytes, ka->static_shared_bytes, ka->max_threads_per_block,
           ka->binary_version);
    CHECK(ka->num_regs > 0);
    CHECK(ka->max_threads_per_block >= 256);
    CHECK(ka->binary_version == p->cc_major * 10 + p->cc_minor);
    int blocks = 0;
    OK(fu_kernel_occupancy(vadd, 256, 0, &blocks, &err));
    CHECK(blocks > 0);
    /* above 48 KiB of dynamic shared memory too (the limit is raised first: the driver
     * counted no block at all before, and a cooperative grid came out empty) */
    OK(fu_kernel_occupancy(vadd, 256, 64 * 1024, &blocks, &err));
    CHECK(blocks >= 1 && blocks <= 3);

    /* Vector add: n not a multiple of 4, so the tail path runs too. */
    const long long n = 1000003;
    size_t bytes = (size_t)n * sizeof(float);
    float *a = fu_malloc(bytes), *b = fu_malloc(bytes), *c = fu_malloc(bytes);
    for (long long i = 0; i < n; i++) {
        a[i] = (float)i * 0.5f;
        b[i] = 1.0f / (float)(i + 1);
    }
    fu_devptr da = 0, db = 0, dc = 0;
    OK(fu_device_alloc(rt, bytes, &da, &err));
    OK(fu_device_alloc(rt, bytes, &db, &err));
    OK(fu_device_alloc(rt, bytes, &dc, &err));
    fu_runtime_stats st;
    fu_runtime_get_stats(rt, &st);
    CHECK(st.device_bytes_live == 3 * (int64_t)bytes);
    OK(fu_device_upload(rt, da, a, bytes, &err));
    OK(fu_device_upload_async(rt, db, b, bytes, &err));
    OK(fu_device_memset8(rt, dc, 0, bytes, &err));
    long long n4 = n / 4;
    unsigned grid[3] = {(unsigned)((n4 + 255) / 256), 1, 1}, block[3] = {256, 1, 1};
    void *args[] = {&da, &db, &dc, (void *)&n};
    OK(fu_runtime_launch(rt, vadd, grid, block, 0, args, &err));
    memset(c, 0, bytes);
    OK(fu_device_download(rt, c, dc, bytes, &err));
    long long bad = 0;
    for (long long i = 0; i < n; i++) bad += c[i] != a[i] + b[i];
    CHECK(bad == 0);
    if (bad) fprintf(stderr, "  vadd: %lld wrong elements (last %g vs %g)\n", bad, c[n - 1],
                     a[n - 1] + b[n - 1]);

    /* Events around repeated launches. */
    fu_event *e0 = NULL, *e1 = NULL;
    OK(fu_event_create(rt, &e0, &err));
    OK(fu_event_create(rt, &e1, &err));
    if (e0 && e1) {
        OK(fu_event_record(e0, &err));
        for (int r = 0; r < 20; r++) OK(fu_runtime_launch(rt, vadd, grid, block, 0, args, &err));
        OK(fu_event_record(e1, &err));
        float ms = 0;
        OK(fu_event_elapsed_ms(e0, e1, &ms, &err));
        printf("  20 x vadd of %lld floats: %.3f ms (%.0f GB/s)\n", n, ms,
               20.0 * 3.0 * (double)bytes / (ms * 1e-3) / 1e9);
        CHECK(ms > 0);
    }
    fu_event_free(e0);
    fu_event_free(e1);

    /* An invalid configuration is an error naming the launch; the runtime
     * stays usable. */
    unsigned too_big[3] = {2048, 1, 1};
    fu_status s = fu_runtime_launch(rt, vadd, grid, too_big, 0, args, &err);
    CHECK(s == FU_ERR_RUNTIME);
    printf("  expected error: %s\n", err.message);
    CHECK_CONTAINS(err.message, "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE");
    CHECK_CONTAINS(err.message, "vadd");
    CHECK_CONTAINS(err.message, "block 2048x1x1");
    unsigned zero_grid[3] = {0, 1, 1};
    CHECK(fu_runtime_launch(rt, vadd, zero_grid, block, 0, args, &err) == FU_ERR_RUNTIME);
    s = fu_runtime_launch(rt, rev, (unsigned[3]){1, 1, 1}, block, (size_t)64 << 20, args, &err);
    CHECK(s == FU_ERR_ARG);
    CHECK_CONTAINS(err.message, "shared memory");
    OK(fu_runtime_synchronize(rt, &err));

    /* Dynamic shared memory above 48 KiB (the limit is raised for us). */
    int nsmem = 96 * 1024 / 4;
    if ((size_t)p->max_shared_per_block_optin >= (size_t)nsmem * 4) {
        void *rargs[] = {&dc, &nsmem};
        OK(fu_runtime_launch(rt, rev, (unsigned[3]){1, 1, 1}, (unsigned[3]){512, 1, 1},
                             (size_t)nsmem * 4, rargs, &err));
        OK(fu_device_download(rt, c, dc, (size_t)nsmem * 4, &err));
        bad = 0;
        for (int j = 0; j < nsmem; j++) bad += c[j] != (float)(nsmem - 1 - j);
        CHECK(bad == 0);
    }

    /* memset8, memset32, device-to-device copies, async download. */
    OK(fu_device_memset8(rt, dc, 0xab, bytes, &err));
    OK(fu_device_download(rt, c, dc, bytes, &err));
    const unsigned char *cb = (const unsigned char *)c;
    bad = 0;
    for (size_t i = 0; i < bytes; i++) bad += cb[i] != 0xab;
    CHECK(bad == 0);
    float one_half = 1.5f;
    uint32_t bits;
    memcpy(&bits, &one_half, 4);
    OK(fu_device_memset32(rt, dc, bits, (size_t)n, &err));
    OK(fu_device_download(rt, c, dc, bytes, &err));
    bad = 0;
    for (long long i = 0; i < n; i++) bad += c[i] != 1.5f;
    CHECK(bad == 0);
    CHECK(fu_device_memset32(rt, dc + 2, bits, 4, &err) == FU_ERR_ARG);
    OK(fu_device_copy(rt, dc, da, bytes, &err));
    OK(fu_device_copy_async(rt, db, dc, bytes, &err));
    OK(fu_device_memset32_async(rt, da, 0, (size_t)n, &err));
    memset(c, 0, bytes);
    OK(fu_device_download_async(rt, c, db, bytes, &err));
    OK(fu_runtime_synchronize(rt, &err));
    CHECK(memcmp(c, a, bytes) == 0);

    /* Allocation failure and a bad free are errors, not crashes. */
    fu_devptr huge = 0;
    s = fu_device_alloc(rt, (size_t)1 << 52, &huge, &err);
    CHECK(s == FU_ERR_NOMEM);
    CHECK(huge == 0);
    CHECK_CONTAINS(err.message, "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY");
    CHECK(fu_device_free(rt, da + 256, &err) == FU_ERR_ARG);

    OK(fu_device_free(rt, da, &err));
    OK(fu_device_free(rt, db, &err));
    OK(fu_device_free(rt, dc, &err));
    fu_runtime_get_stats(rt, &st);
    CHECK(st.device_bytes_live == 0);
    CHECK(st.device_bytes_peak == 3 * (int64_t)bytes);
    CHECK(st.launches >= 22);
    fu_module_free(m);

    /* The cached CUBIN loads as well as a fresh one. */
    OK(fu_runtime_compile(rt, SOURCE, "runtime_gpu.cu", NULL, 0, &m, &info, &err));
    CHECK(info.cache_hit);
    if (m) {
        CHECK(fu_module_loaded(m));
        CHECK(fu_module_get_kernel(m, "vadd", &vadd, &err) == FU_OK);
        fu_module_free(m);
    }
    fu_free(a);
    fu_free(b);
    fu_free(c);
}

int main(void)
{
    char dir[512];
    if (!tu_make_temp_dir(dir, sizeof dir, "fuser-rt-gpu")) return 1;
    fu_runtime_options opts = {0};
    opts.cache_dir = dir;
    fu_runtime *rt = NULL;
    int skip = gpu_test_open("test_runtime_gpu", &opts, &rt);
    if (skip) {
        tu_remove_tree(dir);
        return skip;
    }
    run(rt);
    run_cluster(rt);
    const int all = fu_runtime_device(rt)->sm_count;
    fu_runtime_close(rt);
    /* on part of the SMs (a green context): 60 asked, 64 given on sm_90 (multiples of 8) */
    opts.sm_limit = 60;
    fu_error err = {0};
    OK(fu_runtime_open(&opts, &rt, &err));
    if (rt) {
        const fu_device_props *p = fu_runtime_device(rt);
        char tail[64];
        snprintf(tail, sizeof tail, " of %d SMs)", all);
        CHECK(p->sm_count >= 60 && p->sm_count < all && p->sm_count_all == all);
        CHECK_CONTAINS(p->name, tail);
        run(rt);
        run_cluster(rt);
        fu_runtime_close(rt);
    }
    /* as many as there are, or more: the whole GPU, as without a limit */
    opts.sm_limit = all + 100;
    OK(fu_runtime_open(&opts, &rt, &err));
    if (rt) {
        CHECK(fu_runtime_device(rt)->sm_count == all && !strstr(fu_runtime_device(rt)->name, " SMs)"));
        fu_runtime_close(rt);
    }
    opts.sm_limit = -1;
    CHECK(fu_runtime_open(&opts, &rt, &err) == FU_ERR_ARG && rt == NULL);
    CHECK_CONTAINS(err.message, "SM limit -1");
    tu_remove_tree(dir);
    return check_finish("test_runtime_gpu");
}
