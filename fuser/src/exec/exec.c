/* exec.c -- see exec.h. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec.h"

typedef struct exec_kernel {
    fu_module *module;
    fu_kernel *kernel;
    fu_devptr workspace;
    unsigned grid;        /* the launch's: the plan's, or the clusters that fit at once */
    fu_exec_kernel_info info;
} exec_kernel;

struct fu_executable {
    fu_runtime *rt;
    const fu_plan *plan;
    exec_kernel *kernels;
    fu_devptr *buffers;   /* per tensor of the plan fusion: where it lives during a launch */
    fu_devptr err_flag;   /* 3 x u64: op + 1, value, position */
    double prepare_ms;
    int nkernels_launched, nmemsets, ncopies;
};

static size_t tensor_bytes(const fu_fusion *f, fu_tensor t)
{
    size_t n = (size_t)fu_tensor_numel(f, t) * fu_dtype_size(fu_tensor_dtype(f, t));
    return n ? n : 1;
}

void fu_exec_free(fu_executable *x)
{
    if (!x) return;
    if (x->kernels)
        for (int i = 0; i < x->plan->nkernels; i++) {
            fu_device_free(x->rt, x->kernels[i].workspace, NULL);
            fu_module_free(x->kernels[i].module);
        }
    if (x->buffers)
        for (int i = 0; i < x->plan->nintermediates; i++) fu_device_free(x->rt, x->buffers[x->plan->intermediates[i]], NULL);
    fu_device_free(x->rt, x->err_flag, NULL);
    fu_free(x->kernels);
    fu_free(x->buffers);
    fu_free(x);
}

fu_status fu_exec_prepare(fu_runtime *rt, const fu_plan *plan, fu_executable **out, fu_error *err)
{
    double t0 = fu_now_ms();
    *out = NULL;
    fu_executable *x = fu_calloc(1, sizeof *x);
    if (!x) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    x->rt = rt;
    x->plan = plan;
    x->kernels = fu_calloc((size_t)plan->nkernels + 1, sizeof *x->kernels);
    x->buffers = fu_calloc((size_t)plan->fusion->nvalues + 1, sizeof *x->buffers);
    if (!x->kernels || !x->buffers) {
        fu_exec_free(x);
        return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    }
    bool device = fu_runtime_has_device(rt);
    for (int i = 0; i < plan->nkernels; i++) {
        const fu_kernel_plan *kp = &plan->kernels[i];
        exec_kernel *k = &x->kernels[i];
        fu_compile_info ci;
        fu_status s = fu_runtime_compile(rt, kp->source, kp->name, NULL, 0, &k->module, &ci, err);
        if (s) {
            fu_exec_free(x);
            return s;
        }
        k->info.name = kp->name;
        k->info.cache_hit = ci.cache_hit;
        k->info.compile_ms = ci.compile_ms;
        k->info.total_ms = ci.total_ms;
        if (!device) continue;
        if ((s = fu_module_get_kernel(k->module, kp->name, &k->kernel, err))) {
            fu_exec_free(x);
            return s;
        }
        k->info.attrs = *fu_kernel_attributes(k->kernel);
        k->info.attrs_valid = true;
        /* Rows go to clusters strided by the grid: a grid of more clusters than run at once
         * leaves the rest for a second wave (H200: 33 clusters of 4 planned, 30-32 fit) */
        k->grid = kp->grid;
        int fit = 0;
        if (kp->cluster > 1 &&
            (s = fu_kernel_max_active_clusters(k->kernel, kp->grid, kp->block, kp->shared_bytes, &fit, err))) {
            fu_exec_free(x);
            return s;
        }
        if (kp->cluster > 1 && fit > 0 && (unsigned)fit * kp->cluster < kp->grid) k->grid = (unsigned)fit * kp->cluster;
        if (kp->grid_sync) { /* every block resident at once: no more than fit on the device */
            int per_sm = 0;
            if ((s = fu_kernel_occupancy(k->kernel, (int)kp->block, kp->shared_bytes, &per_sm, err))) {
                fu_exec_free(x);
                return s;
            }
            unsigned most = (unsigned)per_sm * (unsigned)fu_runtime_device(rt)->sm_count;
            if (most == 0) {
                s = fu_error_set(err, FU_ERR_RUNTIME, "kernel '%s': no block of %u threads and %zu B of shared memory fits an SM",
                                 kp->name, kp->block, kp->shared_bytes);
                fu_exec_free(x);
                return s;
            }
            if (most < k->grid) k->grid = most;
        }
        if (kp->workspace_bytes) {
            if ((s = fu_device_alloc(rt, kp->workspace_bytes, &k->workspace, err)) ||
                (s = fu_device_memset8(rt, k->workspace, 0, kp->workspace_bytes, err))) {
                fu_exec_free(x);
                return s;
            }
        }
    }
    if (device) {
        fu_status s = fu_device_alloc(rt, 3 * sizeof(uint64_t), &x->err_flag, err);
        if (!s) s = fu_device_memset8(rt, x->err_flag, 0, 3 * sizeof(uint64_t), err);
        for (int i = 0; !s && i < plan->nintermediates; i++) {
            fu_tensor t = plan->intermediates[i];
            s = fu_device_alloc(rt, tensor_bytes(plan->fusion, t), &x->buffers[t], err);
        }
        if (s) {
            fu_exec_free(x);
            return s;
        }
    }
    x->prepare_ms = fu_now_ms() - t0;
    *out = x;
    return FU_OK;
}

