// copy_probe.cu -- how close an SM kernel gets to cuMemcpyDtoD on a copy (docs/perf.md v13, probe 1):
// grid-stride float4, one tile per block at 1 / 4 / 8 vectors per thread, streaming hints, TMA bulk copies
// (cp.async.bulk) both ways or TMA loads with plain stores, at 24 MiB, 96 MiB and 1 GiB. Cold L2 (a memset of
// twice the L2 before each sample, as the harness does), CUDA events, median of 31.
#include <cstdint>
#include "cold_timer.cuh"

__global__ void copy_gs(const float4 *__restrict__ a, float4 *__restrict__ b, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) b[i] = a[i];
}
// U float4 per thread, loads all first then stores; one tile per block, no grid stride (torch/triton style)
template <int U>
__global__ void copy_tile(const float4 *__restrict__ a, float4 *__restrict__ b, size_t n) {
  size_t base = (size_t)blockIdx.x * blockDim.x * U + threadIdx.x;
  float4 v[U];
#pragma unroll
  for (int u = 0; u < U; u++) if (base + (size_t)u * blockDim.x < n) v[u] = a[base + (size_t)u * blockDim.x];
#pragma unroll
  for (int u = 0; u < U; u++) if (base + (size_t)u * blockDim.x < n) b[base + (size_t)u * blockDim.x] = v[u];
}
// streaming hints
template <int U>
__global__ void copy_tile_cs(const float4 *__restrict__ a, float4 *__restrict__ b, size_t n) {
  size_t base = (size_t)blockIdx.x * blockDim.x * U + threadIdx.x;
  float4 v[U];
#pragma unroll
  for (int u = 0; u < U; u++) if (base + (size_t)u * blockDim.x < n) v[u] = __ldcs(a + base + (size_t)u * blockDim.x);
#pragma unroll
  for (int u = 0; u < U; u++) if (base + (size_t)u * blockDim.x < n) __stcs(b + base + (size_t)u * blockDim.x, v[u]);
}

__device__ __forceinline__ uint32_t sptr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

// The TMA steps both bulk kernels use: barriers made visible to the async proxy, a chunk loaded into a stage
// (completing on its barrier), and the wait for a stage's barrier phase.
__device__ __forceinline__ void bars_init(uint64_t *bar, int n) {
  for (int s = 0; s < n; s++) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(sptr(&bar[s])));
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
__device__ __forceinline__ void bulk_load(char *stage, const char *src, uint32_t bytes, uint64_t *bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sptr(bar)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(sptr(stage)), "l"(src), "r"(bytes), "r"(sptr(bar)) : "memory");
}
__device__ __forceinline__ void bar_wait(uint64_t *bar, uint32_t parity) {
  asm volatile("{\n .reg .pred p;\n W: mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra W;\n}"
               ::"r"(sptr(bar)), "r"(parity) : "memory");
}
// The CTA's chunks are blockIdx.x, + gridDim.x, ... of nchunks; its i-th goes through stage i % STAGES.
__device__ __forceinline__ size_t chunks_of_block(size_t nchunks) {
  return nchunks > blockIdx.x ? (nchunks - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
}
__device__ __forceinline__ size_t chunk_of_block(size_t i) { return blockIdx.x + i * gridDim.x; }
template <int STAGES, int CHUNK>
__device__ __forceinline__ void load_stage(char *smem, const char *src, uint64_t *bar, size_t i) {
  const int s = (int)(i % STAGES);
  bulk_load(smem + (size_t)s * CHUNK, src + chunk_of_block(i) * CHUNK, CHUNK, &bar[s]);
}
// waits for the CTA's i-th chunk to land; returns its stage
template <int STAGES>
__device__ __forceinline__ int wait_stage(uint64_t *bar, size_t i) {
  const int s = (int)(i % STAGES);
  bar_wait(&bar[s], (uint32_t)((i / STAGES) & 1));
  return s;
}

// TMA 1-D bulk copy: one thread per CTA drives STAGES buffers of CHUNK bytes; chunk c of the grid goes
// blockIdx.x, +gridDim.x, ... so the whole grid sweeps memory front to back together.
template <int STAGES, int CHUNK>
__global__ void copy_bulk(const char *__restrict__ src, char *__restrict__ dst, size_t n) {
  extern __shared__ __align__(128) char smem[];
  __shared__ __align__(8) uint64_t bar[STAGES];
  if (threadIdx.x != 0) return;
  bars_init(bar, STAGES);
  const size_t my = chunks_of_block(n / CHUNK);
  for (size_t i = 0; i < my && i < STAGES; i++) load_stage<STAGES, CHUNK>(smem, src, bar, i);
  for (size_t i = 0; i < my; i++) {
    const int s = wait_stage<STAGES>(bar, i);
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst + chunk_of_block(i) * CHUNK),
                 "r"(sptr(smem + (size_t)s * CHUNK)), "r"(CHUNK) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    if (i >= 1 && i - 1 + STAGES < my) {  // the store of chunk i - 1 has read its stage: refill it
      asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
      load_stage<STAGES, CHUNK>(smem, src, bar, i - 1 + STAGES);
    }
  }
  asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}

