// row_probe.cu -- the fused cross entropy's memory pattern without its math (docs/perf.md v13, probe 2).
// Each row (32768 f32 = 128 KiB, or bf16 64 KiB) is read whole, kept in shared memory, reduced across the block
// (or cluster), then written. Which arrangement of rows over blocks comes closest to the copy: persistent blocks
// with rows strided by gridDim.x, one block per row, persistent blocks taking rows from a counter, or a row
// shared by a cluster? Rows held in registers instead, with or without a cp.async prefetch of the block's next
// row into shared memory, and with one exp per element in each pass (v14). And the forward's read-only pattern.
// Cold L2 (a memset of twice the L2 before each sample), CUDA events, median of 31.
#include <cstdint>
#include <cooperative_groups.h>
#include "cold_timer.cuh"
namespace cg = cooperative_groups;

__device__ __forceinline__ float block_sum(float v, float *red) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  __syncthreads();
  if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = v;
  __syncthreads();
  float s = 0;
  for (int w = 0; w < (int)(blockDim.x >> 5); w++) s += red[w];
  return s;
}

// The per-element stand-ins for the row's math, shared by every variant. MATH: the forward's exp-sum (one exp
// per f32 element) and the gradient's exp; else a cheap sum and a scale that depends on the reduction (so the
// stores wait for it) but is never anything but 1.
template <bool MATH>
__device__ __forceinline__ float row_term(uint4 v) {
  if (MATH)
    return __expf(__uint_as_float(v.x)) + __expf(__uint_as_float(v.y)) + __expf(__uint_as_float(v.z)) +
           __expf(__uint_as_float(v.w));
  return __uint_as_float(v.x) + __uint_as_float(v.y);
}
template <bool MATH>
__device__ __forceinline__ uint4 row_out(uint4 w, float s) {
  if (MATH) {
    w.x = __float_as_uint(__expf(__uint_as_float(w.x) - s));
    w.y = __float_as_uint(__expf(__uint_as_float(w.y) - s));
    w.z = __float_as_uint(__expf(__uint_as_float(w.z) - s));
    w.w = __float_as_uint(__expf(__uint_as_float(w.w) - s));
  } else {
    w.x = __float_as_uint(__uint_as_float(w.x) * (s == 12345.0f ? 2.0f : 1.0f));
  }
  return w;
}
// The last CTA to leave resets the counters (next row, CTAs done) for the next launch.
__device__ __forceinline__ void release_counters(unsigned *ctr) {
  if (threadIdx.x == 0) {
    __threadfence();
    if (atomicAdd(&ctr[1], 1u) == gridDim.x - 1) { ctr[0] = 0; ctr[1] = 0; __threadfence(); }
  }
}

// A row's part: ITERS vectors per thread loaded (all in flight), kept in this thread's shared-memory slots;
// returns the thread's partial sum (the stand-in for the row's reductions).
template <int ITERS, bool MATH = false>
__device__ __forceinline__ float load_and_stash(const uint4 *__restrict__ src, uint4 *stash) {
  uint4 v[ITERS];
#pragma unroll
  for (int i = 0; i < ITERS; i++) v[i] = __ldg(src + i * blockDim.x + threadIdx.x);
  float m = 0;
#pragma unroll
  for (int i = 0; i < ITERS; i++) {
    m += row_term<MATH>(v[i]);
    stash[i * blockDim.x + threadIdx.x] = v[i];
  }
  return m;
}
// The row written back from the slots.
template <int ITERS, bool MATH = false>
__device__ __forceinline__ void store_from_stash(uint4 *__restrict__ dst, const uint4 *stash, float s) {
#pragma unroll 2
  for (int i = 0; i < ITERS; i++) dst[i * blockDim.x + threadIdx.x] = row_out<MATH>(stash[i * blockDim.x + threadIdx.x], s);
}

