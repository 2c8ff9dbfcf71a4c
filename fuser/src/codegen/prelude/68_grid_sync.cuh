// ---- fuser prelude 68_grid_sync.cuh: a barrier of the whole grid
// provides: fu_grid_sync
// Every block waits until every block has arrived. Only for a kernel launched
// cooperatively (all its blocks resident at once; the runtime clamps the grid to
// what fits). Block 0 adds 0x80000000 - (blocks - 1), every other block 1: the
// counter's top bit flips once all have arrived, and two barriers add 2^32 in all,
// so a kernel that passes an even number of them leaves the counter as it found it.
__device__ __forceinline__ void fu_grid_sync(unsigned *bar) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned add = blockIdx.x == 0 ? 0x80000000u - (gridDim.x - 1u) : 1u;
    __threadfence(); // this block's writes before its arrival
    const unsigned before = atomicAdd(bar, add);
    while (((before ^ *(volatile unsigned *)bar) & 0x80000000u) == 0u) __nanosleep(32);
    __threadfence(); // the others' writes before this block's reads
  }
  __syncthreads();
}
