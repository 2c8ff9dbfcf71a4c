/*
 * cross_entropy.cu -- reference kernels for the cross_entropy suite: the mean
 * cross entropy of N rows of V logits (F.cross_entropy(logits, target) with
 * ignore_index -100 and no label smoothing), its gradient, and both at once.
 *
 *   ref_ce_fwd_{f32,bf16}     (logits[N, V], target[N]) -> loss[]
 *   ref_ce_bwd_{f32,bf16}     (logits, target, dloss[]) -> dlogits[N, V]
 *   ref_ce_fwdbwd_{f32,bf16}  (logits, target, dloss[]) -> loss[], dlogits[N, V]
 *
 *   loss    = sum over kept rows of (logsumexp(x_i) - x_i[t_i]) / kept rows
 *   dlogits = (softmax(x_i) - onehot(t_i)) * dloss / kept rows, 0 on ignored rows
 *
 * What makes them fast (the floor is the bytes: the logits read once, the
 * gradient written once):
 *   - One pass over the logits. A cluster of REF_C blocks owns a row; each
 *     thread loads REF_NV 16-byte vectors of it (all loads issued before any
 *     arithmetic: enough bytes in flight to cover DRAM latency), reduces them
 *     to an online log-sum-exp state (max, sum of 2^(x log2 e - max)), the
 *     block combines its warps, and the cluster's blocks exchange their states
 *     through distributed shared memory (sm_90). fwd with rows longer than a
 *     tile walks the row in tiles, the state carried online.
 *   - fwdbwd and bwd write the gradient from the registers that still hold
 *     the row: the logits are read once for loss and gradient together (2 x
 *     N x V x elem bytes, where eager PyTorch moves 3 x and launches 6
 *     kernels). Rows up to REF_C x REF_B x REF_NV x 16 bytes fit (131072 f32 or
 *     262144 bf16 classes with clusters of 8 blocks of 512 threads).
 *   - The mean is fused: each row's loss goes to a per-row slot; the last
 *     block to finish (an atomic ticket after a fence) adds the N slots in a
 *     fixed order, in double, and writes the mean. No second launch, no
 *     atomics on floats: bit-identical run to run.
 *   - The divisor of the gradient (rows not ignored) is counted by every block
 *     of a persistent grid from the targets (8N bytes from L2 per block)
 *     before its first row, so no second kernel is needed.
 *   - exp is one MUFU ex2 on a pre-scaled argument; streaming loads (no L1
 *     allocation) and evict-first stores for data touched once; ignored rows
 *     skip the read of their logits.
 *
 * Compile-time parameters (-D): REF_V classes; REF_VW elements per vector (16
 * bytes' worth, or 1 when V is not a multiple); REF_NV vectors per thread per
 * tile; REF_B threads per block; REF_C blocks per cluster (1, 2, 4, 8);
 * REF_CE_FWD, REF_CE_BWD or REF_CE_FWDBWD: which entry point.
 *
 * Launch: grid = clusters x REF_C blocks (a multiple of REF_C), REF_B threads;
 * rows are taken cluster-strided, so any grid size is correct. Workspace:
 * row_loss float2[N] (loss, kept) and a ticket counter that must be 0 before
 * the first launch (the last block resets it); err[3] (zeroed).
 *
 * Versions:
 *   v1  one block per row, two passes over global memory (max, then sum and
 *       gradient): 3 x N x V x elem bytes for fwdbwd.
 *   v2  online softmax in one pass; the row kept in registers for the
 *       gradient; last-block mean; clusters for rows longer than one block.
 */

#ifndef REF_V
#error "REF_V (the number of classes) must be defined"
#endif
#ifndef REF_VW
#define REF_VW 1
#endif
#ifndef REF_NV
#define REF_NV 8
#endif
#ifndef REF_B
#define REF_B 512
#endif
#ifndef REF_C
#define REF_C 1
#endif
#ifndef REF_MINB
#define REF_MINB 1 /* blocks per SM the registers must allow */
#endif

