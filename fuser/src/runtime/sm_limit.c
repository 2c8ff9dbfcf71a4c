/*
 * sm_limit.c -- a runtime whose kernels run on part of the GPU's SMs
 * (fu_runtime_options.sm_limit, env FUSER_SM_LIMIT), through a green context
 * (CUDA 12.4+ driver).
 *
 * What it is for: the memory's bandwidth over fewer SMs is a larger share for
 * each SM. An H100 (copy ~3.0 TB/s) on 96 of its 132 SMs asks of each SM the
 * bytes a clock that an H200 (~4.2 TB/s) asks of all 132, so a kernel whose SMs
 * cannot keep up shows it on the H100 too (docs/perf.md v46). A probe, not a
 * run to gate: the device's name says how many SMs it had, and the gate compares
 * only runs of one name.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_impl.h"

#define GREEN(field, name) {offsetof(fu_green_api, field), {name}}
static const fu_sym_spec GREEN_SYMS[] = {
    GREEN(DeviceGetDevResource, "cuDeviceGetDevResource"),
    GREEN(DevSmResourceSplitByCount, "cuDevSmResourceSplitByCount"),
    GREEN(DevResourceGenerateDesc, "cuDevResourceGenerateDesc"),
    GREEN(GreenCtxCreate, "cuGreenCtxCreate"),
    GREEN(CtxFromGreenCtx, "cuCtxFromGreenCtx"),
    GREEN(GreenCtxDestroy, "cuGreenCtxDestroy"),
};
#undef GREEN

/* FU_CU for the green context's entry points (not in rt->cu: looked up only when asked) */
#define GREEN_CU(rt, err, FN, ...)                                                        \
    do {                                                                                  \
        CUresult green_r_ = g.FN(__VA_ARGS__);                                            \
        if (green_r_ != CUDA_SUCCESS)                                                     \
            return fu_cu_error((rt), (err), green_r_, "cu" #FN, __FILE__, __LINE__);      \
    } while (0)

fu_status fu_sm_limit_choose(int asked, int *limit, fu_error *err)
{
    *limit = 0;
    if (asked < 0)
        return fu_error_set(err, FU_ERR_ARG, "runtime: bad SM limit %d (from options); expected a count of SMs, 0 for all",
                            asked);
    if (asked > 0) {
        *limit = asked;
        return FU_OK;
    }
    const char *text = getenv("FUSER_SM_LIMIT");
    if (!text || !*text) return FU_OK;
    char *end = NULL;
    long v = strtol(text, &end, 10);
    if (*end || v < 0 || v > 1 << 20)
        return fu_error_set(err, FU_ERR_ARG,
                            "runtime: bad SM limit \"%s\" (from FUSER_SM_LIMIT); expected a count of SMs, 0 for all", text);
    *limit = (int)v;
    return FU_OK;
}

fu_status fu_sm_limit_open(fu_runtime *rt, int limit, fu_error *err)
{
    const int all = rt->props.sm_count;
    if (limit <= 0 || limit >= all) return FU_OK;
    fu_green_api g;
    const char *missing = fu_resolve_symbols(rt->cuda_lib, GREEN_SYMS, sizeof GREEN_SYMS / sizeof *GREEN_SYMS, &g);
    if (missing)
        return fu_error_set(err, FU_ERR_RUNTIME, "runtime: an SM limit of %d needs green contexts; the driver lacks %s",
                            limit, missing);
    CUdevResource whole, part, rest;
    memset(&whole, 0, sizeof whole);
    memset(&part, 0, sizeof part);
    memset(&rest, 0, sizeof rest);
    unsigned groups = 1;
    CUdevResourceDesc desc = NULL;
    GREEN_CU(rt, err, DeviceGetDevResource, rt->dev, &whole, CU_DEV_RESOURCE_TYPE_SM);
    /* the driver rounds the count up to its granularity (8 SMs on sm_90) */
    GREEN_CU(rt, err, DevSmResourceSplitByCount, &part, &groups, &whole, &rest, 0, (unsigned)limit);
    if (groups < 1 || part.sm.smCount == 0)
        return fu_error_set(err, FU_ERR_RUNTIME, "runtime: no partition of %d SMs out of %d", limit, all);
    if (part.sm.smCount >= (unsigned)all) return FU_OK; /* rounded up to every SM: no limit */
    GREEN_CU(rt, err, DevResourceGenerateDesc, &desc, &part, 1);
    GREEN_CU(rt, err, GreenCtxCreate, &rt->green, desc, rt->dev, CU_GREEN_CTX_DEFAULT_STREAM);
    rt->green_destroy = g.GreenCtxDestroy;
    GREEN_CU(rt, err, CtxFromGreenCtx, &rt->ctx_used, rt->green);
    FU_CU(rt, err, CtxSetCurrent, rt->ctx_used);
    rt->props.sm_count = (int)part.sm.smCount;
    /* the name carries it: run files and the gate keep such runs apart */
    size_t n = strlen(rt->props.name);
    snprintf(rt->props.name + n, sizeof rt->props.name - n, " (%u of %d SMs)", part.sm.smCount, all);
    return FU_OK;
}

void fu_sm_limit_close(fu_runtime *rt)
{
    if (rt->green && rt->green_destroy) rt->green_destroy(rt->green);
    rt->green = NULL;
    rt->green_destroy = NULL;
    rt->ctx_used = NULL;
}