const fu_exec_kernel_info *fu_exec_kernel(const fu_executable *x, int i) { return &x->kernels[i].info; }
double fu_exec_prepare_ms(const fu_executable *x) { return x->prepare_ms; }

void fu_exec_launch_counts(const fu_executable *x, int *kernels, int *memsets, int *copies)
{
    *kernels = x->nkernels_launched;
    *memsets = x->nmemsets;
    *copies = x->ncopies;
}

int fu_exec_output_view(const fu_executable *x, int i)
{
    const fu_fusion *f = x->plan->fusion;
    if (i < 0 || i >= f->noutputs) return -1;
    fu_tensor t = f->outputs[i];
    /* an input returned as it is, or under another shape (the same bytes) */
    fu_tensor src = f->values[t].input_index >= 0 ? t : x->plan->copy_of[t];
    return src >= 0 ? f->values[src].input_index : -1;
}

fu_status fu_exec_launch(fu_executable *x, const fu_devptr *inputs, const fu_devptr *outputs, fu_error *err)
{
    const fu_plan *p = x->plan;
    const fu_fusion *f = p->fusion;
    if (!fu_runtime_has_device(x->rt))
        return fu_error_set(err, FU_ERR_NO_DEVICE, "cannot launch '%s': %s", f->name, fu_runtime_describe(x->rt));
    x->nkernels_launched = x->nmemsets = x->ncopies = 0;
    for (int i = 0; i < f->ninputs; i++) x->buffers[f->inputs[i]] = inputs[i];
    for (int i = 0; i < f->noutputs; i++) {
        int view = fu_exec_output_view(x, i);
        if (view < 0) {
            x->buffers[f->outputs[i]] = outputs[i];
        } else if (outputs[i] != inputs[view]) { /* (the same buffer: a view, nothing to do) */
            fu_status s = fu_device_copy_async(x->rt, outputs[i], inputs[view], tensor_bytes(f, f->outputs[i]), err);
            if (s) return s;
            x->ncopies++;
        }
    }
    for (fu_tensor t = 0; t < f->nvalues; t++) /* written straight into an output that reshapes it */
        if (p->alias_of[t] >= 0) x->buffers[t] = x->buffers[p->alias_of[t]];
    for (int i = 0; i < p->nkernels; i++) {
        const fu_kernel_plan *kp = &p->kernels[i];
        exec_kernel *k = &x->kernels[i];
        fu_status s = FU_OK;
        if (kp->zero_before >= 0) {
            s = fu_device_memset8_async(x->rt, x->buffers[kp->zero_before], 0, tensor_bytes(f, kp->zero_before), err);
            x->nmemsets++;
        }
        if (!s && kp->copy_before >= 0) {
            fu_tensor dst = kp->params[kp->nparams - 1].tensor;
            s = fu_device_copy_async(x->rt, x->buffers[dst], x->buffers[kp->copy_before], tensor_bytes(f, dst), err);
            x->ncopies++;
        }
        if (s) return s;
        fu_devptr vals[72];
        void *args[72];
        int n = 0;
        for (int j = 0; j < kp->nparams; j++) vals[n++] = x->buffers[kp->params[j].tensor];
        if (kp->workspace_bytes) {
            vals[n++] = k->workspace;
            vals[n++] = k->workspace + kp->workspace_bytes - 64;
        }
        vals[n++] = x->err_flag;
        for (int j = 0; j < n; j++) args[j] = &vals[j];
        unsigned grid[3] = {k->grid, 1, 1}, block[3] = {kp->block, 1, 1};
        s = kp->grid_sync ? fu_runtime_launch_cooperative(x->rt, k->kernel, grid, block, kp->shared_bytes, args, err)
                          : fu_runtime_launch(x->rt, k->kernel, grid, block, kp->shared_bytes, args, err);
        if (s) return s;
        x->nkernels_launched++;
    }
    return FU_OK;
}

