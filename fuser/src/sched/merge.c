/*
 * merge.c -- the merging segmenter: a fusion that is not one kernel is split
 * into groups as large as some scheduler accepts.
 *
 * Learned from nvFuser's fusion_segmenter.cpp (every expression starts as its
 * own group; neighbouring groups are merged while a scheduler accepts the
 * merged group and the merge leaves the group graph acyclic) and from
 * Inductor's fusion pass in scheduler.py (candidate pairs are scored by the
 * memory traffic a merge saves, and tried best first). Here:
 *
 *   1. Every op starts as its own group (a single op is always schedulable).
 *   2. Candidates: producer -> consumer pairs of groups (vertical: the tensors
 *      between them are no longer written and read back), and pairs of groups
 *      reading the same tensor (horizontal: it is read once). A pair's score is
 *      the bytes it saves (vertical counted twice: a write and a read).
 *   3. The best candidate that forms no cycle (no path from one to the other
 *      through a third group) and that a scheduler accepts is merged; then the
 *      candidates are recomputed. A refused pair is remembered with its reason
 *      (groups get a fresh id when they change, so the memory stays valid), so
 *      each pair is offered to the schedulers once.
 *   4. When nothing merges, the remaining edges between groups are the
 *      boundaries; FUSER_DEBUG=1 prints each with the scheduler's reason.
 *
 * The result is a group per node, numbered in a topological order of the
 * groups (the order the kernels run in).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

typedef struct refusal {
    int a, b; /* group ids, a < b */
    char why[200];
} refusal;

typedef struct cand {
    int a, b;      /* group ids, a < b */
    double score;  /* bytes saved */
} cand;

typedef struct merger {
    const fu_fusion *f;
    const bool *members;
    fu_merge_probe probe;
    void *ctx;
    int *gid;          /* per node: stable group id, -1 outside members */
    int next_id;
    refusal *refused;
    int nrefused, cap_refused;
    cand *cands;
    int ncands, cap_cands;
    int *compact;      /* group id -> dense index of this round, -1 = none */
    int ngroups;
    unsigned char *adj;/* ngroups x ngroups: an edge producer -> consumer */
    int *stack;
    unsigned char *seen;
    bool *in_group;
} merger;

static double tensor_bytes(const fu_fusion *f, fu_tensor t)
{
    return (double)fu_tensor_numel(f, t) * (double)fu_dtype_size(fu_tensor_dtype(f, t));
}

static const refusal *find_refusal(const merger *m, int a, int b)
{
    for (int i = 0; i < m->nrefused; i++)
        if (m->refused[i].a == a && m->refused[i].b == b) return &m->refused[i];
    return NULL;
}

static bool add_refusal(merger *m, int a, int b, const char *why)
{
    if (fu_grow((void **)&m->refused, &m->cap_refused, m->nrefused + 1, sizeof *m->refused)) return false;
    refusal *r = &m->refused[m->nrefused++];
    r->a = a;
    r->b = b;
    snprintf(r->why, sizeof r->why, "%s", why);
    return true;
}

static bool add_cand(merger *m, int a, int b, double score)
{
    if (a == b) return true;
    if (a > b) {
        int t = a;
        a = b;
        b = t;
    }
    for (int i = 0; i < m->ncands; i++)
        if (m->cands[i].a == a && m->cands[i].b == b) {
            m->cands[i].score += score;
            return true;
        }
    if (fu_grow((void **)&m->cands, &m->cap_cands, m->ncands + 1, sizeof *m->cands)) return false;
    m->cands[m->ncands++] = (cand){a, b, score};
    return true;
}

/* Dense indices of this round's groups and their edges. */
static void build_graph(merger *m)
{
    const fu_fusion *f = m->f;
    for (int i = 0; i < m->next_id; i++) m->compact[i] = -1;
    m->ngroups = 0;
    for (int i = 0; i < f->nnodes; i++)
        if (m->gid[i] >= 0 && m->compact[m->gid[i]] < 0) m->compact[m->gid[i]] = m->ngroups++;
    memset(m->adj, 0, (size_t)m->ngroups * (size_t)m->ngroups);
    for (int i = 0; i < f->nnodes; i++) {
        if (m->gid[i] < 0) continue;
        for (int k = 0; k < f->nodes[i].ninputs; k++) {
            int p = f->values[f->nodes[i].inputs[k]].producer;
            if (p < 0 || m->gid[p] < 0 || m->gid[p] == m->gid[i]) continue;
            m->adj[(size_t)m->compact[m->gid[p]] * (size_t)m->ngroups + (size_t)m->compact[m->gid[i]]] = 1;
        }
    }
}

