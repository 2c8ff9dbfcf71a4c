/*
 * common.cuh -- what every reference kernel shares: the element type chosen
 * at compile time, 16-byte vectors, streaming loads and stores, fast exp2,
 * the error flag, and Hopper cluster primitives.
 *
 * The launcher (reference/variant_reference.c) compiles this file followed by
 * one kernel file with NVRTC, for one architecture, with the shapes and the
 * launch configuration as -D defines: the fuser specializes every kernel on
 * its shapes, and so do these, so that the comparison is fair. Every file
 * defines one extern "C" entry point per compile (e.g. ref_ce_fwd_bf16), named
 * after its dtype:
 *   -DREF_BF16=1   elements are bf16 (stored as their 16 bits), else float
 * Arithmetic is in float; bf16 results are rounded once, to nearest even.
 *
 * No CUDA header is needed: NVRTC provides the built-ins used here, and bf16
 * is converted with one PTX instruction (cvt.rn.bf16.f32), as the fuser does.
 */
#ifndef REF_COMMON_CUH
#define REF_COMMON_CUH

#define REF_CAT2(a, b) a##b
#define REF_CAT(a, b) REF_CAT2(a, b)

struct ref_bf16 {
    unsigned short bits;
};

__device__ __forceinline__ float ref_f32(float v) { return v; }
__device__ __forceinline__ float ref_f32(ref_bf16 v) { return __uint_as_float(((unsigned)v.bits) << 16); }
template <class T> __device__ __forceinline__ T ref_from_f32(float f);
template <> __device__ __forceinline__ float ref_from_f32<float>(float f) { return f; }
template <> __device__ __forceinline__ ref_bf16 ref_from_f32<ref_bf16>(float f)
{
    ref_bf16 r;
    asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.bits) : "f"(f));
    return r;
}

#if defined(REF_BF16) && REF_BF16
typedef ref_bf16 ref_t;
#define REF_SFX _bf16
#else
typedef float ref_t;
#define REF_SFX _f32
#endif
/* ref_ce_fwd -> ref_ce_fwd_f32 or ref_ce_fwd_bf16 */
#define REF_ENTRY(name) REF_CAT(name, REF_SFX)

/* ---- vectors: VW elements of T loaded or stored as one access (16 bytes when they can) */

template <int BYTES> struct ref_raw;
template <> struct ref_raw<16> { typedef uint4 type; };
template <> struct ref_raw<8> { typedef uint2 type; };
template <> struct ref_raw<4> { typedef unsigned type; };
template <> struct ref_raw<2> { typedef unsigned short type; };

template <class T, int VW> struct ref_vec {
    typedef typename ref_raw<VW * (int)sizeof(T)>::type raw;
};

/* Read-only data, read once: no L1 allocation (ld.global.nc.L1::no_allocate). */
__device__ __forceinline__ uint4 ref_ld_stream(const uint4 *p)
{
    uint4 r;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
    return r;
}
__device__ __forceinline__ uint2 ref_ld_stream(const uint2 *p)
{
    uint2 r;
    asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(r.x), "=r"(r.y) : "l"(p));
    return r;
}
__device__ __forceinline__ unsigned ref_ld_stream(const unsigned *p) { return __ldg(p); }
__device__ __forceinline__ unsigned short ref_ld_stream(const unsigned short *p) { return __ldg(p); }

/* Written once, not read again by this kernel: evict-first (st.global.cs). */
__device__ __forceinline__ void ref_st_stream(uint4 *p, uint4 v) { __stcs(p, v); }
__device__ __forceinline__ void ref_st_stream(uint2 *p, uint2 v) { __stcs(p, v); }
__device__ __forceinline__ void ref_st_stream(unsigned *p, unsigned v) { __stcs(p, v); }
__device__ __forceinline__ void ref_st_stream(unsigned short *p, unsigned short v) { __stcs(p, v); }

