/*
 * plan.h -- the segmenter's output: a fusion split into kernels, each with its
 * scheduler, launch configuration and generated CUDA C. Pure functions of the
 * IR and a few device numbers; no CUDA headers.
 */
#ifndef FUSER_PLAN_H
#define FUSER_PLAN_H

#include "cg.h"
#include "fuser_plan.h"
#include "ir.h"

/* The schedulers; each has one row in the registry (registry.c). */
typedef enum fu_sched {
    FU_SCHED_POINTWISE, /* pointwise, broadcast, resize and gather ops; horizontal over outputs */
    FU_SCHED_OUTER,     /* reductions over non-innermost axes, read coalesced along the kept axis */
    FU_SCHED_REDUCTION, /* row reductions, online softmax, passes over a row, grid reduction */
    FU_SCHED_SCATTER,   /* index_add / scatter_add */
    FU_SCHED_BLOCK,     /* a small group in one block: reductions over any axes, staged in shared memory */
    FU_SCHED_TRANSPOSE, /* pointwise reading an input across the output's innermost axis: tiles staged in shared memory */
    FU_SCHED_COUNT
} fu_sched;
const char *fu_sched_name(fu_sched s);

/* fu_scatter_mode and the accessors are public: fuser/include/fuser_plan.h */

typedef struct fu_plan_options {
    int sm_count;                  /* multiprocessors (132 on an H200) */
    int max_threads_per_sm;        /* 2048 on Hopper */
    int max_shared_per_block;      /* bytes a block may have, with opt-in (227 KiB on sm_90) */
    int max_shared_per_sm;         /* 228 KiB on sm_90 */
    int reserved_shared_per_block; /* taken by the driver from each block's share (1 KiB) */
    int max_cluster;               /* blocks a thread-block cluster may have (8 on sm_90; 1: none) */
    double dram_bytes_per_sm_clock; /* the memory's peak bytes a second over the SMs' clocks a second
                                     * (sm_count x clock): what an SM must move each clock to keep the
                                     * memory busy; 18.8 on an H200, 12.8 on an H100; 0: unknown */
    fu_scatter_mode scatter;
    bool outer_norm;               /* the outer scheduler also takes normalizations over non-innermost
                                    * axes (reductions read back at full size, reductions of
                                    * reductions): coalesced passes over a column tile. Off until
                                    * measured on a GPU (FUSER_OUTER_NORM=1 turns it on; k_outer.c) */
    bool transpose;                /* pointwise groups that read an input across the output's innermost
                                    * axis get tiles staged in shared memory (k_transpose.c); without
                                    * it, the pointwise scheduler's strided reads. On by default;
                                    * FUSER_TRANSPOSE=0 turns it off (an A/B) */
    int64_t transpose_min_bytes;   /* ... where the reads it would stage are more bytes than this: fewer,
                                    * and the pointwise kernel's strided reads are served by the L2
                                    * (an eighth of it; 0: every size, as FUSER_TRANSPOSE=1 asks) */
} fu_plan_options;

void fu_plan_options_default(fu_plan_options *o);
/* fu_plan_options.dram_bytes_per_sm_clock from a device's numbers (the driver's
 * attributes: a DDR memory clock, so two transfers a clock); 0 if any is 0. */
double fu_dram_bytes_per_sm_clock(int memory_clock_khz, int memory_bus_width_bits, int sm_count, int clock_khz);
/* fu_plan_options.transpose_min_bytes for a card with l2_bytes of L2 (an eighth of it; 0 if unknown). */
int64_t fu_transpose_min_bytes(int64_t l2_bytes);
/* Plans for sm_count of the card's SMs (a test's or `fuser-fuzz --sms`'s choice, as
 * FUSER_SM_LIMIT is the runtime's): the memory stays the card's, so each SM's share of
 * it (dram_bytes_per_sm_clock) grows as the SMs are fewer. */
void fu_plan_options_set_sm_count(fu_plan_options *o, int sm_count);

