/*
 * plan_access.c -- the public view of a plan (fuser/include/fuser_plan.h):
 * planning for a runtime's device, and accessors over the plan's layout,
 * which stays inside the fuser (src/sched/plan.h).
 */
#include "exec.h"

fu_status fu_plan_for_device(const fu_fusion *f, const fu_runtime *rt, fu_scatter_mode scatter, fu_plan **out,
                             fu_error *err)
{
    fu_plan_options o;
    fu_plan_options_for_device(rt, &o);
    o.scatter = scatter;
    return fu_plan_build(f, &o, out, err);
}

int fu_plan_device_sm_count(const fu_runtime *rt)
{
    fu_plan_options o;
    fu_plan_options_for_device(rt, &o);
    return o.sm_count;
}

const fu_fusion *fu_plan_fusion(const fu_plan *p) { return p->fusion; }
int fu_plan_num_kernels(const fu_plan *p) { return p->nkernels; }
int fu_plan_num_copies(const fu_plan *p) { return p->ncopies; }

static const fu_kernel_plan *kernel(const fu_plan *p, int i)
{
    FU_ASSERT(i >= 0 && i < p->nkernels);
    return &p->kernels[i];
}

const char *fu_plan_kernel_name(const fu_plan *p, int i) { return kernel(p, i)->name; }
const char *fu_plan_kernel_scheduler(const fu_plan *p, int i) { return fu_sched_name(kernel(p, i)->sched); }
unsigned fu_plan_kernel_grid(const fu_plan *p, int i) { return kernel(p, i)->grid; }
unsigned fu_plan_kernel_block(const fu_plan *p, int i) { return kernel(p, i)->block; }
bool fu_plan_kernel_memset_before(const fu_plan *p, int i) { return kernel(p, i)->zero_before >= 0; }
bool fu_plan_kernel_copy_before(const fu_plan *p, int i) { return kernel(p, i)->copy_before >= 0; }
const char *fu_plan_kernel_config(const fu_plan *p, int i) { return kernel(p, i)->config; }
const char *fu_plan_kernel_source(const fu_plan *p, int i) { return kernel(p, i)->source; }
