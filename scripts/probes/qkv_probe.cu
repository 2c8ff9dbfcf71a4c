// qkv_probe.cu -- docs/perf.md v13, probe 3. QKV split: x[B, T, 3C] -> q, k, v [B, H, T, 64]. Which traversal order of the output is fastest?
// A: output order (b, h, t, d), one vector per thread per output (3 outputs per thread) -- the fuser today
// B: input order (b, t, part, h, d): each thread one vector of the input, stored to its output
// B3: input order (b, t, h, d) with the 3 parts per thread (3 loads, 3 stores)
// C: tiles: a block owns 32 t of one (b, h), blocks ordered (b, t-chunk, h): a wave reads whole input rows
// cold L2, events, median of 31.
#include <cstdint>
#include "cold_timer.cuh"

// element counts in uint4 (16 bytes); HV = head dim in uint4 (64 elements: f32 16, bf16 8)
__global__ void qkv_A(const uint4 *__restrict__ x, uint4 *__restrict__ q, uint4 *__restrict__ k, uint4 *__restrict__ v,
                      int B, int T, int H, int HV) {
  long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // output vector index (b, h, t, dv)
  long long n = (long long)B * H * T * HV;
  if (e >= n) return;
  int dv = (int)(e % HV); long long r = e / HV;
  int t = (int)(r % T); r /= T;
  int h = (int)(r % H); int b = (int)(r / H);
  long long row = ((long long)b * T + t) * 3 * H * HV + (long long)h * HV + dv;
  uint4 a0 = x[row], a1 = x[row + H * HV], a2 = x[row + 2 * H * HV];
  q[e] = a0; k[e] = a1; v[e] = a2;
}
__global__ void qkv_B(const uint4 *__restrict__ x, uint4 *__restrict__ q, uint4 *__restrict__ k, uint4 *__restrict__ v,
                      int B, int T, int H, int HV) {
  long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // input vector index (b, t, part, h, dv)
  long long n = (long long)B * T * 3 * H * HV;
  if (e >= n) return;
  int dv = (int)(e % HV); long long r = e / HV;
  int h = (int)(r % H); r /= H;
  int part = (int)(r % 3); r /= 3;
  int t = (int)(r % T); int b = (int)(r / T);
  uint4 *o = part == 0 ? q : part == 1 ? k : v;
  o[(((long long)b * H + h) * T + t) * HV + dv] = x[e];
}
__global__ void qkv_B3(const uint4 *__restrict__ x, uint4 *__restrict__ q, uint4 *__restrict__ k, uint4 *__restrict__ v,
                       int B, int T, int H, int HV) {
  long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;  // (b, t, h, dv)
  long long n = (long long)B * T * H * HV;
  if (e >= n) return;
  int dv = (int)(e % HV); long long r = e / HV;
  int h = (int)(r % H); r /= H;
  int t = (int)(r % T); int b = (int)(r / T);
  long long row = ((long long)b * T + t) * 3 * H * HV + (long long)h * HV + dv;
  uint4 a0 = x[row], a1 = x[row + H * HV], a2 = x[row + 2 * H * HV];
  long long o = (((long long)b * H + h) * T + t) * HV + dv;
  q[o] = a0; k[o] = a1; v[o] = a2;
}
// C: block = (b, tc, h) with h fastest; the block's threads cover 32 t x HV vectors of q, k and v
__global__ void qkv_C(const uint4 *__restrict__ x, uint4 *__restrict__ q, uint4 *__restrict__ k, uint4 *__restrict__ v,
                      int B, int T, int H, int HV, int TC) {
  int blk = blockIdx.x;
  int h = blk % H; blk /= H;
  int tc = blk % (T / TC); int b = blk / (T / TC);
  for (int i = threadIdx.x; i < TC * HV; i += blockDim.x) {
    int t = tc * TC + i / HV, dv = i % HV;
    long long row = ((long long)b * T + t) * 3 * H * HV + (long long)h * HV + dv;
    uint4 a0 = x[row], a1 = x[row + H * HV], a2 = x[row + 2 * H * HV];
    long long o = (((long long)b * H + h) * T + t) * HV + dv;
    q[o] = a0; k[o] = a1; v[o] = a2;
  }
}


