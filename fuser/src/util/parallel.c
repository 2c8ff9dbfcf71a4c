/*
 * parallel.c -- loops over independent items split over the machine's cores
 * (OpenMP, where the compiler has it; one thread otherwise).
 *
 * The CPU interpreter is the judge of every GPU check, and at the suites'
 * sizes (a cross entropy over [8192, 256000]) it and the random inputs took
 * most of a GPU session's minutes on one core. Each chunk computes its own
 * items as the serial loop would, and whatever depends on the order (a sum
 * across rows, a random stream) stays serial in the caller, so the results are
 * bit-identical to a one-thread run.
 */
#ifdef _OPENMP
#include <omp.h>
#endif

#include "util.h"

/* Below this much work (elements touched) a loop stays on one thread: starting the team costs
 * a few microseconds, the work of ~10^4 elements. */
#define PARALLEL_MIN_WORK ((int64_t)1 << 16)

bool fu_parallel_chunks(int64_t n, int64_t work, fu_chunk_fn body, void *ctx)
{
    int threads = 1;
#ifdef _OPENMP
    if (work >= PARALLEL_MIN_WORK && !omp_in_parallel()) threads = omp_get_max_threads();
#else
    (void)work;
#endif
    if (threads > n) threads = n > 0 ? (int)n : 1;
    if (threads <= 1) return body(ctx, 0, n);
    bool ok = true;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static, 1) reduction(&& : ok)
    for (int t = 0; t < threads; t++) ok = body(ctx, n * t / threads, n * (t + 1) / threads) && ok;
#endif
    return ok;
}
