// ---- fuser prelude 21_exp_shifted.cuh: exp(x - s) for a constant s that bounds x
// provides: fu_exp_shifted fu_exp_shifted_poly fu_lse_shifted_lanes fu_lse_shifted_block
// needs: 10_minmax.cuh 15_lanes_mask.cuh 20_math.cuh
// A log-sum-exp over values known to lie in [lo, s] (docs/format.md, Numerics) adds
// exp(x - s) = 2^(x log2(e) - s log2(e)), the argument one FFMA with l2s = s log2(e).
__device__ __forceinline__ float fu_exp_shifted(float x, float l2s) {
  float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(fmaf(x, 1.4426950408889634f, -l2s))); return r;
}
// The same 2^t on the FMA pipe, for t in [-125, 0] (the caller's range: s - lo <= 80):
// t = j + f with j = rint(t) (adding 1.5 * 2^23 leaves j in the low bits) and |f| <= 1/2;
// 2^f by a degree-5 polynomial (a relative minimax fit: 2.1e-7 relative evaluated in f32,
// as ex2.approx's 2^-22); 2^j added to its exponent. Nine instructions for one MUFU.EX2:
// a kernel whose elements need two transcendentals is bound by the MUFU pipe otherwise.
__device__ __forceinline__ float fu_exp_shifted_poly(float x, float l2s) {
  const float t = fmaf(x, 1.4426950408889634f, -l2s);
  const float y = t + 12582912.0f;
  const float f = t - (y - 12582912.0f);
  float p = fmaf(0.00132764527f, f, 0.00967554189f);
  p = fmaf(p, f, 0.0555071346f);
  p = fmaf(p, f, 0.240221202f);
  p = fmaf(p, f, 0.693146944f);
  p = fmaf(p, f, 1.00000012f);
  return __uint_as_float(__float_as_uint(p) + (__float_as_uint(y) << 23));
}
// The threads' parts (m their max, s their sum of exp(x - shift)) across the L lanes of a
// row (L < 32: fu_lanes_mask's layout), a warp (L = 32) or the block: the max and the sum
// reduced as they are, with no exp a step, in a fixed order; then s rescaled once to the
// usual state, the sum of exp(x - m). A row of no terms keeps s = 0 (and m = -inf).
template <int L> __device__ __forceinline__ void fu_max_sum_lanes(float &m, float &s) {
  const unsigned mask = fu_lanes_mask<L>();
  for (int o = L / 2; o > 0; o >>= 1) { m = fu_max(m, __shfl_xor_sync(mask, m, o)); s += __shfl_xor_sync(mask, s, o); }
}
__device__ __forceinline__ void fu_lse_unshift(float m, float &s, float shift) { if (s != 0.0f) s *= fu_exp_sub(shift, m); }
template <int L> __device__ __forceinline__ void fu_lse_shifted_lanes(float &m, float &s, float shift) {
  fu_max_sum_lanes<L>(m, s);
  fu_lse_unshift(m, s, shift);
}
__device__ __forceinline__ void fu_lse_shifted_block(float &m, float &s, float shift, float *smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  fu_max_sum_lanes<32>(m, s);
  __syncthreads(); // smem may still be read by the previous reduction
  if (lane == 0) { smem[2 * warp] = m; smem[2 * warp + 1] = s; }
  __syncthreads();
  m = smem[0];
  s = smem[1];
  for (int w = 1; w < nwarps; w++) { m = fu_max(m, smem[2 * w]); s += smem[2 * w + 1]; }
  fu_lse_unshift(m, s, shift);
}
