/*
 * embedding.cu -- reference kernels for the embedding suite: a table of V rows
 * of width D, T tokens.
 *
 *   ref_emb_fwd_{f32,bf16}         out[t, :] = weight[ids[t], :]
 *   ref_emb_bwd_atomic_{f32,bf16}  dweight[v, :] = sum of grad[t, :] over ids[t] = v,
 *                                  dweight zeroed first (a memset), then vector atomics
 *   ref_emb_bwd_count, ref_emb_bwd_scan, ref_emb_bwd_place, ref_emb_bwd_accum_{f32,bf16}
 *                                  the same sum, deterministic (bit-identical run to run)
 *
 * What makes them fast:
 *   - fwd is a gather of whole rows: each thread moves UNROLL 16-byte vectors
 *     (all loads issued before the stores), a warp covers 512 contiguous bytes
 *     of a row, the output is written with evict-first stores. The ids are
 *     read once per vector from L1.
 *   - bwd_atomic: one 16-byte vector atomic per 16 bytes of grad
 *     (red.global.add.v4.f32, red.global.add.noftz.v4.bf16x2: sm_90), four
 *     to eight times fewer atomic operations than one per element. bf16 adds
 *     round at every add: repeated ids lose precision, as any bf16 atomic
 *     scatter does (the deterministic kernel accumulates in float).
 *   - bwd deterministic: a counting sort of the token positions by id, then
 *     one warp per table row adds its tokens' gradient rows in token order in
 *     float registers and writes the row once (every row, zero rows too: no
 *     memset of the output, which is written exactly once).
 *       count  one thread per token: count[id] += 1 (integer atomics: exact)
 *       scan   exclusive prefix of count, one 4096-entry tile per block; the
 *              last block to finish scans the tile totals (no second launch)
 *       place  one thread per token: slot = start[id] + atomicSub(count[id]) - 1;
 *              bucket[slot] = t. This leaves count at zero for the next call
 *              (no memset), and the order inside a bucket arbitrary, so:
 *       accum  a warp takes row v's bucket, puts it in token order (a rank
 *              among 32 lanes by shuffles; a bitonic sort in place for more
 *              than 32 tokens), adds the gradient rows in that order.
 *     Integer atomics only order slots, never sums: the result is the same
 *     bits on every run. Memory: V + T + 2 ints of workspace, zeroed once.
 *     Very skewed ids (one id holding thousands of tokens) serialize on one
 *     warp; uniform and Zipf-like ids at LLM vocabulary sizes do not.
 *
 * Compile-time parameters (-D): REF_V rows, REF_D width, REF_VW elements per
 * vector (16 bytes' worth, or fewer when D is not a multiple), and one of
 * REF_EMB_FWD, REF_EMB_BWD_ATOMIC, REF_EMB_BWD_DET.
 *
 * Versions:
 *   v1  one thread per element (fwd), scalar atomics (bwd).
 *   v2  16-byte vectors and vector atomics; the deterministic counting sort
 *       with a self-resetting count and in-kernel tile scan.
 */

#ifndef REF_V
#error "REF_V (rows of the table) must be defined"
#endif
#ifndef REF_D
#error "REF_D (width of a row) must be defined"
#endif
#ifndef REF_VW
#define REF_VW 1
#endif

