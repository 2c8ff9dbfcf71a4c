/*
 * k_reduction.c -- the reduction scheduler: normalization-style groups in
 * one kernel.
 *
 * The group's row reductions share a domain D (the shape they reduce) split
 * into outer axes (rows) and inner axes (reduced). A block owns a row at a
 * time (persistent grid: rows strided by gridDim.x, or taken in order from a
 * queue where the kernel also writes whole rows) and sweeps the row in
 * passes:
 *   - each pass computes the row reductions whose inputs are ready and writes
 *     the full-size outputs that depend only on what is ready (an output that
 *     permutes them with the innermost axis in place, at the permuted offsets);
 *   - sum(exp(E - max(E))) is recognized and computed in the same pass as
 *     max(E) with an online rescaling (one read for log-sum-exp), or, where
 *     E is bounded near zero (fu_value_range), with a constant shift;
 *   - when a later pass re-reads an input, the row is kept from the first pass
 *     instead, if it fits: in shared memory (each thread's own slots, so the
 *     passes stay rolled loops) or in registers (ROW_CACHE_SMEM=0): one read of
 *     the logits for a fused cross entropy forward+backward; a value a pass
 *     computes from the row and a later pass reads again (a reduction's
 *     operand, a quotient by the row's sum) is kept in registers where the
 *     passes are unrolled over a few vectors a thread (KEEP_VALUES).
 * After the passes, per-row values (a loss per row) are written by one thread.
 * Reductions over all rows ("grid" reductions: a mean loss) are accumulated
 * per block (per row with the queue), written as partials, and combined in a
 * fixed order by the last block to finish, which then writes the scalar outputs: the result
 * is deterministic and needs no second kernel and no memset (the last block
 * resets the counter). A grid reduction that a row needs before it can finish
 * (the count of non-ignored rows in a mean backward) and that depends on no
 * row reduction is computed by every block up front (the prologue).
 *
 * A row whose length is no multiple of the vector is read in vectors from its
 * first aligned element (a shift that depends on the row), its edges element
 * by element (ALIGNED_ROWS).
 *
 * fu_reduction_heuristics analyses the group and makes every decision above
 * into a red_params (the vector width and its alignment, threads, warp rows,
 * cluster and part, the row cache and where it lives, each pass's batch, staged inputs, guard
 * and online-max reads, the values hoisted before each pass, the outputs'
 * classes, the grid, the queue, the workspace layout; its text in kp->config,
 * its JSON in kp->params_json); fu_reduction_emit writes the kernel from that
 * struct alone. Left to the emitter, as properties of the text it writes:
 * whether an offset allows one vector load or store (cg_offset_vectorizable),
 * which loads inside a pass become register reads (lookup_cache matches the
 * offset's text against the staged and cached inputs' canonical offsets), and
 * how a bf16 register element is read (as half of a word where vec is even).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "range.h"
#include "reduce_common.h"

#define MAX_REDS 32
#define MAX_CACHE 4
#define MAX_ROW_AHEAD 8 /* per-row inputs loaded a row ahead */
#define MAX_INVARIANT 4 /* per-column inputs kept in registers across rows */
#ifndef CACHE_BYTES
#define CACHE_BYTES 128 /* bytes of a row each thread may keep between passes, in registers */
#endif
/* ... and in shared memory (ROW_CACHE_SMEM), where the slots fit: softmax
 * backward re-reads both dy and y in its second pass, and 128 bytes kept
 * only one of them at 4096 columns */
#ifndef SMEM_CACHE_BYTES
#define SMEM_CACHE_BYTES 256
#endif
/* A value a pass computes from the row (a reduction's operand, an online
 * log-sum-exp's source, a full-size output) and a later pass reads again at the
 * same position is kept in registers, KEEP_BYTES a thread at most, instead of
 * computed again: no second load of its inputs after the block reduction (a
 * memory round trip on the critical path of a small row) and no second run of
 * its arithmetic (a division, a log1p). Its row edges (ALIGNED_ROWS) keep
 * theirs in a scalar, as do the cached inputs'. 0 turns it off. */
#ifndef KEEP_VALUES
#define KEEP_VALUES 1
#endif
#define KEEP_BYTES 64
#define MAX_KEEP 4
/* Loads a thread issues together (bytes in flight). One pass: 128 bytes of
 * the widest row input, whatever the dtype (32 elements left a bf16 row with
 * half the bytes in flight of an f32 one: 156 -> 146 us for the bf16 cross
 * entropy forward). Several passes without a register cache: 32 elements (with
 * 64 bf16 elements staged, the 3-pass bf16 backward at V = 128256 went from
 * 1483 to 1922 us on the H200: the staging registers of later passes cost
 * occupancy). */
#ifndef STAGE_BYTES
#define STAGE_BYTES 128
#endif
#define STAGE_ELEMS_MULTIPASS 32
/* A streamed pass 1 (its staged inputs come from memory, no registers indexed
 * by the position) of a row whose elements take a transcendental first
 * (mufu_rows) loads its batch in two halves, one ahead of the other: the
 * second half's loads are issued before the first half's arithmetic, and the
 * next batch's first half before the second half's. A thread then always has
 * half a batch in flight, where a whole batch and its arithmetic took turns,
 * and there the arithmetic is most of the time. The same registers. H100,
 * docs/perf.md v36: the soft-capped cross entropy 1% faster; the plain cross
 * entropy forward, whose arithmetic is light, up to 2.7% slower (bf16 8192 x
 * 4096): a whole batch in flight at once serves it better. 0 turns it off. */
#ifndef STAGE_HALVES
#define STAGE_HALVES 1
#endif
/* A compare of the row position with a value the same along the row (a
 * one-hot: the cross entropy backward's is_target = eq(class iota, target)) is
 * false at every lane of a pass's vector but in one vector a row. Such a pass's
 * vector work is written twice: where no lane is at the value, with the compare
 * known (false for eq, true for ne; the compiler folds what follows from it), and
 * else with each lane's compare on the value's distance to the vector. The
 * cross entropy backward's pass 2, PTX an element (docs/perf.md v37): bf16 9.06
 * -> 8.06 on the known branch (the row's validity select, which nvcc unswitched
 * out of the old loop, is back in it), f32 10.0 -> 6.4. H100: -2.2% to +0.8%, a
 * wash where memory bounds the kernel; meant for the H200, where these kernels
 * run short of issue slots (not measured there yet). 0 turns it off. */
/* A `where` of the pass whose condition is one value a row, known before the
 * pass (the cross entropy backward's `valid`: the target is not the ignored
 * index), is decided once a row: the pass's loop is written twice, under `if
 * (cond)` with the condition true and in the `else` with it false, and each
 * copy folds the select away. nvcc did this itself for the old loop and no
 * longer does beside VECTOR_MISS's two branches. 0 turns it off. */
#ifndef ROW_UNSWITCH
#define ROW_UNSWITCH 1
#endif
#ifndef VECTOR_MISS
#define VECTOR_MISS 1
#endif
/* A vector narrower than a register (one bf16 element: a row of odd length)
 * counts as 4 bytes in STAGE_BYTES, since it takes a register: 64 of them
 * spilled the bf16 cross entropy forward at V = 50257. 0 turns it off. */
#ifndef NARROW_VECTOR_REGISTER
#define NARROW_VECTOR_REGISTER 1
#endif
/* A row whose length is not a multiple of the vector (an odd vocabulary:
 * 50257) is read in full vectors from its first 16-byte aligned element, a
 * shift that depends on the row; the edges, fewer than a vector's elements
 * before that element and after the last whole vector, are taken element by
 * element in the first batch of each pass (aligned_rows). Before, such rows
 * took vectors of the largest width that divides the length: one element for
 * an odd one, bf16 4093 x 50257 forward at 46.5% of copy (docs/perf.md v19).
 * Not where column reductions keep an accumulator per row position (its
 * columns would move from row to row), nor for rows of fewer than
 * ALIGNED_ROWS_MIN_VECS vectors, nor, where the rows are fewer than the SMs (a
 * kernel of one wave's latency, not of bandwidth), for rows of fewer than
 * ALIGNED_FEW_ROWS_MIN_VECS: there the edges' code costs more than the vectors
 * save (H100, docs/perf.md v34: 255 f32 in 7 rows, 4.74 -> 4.38 us a call as
 * one element a thread). 0 turns it off. */
#ifndef ALIGNED_ROWS
#define ALIGNED_ROWS 1
#endif
#ifndef ALIGNED_ROWS_MIN_VECS
#define ALIGNED_ROWS_MIN_VECS 32
#endif
#ifndef ALIGNED_FEW_ROWS_MIN_VECS
#define ALIGNED_FEW_ROWS_MIN_VECS 256
#endif
/* Vectors along the last axis where the row spans several axes (a sum over
 * [.., 16, 7, 8]), where the last one's extent is a multiple of the vector.
 * Before, such rows took scalar loads. 0 turns it off. */
#ifndef VEC_INNER_AXES
#define VEC_INNER_AXES 1
#endif
/* The online log-sum-exp of a bf16 row of odd length takes each batch's max
 * first from the staged elements (as f32 rows do), one rescale per batch
 * instead of a compare and a possible rescale per element. 0 turns it off. */
#ifndef ODD_VECTOR_BATCH_MAX
#define ODD_VECTOR_BATCH_MAX 1
#endif
/* A log-sum-exp over E whose values lie in [lo, hi] with hi - lo <= 80
 * (fu_value_range: a soft-capped or tanh-squashed row) adds exp(E - hi), a
 * constant shift, instead of exp(E - m) with the running max m: no rescale
 * per batch, one FFMA for the argument; the threads' maxes and sums are
 * reduced as they are, then the sum rescaled once by exp(hi - m). Every term
 * is at least e^-80, a normal float. 0 turns it off. */
#ifndef LSE_CONST_SHIFT
#define LSE_CONST_SHIFT 1
#endif
#define LSE_CONST_SHIFT_SPAN 80.0
/* ... and |lo|, |hi| <= 64: the FFMA's argument x log2(e) - s log2(e) is rounded
 * relative to its operands, so far from zero (x near 10^6) a term would lose
 * its digits; within 64 each term's error stays under docs/format.md's bound. */
#define LSE_CONST_SHIFT_MAX_ABS 64.0
/* Where such a log-sum-exp's max is read by nothing but its own terms and
 * lse = log(sum) + max (a cross entropy's or log-softmax's row statistic used
 * only through the lse), the max is not reduced at all: the terms are
 * exp(E - hi) and the lse is log(sum) + hi, the same number up to rounding.
 * One max an element less. 0 turns it off. */
#ifndef LSE_SHIFT_ONLY
#define LSE_SHIFT_ONLY 1
#endif
/* Of each vector's terms of such a log-sum-exp, the last POLY_EXP_EIGHTHS
 * eighths of its lanes (rounded down; vectors of 4 or more) take the exp on
 * the FMA pipe (fu_exp_shifted_poly) instead of MUFU.EX2, where E itself needs
 * the MUFU pipe (a tanh, exp, sigmoid, log, root or pow): with two
 * transcendentals an element the MUFU pipe is the bound while issue slots are
 * left (docs/perf.md v21). A fraction of the vector, because a bf16 element
 * costs fewer issue slots than an f32 one: 3 of 8 bf16 lanes and 1 of 4 f32
 * lanes were the fastest (v32). 0 turns it off. */
#ifndef POLY_EXP_EIGHTHS
#define POLY_EXP_EIGHTHS 3
#endif
/* The launch bounds ask for at least 1024 resident threads an SM (a thread's
 * registers capped at 64), and MUFU_ROWS_MIN_THREADS where each element of the
 * rows takes a transcendental first (mufu_rows): 1536 caps a thread at 40
 * registers, which the soft-capped cross entropy's bf16 kernel fits without
 * spilling. An A/B for more rows in flight where the MUFU and issue pipes are
 * balanced and the rest is overlap (docs/perf.md v32); everywhere, 1536 made
 * the norm backwards and the bf16 fused cross entropy spill. */
#ifndef MUFU_ROWS_MIN_THREADS
#define MUFU_ROWS_MIN_THREADS 1024
#endif
/* Vectors of a row per thread: where the row is kept between passes, and
 * where it does not (one pass, or passes reading memory again). */
#ifndef CACHED_ROW_ITERS
#define CACHED_ROW_ITERS 8
#endif
#ifndef STREAMED_ROW_ITERS
#define STREAMED_ROW_ITERS 16
#endif
/* ... and where a row is read once and each element takes a transcendental
 * before it is reduced (a soft cap: tanh, then the lse's exp): fewer threads
 * a row, so the row's fixed cost (its block reduction and barriers) is spread
 * over more elements and an SM holds more rows. Soft-capped cross entropy at
 * 8192 x 32768: bf16 169.4 -> 164.3 us, f32 305.1 -> 290.2 (docs/perf.md v21). */
#ifndef MUFU_ROW_ITERS
#define MUFU_ROW_ITERS 32
#endif
/* Where a row read again by a later pass is kept: 0 in registers (every pass
 * unrolled over the whole row, so the arrays are indexed by constants), 1 in
 * shared memory (each thread's own slots: rolled passes, a fraction of the
 * code for NVRTC). Later passes read ROW_SMEM_BATCH vectors at a time. */
#ifndef ROW_CACHE_SMEM
#define ROW_CACHE_SMEM 1
#endif
#ifndef REGISTER_ROW_ITERS
#define REGISTER_ROW_ITERS 4
#endif
/* ... but a warp a row (32 lanes; not the short rows' L lanes) keeps at most
 * this many bytes a lane of its cached inputs in registers (under the launch
 * bounds' 64 registers a thread), else shared memory. On an H100 (docs/perf.md
 * v35): softmax backward bf16 16384 x 1024 (y and dy, 4 vectors of 8 a lane
 * each, 128 bytes) spilled 48 bytes and took 42.7 us in registers, 38.5 in
 * shared memory; rms norm forward bf16 16384 x 1024 (x, 64 bytes; its
 * weight's loads hoisted beside it) spilled 48 bytes, 32.0 -> 26.4 us. */
#ifndef WARP_ROW_REGISTER_BYTES
#define WARP_ROW_REGISTER_BYTES 48
#endif
/* A row a later pass reads again, on a block of its own: more threads, up to
 * REGISTER_ROW_MAX_THREADS, where REGISTER_ROW_ITERS vectors a thread then keep
 * it in registers (CACHE_BYTES) instead of CACHED_ROW_ITERS in shared memory.
 * Softmax backward at 16384 x 4096: f32 210.3 -> 190.6 us, bf16 108.4 -> 99.3
 * (docs/perf.md v23). Not for rows a warp holds (a warp a row, WARP_ROWS: f32
 * 1024 columns took 52.8 us so, 58.3 on 64 threads), nor on 1024 threads: a
 * block of them is alone on its SM, nothing else in flight during its
 * reductions (bf16 cross entropy backward at 8192 x 32768: 272 -> 337 us).
 * 0 turns it off. */
#ifndef REGISTER_ROW_THREADS
#define REGISTER_ROW_THREADS 1
#endif
#ifndef REGISTER_ROW_MAX_THREADS
#define REGISTER_ROW_MAX_THREADS 512
#endif
#ifndef ROW_SMEM_BATCH
#define ROW_SMEM_BATCH 2
#endif
/* Rows taken in order from a queue (an atomic counter) instead of strided by
 * gridDim.x, where a persistent grid both reads and writes whole rows: the
 * SMs then sweep memory together, while strided rows drift apart. A copy of
 * 128 KiB rows through shared memory on the H200: 542.8 us strided, 524.9
 * from the queue, 521.3 with one block per row (docs/perf.md v13). Grid
 * reductions then keep one partial per row, combined in row order, so the
 * result does not depend on which block took which row. */
#ifndef ROW_QUEUE
#define ROW_QUEUE 1
#endif
/* A row's first batch of loads is issued before its per-row values (the
 * target id, the logit it picks), which wait on a load each: otherwise every
 * row starts with that round trip, its bulk loads not yet in flight. */
#ifndef ROW_LOADS_FIRST
#define ROW_LOADS_FIRST 1
#endif
/* In a row split over a cluster, the per-row values only the row's end needs
 * (a loss's picked logit, gathered at the row's target) are loaded before the
 * last pass, not when the row starts: the cluster barrier of pass 1's
 * reductions covers their latency, and the row's start does not wait on them.
 * The fused bf16 cross entropy at V = 256000 stalled at its start on its target
 * id (made a uniform register for the gather's address) before issuing its
 * first batch's last load (docs/perf.md v40); on an H100 the move took 4.6% off
 * it and 2.1% off f32 V = 50304 (clusters of 2), and nothing off clusters of 8
 * (v41). A row in one block has only a block barrier there: its last pass, from
 * shared memory, is shorter than the gather's trip, and the bf16 V = 50304 row
 * ran 3% slower, so those keep the load at the row's start. 0 turns it off. */
#ifndef HOIST_PASS_AHEAD
#define HOIST_PASS_AHEAD 1
#endif
/* The next row's first batch of pass 1 is loaded as soon as this row's pass 1
 * is done with the staged arrays, so that its loads are in flight during this
 * row's reductions and later passes. A block that holds its row in a vector or
 * two a thread (norm backward at 4096 columns: 512 threads, 16 bytes of each
 * input) otherwise waits a full memory round trip each row with nothing of its
 * own in flight. Rows strided by the grid (no queue, no cluster), no register
 * cache, and only while the batch is at most ROW_PREFETCH_BYTES a thread (its
 * registers stay live through the later passes); 0 turns it off. */
#ifndef ROW_PREFETCH_BYTES
#define ROW_PREFETCH_BYTES 32
#endif
/* ... and for a warp a row (WARP_ROWS; 32 lanes) read again by later passes
 * from shared memory, whose first batch is the whole row (f32 768 columns: 6
 * vectors a lane), while it is at most this many bytes a lane: each warp's
 * next row is in flight during its row's reductions and later passes. On an H100, layer
 * norm forward f32 16384 x 768 39.5 -> 37.9 us, rms norm 38.5 -> 37.6
 * (docs/perf.md v35). At 128 bytes the layer norm forward (f32 1024, bf16
 * 2048 columns: the weight and bias beside the row ahead) spilled 96 bytes.
 * 0 turns it off. */
#ifndef ROW_PREFETCH_WARP_BYTES
#define ROW_PREFETCH_WARP_BYTES 96
#endif
/* ... and for rows from the queue (ROW_QUEUE), while the first batch is at
 * most this many bytes a thread: the ticket of the block's next row is
 * published in shared memory before pass 1's block reductions, whose barriers
 * make it every thread's, and the next row's first batch is loaded after them,
 * in flight during the later passes (which read the row from shared memory:
 * pass 1's staged registers are free then). On an H100 at 128 bytes (docs/perf.md
 * v45): f32 bwd and fwd+bwd at 8192 x 32768 -0.7%, bf16 there +0.04% and +0.19%
 * (ptxas spills 4 bytes at the 64 registers of two 512-thread blocks), bf16 bwd at
 * 8192 x 50304 +1.5%. Off until an H200, where v44 found these kernels waiting
 * on their loads, shows a gain (scripts/h200_checks.sh queue-ab); 0 turns it off. */
#ifndef ROW_PREFETCH_QUEUE_BYTES
#define ROW_PREFETCH_QUEUE_BYTES 0
#endif
/* ... and for a row split over a cluster, while the block's first batch (its
 * whole part of the row: 128 bytes a thread) is at most this many bytes a
 * thread: the block's part of its next row (row + gridDim.x / cluster) is in
 * flight during this row's cluster reductions and pass 2, which reads the part
 * from shared memory. With one block of 1024 threads an SM, pass 1's reads and
 * pass 2's writes otherwise never overlap (docs/perf.md v41 item 3): on an
 * H200 the bf16 rows run at 79-85% of copy. It pays only where an SM must move
 * many bytes a clock to keep the memory busy (fu_plan_options.
 * dram_bytes_per_sm_clock at least ROW_PREFETCH_CLUSTER_MIN_BALANCE); where pass 2
 * keeps pace anyway, the next row's reads compete with this row's writes. On an
 * H100 (v47, medians): on 96 SMs (FUSER_SM_LIMIT: 17.6 bytes a clock, an
 * H200's 18.8) bf16 fwd+bwd at 8192 x 128256 / 256000 -2.2% / -1.9%, f32 bwd at
 * 8192 x 50304 / 256000 -2.5% / -8%; on all 132 SMs (12.8) bf16 +0.9% / +1.8%.
 * 0 turns it off. */
#ifndef ROW_PREFETCH_CLUSTER_BYTES
#define ROW_PREFETCH_CLUSTER_BYTES 128
#endif
#ifndef ROW_PREFETCH_CLUSTER_MIN_BALANCE
#define ROW_PREFETCH_CLUSTER_MIN_BALANCE 15.0
#endif
/* ... and with it the next row's per-row inputs (a norm backward's mean and
 * 1/std of the row), into registers a row ahead: otherwise each row's
 * arithmetic starts with a round trip to memory for them, after the prefetched
 * batch has arrived. 0 turns it off. */
#ifndef ROW_PREFETCH_SCALARS
#define ROW_PREFETCH_SCALARS 1
#endif
/* A reduction every block computes before its rows (RK_GRID_PRO: a cross
 * entropy's count of the targets that are not ignored, for the mean) reads the
 * whole of its input in each block while the block has nothing else in flight.
 * Where a thread's share is at most this many elements, its loop has that
 * constant trip and is unrolled whole, so that all of its loads are in flight
 * at once: 8192 targets over 512 threads were 4 rounds of 4 loads (ptxas's
 * unrolling), a memory latency each. On an H100, `#pragma unroll 16` on the old
 * loop took 1.3 us off the bf16 cross entropy backward (0.4%), and added 2 us
 * where the trip was 8 (f32, 1024 threads: LLVM's remainder loop ran the 8 one
 * load at a time), hence the constant trip (docs/perf.md v45). 0 keeps the
 * strided loop. */
#ifndef GRID_PROLOGUE_LOADS
#define GRID_PROLOGUE_LOADS 16
#endif
/* The inputs a pass reads at the row position that are the same at every row
 * (one value a column: a norm's weight, [D]) are loaded into registers once,
 * before the row loop, where the blocks (warps) take several rows each and a
 * thread's positions are the same in every row: otherwise every row loads
 * them again (an L1 hit, but on the path from the row's batch to its
 * arithmetic) in each pass that reads them. At most this many bytes a thread;
 * 0 turns it off. */
#ifndef ROW_INVARIANT_BYTES
#define ROW_INVARIANT_BYTES 32
#endif
/* A launch of a block (or a warp) for each row takes its row in an `if`,
 * not a loop strided by the grid (one_row_each); 0 keeps the loop. */
#ifndef SMALL_ROW_IF
#define SMALL_ROW_IF 1
#endif
/* Two row reductions of a pass across the block share one exchange through
 * shared memory (one pair of barriers, fu_block_reduce2); each is combined in
 * the same order as alone, so the bits are the same. 0 turns it off. */
#ifndef JOINT_BLOCK_REDUCE
#define JOINT_BLOCK_REDUCE 1
#endif
/* Rows a block works on at once, a warp each, where a row needs one warp
 * (rows of up to 32 x CACHED/STREAMED_ROW_ITERS vectors: widths 768-4096):
 * a block of one warp per row let an SM hold 32 blocks, half its warps, and
 * paid a ticket from the row queue and two barriers per block reduction for
 * each short row. With WARP_ROWS warps a block, each row is reduced with
 * shuffles alone and rows are strided (no queue). 1 turns it off. */
#ifndef WARP_ROWS
#define WARP_ROWS 8
#endif
/* Rows of fewer vectors than a warp's lanes (widths of 1-31 vectors) take L
 * lanes each (the power of two at or above their vectors), 32 / L rows a
 * warp, more warps a block while there are rows for two blocks an SM: a warp
 * a row of two elements left 30 of its lanes idle, and the random fusions'
 * grid reductions over rows of 2 ran 512 blocks of 32 threads. 0 turns it off. */
#ifndef SHORT_ROW_LANES
#define SHORT_ROW_LANES 1
#endif
/* At most SHORT_ROW_ITERS vectors a lane of a short row, at least 2 lanes a row of several
 * vectors: the lanes a row are the power of two at or above vecs / SHORT_ROW_ITERS. A warp
 * trip over short rows costs about the same whatever its rows (issue-bound: ~4000 cycles a
 * trip on the H200 with 64 warps an SM), so more rows a trip is faster: 1048576 rows of 17
 * f32 at 1 vector a lane (32 lanes) took 279 us, at 3 (8 lanes, 4 rows a warp) 81 us. One
 * lane a row of several vectors strides the warp's loads over 32 rows (rows of 8 f32 on one
 * lane: 33 us, on two: 25 us). Only where the rows at a vector a lane would overfill the
 * GPU's threads. 1 gives a lane a vector, as before (docs/perf.md v20). */
#ifndef SHORT_ROW_ITERS
#define SHORT_ROW_ITERS 4
#endif
/* Where the rows' threads fill less than half the GPU (sm_count x
 * FEW_ROWS_THREADS_PER_SM threads, an SM's 2048 on sm_90), a row gets more
 * threads, up to 1024, until each thread has one vector: with few rows the
 * time is a thread's chain of loads and adds, not the number of rows in flight
 * (the random fusions' single rows of 255-1000 elements ran 8-12 iterations on
 * 32-64 threads: 2-2.3x torch.compile's time). 0 turns it off. */
#ifndef FEW_ROWS_THREADS_PER_SM
#define FEW_ROWS_THREADS_PER_SM 2048
#endif
/* ... but past FEW_ROWS_MIN_THREADS (a warp for each of an SM's 4 schedulers)
 * only until a thread has FEW_ROWS_ITERS vectors: more warps cost more issue
 * slots and a deeper block reduction than they save in chain length (Nsight
 * Compute, cold L2: fz_7_43's single row of 768 on 1024 threads, 6320
 * instructions, 4.00 us; torch.compile's 256 threads, 1236 instructions, 3.42
 * us). Under 4 warps, fewer threads lost (fz_7_55's rows of 104 on 32
 * threads: 2.24 us against 1.41 on 128; docs/perf.md v28). FEW_ROWS_ITERS 1
 * gives a thread one vector, as before. */
#ifndef FEW_ROWS_ITERS
#define FEW_ROWS_ITERS 4
#endif
#ifndef FEW_ROWS_MIN_THREADS
#define FEW_ROWS_MIN_THREADS 128
#endif
/* Where the domain has one row, outputs of other shapes up to this many elements are
 * written by the row's block after its passes (a thread an element, up to 1024
 * threads); larger ones go to a kernel of their own, where every SM takes part
 * (one block of 32 threads writing 5239 elements took 21.6 us, two kernels 6.3). */
#ifndef SINGLE_ROW_MAX_ELEMS
#define SINGLE_ROW_MAX_ELEMS 4096
#endif
/* 1: a single row's output of one element a thread computes before the passes what
 * needs no reduction (emit_single_row_ahead). A gather after a warp sum waited on its
 * index's load after the sum: x -> sum -> idx -> x[idx] took 3.58 us against 3.36 with
 * idx loaded first (docs/perf.md v28's probe). 0: all of it after the passes. */
#ifndef SINGLE_ROW_AHEAD
#define SINGLE_ROW_AHEAD 1
#endif
/* 1: an output that permutes a full-size value, keeping the innermost axis in place, is
 * stored by the passes where the permute puts each element (permuted_source); 0: such an
 * output is a kernel of its own (before session 51). */
