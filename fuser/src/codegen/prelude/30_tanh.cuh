// ---- fuser prelude 30_tanh.cuh: tanh and sigmoid (docs/format.md, Numerics)
// provides: fu_tanh fu_tanh_approx fu_sigmoid
// tanh and sigmoid: the rules are in docs/format.md (Numerics). Where the result is
// rounded to bf16 or f16: tanh.approx.f32, one MUFU.TANH, relative error < 2^-10.9
__device__ __forceinline__ float fu_tanh_approx(float x) { float r; asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x)); return r; }
// f32 results: an odd polynomial below |x| = 0.125 (truncation < 2e-9 relative), else
// (1 - e) / (1 + e) with e = 2^(-2|x| log2(e)) (ex2.approx and rcp.approx: < 1.5e-6 relative)
__device__ __forceinline__ float fu_tanh(float x) {
  const float a = fabsf(x), x2 = x * x;
  const float p = fmaf(x * x2, fmaf(x2, fmaf(x2, -0.053968254f, 0.13333334f), -0.33333334f), x);
  float e, r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(a * -2.88539008f));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + e));
  return a < 0.125f ? p : copysignf((1.0f - e) * r, x);
}
__device__ __forceinline__ double fu_tanh(double x) { return tanh(x); }
// 1 / (1 + 2^(-x log2(e))): ex2.approx and rcp.approx, < 5e-6 relative for |x| < 80
// (the error of -x log2(e) grows with |x|), 0 where 2^(-x log2(e)) overflows, as expf's did
__device__ __forceinline__ float fu_sigmoid(float x) {
  float e, r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x * -1.44269504f));
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(1.0f + e)); return r;
}
__device__ __forceinline__ double fu_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