namespace emb {

constexpr int V = REF_V, D = REF_D, VW = REF_VW;
constexpr int VPR = D / VW; /* vectors per row */
constexpr int B = 256;      /* threads per block (every kernel but scan) */
constexpr int UNROLL = 4;   /* vectors per thread (fwd, bwd_atomic) */
static_assert(D % VW == 0, "REF_VW must divide REF_D");
typedef ref_vec<ref_t, VW>::raw raw_t;

__device__ __forceinline__ bool valid_id(long long id) { return id >= 0 && id < V; }

/* 16-byte vector atomics (sm_90); smaller vectors fall back to scalar ones.
 * (A template, so that the branch not taken is not compiled.) */
template <int W> __device__ __forceinline__ void red_add(ref_t *p, const float (&f)[W])
{
#if defined(REF_BF16) && REF_BF16
    if constexpr (W == 8) {
        const uint4 w = ref_pack<ref_bf16, 8>(f);
        asm volatile("red.global.add.noftz.v4.bf16x2 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w.x), "r"(w.y), "r"(w.z),
                     "r"(w.w)
                     : "memory");
    } else {
#pragma unroll
        for (int i = 0; i < W; i++)
            asm volatile("red.global.add.noftz.bf16 [%0], %1;" ::"l"(p + i), "h"(ref_from_f32<ref_bf16>(f[i]).bits)
                         : "memory");
    }
#else
    if constexpr (W == 4) {
        asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(f[0]), "f"(f[1]), "f"(f[2]),
                     "f"(f[3])
                     : "memory");
    } else {
#pragma unroll
        for (int i = 0; i < W; i++) asm volatile("red.global.add.f32 [%0], %1;" ::"l"(p + i), "f"(f[i]) : "memory");
    }
#endif
}

} // namespace emb

#if defined(REF_EMB_FWD)

extern "C" __global__ void __launch_bounds__(emb::B)
REF_ENTRY(ref_emb_fwd)(const ref_t *__restrict__ weight,   // (V, D)
                       const long long *__restrict__ ids,  // (T,)
                       ref_t *__restrict__ out,            // (T, D)
                       unsigned long long *__restrict__ err, long long ntok)
{
    using namespace emb;
    const long long total = ntok * VPR;
    const long long first = (long long)blockIdx.x * (B * UNROLL) + threadIdx.x;
    raw_t v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        const long long e = first + u * B;
        if (e < total) {
            const long long t = e / VPR;
            const int j = (int)(e - t * VPR);
            long long id = __ldg(ids + t);
            if (!valid_id(id)) {
                if (j == 0) ref_report(err, REF_ERR_INDEX, id, t);
                id = 0;
            }
            v[u] = __ldg(reinterpret_cast<const raw_t *>(weight + id * D) + j);
        }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        const long long e = first + u * B;
        if (e < total) ref_st_stream(reinterpret_cast<raw_t *>(out) + e, v[u]);
    }
}

#elif defined(REF_EMB_BWD_ATOMIC)

extern "C" __global__ void __launch_bounds__(emb::B)
REF_ENTRY(ref_emb_bwd_atomic)(const ref_t *__restrict__ grad,     // (T, D)
                              const long long *__restrict__ ids,  // (T,)
                              ref_t *__restrict__ dweight,        // (V, D), zeroed before the launch
                              unsigned long long *__restrict__ err, long long ntok)
{
    using namespace emb;
    const long long total = ntok * VPR;
    const long long first = (long long)blockIdx.x * (B * UNROLL) + threadIdx.x;
    raw_t v[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        const long long e = first + u * B;
        if (e < total) v[u] = ref_ld_stream(reinterpret_cast<const raw_t *>(grad) + e);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        const long long e = first + u * B;
        if (e < total) {
            const long long t = e / VPR;
            const int j = (int)(e - t * VPR);
            const long long id = __ldg(ids + t);
            if (!valid_id(id)) {
                if (j == 0) ref_report(err, REF_ERR_INDEX, id, t);
                continue;
            }
            float f[VW];
            ref_unpack<ref_t, VW>(v[u], f);
            red_add(dweight + id * D + (long long)j * VW, f);
        }
    }
}

#elif defined(REF_EMB_BWD_DET)

namespace emb {
constexpr int SCAN_B = 1024, SCAN_TILE = 4 * SCAN_B; /* counts per scan block */
constexpr int NSCAN = (V + 1 + SCAN_TILE - 1) / SCAN_TILE; /* tiles: start[] has V + 1 entries */
constexpr int PADDED = NSCAN * SCAN_TILE;                   /* length of count[] and local[] */
constexpr int CH = 4;                                        /* vectors per lane per pass (accum) */
constexpr int QPL = (VPR + 31) / 32;                         /* vectors per lane in a row */

/* start[v] = local[v] + tile_prefix[v / SCAN_TILE] */
__device__ __forceinline__ int start_of(const int *local, const int *tile_prefix, int v)
{
    return __ldg(local + v) + __ldg(tile_prefix + v / SCAN_TILE);
}
} // namespace emb

