// ---- fuser prelude 65_cluster.cuh: a row split over the blocks of a cluster (sm_90)
// provides: fu_cluster_rank fu_cluster_sync fu_cluster_sync_slots fu_cluster_ld fu_cluster_reduce fu_lse_cluster
// needs: 60_lse.cuh
// A row too long for one block's shared memory is split over the CTAs of a thread-block
// cluster, each keeping its part; the row's reductions are combined through distributed
// shared memory: each CTA writes its block's value to a slot of its own, the cluster
// waits, and every CTA reads all the slots in rank order (the same order everywhere: the
// same bits in every CTA, run to run).
__device__ __forceinline__ unsigned fu_cluster_rank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ void fu_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ unsigned fu_cluster_map(const void *p, unsigned rank) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p), r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(rank));
  return r;
}
__device__ __forceinline__ float fu_cluster_ld(const float *p, unsigned rank) {
  float v; asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(fu_cluster_map(p, rank)) : "memory"); return v;
}
__device__ __forceinline__ double fu_cluster_ld(const double *p, unsigned rank) {
  double v; asm volatile("ld.shared::cluster.f64 %0, [%1];" : "=d"(v) : "r"(fu_cluster_map(p, rank)) : "memory"); return v;
}
__device__ __forceinline__ long long fu_cluster_ld(const long long *p, unsigned rank) {
  long long v; asm volatile("ld.shared::cluster.s64 %0, [%1];" : "=l"(v) : "r"(fu_cluster_map(p, rank)) : "memory"); return v;
}
__device__ __forceinline__ bool fu_cluster_ld(const bool *p, unsigned rank) {
  unsigned v; asm volatile("ld.shared::cluster.u8 %0, [%1];" : "=r"(v) : "r"(fu_cluster_map(p, rank)) : "memory"); return v != 0u;
}
// A row's combine where only thread 0 writes a slot (Relaxed): its warp arrives with release,
// the others relaxed (ptxas writes a release as MEMBAR.ALL.GPU and ERRBAR in every thread that
// arrives with it). The slots' readers used what they read before they arrive again, and two
// rows' slots alternate, so nothing else needs the order.
template <bool Relaxed> __device__ __forceinline__ void fu_cluster_sync_slots() {
  if (!Relaxed) { fu_cluster_sync(); return; }
  if (threadIdx.x < 32) asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
  else asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
// v: this block's value (every thread holds it); slot: this CTA's slot for this reduction
template <int C, bool Relaxed = false, class T, class Op> __device__ __forceinline__ T fu_cluster_reduce(T v, Op op, T *slot) {
  if (threadIdx.x == 0) *slot = v;
  fu_cluster_sync_slots<Relaxed>();
  T acc = fu_cluster_ld(slot, 0);
  for (unsigned q = 1; q < C; q++) acc = op(acc, fu_cluster_ld(slot, q));
  return acc;
}
template <int C, bool Relaxed = false> __device__ __forceinline__ void fu_lse_cluster(float &m, float &s, float *slot) {
  if (threadIdx.x == 0) { slot[0] = m; slot[1] = s; }
  fu_cluster_sync_slots<Relaxed>();
  float mm = fu_cluster_ld(slot, 0), ss = fu_cluster_ld(slot + 1, 0);
  for (unsigned q = 1; q < C; q++) fu_lse_combine(mm, ss, fu_cluster_ld(slot, q), fu_cluster_ld(slot + 1, q));
  m = mm; s = ss;
}
