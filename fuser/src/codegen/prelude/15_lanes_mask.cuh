// ---- fuser prelude 15_lanes_mask.cuh: the lanes of one short row
// provides: fu_lanes_mask
// Short rows take L lanes each (L a power of 2), 32 / L rows a warp; the lanes of one row are
// aligned (lanes [k * L, k * L + L)). Rows of one warp may leave the row loop at different
// trips, so a shuffle's mask names this row's lanes, not the warp's (the whole warp at L = 32).
template <int L> __device__ __forceinline__ unsigned fu_lanes_mask() {
  return L >= 32 ? 0xffffffffu : ((1u << L) - 1u) << (threadIdx.x & 31u & ~(unsigned)(L - 1));
}
