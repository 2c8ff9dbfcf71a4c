// ---- fuser prelude 40_bf16x2.cuh: two bf16 lanes of one word
// provides: fu_bf16x2_lo fu_bf16x2_hi fu_pair_lo fu_pair_hi fu_max_bf16x2
// needs: 10_minmax.cuh
// Two bf16 lanes in one word (lo = the lower address) as f32, one instruction
// each (word w of a bf16 array: fu_pair_lo/hi), and their NaN-propagating
// max two at a time: a row's max at half an instruction per element
__device__ __forceinline__ float fu_bf16x2_lo(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float fu_bf16x2_hi(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
__device__ __forceinline__ float fu_pair_lo(const fu_bf16 *a, int w) { return fu_bf16x2_lo(((const unsigned *)a)[w]); }
__device__ __forceinline__ float fu_pair_hi(const fu_bf16 *a, int w) { return fu_bf16x2_hi(((const unsigned *)a)[w]); }
__device__ __forceinline__ unsigned fu_max_bf16x2(unsigned a, unsigned b) {
#if __CUDA_ARCH__ >= 800
  unsigned r; asm("max.NaN.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b)); return r;
#else
  const float lo = fu_max(fu_bf16x2_lo(a), fu_bf16x2_lo(b)), hi = fu_max(fu_bf16x2_hi(a), fu_bf16x2_hi(b));
  return (__float_as_uint(lo) >> 16) | (__float_as_uint(hi) & 0xffff0000u); // exact: both are bf16 values
#endif
}
