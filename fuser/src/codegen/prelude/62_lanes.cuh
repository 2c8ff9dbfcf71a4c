// ---- fuser prelude 62_lanes.cuh: reductions over a row of L lanes (L < 32, a power of 2)
// provides: fu_lanes_reduce fu_lse_lanes
// needs: 15_lanes_mask.cuh 60_lse.cuh
// Short rows take L lanes each, 32 / L rows a warp, and only a row's lanes take part
// (fu_lanes_mask). The combining order is fixed (xor offsets L / 2 .. 1), so the result is
// the same run to run.
template <int L, class T, class Op> __device__ __forceinline__ T fu_lanes_reduce(T v, Op op) {
  const unsigned mask = fu_lanes_mask<L>();
  for (int o = L / 2; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(mask, v, o));
  return v;
}
template <int L> __device__ __forceinline__ void fu_lse_lanes(float &m, float &s) {
  const unsigned mask = fu_lanes_mask<L>();
  for (int o = L / 2; o > 0; o >>= 1) fu_lse_combine(m, s, __shfl_xor_sync(mask, m, o), __shfl_xor_sync(mask, s, o));
}