/* count[id] += 1 for every token; reports out-of-range ids (they are skipped). */
extern "C" __global__ void __launch_bounds__(emb::B)
ref_emb_bwd_count(const long long *__restrict__ ids, int *__restrict__ count, // (PADDED,), zero on entry
                  unsigned long long *__restrict__ err, long long ntok)
{
    using namespace emb;
    const long long t = (long long)blockIdx.x * B + threadIdx.x;
    if (t >= ntok) return;
    const long long id = __ldg(ids + t);
    if (!valid_id(id)) {
        ref_report(err, REF_ERR_INDEX, id, t);
        return;
    }
    atomicAdd(count + id, 1);
}

/* local[v] = exclusive prefix of count inside its tile; the last block turns
 * the tile totals into tile_prefix (exclusive). grid = NSCAN, SCAN_B threads. */
extern "C" __global__ void __launch_bounds__(emb::SCAN_B)
ref_emb_bwd_scan(const int *__restrict__ count, int *__restrict__ local, int *__restrict__ tile_total,
                 int *__restrict__ tile_prefix, unsigned *__restrict__ ticket)
{
    using namespace emb;
    __shared__ int warp_sum[SCAN_B / 32];
    __shared__ bool last;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int base = blockIdx.x * SCAN_TILE + threadIdx.x * 4;
    const int4 c = __ldcg(reinterpret_cast<const int4 *>(count + base));
    const int mine = c.x + c.y + c.z + c.w;
    int incl = mine;
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) {
        const int y = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += y;
    }
    if (lane == 31) warp_sum[warp] = incl;
    __syncthreads();
    if (warp == 0) {
        const int w = warp_sum[lane]; /* SCAN_B / 32 == 32 warps */
        int wi = w;
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
            const int y = __shfl_up_sync(0xffffffffu, wi, o);
            if (lane >= o) wi += y;
        }
        warp_sum[lane] = wi - w; /* exclusive prefix of the warps */
        if (lane == 31) tile_total[blockIdx.x] = wi;
    }
    __syncthreads();
    int ex = warp_sum[warp] + incl - mine;
    int4 o;
    o.x = ex;
    o.y = ex += c.x;
    o.z = ex += c.y;
    o.w = ex + c.z;
    *reinterpret_cast<int4 *>(local + base) = o;
    if (threadIdx.x == 0) {
        __threadfence();
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last || warp != 0) return;
    __threadfence();
    int carry = 0;
    for (int b0 = 0; b0 < (int)gridDim.x; b0 += 32) {
        const int b = b0 + lane;
        const int w = b < (int)gridDim.x ? __ldcg(tile_total + b) : 0;
        int wi = w;
#pragma unroll
        for (int o2 = 1; o2 < 32; o2 <<= 1) {
            const int y = __shfl_up_sync(0xffffffffu, wi, o2);
            if (lane >= o2) wi += y;
        }
        if (b < (int)gridDim.x) tile_prefix[b] = carry + wi - w;
        carry += __shfl_sync(0xffffffffu, wi, 31);
    }
    if (lane == 0) *ticket = 0u; /* ready for the next launch */
}

/* bucket[start[id] .. start[id + 1]) gets the tokens of id, in any order;
 * count returns to zero. */
extern "C" __global__ void __launch_bounds__(emb::B)
ref_emb_bwd_place(const long long *__restrict__ ids, int *__restrict__ count, const int *__restrict__ local,
                  const int *__restrict__ tile_prefix, int *__restrict__ bucket, long long ntok)
{
    using namespace emb;
    const long long t = (long long)blockIdx.x * B + threadIdx.x;
    if (t >= ntok) return;
    const long long id = __ldg(ids + t);
    if (!valid_id(id)) return; /* reported by count */
    const int slot = start_of(local, tile_prefix, (int)id) + atomicSub(count + id, 1) - 1;
    bucket[slot] = (int)t;
}