// TMA loads into shared memory, plain vector stores from shared memory by all threads (what a fused kernel
// that computes on the row would do)
template <int STAGES, int CHUNK>
__global__ void copy_bulk_ld(const char *__restrict__ src, char *__restrict__ dst, size_t n) {
  extern __shared__ __align__(128) char smem[];
  __shared__ __align__(8) uint64_t bar[STAGES];
  if (threadIdx.x == 0) bars_init(bar, STAGES);
  __syncthreads();
  const size_t my = chunks_of_block(n / CHUNK);
  if (threadIdx.x == 0)
    for (size_t i = 0; i < my && i < STAGES; i++) load_stage<STAGES, CHUNK>(smem, src, bar, i);
  for (size_t i = 0; i < my; i++) {
    const int s = wait_stage<STAGES>(bar, i);
    const float4 *in = (const float4 *)(smem + (size_t)s * CHUNK);
    float4 *out = (float4 *)(dst + chunk_of_block(i) * CHUNK);
    for (int k = threadIdx.x; k < CHUNK / 16; k += blockDim.x) out[k] = in[k];
    __syncthreads();  // everyone done reading stage s
    if (threadIdx.x == 0 && i + STAGES < my) load_stage<STAGES, CHUNK>(smem, src, bar, i + STAGES);
  }
}


int main() {
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cold_timer timer;
  printf("SMs %d L2 %d\n", sms, timer.l2_bytes);
  size_t sizes[] = {25165824, 100663296, 1073741824};
  for (size_t bytes : sizes) {
    char *a, *b; CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes));
    CK(cudaMemset(a, 1, bytes));
    size_t n4 = bytes / 16;
    auto report = [&](const char *name, double us) {
      printf("%8zu KB %-26s %9.2f us %7.0f GB/s\n", bytes >> 10, name, us, 2.0 * bytes / us / 1e3);
      fflush(stdout);
    };
    report("memcpyDtoD", timer.median_us([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); }));
    report("gridstride 8/SM x256", timer.median_us([&] { copy_gs<<<sms * 8, 256>>>((const float4 *)a, (float4 *)b, n4); }));
    report("tile U1 x256", timer.median_us([&] { copy_tile<1><<<(n4 + 255) / 256, 256>>>((const float4 *)a, (float4 *)b, n4); }));
    report("tile U4 x256", timer.median_us([&] { copy_tile<4><<<(n4 + 1023) / 1024, 256>>>((const float4 *)a, (float4 *)b, n4); }));
    report("tile U8 x256", timer.median_us([&] { copy_tile<8><<<(n4 + 2047) / 2048, 256>>>((const float4 *)a, (float4 *)b, n4); }));
    report("tile_cs U4 x256", timer.median_us([&] { copy_tile_cs<4><<<(n4 + 1023) / 1024, 256>>>((const float4 *)a, (float4 *)b, n4); }));
#define BULK(ST, CH, PER_SM)                                                                              \
    do {                                                                                                    \
      size_t sm_bytes = (size_t)(ST) * (CH);                                                                \
      CK(cudaFuncSetAttribute(copy_bulk<ST, CH>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm_bytes)); \
      char nm[64]; snprintf(nm, sizeof nm, "bulk %dx%dK %d/SM", ST, (CH) >> 10, PER_SM);                  \
      report(nm, timer.median_us([&] { copy_bulk<ST, CH><<<sms * (PER_SM), 32, sm_bytes>>>(a, b, bytes); }));        \
    } while (0)
    BULK(4, 16384, 1);
    BULK(8, 16384, 1);
    BULK(12, 16384, 1);
    BULK(6, 32768, 1);
    BULK(4, 8192, 4);
    BULK(8, 8192, 2);
    BULK(4, 4096, 8);
#define BULKLD(ST, CH, PER_SM, TH)                                                                          \
    do {                                                                                                    \
      size_t sm_bytes = (size_t)(ST) * (CH);                                                                \
      CK(cudaFuncSetAttribute(copy_bulk_ld<ST, CH>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)sm_bytes)); \
      char nm[64]; snprintf(nm, sizeof nm, "bulk_ld %dx%dK %d/SM x%d", ST, (CH) >> 10, PER_SM, TH);       \
      report(nm, timer.median_us([&] { copy_bulk_ld<ST, CH><<<sms * (PER_SM), TH, sm_bytes>>>(a, b, bytes); }));   \
    } while (0)
    BULKLD(8, 16384, 1, 512);
    BULKLD(4, 16384, 2, 256);
    BULKLD(4, 8192, 4, 256);
    // check the last variant copied
    CK(cudaMemset(b, 0, bytes));
    copy_bulk<8, 16384><<<sms, 32, 8 * 16384>>>(a, b, bytes);
    CK(cudaDeviceSynchronize());
    std::vector<char> h(1 << 20);
    CK(cudaMemcpy(h.data(), b + bytes - h.size(), h.size(), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (char c : h) bad += c != 1;
    printf("bulk copy check: %d bad bytes in the last MB\n", bad);
    cudaFree(a); cudaFree(b);
  }
  return 0;
}