/* Whether b can be reached from a through at least one other group. */
static bool indirect_path(merger *m, int a, int b)
{
    int n = m->ngroups, top = 0;
    memset(m->seen, 0, (size_t)n);
    for (int j = 0; j < n; j++)
        if (j != b && m->adj[(size_t)a * (size_t)n + (size_t)j] && !m->seen[j]) {
            m->seen[j] = 1;
            m->stack[top++] = j;
        }
    while (top > 0) {
        int g = m->stack[--top];
        if (m->adj[(size_t)g * (size_t)n + (size_t)b]) return true;
        for (int j = 0; j < n; j++)
            if (m->adj[(size_t)g * (size_t)n + (size_t)j] && !m->seen[j]) {
                m->seen[j] = 1;
                m->stack[top++] = j;
            }
    }
    return false;
}

static bool creates_cycle(merger *m, int ida, int idb)
{
    int a = m->compact[ida], b = m->compact[idb];
    return indirect_path(m, a, b) || indirect_path(m, b, a);
}

/* Vertical and horizontal candidates between the current groups. */
static bool collect(merger *m)
{
    const fu_fusion *f = m->f;
    m->ncands = 0;
    for (int i = 0; i < f->nnodes; i++) {
        if (m->gid[i] < 0) continue;
        const fu_node *n = &f->nodes[i];
        for (int k = 0; k < n->ninputs; k++) {
            fu_tensor t = n->inputs[k];
            bool dup = false; /* a tensor read twice by one op counts once */
            for (int j = 0; j < k; j++) dup |= n->inputs[j] == t;
            if (dup) continue;
            int p = f->values[t].producer;
            if (p >= 0 && m->gid[p] >= 0 && m->gid[p] != m->gid[i] && !add_cand(m, m->gid[p], m->gid[i], 2 * tensor_bytes(f, t)))
                return false;
            /* horizontal: an earlier reader of t in another group */
            for (int j = 0; j < i; j++) {
                if (m->gid[j] < 0 || m->gid[j] == m->gid[i]) continue;
                bool reads = false;
                for (int q = 0; q < f->nodes[j].ninputs; q++) reads |= f->nodes[j].inputs[q] == t;
                if (reads && !add_cand(m, m->gid[j], m->gid[i], tensor_bytes(f, t))) return false;
            }
        }
    }
    return true;
}

static int by_score(const void *x, const void *y)
{
    const cand *a = x, *b = y;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    if (a->a != b->a) return a->a < b->a ? -1 : 1;
    return a->b < b->b ? -1 : a->b > b->b;
}

/* Tries the candidates best first; merges the first that a scheduler takes.
 * Returns 1 merged, 0 nothing left to merge, -1 error. */
static int merge_one(merger *m, fu_error *err)
{
    const fu_fusion *f = m->f;
    if (!collect(m)) {
        fu_error_set(err, FU_ERR_NOMEM, "out of memory");
        return -1;
    }
    build_graph(m);
    if (m->ncands > 1) qsort(m->cands, (size_t)m->ncands, sizeof *m->cands, by_score);
    for (int c = 0; c < m->ncands; c++) {
        int a = m->cands[c].a, b = m->cands[c].b;
        if (find_refusal(m, a, b) || creates_cycle(m, a, b)) continue;
        for (int i = 0; i < f->nnodes; i++) m->in_group[i] = m->gid[i] == a || m->gid[i] == b;
        char why[512] = "";
        int r = m->probe(m->ctx, m->in_group, why, sizeof why);
        if (r < 0) return -1;
        if (r == 0) {
            if (!add_refusal(m, a, b, why)) {
                fu_error_set(err, FU_ERR_NOMEM, "out of memory");
                return -1;
            }
            continue;
        }
        int id = m->next_id++;
        for (int i = 0; i < f->nnodes; i++)
            if (m->in_group[i]) m->gid[i] = id;
        return 1;
    }
    return 0;
}

