// cluster_probe.cu -- how many thread-block clusters of each size the GPU holds at once (docs/perf.md
// v38): the cross entropy's long rows run over clusters of 2-8 blocks of 1024 threads, each block keeping
// its part of the row in shared memory, and the plan assumes every cluster of its grid is resident
// (SMs / cluster size of them). The SMs come in GPCs, and a cluster lives in one GPC, so fewer may fit.
// For each cluster size (1-8, and 16 where the GPU allows non-portable sizes) and dynamic shared memory
// of 64, 128 and 200 KiB a block, prints cudaOccupancyMaxActiveClusters beside SMs / size, and how many
// of the SMs the resident clusters keep busy.
#include <cstdio>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); return 1; } } while (0)

__global__ void row_part(float *out) {
  extern __shared__ float part[];
  part[threadIdx.x] = (float)threadIdx.x;
  __syncthreads();
  if (threadIdx.x == 0 && out) out[blockIdx.x] = part[blockDim.x - 1];
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  printf("%s: %d SMs, %zu bytes of shared memory an SM, %zu a block (opt-in)\n", prop.name, sms,
         prop.sharedMemPerMultiprocessor, prop.sharedMemPerBlockOptin);
  CK(cudaFuncSetAttribute(row_part, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)prop.sharedMemPerBlockOptin));
  const bool nonportable = cudaFuncSetAttribute(row_part, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess;
  cudaGetLastError();
  const int sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 16};
  const int kib[] = {64, 128, 200};
  printf("%-8s %-8s %-16s %-12s %s\n", "cluster", "smem", "active clusters", "SMs / size", "SMs busy");
  for (int s : sizes) {
    if (s > 8 && !nonportable) continue;
    for (int k : kib) {
      cudaLaunchConfig_t cfg = {};
      cfg.gridDim = dim3((unsigned)(sms / s * s));
      cfg.blockDim = dim3(1024);
      cfg.dynamicSmemBytes = (size_t)k * 1024;
      cudaLaunchAttribute attr;
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = (unsigned)s;
      attr.val.clusterDim.y = 1;
      attr.val.clusterDim.z = 1;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      int active = -1;
      cudaError_t e = cudaOccupancyMaxActiveClusters(&active, row_part, &cfg);
      if (e != cudaSuccess) {
        printf("%-8d %-8d %s\n", s, k, cudaGetErrorString(e));
        cudaGetLastError();
        continue;
      }
      printf("%-8d %-8d %-16d %-12d %d of %d\n", s, k, active, sms / s, active * s, sms);
    }
  }
  return 0;
}