#ifndef PERMUTED_OUTPUTS
#define PERMUTED_OUTPUTS 1
#endif
/* 1: an input read only through reshapes to the rows' shape is staged and cached as an input of
 * that shape (is_row_view_input); 0: read from memory in each pass (before session 51). */
#ifndef ROW_VIEW_INPUTS
#define ROW_VIEW_INPUTS 1
#endif
/* Outputs that read no row value are written over the grid before the rows,
 * at most this many elements a thread (more threads a block where needed, up
 * to 1024); larger ones go to a kernel of their own. */
#define FREE_OUT_ITERS 4
/* Where the group's reductions all reduce every axis, a tensor of at most
 * this many elements is one row (one block of up to 1024 threads, 16
 * iterations): its outputs of the full shape are then written in the same
 * kernel (a larger one's need a grid-wide value: a second kernel), and no
 * grid-wide combine is paid. Larger ones are rows of their last axis. */
#ifndef FULL_ONE_ROW_MAX_ELEMS
#define FULL_ONE_ROW_MAX_ELEMS 16384
#endif
/* Rows whose later passes re-read more than a block's shared memory holds are
 * split over the blocks of a thread-block cluster (2, 4 or 8, the fewest
 * whose parts fit), each keeping its part in shared memory; the row's
 * reductions are combined through distributed shared memory. The row is then
 * read from memory once (cross entropy fwd+bwd f32 at V = 128256 re-read it:
 * 49.5% of copy). 0 turns it off. */
#ifndef CLUSTER_ROWS
#define CLUSTER_ROWS 1
#endif
/* A cluster's part of the row kept in at most this many bytes of a block's
 * shared memory where some cluster of up to 8 blocks allows it (0: no limit,
 * the fewest blocks whose parts fit). A part of 128 KiB holds one block of
 * 1024 threads an SM, so the SM reads only in pass 1 and computes only in pass
 * 2; parts of 64 KiB in blocks of 512 let two blocks an SM overlap the two.
 * The model (docs/perf.md v41): a bf16 row's pass 2 is issue-bound on the
 * H200, whose memory is 1.4x the H100's, and its clusters ran at 79-85% of
 * copy where the H100's run at 93-97%. On an H100, 65536 is 3-6% slower
 * wherever it changes the plan (v42); off until an H200 has timed it, and then
 * a rule of the card's bytes an SM clock rather than a switch. */
#ifndef CLUSTER_PART_BYTES
#define CLUSTER_PART_BYTES 0
#endif
/* 1: CLUSTER_PART_BYTES also holds for a row that fits one block's shared
 * memory whole (a bf16 row of 128 KiB then goes to a cluster of 2 of 64 KiB
 * parts, two blocks an SM); 0: only rows that need a cluster anyway. */
#ifndef CLUSTER_PART_ONE_BLOCK
#define CLUSTER_PART_ONE_BLOCK 0
#endif
/* The row reductions' cluster barrier released by the slot writer's warp only,
 * the other warps arriving relaxed (fu_cluster_sync_slots): in the cross
 * entropy's cluster kernels 7-8% of the warps' stall samples waited on the
 * release's ERRBAR, in every warp (docs/perf.md v40). On an H100 it took 4-5%
 * off the clusters of 4 and 8 and 2-3% off those of 2 (v41). 0 turns it off. */
#ifndef CLUSTER_RELAXED_ARRIVE
#define CLUSTER_RELAXED_ARRIVE 1
#endif
#define STATIC_SHARED_BYTES 1024 /* fu_smem, fu_last and fu_next, rounded up */
/* Column reductions: the blocks' partials are combined by the last block of
 * each group of COL_GROUP_BLOCKS blocks, then the groups' by the last group;
 * each thread keeps at most COL_MAX_ACC accumulators (registers). */
#ifndef COL_GROUP_BLOCKS
#define COL_GROUP_BLOCKS 16
#endif
#define COL_MAX_ACC 16 /* (32 spilled the bf16 layer norm backward at C = 4096 under 64 registers) */
#ifndef COL_BLOCKS_PER_SM
#define COL_BLOCKS_PER_SM 4 /* fewer blocks: fewer partials to combine */
#endif
#ifndef COL_MIN_THREADS
#define COL_MIN_THREADS 256 /* ... and blocks of at least these threads */
#endif
/* ... except where fewer threads, a multiple of a warp and at least
 * COL_FEWEST_THREADS, cover the row in as many iterations: no idle threads
 * (a bf16 row of 768 is 96 vectors: 160 of 256 threads idle), and a thread's
 * vectors, the prefetch they allow and its accumulators stay as they were.
 * Norm backward at 65536 x 768 (docs/perf.md v23): bf16 layer norm 156.6 ->
 * 115.3 us in blocks of 128, f32 184.4 -> 160.6 in blocks of 192.
 * COL_WARP_THREADS 0 keeps the block a power of two. The blocks an SM then
 * hold COL_THREADS_PER_SM threads (at least COL_BLOCKS_PER_SM blocks). */
#ifndef COL_FEWEST_THREADS
#define COL_FEWEST_THREADS 128
#endif
#ifndef COL_WARP_THREADS
#define COL_WARP_THREADS 1
#endif
#define COL_THREADS_PER_SM (COL_BLOCKS_PER_SM * COL_MIN_THREADS)
/* Column partials combined by all the grid's blocks between two grid-wide
 * barriers (a cooperative launch), not by last blocks: 1; 0 the last blocks. */
#ifndef COL_GRID_SYNC
#define COL_GRID_SYNC 1
#endif
/* A thread's partials of consecutive columns stored 16 bytes at a time (a
 * float4 of 4 columns), not element by element: a warp's store then fills
 * whole 32-byte sectors in two instructions instead of eight partial ones.
 * 0 stores each element. */
#ifndef COL_PARTIAL_VEC_STORES
#define COL_PARTIAL_VEC_STORES 1
#endif
/* The grid form's level 1: each column's group partials in this many runs of
 * consecutive groups, a lane each, the runs' sums then added across the lanes
 * in a fixed tree (deterministic). One thread a column took a round trip to L2
 * for every COL_COMBINE_CHUNK groups, serially (66 groups: 5). A power of two
 * up to 32; 1 adds a column's groups in one thread, in group order. */
#ifndef COL_LEVEL1_RUNS
#define COL_LEVEL1_RUNS 8
#endif
/* Partials of a column the combine loads at once (registers a column reduction). */
#ifndef COL_COMBINE_CHUNK
#define COL_COMBINE_CHUNK 16
#endif

/* RK_COL: a reduction of a full-size value over the outer axes (a column sum
 * of a row kernel: dweight and dbias of a norm backward), accumulated by each
 * thread at its own row positions in registers over the block's rows, then
 * combined over the blocks (COL_GROUP_BLOCKS, two levels of last blocks). */
typedef enum rkind { RK_ROW, RK_ROWGRID, RK_GRID_PRO, RK_GRID_EPI, RK_COL } rkind;
typedef enum batch_max_kind { BM_NONE, BM_REGISTER, BM_PACKED_BF16 } batch_max_kind;
/* How a batch slot's row positions are guarded: not at all (the batches
 * cover the row exactly), by the row's length, or by the end of this block's
 * part of a cluster's row (fu_kend). */
typedef enum slot_guard { GUARD_NONE, GUARD_ROW, GUARD_PART } slot_guard;

#define MAX_PASSES (MAX_REDS + 2) /* a chain of row reductions, then the outputs: at most nred + 1 */
#define MAX_OUTS 16               /* outputs of each class (per row, scalar, per column, per pass) */

typedef struct red_info {
    int node;
    fu_tensor out, in;
    fu_op op;
    rkind kind;
    int pass;
    int online_max; /* sum(exp(E - m)) computed with max m: index of m, else -1 */
    int online_sum; /* for that max: index of its sum, else -1 */
    bool const_shift; /* online sum: terms exp(E - shift), shift a bound of E (LSE_CONST_SHIFT) */
    bool shift_only;  /* const_shift, and the max is not reduced: it holds the shift (LSE_SHIFT_ONLY) */
    double shift;
    bool poly_exp;    /* const_shift: some lanes' exps run on the FMA pipe (POLY_EXP_EIGHTHS) */
    int grid_slot;  /* RK_GRID_EPI, RK_ROWGRID: its partial's index among the grid reductions; else -1 */
    int64_t col_ws, col_ws_groups; /* RK_COL: where its block partials [grid][K] and its groups'
                                    * [groups][K] start in the workspace (8-byte slots); else -1 */
} red_info;

/* A list of tensors (what a row computes up front, in walk order). */
typedef struct tensor_list {
    int n, cap;
    fu_tensor *t;
} tensor_list;

/* One pass over the row, as decided before any text is written. */
typedef struct red_pass {
    int nstage;                     /* inputs loaded a batch ahead of the arithmetic (staged) */
    fu_tensor stage_t[MAX_CACHE];
    int batch;                      /* vectors per batch slot loop */
    bool halves;                    /* loaded in two halves, one ahead (STAGE_HALVES) */
    fu_tensor miss_cmp;             /* a position compare the vector work is split on (VECTOR_MISS), or -1 */
    fu_tensor unswitch;             /* a per-row condition the pass's loop is written for twice (ROW_UNSWITCH), or -1 */
    bool from_slots;                /* every staged input comes from the shared-memory slots */
    slot_guard guard;
    bool unrolled;                  /* #pragma unroll (registers indexed by the position), else unroll 1 */
    int nout;                       /* full-size outputs written in this pass */
    fu_tensor out_t[MAX_OUTS];
    batch_max_kind batch_max[MAX_REDS]; /* per online sum of the pass: how phase M reads its source */
    int batch_max_k[MAX_REDS];          /* ... from staged array fu_s<k> or cached array fu_c<k> */
    bool batch_max_staged[MAX_REDS];
    tensor_list hoist;              /* per-row values computed after this pass (pass 0: when the row starts) */
} red_pass;

/* The row scheduler's decisions: what fu_reduction_emit writes the kernel
 * from. It holds the analysis too (the reductions, their kinds and passes,
 * each tensor's reductions), which the emitter walks. */
typedef struct red_params {
    /* the group: the domain D, its inner (reduced) axes, and its reductions */
    int rank;
    int64_t D[FU_MAX_RANK];
    bool inner[FU_MAX_RANK];
    int64_t rows, K;
    int nred;
    red_info reds[MAX_REDS];
    uint32_t *deps; /* per tensor: reductions reached without passing one */
    int *seen;      /* per tensor, in one walk of the graph (walk_begin): 1 + the
                     * smallest depth it was reached at so far, 0 = not reached */
    int nparams;    /* the kernel's parameters, in fu_kw_begin's order */
    fu_tensor param_t[64];
    bool param_out[64];
    /* the block */
    int vec, threads, iters, passes;
    bool aligned_rows;  /* vectors from each row's first aligned element, its edges element by element (ALIGNED_ROWS) */
    int warp_rows;      /* rows of a block at once, a warp each (WARP_ROWS), or 1: the block's threads a row */
    int cluster;        /* blocks a row is split over (CLUSTER_ROWS), or 1 */
    int64_t K_part;     /* a block's part of the row: K, or K / cluster rounded up to vectors */
    int nslots;         /* distributed-shared-memory slots per row (the row reductions), with cluster > 1 */
    int block_threads;  /* threads * warp_rows */
    const char *tid;    /* the thread's index within its row: "threadIdx.x" or "fu_lane" */
    int elem_bytes;     /* size of the widest full-size tensor's element */
    int ncol;           /* column reductions (RK_COL) */
    int nonline;        /* online log-sum-exps */
    bool mufu_rows;     /* a row reduction's elements need a transcendental first (MUFU_ROW_ITERS) */
    /* the row kept between passes: in registers, or in shared memory */
    int ncache;
    fu_tensor cache_t[MAX_CACHE];
    /* values computed in one pass and kept in registers for later passes (KEEP_VALUES) */
    int nkeep;
    fu_tensor keep_t[MAX_KEEP];
    int keep_pass[MAX_KEEP]; /* the pass that computes it */
    int nsmem;
    fu_tensor smem_t[MAX_CACHE];
    int smem_slot_bytes[MAX_CACHE]; /* one thread's vector of it */
    int64_t smem_offset[MAX_CACHE]; /* where its slots start in fu_rows */
    int64_t smem_bytes;             /* all slots of the block */
    /* the passes (1 .. passes) */
    bool first_batch_early; /* pass 1's first batch is loaded before the per-row values (ROW_LOADS_FIRST) */
    bool row_prefetch;      /* ... and the next row's during this row's later work (ROW_PREFETCH_BYTES) */
    int nrow_ahead;         /* ... with these per-row inputs (ROW_PREFETCH_SCALARS) */
    fu_tensor row_ahead_t[MAX_ROW_AHEAD];
    int ninvariant;         /* per-column inputs loaded once into registers (ROW_INVARIANT_BYTES) */
    fu_tensor invariant_t[MAX_INVARIANT];
    red_pass pass[MAX_PASSES];
    /* the outputs */
    bool full_out; /* a full-size output */
    int nrow_out, nscalar_out, ncol_out; /* scalar_out: no row value read; one element, or a few */
    fu_tensor row_out[MAX_OUTS], scalar_out[MAX_OUTS], col_out[MAX_OUTS]; /* (FU_TAIL_OUT_MAX_ELEMS) */
    int nsingle_out;             /* rows == 1: outputs of any other shape, element by element */
    fu_tensor single_out[MAX_OUTS]; /* by the row's block after its passes */
    int nfree_out;               /* outputs of another shape that read no row or grid-wide value: */
    fu_tensor free_out[MAX_OUTS]; /* element by element over the grid, before the rows */
    bool scalars_block0; /* block 0 writes the scalar outputs (else the last block to finish, or none) */
    /* the grid */
    int ngrid;          /* grid reductions (RK_GRID_EPI, RK_ROWGRID) */
    int blocks_per_sm;
    int min_blocks;     /* the launch bounds' minimum blocks per SM */
    int64_t grid;
    bool queue;         /* rows from the queue (ROW_QUEUE) */
    int64_t partials;   /* grid reductions: one partial per row (queue) or per block */
    int64_t col_groups; /* groups of COL_GROUP_BLOCKS blocks, with column reductions */
    bool grid_sync;     /* column reductions combined over the whole grid (COL_GRID_SYNC) */
    int64_t col_ws_counters; /* where the groups' counters start (8-byte slots) */
    bool workspace;     /* the kernel takes fu_ws and fu_count */
    size_t workspace_bytes;
} red_params;

static int red_of(const red_params *p, fu_tensor t)
{
    for (int i = 0; i < p->nred; i++)
        if (p->reds[i].out == t) return i;
    return -1;
}

/* Index of t among the inputs kept in shared memory between passes, or -1. */
static int smem_index(const red_params *p, fu_tensor t)
{
    for (int k = 0; k < p->nsmem; k++)
        if (p->smem_t[k] == t) return k;
    return -1;
}

static bool is_full_shape(const red_params *p, const fu_value *v)
{
    return v->rank == p->rank && !memcmp(v->shape, p->D, (size_t)p->rank * sizeof *v->shape);
}

/* A full-size value stored permuted: output t is permute(u, dims) of a tensor u of the domain's
 * shape, with the innermost axis left in place (a QK norm's [B, T, H, D] -> [B, H, T, D]), so
 * that each element is stored where the permute puts it and a row's vectors stay contiguous;
 * a permute that moves the innermost axis would store a lane a row (its own kernel, the
 * transpose scheduler's, stages such stores). Returns u, and in dims the axis of u that each
 * axis of t is, or -1. */
static fu_tensor permuted_source(const red_params *p, const fu_group *g, fu_tensor t, int *dims)
{
    const fu_fusion *f = g->f;
    const fu_node *n = fu_producer(f, t);
    if (!PERMUTED_OUTPUTS || !n || n->op != FU_OP_PERMUTE || !g->in_group[n - f->nodes] || is_full_shape(p, fu_val(f, t)) ||
        !is_full_shape(p, fu_val(f, n->inputs[0])) || n->attrs.perm[p->rank - 1] != p->rank - 1)
        return -1;
    for (int a = 0; dims && a < p->rank; a++) dims[a] = n->attrs.perm[a];
    return n->inputs[0];
}

/* An input the group reads only through reshapes to the domain's shape (`x.view(-1, D)` of a
 * contiguous [B, T, D] input): the same elements in the same order as an input of the domain's
 * shape, so it is loaded, staged and kept between passes as one (at the domain's offsets), where
 * the row cache, keyed on inputs of that shape, read it again in each pass. */
static bool is_row_view_input(const red_params *p, const fu_group *g, fu_tensor t)
{
    const fu_fusion *f = g->f;
    const fu_value *v = fu_val(f, t);
    if (!ROW_VIEW_INPUTS || is_full_shape(p, v) || (v->producer >= 0 && g->in_group[v->producer])) return false;
    int64_t dense[FU_MAX_RANK];
    fu_shape_contiguous_strides(v->rank, v->shape, dense);
    for (int a = 0; a < v->rank; a++)
        if (v->shape[a] != 1 && v->strides[a] != dense[a]) return false;
    bool read = false;
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        for (int k = 0; g->in_group[i] && k < n->ninputs; k++) {
            if (n->inputs[k] != t) continue;
            if (n->op != FU_OP_RESHAPE || !is_full_shape(p, fu_val(f, n->output))) return false;
            read = true;
        }
    }
    return read;
}

/* An input read at the row position: of the domain's shape, or a view of it (is_row_view_input). */
static bool is_row_input(const red_params *p, const fu_group *g, fu_tensor t)
{
    return is_full_shape(p, fu_val(g->f, t)) || is_row_view_input(p, g, t);
}

/* Whether output t is written in the passes: of the domain's shape, or permuted from it. */
static bool is_full_output(const red_params *p, const fu_group *g, fu_tensor t)
{
    return is_full_shape(p, fu_val(g->f, t)) || permuted_source(p, g, t, NULL) >= 0;
}

/* The tensor whose value at the row position output t stores: t, or what it permutes. */
static fu_tensor output_source(const red_params *p, const fu_group *g, fu_tensor t)
{
    fu_tensor u = permuted_source(p, g, t, NULL);
    return u >= 0 ? u : t;
}

/* Whether a tensor t is per-row (constant along the inner axes); with c, also
 * its index at the current row in idx. */
static bool row_index(const red_params *p, const cg_ctx *c, const fu_value *t, cg_index *idx)
{
    if (t->rank <= p->rank) {
        bool ok = true;
        for (int a = 0; a < t->rank && ok; a++) {
            int da = p->rank - t->rank + a;
            if (t->shape[a] == 1) {
                if (c) cg_index_const(&idx[a], 0);
            } else if (p->inner[da] || t->shape[a] != p->D[da]) {
                ok = false;
            } else if (c) {
                cg_index_var(&idx[a], da, c->var_names[da]);
            }
        }
        if (ok) return true;
    }
    /* squeezed form: the non-1 extents are the outer extents in order ([N] for [N, 1]) */
    int oa[FU_MAX_RANK], no = 0;
    for (int a = 0; a < p->rank; a++)
        if (!p->inner[a] && p->D[a] != 1) oa[no++] = a;
    int k = 0;
    for (int a = 0; a < t->rank; a++) {
        if (t->shape[a] == 1) {
            if (c) cg_index_const(&idx[a], 0);
            continue;
        }
        if (k >= no || t->shape[a] != p->D[oa[k]]) return false;
        if (c) cg_index_var(&idx[a], oa[k], c->var_names[oa[k]]);
        k++;
    }
    return k == no;
}

/* A grid reduction adds its per-row input once a row. Where that input lacks
 * some row axes (a [31] value on rows of [31, 31]: broadcast over the others),
 * only the rows at 0 on those axes add it, so each element counts once: the
 * condition into buf ("" where every row axis is the input's). */
static void once_per_element(const red_params *p, const cg_ctx *c, const fu_value *x, char *buf, size_t n)
{
    cg_index idx[FU_MAX_RANK];
    buf[0] = '\0';
    if (!row_index(p, c, x, idx)) return;
    size_t len = 0;
    for (int da = 0; da < p->rank; da++) {
        if (p->inner[da] || p->D[da] == 1) continue;
        bool covered = false;
        for (int a = 0; a < x->rank; a++) covered |= idx[a].coef[da] != 0;
        if (!covered && len < n)
            len += (size_t)snprintf(buf + len, n - len, "%s%s == 0", len ? " && " : "", c->var_names[da]);
    }
}

/* A per-row output: as row_index, or with the outer axes in another order
 * ([2, 100] for rows of [100, 2], a permute after the reduction): each non-1
 * axis takes the first unused outer axis of its extent. Where that is not how
 * the output's values were computed, the kernel's register lookups fail and
 * the group is split, as it was before; where they succeed, the value at each
 * index is the output's (cg_value follows the ops' index maps). */
static bool row_out_index(const red_params *p, const cg_ctx *c, const fu_value *t, cg_index *idx)
{
    if (row_index(p, c, t, idx)) return true;
    bool used[FU_MAX_RANK] = {false};
    int matched = 0, nouter = 0;
    for (int d = 0; d < p->rank; d++) nouter += !p->inner[d] && p->D[d] != 1;
    for (int a = 0; a < t->rank; a++) {
        if (t->shape[a] == 1) {
            if (c) cg_index_const(&idx[a], 0);
            continue;
        }
        int m = -1;
        for (int d = 0; d < p->rank && m < 0; d++)
            if (!p->inner[d] && !used[d] && p->D[d] == t->shape[a]) m = d;
        if (m < 0) return false;
        used[m] = true;
        matched++;
        if (c) cg_index_var(&idx[a], m, c->var_names[m]);
    }
    return matched == nouter;
}

/* Whether t is per-column (the inner axes' extents, the outer ones 1 or left
 * out); with c, also its index at the current column (the inner variables). */
static bool col_index(const red_params *p, const cg_ctx *c, const fu_value *t, cg_index *idx)
{
    if (t->rank == p->rank) {
        for (int a = 0; a < t->rank; a++) {
            if (t->shape[a] == 1) {
                if (c) cg_index_const(&idx[a], 0);
            } else if (!p->inner[a] || t->shape[a] != p->D[a]) {
                return false;
            } else if (c) {
                cg_index_var(&idx[a], a, c->var_names[a]);
            }
        }
        return true;
    }
    int ia[FU_MAX_RANK], ni = 0;
    for (int a = 0; a < p->rank; a++)
        if (p->inner[a]) ia[ni++] = a;
    if (t->rank != ni) return false;
    for (int k = 0; k < ni; k++) {
        if (t->shape[k] != p->D[ia[k]]) return false;
        if (!c) continue;
        if (t->shape[k] == 1) cg_index_const(&idx[k], 0);
        else cg_index_var(&idx[k], ia[k], c->var_names[ia[k]]);
    }
    return true;
}

static uint32_t deps_of(const red_params *p, fu_tensor t) { return p->deps[t]; }

/* E of an online sum(exp(E - max(E))) ri: what its max and its terms read. */
static fu_tensor online_source(const fu_fusion *f, const red_info *ri)
{
    return fu_producer(f, fu_producer(f, ri->in)->inputs[0])->inputs[0];
}

/* Whether computing t in group g takes the MUFU pipe: an op of its cone
 * inside the group that codegen writes as a transcendental. One walk over the
 * group's ops in their (topological) order, so shared operands cost once. */
static bool cone_uses_mufu(const fu_group *g, fu_tensor t)
{
    const fu_fusion *f = g->f;
    const fu_node *last = fu_producer(f, t);
    if (!last || !g->in_group[last - f->nodes]) return false;
    bool *mufu = calloc((size_t)f->nvalues, sizeof *mufu);
    if (!mufu) return false;
    for (int i = 0; i <= (int)(last - f->nodes); i++) {
        const fu_node *n = &f->nodes[i];
        if (!g->in_group[i]) continue;
        bool m = n->op == FU_OP_EXP || n->op == FU_OP_LOG || n->op == FU_OP_LOG1P || n->op == FU_OP_SQRT ||
                 n->op == FU_OP_RSQRT || n->op == FU_OP_TANH || n->op == FU_OP_SIGMOID || n->op == FU_OP_POW;
        for (int k = 0; k < n->ninputs && !m; k++) m = mufu[n->inputs[k]];
        mufu[n->output] = m;
    }
    bool r = mufu[t];
    free(mufu);
    return r;
}

/* How many times nodes read t, all of them inside the group (a node that reads
 * it twice counts twice; *first: the first of them), or -1 where t leaves the
 * group or a node outside it reads t. */
static int readers_in_group(const fu_group *g, fu_tensor t, const fu_node **first)
{
    const fu_fusion *f = g->f;
    for (int o = 0; o < g->noutputs; o++)
        if (g->outputs[o] == t) return -1;
    int n = 0;
    for (int i = 0; i < f->nnodes; i++)
        for (int k = 0; k < f->nodes[i].ninputs; k++) {
            if (f->nodes[i].inputs[k] != t) continue;
            if (!g->in_group[i]) return -1;
            if (n++ == 0 && first) *first = &f->nodes[i];
        }
    return n;
}

/* The one node of the group that reads t, once, or NULL. */
static const fu_node *sole_reader(const fu_group *g, fu_tensor t)
{
    const fu_node *only = NULL;
    return readers_in_group(g, t, &only) == 1 ? only : NULL;
}

/* Whether the online log-sum-exp ri (sum(exp(E - m)), m = max(E): mx) is read
 * only as lse = log(sum) + m and m only there and by its own terms: then the
 * row's max changes nothing but rounding once the terms take a constant shift
 * (LSE_SHIFT_ONLY). Each link must have that one reader inside the group. */
static bool max_read_only_by_lse(const fu_group *g, const red_info *ri, const red_info *mx)
{
    const fu_fusion *f = g->f;
    const fu_node *ex = fu_producer(f, ri->in), *sub = fu_producer(f, ex->inputs[0]);
    if (sole_reader(g, ex->output) != fu_producer(f, ri->out) || sole_reader(g, sub->output) != ex) return false;
    const fu_node *lg = sole_reader(g, ri->out);
    if (!lg || lg->op != FU_OP_LOG) return false;
    const fu_node *lse = sole_reader(g, lg->output);
    if (!lse || lse->op != FU_OP_ADD) return false;
    fu_tensor other = lse->inputs[0] == lg->output ? lse->inputs[1] : lse->inputs[0];
    if (other != mx->out) return false;
    const fu_node *next = sub; /* up the broadcasts from the sub to m: each read by the next alone */
    fu_tensor m = sub->inputs[1];
    while (m != mx->out) {
        const fu_node *b = fu_producer(f, m);
        if (!b || b->op != FU_OP_BROADCAST || sole_reader(g, m) != next) return false;
        next = b;
        m = b->inputs[0];
    }
    return readers_in_group(g, mx->out, NULL) == 2; /* the lse's add, and the sub or its first broadcast */
}

/* An online log-sum-exp ri over a bounded E: the constant shift and how
 * lanes may take the polynomial exp (LSE_CONST_SHIFT, POLY_EXP_EIGHTHS). */
static void plan_const_shift(const fu_group *g, red_info *ri, const red_info *mx)
{
    double lo, hi;
    fu_tensor e = online_source(g->f, ri);
    if (!LSE_CONST_SHIFT || !fu_value_range(g->f, e, &lo, &hi) || hi - lo > LSE_CONST_SHIFT_SPAN ||
        fmax(fabs(lo), fabs(hi)) > LSE_CONST_SHIFT_MAX_ABS)
        return;
    ri->const_shift = true;
    ri->shift = hi;
    ri->poly_exp = cone_uses_mufu(g, e);
    ri->shift_only = LSE_SHIFT_ONLY && max_read_only_by_lse(g, ri, mx);
}

