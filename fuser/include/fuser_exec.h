/*
 * fuser_exec.h -- running a plan on the GPU: compile its kernels (through the
 * runtime's disk cache), hold the intermediates, workspaces and the
 * index-error flag, launch, and report.
 */
#ifndef FUSER_EXEC_PUBLIC_H
#define FUSER_EXEC_PUBLIC_H

#include "fuser_plan.h"
#include "fuser_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fu_executable fu_executable;

typedef struct fu_exec_kernel_info {
    const char *name;
    bool cache_hit;
    double compile_ms;      /* NVRTC time (0 on a cache hit) */
    double total_ms;        /* hash + cache + NVRTC + module load */
    fu_kernel_attrs attrs;  /* registers, spills (local bytes), shared */
    bool attrs_valid;       /* false without a device */
} fu_exec_kernel_info;

/* Compiles every kernel of the plan (the plan must outlive the executable).
 * Without a device it compiles only, and fu_exec_launch fails with
 * FU_ERR_NO_DEVICE. */
fu_status fu_exec_prepare(fu_runtime *rt, const fu_plan *plan, fu_executable **out, fu_error *err);
void fu_exec_free(fu_executable *x);
const fu_exec_kernel_info *fu_exec_kernel(const fu_executable *x, int i);
double fu_exec_prepare_ms(const fu_executable *x); /* wall time of fu_exec_prepare */

/* Host convenience: plans f for the runtime's device (fu_plan_for_device),
 * prepares, uploads the inputs, launches, checks and downloads. outputs are
 * allocated here as in fu_interp_run; on error nothing stays allocated. */
fu_status fu_exec_run_for_device(fu_runtime *rt, const fu_fusion *f, fu_scatter_mode scatter,
                                 const fu_host_tensor *inputs, fu_host_tensor *outputs, fu_error *err);

/* Launches the whole plan asynchronously. inputs[i] / outputs[i] are device
 * buffers (dense, row-major) for the plan fusion's inputs and outputs. An
 * output that is an input's bytes (fu_exec_output_view) is copied from it,
 * unless the caller passes that input's buffer as the output: then it is a
 * view, as PyTorch returns one, and nothing is launched for it. */
fu_status fu_exec_launch(fu_executable *x, const fu_devptr *inputs, const fu_devptr *outputs, fu_error *err);
/* The plan fusion's input whose bytes output i is (returned unchanged, or
 * under another shape), or -1 where a kernel writes the output. */
int fu_exec_output_view(const fu_executable *x, int i);
/* Waits, then reports an out-of-range index seen by any kernel (and clears it). */
fu_status fu_exec_check(fu_executable *x, fu_error *err);
/* Launches counted by fu_exec_launch: kernels, memsets and copies. */
void fu_exec_launch_counts(const fu_executable *x, int *kernels, int *memsets, int *copies);

#ifdef __cplusplus
}
#endif
#endif