/* The VW elements of raw vector r, as floats. */
template <class T, int VW>
__device__ __forceinline__ void ref_unpack(const typename ref_vec<T, VW>::raw &r, float (&f)[VW])
{
    T t[VW];
    memcpy(t, &r, sizeof t);
#pragma unroll
    for (int i = 0; i < VW; i++) f[i] = ref_f32(t[i]);
}
template <class T, int VW> __device__ __forceinline__ typename ref_vec<T, VW>::raw ref_pack(const float (&f)[VW])
{
    T t[VW];
#pragma unroll
    for (int i = 0; i < VW; i++) t[i] = ref_from_f32<T>(f[i]);
    typename ref_vec<T, VW>::raw r;
    memcpy(&r, t, sizeof t);
    return r;
}

/* ---- math */

#define REF_LOG2E 1.4426950408889634f
#define REF_LN2 0.6931471805599453f
#define REF_INF __int_as_float(0x7f800000)

/* 2^x with one MUFU instruction (relative error about 2^-22; 0 for -inf). */
__device__ __forceinline__ float ref_exp2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* Online log-sum-exp in base 2: m = running max of x * log2(e), s = sum of
 * 2^(x * log2(e) - m). Combining two states; -inf states (s = 0) stay exact. */
__device__ __forceinline__ void ref_lse_combine(float &m, float &s, float m2, float s2)
{
    const float mn = fmaxf(m, m2);
    s = (m == mn ? s : s * ref_exp2(m - mn)) + (m2 == mn ? s2 : s2 * ref_exp2(m2 - mn));
    m = mn;
}

/* Block-wide (m, s); every thread gets the same result, combined in a fixed
 * order (deterministic). smem: blockDim.x / 32 float2. */
__device__ __forceinline__ void ref_lse_block(float &m, float &s, float2 *smem)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        ref_lse_combine(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    __syncthreads(); /* smem may still be read by the previous row */
    if (lane == 0) smem[warp] = make_float2(m, s);
    __syncthreads();
    m = smem[0].x;
    s = smem[0].y;
    for (int w = 1; w < nwarps; w++) ref_lse_combine(m, s, smem[w].x, smem[w].y);
}

/* Block-wide sum in a fixed order; every thread gets it. smem: blockDim.x / 32. */
template <class A> __device__ __forceinline__ A ref_sum_block(A v, A *smem)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    __syncthreads();
    if (lane == 0) smem[warp] = v;
    __syncthreads();
    v = smem[0];
    for (int w = 1; w < nwarps; w++) v += smem[w];
    return v;
}

/* ---- the error flag: err[0] = code, err[1] = value, err[2] = position; the
 * first report wins. The launcher reads and clears it in `check`. */
#define REF_ERR_INDEX 1ull
__device__ __noinline__ void ref_report(unsigned long long *err, unsigned long long code, long long value,
                                        long long pos)
{
    if (atomicCAS(err, 0ull, code) == 0ull) {
        err[1] = (unsigned long long)value;
        err[2] = (unsigned long long)pos;
    }
}

/* ---- clusters (sm_90): rank in the cluster, cluster id and count, barrier,
 * and a load from another block's shared memory (distributed shared memory). */
__device__ __forceinline__ unsigned ref_cluster_rank()
{
    unsigned r;
    asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned ref_cluster_id()
{
    unsigned r;
    asm("mov.u32 %0, %%clusterid.x;" : "=r"(r));
    return r;
}
__device__ __forceinline__ unsigned ref_num_clusters()
{
    unsigned r;
    asm("mov.u32 %0, %%nclusterid.x;" : "=r"(r));
    return r;
}
__device__ __forceinline__ void ref_cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ float2 ref_cluster_load(const float2 *local_smem, unsigned rank)
{
    unsigned a = (unsigned)__cvta_generic_to_shared(local_smem), remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(a), "r"(rank));
    float2 v;
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];" : "=f"(v.x), "=f"(v.y) : "r"(remote) : "memory");
    return v;
}

#endif /* REF_COMMON_CUH */