// rowbytes/ (PARTS CTAs) per CTA; each thread ITERS uint4. PARTS > 1: a cluster of PARTS CTAs shares a row.
template <int ITERS, int PARTS, bool PERSIST>
__global__ void rowcopy(const uint4 *__restrict__ in, uint4 *__restrict__ out, int rows, float *sink) {
  extern __shared__ __align__(16) uint4 stash[];
  __shared__ float red[33];
  const int per_cta = ITERS * blockDim.x;  // uint4 per CTA part of the row
  const int part = PARTS > 1 ? (int)cg::this_cluster().block_rank() : 0;
  const int first = PERSIST ? (int)(blockIdx.x / PARTS) : (int)(blockIdx.x / PARTS);
  const int step = PERSIST ? (int)(gridDim.x / PARTS) : rows;
  float keep = 0;
  for (int row = first; row < rows; row += step) {
    const uint4 *src = in + ((size_t)row * PARTS + part) * per_cta;
    uint4 *dst = out + ((size_t)row * PARTS + part) * per_cta;
    float s = block_sum(load_and_stash<ITERS>(src, stash), red);
    if (PARTS > 1) {
      cg::cluster_group cl = cg::this_cluster();
      if (threadIdx.x == 0) red[32] = s;
      cl.sync();
      float tot = 0;
      for (int p = 0; p < PARTS; p++) tot += *cl.map_shared_rank(&red[32], p);
      cl.sync();  // partners done reading red[32] before it changes
      s = tot;
    }
    keep += s;
    store_from_stash<ITERS>(dst, stash, s);
  }
  if (keep == 12345.0f) *sink = keep;
}


