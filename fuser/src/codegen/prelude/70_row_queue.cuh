// ---- fuser prelude 70_row_queue.cuh: the queue of rows
// provides: fu_take_row
// A ticket from a queue of rows shared by the blocks; the last of the `takers`
// tickets resets the queue for the next launch.
__device__ __forceinline__ unsigned fu_take_row(unsigned *queue, unsigned takers) {
  const unsigned t = atomicAdd(queue, 1u);
  if (t == takers - 1) *queue = 0u;
  return t;
}