namespace ce {

constexpr int V = REF_V, VW = REF_VW, NV = REF_NV, B = REF_B, C = REF_C;
constexpr int TILE = C * B * NV * VW; /* elements of a row one cluster loads at once */
constexpr int NTILES = (V + TILE - 1) / TILE;
static_assert(V % VW == 0, "REF_VW must divide REF_V");
static_assert(B % 32 == 0 && B <= 1024, "REF_B: a multiple of 32, at most 1024");
static_assert(C == 1 || C == 2 || C == 4 || C == 8, "REF_C: 1, 2, 4 or 8");
typedef ref_vec<ref_t, VW>::raw raw_t;

template <bool LOSS, bool GRAD>
__device__ __forceinline__ void rows(const ref_t *__restrict__ logits,   // (N, V)
                                     const long long *__restrict__ target, // (N,)
                                     const ref_t *__restrict__ dloss,      // () or NULL
                                     ref_t *__restrict__ loss,             // () or NULL
                                     ref_t *__restrict__ dlogits,          // (N, V) or NULL
                                     float2 *__restrict__ row_loss,        // (N,) (loss, kept) workspace
                                     unsigned *__restrict__ ticket,        // last-block counter
                                     unsigned long long *__restrict__ err, // (3,)
                                     long long n)
{
    static_assert(!GRAD || NTILES == 1, "the gradient kernels keep a whole row in registers: one tile");
    __shared__ float2 red[B / 32];
    __shared__ float2 part[2]; /* this block's state for the cluster, alternating rows */
    __shared__ double dred[B / 32];
    const int tid = threadIdx.x;
    const unsigned rank = C > 1 ? ref_cluster_rank() : 0u;
    const long long cid = C > 1 ? (long long)ref_cluster_id() : (long long)blockIdx.x;
    const long long ncl = C > 1 ? (long long)ref_num_clusters() : (long long)gridDim.x;

    float scale = 0.0f; /* dloss / kept rows */
    if (GRAD) {
        double kept = 0;
        for (long long i = tid; i < n; i += B) kept += __ldg(target + i) != -100;
        kept = ref_sum_block(kept, dred);
        scale = ref_f32(dloss[0]) / (float)kept;
    }

    int parity = 0; /* which of part[] the next exchange uses: two exchanges apart, a barrier between */
    for (long long row = cid; row < n; row += ncl) {
        const long long t = __ldg(target + row);
        const bool in_range = t >= 0 && t < V;
        if (!in_range && t != -100 && rank == 0 && tid == 0) ref_report(err, REF_ERR_INDEX, t, row);
        const bool kept = in_range; /* uniform over the cluster: the same row */
        const ref_t *x = logits + row * (long long)V;
        raw_t buf[NV];
        float m = -REF_INF, s = 0.0f; /* base 2: m = max of x log2 e */
        if (kept) {
#pragma unroll 1
            for (int tile = 0; tile < NTILES; tile++) {
#pragma unroll
                for (int k = 0; k < NV; k++) {
                    const int e = tile * TILE + ((k * C + (int)rank) * B + tid) * VW;
                    if (e < V) buf[k] = ref_ld_stream(reinterpret_cast<const raw_t *>(x + e));
                }
                float tm = -REF_INF;
#pragma unroll
                for (int k = 0; k < NV; k++) {
                    const int e = tile * TILE + ((k * C + (int)rank) * B + tid) * VW;
                    if (e < V) {
                        float f[VW];
                        ref_unpack<ref_t, VW>(buf[k], f);
#pragma unroll
                        for (int i = 0; i < VW; i++) tm = fmaxf(tm, f[i]);
                    }
                }
                tm *= REF_LOG2E;
                if (tm > m) {
                    s *= ref_exp2(m - tm);
                    m = tm;
                }
#pragma unroll
                for (int k = 0; k < NV; k++) {
                    const int e = tile * TILE + ((k * C + (int)rank) * B + tid) * VW;
                    if (e < V) {
                        float f[VW];
                        ref_unpack<ref_t, VW>(buf[k], f);
#pragma unroll
                        for (int i = 0; i < VW; i++) s += ref_exp2(fmaf(f[i], REF_LOG2E, -m));
                    }
                }
            }
            ref_lse_block(m, s, red);
            if (C > 1) {
                if (tid == 0) part[parity] = make_float2(m, s);
                ref_cluster_sync();
                float2 p = ref_cluster_load(&part[parity], 0);
                m = p.x;
                s = p.y;
                for (unsigned r = 1; r < (unsigned)C; r++) {
                    p = ref_cluster_load(&part[parity], r);
                    ref_lse_combine(m, s, p.x, p.y);
                }
                parity ^= 1; /* ignored rows exchange nothing, so this flips only here */
            }
        }
        const float lse2 = m + __log2f(s); /* log2 of the sum of exp(x): lse * log2 e */
        if (LOSS && rank == 0 && tid == 0) {
            const float row_nll = kept ? lse2 * REF_LN2 - ref_f32(x[t]) : 0.0f;
            row_loss[row] = make_float2(row_nll, kept ? 1.0f : 0.0f);
        }
        if (GRAD) {
            ref_t *g = dlogits + row * (long long)V;
#pragma unroll
            for (int k = 0; k < NV; k++) {
                const int e = ((k * C + (int)rank) * B + tid) * VW;
                if (e < V) {
                    float f[VW];
                    if (kept) {
                        ref_unpack<ref_t, VW>(buf[k], f);
#pragma unroll
                        for (int i = 0; i < VW; i++)
                            f[i] = (ref_exp2(fmaf(f[i], REF_LOG2E, -lse2)) - (e + i == t ? 1.0f : 0.0f)) * scale;
                    } else {
#pragma unroll
                        for (int i = 0; i < VW; i++) f[i] = 0.0f;
                    }
                    ref_st_stream(reinterpret_cast<raw_t *>(g + e), ref_pack<ref_t, VW>(f));
                }
            }
        }
    }
    if (C > 1) ref_cluster_sync(); /* no block leaves while another may read its shared memory */

    if (LOSS) { /* the mean: the last block adds the per-row slots in a fixed order */
        __shared__ bool last;
        if (tid == 0) {
            __threadfence();
            last = atomicAdd(ticket, 1u) == gridDim.x - 1;
        }
        __syncthreads();
        if (!last) return;
        __threadfence();
        double sum = 0, cnt = 0;
        for (long long i = tid; i < n; i += B) {
            const float2 v = __ldcg(row_loss + i);
            sum += v.x;
            cnt += v.y;
        }
        sum = ref_sum_block(sum, dred);
        cnt = ref_sum_block(cnt, dred);
        if (tid == 0) {
            loss[0] = ref_from_f32<ref_t>((float)(sum / cnt));
            *ticket = 0u; /* ready for the next launch */
        }
    }
}

} // namespace ce