// persistent CTAs that take rows in order from a counter (the next row fetched one row ahead); the last CTA to
// leave resets the counters for the next launch
template <int ITERS, bool MATH = false>
__global__ void rowcopy_dyn(const uint4 *__restrict__ in, uint4 *__restrict__ out, int rows, float *sink,
                            unsigned *ctr) {
  extern __shared__ __align__(16) uint4 stash[];
  __shared__ float red[33];
  __shared__ int next_row;
  const int per_cta = ITERS * blockDim.x;
  if (threadIdx.x == 0) next_row = (int)atomicAdd(&ctr[0], 1u);
  __syncthreads();
  int row = next_row;
  float keep = 0;
  while (row < rows) {
    const uint4 *src = in + (size_t)row * per_cta;
    uint4 *dst = out + (size_t)row * per_cta;
    int nxt = 0;  // the next row, taken at the start of this one (as the fuser's queue does)
    if (threadIdx.x == 0) nxt = (int)atomicAdd(&ctr[0], 1u);
    float s = block_sum(load_and_stash<ITERS, MATH>(src, stash), red);
    keep += s;
    store_from_stash<ITERS, MATH>(dst, stash, s);
    __syncthreads();  // everyone has read next_row's old value
    if (threadIdx.x == 0) next_row = nxt;
    __syncthreads();
    row = next_row;
  }
  if (keep == 12345.0f) *sink = keep;
  release_counters(ctr);
}
// Persistent CTAs from a counter, the row held in registers from its load to its store (no stash), and with
// PREFETCH the block's next row copied into shared memory (cp.async) while this one is reduced and written:
// two rows per CTA in flight. Each thread copies and later reads only its own slots, so the buffer needs no
// barrier; the reduction's barriers publish the next ticket.
__device__ __forceinline__ void copy_async16(void *smem, const void *gmem) {
  unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
template <int ITERS, bool PREFETCH, bool MATH>
__global__ void __launch_bounds__(1024) rowcopy_regs(const uint4 *__restrict__ in, uint4 *__restrict__ out, int rows, float *sink,
                             unsigned *ctr) {
  extern __shared__ __align__(16) uint4 stash[];
  __shared__ float red[33];
  __shared__ int next_row[2];
  const int per_cta = ITERS * blockDim.x;
  if (threadIdx.x == 0) next_row[0] = (int)atomicAdd(&ctr[0], 1u);
  __syncthreads();
  int row = next_row[0];
  if (PREFETCH && row < rows) {
#pragma unroll
    for (int i = 0; i < ITERS; i++)
      copy_async16(stash + i * blockDim.x + threadIdx.x, in + (size_t)row * per_cta + i * blockDim.x + threadIdx.x);
    asm volatile("cp.async.commit_group;\n" ::: "memory");
  }
  float keep = 0;
  for (int q = 1; row < rows; q ^= 1) {
    if (threadIdx.x == 0) next_row[q] = (int)atomicAdd(&ctr[0], 1u);
    uint4 v[ITERS];
    if (PREFETCH) {
      asm volatile("cp.async.wait_all;\n" ::: "memory");
#pragma unroll
      for (int i = 0; i < ITERS; i++) v[i] = stash[i * blockDim.x + threadIdx.x];
    } else {
#pragma unroll
      for (int i = 0; i < ITERS; i++) v[i] = __ldg(in + (size_t)row * per_cta + i * blockDim.x + threadIdx.x);
    }
    float m = 0;
#pragma unroll
    for (int i = 0; i < ITERS; i++) m += row_term<MATH>(v[i]);
    float s = block_sum(m, red);  // its barriers publish next_row[q]
    const int nxt = next_row[q];
    if (PREFETCH && nxt < rows) {
#pragma unroll
      for (int i = 0; i < ITERS; i++)
        copy_async16(stash + i * blockDim.x + threadIdx.x, in + (size_t)nxt * per_cta + i * blockDim.x + threadIdx.x);
      asm volatile("cp.async.commit_group;\n" ::: "memory");
    }
    keep += s;
    uint4 *dst = out + (size_t)row * per_cta;
#pragma unroll
    for (int i = 0; i < ITERS; i++) dst[i * blockDim.x + threadIdx.x] = row_out<MATH>(v[i], s);
    row = nxt;
  }
  if (keep == 12345.0f) *sink = keep;
  release_counters(ctr);
}
// read-only rows (the forward): persistent in a fixed order, one row per CTA, or counter-driven
template <int ITERS, int MODE>
__global__ void rowread(const uint4 *__restrict__ in, int rows, float *sink, unsigned *ctr) {
  __shared__ float red[33];
  __shared__ int next_row;
  float keep = 0;
  int row;
  if (MODE == 2) {
    if (threadIdx.x == 0) next_row = (int)atomicAdd(&ctr[0], 1u);
    __syncthreads();
    row = next_row;
  } else row = blockIdx.x;
  while (row < rows) {
    const uint4 *src = in + (size_t)row * ITERS * blockDim.x;
    uint4 v[ITERS];
#pragma unroll
    for (int i = 0; i < ITERS; i++) v[i] = __ldg(src + i * blockDim.x + threadIdx.x);
    int nxt = 0;
    if (MODE == 2 && threadIdx.x == 0) nxt = (int)atomicAdd(&ctr[0], 1u);
    float m = 0;
#pragma unroll
    for (int i = 0; i < ITERS; i++) m += __uint_as_float(v[i].x) + __uint_as_float(v[i].y) + __uint_as_float(v[i].z) + __uint_as_float(v[i].w);
    keep += block_sum(m, red);
    if (MODE == 0) row += gridDim.x;
    else if (MODE == 1) row = rows;
    else {
      __syncthreads();
      if (threadIdx.x == 0) next_row = nxt;
      __syncthreads();
      row = next_row;
    }
  }
  if (keep == 12345.0f) *sink = keep;
  if (MODE == 2) release_counters(ctr);
}


template <int ITERS, int PARTS, bool PERSIST>
static void run(cold_timer &timer, const char *name, const uint4 *a, uint4 *b, int rows, size_t rowbytes, int threads, int ctas_per_sm,
                int sms, float *sink) {
  auto k = rowcopy<ITERS, PARTS, PERSIST>;
  size_t smem = rowbytes / PARTS;
  if ((size_t)ITERS * threads * 16 * PARTS != rowbytes) { printf("%s: bad config\n", name); return; }
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, threads, smem));
  int per_sm = ctas_per_sm ? ctas_per_sm : occ;
  per_sm -= per_sm % PARTS;
  if (per_sm < PARTS) per_sm = PARTS;
  unsigned grid = PERSIST ? (unsigned)(sms * per_sm) : (unsigned)(rows * PARTS);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid); cfg.blockDim = dim3(threads); cfg.dynamicSmemBytes = smem;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeClusterDimension;
  at[0].val.clusterDim.x = PARTS; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  double us = timer.median_us([&] { CK(cudaLaunchKernelEx(&cfg, k, a, b, rows, sink)); });
  double bytes = 2.0 * rows * (double)rowbytes;
  printf("%-34s rows %5d occ %d grid %6u: %8.2f us %6.0f GB/s\n", name, rows, occ, grid, us, bytes / us / 1e3);
  fflush(stdout);
}


