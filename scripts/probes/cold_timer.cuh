// cold_timer.cuh -- what the probes share: CUDA error checks, and the timing of METHOD.md (a memset of
// twice the L2 before each sample, as the harness does, so the L2 starts cold; CUDA events around the
// launch only; the median of `reps` samples after one warm-up launch).
#pragma once
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

struct cold_timer {
  int l2_bytes = 0;
  void *flush = nullptr;
  size_t flush_bytes = 0;
  cudaEvent_t start, end;

  cold_timer() {
    CK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, 0));
    flush_bytes = 2 * (size_t)l2_bytes;
    CK(cudaMalloc(&flush, flush_bytes));
    CK(cudaEventCreate(&start));
    CK(cudaEventCreate(&end));
  }
  ~cold_timer() {
    cudaFree(flush);
    cudaEventDestroy(start);
    cudaEventDestroy(end);
  }
  cold_timer(const cold_timer &) = delete;
  cold_timer &operator=(const cold_timer &) = delete;

  // median event time of launch() in microseconds
  template <class F> double median_us(F launch, int reps = 31) {
    launch();
    CK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int r = 0; r < reps; r++) {
      CK(cudaMemsetAsync(flush, r + 1, flush_bytes));
      CK(cudaEventRecord(start));
      launch();
      CK(cudaEventRecord(end));
      CK(cudaEventSynchronize(end));
      float ms;
      CK(cudaEventElapsedTime(&ms, start, end));
      t.push_back(ms * 1000);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    return t[reps / 2];
  }
};