/* One warp per table row: its tokens in order, their gradient rows summed in
 * float, the row written once. grid = ceil(V / 8), 256 threads. */
extern "C" __global__ void __launch_bounds__(emb::B)
REF_ENTRY(ref_emb_bwd_accum)(const ref_t *__restrict__ grad,  // (T, D)
                             const int *__restrict__ local, const int *__restrict__ tile_prefix,
                             int *__restrict__ bucket,         // (T,) token positions by row
                             ref_t *__restrict__ dweight)      // (V, D)
{
    using namespace emb;
    const int lane = threadIdx.x & 31;
    const int row = (int)blockIdx.x * (B / 32) + (threadIdx.x >> 5);
    if (row >= V) return; /* whole warps */
    const int s0 = start_of(local, tile_prefix, row), n = start_of(local, tile_prefix, row + 1) - s0;
    int *bk = bucket + s0;
    /* token order: up to 32 tokens ranked in registers, more sorted in place */
    int sorted = 0x7fffffff;
    if (n <= 32) {
        const int p = lane < n ? bk[lane] : 0x7fffffff;
        int rank = 0;
#pragma unroll
        for (int j = 0; j < 32; j++) rank += __shfl_sync(0xffffffffu, p, j) < p;
#pragma unroll
        for (int j = 0; j < 32; j++) {
            const int pj = __shfl_sync(0xffffffffu, p, j), rj = __shfl_sync(0xffffffffu, rank, j);
            if (rj == lane && j < n) sorted = pj;
        }
    } else { /* bitonic sort, +inf past n (flip form: every compare puts the min first) */
        int np = 1;
        while (np < n) np <<= 1;
        for (int k = 2; k <= np; k <<= 1)
            for (int j = k >> 1; j > 0; j >>= 1) {
                for (int i = lane; i < np; i += 32) {
                    const int ixj = j == (k >> 1) ? i ^ (k - 1) : i ^ j;
                    if (ixj > i && ixj < n) {
                        const int a = bk[i], b = bk[ixj];
                        if (a > b) {
                            bk[i] = b;
                            bk[ixj] = a;
                        }
                    }
                }
                __syncwarp();
            }
    }
    ref_t *out = dweight + (long long)row * D;
#pragma unroll 1
    for (int q0 = 0; q0 < QPL; q0 += CH) {
        float acc[CH][VW];
#pragma unroll
        for (int c = 0; c < CH; c++)
#pragma unroll
            for (int i = 0; i < VW; i++) acc[c][i] = 0.0f;
#pragma unroll 1
        for (int i = 0; i < n; i++) {
            const int tok = n <= 32 ? __shfl_sync(0xffffffffu, sorted, i) : bk[i];
            const raw_t *src = reinterpret_cast<const raw_t *>(grad + (long long)tok * D);
            raw_t r[CH];
#pragma unroll
            for (int c = 0; c < CH; c++) {
                const int j = (q0 + c) * 32 + lane;
                if (q0 + c < QPL && j < VPR) r[c] = __ldg(src + j);
            }
#pragma unroll
            for (int c = 0; c < CH; c++) {
                const int j = (q0 + c) * 32 + lane;
                if (q0 + c < QPL && j < VPR) {
                    float f[VW];
                    ref_unpack<ref_t, VW>(r[c], f);
#pragma unroll
                    for (int e = 0; e < VW; e++) acc[c][e] += f[e];
                }
            }
        }
#pragma unroll
        for (int c = 0; c < CH; c++) {
            const int j = (q0 + c) * 32 + lane;
            if (q0 + c < QPL && j < VPR) ref_st_stream(reinterpret_cast<raw_t *>(out) + j, ref_pack<ref_t, VW>(acc[c]));
        }
    }
}

#else
#error "define one of REF_EMB_FWD, REF_EMB_BWD_ATOMIC, REF_EMB_BWD_DET"
#endif