fu_status fu_exec_check(fu_executable *x, fu_error *err)
{
    uint64_t flag[3];
    fu_status s = fu_device_download(x->rt, flag, x->err_flag, sizeof flag, err);
    if (s) return s;
    if (flag[0] == 0) return FU_OK;
    fu_device_memset8(x->rt, x->err_flag, 0, sizeof flag, NULL);
    const fu_fusion *f = x->plan->fusion;
    int node = (int)flag[0] - 1;
    if (node < 0 || node >= f->nnodes) return fu_error_set(err, FU_ERR_INDEX, "an index was out of range");
    const fu_node *n = &f->nodes[node];
    const fu_value *src = fu_val(f, n->inputs[0]), *idx = fu_val(f, n->inputs[1]);
    int64_t extent = src->shape[n->attrs.axis];
    /* Ops made by decomposition are named "<user tensor>.<part>": name the user's tensor too. */
    const char *name = fu_val(f, n->output)->name;
    const char *dot = strchr(name, '.');
    char part_of[FU_MAX_NAME + 16] = "";
    if (dot) snprintf(part_of, sizeof part_of, " (part of '%.*s')", (int)(dot - name), name);
    return fu_error_set(err, FU_ERR_INDEX,
                        "op '%s' -> '%s'%s: index %lld (from '%s', at position %lld) is out of range [0, %lld)",
                        fu_op_name(n->op), name, part_of, (long long)(int64_t)flag[1], idx->name,
                        (long long)(int64_t)flag[2], (long long)extent);
}

void fu_plan_options_for_device(const fu_runtime *rt, fu_plan_options *o)
{
    fu_plan_options_default(o);
    const char *outer_norm = getenv("FUSER_OUTER_NORM");
    o->outer_norm = outer_norm && !strcmp(outer_norm, "1");
    const char *transpose = getenv("FUSER_TRANSPOSE");
    if (transpose && !strcmp(transpose, "0")) o->transpose = false; /* the pointwise scheduler's strided reads, for an A/B */
    bool transpose_every_size = transpose && !strcmp(transpose, "1"); /* ... and the tiles at every size */
    if (transpose_every_size) o->transpose_min_bytes = 0;
    /* thread-block clusters from sm_90 on (also when compiling without a GPU for an older arch) */
    if (rt && fu_runtime_arch_number(rt) > 0 && fu_runtime_arch_number(rt) < 90) o->max_cluster = 1;
    if (!rt || !fu_runtime_has_device(rt)) return;
    const fu_device_props *d = fu_runtime_device(rt);
    if (d->sm_count > 0) o->sm_count = d->sm_count;
    if (d->max_threads_per_sm > 0) o->max_threads_per_sm = d->max_threads_per_sm;
    if (d->max_shared_per_block_optin > 0) o->max_shared_per_block = d->max_shared_per_block_optin;
    if (d->max_shared_per_sm > 0) o->max_shared_per_sm = d->max_shared_per_sm;
    if (d->reserved_shared_per_block >= 0) o->reserved_shared_per_block = d->reserved_shared_per_block;
    if (d->l2_bytes > 0 && !transpose_every_size) o->transpose_min_bytes = fu_transpose_min_bytes(d->l2_bytes);
    /* per SM that kernels run on: an SM limit raises each SM's share */
    o->dram_bytes_per_sm_clock = fu_dram_bytes_per_sm_clock(d->memory_clock_khz, d->memory_bus_width_bits, o->sm_count, d->clock_khz);
}