typedef struct fu_kernel_plan {
    fu_sched sched;
    char name[64];
    int nops;
    int *ops;                /* nodes of the plan's fusion computed here */
    int nparams;
    cg_param *params;        /* global tensors: inputs, then outputs */
    unsigned grid, block;
    unsigned cluster;        /* blocks of a thread-block cluster (__cluster_dims__), 0 or 1: none */
    bool grid_sync;          /* waits for the whole grid (fu_grid_sync): launched cooperatively,
                              * the grid clamped to the blocks that are resident at once */
    size_t shared_bytes;     /* dynamic shared memory */
    size_t workspace_bytes;  /* scratch zeroed once at allocation; the kernel leaves it zeroed */
    fu_tensor zero_before;   /* output to clear before launch (atomic scatter), or -1 */
    fu_tensor copy_before;   /* tensor copied into zero/copy target before launch, or -1 */
    char config[256];        /* human-readable scheduler parameters */
    char *params_json;       /* the scheduler's parameters as a JSON object, or NULL */
    char *source;            /* generated CUDA C */
} fu_kernel_plan;
void fu_kernel_plan_clear(fu_kernel_plan *kp); /* frees what kp holds and zeroes it */

typedef struct fu_plan {
    fu_fusion *fusion;       /* decomposed and simplified; owned */
    int nkernels;
    fu_kernel_plan *kernels;
    bool *materialized;      /* per tensor: lives in global memory */
    int nintermediates;
    fu_tensor *intermediates; /* materialized tensors that are neither inputs nor outputs */
    int ncopies;             /* outputs that are inputs: copied, not computed */
    int lower_bound;         /* fu_kernels_lower_bound of the fusion */
    fu_tensor *alias_of;     /* per tensor: the fusion output whose buffer it is written into
                              * (an output that only reshapes it: no kernel of its own), or -1 */
    fu_tensor *copy_of;      /* per tensor: for an output that is an input's bytes under another
                              * shape (fu_output_is_input_view), that input, copied; else -1 */
} fu_plan;

fu_status fu_plan_build(const fu_fusion *f, const fu_plan_options *opts, fu_plan **out, fu_error *err);
void fu_plan_free(fu_plan *p);
/* fu_plan_text and fu_plan_json (`fuser plan` output) are public: fuser_plan.h */

/* ---- between the segmenter and the schedulers ---- */

typedef struct fu_group {
    const fu_fusion *f;
    const fu_plan_options *opts;
    const bool *in_group;    /* per node */
    const bool *materialized;/* per tensor: readable from global memory */
    fu_tensor *outputs;      /* tensors this kernel writes */
    int noutputs;
    int kernel_index;        /* for the kernel's name */
} fu_group;

/* A scheduler of the registry (registry.c says how to add one). */
typedef struct fu_scheduler {
    fu_sched id;
    const char *name;
    /* A cheap structural test of the group (the op kinds it holds); false and why when not. */
    bool (*can_schedule)(const fu_group *g, char *why, size_t nwhy);
    /* Decides the kernel: *params (the scheduler's own struct), kp's launch
     * numbers, kp->config and kp->params_json; false and why when the group
     * does not fit. */
    bool (*heuristics)(const fu_group *g, void **params, fu_kernel_plan *kp, char *why, size_t nwhy);
    /* Writes kp->source (and kp's parameter list) from params; false and why where it cannot. */
    bool (*emit)(const fu_group *g, const void *params, fu_kernel_plan *kp, char *why, size_t nwhy);
    void (*free_params)(void *params);
} fu_scheduler;
int fu_scheduler_count(void);
const fu_scheduler *fu_scheduler_at(int i); /* in priority order */
/* Offers the group to the registry in priority order: fills kp from the first
 * scheduler that takes it, else says why not (the reasons of the schedulers
 * that wanted it). */
bool fu_schedule_group(const fu_group *g, fu_kernel_plan *kp, char *why, size_t nwhy);

/* The schedulers' steps (registry.c). Each either takes the whole group (fills
 * kp, returns true) or says why not in `why`. */
