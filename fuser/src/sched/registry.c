/*
 * registry.c -- the schedulers, in the order the segmenter offers a group to
 * them (nvFuser's scheduler registry: a priority list of entries, each with a
 * structural test, a heuristics step and a scheduling step).
 *
 * Each entry has
 *   can_schedule  a cheap structural test (op kinds in the group); says why not;
 *   heuristics    decides the kernel's parameters: a struct of the scheduler's
 *                 own (params, freed with free_params), its text in kp->config
 *                 and its JSON object in kp->params_json (both printed by
 *                 `fuser plan`, text and --json); says why not;
 *   emit          writes the CUDA C from that struct alone (kp->source); a
 *                 failure there (a value the walk cannot reach in time) also
 *                 passes the group on to the next entry;
 *   free_params   frees the struct.
 * Every scheduler has both steps: the decisions are fields of its struct, set
 * in heuristics and only read in emit.
 *
 * Adding a scheduler: write k_NAME.c with these functions (see k_pointwise.c),
 * add FU_SCHED_NAME to fu_sched in plan.h and a row below, at the place of
 * its priority: the first entry whose can_schedule, heuristics and emit accept a
 * group plans it. The segmenter needs nothing else: it merges groups while
 * some entry accepts the merge, and a single op is always accepted by one.
 */
#include <stdio.h>
#include <string.h>

#include "plan.h"
#include "reduce_common.h"

static bool has_scatter(const fu_group *g) { return fu_group_has_op_kind(g, FU_KIND_SCATTER); }
static bool has_reduce(const fu_group *g) { return fu_group_has_op_kind(g, FU_KIND_REDUCE); }

static bool can_scatter(const fu_group *g, char *why, size_t nwhy)
{
    if (has_scatter(g)) return true;
    snprintf(why, nwhy, "scatter: no scatter in the group");
    return false;
}

static bool can_reduction(const fu_group *g, char *why, size_t nwhy)
{
    if (has_reduce(g) && !has_scatter(g)) return true;
    snprintf(why, nwhy, "reduction: %s", has_scatter(g) ? "the group has a scatter" : "no reduction in the group");
    return false;
}

/* ORDER priority: the first entry that takes a group plans it. */
static const fu_scheduler registry[] = {
    {FU_SCHED_SCATTER, "scatter", can_scatter, fu_scatter_heuristics, fu_scatter_emit, fu_free},
    {FU_SCHED_OUTER, "outer_reduction", can_reduction, fu_outer_heuristics, fu_outer_emit, fu_free},
    {FU_SCHED_REDUCTION, "reduction", can_reduction, fu_reduction_heuristics, fu_reduction_emit, fu_reduction_free},
    {FU_SCHED_TRANSPOSE, "transpose", fu_pw_can_schedule, fu_tr_heuristics, fu_tr_emit, fu_free},
    {FU_SCHED_POINTWISE, "pointwise", fu_pw_can_schedule, fu_pw_heuristics, fu_pw_emit, fu_free},
    {FU_SCHED_BLOCK, "one_block", fu_block_can_schedule, fu_block_heuristics, fu_block_emit, fu_free},
};
_Static_assert(sizeof registry / sizeof registry[0] == FU_SCHED_COUNT, "one registry row per fu_sched");

int fu_scheduler_count(void) { return (int)(sizeof registry / sizeof registry[0]); }
const fu_scheduler *fu_scheduler_at(int i) { return i >= 0 && i < fu_scheduler_count() ? &registry[i] : NULL; }

const char *fu_sched_name(fu_sched s)
{
    for (int i = 0; i < fu_scheduler_count(); i++)
        if (registry[i].id == s) return registry[i].name;
    return "?";
}

bool fu_schedule_group(const fu_group *g, fu_kernel_plan *kp, char *why, size_t nwhy)
{
    /* the reasons of the schedulers that wanted the group; of all when none did */
    char refused[512] = "", failed[512] = "";
    size_t nr = 0, nf = 0;
    for (int i = 0; i < fu_scheduler_count(); i++) {
        const fu_scheduler *s = &registry[i];
        char one[512] = "";
        if (!s->can_schedule(g, one, sizeof one)) {
            if (nr < sizeof refused) nr += (size_t)snprintf(refused + nr, sizeof refused - nr, "%s%s", nr ? "; " : "", one);
            continue;
        }
        void *params = NULL;
        bool ok = s->heuristics(g, &params, kp, one, sizeof one);
        if (ok) ok = s->emit(g, params, kp, one, sizeof one);
        if (params && s->free_params) s->free_params(params);
        if (ok) return true;
        fu_kernel_plan_clear(kp);
        if (nf < sizeof failed) nf += (size_t)snprintf(failed + nf, sizeof failed - nf, "%s%s", nf ? "; " : "", one);
    }
    snprintf(why, nwhy, "%s", nf ? failed : refused);
    return false;
}
