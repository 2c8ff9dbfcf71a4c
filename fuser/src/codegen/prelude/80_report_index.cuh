// ---- fuser prelude 80_report_index.cuh: out-of-range index reports
// provides: fu_report_index
// First out-of-range index wins: err[0] = op + 1, err[1] = value, err[2] = position.
__device__ __noinline__ void fu_report_index(unsigned long long *err, int op, long long value, long long pos) {
  if (atomicCAS(err, 0ull, (unsigned long long)(op + 1)) == 0ull) { err[1] = (unsigned long long)value; err[2] = (unsigned long long)pos; }
}