/* Lanes of each vector whose exp term runs on the FMA pipe: none where a
 * vector has fewer than 4 (an odd row would take every term so). */
static int poly_lanes(const red_params *p, const red_info *ri)
{
    return p->vec >= 4 && ri->poly_exp ? p->vec * POLY_EXP_EIGHTHS / 8 : 0;
}

/* Pass in which a full-size output is written: after the row reductions it reads. */
static int output_pass(const red_params *p, fu_tensor t)
{
    int n = 1;
    uint32_t d = deps_of(p, t);
    for (int i = 0; i < p->nred; i++)
        if ((d & (1u << i)) && p->reds[i].pass + 1 > n) n = p->reds[i].pass + 1;
    return n;
}

static bool row_kind(rkind k) { return k == RK_ROW || k == RK_ROWGRID; }
static bool grid_kind(rkind k) { return k == RK_GRID_EPI || k == RK_ROWGRID; }

/* ------------------------------------------------------------ analysis */

static bool analyse(red_params *p, const fu_group *g, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    /* the domain: the input of the reductions that keep some axes */
    int first_partial = -1, largest_full = -1;
    bool first_inner = false; /* first_partial reduces the innermost axis */
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (!g->in_group[i] || fu_op_kind_of(n->op) != FU_KIND_REDUCE) continue;
        if (p->nred == MAX_REDS) {
            snprintf(why, nwhy, "reduction: more than %d reductions", MAX_REDS);
            return false;
        }
        const fu_value *x = fu_val(f, n->inputs[0]);
        red_info *ri = &p->reds[p->nred++];
        memset(ri, 0, sizeof *ri);
        ri->node = i;
        ri->out = n->output;
        ri->in = n->inputs[0];
        ri->op = n->op;
        ri->online_max = ri->online_sum = -1;
        ri->grid_slot = -1;
        ri->col_ws = ri->col_ws_groups = -1;
        bool full = n->attrs.naxes == 0 || n->attrs.naxes == x->rank;
        bool inner_reduced = n->attrs.naxes == 0;
        for (int k = 0; k < n->attrs.naxes; k++) inner_reduced |= n->attrs.axes[k] == x->rank - 1;
        /* the rows run along the innermost axis: a column reduction found first
         * does not make the columns the rows */
        if (!full && (first_partial < 0 || (inner_reduced && !first_inner))) {
            first_partial = p->nred - 1;
            first_inner = inner_reduced;
        }
        if (full && x->rank >= 1 &&
            (largest_full < 0 || fu_shape_numel(x->rank, x->shape) >
                                     fu_tensor_numel(f, p->reds[largest_full].in)))
            largest_full = p->nred - 1;
    }
    if (p->nred == 0) {
        snprintf(why, nwhy, "reduction: no reductions");
        return false;
    }
    if (first_partial >= 0) {
        const fu_node *n = &f->nodes[p->reds[first_partial].node];
        const fu_value *x = fu_val(f, n->inputs[0]);
        p->rank = x->rank;
        memcpy(p->D, x->shape, sizeof x->shape);
        for (int k = 0; k < n->attrs.naxes; k++) p->inner[n->attrs.axes[k]] = true;
    } else if (largest_full >= 0) {
        const fu_value *x = fu_val(f, p->reds[largest_full].in);
        p->rank = x->rank;
        memcpy(p->D, x->shape, sizeof x->shape);
        /* rows of the last axis of extent > 1 (with the unit axes after it),
         * then across rows; a small tensor is one row */
        int last = x->rank - 1;
        while (last > 0 && x->shape[last] == 1) last--;
        if (fu_shape_numel(x->rank, x->shape) <= FULL_ONE_ROW_MAX_ELEMS) last = 0;
        for (int a = last; a < x->rank; a++) p->inner[a] = true;
    } else {
        snprintf(why, nwhy, "reduction: only reductions of scalars");
        return false;
    }
    p->rows = p->K = 1;
    for (int a = 0; a < p->rank; a++) {
        if (p->inner[a]) p->K *= p->D[a];
        else p->rows *= p->D[a];
    }
    /* classify */
    for (int i = 0; i < p->nred; i++) {
        red_info *ri = &p->reds[i];
        const fu_node *n = &f->nodes[ri->node];
        const fu_value *x = fu_val(f, ri->in);
        bool full = n->attrs.naxes == 0 || n->attrs.naxes == x->rank;
        if (is_full_shape(p, x) && !full) {
            bool same = true;
            bool red[FU_MAX_RANK] = {false};
            for (int k = 0; k < n->attrs.naxes; k++) red[n->attrs.axes[k]] = true;
            bool opposite = true;
            for (int a = 0; a < p->rank; a++) {
                same &= red[a] == p->inner[a];
                opposite &= red[a] == !p->inner[a];
            }
            if (opposite && !same) {
                ri->kind = RK_COL;
                continue;
            }
            if (!same) {
                snprintf(why, nwhy, "reduction: '%s' reduces other axes than the row reductions", x->name);
                return false;
            }
            ri->kind = RK_ROW;
        } else if (is_full_shape(p, x) && full) {
            ri->kind = p->rows == 1 ? RK_ROW : RK_ROWGRID; /* one row: the grid is the row */
        } else if (full) {
            if (!row_index(p, NULL, x, NULL)) {
                snprintf(why, nwhy, "reduction: '%s' is neither a row nor a per-row value", x->name);
                return false;
            }
            ri->kind = RK_GRID_EPI;
        } else {
            snprintf(why, nwhy, "reduction: '%s' does not fit the row domain", fu_val(f, ri->out)->name);
            return false;
        }
    }
    /* dependencies: which reductions each tensor reads without passing through one */
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (!g->in_group[i]) continue;
        int ri = red_of(p, n->output);
        if (ri >= 0) {
            p->deps[n->output] = 1u << ri;
            continue;
        }
        uint32_t d = 0;
        for (int k = 0; k < n->ninputs; k++) d |= p->deps[n->inputs[k]];
        p->deps[n->output] = d;
    }
    /* online softmax: sum(exp(E - m)) with m = max(E) over the same row */
    for (int i = 0; i < p->nred; i++) {
        red_info *ri = &p->reds[i];
        /* the online state is float (f32, f16, bf16 rows); f64 rows take two passes */
        if (ri->op != FU_OP_SUM || ri->kind != RK_ROW || strcmp(cg_compute_type(fu_val(f, ri->out)->dtype), "float") != 0)
            continue;
        const fu_node *e = fu_producer(f, ri->in);
        if (!e || e->op != FU_OP_EXP || !g->in_group[e - f->nodes]) continue;
        const fu_node *sub = fu_producer(f, e->inputs[0]);
        if (!sub || sub->op != FU_OP_SUB || !g->in_group[sub - f->nodes]) continue;
        fu_tensor m = sub->inputs[1];
        const fu_node *mb = fu_producer(f, m);
        while (mb && mb->op == FU_OP_BROADCAST && g->in_group[mb - f->nodes]) {
            m = mb->inputs[0];
            mb = fu_producer(f, m);
        }
        int mi = red_of(p, m);
        if (mi < 0 || p->reds[mi].op != FU_OP_RMAX || p->reds[mi].kind != RK_ROW || p->reds[mi].in != sub->inputs[0] ||
            p->reds[mi].online_sum >= 0 || !is_full_shape(p, fu_val(f, sub->inputs[0])))
            continue;
        ri->online_max = mi;
        p->reds[mi].online_sum = i;
        plan_const_shift(g, ri, &p->reds[mi]);
    }
    for (int i = 0; i < p->nred; i++) { /* the elements a row reduction takes: the lse's source, else its input */
        const red_info *ri = &p->reds[i];
        if (ri->kind == RK_ROW && ri->online_sum < 0)
            p->mufu_rows |= cone_uses_mufu(g, ri->online_max >= 0 ? online_source(f, ri) : ri->in);
    }
    /* grid reductions needed inside the row loop go to the prologue */
    uint32_t row_bits = 0;
    for (int i = 0; i < p->nred; i++)
        if (p->reds[i].kind == RK_ROW || p->reds[i].kind == RK_ROWGRID) row_bits |= 1u << i;
    uint32_t needed_in_rows = 0;
    for (int i = 0; i < p->nred; i++)
        if (p->reds[i].kind != RK_GRID_EPI) needed_in_rows |= deps_of(p, p->reds[i].in);
    for (int o = 0; o < g->noutputs; o++) {
        const fu_value *v = fu_val(f, g->outputs[o]);
        bool per_row = row_out_index(p, NULL, v, NULL) && (fu_shape_numel(v->rank, v->shape) > 1 || p->rows == 1);
        if (is_full_output(p, g, g->outputs[o]) || per_row || p->rows == 1) needed_in_rows |= deps_of(p, g->outputs[o]);
    }
    for (int i = 0; i < p->nred; i++) {
        red_info *ri = &p->reds[i];
        if (ri->kind != RK_GRID_EPI) continue;
        bool in_rows = needed_in_rows & (1u << i);
        bool row_free = !(deps_of(p, ri->in) & row_bits);
        if (in_rows && row_free) ri->kind = RK_GRID_PRO;
    }
    /* a prologue reduction may only read earlier prologue reductions */
    for (int i = 0; i < p->nred; i++) {
        red_info *ri = &p->reds[i];
        uint32_t d = deps_of(p, ri->in);
        for (int j = 0; j < p->nred; j++) {
            if (!(d & (1u << j))) continue;
            rkind kj = p->reds[j].kind;
            if (ri->kind == RK_GRID_PRO && kj != RK_GRID_PRO) {
                snprintf(why, nwhy, "reduction: '%s' is needed by every row but depends on a row value", fu_val(f, ri->out)->name);
                return false;
            }
            if ((ri->kind == RK_ROW || ri->kind == RK_ROWGRID) && (kj == RK_GRID_EPI || kj == RK_ROWGRID)) {
                snprintf(why, nwhy, "reduction: row reduction '%s' needs the grid-wide '%s'", fu_val(f, ri->out)->name,
                         fu_val(f, p->reds[j].out)->name);
                return false;
            }
            if (ri->kind == RK_GRID_EPI && (kj == RK_GRID_EPI || kj == RK_ROWGRID)) {
                snprintf(why, nwhy, "reduction: '%s' needs another grid-wide reduction", fu_val(f, ri->out)->name);
                return false;
            }
            if (kj == RK_COL || (ri->kind == RK_COL && kj != RK_ROW && kj != RK_GRID_PRO)) {
                snprintf(why, nwhy, "reduction: '%s' reads '%s', a column or grid-wide reduction", fu_val(f, ri->out)->name,
                         fu_val(f, p->reds[j].out)->name);
                return false;
            }
        }
    }
    /* passes: a row reduction runs after the row reductions it reads */
    for (int i = 0; i < p->nred; i++) {
        red_info *ri = &p->reds[i];
        if (ri->kind != RK_ROW && ri->kind != RK_ROWGRID) continue;
        uint32_t d = deps_of(p, ri->online_max >= 0 ? online_source(f, ri) : ri->in);
        int np = 1;
        for (int j = 0; j < i; j++)
            if ((d & (1u << j)) && p->reds[j].pass + 1 > np) np = p->reds[j].pass + 1;
        for (int j = i; j < p->nred; j++)
            if (d & (1u << j)) {
                snprintf(why, nwhy, "reduction: '%s' reads a later reduction", fu_val(f, ri->out)->name);
                return false;
            }
        if (ri->online_max >= 0) np = p->reds[ri->online_max].pass;
        ri->pass = np;
        if (np > p->passes) p->passes = np;
    }
    if (p->passes == 0) p->passes = 1;
    /* column reductions accumulate in the pass after the row values they read */
    for (int i = 0; i < p->nred; i++)
        if (p->reds[i].kind == RK_COL) {
            p->reds[i].pass = output_pass(p, p->reds[i].in);
            if (p->reds[i].pass > p->passes) p->passes = p->reds[i].pass;
            p->ncol++;
        }
    /* full-size outputs are written in the pass after the row values they read */
    for (int o = 0; o < g->noutputs; o++)
        if (is_full_output(p, g, g->outputs[o])) {
            int np = output_pass(p, g->outputs[o]);
            if (np > p->passes) p->passes = np;
        }
    return true;
}


/* ------------------------------------------------------------ heuristics */

/* Starts a walk of the graph from one root: no tensor reached yet. The walks
 * below follow a DAG whose tensors can be reached along many paths (x1 =
 * add(x0, x0), x2 = add(x1, x1), ...: 2^depth paths), so each visits a tensor
 * again only when it reaches it at a smaller depth than before. A visit at a
 * smaller depth goes at least as deep under the depth caps, so skipping the
 * others changes nothing: reads_at_row answers the same, hoist_walk lists the
 * same values first (repeated ones hit the emitter's memo). */
static void walk_begin(const red_params *p, const fu_fusion *f) { memset(p->seen, 0, (size_t)f->nvalues * sizeof *p->seen); }

/* Whether the walk should visit t at `depth` (first time, or shallower than
 * before); records the depth. */
static bool walk_visit(const red_params *p, fu_tensor t, int depth)
{
    if (p->seen[t] && p->seen[t] - 1 <= depth) return false;
    p->seen[t] = depth + 1;
    return true;
}

static bool reads_at_row_walk(const red_params *p, const fu_group *g, fu_tensor from, fu_tensor t, int depth)
{
    const fu_fusion *f = g->f;
    if (from == t) return true;
    if (depth > 256 || red_of(p, from) >= 0) return false;
    if (!walk_visit(p, from, depth)) return false; /* that visit went as deep and found no t */
    const fu_node *n = fu_producer(f, from);
    if (!n || !g->in_group[n - f->nodes]) return false;
    fu_op_kind k = fu_op_kind_of(n->op);
    bool keeps_index = k == FU_KIND_UNARY || k == FU_KIND_BINARY || k == FU_KIND_WHERE || k == FU_KIND_CAST ||
                       k == FU_KIND_HINT || k == FU_KIND_BROADCAST ||
                       (k == FU_KIND_RESHAPE && fu_val(f, n->inputs[0])->rank == fu_val(f, from)->rank &&
                        !memcmp(fu_val(f, n->inputs[0])->shape, fu_val(f, from)->shape,
                                sizeof(int64_t) * (size_t)fu_val(f, from)->rank)) ||
                       (k == FU_KIND_RESHAPE && is_full_shape(p, fu_val(f, from)) && is_row_view_input(p, g, n->inputs[0]));
    if (!keeps_index) return false;
    for (int i = 0; i < n->ninputs; i++)
        if (reads_at_row_walk(p, g, n->inputs[i], t, depth + 1)) return true;
    return false;
}

/* Does the pass read full-size input t at the row position (through ops that
 * keep the index: pointwise, cast, where, broadcast, same-shape reshape)? */
static bool reads_at_row(const red_params *p, const fu_group *g, fu_tensor from, fu_tensor t)
{
    walk_begin(p, g->f);
    return reads_at_row_walk(p, g, from, t, 0);
}

/* Full-size outputs written in this pass. */
static int pass_outputs(const red_params *p, const fu_group *g, int pass, fu_tensor *out, int cap)
{
    int n = 0;
    for (int o = 0; o < g->noutputs && n < cap; o++)
        if (is_full_output(p, g, g->outputs[o]) && output_pass(p, g->outputs[o]) == pass)
            out[n++] = g->outputs[o];
    return n;
}

/* Does the pass read full-size input t at the row position (its row
 * reductions or the full-size outputs it writes)? */
static bool pass_reads(const red_params *p, const fu_group *g, int pass, fu_tensor t)
{
    for (int q = 0; q < p->nred; q++) {
        const red_info *ri = &p->reds[q];
        if (ri->pass != pass || (ri->kind != RK_ROW && ri->kind != RK_ROWGRID && ri->kind != RK_COL)) continue;
        if (reads_at_row(p, g, ri->online_max >= 0 ? online_source(g->f, ri) : ri->in, t)) return true;
    }
    fu_tensor outs[MAX_OUTS];
    int nout = pass_outputs(p, g, pass, outs, MAX_OUTS);
    for (int o = 0; o < nout; o++)
        if (reads_at_row(p, g, output_source(p, g, outs[o]), t)) return true;
    return false;
}

/* Whether a later pass reads full-size input t again. */
static bool read_later(const red_params *p, const fu_group *g, fu_tensor t)
{
    for (int q = 2; q <= p->passes; q++)
        if (pass_reads(p, g, q, t)) return true;
    return false;
}

/* VECTOR_MISS: the first position compare of the group (cg_is_position_compare)
 * whose value the pass reads at the row position, where the pass works in
 * vectors along the last axis; -1 where none. */
static fu_tensor choose_vector_miss(const red_params *p, const fu_group *g, int pass)
{
    const fu_fusion *f = g->f;
    if (!VECTOR_MISS || p->vec < 2) return -1;
    for (int i = 0; i < f->nnodes; i++) {
        fu_tensor t = f->nodes[i].output;
        if (g->in_group[i] && is_full_shape(p, fu_val(f, t)) && cg_is_position_compare(f, t) && pass_reads(p, g, pass, t))
            return t;
    }
    return -1;
}

/* The reductions whose values are final once pass `pass` is done (0: before
 * the first): the grid prologue's, and the row reductions of passes 1 .. pass. */
static uint32_t ready_after(const red_params *p, int pass)
{
    uint32_t ready = 0;
    for (int i = 0; i < p->nred; i++)
        if (p->reds[i].kind == RK_GRID_PRO || (pass > 0 && p->reds[i].kind == RK_ROW && p->reds[i].pass <= pass))
            ready |= 1u << i;
    return ready;
}

/* ROW_UNSWITCH: the condition of the first full-size `where` the pass reads
 * at the row position whose condition is a bool of one value a row, computed
 * from what is known before the pass (no reduction of this pass or a later
 * one); -1 where none. */
static fu_tensor choose_unswitch(const red_params *p, const fu_group *g, int pass)
{
    const fu_fusion *f = g->f;
    if (!ROW_UNSWITCH) return -1;
    const uint32_t ready = ready_after(p, pass - 1);
    for (int i = 0; i < f->nnodes; i++) {
        const fu_node *n = &f->nodes[i];
        if (!g->in_group[i] || fu_op_kind_of(n->op) != FU_KIND_WHERE || !is_full_shape(p, fu_val(f, n->output))) continue;
        const fu_value *cv = fu_val(f, n->inputs[0]);
        if (cv->dtype != FU_BOOL || is_full_shape(p, cv) || !row_index(p, NULL, cv, NULL) || (p->deps[n->inputs[0]] & ~ready))
            continue;
        if (pass_reads(p, g, pass, n->output)) return n->inputs[0];
    }
    return -1;
}

/* The inputs a pass reads at the row position and that are not in the
 * register cache: loaded a batch ahead of the arithmetic (staged). Pass 1
 * stages the inputs kept in shared memory first, read or not, since it fills
 * their slots (at most MAX_CACHE of them, so they always fit). */
static void choose_staged(const red_params *p, const fu_group *g, int pass, red_pass *ps)
{
    ps->nstage = 0;
    if (pass == 1)
        for (int k = 0; k < p->nsmem; k++) ps->stage_t[ps->nstage++] = p->smem_t[k];
    for (int i = 0; i < p->nparams && ps->nstage < MAX_CACHE; i++) {
        fu_tensor t = p->param_t[i];
        if (p->param_out[i] || !is_row_input(p, g, t)) continue;
        bool cached = false;
        for (int k = 0; k < p->ncache; k++) cached |= p->cache_t[k] == t;
        if (cached || (pass == 1 && smem_index(p, t) >= 0)) continue;
        if (pass_reads(p, g, pass, t)) ps->stage_t[ps->nstage++] = t;
    }
}

/* How phase M reads an online source: not at all (the source is computed
 * from the row, so phase M would compute it twice and keep both copies live:
 * the bf16 primitives kernel spilled), as the staged or cached f32 element
 * itself (a register; a bf16 one converted where the vector is odd), or as
 * the packed pairs of a staged or cached bf16 input converted to f32 (two
 * elements per max); *k and *staged say which array. */
static batch_max_kind batch_max_source(const red_params *p, const fu_fusion *f, const red_info *ri, const red_pass *ps,
                                       int *k, bool *staged)
{
    fu_tensor e = online_source(f, ri), t = e;
    *k = -1;
    *staged = false;
    if (ri->shift_only) return BM_NONE;
    const fu_node *cast = fu_producer(f, e);
    if (cast && cast->op == FU_OP_CAST) t = cast->inputs[0];
    const fu_value *tv = fu_val(f, t);
    *k = -1;
    *staged = false;
    if (fu_val(f, e)->dtype != FU_F32 || !is_full_shape(p, tv)) return BM_NONE;
    int j = 0;
    while (j < ps->nstage && ps->stage_t[j] != t) j++;
    bool st = j < ps->nstage;
    if (!st) {
        j = 0;
        while (j < p->ncache && p->cache_t[j] != t) j++;
        if (j == p->ncache) return BM_NONE;
    }
    if (tv->dtype == FU_F32) return BM_REGISTER;
    if (tv->dtype != FU_BF16) return BM_NONE;
    /* an odd vector (vec 1: an odd row length) has no pairs: each staged
     * element, converted (ODD_VECTOR_BATCH_MAX) */
    if (p->vec % 2) return ODD_VECTOR_BATCH_MAX ? BM_REGISTER : BM_NONE;
    *k = j;
    *staged = st;
    return BM_PACKED_BF16;
}

/* What pass `pass` loads, in batches of how many vectors, how its slots are
 * guarded, and how its online maxes read their sources. */
/* Bytes a staged vector of elem_bytes elements counts as: at least a register. */
static int vector_register_bytes(const red_params *p, int elem_bytes)
{
    int bytes = p->vec * elem_bytes;
    return NARROW_VECTOR_REGISTER && bytes < 4 ? 4 : bytes; /* it takes a register */
}

static void plan_pass(red_params *p, const fu_group *g, int pass)
{
    red_pass *ps = &p->pass[pass];
    choose_staged(p, g, pass, ps);
    /* With a register cache the whole pass is one batch (its arrays must be
     * indexed by constants after unrolling); else batches of stage_iters:
     * STAGE_BYTES from memory in flight where the row is read once, or by the
     * pass that fills the shared-memory slots; ROW_SMEM_BATCH vectors where
     * every staged input comes from those slots; else STAGE_ELEMS_MULTIPASS
     * elements. */
    ps->from_slots = pass > 1 && ps->nstage > 0;
    for (int k = 0; k < ps->nstage; k++) ps->from_slots &= smem_index(p, ps->stage_t[k]) >= 0;
    int vec_bytes = vector_register_bytes(p, p->elem_bytes);
    int stage_iters = p->passes == 1 || (p->nsmem && pass == 1) ? STAGE_BYTES / vec_bytes
                      : ps->from_slots                          ? ROW_SMEM_BATCH
                                                                : STAGE_ELEMS_MULTIPASS / p->vec;
    if (stage_iters < 1) stage_iters = 1;
    bool row_regs = p->ncache > 0 || p->nkeep > 0; /* registers indexed by the position */
    int batch = row_regs ? p->iters : (p->iters < stage_iters ? p->iters : stage_iters);
    if (batch < 1) batch = 1;
    ps->batch = batch;
    /* A slot's work is guarded by the row length unless the batches cover the
     * row exactly (no branches in the unrolled passes: less code for NVRTC,
     * fewer instructions: bf16 forward 147 -> 144 us). Kept where the row
     * stays in registers between passes: without the branches ptxas spilled
     * the bf16 fused cross entropy (152 bytes; 312 -> 404 us). */
    int64_t covered = (int64_t)((p->iters + batch - 1) / batch) * batch * p->threads * p->vec;
    bool exact = covered == p->K_part && p->K_part * p->cluster == p->K && !p->aligned_rows; /* (whole vectors vary by row) */
    ps->guard = p->cluster > 1 && (!exact || row_regs) ? GUARD_PART : !exact || row_regs ? GUARD_ROW : GUARD_NONE;
    /* unrolled where registers are indexed by the position: the row cache, the kept values, the
     * column accumulators */
    bool col_pass = false;
    for (int i = 0; i < p->nred; i++) col_pass |= p->reds[i].kind == RK_COL && p->reds[i].pass == pass;
    ps->unrolled = row_regs || col_pass;
    /* pass 1 only, whose first half is loaded before the row's values (ROW_LOADS_FIRST); a later
     * pass would load its first half before its loop, a form no GPU has run yet */
    ps->halves = STAGE_HALVES && ROW_LOADS_FIRST && pass == 1 && p->mufu_rows && !ps->unrolled && ps->nstage > 0 &&
                 !p->nsmem && batch % 2 == 0 && p->iters > batch;
    ps->nout = pass_outputs(p, g, pass, ps->out_t, MAX_OUTS);
    ps->miss_cmp = choose_vector_miss(p, g, pass);
    ps->unswitch = choose_unswitch(p, g, pass);
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        ps->batch_max[i] = BM_NONE;
        ps->batch_max_k[i] = -1;
        ps->batch_max_staged[i] = false;
        if (ri->pass == pass && ri->online_max >= 0)
            ps->batch_max[i] = batch_max_source(p, g->f, ri, ps, &ps->batch_max_k[i], &ps->batch_max_staged[i]);
    }
}

static bool list_push(tensor_list *l, fu_tensor t)
{
    if (fu_grow((void **)&l->t, &l->cap, l->n + 1, sizeof *l->t)) return false;
    l->t[l->n++] = t;
    return true;
}

/* Per-row values that need no reduction beyond `ready` (the target id, the
 * logit it picks, the row mask; after a pass, a row's log-sum-exp from its max
 * and sum) are computed when they can be, once a row, so their loads are in
 * flight during the pass instead of after the block reduction: listed in walk
 * order. */
static bool hoist_walk(red_params *p, const fu_group *g, tensor_list *l, fu_tensor t, uint32_t ready, int depth)
{
    if (depth > 64 || red_of(p, t) >= 0) return true;
    if (!walk_visit(p, t, depth)) return true; /* that visit listed all this one would */
    const fu_value *v = fu_val(g->f, t);
    if ((p->deps[t] & ~ready) == 0) {
        if (!is_full_shape(p, v) && row_index(p, NULL, v, NULL) && !list_push(l, t)) return false;
        if (!is_full_shape(p, v)) return true;
    }
    const fu_node *n = fu_producer(g->f, t);
    if (!n || !g->in_group[n - g->f->nodes]) return true;
    for (int k = 0; k < n->ninputs; k++)
        if (!hoist_walk(p, g, l, n->inputs[k], ready, depth + 1)) return false;
    return true;
}

static bool hoist_from(red_params *p, const fu_group *g, tensor_list *l, fu_tensor t, uint32_t ready)
{
    walk_begin(p, g->f);
    return hoist_walk(p, g, l, t, ready, 0);
}

/* HOIST_PASS_AHEAD: the hoist point (0: when the row starts, q: after pass q)
 * of a root's per-row values that nothing needs before the passes are done
 * (need: passes + 1; a per-row or scalar output, a grid sum of per-row values):
 * in a cluster's row, before the last pass, and only what was ready a pass
 * earlier (loads, not their consumers). Else 0. */
static int first_hoist(const red_params *p, int need)
{
    return HOIST_PASS_AHEAD && p->cluster > 1 && p->passes >= 2 && need > p->passes ? p->passes - 1 : 0;
}

/* The reductions a root's walk at hoist point `pass` may use: those final by
 * then, or at a later first hoist (first_hoist > 0) those final a pass earlier. */
