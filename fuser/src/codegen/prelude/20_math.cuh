// ---- fuser prelude 20_math.cuh: exp, log, sqrt, division by a constant, abs, pow (docs/format.md, Numerics)
// provides: fu_exp fu_exp_sub fu_log fu_log1p fu_sqrt fu_rsqrt fu_div_const fu_div_bf16 fu_sqrt_bf16 fu_abs fu_pow
// f32 exp through ex2.approx (2 instructions): relative error ~3e-7 plus the
// rounding of x * log2(e); these kernels are bound by memory and by issue slots
__device__ __forceinline__ float fu_exp(float x) { return __expf(x); }
__device__ __forceinline__ double fu_exp(double x) { return exp(x); }
// exp(a - b) as 2^((a - b) * log2(e)): the difference first, so the argument's
// rounding is relative to a - b (small near a row's max b), not to b. The form
// 2^(a*log2(e) - b*log2(e)) saved the FADD but rounded b*log2(e): an error of
// |b| * 2^-24 in the exponent, 2.8e-4 relative at |b| ~ 3000 (an online max
// rescaled several times, fuser-fuzz seed 7 #183)
__device__ __forceinline__ float fu_exp_sub(float a, float b) {
  const float l2e = 1.4426950408889634f;
  float r; asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"((a - b) * l2e)); return r;
}
__device__ __forceinline__ double fu_exp_sub(double a, double b) { return exp(a - b); }
__device__ __forceinline__ float fu_log(float x) { return logf(x); }
__device__ __forceinline__ double fu_log(double x) { return log(x); }
__device__ __forceinline__ float fu_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double fu_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float fu_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double fu_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float fu_rsqrt(float x) { return rsqrtf(x); }
__device__ __forceinline__ double fu_rsqrt(double x) { return rsqrt(x); }
// a / c for a constant c as a * hi + a * lo, hi = 1/c rounded toward zero and lo the
// rest (same sign, so a = +-inf gives +-inf): an FMUL and an FFMA, correctly rounded
// unless a / c lies within 2^-46 of a rounding boundary (never for a c of <= 20 significant bits)
__device__ __forceinline__ float fu_div_const(float a, float hi, float lo) { return fmaf(a, hi, a * lo); }
// a / b for bf16 values a and b whose quotient is rounded to bf16: div.full.f32 (2 ulp of f32
// at most, no slow path), never a different bf16 result for a normal one: such a quotient lies
// at least 2^-17 (relative) from a bf16 rounding boundary (docs/format.md, Numerics)
__device__ __forceinline__ float fu_div_bf16(float a, float b) { float r; asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r; }
// sqrt(a) for a bf16 value a, rounded to bf16: sqrt.approx.f32 (3 ulp of f32 at most, no slow
// path), never a different bf16 result: sqrt(a) lies at least 2^-19 (relative) from a bf16
// rounding boundary (docs/format.md, Numerics)
__device__ __forceinline__ float fu_sqrt_bf16(float a) { float r; asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(a)); return r; }
__device__ __forceinline__ float fu_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double fu_abs(double x) { return fabs(x); }
__device__ __forceinline__ long long fu_abs(long long x) { return x < 0 ? -x : x; }
__device__ __forceinline__ float fu_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double fu_pow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ long long fu_pow(long long a, long long b) { long long r = 1; if (b < 0) return a == 1 ? 1 : (a == -1 ? ((b & 1) ? -1 : 1) : 0); while (b) { if (b & 1) r *= a; a *= a; b >>= 1; } return r; }