/* A name for a group in messages: its last op's output. */
static const char *group_name(const merger *m, int id)
{
    const char *name = "?";
    for (int i = 0; i < m->f->nnodes; i++)
        if (m->gid[i] == id) name = m->f->values[m->f->nodes[i].output].name;
    return name;
}

static void print_boundaries(merger *m)
{
    const fu_fusion *f = m->f;
    collect(m);
    build_graph(m);
    if (m->ncands > 1) qsort(m->cands, (size_t)m->ncands, sizeof *m->cands, by_score);
    for (int c = 0; c < m->ncands; c++) {
        int a = m->cands[c].a, b = m->cands[c].b;
        bool edge = m->adj[(size_t)m->compact[a] * (size_t)m->ngroups + (size_t)m->compact[b]] ||
                    m->adj[(size_t)m->compact[b] * (size_t)m->ngroups + (size_t)m->compact[a]];
        if (!edge) continue; /* horizontal pairs that stayed apart are no boundary */
        const refusal *r = find_refusal(m, a, b);
        fprintf(stderr, "fuser: '%s': boundary between the kernels of '%s' and '%s': %s\n", f->name, group_name(m, a),
                group_name(m, b), r ? r->why : "merging them would form a cycle through another kernel");
    }
}

/* Dense group numbers in a topological order of the groups. */
static bool number_groups(merger *m, int *group_of)
{
    build_graph(m);
    size_t n = (size_t)m->ngroups;
    int *indeg = fu_calloc((size_t)n + 1, sizeof *indeg), *order = fu_calloc((size_t)n + 1, sizeof *order);
    if (!indeg || !order) {
        fu_free(indeg);
        fu_free(order);
        return false;
    }
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < n; j++) indeg[j] += m->adj[i * n + j];
    /* Kahn's algorithm, smallest dense index (earliest first op) first */
    int done = 0;
    unsigned char *placed = m->seen;
    memset(placed, 0, n);
    while ((size_t)done < n) {
        size_t g = n;
        for (size_t i = 0; i < n && g == n; i++)
            if (!placed[i] && indeg[i] == 0) g = i;
        if (g == n) break; /* cannot happen: merges keep the graph acyclic */
        placed[g] = 1;
        order[g] = done++;
        for (size_t j = 0; j < n; j++) indeg[j] -= m->adj[g * n + j];
    }
    for (int i = 0; i < m->f->nnodes; i++) group_of[i] = m->gid[i] < 0 ? -1 : order[m->compact[m->gid[i]]];
    fu_free(indeg);
    fu_free(order);
    return (size_t)done == n;
}

int fu_merge_groups(const fu_fusion *f, const bool *members, fu_merge_probe probe, void *ctx, int *group_of,
                    bool debug, fu_error *err)
{
    merger m = {.f = f, .members = members, .probe = probe, .ctx = ctx};
    size_t n = (size_t)f->nnodes + 1, ids = 2 * n + 1;
    m.gid = fu_malloc(n * sizeof *m.gid);
    m.compact = fu_malloc(ids * sizeof *m.compact);
    m.adj = fu_malloc(n * n);
    m.stack = fu_malloc(n * sizeof *m.stack);
    m.seen = fu_malloc(n);
    m.in_group = fu_malloc(n * sizeof *m.in_group);
    int result = -1;
    if (!m.gid || !m.compact || !m.adj || !m.stack || !m.seen || !m.in_group) {
        fu_error_set(err, FU_ERR_NOMEM, "out of memory segmenting '%s'", f->name);
        goto done;
    }
    for (int i = 0; i < f->nnodes; i++) m.gid[i] = members[i] ? m.next_id++ : -1;
    int r;
    while ((r = merge_one(&m, err)) == 1) {}
    if (r < 0) goto done;
    if (debug) print_boundaries(&m);
    if (!number_groups(&m, group_of)) {
        fu_error_set(err, FU_ERR_NOMEM, "out of memory segmenting '%s'", f->name);
        goto done;
    }
    result = m.ngroups;
done:
    fu_free(m.gid);
    fu_free(m.compact);
    fu_free(m.adj);
    fu_free(m.stack);
    fu_free(m.seen);
    fu_free(m.in_group);
    fu_free(m.refused);
    fu_free(m.cands);
    return result;
}
