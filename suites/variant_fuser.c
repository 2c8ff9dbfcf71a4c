/*
 * variant_fuser.c -- the `fuser` variant: the case's fusion planned by the
 * segmenter and schedulers, compiled with NVRTC (disk cache) and launched by
 * fu_exec_launch.
 */
#include <stdlib.h>
#include <string.h>

#include "fuser_exec.h"
#include "suite.h"

typedef struct fuser_state {
    fu_runtime *rt;
    fu_plan *plan;
    fu_executable *x;
    /* the plan fusion's inputs and outputs, by position in the case fusion
     * (decomposition keeps them by name; it may drop an unused input) */
    int nin, nout;
    int *in_map, *out_map;
    fu_devptr *in, *out;
} fuser_state;

static void fuser_free(void *p)
{
    fuser_state *st = p;
    if (!st) return;
    fu_exec_free(st->x);
    fu_plan_free(st->plan);
    free(st->in_map);
    free(st->out_map);
    free(st->in);
    free(st->out);
    free(st);
}

static fu_status fuser_prepare(fu_runtime *rt, const fu_fusion *f, const hb_case *c, void **state,
                               hb_variant_info *info, fu_error *err)
{
    *state = NULL;
    memset(info, 0, sizeof *info);
    fuser_state *st = calloc(1, sizeof *st);
    if (!st) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    st->rt = rt;
    fu_status s = fu_plan_for_device(f, rt, c ? c->scatter : FU_SCATTER_DETERMINISTIC, &st->plan, err);
    if (s) {
        fuser_free(st);
        return s;
    }
    const fu_fusion *pf = fu_plan_fusion(st->plan);
    st->nin = fu_fusion_num_inputs(pf);
    st->nout = fu_fusion_num_outputs(pf);
    st->in_map = calloc((size_t)st->nin + 1, sizeof *st->in_map);
    st->out_map = calloc((size_t)st->nout + 1, sizeof *st->out_map);
    st->in = calloc((size_t)st->nin + 1, sizeof *st->in);
    st->out = calloc((size_t)st->nout + 1, sizeof *st->out);
    if (!st->in_map || !st->out_map || !st->in || !st->out) {
        fuser_free(st);
        return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < st->nin + st->nout; i++) {
        bool out = i >= st->nin;
        int k = out ? i - st->nin : i;
        const char *name = fu_tensor_name(pf, out ? fu_fusion_output(pf, k) : fu_fusion_input(pf, k));
        int pos = out ? hb_output_index(f, name) : hb_input_index(f, name);
        if (pos < 0) {
            fuser_free(st);
            return fu_error_set(err, FU_ERR_RUNTIME, "fusion '%s': the plan's %s '%s' is not one of the fusion's",
                                fu_fusion_name(f), out ? "output" : "input", name);
        }
        (out ? st->out_map : st->in_map)[k] = pos;
    }
    s = fu_exec_prepare(rt, st->plan, &st->x, err);
    if (s) {
        fuser_free(st);
        return s;
    }
    int nk = fu_plan_num_kernels(st->plan);
    info->segments = nk;
    info->kernels = nk;
    info->copies = fu_plan_num_copies(st->plan);
    size_t k = 0;
    uint64_t h = HB_HASH_INIT;
    for (int i = 0; i < nk; i++) {
        char launch[64];
        snprintf(launch, sizeof launch, "grid %u block %u", fu_plan_kernel_grid(st->plan, i),
                 fu_plan_kernel_block(st->plan, i));
        h = hb_hash_text(hb_hash_text(hb_hash_text(h, fu_plan_kernel_source(st->plan, i)),
                                      fu_plan_kernel_config(st->plan, i)), launch);
        info->memsets += fu_plan_kernel_memset_before(st->plan, i);
        info->copies += fu_plan_kernel_copy_before(st->plan, i);
        const fu_exec_kernel_info *ki = fu_exec_kernel(st->x, i);
        info->compiled++;
        info->cache_hits += ki->cache_hit;
        info->compile_ms += ki->compile_ms;
        if (k < sizeof info->detail) {
            int w = snprintf(info->detail + k, sizeof info->detail - k, "%s%s", i ? "+" : "",
                             fu_plan_kernel_scheduler(st->plan, i));
            if (w > 0) k += (size_t)w;
        }
    }
    hb_hash_hex(h, info->source_hash);
    *state = st;
    return FU_OK;
}

static fu_status fuser_run(void *p, const fu_devptr *inputs, const fu_devptr *outputs, fu_error *err)
{
    fuser_state *st = p;
    for (int i = 0; i < st->nin; i++) st->in[i] = inputs[st->in_map[i]];
    for (int i = 0; i < st->nout; i++) st->out[i] = outputs[st->out_map[i]];
    return fu_exec_launch(st->x, st->in, st->out, err);
}

static fu_status fuser_check(void *p, fu_error *err)
{
    fuser_state *st = p;
    fu_status s = fu_runtime_synchronize(st->rt, err);
    return s ? s : fu_exec_check(st->x, err);
}

static void fuser_counts(void *p, int *kernels, int *memsets, int *copies)
{
    fuser_state *st = p;
    fu_exec_launch_counts(st->x, kernels, memsets, copies);
}

static int fuser_output_view(void *p, int output)
{
    fuser_state *st = p;
    for (int k = 0; k < st->nout; k++)
        if (st->out_map[k] == output) {
            int v = fu_exec_output_view(st->x, k);
            return v < 0 ? -1 : st->in_map[v];
        }
    return -1;
}

const hb_variant hb_variant_fuser = {
    .name = "fuser",
    .prepare = fuser_prepare,
    .run = fuser_run,
    .check = fuser_check,
    .launch_counts = fuser_counts,
    .free = fuser_free,
    .output_view = fuser_output_view,
};