static uint32_t root_ready(const red_params *p, int pass, int first)
{
    return pass == first && first > 0 ? ready_after(p, first - 1) : ready_after(p, pass);
}

/* The values hoisted when the row starts (pass 0: the prologue's reductions
 * are known) and after each pass but the last (every row reduction of the
 * passes so far: what the emitter has made available by then). A root (an
 * output, a reduction's input) is walked from its first_hoist on. */
static bool plan_hoists(red_params *p, const fu_group *g)
{
    bool ok = true;
    for (int pass = 0; pass < p->passes && ok; pass++) {
        tensor_list *l = &p->pass[pass].hoist;
        for (int o = 0; o < g->noutputs && ok; o++) {
            fu_tensor t = g->outputs[o];
            int first = first_hoist(p, is_full_output(p, g, t) ? output_pass(p, t) : p->passes + 1);
            if (pass >= first) ok = hoist_from(p, g, l, output_source(p, g, t), root_ready(p, pass, first));
        }
        for (int i = 0; i < p->nred && ok; i++) {
            const red_info *ri = &p->reds[i];
            int first = ri->kind == RK_GRID_EPI ? first_hoist(p, p->passes + 1) : 0;
            if (ri->kind == RK_GRID_PRO || !(pass == first || (pass > first && ri->pass > pass))) continue;
            ok = hoist_from(p, g, l, ri->in, root_ready(p, pass, first));
        }
    }
    return ok;
}

/* With ROW_CACHE_SMEM the inputs chosen for the register cache are kept in
 * shared memory instead, if their slots fit in what the device gives a block
 * (else they stay in registers). */
/* Whether the inputs chosen for the cache go to shared memory: a row of a few
 * vectors a thread stays in registers, its passes unrolled to a few lines,
 * with no shared-memory store and reload (not beside column accumulators:
 * layer norm bwd at 4096 went from 131 to 162 us, f32). */
static bool cache_in_smem(const red_params *p, const fu_fusion *f)
{
    if (!ROW_CACHE_SMEM || p->ncache == 0) return false;
    if (p->warp_rows > 1 && p->threads == 32) { /* WARP_ROW_REGISTER_BYTES (a warp a row; not L lanes a row) */
        int64_t bytes = 0;
        for (int k = 0; k < p->ncache; k++)
            bytes += (int64_t)p->iters * p->vec * (int64_t)fu_dtype_size(fu_val(f, p->cache_t[k])->dtype);
        if (bytes > WARP_ROW_REGISTER_BYTES) return true;
    }
    return !(p->iters <= REGISTER_ROW_ITERS && p->ncol == 0);
}

/* Bytes of shared memory the chosen inputs' slots take. */
static int64_t smem_cache_bytes(const red_params *p, const fu_group *g)
{
    int64_t total = 0;
    for (int k = 0; k < p->ncache; k++) {
        total += (int64_t)p->iters * p->block_threads * (int)fu_dtype_size(fu_val(g->f, p->cache_t[k])->dtype) * p->vec;
        total = (total + 15) / 16 * 16;
    }
    return total;
}

static void choose_smem_cache(red_params *p, const fu_group *g)
{
    if (!cache_in_smem(p, g->f)) return;
    int64_t total = 0;
    for (int k = 0; k < p->ncache; k++) {
        p->smem_slot_bytes[k] = (int)fu_dtype_size(fu_val(g->f, p->cache_t[k])->dtype) * p->vec;
        p->smem_offset[k] = total;
        total += (int64_t)p->iters * p->block_threads * p->smem_slot_bytes[k];
        total = (total + 15) / 16 * 16;
    }
    if (total + STATIC_SHARED_BYTES > g->opts->max_shared_per_block) return;
    for (int k = 0; k < p->ncache; k++) p->smem_t[k] = p->cache_t[k];
    p->nsmem = p->ncache;
    p->ncache = 0;
    p->smem_bytes = total;
}

/* Whether t is made by the group's arithmetic: not an input, a constant, or
 * a view or cast of one (those cost a register read or nothing again). */
static bool computed_in_group(const red_params *p, const fu_group *g, fu_tensor t)
{
    const fu_fusion *f = g->f;
    for (int depth = 0; depth < 64; depth++) {
        for (int i = 0; i < p->nparams; i++)
            if (p->param_t[i] == t && !p->param_out[i]) return false;
        const fu_node *n = fu_producer(f, t);
        if (!n || !g->in_group[n - f->nodes]) return false;
        fu_op_kind k = fu_op_kind_of(n->op);
        if (k == FU_KIND_FULL || k == FU_KIND_IOTA) return false;
        if (k != FU_KIND_BROADCAST && k != FU_KIND_RESHAPE && k != FU_KIND_PERMUTE && k != FU_KIND_SLICE &&
            k != FU_KIND_HINT && k != FU_KIND_CAST)
            return true;
        t = n->inputs[0];
    }
    return false;
}

/* Keeps t, computed in `pass`, for the later passes that read it at the row
 * position, while its registers fit the budget. */
static void keep_candidate(red_params *p, const fu_group *g, fu_tensor t, int pass, int64_t *budget)
{
    const fu_value *v = fu_val(g->f, t);
    int64_t bytes = (int64_t)p->iters * p->vec * 4;
    if (p->nkeep == MAX_KEEP || !is_full_shape(p, v) || strcmp(cg_compute_type(v->dtype), "float") || bytes > *budget)
        return;
    for (int k = 0; k < p->nkeep; k++)
        if (p->keep_t[k] == t) return;
    if (!computed_in_group(p, g, t)) return;
    bool later = false;
    for (int q = pass + 1; q <= p->passes && !later; q++) later = pass_reads(p, g, q, t);
    if (!later) return;
    *budget -= bytes;
    p->keep_t[p->nkeep] = t;
    p->keep_pass[p->nkeep++] = pass;
}

/* KEEP_VALUES: the values each pass keeps for the later ones, where the passes
 * are unrolled over a few vectors a thread (not with a cluster, column
 * accumulators or the row in shared memory, whose passes stay rolled loops). */
static void choose_kept_values(red_params *p, const fu_group *g)
{
    p->nkeep = 0;
    if (!KEEP_VALUES || p->passes < 2 || p->cluster > 1 || p->ncol > 0 || p->nsmem > 0) return;
    int64_t budget = KEEP_BYTES, cached = 0;
    for (int k = 0; k < p->ncache; k++)
        cached += (int64_t)p->iters * p->vec * (int64_t)fu_dtype_size(fu_val(g->f, p->cache_t[k])->dtype);
    if (CACHE_BYTES - cached < budget) budget = CACHE_BYTES - cached; /* (the row's registers, all told) */
    for (int pass = 1; pass < p->passes; pass++) {
        for (int i = 0; i < p->nred; i++) {
            const red_info *ri = &p->reds[i];
            if (ri->pass != pass || !row_kind(ri->kind) || ri->online_sum >= 0) continue;
            keep_candidate(p, g, ri->online_max >= 0 ? online_source(g->f, ri) : ri->in, pass, &budget);
        }
        fu_tensor outs[MAX_OUTS];
        int nout = pass_outputs(p, g, pass, outs, MAX_OUTS);
        for (int o = 0; o < nout; o++) keep_candidate(p, g, outs[o], pass, &budget);
    }
}

static int log2_int(int pow2)
{
    int n = 0;
    while ((1 << n) < pow2) n++;
    return n;
}

/* Threads and vectors a thread for a row part of `vecs` vectors (see choose_config). */
static int row_threads(const red_params *p, int64_t vecs)
{
    int per_thread = p->passes >= 2 ? CACHED_ROW_ITERS : p->mufu_rows ? MUFU_ROW_ITERS : STREAMED_ROW_ITERS;
    int max_threads = p->passes >= 2 ? 1024 : 512;
    int threads = 32;
    while (threads < max_threads && (int64_t)threads * per_thread < vecs) threads *= 2;
    return threads;
}

/* Bytes a row position holds of the full-size inputs a later pass reads. */
static int64_t later_elem_bytes(const red_params *p, const fu_group *g)
{
    int64_t elem_bytes = 0;
    for (int i = 0; i < p->nparams; i++) {
        const fu_value *v = fu_val(g->f, p->param_t[i]);
        if (p->param_out[i] || !is_row_input(p, g, p->param_t[i])) continue;
        if (read_later(p, g, p->param_t[i])) elem_bytes += (int64_t)fu_dtype_size(v->dtype);
    }
    return elem_bytes;
}

/* REGISTER_ROW_THREADS: the threads, from `threads`, that keep the row's
 * inputs a later pass reads in registers at REGISTER_ROW_ITERS vectors a
 * thread, or `threads` where no block of up to REGISTER_ROW_MAX_THREADS does. */
static int register_row_threads(const red_params *p, const fu_group *g, int threads, int64_t vecs)
{
    int64_t elem_bytes = later_elem_bytes(p, g);
    int t = threads;
    while (t < REGISTER_ROW_MAX_THREADS && (vecs + t - 1) / t > REGISTER_ROW_ITERS) t *= 2;
    int64_t iters = (vecs + t - 1) / t;
    if (elem_bytes == 0 || iters > REGISTER_ROW_ITERS || iters * p->vec * elem_bytes > CACHE_BYTES) return threads;
    return t;
}

/* The blocks (1, 2, 4, 8) of the first cluster whose parts of the row fit:
 * in a block's registers or shared memory (`room`), and a cluster's parts in
 * `part_limit` bytes where that is not 0 (a whole row in one block too, with
 * CLUSTER_PART_ONE_BLOCK). 0 where none fits. */
static int fewest_cluster_blocks(const red_params *p, const fu_group *g, int64_t elem_bytes, int64_t part_limit,
                                 int64_t *part_out)
{
    const int64_t room = g->opts->max_shared_per_block - STATIC_SHARED_BYTES - 2 * MAX_REDS * 16;
    for (int C = 1; C <= g->opts->max_cluster && C <= 8; C *= 2) {
        int64_t part = (p->K + C - 1) / C;
        part = (part + p->vec - 1) / p->vec * p->vec;
        int64_t vecs = part / p->vec;
        int threads = row_threads(p, vecs);
        int64_t iters = (vecs + threads - 1) / threads;
        if (iters > CACHED_ROW_ITERS) continue; /* (a thread's slots: the register budget's rows) */
        int64_t bytes = iters * threads * p->vec * elem_bytes;
        if (part_limit > 0 && bytes > part_limit && (C > 1 || CLUSTER_PART_ONE_BLOCK)) continue;
        if (C == 1 && iters * p->vec * elem_bytes <= CACHE_BYTES) return 1; /* one block's registers hold the row */
        if (bytes + 16 * MAX_CACHE > room) continue;
        *part_out = part;
        return C;
    }
    return 0;
}

/* CLUSTER_ROWS: the fewest blocks (2, 4, 8) a row is split over so that each
 * block's part of the inputs a later pass reads again fits its shared memory
 * (and CLUSTER_PART_BYTES where a cluster allows it), where the whole row does
 * not; else 1. */
static void choose_cluster(red_params *p, const fu_group *g)
{
    p->cluster = 1;
    p->K_part = p->K;
    /* (not for rows read one element at a time, an odd vocabulary: a cluster's part
     * of 7 scalars a thread keeps too few bytes in flight: bf16 4093 x 50257 fwd+bwd
     * took 2114 us in clusters of 8, 588 us re-reading the row) */
    if (!CLUSTER_ROWS || p->passes < 2 || p->ncol > 0 || g->opts->max_cluster < 2 || p->vec == 1) return;
    int64_t elem_bytes = later_elem_bytes(p, g);
    if (elem_bytes == 0) return;
    int64_t part = p->K;
    int C = fewest_cluster_blocks(p, g, elem_bytes, CLUSTER_PART_BYTES, &part);
    if (C == 0 && CLUSTER_PART_BYTES > 0) C = fewest_cluster_blocks(p, g, elem_bytes, 0, &part);
    if (C < 2 || p->rows < 2 || p->K < 2 * C * p->vec) return;
    p->cluster = C;
    p->K_part = part;
}

/* The full-size inputs a later pass reads, in parameter order, while their
 * vectors of a thread fit `budget` bytes (all of a cluster's: its parts are
 * sized to fit shared memory). */
static void choose_cached_inputs(red_params *p, const fu_group *g, int64_t budget)
{
    p->ncache = 0;
    for (int i = 0; i < p->nparams && p->ncache < MAX_CACHE; i++) {
        const fu_value *v = fu_val(g->f, p->param_t[i]);
        int64_t bytes = (int64_t)p->iters * p->vec * (int64_t)fu_dtype_size(v->dtype);
        if (p->param_out[i] || !is_row_input(p, g, p->param_t[i]) || (bytes > budget && p->cluster == 1)) continue;
        if (!read_later(p, g, p->param_t[i])) continue;
        budget -= bytes;
        p->cache_t[p->ncache++] = p->param_t[i];
    }
}

/* The blocks a row kernel has at least: one a row, up to an SM each. */
static int64_t free_out_blocks(const red_params *p, const fu_group *g)
{
    return p->rows < g->opts->sm_count ? p->rows : g->opts->sm_count;
}

/* COL_FEWEST_THREADS: the fewest threads, down to COL_FEWEST_THREADS, that
 * cover a row of vecs vectors in the iterations threads take. */
static int col_row_threads(int threads, int64_t vecs)
{
    int64_t iters = (vecs + threads - 1) / threads;
    if (COL_WARP_THREADS) {
        int64_t fewest = ((vecs + iters - 1) / iters + 31) / 32 * 32;
        if (fewest < COL_FEWEST_THREADS) fewest = COL_FEWEST_THREADS;
        return fewest < threads ? (int)fewest : threads;
    }
    while (threads / 2 >= COL_FEWEST_THREADS && (vecs + threads / 2 - 1) / (threads / 2) == iters) threads /= 2;
    return threads;
}

static void choose_config(red_params *p, const fu_group *g)
{
    const fu_fusion *f = g->f;
    /* vector width from the widest full-size tensor in memory */
    size_t widest = 0;
    for (int i = 0; i < p->nparams; i++) {
        const fu_value *v = fu_val(f, p->param_t[i]);
        if ((is_full_output(p, g, p->param_t[i]) || is_row_view_input(p, g, p->param_t[i])) &&
            fu_dtype_size(v->dtype) > widest)
            widest = fu_dtype_size(v->dtype);
    }
    p->vec = widest ? (int)(16 / widest) : 4;
    p->elem_bytes = widest ? (int)widest : 4;
    /* A vector's lanes are consecutive positions of the last axis, so it must be
     * reduced; where the row spans more axes ([13, 16, 7, 8] reduced whole), a
     * vector that divides the last one never leaves it (VEC_INNER_AXES). Aligned
     * rows shift the position by elements of the row, so they need the row to be
     * the last axis alone. */
    bool row_is_last_axis = p->inner[p->rank - 1] && p->D[p->rank - 1] == p->K;
    if (!p->inner[p->rank - 1] || (!VEC_INNER_AXES && !row_is_last_axis)) p->vec = 1;
    p->aligned_rows = ALIGNED_ROWS && row_is_last_axis && p->vec > 1 && p->K % p->vec && p->ncol == 0 &&
                      p->K >= ALIGNED_ROWS_MIN_VECS * p->vec &&
                      (p->rows >= g->opts->sm_count || p->K >= ALIGNED_FEW_ROWS_MIN_VECS * p->vec);
    while (!p->aligned_rows && p->vec > 1 && p->D[p->rank - 1] % p->vec) p->vec /= 2;
    /* A row's vectors over the threads: 8 iterations each where the row is
     * kept between passes (1024 threads hold 32 KiB-float rows),
     * else 16, at most 512 threads, so more rows are in flight per SM. */
    choose_cluster(p, g);
    p->nslots = p->cluster > 1 ? p->nred : 0;
    int64_t vecs = (p->K_part + p->vec - 1) / p->vec;
    int threads = row_threads(p, vecs);
    /* with column reductions, blocks of COL_MIN_THREADS at least (fewer blocks,
     * fewer partials) and no more accumulators than COL_MAX_ACC a thread, then
     * the fewest warps that take as many iterations (COL_FEWEST_THREADS) */
    if (p->ncol > 0) {
        while (threads < 1024 && (threads < COL_MIN_THREADS || (int64_t)p->ncol * ((vecs + threads - 1) / threads) * p->vec > COL_MAX_ACC))
            threads *= 2;
        threads = col_row_threads(threads, vecs);
    }
    if (REGISTER_ROW_THREADS && p->passes >= 2 && p->ncol == 0 && p->cluster == 1 && threads > 32)
        threads = register_row_threads(p, g, threads, vecs);
    /* a single row's other outputs: a thread an element, up to 1024; the outputs written
     * over the grid: at most FREE_OUT_ITERS elements a thread of the min(rows, SMs)
     * blocks there are at least (one block of 128 threads took 13 us for 2673) */
    for (int o = 0; o < p->nsingle_out; o++) {
        const fu_value *v = fu_val(f, p->single_out[o]);
        while (threads < 1024 && threads < fu_shape_numel(v->rank, v->shape)) threads *= 2;
    }
    for (int o = 0; o < p->nfree_out; o++) {
        const fu_value *v = fu_val(f, p->free_out[o]);
        while (threads < 1024 && (int64_t)threads * free_out_blocks(p, g) * FREE_OUT_ITERS < fu_shape_numel(v->rank, v->shape))
            threads *= 2;
    }
    if (p->cluster == 1)
        while (threads < 1024 && vecs > (threads < FEW_ROWS_MIN_THREADS ? threads : (int64_t)threads * FEW_ROWS_ITERS) &&
               p->rows * threads * 2 <= (int64_t)g->opts->sm_count * FEW_ROWS_THREADS_PER_SM)
            threads *= 2;
    /* a warp a row where one warp holds it, with enough rows for two blocks an SM;
     * rows shorter than a warp's vectors take L lanes each, 32 / L rows a warp */
    p->warp_rows = 1;
    if (threads == 32 && p->ncol == 0 && p->cluster == 1) {
        if (SHORT_ROW_LANES && vecs < 32 && p->rows > 1 && p->nsingle_out == 0 && p->nfree_out == 0) {
            int lanes = 1;
            while (lanes < vecs) lanes *= 2;
            /* packing rows pays only where the rows' lanes overfill the GPU; on an idle one a
             * lane's serial vectors are latency (fz_7_103: 5 rows of 16 on 4 lanes, 5.9 -> 7.1 us) */
            if (p->rows * lanes > (int64_t)g->opts->sm_count * FEW_ROWS_THREADS_PER_SM)
                for (lanes = 1; lanes * SHORT_ROW_ITERS < vecs || (lanes == 1 && vecs > 1);) lanes *= 2;
            threads = lanes;
            p->warp_rows = 32 / lanes;
            while (p->warp_rows * lanes < WARP_ROWS * 32 && p->rows >= (int64_t)p->warp_rows * 2 * 2 * g->opts->sm_count)
                p->warp_rows *= 2;
        } else {
            for (int wr = WARP_ROWS; wr > 1 && p->warp_rows == 1; wr /= 2)
                if (p->rows >= (int64_t)wr * 2 * g->opts->sm_count) p->warp_rows = wr;
        }
    }
    p->threads = threads;
    p->iters = (int)((vecs + threads - 1) / threads);
    p->block_threads = threads * p->warp_rows;
    p->tid = p->warp_rows > 1 ? "fu_lane" : "threadIdx.x";
    /* cache the full-size inputs a later pass reads, if they fit: SMEM_CACHE_BYTES
     * a thread where they go to shared memory and its slots fit, else CACHE_BYTES */
    if (p->passes >= 2) {
        choose_cached_inputs(p, g, SMEM_CACHE_BYTES);
        if (!cache_in_smem(p, g->f) || smem_cache_bytes(p, g) + STATIC_SHARED_BYTES > g->opts->max_shared_per_block)
            choose_cached_inputs(p, g, CACHE_BYTES);
    }
    choose_smem_cache(p, g);
    choose_kept_values(p, g);
}

/* The outputs: per row (written by one thread after the passes), scalar
 * (after the grid reductions), per column (after the column reductions), or
 * full-size (in the passes). */
static bool classify_outputs(red_params *p, const fu_group *g, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    uint32_t epi_bits = 0, col_bits = 0, row_bits = 0, pro_bits = 0;
    for (int i = 0; i < p->nred; i++) {
        if (grid_kind(p->reds[i].kind)) epi_bits |= 1u << i;
        if (p->reds[i].kind == RK_GRID_PRO) pro_bits |= 1u << i;
        if (p->reds[i].kind == RK_COL) col_bits |= 1u << i;
        if (p->reds[i].kind == RK_ROW) row_bits |= 1u << i;
    }
    if (col_bits && (epi_bits || p->K <= 1)) {
        snprintf(why, nwhy, "reduction: column reductions with grid-wide reductions or rows of one element");
        return false;
    }
    for (int o = 0; o < g->noutputs; o++) {
        fu_tensor t = g->outputs[o];
        const fu_value *v = fu_val(f, t);
        uint32_t d = p->deps[t];
        if (d & col_bits) { /* per column, after the columns are combined */
            if (is_full_shape(p, v) || !col_index(p, NULL, v, NULL) || (d & row_bits) || p->ncol_out == MAX_OUTS ||
                fu_shape_numel(v->rank, v->shape) != p->K) {
                int ci = 0;
                while (ci < p->nred && !((d & col_bits) & (1u << ci))) ci++;
                snprintf(why, nwhy, "reduction: '%s' reduces other axes than the row reductions, and output '%s' "
                         "reads it but is not one value per column", fu_val(f, p->reds[ci].out)->name, v->name);
                return false;
            }
            p->col_out[p->ncol_out++] = t;
        } else if (is_full_output(p, g, t)) { /* (permuted: stored where the permute puts each element) */
            p->full_out = true;
            if (d & epi_bits) {
                snprintf(why, nwhy, "reduction: full-size output '%s' needs a grid-wide value", v->name);
                return false;
            }
        } else if (!(d & epi_bits) && row_out_index(p, NULL, v, NULL) && p->nrow_out < MAX_OUTS &&
                   (fu_shape_numel(v->rank, v->shape) > 1 || p->rows == 1)) {
            p->row_out[p->nrow_out++] = t;
        } else if (fu_shape_numel(v->rank, v->shape) == 1 && p->nscalar_out < MAX_OUTS) {
            if (d & row_bits) {
                snprintf(why, nwhy, "reduction: scalar output '%s' reads a row value", v->name);
                return false;
            }
            p->scalar_out[p->nscalar_out++] = t;
        } else if (!(d & ~pro_bits) && p->nfree_out < MAX_OUTS &&
                   fu_shape_numel(v->rank, v->shape) <= (int64_t)1024 * FREE_OUT_ITERS * free_out_blocks(p, g)) {
            /* reads only the inputs and the prologue's reductions: any shape, by every
             * block before its rows (docs/segments.md cause B), at most FREE_OUT_ITERS
             * elements for each thread of 1024 of the blocks there are at least; a larger
             * one gets a kernel of its own, where every SM takes part */
            p->free_out[p->nfree_out++] = t;
        } else if (p->rows == 1 && !(d & epi_bits) && p->nsingle_out < MAX_OUTS &&
                   fu_shape_numel(v->rank, v->shape) <= SINGLE_ROW_MAX_ELEMS) {
            /* one row: its values are the same at every index, so any output reading them can
             * be written after the passes by the row's block */
            p->single_out[p->nsingle_out++] = t;
        } else if (!(d & row_bits) && fu_shape_numel(v->rank, v->shape) <= FU_TAIL_OUT_MAX_ELEMS &&
                   p->nscalar_out < MAX_OUTS) {
            p->scalar_out[p->nscalar_out++] = t; /* a few elements of the grid's values, with the scalars */
        } else {
            snprintf(why, nwhy, "reduction: output '%s' fits neither the rows nor a scalar", v->name);
            return false;
        }
    }
    return true;
}

/* Groups of COL_GROUP_BLOCKS blocks whose partials the group's last block combines. */
static int64_t col_groups(int64_t grid) { return (grid + COL_GROUP_BLOCKS - 1) / COL_GROUP_BLOCKS; }

/* The grid, the blocks an SM holds, the row queue and the workspace. */
static void choose_grid(red_params *p, const fu_group *g)
{
    const fu_plan_options *o = g->opts;
    for (int i = 0; i < p->nred; i++) {
        p->ngrid += grid_kind(p->reds[i].kind);
        p->nonline += p->reds[i].online_max >= 0;
    }
    int blocks_per_sm = o->max_threads_per_sm / p->block_threads;
    /* at least min_threads threads per SM (1024: registers capped at 64); with rows in
     * shared memory, no more blocks than that and than the slots that fit on
     * an SM (with the driver's reserve and the static shared memory of each):
     * one wave, all resident (a cap of 40 registers for 3 blocks of 512
     * spilled the bf16 fused kernel) */
    const int min_threads = p->mufu_rows ? MUFU_ROWS_MIN_THREADS : 1024;
    int min_blocks = p->block_threads < min_threads ? min_threads / p->block_threads : 1;
    if (p->nsmem) {
        int64_t fit = o->max_shared_per_sm / (p->smem_bytes + o->reserved_shared_per_block + STATIC_SHARED_BYTES);
        blocks_per_sm = min_blocks;
        if (blocks_per_sm > fit) blocks_per_sm = (int)fit;
        min_blocks = blocks_per_sm;
    }
    if (blocks_per_sm < 1) blocks_per_sm = 1;
    if (min_blocks < 1) min_blocks = 1;
    if (p->ncol > 0) {
        int col_blocks = COL_THREADS_PER_SM / p->block_threads;
        if (col_blocks < COL_BLOCKS_PER_SM) col_blocks = COL_BLOCKS_PER_SM;
        if (blocks_per_sm > col_blocks) blocks_per_sm = col_blocks;
    }
    p->blocks_per_sm = blocks_per_sm;
    p->min_blocks = min_blocks;
    int64_t grid = (int64_t)o->sm_count * blocks_per_sm;
    if (grid > (p->rows + p->warp_rows - 1) / p->warp_rows) grid = (p->rows + p->warp_rows - 1) / p->warp_rows;
    if (grid < 1) grid = 1;
    if (p->cluster > 1) { /* whole clusters, one a row at a time */
        int64_t clusters = (int64_t)o->sm_count * blocks_per_sm / p->cluster;
        if (clusters > p->rows) clusters = p->rows;
        if (clusters < 1) clusters = 1;
        grid = clusters * p->cluster;
    }
    p->grid = grid;
    /* (partials are indexed in 32 bits by the last block); column partials
     * need each block's rows fixed (strided), not taken from the queue */
    p->queue = ROW_QUEUE && p->full_out && p->ncol == 0 && p->warp_rows == 1 && p->cluster == 1 && grid < p->rows &&
               p->rows * (p->ngrid > 0 ? p->ngrid : 1) + grid < INT32_MAX;
    p->partials = p->queue ? p->rows : grid; /* grid reductions: one partial per row or per block */
    for (int i = 0, gi = 0; i < p->nred; i++)
        if (grid_kind(p->reds[i].kind)) p->reds[i].grid_slot = gi++;
    p->workspace = p->ngrid > 0 || p->queue || p->ncol > 0;
    /* (with grid or column reductions the last block is the one left to write them) */
    p->scalars_block0 = p->nscalar_out > 0 && p->ngrid == 0 && p->ncol == 0;
    p->workspace_bytes = p->ngrid || p->queue ? (size_t)p->ngrid * (size_t)p->partials * sizeof(double) + 64 : 0;
    if (p->ncol) {
        /* per column reduction the blocks' partials [grid][K], then the groups'
         * [groups][K] (8-byte slots); then a counter per group (the last-block form) */
        p->col_groups = col_groups(grid);
        p->grid_sync = COL_GRID_SYNC;
        for (int i = 0, k = 0; i < p->nred; i++)
            if (p->reds[i].kind == RK_COL) {
                p->reds[i].col_ws = k++ * (grid + p->col_groups) * p->K;
                p->reds[i].col_ws_groups = p->reds[i].col_ws + grid * p->K;
            }
        p->col_ws_counters = p->ncol * (grid + p->col_groups) * p->K;
        p->workspace_bytes = (size_t)p->ncol * (size_t)(grid + p->col_groups) * (size_t)p->K * 8 + (size_t)p->col_groups * 4 + 64;
    }
}

