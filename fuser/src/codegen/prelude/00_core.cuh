// ---- fuser prelude 00_core.cuh: storage types, loads, conversions, rounding (every kernel)
struct fu_bf16 { unsigned short x; };
struct fu_f16 { unsigned short x; };
#define FU_INF __int_as_float(0x7f800000)
#define FU_NAN __int_as_float(0x7fc00000)
#define FU_DINF __longlong_as_double(0x7ff0000000000000ll)
#define FU_DNAN __longlong_as_double(0x7ff8000000000000ll)
__device__ __forceinline__ float fu_load(fu_bf16 v) { return __uint_as_float(((unsigned)v.x) << 16); }
__device__ __forceinline__ float fu_load(fu_f16 v) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v.x)); return f; }
__device__ __forceinline__ float fu_load(float v) { return v; }
__device__ __forceinline__ double fu_load(double v) { return v; }
__device__ __forceinline__ long long fu_load(int v) { return v; }
__device__ __forceinline__ long long fu_load(long long v) { return v; }
__device__ __forceinline__ bool fu_load(unsigned char v) { return v != 0; }
__device__ __forceinline__ fu_bf16 fu_to_bf16(float f) { fu_bf16 r; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r.x) : "f"(f)); return r; }
__device__ __forceinline__ fu_f16 fu_to_f16(float f) { fu_f16 r; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r.x) : "f"(f)); return r; }
// f to bf16 and back in one instruction (sm_80+): the pair (f, 0) packed puts the
// rounded f in the upper half, which is its f32 bit pattern
__device__ __forceinline__ float fu_round_bf16(float f) {
#if __CUDA_ARCH__ >= 800
  unsigned r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(f), "f"(0.0f)); return __uint_as_float(r);
#else
  return fu_load(fu_to_bf16(f));
#endif
}
__device__ __forceinline__ float fu_round_f16(float f) { return fu_load(fu_to_f16(f)); }
// Two lanes converted by one instruction (sm_80+); lo goes to the low half.
__device__ __forceinline__ unsigned fu_pack_bf16x2(float lo, float hi) {
#if __CUDA_ARCH__ >= 800
  unsigned r; asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
#else
  return (unsigned)fu_to_bf16(lo).x | ((unsigned)fu_to_bf16(hi).x << 16);
#endif
}
__device__ __forceinline__ unsigned fu_pack_f16x2(float lo, float hi) {
#if __CUDA_ARCH__ >= 800
  unsigned r; asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo)); return r;
#else
  return (unsigned)fu_to_f16(lo).x | ((unsigned)fu_to_f16(hi).x << 16);
#endif
}