bool fu_pw_can_schedule(const fu_group *g, char *why, size_t nwhy);
bool fu_pw_heuristics(const fu_group *g, void **params, fu_kernel_plan *kp, char *why, size_t nwhy);
bool fu_pw_emit(const fu_group *g, const void *params, fu_kernel_plan *kp, char *why, size_t nwhy);
bool fu_tr_heuristics(const fu_group *g, void **params, fu_kernel_plan *kp, char *why, size_t nwhy);
bool fu_tr_emit(const fu_group *g, const void *params, fu_kernel_plan *kp, char *why, size_t nwhy);
bool fu_outer_heuristics(const fu_group *g, void **params, fu_kernel_plan *kp, char *why, size_t nwhy);
bool fu_outer_emit(const fu_group *g, const void *params, fu_kernel_plan *kp, char *why, size_t nwhy);
bool fu_reduction_heuristics(const fu_group *g, void **params, fu_kernel_plan *kp, char *why, size_t nwhy);
bool fu_reduction_emit(const fu_group *g, const void *params, fu_kernel_plan *kp, char *why, size_t nwhy);
void fu_reduction_free(void *params);
bool fu_scatter_heuristics(const fu_group *g, void **params, fu_kernel_plan *kp, char *why, size_t nwhy);
bool fu_scatter_emit(const fu_group *g, const void *params, fu_kernel_plan *kp, char *why, size_t nwhy);
bool fu_block_can_schedule(const fu_group *g, char *why, size_t nwhy);
bool fu_block_heuristics(const fu_group *g, void **params, fu_kernel_plan *kp, char *why, size_t nwhy);
bool fu_block_emit(const fu_group *g, const void *params, fu_kernel_plan *kp, char *why, size_t nwhy);
/* The one-block scheduler's limits (k_block.c): the elements all its reductions read together
 * (one SM does that work: measured, docs/perf.md v27), the elements of an output (16 a thread
 * at 1024 threads), and the issue slots of all its elements (k_block.c's block_slots: each
 * stage's and output's elements times the ops of their cones). Past ~160K slots one SM's
 * loops cost more than a second launch over the whole GPU (H200, docs/perf.md v28: fz_7_155,
 * 269K slots, 11.7 us in one block against 7.4 in two kernels; fz_7_180, 201K, 7.7 against
 * 6.3; under it fz_7_162, 137K, 6.2 against 6.9, and fz_7_7, 31K, 3.8 against 6.5). */
#ifndef FU_BLOCK_MAX_WORK
#define FU_BLOCK_MAX_WORK 8192
#endif
/* The reduction scheduler's outputs of more than one element that read the grid's values but
 * no row value (a broadcast of a mean): written by the block that writes the scalars, after the
 * grid combine, up to this many elements (4 a thread of the smallest block); larger ones get a
 * kernel of their own. bound.c forces no boundary before them. */
#define FU_TAIL_OUT_MAX_ELEMS 128
/* ... and where the reduction scheduler's plan of the group needs a grid-wide step (its
 * partials to the workspace, a fence, a counter, the last block's reads): one block for up to
 * this much work (H100, docs/perf.md v33: fz_7_157, a grid reduction over 4 blocks, 8.22 ->
 * 6.48 us a call; fz_7_82, over 13, 5.98 -> 5.50; but fz_7_161, whose 384 rows the reduction
 * scheduler spreads over 384 blocks without a step, 4.13 -> 5.98 at this limit for every group) */
#ifndef FU_BLOCK_GRID_STEP_WORK
#define FU_BLOCK_GRID_STEP_WORK 16384
#endif
#ifndef FU_BLOCK_MAX_ELEMS
#define FU_BLOCK_MAX_ELEMS 16384
#endif
#ifndef FU_BLOCK_MAX_SLOTS
#define FU_BLOCK_MAX_SLOTS 160000
#endif
/* Whether the one-block scheduler takes the nodes in_group with these outputs (k_block.c:
 * little work; a scatter of floats is a stage); why not, where not. */
bool fu_block_fits(const fu_fusion *f, const bool *in_group, const fu_tensor *outputs, int noutputs, int64_t max_work,
                   char *why, size_t nwhy);
/* Whether the reduction scheduler plans the group with a grid-wide step over several blocks
 * (k_reduction.c; the one-block scheduler then takes up to FU_BLOCK_GRID_STEP_WORK). */