/* ROW_PREFETCH_BYTES (ROW_PREFETCH_WARP_BYTES, ROW_PREFETCH_QUEUE_BYTES,
 * ROW_PREFETCH_CLUSTER_BYTES): whether pass 1's first batch of the block's (warp's,
 * cluster block's) next row is loaded while this row finishes (rows strided, more
 * rows than blocks or warps; or rows from the queue). */
static bool choose_row_prefetch(const red_params *p, const fu_group *g)
{
    const fu_fusion *f = g->f;
    const bool cluster_pays = g->opts->dram_bytes_per_sm_clock >= ROW_PREFETCH_CLUSTER_MIN_BALANCE;
    const int limit = p->queue         ? ROW_PREFETCH_QUEUE_BYTES
                      : p->cluster > 1   ? (cluster_pays ? ROW_PREFETCH_CLUSTER_BYTES : 0)
                      : p->warp_rows > 1 ? ROW_PREFETCH_WARP_BYTES
                                         : ROW_PREFETCH_BYTES;
    if (limit <= 0 || (p->warp_rows > 1 && (p->passes < 2 || p->threads != 32)) || !p->first_batch_early || p->ncache > 0 ||
        (!p->queue && (int64_t)p->grid / p->cluster * p->warp_rows >= p->rows))
        return false;
    if (p->queue) { /* the next row's ticket is published by the barriers of a block reduction of pass 1 */
        bool barrier = false;
        for (int i = 0; i < p->nred; i++) barrier |= p->reds[i].pass == 1 && row_kind(p->reds[i].kind);
        if (!barrier || p->passes < 2 || p->block_threads <= 32) return false;
    }
    const red_pass *ps = &p->pass[1];
    int64_t bytes = 0;
    for (int k = 0; k < ps->nstage; k++) {
        bytes += (int64_t)ps->batch * vector_register_bytes(p, (int)fu_dtype_size(fu_val(f, ps->stage_t[k])->dtype));
    }
    return ps->nstage > 0 && bytes <= limit;
}

/* ROW_PREFETCH_SCALARS: the per-row inputs (one value a row, not one) that a
 * prefetching row loop loads a row ahead, beside the next row's first batch. */
static void choose_row_ahead(red_params *p, const fu_group *g)
{
    p->nrow_ahead = 0;
    if (!ROW_PREFETCH_SCALARS || !p->row_prefetch) return;
    for (int i = 0; i < p->nparams && p->nrow_ahead < MAX_ROW_AHEAD; i++) {
        const fu_value *v = fu_val(g->f, p->param_t[i]);
        if (p->param_out[i] || is_full_shape(p, v) || fu_shape_numel(v->rank, v->shape) <= 1 || !row_index(p, NULL, v, NULL))
            continue;
        p->row_ahead_t[p->nrow_ahead++] = p->param_t[i];
    }
}

/* ROW_INVARIANT_BYTES: the per-column inputs (one value a column, more than one)
 * loaded into registers before the row loop, where blocks (warps) take several
 * rows and a thread's positions are the same in each (no cluster parts, no row
 * alignment), one 16-byte vector a load, and every pass indexes the registers
 * by constants (unrolled, or one batch the whole row). */
static void choose_row_invariant(red_params *p, const fu_group *g)
{
    p->ninvariant = 0;
    if (ROW_INVARIANT_BYTES <= 0 || p->cluster > 1 || p->aligned_rows || p->rows <= p->grid * p->warp_rows) return;
    for (int q = 1; q <= p->passes; q++) /* (a rolled pass of one trip indexes by constants too) */
        if (!p->pass[q].unrolled && p->pass[q].batch < p->iters) return;
    int64_t budget = ROW_INVARIANT_BYTES;
    for (int i = 0; i < p->nparams && p->ninvariant < MAX_INVARIANT; i++) {
        const fu_value *v = fu_val(g->f, p->param_t[i]);
        int64_t vector_bytes = (int64_t)fu_dtype_size(v->dtype) * p->vec, bytes = vector_bytes * p->iters;
        if (p->param_out[i] || is_full_shape(p, v) || fu_shape_numel(v->rank, v->shape) <= 1 || !col_index(p, NULL, v, NULL) ||
            vector_bytes > 16 || bytes > budget)
            continue;
        /* (its vectors' lanes along the last axis, as the passes read them) */
        if (p->vec > 1 && (!p->inner[p->rank - 1] || v->shape[v->rank - 1] != p->D[p->rank - 1])) continue;
        budget -= bytes;
        p->invariant_t[p->ninvariant++] = p->param_t[i];
    }
}

/* ------------------------------------------------------------ emission */

const char *fu_red_identity(fu_op op, fu_dtype dt)
{
    bool integer = fu_dtype_is_int(dt);
    if (op == FU_OP_SUM) return integer ? "0ll" : dt == FU_F64 ? "0.0" : "0.0f";
    if (op == FU_OP_RMAX) return integer ? "(-9223372036854775807ll - 1)" : dt == FU_F64 ? "-FU_DINF" : "-FU_INF";
    return integer ? "9223372036854775807ll" : dt == FU_F64 ? "FU_DINF" : "FU_INF";
}

/* A sum of bf16 or f16 values is a value of that dtype once rounded: the kernels
 * accumulate in f32 and round the final value, as the interpreter rounds its double
 * sum (docs/format.md, Numerics). A max or min of such values is one already. */
void fu_red_round(cg_ctx *c, fu_op op, fu_dtype dt, const char *var)
{
    if (op != FU_OP_SUM || (dt != FU_BF16 && dt != FU_F16)) return;
    cg_line(c, "%s = fu_round_%s(%s); // a value of %s", var, dt == FU_BF16 ? "bf16" : "f16", var, fu_dtype_name(dt));
}

static const char *op_functor(fu_op op) { return op == FU_OP_SUM ? "fu_op_sum()" : op == FU_OP_RMAX ? "fu_op_max()" : "fu_op_min()"; }

const char *fu_red_guard(fu_op op, fu_dtype dt, const char *cond, const char *v, char *buf, size_t n)
{
    if (!cond[0]) return v;
    snprintf(buf, n, "(%s ? %s : %s)", cond, v, fu_red_identity(op, dt));
    return buf;
}

void fu_red_combine(cg_ctx *c, fu_op op, const char *acc, const char *v)
{
    if (op == FU_OP_SUM) cg_line(c, "%s += %s;", acc, v);
    else cg_line(c, "%s = %s(%s, %s);", acc, op == FU_OP_RMAX ? "fu_max" : "fu_min", acc, v);
}

static const char *smem_of(const char *ct)
{
    return !strcmp(ct, "float") ? "(float *)fu_smem" : !strcmp(ct, "double") ? "(double *)fu_smem" : "(long long *)fu_smem";
}

/* fu_reduction_emit's state while it writes the kernel: what is final so far,
 * the registers' names, and the canonical offsets lookup_cache matches. */
typedef struct red_emit {
    const red_params *p;
    const fu_group *g;
    const fu_fusion *f;
    fu_kernel_writer *w;
    bool avail[MAX_REDS];   /* the reduction's value is final in its register */
    char var[MAX_REDS][16]; /* its register */
    cg_index cache_base[MAX_CACHE]; /* the row position's offset, lane 0 (canonical_base) */
    cg_index stage_base[MAX_CACHE];
    char cache_var[64]; /* what lookup_cache hands back (the memo copies it) */
    int pass;           /* the pass being emitted, and its plan */
    const red_pass *ps;
    bool in_pass;
    bool in_edge;                  /* emitting a pass's row edges (an element a thread) */
    /* within a row: the per-row inputs loaded a row ahead are read from this
     * row's copies (fu_rs<i>) where read at the row's own offset */
    bool row_ahead_live;
    cg_index row_ahead_base[MAX_ROW_AHEAD];
    cg_index invariant_base[MAX_INVARIANT]; /* a per-column input's offset at the thread's position, lane 0 */
    bool edge_loaded[MAX_CACHE];   /* cached input k's edge element is in fu_ce<k> */
    /* single_out[o] computed ahead (emit_single_row_ahead): its element's index */
    bool ahead[MAX_OUTS];
    cg_index ahead_idx[MAX_OUTS][FU_MAX_RANK];
} red_emit;

/* A block of one warp (a short row, or the small fusions' single rows) needs
 * no exchange through shared memory: its reductions stay in the warp, without
 * the two barriers of the block's (the same bits: the xor butterfly leaves
 * every lane lane 0's value, which the exchange would hand every thread). */
static bool one_warp_block(const red_params *p) { return p->block_threads == 32; }

/* dst = src reduced over the block, every thread getting the result. */
static void emit_block_reduce(red_emit *r, const char *dst, const char *src, fu_op op, const char *ct)
{
    if (one_warp_block(r->p)) cg_line(&r->w->cg, "%s = fu_warp_reduce(%s, %s);", dst, src, op_functor(op));
    else cg_line(&r->w->cg, "%s = fu_block_reduce(%s, %s, %s);", dst, src, op_functor(op), smem_of(ct));
}

/* Inside a pass, or its edges, after the pass that keeps it: a kept value read
 * at this thread's position (the pass's index at the current lane), from its
 * registers. */
static const char *kept_value(red_emit *r, const cg_ctx *c, fu_tensor t, const cg_index *idx)
{
    const red_params *p = r->p;
    if (!r->in_pass && !r->in_edge) return NULL;
    for (int k = 0; k < p->nkeep; k++) {
        if (p->keep_t[k] != t || r->pass <= p->keep_pass[k]) continue;
        for (int a = 0; a < p->rank; a++) {
            if (p->D[a] == 1) continue; /* (read as 0 or as the variable: either is the one position) */
            cg_index want;
            cg_index_var(&want, a, c->var_names[a]);
            if (a == p->rank - 1 && c->vec > 1) {
                want.lane_coef = 1;
                cg_index_refresh(c, &want);
            }
            if (!cg_index_same(c, &want, &idx[a])) return NULL;
        }
        if (r->in_edge) snprintf(r->cache_var, sizeof r->cache_var, "fu_ke%d", k);
        else snprintf(r->cache_var, sizeof r->cache_var, "fu_k%d[it * %d + %d]", k, c->vec, c->lane);
        return r->cache_var;
    }
    return NULL;
}

/* After a pass that keeps values: each one's element at this position, into its registers. */
static void store_kept_values(red_emit *r, int pass, const cg_index *li)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    for (int k = 0; k < p->nkeep; k++) {
        if (p->keep_pass[k] != pass) continue;
        const char *v = cg_value(c, p->keep_t[k], li);
        if (r->in_edge) cg_line(c, "fu_ke%d = %s;", k, v);
        else cg_line(c, "fu_k%d[it * %d + %d] = %s;", k, c->vec, c->lane, v);
    }
}

/* Input t's offset at index idx of position_index: in the domain's (contiguous) layout for a
 * view of it (is_row_view_input: the same elements at the same offsets), else its own. */
static void row_input_offset(red_emit *r, fu_tensor t, const cg_index *idx, cg_index *off)
{
    cg_ctx *c = &r->w->cg;
    const fu_value *v = fu_val(r->f, t);
    if (is_row_view_input(r->p, r->g, t)) {
        int64_t strides[FU_MAX_RANK];
        fu_shape_contiguous_strides(r->p->rank, r->p->D, strides);
        cg_offset(c, r->p->rank, r->p->D, strides, idx, off);
        return;
    }
    cg_offset(c, v->rank, v->shape, v->strides, idx, off);
}

static const char *lookup_cache(cg_ctx *c, fu_tensor t, const cg_index *off, void *user);

static const char *lookup_register(cg_ctx *c, fu_tensor t, const cg_index *idx, void *user)
{
    red_emit *r = user;
    const red_params *p = r->p;
    const char *kept = kept_value(r, c, t, idx);
    if (kept) return kept;
    /* the view of a row-view input at the row position: its staged or cached element (the
     * input's own offset through the view is another expression of the same number) */
    const fu_node *view = fu_producer(r->f, t);
    if (view && view->op == FU_OP_RESHAPE && is_full_shape(p, fu_val(r->f, t)) &&
        is_row_view_input(p, r->g, view->inputs[0])) {
        cg_index off;
        row_input_offset(r, view->inputs[0], idx, &off);
        const char *held = lookup_cache(c, view->inputs[0], &off, user);
        if (held) return held;
    }
    int i = red_of(p, t);
    if (i < 0) return NULL;
    const red_info *ri = &p->reds[i];
    const fu_value *v = fu_val(r->f, t);
    if (!r->avail[i]) {
        if (c->deferring) return CG_DEFERRED;
        cg_fail(c, "reduction: '%s' is needed before it can be computed", v->name);
        return NULL;
    }
    if (ri->kind == RK_COL) {
        cg_index want[FU_MAX_RANK];
        bool ok = col_index(p, c, v, want);
        for (int a = 0; ok && a < v->rank; a++) ok = cg_index_same(c, &want[a], &idx[a]);
        if (!ok) {
            cg_fail(c, "reduction: column value '%s' is read at another column", v->name);
            return NULL;
        }
    }
    /* one row and one value of it: every index is that value's (a gather's index is checked
     * against the extent before the read) */
    if (ri->kind == RK_ROW && p->rows == 1 && fu_shape_numel(v->rank, v->shape) == 1) return r->var[i];
    if (ri->kind == RK_ROW) {
        cg_index want[FU_MAX_RANK];
        if (!row_index(p, c, v, want)) {
            cg_fail(c, "reduction: '%s' is not a per-row value", v->name);
            return NULL;
        }
        for (int a = 0; a < v->rank; a++)
            if (!cg_index_same(c, &want[a], &idx[a])) {
                cg_fail(c, "reduction: row value '%s' is read at another row", v->name);
                return NULL;
            }
    }
    return r->var[i];
}

/* Element `lane` of slot `slot` of register array <array><k> as f32. Pairs of
 * bf16 are read as words, each half converted by one instruction (a 16-bit
 * read of the upper half took a PRMT and a shift): how an element is read,
 * not a choice of the schedule. */
static const char *register_element(red_emit *r, const cg_ctx *c, fu_tensor t, int k, const char *array, const char *slot)
{
    if (fu_val(r->f, t)->dtype == FU_BF16 && c->vec % 2 == 0)
        snprintf(r->cache_var, sizeof r->cache_var, "fu_pair_%s(%s%d, %s * %d + %d)", c->lane % 2 ? "hi" : "lo", array, k,
                 slot, c->vec / 2, c->lane / 2);
    else
        snprintf(r->cache_var, sizeof r->cache_var, "fu_load(%s%d[%s * %d + %d])", array, k, slot, c->vec, c->lane);
    return r->cache_var;
}

/* Inside a pass, a load at the row position of a cached or staged input is a
 * register read. */
static const char *lookup_cache(cg_ctx *c, fu_tensor t, const cg_index *off, void *user)
{
    red_emit *r = user;
    for (int i = 0; r->row_ahead_live && i < r->p->nrow_ahead; i++)
        if (r->p->row_ahead_t[i] == t && cg_index_same(c, &r->row_ahead_base[i], off)) {
            snprintf(r->cache_var, sizeof r->cache_var, "fu_rs%d", i);
            return r->cache_var;
        }
    if ((!r->in_pass && !r->in_edge) || !off->affine || off->lane_coef != (c->vec > 1 ? 1 : 0)) return NULL;
    cg_index base = *off;
    base.lane_coef = 0;
    for (int i = 0; i < r->p->ncache; i++) {
        if (r->p->cache_t[i] != t || !cg_index_same(c, &r->cache_base[i], &base)) continue;
        if (!r->in_edge) return register_element(r, c, t, i, "fu_c", "it");
        /* its edge element: loaded by the first pass that reads it, then kept */
        if (!r->edge_loaded[i]) cg_line(c, "fu_ce%d = fu_load(%s[%s]);", i, cg_find_param(c, t)->name, off->expr);
        r->edge_loaded[i] = true;
        snprintf(r->cache_var, sizeof r->cache_var, "fu_ce%d", i);
        return r->cache_var;
    }
    if (r->in_edge) return NULL; /* (no staged input holds an edge) */
    for (int i = 0; i < r->p->ninvariant; i++)
        if (r->p->invariant_t[i] == t && cg_index_same(c, &r->invariant_base[i], &base)) return register_element(r, c, t, i, "fu_w", "it");
    for (int i = 0; i < r->ps->nstage; i++)
        if (r->ps->stage_t[i] == t && cg_index_same(c, &r->stage_base[i], &base)) return register_element(r, c, t, i, "fu_s", "b");
    return NULL;
}

static void emit_outer_vars(red_emit *r, const char *row)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    int64_t stride = 1;
    int64_t strides[FU_MAX_RANK];
    for (int a = p->rank - 1; a >= 0; a--) {
        strides[a] = stride;
        if (!p->inner[a]) stride *= p->D[a];
    }
    /* (the row is one of the rows wherever they are declared: the top one needs no %) */
    bool top = true;
    for (int a = 0; a < p->rank; a++) {
        if (p->inner[a]) continue;
        cg_digit_var(c, a, row, strides[a], p->D[a], top && p->D[a] != 1);
        top &= p->D[a] == 1;
    }
}

/* ALIGNED_ROWS, per row: the elements before its first aligned vector
 * (fu_head: the row starts at element row * K of the domain, and the inputs
 * laid out as the domain are aligned at its multiples of vec, as c->lane_align
 * tells cg_offset_vectorizable), the end of its last whole vector (fu_kwhole),
 * and with a cluster the end of this block's part of them (fu_kstop). */
static void emit_row_alignment(red_emit *r, const char *row)
{
    const red_params *p = r->p;
    if (!p->aligned_rows) return;
    cg_ctx *c = &r->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    int neg_k = (int)((p->vec - p->K % p->vec) % p->vec); /* -K modulo vec */
    cg_line(c, "const %s fu_head = (%s)(%s & %d) * %d & %d; // the row's elements before its first aligned vector", it, it,
            row, p->vec - 1, neg_k, p->vec - 1);
    cg_line(c, "const %s fu_kwhole = fu_head + ((%lld - fu_head) & ~%d); // the end of its last whole vector", it,
            (long long)p->K, p->vec - 1);
    if (p->cluster > 1)
        cg_line(c, "const %s fu_kstop = fu_kend + fu_head < fu_kwhole ? fu_kend + fu_head : fu_kwhole; // ... of this block's part",
                it);
}

static void full_index(red_emit *r, cg_index *idx)
{
    cg_ctx *c = &r->w->cg;
    for (int a = 0; a < r->p->rank; a++) cg_index_var(&idx[a], a, c->var_names[a]);
    if (r->p->vec > 1) {
        idx[r->p->rank - 1].lane_coef = 1;
        cg_index_refresh(c, &idx[r->p->rank - 1]);
    }
}

/* Input t's index at the thread's row position (its vector's lane 0, c->vec
 * lanes along the last axis): a full-size input's, or a per-column one's
 * (col_index; ROW_INVARIANT_BYTES). */
static void position_index(red_emit *r, fu_tensor t, cg_index *idx)
{
    cg_ctx *c = &r->w->cg;
    const fu_value *v = fu_val(r->f, t);
    if (is_full_shape(r->p, v) || is_row_view_input(r->p, r->g, t)) { /* (a view: at the domain's offsets) */
        full_index(r, idx);
        return;
    }
    col_index(r->p, c, v, idx);
    if (r->p->vec > 1) {
        idx[v->rank - 1].lane_coef = 1;
        cg_index_refresh(c, &idx[v->rank - 1]);
    }
}

/* The offset of input t at the row position with the lane term removed: what
 * lookup_cache matches to find a cached, staged or row-invariant element. */
static void canonical_base(red_emit *r, fu_tensor t, cg_index *base)
{
    cg_ctx *c = &r->w->cg;
    cg_index idx[FU_MAX_RANK];
    int saved_vec = c->vec, saved_lane_var = c->lane_var;
    c->vec = r->p->vec;
    c->lane_var = r->p->vec > 1 ? r->p->rank - 1 : -1;
    c->lane = 0;
    position_index(r, t, idx);
    row_input_offset(r, t, idx, base);
    base->lane_coef = 0;
    c->vec = saved_vec;
    c->lane_var = saved_lane_var;
}

/* Makes `pass` the pass being emitted (its staged inputs' canonical offsets). */
static void begin_pass(red_emit *r, int pass)
{
    r->pass = pass;
    r->ps = &r->p->pass[pass];
    for (int k = 0; k < r->ps->nstage; k++) canonical_base(r, r->ps->stage_t[k], &r->stage_base[k]);
}

static void emit_inner_vars(red_emit *r)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    int ninner = 0, last_inner = -1;
    for (int a = 0; a < p->rank; a++)
        if (p->inner[a]) {
            ninner++;
            last_inner = a;
        }
    if (ninner == 1) {
        cg_digit_var(c, last_inner, "kb", 1, p->D[last_inner], true);
        return;
    }
    /* (kb is a position of the row wherever they are declared: the top one needs no %) */
    int64_t stride = 1;
    for (int a = p->rank - 1; a >= 0; a--) {
        if (!p->inner[a]) continue;
        cg_digit_var(c, a, "kb", stride, p->D[a], stride * p->D[a] == p->K);
        stride *= p->D[a];
    }
}

/* This thread's shared-memory slot `it` of the input kept there (index k). */
static void smem_slot(const red_params *p, int k, char *buf, size_t n)
{
    snprintf(buf, n, "fu_rows + %lld + ((int)it * %d + threadIdx.x) * %d", (long long)p->smem_offset[k], p->block_threads,
             p->smem_slot_bytes[k]);
}

/* Loads input t at the row position of batch slot b into `dst` (raw storage:
 * "fu_s0 + b * 4"; after pass 1 from this thread's shared-memory slot where t
 * is kept there), or into register cache k. One vector load where the offset
 * allows it (cg_offset_vectorizable: a property of the offset's text, known
 * only as it is written), else one load a lane. */
static void emit_row_load(red_emit *r, fu_tensor t, const cg_index *idx, const char *raw_dst, int cache_k)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const fu_value *v = fu_val(r->f, t);
    const cg_param *par = cg_find_param(c, t);
    cg_index off;
    c->lane = 0;
    row_input_offset(r, t, idx, &off);
    char base[CG_EXPR];
    cg_offset_base_expr(c, &off, base, sizeof base);
    int bytes = (int)fu_dtype_size(v->dtype) * p->vec;
    const char *wide = cg_vector_type(bytes);
    bool vector = p->vec > 1 && cg_offset_vectorizable(c, &off, p->vec);
    int sk = smem_index(p, t);
    if (raw_dst && sk >= 0 && r->pass > 1) { /* kept by pass 1 in this thread's slots */
        char slot[96];
        smem_slot(p, sk, slot, sizeof slot);
        cg_line(c, "*(%s *)(%s) = *(const %s *)(%s);", wide, raw_dst, wide, slot);
        c->lane = 0;
        return;
    }
    if (raw_dst) {
        if (vector) cg_line(c, "*(%s *)(%s) = __ldg((const %s *)(%s + %s));", wide, raw_dst, wide, par->name, base);
        else
            for (int lane = 0; lane < p->vec; lane++) {
                c->lane = lane;
                cg_index_refresh(c, &off);
                cg_line(c, "(%s)[%d] = %s[%s];", raw_dst, lane, par->name, off.expr);
            }
    } else { /* the cross-pass cache keeps the row in its storage type */
        char dst[48];
        snprintf(dst, sizeof dst, "fu_c%d + it * %d", cache_k, p->vec);
        emit_row_load(r, t, idx, dst, -1);
    }
    c->lane = 0;
}

/* Opens the block of one batch slot's work, guarded as plan_pass decided
 * (aligned rows: by the end of the row's whole vectors, fu_kwhole, or of this
 * block's part of them, fu_kstop). */
static void open_position_guard(red_emit *r)
{
    bool aligned = r->p->aligned_rows;
    if (r->ps->guard == GUARD_PART) cg_line(&r->w->cg, "if (kb < %s) {", aligned ? "fu_kstop" : "fu_kend");
    else if (r->ps->guard == GUARD_ROW && aligned) cg_line(&r->w->cg, "if (kb < fu_kwhole) {");
    else if (r->ps->guard == GUARD_ROW) cg_line(&r->w->cg, "if (kb < %lld) {", (long long)r->p->K);
    else cg_line(&r->w->cg, "{ // the batches cover the row exactly");
}

/* kb, the row position of the thread's vector `it` (in this block's part of
 * the row, after the row's unaligned head). */
static void emit_slot_position(red_emit *r)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "const %s kb = %s%s((%s)it * %d + %s) * %d;", it, p->cluster > 1 ? "fu_kbase + " : "",
            p->aligned_rows ? "fu_head + " : "", it, p->threads, p->tid, p->vec);
}

/* Opens the batch slots [from, to) of an unrolled pass (b, its iteration it
 * and row position kb, guarded as open_position_guard says, and the inner-axis
 * variables), in the batch at it0 or, `ahead`, the next one; close_batch_slot
 * ends it. */
static void open_slots(red_emit *r, int from, int to, bool ahead)
{
    cg_ctx *c = &r->w->cg;
    cg_line(c, "#pragma unroll");
    cg_line(c, "for (int b = %d; b < %d; b++) {", from, to);
    c->indent++;
    c->scope++;
    if (ahead) cg_line(c, "const int it = it0 + %d + b; // the next batch", r->ps->batch);
    else cg_line(c, "const int it = it0 + b;");
    emit_slot_position(r);
    open_position_guard(r);
    c->indent++;
    c->scope++;
    emit_inner_vars(r);
}

/* Every slot of the batch at it0. */
static void open_batch_slot(red_emit *r)
{
    open_slots(r, 0, r->ps->batch, false);
}

static void close_batch_slot(red_emit *r)
{
    cg_ctx *c = &r->w->cg;
    c->scope--;
    c->indent--;
    cg_drop_scope(c);
    cg_line(c, "}");
    cg_close(c); /* b */
}

/* ROW_INVARIANT_BYTES: the per-column inputs, into registers before the row loop
 * (fu_w<k>: a vector a thread's iteration, at pass 1's positions). */