fu_status fu_exec_run_host(fu_runtime *rt, const fu_fusion *f, const fu_plan_options *opts,
                           const fu_host_tensor *inputs, fu_host_tensor *outputs, fu_error *err)
{
    fu_plan *plan = NULL;
    fu_executable *x = NULL;
    fu_status s = fu_plan_build(f, opts, &plan, err);
    if (!s) s = fu_exec_prepare(rt, plan, &x, err);
    int nin = fu_fusion_num_inputs(f), nout = fu_fusion_num_outputs(f);
    fu_devptr *din = fu_calloc((size_t)nin + 1, sizeof *din), *dout = fu_calloc((size_t)nout + 1, sizeof *dout);
    if (!s && (!din || !dout)) s = fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    for (int i = 0; !s && i < nin; i++) {
        fu_tensor t = fu_fusion_input(f, i);
        const fu_host_tensor *h = &inputs[i];
        if (h->dtype != fu_tensor_dtype(f, t) || h->rank != fu_tensor_rank(f, t) ||
            memcmp(h->shape, fu_tensor_shape(f, t), (size_t)h->rank * sizeof *h->shape))
            s = fu_error_set(err, FU_ERR_ARG, "input '%s' does not match its declared dtype and shape", fu_tensor_name(f, t));
        if (!s) s = fu_device_alloc(rt, tensor_bytes(f, t), &din[i], err);
        if (!s && fu_host_tensor_bytes(h)) s = fu_device_upload(rt, din[i], h->data, fu_host_tensor_bytes(h), err);
    }
    for (int i = 0; !s && i < nout; i++) {
        fu_tensor t = fu_fusion_output(f, i);
        s = fu_device_alloc(rt, tensor_bytes(f, t), &dout[i], err);
        /* poison, so an element the kernel forgot shows up as NaN / garbage */
        if (!s) s = fu_device_memset8(rt, dout[i], 0xff, tensor_bytes(f, t), err);
    }
    if (!s) s = fu_exec_launch(x, din, dout, err);
    if (!s) s = fu_runtime_synchronize(rt, err);
    if (!s) s = fu_exec_check(x, err);
    int done = 0;
    for (int i = 0; !s && i < nout; i++, done++) {
        fu_tensor t = fu_fusion_output(f, i);
        s = fu_host_tensor_alloc(&outputs[i], fu_tensor_dtype(f, t), fu_tensor_rank(f, t), fu_tensor_shape(f, t), err);
        if (!s && fu_host_tensor_bytes(&outputs[i]))
            s = fu_device_download(rt, outputs[i].data, dout[i], fu_host_tensor_bytes(&outputs[i]), err);
        if (s) fu_host_tensor_free(&outputs[i]);
    }
    if (s)
        for (int i = 0; i < done; i++) fu_host_tensor_free(&outputs[i]);
    for (int i = 0; din && i < nin; i++) fu_device_free(rt, din[i], NULL);
    for (int i = 0; dout && i < nout; i++) fu_device_free(rt, dout[i], NULL);
    fu_free(din);
    fu_free(dout);
    fu_exec_free(x);
    fu_plan_free(plan);
    return s;
}

double fu_host_max_rel_error(const fu_host_tensor *got, const fu_host_tensor *want)
{
    int64_t n = fu_host_tensor_numel(want);
    if (got->dtype != want->dtype || got->rank != want->rank || fu_host_tensor_numel(got) != n) return INFINITY;
    if (!fu_dtype_is_float(want->dtype)) {
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) bad += fu_host_tensor_get(got, i) != fu_host_tensor_get(want, i);
        return (double)bad;
    }
    double maxdiff = 0, maxref = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = fu_host_tensor_get(got, i), y = fu_host_tensor_get(want, i), d;
        if (isnan(x) || isnan(y)) d = isnan(x) && isnan(y) ? 0 : INFINITY;
        else if (isinf(x) || isinf(y)) d = x == y ? 0 : INFINITY;
        else d = fabs(x - y);
        if (d > maxdiff) maxdiff = d;
        if (isfinite(y) && fabs(y) > maxref) maxref = fabs(y);
    }
    return maxref > 0 ? maxdiff / maxref : maxdiff;
}

fu_status fu_exec_run_for_device(fu_runtime *rt, const fu_fusion *f, fu_scatter_mode scatter,
                                 const fu_host_tensor *inputs, fu_host_tensor *outputs, fu_error *err)
{
    fu_plan_options o;
    fu_plan_options_for_device(rt, &o);
    o.scatter = scatter;
    return fu_exec_run_host(rt, f, &o, inputs, outputs, err);
}
