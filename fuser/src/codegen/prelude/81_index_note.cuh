// ---- fuser prelude 81_index_note.cuh: out-of-range gather indices, noted and reported on exit
// provides: fu_index_note
// needs: 80_report_index.cuh
// A thread's first out-of-range gather index, kept in registers and reported when the thread leaves
// the kernel: a check is a compare and a select, so no branch or call sits between one gather's
// loads and the next (ptxas moves no load across a call, and a chain of 4 lanes' index and data
// loads then costs 8 memory latencies instead of 2).
struct fu_index_note {
  unsigned long long *err;
  int op; // the op's node + 1; 0: none yet
  long long value, pos;
  __device__ explicit fu_index_note(unsigned long long *e) : err(e), op(0), value(0), pos(0) {}
  // j clamped into [0, extent) (0 when out of range); the first bad one is noted.
  __device__ __forceinline__ long long check(long long j, long long extent, int node, long long p) {
    const bool bad = (unsigned long long)j >= (unsigned long long)extent;
    if (bad && op == 0) { op = node + 1; value = j; pos = p; }
    return bad ? 0ll : j;
  }
  __device__ ~fu_index_note() { if (op) fu_report_index(err, op - 1, value, pos); }
};