static void emit_row_invariant_loads(red_emit *r)
{
    const red_params *p = r->p;
    if (p->ninvariant == 0) return;
    cg_ctx *c = &r->w->cg;
    for (int k = 0; k < p->ninvariant; k++) {
        const fu_value *v = fu_val(r->f, p->invariant_t[k]);
        cg_line(c, "alignas(16) %s fu_w%d[%d]; // '%s', the same at every row: loaded once", cg_storage_type(v->dtype), k,
                p->iters * p->vec, v->name);
    }
    begin_pass(r, 1);
    c->vec = p->vec;
    c->lane_var = p->vec > 1 ? p->rank - 1 : -1;
    cg_line(c, "#pragma unroll");
    cg_line(c, "for (int it = 0; it < %d; it++) {", p->iters);
    c->indent++;
    c->scope++;
    emit_slot_position(r);
    open_position_guard(r);
    c->indent++;
    c->scope++;
    emit_inner_vars(r);
    for (int k = 0; k < p->ninvariant; k++) {
        cg_index idx[FU_MAX_RANK];
        char dst[32];
        position_index(r, p->invariant_t[k], idx);
        snprintf(dst, sizeof dst, "fu_w%d + it * %d", k, p->vec);
        emit_row_load(r, p->invariant_t[k], idx, dst, -1);
    }
    close_batch_slot(r);
    c->vec = 1;
    c->lane_var = -1;
    for (int k = 0; k < p->ninvariant; k++) canonical_base(r, p->invariant_t[k], &r->invariant_base[k]);
}

/* The shift fu_m<i> of an online log-sum-exp's terms exp(x - m) once the
 * running max m has taken the new elements: m, or 0 while m is -inf (every
 * element so far -inf, a masked row's start: each term exp(-inf) = 0, where
 * exp(x - m) would be exp(NaN) and poison the row; a NaN still gives NaN). */
static void emit_term_shift(cg_ctx *c, int i, const char *m)
{
    cg_line(c, "const float fu_m%d = %s > -FU_INF ? %s : 0.0f; // the terms' shift (0 while all are -inf)", i, m, m);
}

/* Phase M of an online log-sum-exp: the max of the batch first, then one
 * rescale of the running sum per batch (not one per vector), so phase B adds
 * exp(x - m) with m fixed. */
static void emit_batch_max(red_emit *r, int pass, const cg_index *idx, int from, int to)
{
    const red_params *p = r->p;
    const red_pass *ps = r->ps;
    cg_ctx *c = &r->w->cg;
    bool any = false;
    char raw[MAX_REDS][48];
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        if (ri->pass != pass || ri->online_max < 0) continue;
        if (ps->batch_max[i] == BM_PACKED_BF16) { /* "fu_s0 + b * 8": two elements per max */
            if (ps->batch_max_staged[i]) snprintf(raw[i], sizeof raw[i], "fu_s%d + b * %d", ps->batch_max_k[i], p->vec);
            else snprintf(raw[i], sizeof raw[i], "fu_c%d + it * %d", ps->batch_max_k[i], p->vec);
            cg_line(c, "unsigned mb%d = 0xff80ff80u; // the batch's max, two bf16 lanes", i);
        } else if (ps->batch_max[i] == BM_REGISTER) {
            cg_line(c, "float mb%d = -FU_INF; // the batch's max", i);
        }
        any |= ps->batch_max[i] != BM_NONE;
    }
    if (!any) return;
    open_slots(r, from, to, false);
    r->in_pass = true;
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        if (ri->pass != pass || ps->batch_max[i] == BM_NONE) continue;
        if (ps->batch_max[i] == BM_PACKED_BF16) {
            for (int w = 0; w < p->vec / 2; w++)
                cg_line(c, "mb%d = fu_max_bf16x2(mb%d, ((const unsigned *)(%s))[%d]);", i, i, raw[i], w);
            continue;
        }
        for (int lane = 0; lane < p->vec; lane++) {
            c->lane = lane;
            cg_index li[FU_MAX_RANK];
            memcpy(li, idx, sizeof li);
            cg_index_refresh(c, &li[p->rank - 1]);
            cg_line(c, "mb%d = fu_max(mb%d, %s);", i, i, cg_value(c, online_source(r->f, ri), li));
        }
        c->lane = 0;
    }
    r->in_pass = false;
    close_batch_slot(r);
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        if (ri->pass != pass || ps->batch_max[i] == BM_NONE) continue;
        const char *m = r->var[ri->online_max];
        char mb[80];
        if (ps->batch_max[i] == BM_PACKED_BF16) snprintf(mb, sizeof mb, "fu_max(fu_bf16x2_lo(mb%d), fu_bf16x2_hi(mb%d))", i, i);
        else snprintf(mb, sizeof mb, "mb%d", i);
        if (ri->const_shift) {
            cg_line(c, "%s = fu_max(%s, %s); // the terms' shift is a constant", m, m, mb);
            continue;
        }
        cg_line(c, "{ const float mx = %s; if (mx > %s) { %s *= fu_exp_sub(%s, mx); %s = mx; } }", mb, m, r->var[i], m, m);
        emit_term_shift(c, i, m);
    }
}

static void declare_staged(red_emit *r)
{
    for (int k = 0; k < r->ps->nstage; k++) {
        const fu_value *v = fu_val(r->f, r->ps->stage_t[k]);
        cg_line(&r->w->cg, "alignas(16) %s fu_s%d[%d]; // '%s', loaded a batch ahead", cg_storage_type(v->dtype), k,
                r->ps->batch * r->p->vec, v->name);
    }
}

/* Phase A of a pass: the loads of slots [from, to) of the batch at it0 (or,
 * `ahead`, the next), issued together. */
static void emit_slot_loads(red_emit *r, const cg_index *idx, int from, int to, bool ahead)
{
    const red_params *p = r->p;
    if (r->ps->nstage == 0 && !(r->pass == 1 && p->ncache > 0)) return;
    r->in_pass = false;
    open_slots(r, from, to, ahead);
    for (int k = 0; k < r->ps->nstage; k++) {
        char dst[32];
        snprintf(dst, sizeof dst, "fu_s%d + b * %d", k, p->vec);
        emit_row_load(r, r->ps->stage_t[k], idx, dst, -1);
    }
    if (r->pass == 1)
        for (int k = 0; k < p->ncache; k++) emit_row_load(r, p->cache_t[k], idx, NULL, k);
    close_batch_slot(r);
}

/* The slots loaded first: the first half where the pass loads in halves. */
static int first_slots(const red_pass *ps)
{
    return ps->halves ? ps->batch / 2 : ps->batch;
}

static void emit_batch_loads(red_emit *r, const cg_index *idx)
{
    emit_slot_loads(r, idx, 0, first_slots(r->ps), false);
}

/* ROW_LOADS_FIRST: pass 1's staged arrays at row scope and its first batch
 * loaded (it0 = 0), before the per-row values are computed. */
/* Pass 1's loads of its first batch (it0 = 0) at the row the outer
 * variables name, into the staged arrays. */
static void emit_first_batch(red_emit *r)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    cg_index idx[FU_MAX_RANK];
    full_index(r, idx);
    c->vec = p->vec;
    c->lane_var = p->vec > 1 ? p->rank - 1 : -1;
    cg_line(c, "const int it0 = 0;");
    emit_batch_loads(r, idx);
    c->vec = 1;
    c->lane_var = -1;
}

static void emit_first_batch_loads(red_emit *r)
{
    cg_ctx *c = &r->w->cg;
    begin_pass(r, 1);
    cg_line(c, "// pass 1's first batch, in flight before the per-row values wait on theirs");
    declare_staged(r);
    cg_open(c);
    emit_first_batch(r);
    cg_close(c);
}

/* JOINT_BLOCK_REDUCE: the next row reduction of the pass after i that is
 * reduced across the block the same way (a plain block reduction of the same
 * compute type), or -1. */
static int block_reduce_partner(const red_emit *r, int pass, int i, const bool *joined)
{
    const red_params *p = r->p;
    if (!JOINT_BLOCK_REDUCE || p->warp_rows > 1) return -1;
    const red_info *ri = &p->reds[i];
    if (ri->online_max >= 0) return -1;
    fu_dtype dt = fu_val(r->f, ri->out)->dtype;
    for (int j = i + 1; j < p->nred; j++) {
        const red_info *rj = &p->reds[j];
        if (joined[j] || rj->pass != pass || !row_kind(rj->kind) || rj->online_sum >= 0 || rj->online_max >= 0) continue;
        if (strcmp(cg_compute_type(fu_val(r->f, rj->out)->dtype), cg_compute_type(dt)) == 0) return j;
    }
    return -1;
}

/* Strided rows: the thread's first row and the step to its next (64 bytes each;
 * first may be NULL). */
static void strided_rows(const red_params *p, const cg_ctx *c, char *first, char *step)
{
    const char *it = c->index64 ? "long long" : "int";
    if (p->cluster > 1) {
        if (first) snprintf(first, 64, "(%s)blockIdx.x / %d", it, p->cluster);
        snprintf(step, 64, "(%s)gridDim.x / %d", it, p->cluster);
    } else if (p->warp_rows > 1) {
        if (first) snprintf(first, 64, "(%s)blockIdx.x * %d + fu_warp", it, p->warp_rows);
        snprintf(step, 64, "(%s)gridDim.x * %d", it, p->warp_rows);
    } else {
        if (first) snprintf(first, 64, "blockIdx.x");
        snprintf(step, 64, "gridDim.x");
    }
}

/* Per-row input i loaded a row ahead (ROW_PREFETCH_SCALARS): its offset at
 * the row the outer variables name. */
static void row_ahead_offset(red_emit *r, int i, cg_index *off)
{
    cg_ctx *c = &r->w->cg;
    const fu_value *v = fu_val(r->f, r->p->row_ahead_t[i]);
    cg_index idx[FU_MAX_RANK];
    row_index(r->p, c, v, idx);
    cg_offset(c, v->rank, v->shape, v->strides, idx, off);
}

/* ROW_PREFETCH_BYTES: pass 1's first batch of row `row_expr` (when there is
 * such a row) into the staged arrays, declared by the caller; `which` says
 * which of the block's (warp's) rows it is. */
static const char FIRST_BATCH_AHEAD[] = "first row: its first batch (each later row's is loaded during the row before)";
static void emit_batch_ahead(red_emit *r, const char *row_expr, const char *which)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "// the %s's %s", p->warp_rows > 1 ? "warp" : "block", which);
    cg_line(c, "if (%s < %lld) {", row_expr, (long long)p->rows);
    c->indent++;
    c->scope++;
    cg_line(c, "const %s fu_row_ahead = %s;", it, row_expr);
    emit_outer_vars(r, "fu_row_ahead"); /* (this row's names, shadowed in this block) */
    emit_row_alignment(r, "fu_row_ahead");
    const bool live = r->row_ahead_live; /* (this row's copies are not that row's values) */
    r->row_ahead_live = false;
    emit_first_batch(r);
    for (int i = 0; i < p->nrow_ahead; i++) {
        cg_index off;
        row_ahead_offset(r, i, &off);
        cg_line(c, "fu_ra%d = fu_load(%s[%s]); // '%s' of that row", i, cg_find_param(c, p->row_ahead_t[i])->name, off.expr,
                fu_val(r->f, p->row_ahead_t[i])->name);
    }
    r->row_ahead_live = live;
    c->scope--;
    cg_drop_scope(c);
    c->indent--;
    cg_line(c, "}");
}

/* The work of `vec` row positions from idx (a batch slot's vector, or one
 * element of the row's edges): the pass's row reductions, its online
 * log-sum-exps (the vector's max first, unless phase M took the batch's:
 * batch_max) and its full-size outputs. */
static void emit_elements(red_emit *r, int pass, const cg_index *idx, int vec, bool batch_max)
{
    const red_params *p = r->p;
    const red_pass *ps = r->ps;
    const fu_fusion *f = r->f;
    cg_ctx *c = &r->w->cg;
    /* per lane: the pass's row reductions and full-size outputs */
    char outs[MAX_OUTS][16][32];
    char online_e[MAX_REDS][16][32];
    for (int lane = 0; lane < vec; lane++) {
        c->lane = lane;
        cg_index li[FU_MAX_RANK];
        memcpy(li, idx, sizeof li);
        cg_index_refresh(c, &li[p->rank - 1]);
        for (int i = 0; i < p->nred; i++) {
            const red_info *ri = &p->reds[i];
            if (ri->pass == pass && ri->kind == RK_COL) { /* this thread's accumulator of the position */
                char acc[48];
                snprintf(acc, sizeof acc, "fu_col%d[it * %d + %d]", i, vec, lane);
                fu_red_combine(c, ri->op, acc, cg_value(c, ri->in, li));
                continue;
            }
            if (ri->pass != pass || !row_kind(ri->kind) || ri->online_sum >= 0) continue;
            if (ri->online_max >= 0) {
                snprintf(online_e[i][lane], sizeof online_e[i][lane], "%s", cg_value(c, online_source(f, ri), li));
                continue;
            }
            fu_red_combine(c, ri->op, r->var[i], cg_value(c, ri->in, li));
        }
        for (int o = 0; o < ps->nout; o++)
            snprintf(outs[o][lane], sizeof outs[o][lane], "%s", cg_value(c, output_source(p, r->g, ps->out_t[o]), li));
        store_kept_values(r, pass, li);
    }
    c->lane = 0;
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        if (ri->pass != pass || ri->online_max < 0) continue;
        const char *m = r->var[ri->online_max];
        if (!ri->shift_only && (!batch_max || ps->batch_max[i] == BM_NONE)) { /* the vector's max, then its terms */
            cg_line(c, "float mx%d = %s;", i, online_e[i][0]);
            for (int lane = 1; lane < vec; lane++) cg_line(c, "mx%d = fu_max(mx%d, %s);", i, i, online_e[i][lane]);
            if (ri->const_shift) {
                cg_line(c, "%s = fu_max(%s, mx%d);", m, m, i);
            } else {
                cg_line(c, "if (mx%d > %s) { %s *= fu_exp_sub(%s, mx%d); %s = mx%d; }", i, m, r->var[i], m, i, m, i);
                emit_term_shift(c, i, m);
            }
        } /* else phase M took the batch's max, and its terms' shift, or no max is needed (shift_only) */
        for (int lane = 0; lane < vec; lane++) {
            if (!ri->const_shift) {
                cg_line(c, "%s += fu_exp_sub(%s, fu_m%d);", r->var[i], online_e[i][lane], i);
                continue;
            }
            bool poly = vec >= 4 && lane >= vec - poly_lanes(p, ri);
            char shift2[40];
            cg_f32_literal(ri->shift * 1.4426950408889634, shift2, sizeof shift2);
            cg_line(c, "%s += fu_exp_shifted%s(%s, %s);", r->var[i], poly ? "_poly" : "", online_e[i][lane], shift2);
        }
    }
    for (int o = 0; o < ps->nout; o++) {
        const cg_param *par = fu_kw_output(r->w, ps->out_t[o]);
        const fu_value *v = fu_val(f, ps->out_t[o]);
        cg_index li[FU_MAX_RANK], off;
        int dims[FU_MAX_RANK];
        if (permuted_source(p, r->g, ps->out_t[o], dims) >= 0)
            for (int a = 0; a < v->rank; a++) li[a] = idx[dims[a]]; /* the element's index in the output */
        else
            memcpy(li, idx, sizeof li);
        cg_offset(c, v->rank, v->shape, v->strides, li, &off);
        if (vec > 1 && cg_offset_vectorizable(c, &off, vec)) { /* (the offset's text decides, as in emit_row_load) */
            char base[CG_EXPR], tmp[16];
            cg_offset_base_expr(c, &off, base, sizeof base);
            snprintf(tmp, sizeof tmp, "fu_o%d", o);
            fu_kw_vector_store(r->w, par, base, tmp, (const char (*)[32])outs[o], vec);
        } else {
            for (int lane = 0; lane < vec; lane++) {
                c->lane = lane;
                cg_index_refresh(c, &off);
                fu_kw_store(r->w, par, off.expr, outs[o][lane]);
            }
            c->lane = 0;
        }
    }
}

/* A batch slot's vector work (emit_elements), written twice where the pass
 * splits on a position compare (VECTOR_MISS): with the compare known where no
 * lane is at its value, else from the value's distance to the vector (one
 * integer compare a lane). */
static void emit_vector_work(red_emit *r, int pass, const cg_index *idx)
{
    cg_ctx *c = &r->w->cg;
    const fu_tensor cmp = r->ps->miss_cmp;
    if (cmp < 0) {
        emit_elements(r, pass, idx, r->p->vec, true);
        return;
    }
    const char *diff = cg_vector_miss_diff(c, cmp, idx);
    cg_line(c, "if (%s >= %du) { // no lane is at the position '%s' compares with", diff, r->p->vec, fu_val(r->f, cmp)->name);
    c->miss_cmp = cmp;
    for (int known = 1; known >= 0; known--) {
        if (!known) cg_line(c, "} else {");
        c->indent++;
        c->scope++;
        c->miss_known = known;
        emit_elements(r, pass, idx, r->p->vec, true);
        c->scope--;
        cg_drop_scope(c);
        c->indent--;
    }
    c->miss_cmp = -1;
    cg_line(c, "}");
}

/* ALIGNED_ROWS: the row's edges, fewer than vec elements before its first
 * aligned vector and after its last whole one, an element a thread (a row has
 * 32 threads at least: ALIGNED_ROWS_MIN_VECS), in the pass's first batch:
 * after that batch's loads are issued, so that the edges' loads are in flight
 * with them. Read from memory: the staged and cached registers hold whole
 * vectors. With a cluster, by the row's first block. */
static void emit_row_edges(red_emit *r, int pass)
{
    const red_params *p = r->p;
    if (!p->aligned_rows) return;
    cg_ctx *c = &r->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    int saved_vec = c->vec, saved_lane_var = c->lane_var;
    cg_line(c, "if (it0 == 0%s) { // the row's edges: its elements before the first aligned vector and after the last whole one",
            p->cluster > 1 ? " && fu_rank == 0u" : "");
    c->indent++;
    c->scope++;
    cg_line(c, "const %s fu_x = %s;", it, p->tid);
    cg_line(c, "if (fu_x < fu_head + %lld - fu_kwhole) {", (long long)p->K);
    c->indent++;
    c->scope++;
    cg_line(c, "const %s kb = fu_x < fu_head ? fu_x : fu_kwhole - fu_head + fu_x;", it);
    emit_inner_vars(r);
    c->vec = 1;
    c->lane_var = -1;
    c->lane = 0;
    r->in_pass = false; /* (the pass's registers hold whole vectors; the edges have their own: fu_ce, fu_ke) */
    r->in_edge = true;
    cg_index idx[FU_MAX_RANK];
    for (int a = 0; a < p->rank; a++) cg_index_var(&idx[a], a, c->var_names[a]);
    emit_elements(r, pass, idx, 1, false);
    r->in_edge = false;
    c->vec = saved_vec;
    c->lane_var = saved_lane_var;
    for (int k = 0; k < 2; k++) {
        c->scope--;
        cg_drop_scope(c);
        c->indent--;
        cg_line(c, "}");
    }
}

/* Phases M and B of slots [from, to) of the batch: the batch max where an
 * online log-sum-exp takes one, then the arithmetic, reading what phase A
 * loaded. A half of the batch (ps->halves) in a scope of its own (its batch
 * max's names). */
static void emit_slots_work(red_emit *r, int pass, const cg_index *idx, int from, int to)
{
    cg_ctx *c = &r->w->cg;
    if (r->ps->halves) cg_open(c);
    emit_batch_max(r, pass, idx, from, to);
    open_slots(r, from, to, false);
    r->in_pass = true;
    emit_vector_work(r, pass, idx);
    r->in_pass = false;
    close_batch_slot(r);
    if (r->ps->halves) cg_close(c);
}

static void emit_pass_loop(red_emit *r, int pass, bool issued);
static void emit_pass_reductions(red_emit *r, int pass);

static void emit_pass(red_emit *r, int pass)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const fu_fusion *f = r->f;
    cg_line(c, "// pass %d over the row", pass);
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        if (ri->pass != pass || !row_kind(ri->kind)) continue;
        const char *ct = cg_compute_type(fu_val(f, ri->out)->dtype);
        if (ri->online_max >= 0) {
            cg_line(c, "%s %s = 0.0f; // online: sum of exp(x - %s)", ct, r->var[i], r->var[ri->online_max]);
        } else if (ri->online_sum >= 0 && p->reds[ri->online_sum].shift_only) {
            char sh[40];
            cg_f32_literal(p->reds[ri->online_sum].shift, sh, sizeof sh);
            cg_line(c, "const %s %s = %s; // the terms' constant shift: the row's max is read by nothing else", ct,
                    r->var[i], sh);
        } else {
            cg_line(c, "%s %s = %s;", ct, r->var[i], fu_red_identity(ri->op, fu_val(f, ri->out)->dtype));
        }
    }
    const bool issued = pass == 1 && p->first_batch_early;
    if (!issued) begin_pass(r, pass);
    const fu_tensor uc = r->ps->unswitch;
    if (uc < 0) {
        emit_pass_loop(r, pass, issued);
    } else { /* the loop twice, the row's condition known in each (ROW_UNSWITCH) */
        const fu_value *ucv = fu_val(f, uc);
        cg_index ridx[FU_MAX_RANK];
        row_index(p, c, ucv, ridx);
        const char *cond = cg_value(c, uc, ridx);
        bool before[MAX_CACHE], after_true[MAX_CACHE];
        memcpy(before, r->edge_loaded, sizeof before);
        for (int branch = 0; branch < 2; branch++) {
            if (branch == 0) cg_line(c, "if (%s) { // '%s' is one value a row: the pass's loop for each", cond, ucv->name);
            else cg_line(c, "} else {");
            c->indent++;
            c->scope++;
            cg_assume(c, uc, ridx, branch == 0);
            emit_pass_loop(r, pass, issued);
            c->scope--;
            cg_drop_scope(c);
            c->indent--;
            /* an edge element is loaded after both only where both loaded it */
            if (branch == 0) {
                memcpy(after_true, r->edge_loaded, sizeof after_true);
                memcpy(r->edge_loaded, before, sizeof before);
            } else {
                for (int k = 0; k < MAX_CACHE; k++) r->edge_loaded[k] = r->edge_loaded[k] && after_true[k];
            }
        }
        cg_line(c, "}");
    }
    if (pass == 1 && p->row_prefetch && !p->queue) {
        char step[64], next[140];
        strided_rows(p, c, NULL, step);
        snprintf(next, sizeof next, "row + %s", step);
        emit_batch_ahead(r, next, "next row: its first batch in flight during this row's remaining work");
    }
    if (pass == 1 && p->row_prefetch && p->queue)
        cg_line(c, "if (threadIdx.x == 0) fu_next[fu_q ^ 1u] = fu_ticket; // every thread's after the reductions' barriers");
    emit_pass_reductions(r, pass);
    if (pass == 1 && p->row_prefetch && p->queue) {
        char next[64];
        snprintf(next, sizeof next, "(%s)fu_next[fu_q ^ 1u]", c->index64 ? "long long" : "int");
        emit_batch_ahead(r, next, "next row: its first batch in flight during this row's later passes");
    }
}

/* The pass's loop over the row's batches (its first already in flight where
 * issued), with the row's edges and the slots' work. */
static void emit_pass_loop(red_emit *r, int pass, bool issued)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const red_pass *ps = r->ps;
    cg_index idx[FU_MAX_RANK];
    full_index(r, idx);
    c->vec = p->vec;
    c->lane_var = p->vec > 1 ? p->rank - 1 : -1;
    cg_line(c, "#pragma unroll%s", ps->unrolled ? "" : " 1");
    cg_line(c, "for (int it0 = 0; it0 < %d; it0 += %d) {", p->iters, ps->batch);
    c->indent++;
    c->scope++;
    const int half = ps->batch / 2;
    if (ps->halves) { /* (pass 1, issued) this batch's first half is in flight: its second half joins it */
        emit_slot_loads(r, idx, half, ps->batch, false);
    } else if (!issued) {
        declare_staged(r);
        emit_batch_loads(r, idx);
    } else if (p->iters > ps->batch) { /* the first batch is in flight already */
        cg_line(c, "if (it0 != 0) {");
        c->indent++;
        c->scope++;
        emit_batch_loads(r, idx);
        c->scope--;
        cg_drop_scope(c);
        c->indent--;
        cg_line(c, "}");
    }
    emit_row_edges(r, pass);
    if (ps->halves) { /* the first half's arithmetic, the next batch's first half, the second half's */
        emit_slots_work(r, pass, idx, 0, half);
        cg_line(c, "if (it0 + %d < %d) {", ps->batch, p->iters);
        c->indent++;
        c->scope++;
        emit_slot_loads(r, idx, 0, half, true);
        c->scope--;
        cg_drop_scope(c);
        c->indent--;
        cg_line(c, "}");
        emit_slots_work(r, pass, idx, half, ps->batch);
    } else {
        emit_slots_work(r, pass, idx, 0, ps->batch);
    }
    /* pass 1 keeps the row in this thread's slots for the later passes */
    if (pass == 1 && p->nsmem) {
        open_batch_slot(r);
        for (int k = 0; k < ps->nstage; k++) {
            int sk = smem_index(p, ps->stage_t[k]);
            if (sk < 0) continue;
            char slot[96];
            smem_slot(p, sk, slot, sizeof slot);
            const char *wide = cg_vector_type(p->smem_slot_bytes[sk]);
            cg_line(c, "*(%s *)(%s) = *(const %s *)(fu_s%d + b * %d);", wide, slot, wide, k, p->vec);
        }
        close_batch_slot(r);
    }
    c->vec = 1; /* per-row code after the pass is scalar */
    c->lane_var = -1;
    cg_close(c); /* it0 */
}

/* After the pass's loop: its reductions across the block (warp, cluster). */
static void emit_pass_reductions(red_emit *r, int pass)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const fu_fusion *f = r->f;
    const char *relaxed = CLUSTER_RELAXED_ARRIVE ? ", true" : ""; /* the cluster combines' barrier */
    /* the pass's reductions across the block */
    bool joined[MAX_REDS] = {false}; /* reduced with an earlier one (JOINT_BLOCK_REDUCE) */
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        if (ri->pass != pass || !row_kind(ri->kind) || ri->online_sum >= 0) continue;
        const char *ct = cg_compute_type(fu_val(f, ri->out)->dtype);
        int partner = joined[i] ? -1 : block_reduce_partner(r, pass, i, joined);
        if (partner >= 0) {
            if (one_warp_block(p)) { /* within the warp, each on its own */
                emit_block_reduce(r, r->var[i], r->var[i], ri->op, ct);
                emit_block_reduce(r, r->var[partner], r->var[partner], p->reds[partner].op, ct);
            } else {
                cg_line(c, "fu_block_reduce2(%s, %s, %s, %s, %s);", r->var[i], op_functor(ri->op), r->var[partner],
                        op_functor(p->reds[partner].op), smem_of(ct));
            }
            joined[partner] = true;
        }
        if (ri->online_max >= 0 && !ri->shift_only) {
            const char *m = r->var[ri->online_max];
            if (ri->const_shift) { /* max and sum as they are, then the one rescale to exp(x - m) */
                char sh[40]; /* (a shift of 0 must print as 0.0f) */
                cg_f32_literal(ri->shift, sh, sizeof sh);
                if (p->warp_rows > 1) cg_line(c, "fu_lse_shifted_lanes<%d>(%s, %s, %s);", p->threads, m, r->var[i], sh);
                else cg_line(c, "fu_lse_shifted_block(%s, %s, %s, (float *)fu_smem);", m, r->var[i], sh);
            } else if (p->warp_rows > 1 && p->threads < 32) cg_line(c, "fu_lse_lanes<%d>(%s, %s);", p->threads, m, r->var[i]);
            else if (p->warp_rows > 1 || one_warp_block(p)) cg_line(c, "fu_lse_warp(%s, %s);", m, r->var[i]);
            else cg_line(c, "fu_lse_block(%s, %s, (float *)fu_smem);", m, r->var[i]);
            if (p->cluster > 1)
                cg_line(c, "fu_lse_cluster<%d%s>(%s, %s, (float *)(fu_cl + (fu_par * %d + %d) * 2)); // the cluster's parts",
                        p->cluster, relaxed, m, r->var[i], p->nslots, i);
            r->avail[ri->online_max] = true;
        } else {
            if (p->warp_rows > 1 && p->threads < 32)
                cg_line(c, "%s = fu_lanes_reduce<%d>(%s, %s);", r->var[i], p->threads, r->var[i], op_functor(ri->op));
            else if (p->warp_rows > 1) cg_line(c, "%s = fu_warp_reduce(%s, %s);", r->var[i], r->var[i], op_functor(ri->op));
            else if (partner < 0 && !joined[i]) emit_block_reduce(r, r->var[i], r->var[i], ri->op, ct);
            if (p->cluster > 1)
                cg_line(c, "%s = fu_cluster_reduce<%d%s>(%s, %s, (%s *)(fu_cl + (fu_par * %d + %d) * 2)); // the cluster's parts",
                        r->var[i], p->cluster, relaxed, r->var[i], op_functor(ri->op), ct, p->nslots, i);
            if (ri->online_max >= 0) r->avail[ri->online_max] = true; /* shift_only: the shift */
        }
        r->avail[i] = ri->kind == RK_ROW;
        if (r->avail[i]) fu_red_round(c, ri->op, fu_val(f, ri->out)->dtype, r->var[i]);
    }
}

