// ---- fuser prelude 10_minmax.cuh: NaN-propagating maximum and minimum
// provides: fu_max fu_min
// maximum/minimum propagate NaN, as torch.maximum does
template <class T> __device__ __forceinline__ T fu_max(T a, T b) { return (a != a || a > b) ? a : b; }
template <class T> __device__ __forceinline__ T fu_min(T a, T b) { return (a != a || a < b) ? a : b; }
#if __CUDA_ARCH__ >= 800
// the same in one instruction (FMNMX.NAN) where the GPU has it
__device__ __forceinline__ float fu_max(float a, float b) { float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
__device__ __forceinline__ float fu_min(float a, float b) { float r; asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
#endif
