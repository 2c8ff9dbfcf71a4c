// ---- fuser prelude 40_bf16x2.cuh: two bf16 lanes of one word
// provides: fu_bf16x2_lo fu_bf16x2_hi fu_pair_lo fu_pair_hi fu_max_bf16x2 fu_mul_bf16
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
// a * b rounded to bf16, for bf16 values a and b (the low 16 bits of their f32
// forms are 0): their product is exact in f32 (8 + 8 significant bits), so one
// HMUL2.BF16 of the pairs (a, 0) and (b, 0) rounds it once as fu_round_bf16(a * b)
// does, and its low lane, 0 * 0 = +0, leaves the result in f32 form: one
// instruction instead of FMUL and F2FP.
__device__ __forceinline__ float fu_mul_bf16(float a, float b) {
#if __CUDA_ARCH__ >= 900
  unsigned r; asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(__float_as_uint(a)), "r"(__float_as_uint(b))); return __uint_as_float(r);
#else
  return fu_round_bf16(a * b);
#endif
}