static void emit_grid_prologue(red_emit *r, int i)
{
    const red_params *p = r->p;
    const red_info *ri = &p->reds[i];
    cg_ctx *c = &r->w->cg;
    const fu_fusion *f = r->f;
    const char *it = c->index64 ? "long long" : "int";
    const fu_value *x = fu_val(f, ri->in);
    const char *ct = cg_compute_type(fu_val(f, ri->out)->dtype);
    cg_line(c, "%s %s; // %s, computed by every block: rows need it", ct, r->var[i], fu_val(f, ri->out)->name);
    cg_open(c);
    cg_line(c, "%s acc = %s;", ct, fu_red_identity(ri->op, fu_val(f, ri->out)->dtype));
    const int64_t trip = (p->rows + p->block_threads - 1) / p->block_threads; /* a thread's rows */
    const bool whole = trip <= GRID_PROLOGUE_LOADS, guarded = whole && p->rows % p->block_threads != 0;
    if (whole) { /* the loop whole: every load of the thread in flight at once */
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (int k = 0; k < %lld; k++) {", (long long)trip);
        c->indent++;
        c->scope++;
        cg_line(c, "const %s row = (%s)threadIdx.x + k * %d;", it, it, p->block_threads);
        if (guarded) { /* (the last round's rows: a predicated load, not a branch out of the loop) */
            cg_line(c, "if (row < %lld) {", (long long)p->rows);
            c->indent++;
            c->scope++;
        }
    } else {
        cg_line(c, "for (%s row = threadIdx.x; row < %lld; row += %d) {", it, (long long)p->rows, p->block_threads);
        c->indent++;
        c->scope++;
    }
    emit_outer_vars(r, "row");
    cg_index idx[FU_MAX_RANK];
    row_index(p, c, x, idx);
    char once[96], guard_text[CG_EXPR + 128];
    once_per_element(p, c, x, once, sizeof once);
    fu_red_combine(c, ri->op, "acc",
                   fu_red_guard(ri->op, fu_val(f, ri->out)->dtype, once, cg_value(c, ri->in, idx), guard_text, sizeof guard_text));
    if (guarded) cg_close(c); /* the last round's check */
    cg_close(c);
    emit_block_reduce(r, r->var[i], "acc", ri->op, ct);
    fu_red_round(c, ri->op, fu_val(f, ri->out)->dtype, r->var[i]);
    cg_close(c);
    r->avail[i] = true;
}

/* The per-row values plan_hoists listed for this point of the row. */
static void emit_hoisted(red_emit *r, int pass)
{
    const tensor_list *l = &r->p->pass[pass].hoist;
    for (int k = 0; k < l->n; k++) {
        cg_index idx[FU_MAX_RANK];
        row_index(r->p, &r->w->cg, fu_val(r->f, l->t[k]), idx);
        cg_value(&r->w->cg, l->t[k], idx);
    }
}

/* Before the rows: this thread's accumulators of each column reduction, one
 * per row position it owns (iters x vec, indexed by constants). */
static void emit_column_accumulators(red_emit *r)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        if (ri->kind != RK_COL) continue;
        const fu_dtype dt = fu_val(r->f, ri->out)->dtype;
        cg_line(c, "%s fu_col%d[%d]; // %s: this thread's row positions, summed over the block's rows",
                cg_compute_type(dt), i, p->iters * p->vec, fu_val(r->f, ri->out)->name);
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (int q = 0; q < %d; q++) fu_col%d[q] = %s;", p->iters * p->vec, i, fu_red_identity(ri->op, dt));
    }
}

/* Level 0 (the blocks' partials) or 1 (the groups') of the column combine:
 * partials first .. first + min(count, COL_COMBINE_CHUNK) - 1 of column kb,
 * all loaded, then combined into each reduction's variable in order. */
static void emit_partials_chunk(red_emit *r, const char *first, const char *count, int level)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const fu_fusion *f = r->f;
    c->indent++;
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        if (ri->kind != RK_COL) continue;
        const fu_dtype dt = fu_val(f, ri->out)->dtype;
        const char *ct = cg_compute_type(dt);
        cg_line(c, "%s fu_p%d[%d];", ct, i, COL_COMBINE_CHUNK);
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (unsigned j = 0; j < %du; j++)", COL_COMBINE_CHUNK);
        cg_line(c, "  fu_p%d[j] = j < %s ? __ldcg((const %s *)(fu_ws + %lld) + (long long)(%s + j) * %lld + kb) : %s;", i, count, ct,
                (long long)(level == 0 ? ri->col_ws : ri->col_ws_groups), first, (long long)p->K, fu_red_identity(ri->op, dt));
    }
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        if (ri->kind != RK_COL) continue;
        char v[32];
        snprintf(v, sizeof v, "fu_p%d[j]", i);
        cg_line(c, "#pragma unroll");
        cg_line(c, "for (unsigned j = 0; j < %du; j++)", COL_COMBINE_CHUNK);
        c->indent++;
        cg_line(c, "if (j < %s)", count);
        c->indent++;
        fu_red_combine(c, ri->op, r->var[i], v);
        c->indent -= 2;
    }
    c->indent--;
}

/* After the rows: each thread's column sums of the block's rows, the block's partial. */
static void emit_column_partials(red_emit *r)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const fu_fusion *f = r->f;
    const int64_t K = p->K;
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "#pragma unroll");
    cg_line(c, "for (int it = 0; it < %d; it++) {", p->iters);
    c->indent++;
    cg_line(c, "const %s kb = ((%s)it * %d + threadIdx.x) * %d;", it, it, p->threads, p->vec);
    cg_line(c, "if (kb < %lld) {", (long long)K);
    c->indent++;
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        if (ri->kind != RK_COL) continue;
        const char *ct = cg_compute_type(fu_val(f, ri->out)->dtype);
        /* 16-byte stores where a thread's columns fill them, aligned: the workspace is,
         * col_ws is a multiple of K 8-byte slots, and blockIdx.x * K + kb a multiple of 4
         * floats where K and vec are multiples of 4 */
        const bool f4 = COL_PARTIAL_VEC_STORES && strcmp(ct, "float") == 0 && p->vec % 4 == 0 && K % 4 == 0;
        for (int lane = 0; lane < p->vec; lane += f4 ? 4 : 1) {
            if (f4)
                cg_line(c,
                        "*(float4 *)((float *)(fu_ws + %lld) + (long long)blockIdx.x * %lld + kb + %d) = "
                        "make_float4(fu_col%d[it * %d + %d], fu_col%d[it * %d + %d], fu_col%d[it * %d + %d], fu_col%d[it * %d + %d]);",
                        (long long)ri->col_ws, (long long)K, lane, i, p->vec, lane, i, p->vec, lane + 1, i, p->vec, lane + 2, i,
                        p->vec, lane + 3);
            else
                cg_line(c, "((%s *)(fu_ws + %lld))[(long long)blockIdx.x * %lld + kb + %d] = fu_col%d[it * %d + %d];", ct,
                        (long long)ri->col_ws, (long long)K, lane, i, p->vec, lane);
        }
    }
    c->indent--;
    cg_line(c, "}");
    c->indent--;
    cg_line(c, "}");
}

/* One column kb of a combine level, inside the caller's loop: level 0 adds the
 * partials of the blocks fu_first .. fu_first + fu_members - 1 in block order
 * into the group's partial fu_group; level 1 adds the groups' fu_g0 .. fu_g0 +
 * fu_gn - 1 in group order (all of them, where the caller has no runs), then,
 * with runs (COL_LEVEL1_RUNS lanes a column), adds the runs across the lanes,
 * and writes the per-column outputs (where has_column: "kb < K && part 0"). */
static void emit_column_level(red_emit *r, int level, int runs, const char *has_column)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const fu_fusion *f = r->f;
    const int64_t K = p->K;
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        if (ri->kind != RK_COL) continue;
        const fu_dtype dt = fu_val(f, ri->out)->dtype;
        cg_line(c, "%s %s = %s;", cg_compute_type(dt), r->var[i], fu_red_identity(ri->op, dt));
    }
    /* a column's partials COL_COMBINE_CHUNK at a time, every load of the chunk (of
     * every column reduction) issued before the first add, then added in order: a
     * loop that adds as it loads has one L2 round trip in flight (docs/perf.md v22) */
    if (level == 0) {
        cg_line(c, "for (unsigned q0 = 0; q0 < fu_members; q0 += %du) { // the group's blocks, in block order", COL_COMBINE_CHUNK);
        emit_partials_chunk(r, "fu_first + q0", "fu_members - q0", level);
    } else {
        cg_line(c, "for (unsigned q0 = 0; q0 < fu_gn; q0 += %du) { // the groups, in group order", COL_COMBINE_CHUNK);
        emit_partials_chunk(r, "fu_g0 + q0", "fu_gn - q0", level);
    }
    cg_line(c, "}");
    if (level == 0) {
        for (int i = 0; i < p->nred; i++) /* the group's partial */
            if (p->reds[i].kind == RK_COL)
                cg_line(c, "((%s *)(fu_ws + %lld))[(long long)fu_group * %lld + kb] = %s;",
                        cg_compute_type(fu_val(f, p->reds[i].out)->dtype), (long long)p->reds[i].col_ws_groups, (long long)K,
                        r->var[i]);
        return;
    }
    /* the runs' sums across the column's lanes: xor 1, 2, 4 .. (every lane of the warp is here) */
    for (int step = 1; step < runs; step *= 2)
        for (int i = 0; i < p->nred; i++)
            if (p->reds[i].kind == RK_COL) {
                char other[48];
                snprintf(other, sizeof other, "__shfl_xor_sync(0xffffffffu, %s, %d)", r->var[i], step);
                fu_red_combine(c, p->reds[i].op, r->var[i], other);
            }
    if (has_column) {
        cg_line(c, "if (%s) {", has_column);
        c->indent++;
        c->scope++;
    }
    for (int i = 0; i < p->nred; i++)
        if (p->reds[i].kind == RK_COL) {
            r->avail[i] = true;
            fu_red_round(c, p->reds[i].op, fu_val(f, p->reds[i].out)->dtype, r->var[i]);
        }
    emit_inner_vars(r);
    for (int o = 0; o < p->ncol_out; o++) {
        const fu_value *v = fu_val(f, p->col_out[o]);
        cg_index idx[FU_MAX_RANK], off;
        col_index(p, c, v, idx);
        const char *val = cg_value(c, p->col_out[o], idx);
        cg_offset(c, v->rank, v->shape, v->strides, idx, &off);
        fu_kw_store(r->w, fu_kw_output(r->w, p->col_out[o]), off.expr, val);
    }
    if (has_column) {
        c->scope--;
        cg_drop_scope(c);
        c->indent--;
        cg_line(c, "}");
    }
}

/* The column combine over the whole grid (COL_GRID_SYNC; a cooperative launch,
 * every block resident): once every block's partial is written, the (group,
 * column) pairs of level 0 are spread over all the grid's threads, and after a
 * second barrier the columns of level 1, COL_LEVEL1_RUNS lanes a column. Level
 * 0 makes the same additions in the same order as the last-block form below;
 * level 1 adds the runs in a tree, so the bits are those of that form only
 * where COL_LEVEL1_RUNS is 1 (deterministic either way: the order depends on
 * the resident grid alone). Where one last block did all the work, the tail
 * after the rows was most of a norm backward's time. */
static void emit_column_combine_grid(red_emit *r)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const int64_t K = p->K;
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "// column reductions: partials per block; then over the whole grid, per group of %d blocks, then per column",
            COL_GROUP_BLOCKS);
    emit_column_partials(r);
    cg_line(c, "const unsigned fu_groups = (gridDim.x + %du) / %du; // (the grid: what is resident, at most the planned %lld)",
            COL_GROUP_BLOCKS - 1, COL_GROUP_BLOCKS, (long long)p->grid);
    cg_line(c, "fu_grid_sync(fu_count + 2); // every block's partial written");
    cg_line(c, "for (long long fu_w = (long long)blockIdx.x * %d + threadIdx.x; fu_w < (long long)fu_groups * %lld;"
               " fu_w += (long long)gridDim.x * %d) {",
            p->block_threads, (long long)K, p->block_threads);
    c->indent++;
    c->scope++;
    cg_line(c, "const unsigned fu_group = (unsigned)(fu_w / %lld), fu_first = fu_group * %du;", (long long)K, COL_GROUP_BLOCKS);
    cg_line(c, "const unsigned fu_members = gridDim.x - fu_first < %du ? gridDim.x - fu_first : %du;", COL_GROUP_BLOCKS,
            COL_GROUP_BLOCKS);
    cg_line(c, "const %s kb = (%s)(fu_w - (long long)fu_group * %lld);", it, it, (long long)K);
    emit_column_level(r, 0, 1, NULL);
    cg_close(c);
    cg_line(c, "fu_grid_sync(fu_count + 2); // every group's partial written (two barriers: the counter as it was)");
    const int runs = p->block_threads % 32 == 0 ? COL_LEVEL1_RUNS : 1; /* (whole warps: the shuffles) */
    if (runs <= 1) {
        cg_line(c, "for (%s kb = (%s)blockIdx.x * %d + threadIdx.x; kb < %lld; kb += (%s)gridDim.x * %d) {", it, it,
                p->block_threads, (long long)K, it, p->block_threads);
        c->indent++;
        c->scope++;
        cg_line(c, "const unsigned fu_g0 = 0u, fu_gn = fu_groups;");
        emit_column_level(r, 1, 1, NULL);
        cg_close(c);
        return;
    }
    /* a column's lanes are consecutive and a warp holds whole columns; the loop runs
     * to a multiple of the warp so that every lane of a warp takes each trip */
    const long long lanes = ((long long)K * runs + 31) / 32 * 32;
    cg_line(c, "const unsigned fu_run = (fu_groups + %du) / %du; // groups a lane adds: %d runs of them a column, "
               "added across the column's lanes", runs - 1, runs, runs);
    cg_line(c, "for (long long fu_w = (long long)blockIdx.x * %d + threadIdx.x; fu_w < %lldll; fu_w += (long long)gridDim.x * %d) {",
            p->block_threads, lanes, p->block_threads);
    c->indent++;
    c->scope++;
    cg_line(c, "const %s kb = (%s)(fu_w / %d);", it, it, runs);
    cg_line(c, "const unsigned fu_part = (unsigned)(fu_w %% %d), fu_g0 = fu_part * fu_run;", runs);
    cg_line(c, "const unsigned fu_gn = kb < %lld && fu_g0 < fu_groups ? (fu_groups - fu_g0 < fu_run ? fu_groups - fu_g0 : fu_run) : 0u;",
            (long long)K);
    char has[64];
    snprintf(has, sizeof has, "fu_part == 0u && kb < %lld", (long long)K);
    emit_column_level(r, 1, runs, has);
    cg_close(c);
}

/* The column combine by last blocks (without COL_GRID_SYNC): the group's last
 * block combines its blocks' partials in block order, the last group's
 * combines the groups' in group order and writes the per-column outputs.
 * Deterministic; the counters are left at zero. */
static void emit_column_combine_last(red_emit *r)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const int64_t K = p->K;
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "// column reductions: partials per block, per group of %d blocks, then one last block", COL_GROUP_BLOCKS);
    emit_column_partials(r);
    cg_line(c, "unsigned *fu_group_done = (unsigned *)(fu_ws + %lld);", (long long)p->col_ws_counters);
    cg_line(c, "__shared__ int fu_last;");
    cg_line(c, "const unsigned fu_group = blockIdx.x / %du, fu_first = fu_group * %du;", COL_GROUP_BLOCKS, COL_GROUP_BLOCKS);
    cg_line(c, "const unsigned fu_members = gridDim.x - fu_first < %du ? gridDim.x - fu_first : %du;", COL_GROUP_BLOCKS,
            COL_GROUP_BLOCKS);
    cg_line(c, "const unsigned fu_groups = %lldu;", (long long)p->col_groups);
    cg_line(c, "__threadfence();");
    cg_line(c, "__syncthreads();");
    cg_line(c, "if (threadIdx.x == 0) fu_last = atomicAdd(&fu_group_done[fu_group], 1u) == fu_members - 1;");
    cg_line(c, "__syncthreads();");
    cg_line(c, "if (!fu_last) return;");
    cg_line(c, "__threadfence();");
    cg_line(c, "if (threadIdx.x == 0) fu_group_done[fu_group] = 0u;");
    for (int level = 0; level < 2; level++) {
        if (level == 1) {
            cg_line(c, "__threadfence();");
            cg_line(c, "__syncthreads();");
            cg_line(c, "if (threadIdx.x == 0) fu_last = atomicAdd(fu_count, 1u) == fu_groups - 1u;");
            cg_line(c, "__syncthreads();");
            cg_line(c, "if (!fu_last) return;");
            cg_line(c, "__threadfence();");
            cg_line(c, "if (threadIdx.x == 0) *fu_count = 0u; // ready for the next launch");
        }
        cg_line(c, "for (%s kb = threadIdx.x; kb < %lld; kb += %d) {", it, (long long)K, p->threads);
        c->indent++;
        c->scope++;
        if (level == 1) cg_line(c, "const unsigned fu_g0 = 0u, fu_gn = fu_groups;");
        emit_column_level(r, level, 1, NULL);
        cg_close(c);
    }
}

/* Whether the launch covers every row at once (a row a block, or a warp),
 * so that the row loop runs at most once and is an `if` (SMALL_ROW_IF): the
 * compiler then has no loop to version on the per-row values' branches
 * (fz_7_93's log1p made three copies of the loop body: 4992 bytes of code,
 * 3584 as an `if`; docs/perf.md v33). Only a launch that may shrink to what
 * is resident (a grid barrier) keeps the loop. */
static bool one_row_each(const red_params *p)
{
    return SMALL_ROW_IF && !p->grid_sync && p->cluster == 1 && !p->queue && p->grid * p->warp_rows >= p->rows;
}

/* Where a warp (or L lanes) takes a row: the thread's lane in its row and the
 * block's row slot it works on. */
static void emit_row_lanes(red_emit *r)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    if (p->warp_rows <= 1 || p->queue || p->cluster > 1) return;
    if (p->threads == 32)
        cg_line(c, "const unsigned fu_lane = threadIdx.x & 31u, fu_warp = threadIdx.x >> 5; // a warp a row");
    else
        cg_line(c, "const unsigned fu_lane = threadIdx.x & %du, fu_warp = threadIdx.x >> %d; // %d lanes a row, %d rows a warp",
                p->threads - 1, log2_int(p->threads), p->threads, 32 / p->threads);
}

/* A row split over a cluster: the block's part of each row, and the slots of
 * the row reductions (before the row loop, and before the first row's prefetched
 * batch where there is one: that batch is the block's part). */
static void emit_cluster_part(red_emit *r)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "__shared__ double fu_cl[%d]; // the row reductions' slots, two rows' worth (distributed shared memory)",
            4 * p->nslots);
    cg_line(c, "const unsigned fu_rank = fu_cluster_rank(); // this block's part of the row");
    cg_line(c, "const %s fu_kbase = (%s)fu_rank * %lld, fu_kend = fu_kbase + %lld < %lld ? fu_kbase + %lld : %lld;", it, it,
            (long long)p->K_part, (long long)p->K_part, (long long)p->K, (long long)p->K_part, (long long)p->K);
}

/* The row loop's head: rows from the queue, whole clusters a row, a warp a
 * row, or the block's threads a row, strided. */
static void emit_row_loop_head(red_emit *r)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const char *it = c->index64 ? "long long" : "int";
    if (p->queue) {
        /* rows + gridDim.x tickets in all: one per row, and each block's last one, past the rows */
        cg_line(c, "// rows in order from the queue fu_count[1], each taken a row ahead (see ROW_QUEUE)");
        cg_line(c, "__shared__ unsigned fu_next[2];");
        cg_line(c, "if (threadIdx.x == 0) fu_next[0] = fu_take_row(fu_count + 1, %lldu + gridDim.x);", (long long)p->rows);
        cg_line(c, "__syncthreads();");
        if (p->row_prefetch) {
            char first[64];
            snprintf(first, sizeof first, "(%s)fu_next[0]", it);
            emit_batch_ahead(r, first, FIRST_BATCH_AHEAD);
        }
        cg_line(c, "for (unsigned fu_q = 0;; fu_q ^= 1u) {");
        c->indent++;
        c->scope++;
        cg_line(c, "const %s row = (%s)fu_next[fu_q];", it, it);
        cg_line(c, "if (row >= %lld) break;", (long long)p->rows);
        cg_line(c, "unsigned fu_ticket = 0; // the block's next row, read at the end of this one");
        cg_line(c, "if (threadIdx.x == 0) fu_ticket = fu_take_row(fu_count + 1, %lldu + gridDim.x);", (long long)p->rows);
    } else if (p->cluster > 1) {
        cg_line(c, "unsigned fu_par = 0; // which row's slots");
        cg_line(c, "for (%s row = blockIdx.x / %d; row < %lld; row += gridDim.x / %d, fu_par ^= 1u) {", it, p->cluster,
                (long long)p->rows, p->cluster);
        c->indent++;
        c->scope++;
    } else {
        /* a warp a row, or the block's threads a row: strided by the grid, or one each */
        char first[64], step[64];
        strided_rows(p, c, first, step);
        if (one_row_each(p))
            cg_line(c, "if (const %s row = %s; row < %lld) { // the grid covers the rows: one each", it, first, (long long)p->rows);
        else
            cg_line(c, "for (%s row = %s; row < %lld; row += %s) {", it, first, (long long)p->rows, step);
        c->indent++;
        c->scope++;
    }
}

/* Grid reductions: each block's partials (each row's, with the queue), then
 * the last block to finish combines them in block (or row) order. */
static void emit_grid_combine(red_emit *r)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const fu_fusion *f = r->f;
    for (int i = 0; i < p->nred && !p->queue; i++) {
        const red_info *ri = &p->reds[i];
        if (!grid_kind(ri->kind)) continue;
        if (p->cluster > 1) /* a row's values are the same in every block of its cluster: counted once */
            cg_line(c, "if (fu_rank != 0u) fu_g%d = %s;", i, fu_red_identity(ri->op, fu_val(f, ri->out)->dtype));
        if (p->warp_rows > 1) { /* the warps' parts (each lane holds its warp's), in warp order */
            const fu_dtype dt = fu_val(f, ri->out)->dtype;
            char dst[16], src[96];
            snprintf(dst, sizeof dst, "fu_g%d", i);
            snprintf(src, sizeof src, "fu_lane == 0 ? fu_g%d : %s", i, fu_red_identity(ri->op, dt));
            emit_block_reduce(r, dst, src, ri->op, cg_compute_type(dt));
        }
        cg_line(c, "if (threadIdx.x == 0) fu_ws[blockIdx.x * %d + %d] = (double)fu_g%d;", p->ngrid, ri->grid_slot, i);
    }
    cg_line(c, "__shared__ int fu_last;");
    cg_line(c, "__threadfence();");
    cg_line(c, "__syncthreads();");
    cg_line(c, "if (threadIdx.x == 0) fu_last = atomicAdd(fu_count, 1u) == gridDim.x - 1;");
    cg_line(c, "__syncthreads();");
    cg_line(c, "if (!fu_last) return;");
    cg_line(c, "__threadfence();");
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        if (!grid_kind(ri->kind)) continue;
        const char *ct = cg_compute_type(fu_val(f, ri->out)->dtype);
        cg_line(c, "%s %s = %s;", ct, r->var[i], fu_red_identity(ri->op, fu_val(f, ri->out)->dtype));
        if (p->queue) cg_line(c, "for (unsigned b = threadIdx.x; b < %lldu; b += %d) { // the rows' partials", (long long)p->rows, p->block_threads);
        else cg_line(c, "for (unsigned b = threadIdx.x; b < gridDim.x; b += %d) {", p->block_threads);
        c->indent++;
        char v[64];
        snprintf(v, sizeof v, "(%s)__ldcg(&fu_ws[b * %d + %d])", ct, p->ngrid, ri->grid_slot);
        fu_red_combine(c, ri->op, r->var[i], v);
        c->indent--;
        cg_line(c, "}");
        emit_block_reduce(r, r->var[i], r->var[i], ri->op, ct);
        fu_red_round(c, ri->op, fu_val(f, ri->out)->dtype, r->var[i]);
        r->avail[i] = true;
    }
}

/* The index of output v's element `elem` (a C variable): one variable an axis of extent
 * above 1, declared here and added to the domain's. False (c failed) when none are left. */
static bool output_element_index(cg_ctx *c, const fu_value *v, const char *elem, cg_index *idx)
{
    if (c->nvars + v->rank > CG_MAXVARS) {
        cg_fail(c, "reduction: no index variables left for output '%s'", v->name);
        return false;
    }
    int64_t stride = 1;
    for (int a = v->rank - 1; a >= 0; a--) {
        if (v->shape[a] == 1) {
            cg_index_const(&idx[a], 0);
            continue;
        }
        char name[32];
        snprintf(name, sizeof name, "fu_e%d_%d", c->tmp++, a);
        int var = cg_add_var(c, name);
        cg_digit_var(c, var, elem, stride, v->shape[a], false);
        cg_index_var(&idx[a], var, name);
        stride *= v->shape[a];
    }
    return true;
}

/* Output t's value at idx stored where idx puts it. */
static void store_output_element(red_emit *r, fu_tensor t, const cg_index *idx)
{
    cg_ctx *c = &r->w->cg;
    const fu_value *v = fu_val(r->f, t);
    cg_index off;
    const char *val = cg_value(c, t, idx);
    cg_offset(c, v->rank, v->shape, v->strides, idx, &off);
    fu_kw_store(r->w, fu_kw_output(r->w, t), off.expr, val);
}

/* Output t, of another shape than the row's, element by element from `first` in steps of
 * `step` (its inputs read from memory, the reductions from their registers): by the row's
 * block after the passes where there is one row (emit_single_row_output), over the grid
 * before the rows where it reads no row value (emit_free_output). */
