/*
 * suites/qkv_split/reference.cu -- reference kernel for the qkv_split suite: the output of the
 * fused QKV projection, x[B, T, 3C], split into q, k and v, each reshaped to H
 * heads of HD = C / H and permuted to [B, H, T, HD] (nanoGPT's
 * q, k, v = x.split(C, 2); q.view(B, T, H, HD).transpose(1, 2), made
 * contiguous).
 *
 *   ref_qkv_split_{f32,bf16}(x, q, k, v, rows = B * T)
 *
 * What makes it fast: it is a copy, so the floor is 2 x the input's bytes.
 * One kernel writes all three outputs (PyTorch launches one copy per output).
 * Each thread takes UNROLL 16-byte vectors of x in input order (a warp reads
 * 512 contiguous bytes: coalesced), issues all loads before any store, and
 * writes each vector to its place in q, k or v: a head's HD elements are
 * contiguous in both layouts, so the stores land in runs of HD x elem bytes
 * (128 or 256), whole sectors. Loads skip L1, stores are evict-first.
 *
 * Compile-time parameters (-D): REF_C width, REF_HD head size, REF_T sequence
 * length, REF_VW elements per vector (16 bytes' worth, or fewer when HD is not
 * a multiple).
 *
 * Versions:
 *   v1  one thread per output element, three loads each (the fuser's mapping).
 *   v2  one thread per input vector, UNROLL vectors per thread.
 */

#if !defined(REF_C) || !defined(REF_HD) || !defined(REF_T)
#error "REF_C (width), REF_HD (head size) and REF_T (sequence length) must be defined"
#endif
#ifndef REF_VW
#define REF_VW 1
#endif

namespace qkv {
constexpr int C = REF_C, HD = REF_HD, H = REF_C / REF_HD, T = REF_T, VW = REF_VW;
constexpr int B = 256, UNROLL = 4;
constexpr int VPR = 3 * C / VW; /* input vectors per (b, t) row */
static_assert(C % HD == 0, "REF_HD must divide REF_C");
static_assert(HD % VW == 0, "REF_VW must divide REF_HD");
typedef ref_vec<ref_t, VW>::raw raw_t;
} // namespace qkv

extern "C" __global__ void __launch_bounds__(qkv::B)
REF_ENTRY(ref_qkv_split)(const ref_t *__restrict__ x, // (B, T, 3C)
                         ref_t *__restrict__ q,       // (B, H, T, HD)
                         ref_t *__restrict__ k,       // (B, H, T, HD)
                         ref_t *__restrict__ v,       // (B, H, T, HD)
                         long long rows)              // B * T
{
    using namespace qkv;
    const long long total = rows * VPR;
    const long long first = (long long)blockIdx.x * (B * UNROLL) + threadIdx.x;
    raw_t val[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        const long long e = first + u * B;
        if (e < total) val[u] = ref_ld_stream(reinterpret_cast<const raw_t *>(x) + e);
    }
#pragma unroll
    for (int u = 0; u < UNROLL; u++) {
        const long long e = first + u * B;
        if (e < total) {
            const long long row = e / VPR;            /* b * T + t */
            const int c = (int)(e - row * VPR) * VW;  /* position in 3C */
            const int part = c / C, cc = c - part * C, h = cc / HD, d = cc - h * HD;
            const long long b = row / T, t = row - b * T;
            ref_t *dst = part == 0 ? q : part == 1 ? k : v;
            ref_st_stream(reinterpret_cast<raw_t *>(dst + ((b * H + h) * T + t) * HD + d), val[u]);
        }
    }
}