template <int ITERS, bool MATH = false>
static void run_dyn(cold_timer &timer, const char *name, const uint4 *a, uint4 *b, int rows, size_t rowbytes, int threads, int per_sm,
                    int sms, float *sink, unsigned *ctr) {
  auto k = rowcopy_dyn<ITERS, MATH>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)rowbytes));
  unsigned grid = (unsigned)(sms * per_sm);
  double us = timer.median_us([&] { k<<<grid, threads, rowbytes>>>(a, b, rows, sink, ctr); });
  printf("%-34s rows %5d grid %6u: %8.2f us %6.0f GB/s\n", name, rows, grid, us, 2.0 * rows * (double)rowbytes / us / 1e3);
  fflush(stdout);
}
template <int ITERS, bool PREFETCH, bool MATH>
static void run_regs(cold_timer &timer, const char *name, const uint4 *a, uint4 *b, int rows, size_t rowbytes, int threads,
                     int per_sm, int sms, float *sink, unsigned *ctr) {
  auto k = rowcopy_regs<ITERS, PREFETCH, MATH>;
  size_t smem = PREFETCH ? rowbytes : 0;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
  int occ = 0;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, threads, smem));
  unsigned grid = (unsigned)(sms * per_sm);
  double us = timer.median_us([&] { k<<<grid, threads, smem>>>(a, b, rows, sink, ctr); });
  printf("%-34s rows %5d occ %d grid %6u: %8.2f us %6.0f GB/s\n", name, rows, occ, grid, us,
         2.0 * rows * (double)rowbytes / us / 1e3);
  fflush(stdout);
}
template <int ITERS, int MODE>
static void run_read(cold_timer &timer, const char *name, const uint4 *a, int rows, int threads, unsigned grid, float *sink, unsigned *ctr) {
  double us = timer.median_us([&] { rowread<ITERS, MODE><<<MODE == 1 ? (unsigned)rows : grid, threads>>>(a, rows, sink, ctr); });
  double bytes = (double)rows * ITERS * threads * 16;
  printf("%-34s rows %5d grid %6u: %8.2f us %6.0f GB/s\n", name, rows, MODE == 1 ? (unsigned)rows : grid, us, bytes / us / 1e3);
  fflush(stdout);
}
int main() {
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cold_timer timer;
  float *sink; CK(cudaMalloc(&sink, 4));
  size_t bytes = (size_t)8192 * 32768 * 4;
  uint4 *a, *b; CK(cudaMalloc(&a, bytes)); CK(cudaMalloc(&b, bytes)); CK(cudaMemset(a, 0, bytes));
  double us = timer.median_us([&] { CK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice)); });
  printf("memcpyDtoD 1 GiB: %.2f us %.0f GB/s\n", us, 2.0 * bytes / us / 1e3);
  unsigned *ctr; CK(cudaMalloc(&ctr, 8)); CK(cudaMemset(ctr, 0, 8));
  const size_t f32row = 131072, bf16row = 65536;
  for (int rows : {8192, 8184}) { // 8184 = 62 x 132: no tail block
    // f32 rows of 128 KiB: one 1024-thread block per SM
    run<8, 1, true>(timer, "f32 1x1024 persistent", a, b, rows, f32row, 1024, 1, sms, sink);
    run<8, 1, false>(timer, "f32 1x1024 grid=rows", a, b, rows, f32row, 1024, 1, sms, sink);
    run_dyn<8>(timer, "f32 1x1024 counter", a, b, rows, f32row, 1024, 1, sms, sink, ctr);
    run_regs<8, false, false>(timer, "f32 1x1024 counter regs", a, b, rows, f32row, 1024, 1, sms, sink, ctr);
    run_regs<8, true, false>(timer, "f32 1x1024 counter regs+prefetch", a, b, rows, f32row, 1024, 1, sms, sink, ctr);
    run_dyn<8, true>(timer, "f32 1x1024 counter, exp", a, b, rows, f32row, 1024, 1, sms, sink, ctr);
    run_regs<8, false, true>(timer, "f32 1x1024 counter regs, exp", a, b, rows, f32row, 1024, 1, sms, sink, ctr);
    run_regs<8, true, true>(timer, "f32 1x1024 c. regs+prefetch, exp", a, b, rows, f32row, 1024, 1, sms, sink, ctr);
    // bf16 rows of 64 KiB: 512-thread blocks
    run<8, 1, true>(timer, "bf16 1x512 persistent 2/SM", a, b, rows, bf16row, 512, 2, sms, sink);
    run<8, 1, true>(timer, "bf16 1x512 persistent 3/SM", a, b, rows, bf16row, 512, 3, sms, sink);
    run<8, 1, false>(timer, "bf16 1x512 grid=rows", a, b, rows, bf16row, 512, 0, sms, sink);
    run_dyn<8>(timer, "bf16 1x512 counter 2/SM", a, b, rows, bf16row, 512, 2, sms, sink, ctr);
    run_dyn<8>(timer, "bf16 1x512 counter 3/SM", a, b, rows, bf16row, 512, 3, sms, sink, ctr);
    run_regs<8, false, false>(timer, "bf16 2x512 counter regs", a, b, rows, bf16row, 512, 2, sms, sink, ctr);
    run_regs<8, true, false>(timer, "bf16 2x512 counter regs+prefetch", a, b, rows, bf16row, 512, 2, sms, sink, ctr);
    run_dyn<8, true>(timer, "bf16 1x512 counter 2/SM, exp/2", a, b, rows, bf16row, 512, 2, sms, sink, ctr);
    run_dyn<8, true>(timer, "bf16 1x512 counter 3/SM, exp/2", a, b, rows, bf16row, 512, 3, sms, sink, ctr);
    run_regs<8, true, true>(timer, "bf16 2x512 c. regs+prefetch, exp/2", a, b, rows, bf16row, 512, 2, sms, sink, ctr);
  }
  // a row shared by a cluster of blocks (distributed shared memory)
  run<8, 2, true>(timer, "f32 cluster2 x512 persistent", a, b, 8192, f32row, 512, 0, sms, sink);
  run<8, 2, false>(timer, "f32 cluster2 x512 grid=rows", a, b, 8192, f32row, 512, 0, sms, sink);
  run<8, 4, true>(timer, "f32 cluster4 x256 persistent", a, b, 8192, f32row, 256, 0, sms, sink);
  run<8, 4, false>(timer, "f32 cluster4 x256 grid=rows", a, b, 8192, f32row, 256, 0, sms, sink);
  run<4, 8, false>(timer, "f32 cluster8 x256 it4 grid=rows", a, b, 8192, f32row, 256, 0, sms, sink);
  run<8, 2, false>(timer, "bf16 cluster2 x256 grid=rows", a, b, 8192, bf16row, 256, 0, sms, sink);
  run<4, 4, false>(timer, "bf16 cluster4 x256 it4 grid=rows", a, b, 8192, bf16row, 256, 0, sms, sink);
  // the forward's pattern, read only: bf16 rows of 64 KiB at 256 threads x 16 vectors, f32 128 KiB at 512 x 16
  run_read<16, 0>(timer, "read bf16 256x16 persistent", a, 8192, 256, sms * 8, sink, ctr);
  run_read<16, 1>(timer, "read bf16 256x16 grid=rows", a, 8192, 256, 0, sink, ctr);
  run_read<16, 2>(timer, "read bf16 256x16 counter", a, 8192, 256, sms * 8, sink, ctr);
  run_read<16, 0>(timer, "read f32 512x16 persistent", a, 8192, 512, sms * 4, sink, ctr);
  run_read<16, 1>(timer, "read f32 512x16 grid=rows", a, 8192, 512, 0, sink, ctr);
  run_read<16, 2>(timer, "read f32 512x16 counter", a, 8192, 512, sms * 4, sink, ctr);
  unsigned h[2]; CK(cudaMemcpy(h, ctr, 8, cudaMemcpyDeviceToHost));
  printf("counters after the runs (0 0 expected): %u %u\n", h[0], h[1]);
  return h[0] || h[1];
}