static void emit_output_elements(red_emit *r, fu_tensor t, const char *first, const char *step, const char *what)
{
    cg_ctx *c = &r->w->cg;
    const fu_value *v = fu_val(r->f, t);
    const char *it = c->index64 ? "long long" : "int";
    cg_line(c, "for (%s fu_e = %s; fu_e < %lld; fu_e += %s) { // '%s' %s", it, first,
            (long long)fu_shape_numel(v->rank, v->shape), step, v->name, what);
    c->indent++;
    c->scope++;
    cg_index idx[FU_MAX_RANK];
    if (output_element_index(c, v, "fu_e", idx)) store_output_element(r, t, idx);
    c->scope--;
    c->indent--;
    cg_drop_scope(c);
    cg_line(c, "}");
}

/* A single row's output of at most one element a thread, computed ahead where it can be
 * (SINGLE_ROW_AHEAD): before the passes, each thread's element (clamped into the output,
 * so every load is in bounds) gets the parts of its value that need no reduction, so
 * that their loads (a gather's index, say) are in flight during the passes instead of
 * starting after the last block reduction; emit_single_row_output adds the rest. */
static void emit_single_row_ahead(red_emit *r)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    if (!SINGLE_ROW_AHEAD || p->cluster > 1 || p->warp_rows > 1 || p->ngrid > 0 || p->queue) return;
    for (int o = 0; o < p->nsingle_out; o++) {
        const fu_value *v = fu_val(r->f, p->single_out[o]);
        int64_t n = fu_shape_numel(v->rank, v->shape);
        if (n > p->block_threads || n < 1) continue;
        char elem[32];
        snprintf(elem, sizeof elem, "fu_h%d", c->tmp++);
        cg_line(c, "const int %s = threadIdx.x < %lldu ? (int)threadIdx.x : %lld; // '%s' of the single row, "
                   "computed ahead", elem, (long long)n, (long long)n - 1, v->name);
        if (!output_element_index(c, v, elem, r->ahead_idx[o])) return;
        c->deferring = true;
        cg_value(c, p->single_out[o], r->ahead_idx[o]);
        c->deferring = false;
        r->ahead[o] = true;
    }
}

static void emit_single_row_output(red_emit *r, int o)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    fu_tensor t = p->single_out[o];
    if (!r->ahead[o]) {
        char step[16];
        snprintf(step, sizeof step, "%d", p->block_threads);
        emit_output_elements(r, t, p->tid, step, "of the single row");
        return;
    }
    const fu_value *v = fu_val(r->f, t);
    cg_line(c, "if (threadIdx.x < %lldu) { // '%s' of the single row, the rest of it",
            (long long)fu_shape_numel(v->rank, v->shape), v->name);
    c->indent++;
    c->scope++;
    store_output_element(r, t, r->ahead_idx[o]);
    c->scope--;
    c->indent--;
    cg_drop_scope(c);
    cg_line(c, "}");
}

static void emit_free_output(red_emit *r, fu_tensor t)
{
    const char *it = r->w->cg.index64 ? "(long long)" : "";
    char first[80], step[64];
    snprintf(first, sizeof first, "%sblockIdx.x * blockDim.x + threadIdx.x", it);
    snprintf(step, sizeof step, "%sgridDim.x * blockDim.x", it);
    emit_output_elements(r, t, first, step, "reads no row value: over the grid");
}

static void emit_kernel(red_emit *r, const fu_kernel_plan *kp)
{
    const red_params *p = r->p;
    cg_ctx *c = &r->w->cg;
    const fu_fusion *f = r->f;
    fu_kernel_writer *w = r->w;
    fu_kw_signature(w, kp, (unsigned)p->block_threads, (unsigned)p->min_blocks, p->workspace);
    cg_line(c, "__shared__ double fu_smem[64];");
    if (p->nsmem)
        cg_line(c, "extern __shared__ __align__(16) unsigned char fu_rows[]; // %lld bytes: the row, each thread's own slots",
                (long long)p->smem_bytes);
    for (int i = 0; i < p->nred; i++)
        if (p->reds[i].kind == RK_GRID_PRO) emit_grid_prologue(r, i);
    for (int o = 0; o < p->nfree_out; o++) emit_free_output(r, p->free_out[o]);
    emit_column_accumulators(r);
    for (int i = 0; i < p->nred && !p->queue; i++)
        if (grid_kind(p->reds[i].kind))
            cg_line(c, "%s fu_g%d = %s; // this block's part of %s", cg_compute_type(fu_val(f, p->reds[i].out)->dtype), i,
                    fu_red_identity(p->reds[i].op, fu_val(f, p->reds[i].out)->dtype), fu_val(f, p->reds[i].out)->name);
    emit_row_lanes(r);
    emit_row_invariant_loads(r);
    if (p->cluster > 1) emit_cluster_part(r);
    if (p->row_prefetch) { /* the staged arrays outlive a row: each row loads the next one's first batch */
        char first[64], step[64];
        strided_rows(p, c, first, step);
        begin_pass(r, 1);
        declare_staged(r);
        for (int i = 0; i < p->nrow_ahead; i++) {
            const fu_value *v = fu_val(f, p->row_ahead_t[i]);
            const char *ct = cg_compute_type(v->dtype);
            cg_line(c, "%s fu_ra%d = (%s)0; // '%s', loaded a row ahead", ct, i, ct, v->name);
        }
        if (!p->queue) /* (the queue's first row is known after its first ticket: emit_row_loop_head) */
            emit_batch_ahead(r, first, FIRST_BATCH_AHEAD);
    }
    emit_row_loop_head(r);
    emit_outer_vars(r, "row");
    emit_row_alignment(r, "row");
    for (int i = 0; i < p->nrow_ahead; i++) {
        const fu_value *v = fu_val(f, p->row_ahead_t[i]);
        const char *ct = cg_compute_type(v->dtype);
        row_ahead_offset(r, i, &r->row_ahead_base[i]);
        cg_line(c, "const %s fu_rs%d = fu_ra%d; // '%s' of this row (the next row's is loaded during it)", ct, i, i, v->name);
    }
    r->row_ahead_live = p->nrow_ahead > 0;
    for (int k = 0; k < p->ncache; k++)
        cg_line(c, "alignas(16) %s fu_c%d[%d]; // '%s' kept in registers between passes",
                cg_storage_type(fu_val(f, p->cache_t[k])->dtype), k, p->iters * p->vec, fu_val(f, p->cache_t[k])->name);
    for (int k = 0; k < p->ncache && p->aligned_rows; k++) {
        const char *ct = cg_compute_type(fu_val(f, p->cache_t[k])->dtype);
        cg_line(c, "%s fu_ce%d = (%s)0; // ... and at this thread's row edge", ct, k, ct);
        r->edge_loaded[k] = false;
    }
    for (int k = 0; k < p->nkeep; k++) {
        cg_line(c, "float fu_k%d[%d]; // '%s' from pass %d, kept in registers for the later passes", k, p->iters * p->vec,
                fu_val(f, p->keep_t[k])->name, p->keep_pass[k]);
        if (p->aligned_rows) cg_line(c, "float fu_ke%d = 0.0f; // ... and at this thread's row edge", k);
    }
    /* the canonical offset of each cached input (what lookup_cache matches) */
    for (int k = 0; k < p->ncache; k++) canonical_base(r, p->cache_t[k], &r->cache_base[k]);
    if (p->row_prefetch) begin_pass(r, 1); /* (its first batch is in flight already) */
    else if (p->first_batch_early) emit_first_batch_loads(r);
    cg_line(c, "// per-row values that need no reduction: loaded before the passes");
    emit_hoisted(r, 0);
    emit_single_row_ahead(r);
    for (int pass = 1; pass <= p->passes; pass++) {
        emit_pass(r, pass);
        if (pass < p->passes) {
            cg_line(c, "// per-row values of the reductions so far, before pass %d", pass + 1);
            emit_hoisted(r, pass);
        }
    }
    /* per-row outputs, then this row's share of the grid reductions */
    for (int o = 0; o < p->nrow_out; o++) {
        const fu_value *v = fu_val(f, p->row_out[o]);
        cg_index idx[FU_MAX_RANK], off;
        row_out_index(p, c, v, idx);
        const char *val = cg_value(c, p->row_out[o], idx);
        cg_offset(c, v->rank, v->shape, v->strides, idx, &off);
        char e[512];
        cg_store_expr(c, e, sizeof e, v->dtype, val);
        cg_line(c, "if (%s == 0%s) %s[%s] = %s;", p->tid, p->cluster > 1 ? " && fu_rank == 0u" : "",
                fu_kw_output(w, p->row_out[o])->name, off.expr, e);
    }
    for (int o = 0; o < p->nsingle_out; o++) emit_single_row_output(r, o);
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        if (!grid_kind(ri->kind)) continue;
        const char *val = r->var[i];
        char once[96], guarded[CG_EXPR + 128];
        if (ri->kind == RK_GRID_EPI) {
            cg_index idx[FU_MAX_RANK];
            row_index(p, c, fu_val(f, ri->in), idx);
            once_per_element(p, c, fu_val(f, ri->in), once, sizeof once);
            val = fu_red_guard(ri->op, fu_val(f, ri->out)->dtype, once, cg_value(c, ri->in, idx), guarded, sizeof guarded);
        }
        if (p->queue) {
            cg_line(c, "if (threadIdx.x == 0) fu_ws[(long long)row * %d + %d] = (double)%s;", p->ngrid, ri->grid_slot, val);
        } else {
            char gv[16];
            snprintf(gv, sizeof gv, "fu_g%d", i);
            fu_red_combine(c, ri->op, gv, val);
        }
    }
    if (p->queue) {
        if (!p->row_prefetch) cg_line(c, "if (threadIdx.x == 0) fu_next[fu_q ^ 1u] = fu_ticket;");
        cg_line(c, "__syncthreads();");
    }
    cg_close(c); /* the row loop */
    r->row_ahead_live = false;
    if (p->cluster > 1) cg_line(c, "fu_cluster_sync(); // no block leaves while another may read its slots");
    if (p->ncol && p->grid_sync) emit_column_combine_grid(r);
    else if (p->ncol) emit_column_combine_last(r);
    if (p->ngrid > 0) emit_grid_combine(r);
    if (p->scalars_block0) cg_line(c, "if (blockIdx.x != 0) return;");
    for (int o = 0; o < p->nscalar_out; o++) {
        const fu_value *v = fu_val(f, p->scalar_out[o]);
        if (fu_shape_numel(v->rank, v->shape) > 1) {
            char step[16];
            snprintf(step, sizeof step, "%d", p->block_threads);
            emit_output_elements(r, p->scalar_out[o], "threadIdx.x", step, "of the grid's values, with the scalars");
            continue;
        }
        cg_index idx[FU_MAX_RANK];
        for (int a = 0; a < v->rank; a++) cg_index_const(&idx[a], 0);
        const char *val = cg_value(c, p->scalar_out[o], idx);
        char e[512];
        cg_store_expr(c, e, sizeof e, v->dtype, val);
        cg_line(c, "if (threadIdx.x == 0) %s[0] = %s;", fu_kw_output(w, p->scalar_out[o])->name, e);
    }
    if (p->ngrid > 0) cg_line(c, "if (threadIdx.x == 0) *fu_count = 0u; // ready for the next launch");
    cg_close(c);
}

bool fu_reduction_emit(const fu_group *g, const void *params, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    const red_params *p = params;
    red_emit *r = fu_calloc(1, sizeof *r);
    fu_kernel_writer *w = fu_calloc(1, sizeof *w);
    if (!r || !w) {
        fu_free(r);
        fu_free(w);
        snprintf(why, nwhy, "out of memory");
        return false;
    }
    r->p = p;
    r->g = g;
    r->f = g->f;
    r->w = w;
    for (int i = 0; i < p->nred; i++)
        snprintf(r->var[i], sizeof r->var[i], p->reds[i].kind == RK_COL ? "fu_cv%d" : "r%d", i);
    bool ok = fu_kw_begin(w, g, kp, "reduction (rows, online softmax, grid reduction)", why, nwhy);
    if (ok) {
        cg_ctx *c = &w->cg;
        for (int a = 0; a < p->rank; a++) {
            char name[16];
            snprintf(name, sizeof name, "%c%d", p->inner[a] ? 'k' : 'o', a);
            cg_add_var(c, name);
        }
        if (p->aligned_rows) { /* the row's vectors start at -row * K modulo vec (emit_row_alignment) */
            int64_t rows_after = 1;
            for (int a = p->rank - 1; a >= 0; a--) {
                if (p->inner[a]) continue;
                c->lane_align[a] = (long long)((p->K % p->vec) * (rows_after % p->vec) % p->vec);
                rows_after *= p->D[a];
            }
        }
        c->user = r;
        c->lookup_register = lookup_register;
        c->lookup_cache = lookup_cache;
        emit_kernel(r, kp);
        ok = fu_kw_finish(w, kp, why, nwhy);
    } else {
        fu_kw_abort(w);
    }
    fu_free(r);
    fu_free(w);
    return ok;
}

static const char *rkind_name(rkind k)
{
    return k == RK_ROW ? "row" : k == RK_ROWGRID ? "row_grid" : k == RK_GRID_PRO ? "grid_prologue" : k == RK_GRID_EPI ? "grid" : "column";
}

/* The names of t[0 .. n), each once (a hoist list repeats what the walk reached twice). */
static void json_names(fu_strbuf *js, const fu_fusion *f, const fu_tensor *t, int n)
{
    fu_sb_puts(js, "[");
    for (int k = 0, m = 0; k < n; k++) {
        bool again = false;
        for (int j = 0; j < k && !again; j++) again = t[j] == t[k];
        if (!again) fu_sb_printf(js, "%s\"%s\"", m++ ? ", " : "", fu_val(f, t[k])->name);
    }
    fu_sb_puts(js, "]");
}

/* kp->config: the same text as before the parameters were a struct. */
static void config_text(const red_params *p, fu_kernel_plan *kp)
{
    snprintf(kp->config, sizeof kp->config,
             "rows=%lld inner=%lld vec=%d threads=%d iters=%d passes=%d online_lse=%d cached_inputs=%d%s grid_reductions=%d%s",
             (long long)p->rows, (long long)p->K, p->vec, p->threads, p->iters, p->passes, p->nonline, p->ncache + p->nsmem,
             p->nsmem ? " (shared memory)" : p->ncache ? " (registers)" : "", p->ngrid, p->queue ? " row_queue=1" : "");
    if (p->aligned_rows) {
        size_t n = strlen(kp->config);
        snprintf(kp->config + n, sizeof kp->config - n, " aligned_rows=1");
    }
    if (p->warp_rows > 1) {
        size_t n = strlen(kp->config);
        snprintf(kp->config + n, sizeof kp->config - n, " warp_rows=%d", p->warp_rows);
    }
    if (p->cluster > 1) {
        size_t n = strlen(kp->config);
        snprintf(kp->config + n, sizeof kp->config - n, " cluster=%d part=%lld", p->cluster, (long long)p->K_part);
    }
    if (p->ncol) {
        size_t n = strlen(kp->config);
        snprintf(kp->config + n, sizeof kp->config - n, " column_reductions=%d groups=%lld%s", p->ncol, (long long)p->col_groups,
                 p->grid_sync ? " grid_sync=1" : "");
    }
    if (p->nsingle_out) {
        size_t n = strlen(kp->config);
        snprintf(kp->config + n, sizeof kp->config - n, " single_row_outputs=%d", p->nsingle_out);
    }
    if (p->nfree_out) {
        size_t n = strlen(kp->config);
        snprintf(kp->config + n, sizeof kp->config - n, " grid_outputs=%d", p->nfree_out);
    }
    if (p->nkeep) {
        size_t n = strlen(kp->config);
        snprintf(kp->config + n, sizeof kp->config - n, " kept_values=%d", p->nkeep);
    }
    if (p->ninvariant) {
        size_t n = strlen(kp->config);
        snprintf(kp->config + n, sizeof kp->config - n, " row_invariant=%d", p->ninvariant);
    }
    if (p->row_prefetch) {
        size_t n = strlen(kp->config);
        snprintf(kp->config + n, sizeof kp->config - n, " row_prefetch=1");
    }
}

/* kp->params_json: every number, flag and name of the struct. */
static char *params_json(const red_params *p, const fu_fusion *f)
{
    fu_strbuf js;
    fu_sb_init(&js);
    fu_sb_puts(&js, "{\"domain\": [");
    for (int a = 0; a < p->rank; a++) fu_sb_printf(&js, "%s%lld", a ? ", " : "", (long long)p->D[a]);
    fu_sb_puts(&js, "], \"inner_axes\": [");
    for (int a = 0, n = 0; a < p->rank; a++)
        if (p->inner[a]) fu_sb_printf(&js, "%s%d", n++ ? ", " : "", a);
    fu_sb_printf(&js, "], \"rows\": %lld, \"inner\": %lld, \"reductions\": [", (long long)p->rows, (long long)p->K);
    for (int i = 0; i < p->nred; i++) {
        const red_info *ri = &p->reds[i];
        fu_sb_printf(&js, "%s{\"name\": \"%s\", \"op\": \"%s\", \"kind\": \"%s\", \"pass\": %d", i ? ", " : "",
                     fu_val(f, ri->out)->name, fu_op_name(ri->op), rkind_name(ri->kind), ri->pass);
        if (ri->online_max >= 0) fu_sb_printf(&js, ", \"online_max\": \"%s\"", fu_val(f, p->reds[ri->online_max].out)->name);
        if (ri->const_shift)
            fu_sb_printf(&js, ", \"lse_shift\": %.9g, \"poly_exp_lanes\": %d, \"max_reduced\": %s", (double)(float)ri->shift,
                         poly_lanes(p, ri), ri->shift_only ? "false" : "true");
        if (ri->grid_slot >= 0) fu_sb_printf(&js, ", \"grid_slot\": %d", ri->grid_slot);
        if (ri->col_ws >= 0)
            fu_sb_printf(&js, ", \"workspace_partials\": %lld, \"workspace_groups\": %lld", (long long)ri->col_ws,
                         (long long)ri->col_ws_groups);
        fu_sb_puts(&js, "}");
    }
    fu_sb_printf(&js,
                 "], \"vec\": %d, \"aligned_rows\": %s, \"threads\": %d, \"iters\": %d, \"passes\": %d, \"online_lse\": %d, \"mufu_rows\": %s, "
                 "\"warp_rows\": %d, \"cluster\": %d, \"part\": %lld, \"cluster_slots\": %d, \"block\": %d, \"grid\": %lld, "
                 "\"blocks_per_sm\": %d, \"min_blocks\": %d, \"shared_bytes\": %lld, \"queue\": %s, \"partials\": %lld, "
                 "\"grid_reductions\": %d, \"column_reductions\": %d, \"column_groups\": %lld, \"grid_sync\": %s, "
                 "\"workspace_bytes\": %zu, ",
                 p->vec, p->aligned_rows ? "true" : "false", p->threads, p->iters, p->passes, p->nonline, p->mufu_rows ? "true" : "false", p->warp_rows,
                 p->cluster, (long long)p->K_part,
                 p->nslots, p->block_threads, (long long)p->grid, p->blocks_per_sm, p->min_blocks, (long long)p->smem_bytes,
                 p->queue ? "true" : "false", (long long)p->partials, p->ngrid, p->ncol, (long long)p->col_groups,
                 p->grid_sync ? "true" : "false", p->workspace_bytes);
    fu_sb_puts(&js, "\"cached_inputs\": [");
    for (int k = 0; k < p->ncache; k++)
        fu_sb_printf(&js, "%s{\"name\": \"%s\", \"where\": \"registers\"}", k ? ", " : "", fu_val(f, p->cache_t[k])->name);
    for (int k = 0; k < p->nsmem; k++)
        fu_sb_printf(&js, "%s{\"name\": \"%s\", \"where\": \"shared\", \"offset\": %lld, \"slot_bytes\": %d}",
                     k || p->ncache ? ", " : "", fu_val(f, p->smem_t[k])->name, (long long)p->smem_offset[k],
                     p->smem_slot_bytes[k]);
    fu_sb_puts(&js, "], \"kept_values\": [");
    for (int k = 0; k < p->nkeep; k++)
        fu_sb_printf(&js, "%s{\"name\": \"%s\", \"pass\": %d}", k ? ", " : "", fu_val(f, p->keep_t[k])->name, p->keep_pass[k]);
    fu_sb_printf(&js, "], \"first_batch_early\": %s, \"row_prefetch\": %s, \"row_inputs_ahead\": ", p->first_batch_early ? "true" : "false",
                 p->row_prefetch ? "true" : "false");
    json_names(&js, f, p->row_ahead_t, p->nrow_ahead);
    fu_sb_puts(&js, ", \"row_invariant\": ");
    json_names(&js, f, p->invariant_t, p->ninvariant);
    fu_sb_puts(&js, ", \"passes_plan\": [");
    for (int q = 1; q <= p->passes; q++) {
        const red_pass *ps = &p->pass[q];
        fu_sb_printf(&js, "%s{\"pass\": %d, \"batch\": %d, \"staged\": ", q > 1 ? ", " : "", q, ps->batch);
        json_names(&js, f, ps->stage_t, ps->nstage);
        fu_sb_printf(&js, ", \"from_slots\": %s, \"guard\": \"%s\", \"unrolled\": %s, \"halves\": %s, ",
                     ps->from_slots ? "true" : "false",
                     ps->guard == GUARD_PART ? "part" : ps->guard == GUARD_ROW ? "row" : "none",
                     ps->unrolled ? "true" : "false", ps->halves ? "true" : "false");
        if (ps->miss_cmp >= 0) fu_sb_printf(&js, "\"vector_miss\": \"%s\", ", fu_val(f, ps->miss_cmp)->name);
        else fu_sb_puts(&js, "\"vector_miss\": null, ");
        if (ps->unswitch >= 0) fu_sb_printf(&js, "\"unswitch\": \"%s\", ", fu_val(f, ps->unswitch)->name);
        else fu_sb_puts(&js, "\"unswitch\": null, ");
        fu_sb_puts(&js, "\"outputs\": ");
        json_names(&js, f, ps->out_t, ps->nout);
        fu_sb_puts(&js, ", \"hoisted_before\": ");
        json_names(&js, f, p->pass[q - 1].hoist.t, p->pass[q - 1].hoist.n);
        fu_sb_puts(&js, ", \"batch_max\": [");
        for (int i = 0, n = 0; i < p->nred; i++)
            if (ps->batch_max[i] != BM_NONE)
                fu_sb_printf(&js, "%s{\"reduction\": \"%s\", \"read\": \"%s\"}", n++ ? ", " : "", fu_val(f, p->reds[i].out)->name,
                             ps->batch_max[i] == BM_REGISTER ? "register" : ps->batch_max_staged[i] ? "staged_bf16x2" : "cached_bf16x2");
        fu_sb_puts(&js, "]}");
    }
    fu_sb_puts(&js, "], \"row_outputs\": ");
    json_names(&js, f, p->row_out, p->nrow_out);
    fu_sb_puts(&js, ", \"scalar_outputs\": ");
    json_names(&js, f, p->scalar_out, p->nscalar_out);
    fu_sb_puts(&js, ", \"column_outputs\": ");
    json_names(&js, f, p->col_out, p->ncol_out);
    fu_sb_puts(&js, ", \"single_row_outputs\": ");
    json_names(&js, f, p->single_out, p->nsingle_out);
    fu_sb_puts(&js, ", \"grid_outputs\": ");
    json_names(&js, f, p->free_out, p->nfree_out);
    fu_sb_printf(&js, ", \"scalars_by_block0\": %s}", p->scalars_block0 ? "true" : "false");
    return fu_sb_take(&js);
}

void fu_reduction_free(void *params)
{
    red_params *p = params;
    if (!p) return;
    for (int q = 0; q < MAX_PASSES; q++) fu_free(p->pass[q].hoist.t);
    fu_free(p->deps);
    fu_free(p->seen);
    fu_free(p);
}

/* The kernel's parameters as fu_kw_begin lists them (what choose_config
 * sizes the vectors from and picks the cached inputs among). */
static bool list_params(const fu_group *g, red_params *p, char *why, size_t nwhy)
{
    cg_param params[64];
    int n = fu_kw_params(g, params, why, nwhy);
    for (int i = 0; i < n; i++) {
        p->param_t[i] = params[i].tensor;
        p->param_out[i] = params[i].is_output;
    }
    if (n >= 0) p->nparams = n;
    return n >= 0;
}

/* Every decision of the group's parameters but the one-block check: a new
 * red_params, or NULL and why (fu_reduction_free frees it). */
static red_params *plan_params(const fu_group *g, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    if (fu_group_has_op_kind(g, FU_KIND_SCATTER)) {
        snprintf(why, nwhy, "reduction: the group has a scatter");
        return NULL;
    }
    red_params *p = fu_calloc(1, sizeof *p);
    if (p) {
        p->deps = fu_calloc((size_t)f->nvalues, sizeof *p->deps);
        p->seen = fu_calloc((size_t)f->nvalues, sizeof *p->seen);
    }
    bool ok = p && p->deps && p->seen;
    if (!ok) snprintf(why, nwhy, "out of memory");
    ok = ok && list_params(g, p, why, nwhy) && analyse(p, g, why, nwhy);
    ok = ok && classify_outputs(p, g, why, nwhy); /* (choose_config sizes blocks for the single row's outputs) */
    if (ok) {
        choose_config(p, g);
        choose_grid(p, g);
        for (int q = 1; q <= p->passes; q++) plan_pass(p, g, q);
        p->first_batch_early = ROW_LOADS_FIRST && (p->pass[1].nstage > 0 || p->ncache > 0);
        p->row_prefetch = choose_row_prefetch(p, g);
        choose_row_ahead(p, g);
        choose_row_invariant(p, g);
        if (!plan_hoists(p, g)) {
            snprintf(why, nwhy, "out of memory");
            ok = false;
        }
    }
    if (!ok) {
        fu_reduction_free(p);
        return NULL;
    }
    return p;
}

static bool has_grid_step(const red_params *p) { return p->grid > 1 && (p->ngrid > 0 || p->ncol > 0); }

bool fu_reduction_grid_step(const fu_group *g)
{
    char why[256];
    red_params *p = plan_params(g, why, sizeof why);
    bool step = p && has_grid_step(p);
    fu_reduction_free(p);
    return step;
}

bool fu_reduction_heuristics(const fu_group *g, void **params, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    const fu_fusion *f = g->f;
    *params = NULL;
    red_params *p = plan_params(g, why, nwhy);
    if (!p) return false;
    /* a grid-wide step (the last block's, or a grid barrier) over blocks that one block could
     * replace: the one-block scheduler takes the group with a barrier instead, up to
     * FU_BLOCK_GRID_STEP_WORK (fu_block_can_schedule says yes to the same groups) */
    if (has_grid_step(p)) {
        char small[256];
        if (fu_block_fits(f, g->in_group, g->outputs, g->noutputs, FU_BLOCK_GRID_STEP_WORK, small, sizeof small)) {
            snprintf(why, nwhy, "reduction: a grid-wide step over %lld blocks where one block does (one_block)",
                     (long long)p->grid);
            fu_reduction_free(p);
            return false;
        }
    }
    fu_free(p->seen); /* (the walks are done) */
    p->seen = NULL;
    kp->sched = FU_SCHED_REDUCTION;
    kp->grid = (unsigned)p->grid;
    kp->block = (unsigned)p->block_threads;
    kp->cluster = (unsigned)p->cluster;
    kp->grid_sync = p->grid_sync;
    kp->shared_bytes = (size_t)p->smem_bytes;
    kp->workspace_bytes = p->workspace_bytes;
    config_text(p, kp);
    kp->params_json = params_json(p, f);
    *params = p;
    return true;
}
