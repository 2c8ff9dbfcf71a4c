// ---- fuser prelude 60_lse.cuh: online log-sum-exp across a block
// provides: fu_lse_combine fu_lse_warp fu_lse_block
// needs: 10_minmax.cuh
// Online log-sum-exp state (m = running max, s = sum of exp(x - m)).
__device__ __forceinline__ void fu_lse_combine(float &m, float &s, float m2, float s2) {
  const float mn = fu_max(m, m2);
  s = (m == mn ? s : s * __expf(m - mn)) + (m2 == mn ? s2 : s2 * __expf(m2 - mn));
  m = mn;
}
// across the warp only (a warp a row): every lane gets the row's state
__device__ __forceinline__ void fu_lse_warp(float &m, float &s) {
  for (int o = 16; o > 0; o >>= 1) fu_lse_combine(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
}
__device__ __forceinline__ void fu_lse_block(float &m, float &s, float *smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  fu_lse_warp(m, s);
  __syncthreads();
  if (lane == 0) { smem[2 * warp] = m; smem[2 * warp + 1] = s; }
  __syncthreads();
  // warp 0 combines the warps' states in a fixed tree, then broadcasts
  if (warp == 0) {
    m = lane < nwarps ? smem[2 * lane] : -FU_INF;
    s = lane < nwarps ? smem[2 * lane + 1] : 0.0f;
    for (int o = 16; o > 0; o >>= 1) fu_lse_combine(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    if (lane == 0) { smem[64] = m; smem[65] = s; }
  }
  __syncthreads();
  m = smem[64]; s = smem[65];
}
