/*
 * exec.h -- running a plan inside the fuser: the public part is
 * fuser/include/fuser_exec.h; these take the plan options' layout.
 */
#ifndef FUSER_EXEC_H
#define FUSER_EXEC_H

#include "fuser_exec.h"
#include "plan.h"
#include "runtime.h"

/* The plan options for the runtime's device: the defaults (an H200) where
 * there is none or it does not say; the scatter mode stays the default's. */
void fu_plan_options_for_device(const fu_runtime *rt, fu_plan_options *o);

/* How far got is from want: max|got - want| / max|want| over a float tensor
 * (max|got - want| where want is all zero; NaN against NaN and equal
 * infinities agree, inf where only one is NaN or infinite); for integer and
 * bool tensors the number of elements that differ; inf when the dtypes or
 * shapes differ. */
double fu_host_max_rel_error(const fu_host_tensor *got, const fu_host_tensor *want);

/* Host convenience: plan, prepare, upload, launch, check, download. outputs
 * are allocated here as in fu_interp_run; on error nothing stays allocated. */
fu_status fu_exec_run_host(fu_runtime *rt, const fu_fusion *f, const fu_plan_options *opts,
                           const fu_host_tensor *inputs, fu_host_tensor *outputs, fu_error *err);

#endif