int main() {
  cold_timer timer;
  struct { int B, T, C3, esz; const char *name; } cases[] = {
      {32, 2048, 6144, 2, "bf16 32x2048x6144"}, {16, 128, 3072, 4, "f32 16x128x3072"},
      {16, 1024, 2304, 2, "bf16 16x1024x2304"}, {32, 2048, 6144, 4, "f32 32x2048x6144"}};
  for (auto &cs : cases) {
    size_t bytes = (size_t)cs.B * cs.T * cs.C3 * cs.esz;
    int HV = 64 * cs.esz / 16, H = cs.C3 / 3 / 64;
    uint4 *x, *o; CK(cudaMalloc(&x, bytes)); CK(cudaMalloc(&o, bytes));
    CK(cudaMemset(x, 3, bytes));
    uint4 *q = o, *k = o + bytes / 16 / 3, *v = o + 2 * (bytes / 16 / 3);
    long long nvec = (long long)bytes / 16;
    auto rep = [&](const char *n, double us) { printf("%-20s %-30s %9.2f us %6.0f GB/s\n", cs.name, n, us, 2.0 * bytes / us / 1e3); fflush(stdout); };
    double mc = timer.median_us([&] { CK(cudaMemcpyAsync(o, x, bytes, cudaMemcpyDeviceToDevice)); });
    rep("memcpyDtoD", mc);
    for (int th : {256, 512}) {
      char nm[64];
      snprintf(nm, sizeof nm, "A output order x%d", th);
      rep(nm, timer.median_us([&] { qkv_A<<<(unsigned)((nvec / 3 + th - 1) / th), th>>>(x, q, k, v, cs.B, cs.T, H, HV); }));
      snprintf(nm, sizeof nm, "B input order x%d", th);
      rep(nm, timer.median_us([&] { qkv_B<<<(unsigned)((nvec + th - 1) / th), th>>>(x, q, k, v, cs.B, cs.T, H, HV); }));
      snprintf(nm, sizeof nm, "B3 input order 3/thr x%d", th);
      rep(nm, timer.median_us([&] { qkv_B3<<<(unsigned)((nvec / 3 + th - 1) / th), th>>>(x, q, k, v, cs.B, cs.T, H, HV); }));
    }
    for (int tc : {16, 32}) {
      if (cs.T % tc) continue;
      char nm[64];
      snprintf(nm, sizeof nm, "C tiles of %d t x256", tc);
      rep(nm, timer.median_us([&] { qkv_C<<<(unsigned)(cs.B * (cs.T / tc) * H), 256>>>(x, q, k, v, cs.B, cs.T, H, HV, tc); }));
    }
    // check B against A
    std::vector<uint32_t> h1(4096), h2(4096);
    CK(cudaMemset(x, 0, bytes));
    CK(cudaMemset(x + 12345, 7, 16 * 100));
    qkv_A<<<(unsigned)((nvec / 3 + 255) / 256), 256>>>(x, q, k, v, cs.B, cs.T, H, HV);
    CK(cudaMemcpy(h1.data(), o, 16384, cudaMemcpyDeviceToHost));
    long long sumA = 0;
    { std::vector<uint32_t> all(bytes / 4); CK(cudaMemcpy(all.data(), o, bytes, cudaMemcpyDeviceToHost)); for (auto w : all) sumA += w != 0; }
    CK(cudaMemset(o, 0, bytes));
    qkv_B<<<(unsigned)((nvec + 255) / 256), 256>>>(x, q, k, v, cs.B, cs.T, H, HV);
    long long sumB = 0; bool same = true;
    { std::vector<uint32_t> all(bytes / 4); CK(cudaMemcpy(all.data(), o, bytes, cudaMemcpyDeviceToHost)); for (auto w : all) sumB += w != 0; CK(cudaMemcpy(h2.data(), o, 16384, cudaMemcpyDeviceToHost)); same = h1 == h2; }
    printf("check: nonzero words A %lld B %lld first page same %d\n", sumA, sumB, (int)same);
    cudaFree(x); cudaFree(o);
  }
  return 0;
}