bool fu_reduction_grid_step(const fu_group *g);
/* The work the one-block scheduler counts for scatter node s (k_block.c): its source domain's
 * elements (each source computed once) plus the result's elements times the sources along
 * the axis (each element looks at every one); -1 where it takes no such scatter (one of
 * integers). */
int64_t fu_block_scatter_work(const fu_fusion *f, const fu_node *s);
/* Whether scatter node s of f is planned with atomic adds (else each block owns its rows). */
bool fu_scatter_is_atomic(const fu_fusion *f, const fu_node *s, const fu_plan_options *opts);

/* A lower bound on the kernels f needs (bound.c): the levels that forced
 * boundaries (a change of reduction axis, a grid-wide value read at full
 * size, a scatter's result, segment_set) separate; from the math alone. */
int fu_kernels_lower_bound(const fu_fusion *f);
/* Whether node n is a reshape of an input (or a permute that moves only axes of extent 1)
 * into a fusion output that no op reads: the output is the input's bytes, copied as an
 * input returned unchanged is, with no kernel. */
bool fu_output_is_input_view(const fu_fusion *f, const fu_node *n);

/* The merging segmenter (merge.c). probe offers a group to the schedulers
 * without planning it: 1 taken, 0 not (why says why), -1 error (in err).
 * Fills group_of (per node: its group, numbered in the order the kernels
 * run; -1 outside members) and returns the number of groups, -1 on error.
 * With debug, prints each boundary left and the scheduler's reason. */
typedef int (*fu_merge_probe)(void *ctx, const bool *in_group, char *why, size_t nwhy);
int fu_merge_groups(const fu_fusion *f, const bool *members, fu_merge_probe probe, void *ctx, int *group_of,
                    bool debug, fu_error *err);

/* Shared by the schedulers (kernel_common.c). */
typedef struct fu_kernel_writer {
    fu_strbuf sb;
    cg_ctx cg;
    cg_param params[64];
    int nparams;
} fu_kernel_writer;

/* Collects parameters: every materialized tensor the group reads, then its outputs. */
bool fu_kw_begin(fu_kernel_writer *w, const fu_group *g, fu_kernel_plan *kp, const char *sched_comment,
                 char *why, size_t nwhy);
/* The parameters fu_kw_begin would collect for the group (inputs it reads, then
 * its outputs), for a heuristics step that sizes the kernel from them before
 * emit writes it: their count (at most 64), or -1 and why. */
int fu_kw_params(const fu_group *g, cg_param params[64], char *why, size_t nwhy);
/* Emits the extern "C" signature with __launch_bounds__(threads, min_blocks)
 * (min_blocks > 1 caps registers so that many blocks fit on an SM) and opens
 * the body ("{"): end it with cg_close before fu_kw_finish. */
void fu_kw_signature(fu_kernel_writer *w, const fu_kernel_plan *kp, unsigned threads, unsigned min_blocks, bool workspace);
bool fu_kw_finish(fu_kernel_writer *w, fu_kernel_plan *kp, char *why, size_t nwhy);
void fu_kw_abort(fu_kernel_writer *w);
/* Writes a template of kernel text line by line at the current indentation,
 * each ${KEY} replaced by its value from kv (NULL-terminated KEY, VALUE pairs);
 * an unknown key fails the kernel (cg_fail). */
void fu_kw_template(cg_ctx *c, const char *text, const char *const *kv);
/* Whether an op of that kind is in the group. */
bool fu_group_has_op_kind(const fu_group *g, fu_op_kind kind);
bool fu_fits_int32(const fu_fusion *f);
const cg_param *fu_kw_output(const fu_kernel_writer *w, fu_tensor t);
/* Stores `val` (compute type) into output param p at offset expr. */
void fu_kw_store(fu_kernel_writer *w, const cg_param *p, const char *offset, const char *val);
/* Stores `vec` lanes (compute-type expressions) at p[base .. base + vec) with one
 * vector store, through a local array named `tmp`. */
void fu_kw_vector_store(fu_kernel_writer *w, const cg_param *p, const char *base, const char *tmp,
                        const char (*lanes)[32], int vec);

#endif
