// ---- fuser prelude 50_reduce.cuh: warp and block reductions
// provides: fu_op_sum fu_op_max fu_op_min fu_warp_reduce fu_block_reduce2 fu_block_reduce
// needs: 10_minmax.cuh
struct fu_op_sum { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; } };
struct fu_op_max { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return fu_max(a, b); } };
struct fu_op_min { template <class T> __device__ __forceinline__ T operator()(T a, T b) const { return fu_min(a, b); } };
template <class T, class Op> __device__ __forceinline__ T fu_warp_reduce(T v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Block-wide reduction; every thread gets the result. Warps combine in a
// fixed order, so the result is the same run to run.
template <class T, class Op> __device__ __forceinline__ T fu_block_reduce(T v, Op op, T *smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  v = fu_warp_reduce(v, op);
  __syncthreads(); // smem may still be read by the previous reduction
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  v = smem[0];
  for (int w = 1; w < nwarps; w++) v = op(v, smem[w]);
  return v;
}
// Two block-wide reductions through one exchange (one pair of barriers); each
// combined in the same order as fu_block_reduce's, so the bits are the same.
template <class T, class OpA, class OpB>
__device__ __forceinline__ void fu_block_reduce2(T &a, OpA opa, T &b, OpB opb, T *smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = (blockDim.x + 31) >> 5;
  a = fu_warp_reduce(a, opa);
  b = fu_warp_reduce(b, opb);
  __syncthreads(); // smem may still be read by the previous reduction
  if (lane == 0) { smem[2 * warp] = a; smem[2 * warp + 1] = b; }
  __syncthreads();
  a = smem[0];
  b = smem[1];
  for (int w = 1; w < nwarps; w++) { a = opa(a, smem[2 * w]); b = opb(b, smem[2 * w + 1]); }
}