#if REF_C > 1
#define REF_CE_CLUSTER __cluster_dims__(REF_C, 1, 1)
#else
#define REF_CE_CLUSTER
#endif

#if defined(REF_CE_FWD)
extern "C" __global__ void __launch_bounds__(REF_B, REF_MINB) REF_CE_CLUSTER
REF_ENTRY(ref_ce_fwd)(const ref_t *__restrict__ logits, const long long *__restrict__ target,
                      ref_t *__restrict__ loss, float2 *__restrict__ row_loss, unsigned *__restrict__ ticket,
                      unsigned long long *__restrict__ err, long long n)
{
    ce::rows<true, false>(logits, target, nullptr, loss, nullptr, row_loss, ticket, err, n);
}
#elif defined(REF_CE_BWD)
extern "C" __global__ void __launch_bounds__(REF_B, REF_MINB) REF_CE_CLUSTER
REF_ENTRY(ref_ce_bwd)(const ref_t *__restrict__ logits, const long long *__restrict__ target,
                      const ref_t *__restrict__ dloss, ref_t *__restrict__ dlogits,
                      unsigned long long *__restrict__ err, long long n)
{
    ce::rows<false, true>(logits, target, dloss, nullptr, dlogits, nullptr, nullptr, err, n);
}
#elif defined(REF_CE_FWDBWD)
extern "C" __global__ void __launch_bounds__(REF_B, REF_MINB) REF_CE_CLUSTER
REF_ENTRY(ref_ce_fwdbwd)(const ref_t *__restrict__ logits, const long long *__restrict__ target,
                         const ref_t *__restrict__ dloss, ref_t *__restrict__ loss, ref_t *__restrict__ dlogits,
                         float2 *__restrict__ row_loss, unsigned *__restrict__ ticket,
                         unsigned long long *__restrict__ err, long long n)
{
    ce::rows<true, true>(logits, target, dloss, loss, dlogits, row_loss, ticket, err, n);
}
#else
#error "define one of REF_CE_FWD, REF_CE_BWD, REF_CE_FWDBWD"
#endif
