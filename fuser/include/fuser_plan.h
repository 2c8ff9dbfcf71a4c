/*
 * fuser_plan.h -- a fusion's plan (its kernels) seen from outside the fuser:
 * planned for a runtime's device and read through accessors, so that the
 * plan's layout (fuser/src/sched/plan.h) stays the fuser's own.
 *
 *     fu_plan *p;
 *     if (fu_plan_for_device(f, rt, FU_SCATTER_DETERMINISTIC, &p, &err)) ...
 *     for (int i = 0; i < fu_plan_num_kernels(p); i++)
 *         printf("%s: %s\n", fu_plan_kernel_name(p, i), fu_plan_kernel_scheduler(p, i));
 *     fu_plan_free(p);
 */
#ifndef FUSER_PLAN_PUBLIC_H
#define FUSER_PLAN_PUBLIC_H

#include "fuser.h"
#include "fuser_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fu_plan fu_plan;

/* How a scatter-add (embedding backward) accumulates. */
typedef enum fu_scatter_mode {
    FU_SCATTER_DETERMINISTIC, /* each block owns output rows: bit-identical run to run, no memset */
    FU_SCATTER_ATOMIC         /* zero the output, then atomic adds */
} fu_scatter_mode;

/* Plans f (decomposed, segmented, scheduled, CUDA C generated) for the
 * runtime's device (an H200's numbers where there is none). */
fu_status fu_plan_for_device(const fu_fusion *f, const fu_runtime *rt, fu_scatter_mode scatter, fu_plan **out,
                             fu_error *err);
void fu_plan_free(fu_plan *p);
/* The SM count fu_plan_for_device plans for: the device's, else an H200's 132. */
int fu_plan_device_sm_count(const fu_runtime *rt);

/* `fuser plan` output (malloc'd; free with free()): text for people, and JSON
 * for tools, which takes extra members (", \"key\": value"...) for each
 * kernel object (kernel_extra[i]) and for the top object; NULL for none. */
char *fu_plan_text(const fu_plan *p);
char *fu_plan_json(const fu_plan *p, char *const *kernel_extra, const char *top_extra);

/* The fusion the plan computes (decomposed; its inputs and outputs are the
 * original's by name, an unused input may be gone). Owned by the plan. */
const fu_fusion *fu_plan_fusion(const fu_plan *p);
int fu_plan_num_kernels(const fu_plan *p);
/* Outputs that are inputs: copied, not computed. */
int fu_plan_num_copies(const fu_plan *p);
/* Kernel i (0 <= i < fu_plan_num_kernels): */
const char *fu_plan_kernel_name(const fu_plan *p, int i);      /* its entry point */
const char *fu_plan_kernel_scheduler(const fu_plan *p, int i); /* "pointwise", "reduction", ... */
unsigned fu_plan_kernel_grid(const fu_plan *p, int i);
unsigned fu_plan_kernel_block(const fu_plan *p, int i);
bool fu_plan_kernel_memset_before(const fu_plan *p, int i);    /* an output zeroed first */
bool fu_plan_kernel_copy_before(const fu_plan *p, int i);      /* a tensor copied in first */
const char *fu_plan_kernel_config(const fu_plan *p, int i);    /* the scheduler's parameters, in words */
const char *fu_plan_kernel_source(const fu_plan *p, int i);    /* its generated CUDA C (NULL if none) */

#ifdef __cplusplus
}
#endif
#endif
