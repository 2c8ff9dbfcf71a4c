/*
 * test_plan_compile.c -- the segmenter, schedulers and code generator without
 * a GPU: every seed workload (suites/, default sizes and small overrides, f32
 * and bf16; f16 and f64 at one size) and the C-API variants of fuser_cases.h plan to the kernel count
 * they must (one, except the fusions built to need several), every kernel
 * compiles with NVRTC for sm_90, and preparing the same plan again is served
 * entirely from the disk cache (no NVRTC call).
 *
 * The runtime is opened compile-only with a fresh temporary cache directory.
 * One line per plan: name, kernels, compile time, OK/FAIL.
 */
#define _XOPEN_SOURCE 700

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "exec.h"
#include "fuser_cases.h"
#include "runtime.h"
#include "test_util.h"

static fu_runtime_stats stats_of(const fu_runtime *rt)
{
    fu_runtime_stats s;
    fu_runtime_get_stats(rt, &s);
    return s;
}

/* Plans, checks the kernel count, compiles every kernel, then prepares again
 * and checks that nothing was compiled the second time. */
static void plan_and_compile(fu_runtime *rt, const tc_case *c)
{
    fu_error err = {0};
    int before = check_failures;
    fu_plan *p = tc_plan(c, 0, &err);
    CHECK(p != NULL);
    if (!p) {
        fprintf(stderr, "case %s: fu_plan_build: %s\n", c->name, err.message);
        printf("%-48s plan failed  FAIL\n", c->name);
        return;
    }
    CHECK(tc_plan_ok(c, p));
    for (int k = 0; k < p->nkernels; k++) {
        CHECK(p->kernels[k].source != NULL);
        if (p->kernels[k].source) CHECK_CONTAINS(p->kernels[k].source, "extern \"C\" __global__");
    }
    fu_executable *x = NULL;
    fu_status s = fu_exec_prepare(rt, p, &x, &err);
    CHECK(s == FU_OK);
    double ms = 0;
    if (s != FU_OK) {
        char *text = fu_plan_text(p);
        fprintf(stderr, "case %s: compile failed: %s\nplan:\n%s", c->name, err.message, text ? text : "");
        free(text);
    } else {
        ms = fu_exec_prepare_ms(x);
        fu_exec_free(x);
        x = NULL;
        /* the same plan again: every kernel from the cache */
        int64_t calls = stats_of(rt).nvrtc_calls;
        s = fu_exec_prepare(rt, p, &x, &err);
        CHECK(s == FU_OK);
        if (s == FU_OK) {
            CHECK(stats_of(rt).nvrtc_calls == calls);
            for (int k = 0; k < p->nkernels; k++) {
                const fu_exec_kernel_info *ki = fu_exec_kernel(x, k);
                CHECK(ki->cache_hit);
                CHECK(ki->compile_ms == 0.0);
            }
            fu_exec_free(x);
        } else {
            fprintf(stderr, "case %s: second prepare: %s\n", c->name, err.message);
        }
    }
    printf("%-48s kernels=%d  ready_ms=%8.1f  %s\n", c->name, p->nkernels, ms,
           check_failures == before ? "OK" : "FAIL");
    fflush(stdout);
    fu_plan_free(p);
}

/* The generated code of the only kernel of suite file rel at dtype dt (sets
 * bind parameters), without the prelude; NULL (and a failed check) if it
 * does not plan to one kernel. */
static char *one_kernel_source(const char *suites, const char *rel, const char *const *sets, int nsets, fu_dtype dt)
{
    tc_list l = {0};
    tc_case *c = tc_add_suite(&l, suites, rel, "codegen", sets, nsets, dt, NULL);
    char *src = NULL;
    fu_error err = {0};
    fu_plan *p = c ? tc_plan(c, 132, &err) : NULL;
    CHECK(p != NULL && p->nkernels == 1);
    /* the kernel itself, after the prelude's definitions */
    const char *whole = p && p->nkernels == 1 ? p->kernels[0].source : NULL;
    const char *body = whole ? strstr(whole, "end of prelude") : NULL;
    CHECK(body != NULL);
    if (body) src = strdup(body);
    if (!p) fprintf(stderr, "%s: %s\n", rel, err.message);
    fu_plan_free(p);
    tc_list_free(&l);
    return src;
}

static size_t count_of(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *q = s ? strstr(s, needle) : NULL; q; q = strstr(q + 1, needle)) n++;
    return n;
}

/* The one kernel of a suite fusion planned for a device with these shared
 * memory limits (bytes per block with opt-in, per SM). */
static fu_plan *plan_with_shared(const char *suites, const char *rel, fu_dtype dt, int per_block, int per_sm)
{
    tc_list l = {0};
    tc_case *c = tc_add_suite(&l, suites, rel, "shared", NULL, 0, dt, NULL);
    fu_plan_options o;
    fu_plan_options_default(&o);
    o.max_shared_per_block = per_block;
    o.max_shared_per_sm = per_sm;
    fu_plan *p = NULL;
    fu_error err = {0};
    if (c && fu_plan_build(c->f, &o, &p, &err) != FU_OK) fprintf(stderr, "%s: %s\n", rel, err.message);
    CHECK(p != NULL && p->nkernels == 1);
    tc_list_free(&l);
    return p;
}

/* A row kept between passes goes to shared memory where the device gives a
 * block enough (an H200: 227 KiB), else it stays in registers; the grid is
 * the blocks whose slots fit on an SM. */
static void check_shared_memory_limits(const char *suites)
{
    const char *fb = "cross_entropy/cross_entropy_fwdbwd.fusion";
    fu_plan *p = plan_with_shared(suites, fb, FU_F32, 227 * 1024, 228 * 1024); /* the defaults */
    if (p && p->nkernels == 1) {
        CHECK(p->kernels[0].shared_bytes == 131072 && p->kernels[0].grid == 132 && p->kernels[0].block == 1024);
        CHECK_CONTAINS(p->kernels[0].config, "cached_inputs=1 (shared memory)");
    }
    fu_plan_free(p);
    p = plan_with_shared(suites, fb, FU_F32, 99 * 1024, 100 * 1024); /* sm_86/sm_89 */
    if (p && p->nkernels == 1) {
        CHECK(p->kernels[0].shared_bytes == 0);
        CHECK_CONTAINS(p->kernels[0].config, "cached_inputs=1 (registers)");
        CHECK_CONTAINS(p->kernels[0].source, "fu_c0[32]");
    }
    fu_plan_free(p);
    p = plan_with_shared(suites, fb, FU_BF16, 99 * 1024, 100 * 1024); /* 64 KiB fits, once per SM */
    if (p && p->nkernels == 1) {
        CHECK(p->kernels[0].shared_bytes == 65536 && p->kernels[0].grid == 132 && p->kernels[0].block == 512);
        CHECK_CONTAINS(p->kernels[0].source, "__launch_bounds__(512) fu_");
    }
    fu_plan_free(p);
    p = plan_with_shared(suites, fb, FU_BF16, 227 * 1024, 228 * 1024); /* two per SM, as registers allow */
    if (p && p->nkernels == 1) {
        CHECK(p->kernels[0].shared_bytes == 65536 && p->kernels[0].grid == 264);
        CHECK_CONTAINS(p->kernels[0].source, "__launch_bounds__(512, 2)");
    }
    fu_plan_free(p);
}

/* The source of the one kernel of a fusion given as text (default options). */
static char *text_kernel_source(const char *text)
{
    fu_plan *p = NULL;
    fu_error err = {0};
    fu_plan_options o;
    fu_plan_options_default(&o);
    char *src = NULL;
    fu_fusion *f = tc_fusion_from_text(text, &err);
    if (f && fu_plan_build(f, &o, &p, &err) == FU_OK && p->nkernels == 1)
        src = strdup(p->kernels[0].source);
    else
        fprintf(stderr, "text fusion: %s\n", err.message);
    CHECK(src != NULL);
    fu_plan_free(p);
    fu_fusion_free(f);
    return src;
}

/* Rows kept in shared memory: every kept input is loaded and stored to its
 * slots in pass 1, even when more inputs than staging slots come first, and
 * a bool row has 1-byte slots (a 2-byte access at an odd address faulted);
 * enough rows that each keeps its threads (fewer rows get more threads), and
 * rows too long for 512 threads to hold in registers (REGISTER_ROW_THREADS). */
static void check_shared_memory_rows(void)
{
    char *five = text_kernel_source("fusion five\nparam N = 16\nparam K = 36864\n"
                                    "input a: f32[N, K]\ninput b: f32[N, K]\ninput c: f32[N, K]\ninput d: f32[N, K]\n"
                                    "input e: bf16[N, K]\nab = add(a, b)\ncd = add(c, d)\nabcd = add(ab, cd)\n"
                                    "s = sum(abcd, axes=[1], keepdim=true)\nef = cast(e, dtype=f32)\ny = mul(ef, s)\n"
                                    "output y\n");
    if (five) {
        CHECK_CONTAINS(five, "*(uint2 *)(fu_s0 + b * 4) = __ldg((const uint2 *)(in4 + ");
        CHECK_CONTAINS(five, "*(uint2 *)(fu_rows + 0 + ((int)it * 1024 + threadIdx.x) * 8) = *(const uint2 *)(fu_s0 + b * 4);");
    }
    free(five);
    /* (rows over two axes: a vector of one element, so the bool row's slots are single bytes) */
    char *masked = text_kernel_source("fusion masked\nparam N = 4096\n"
                                      "input x: f32[N, 3, 1337]\ninput m: bool[N, 3, 1337]\n"
                                      "xm = where(m, x, -inf)\nmx = max(xm, axes=[1, 2], keepdim=true)\n"
                                      "d = sub(xm, mx)\ne = exp(d)\ns = sum(e, axes=[1, 2], keepdim=true)\n"
                                      "y = div(e, s)\noutput y\n");
    if (masked) {
        CHECK_CONTAINS(masked, "*(unsigned char *)(fu_rows + 16384 + ((int)it * 512 + threadIdx.x) * 1) = ");
        CHECK(count_of(masked, "unsigned short *)(fu_rows") == 0);
    }
    free(masked);
}

/* Rows whose length is no multiple of the vector (ALIGNED_ROWS): vectors from
 * each row's first aligned element, the edges element by element; an input
 * not laid out as the rows (a weight over the columns) is read a lane at a
 * time, whatever the row; a bool row beside an f32 one keeps 4-byte slots.
 * Each compiles with NVRTC. */
static void check_aligned_rows(fu_runtime *rt, const char *suites)
{
    const char *odd_vocab[] = {"N=4093", "V=50257"};
    for (int d = 0; d < 2; d++) {
        fu_dtype dt = d ? FU_BF16 : FU_F32;
        char *fwd = one_kernel_source(suites, "cross_entropy/cross_entropy_fwd.fusion", odd_vocab, 2, dt);
        if (fwd) {
            CHECK_CONTAINS(fwd, dt == FU_BF16 ? "const int fu_head = (int)(row & 7) * 7 & 7;" : "const int fu_head = (int)(row & 3) * 3 & 3;");
            CHECK_CONTAINS(fwd, "= __ldg((const uint4 *)(in0 + (50257 * o0 + k1)));");
            CHECK_CONTAINS(fwd, "if (kb < fu_kwhole) {");
            CHECK_CONTAINS(fwd, "if (fu_x < fu_head + 50257 - fu_kwhole) {");
            CHECK_CONTAINS(fwd, "const int kb = fu_x < fu_head ? fu_x : fu_kwhole - fu_head + fu_x;");
        }
        free(fwd);
    }
    /* fwd+bwd f32: a cluster of 2 a row; the gradient's whole vectors stored as vectors, the
     * edges by the row's first block */
    char *fb = one_kernel_source(suites, "cross_entropy/cross_entropy_fwdbwd.fusion", odd_vocab, 2, FU_F32);
    if (fb) {
        CHECK_CONTAINS(fb, "const int kb = fu_kbase + fu_head + ((int)it * ");
        CHECK_CONTAINS(fb, "if (kb < fu_kstop) {");
        CHECK_CONTAINS(fb, "if (it0 == 0 && fu_rank == 0u) {");
        CHECK_CONTAINS(fb, "*(uint4 *)(out1 + (50257 * o0 + k1)) = ");
        CHECK_CONTAINS(fb, "out1[(50257 * o0 + k1)] = ");
    }
    free(fb);
    const char *ln_odd[] = {"N=4096", "D=4097"};
    char *ln = one_kernel_source(suites, "layer_norm/layer_norm_fwd.fusion", ln_odd, 2, FU_F32);
    if (ln) {
        CHECK_CONTAINS(ln, "= __ldg((const uint4 *)(in0 + (4097 * o0 + k1)));");
        CHECK(count_of(ln, "(const uint4 *)(in1") == 0 && count_of(ln, "(const uint4 *)(in2") == 0);
    }
    free(ln);
    char *masked = text_kernel_source("fusion masked\nparam N = 4096\nparam K = 16001\n"
                                      "input x: f32[N, K]\ninput m: bool[N, K]\n"
                                      "xm = where(m, x, -inf)\ny = softmax(xm, axis=-1)\noutput y\n");
    if (masked) {
        CHECK_CONTAINS(masked, "*(unsigned int *)(fu_rows + 65536 + ((int)it * 512 + threadIdx.x) * 4) = ");
        CHECK(count_of(masked, "unsigned char *)(fu_rows") == 0);
    }
    free(masked);
    /* each of them through NVRTC */
    tc_list l = {0};
    for (int d = 0; d < 2; d++) {
        fu_dtype dt = d ? FU_BF16 : FU_F32;
        tc_add_suite(&l, suites, "cross_entropy/cross_entropy_fwd.fusion", "odd_vocab", odd_vocab, 2, dt, NULL);
        tc_add_suite(&l, suites, "cross_entropy/cross_entropy_bwd.fusion", "odd_vocab", odd_vocab, 2, dt, NULL);
        tc_add_suite(&l, suites, "cross_entropy/cross_entropy_fwdbwd.fusion", "odd_vocab", odd_vocab, 2, dt, NULL);
        tc_add_suite(&l, suites, "layer_norm/layer_norm_fwd.fusion", "odd", ln_odd, 2, dt, NULL);
    }
    CHECK(l.errors == 0);
    for (int i = 0; i < l.n; i++) plan_and_compile(rt, &l.v[i]);
    tc_list_free(&l);
}

/* Outputs of one shape get a domain each when they share no computation and
 * read disjoint slices, unless the grid fits one wave as it is (v13);
 * otherwise one thread computes all of them. */
static void check_output_domains(const char *suites)
{
    const char *big[] = {"B=32", "T=2048", "C=2048", "H=32"};
    char *qkv = one_kernel_source(suites, "qkv_split/qkv_split.fusion", big, 4, FU_BF16);
    if (qkv) {
        CHECK_CONTAINS(qkv, "// domain 2: [32, 32, 2048, 64]");
        CHECK(count_of(qkv, "out0 + e") == 2 && count_of(qkv, "out1 + e") == 2 && count_of(qkv, "out2 + e") == 2);
    }
    free(qkv);
    char *small = one_kernel_source(suites, "qkv_split/qkv_split.fusion", NULL, 0, FU_BF16);
    if (small) CHECK(count_of(small, "// domain 1:") == 0);
    free(small);
    const char *head = "fusion two\nparam N = 65536\nparam K = 256\ninput x: f32[N, K]\n";
    struct { const char *body; bool split; } cases[] = {
        {"a = slice(x, start=[0, 0], stop=[N, 128])\nb = slice(x, start=[0, 128], stop=[N, 256])\n", true},
        {"a = slice(x, start=[0, 0], stop=[N, 128])\nb = slice(x, start=[0, 64], stop=[N, 192])\n", false},
        {"a = slice(x, start=[0, 0], stop=[N, 128])\nb = exp(a)\n", false},
        {"a0 = slice(x, start=[0, 0], stop=[N, 128])\na = exp(a0)\nb = mul(a0, 2.0)\n", false},
        {"a = slice(x, start=[0, 0], stop=[N, 128])\nx1 = add(x, 1.0)\nb = slice(x1, start=[0, 128], stop=[N, 256])\n", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "%s%soutput a, b\n", head, cases[i].body);
        char *src = text_kernel_source(text);
        if (src) {
            bool split = strstr(src, "// domain 1: [65536, 128]") != NULL;
            CHECK(split == cases[i].split);
            if (split != cases[i].split) fprintf(stderr, "output domains, case %zu: split %d, want %d\n", i, split, cases[i].split);
        }
        free(src);
    }
}

/* What the code generator is expected to emit for the seed workloads: the
 * instruction-count choices docs/perf.md (v5, v6, v7) measured on the H200. */
static void check_codegen_choices(const char *suites)
{
    /* cross entropy fwd+bwd, bf16: exp(a - b) as one FMA + ex2; the class ==
     * target test in 32 bits, on the target's distance to the vector
     * (VECTOR_MISS); the gradient stored two lanes per conversion, from the
     * unrounded value (no fu_to_bf16 of a rounded lane) */
    char *ce = one_kernel_source(suites, "cross_entropy/cross_entropy_fwdbwd.fusion", NULL, 0, FU_BF16);
    if (ce) {
        CHECK_CONTAINS(ce, "fu_exp_sub(");
        CHECK(count_of(ce, "fu_exp(") == 0);
        CHECK_CONTAINS(ce, "const unsigned fu_d");
        CHECK_CONTAINS(ce, " == 7u);");
        CHECK(count_of(ce, "fu_pack_bf16x2(") == 16); /* in each of VECTOR_MISS's two branches, in each of
                                                          * ROW_UNSWITCH's two copies of the loop */
        CHECK(count_of(ce, "fu_to_bf16(") == 1); /* the scalar loss only */
    }
    free(ce);
    /* cross entropy forward, bf16: 128 bytes staged per thread, a whole batch
     * at a time (no transcendental before the exp: STAGE_HALVES leaves it);
     * the batch's max on packed pairs, then one rescale; pairs converted a
     * word at a time; no position guards where the batches cover the row
     * exactly (v7) */
    char *fwd = one_kernel_source(suites, "cross_entropy/cross_entropy_fwd.fusion", NULL, 0, FU_BF16);
    if (fwd) {
        CHECK_CONTAINS(fwd, "fu_bf16 fu_s0[64];");
        CHECK(count_of(fwd, "fu_max_bf16x2(") == 4);
        CHECK(count_of(fwd, "fu_pair_hi(") == 4);
        CHECK(count_of(fwd, "// the next batch") == 0);
        CHECK(count_of(fwd, "if (kb < ") == 0);
        /* it only reads rows: strided by gridDim.x, no queue (v13: no gain there) */
        CHECK(count_of(fwd, "fu_take_row(") == 0);
        CHECK(count_of(fwd, "for (int row = blockIdx.x; row < 8192; row += gridDim.x) {") == 1);
    }
    free(fwd);
    /* the fused kernel keeps the row in shared memory between its passes, in
     * each thread's own slots: pass 1 stages 128 bytes and stores them there,
     * pass 2 is a rolled loop over 2 slots at a time (v9) */
    char *fb = one_kernel_source(suites, "cross_entropy/cross_entropy_fwdbwd.fusion", NULL, 0, FU_BF16);
    if (fb) {
        CHECK_CONTAINS(fb, "extern __shared__ __align__(16) unsigned char fu_rows[]; // 65536 bytes");
        CHECK(count_of(fb, "*(uint4 *)(fu_rows + 0 + ((int)it * 512 + threadIdx.x) * 16) = *(const uint4 *)(fu_s0 + b * 8);") == 1);
        /* (pass 2's loop twice: for a valid row and an ignored one, ROW_UNSWITCH) */
        CHECK(count_of(fb, "= *(const uint4 *)(fu_rows + 0 + ((int)it * 512 + threadIdx.x) * 16);") == 2);
        CHECK(count_of(fb, "for (int it0 = 0; it0 < 8; it0 += 2) {") == 2);
        CHECK(count_of(fb, "if (kb < ") == 0);
        CHECK(count_of(fb, "fu_max_bf16x2(") == 4);
        /* values of finished reductions once per row: the log-sum-exp before pass 2 (and
         * reused by the loss), the scalar dloss / count before pass 1, not per batch */
        CHECK_CONTAINS(fb, "// per-row values of the reductions so far, before pass 2");
        CHECK(count_of(fb, "fu_log(r1)") == 1);
        CHECK(count_of(fb, "fu_load(in2[0])") == 1);
        CHECK(count_of(fb, " / r3);") == 2); /* dloss / count per row, loss / count once */
        /* it reads and writes whole rows: rows in order from the queue (v13), the
         * loss's partials one per row, combined in row order by the last block */
        CHECK(count_of(fb, "fu_take_row(fu_count + 1, 8192u + gridDim.x)") == 2);
        CHECK(count_of(fb, "for (int row = blockIdx.x;") == 0);
        CHECK_CONTAINS(fb, "if (threadIdx.x == 0) fu_ws[(long long)row * 1 + 0] = (double)");
        CHECK_CONTAINS(fb, "for (unsigned b = threadIdx.x; b < 8192u; b += 512) { // the rows' partials");
    }
    free(fb);
    /* a computed source (x * 0.5) keeps the per-vector max: no second copy */
    char *prim = one_kernel_source(suites, "cross_entropy/cross_entropy_primitives.fusion", NULL, 0, FU_BF16);
    if (prim) {
        CHECK(count_of(prim, "fu_max_bf16x2(") == 0);
        CHECK(count_of(prim, "mb1") == 0);
    }
    free(prim);
    char *fwd32 = one_kernel_source(suites, "cross_entropy/cross_entropy_fwd.fusion", NULL, 0, FU_F32);
    if (fwd32) CHECK_CONTAINS(fwd32, "float fu_s0[32];");
    free(fwd32);
    /* a row longer than a block's shared memory (bf16, V = 128256: 256 KB) is split over a
     * cluster of 2 blocks, each keeping its half: read once, the row's max and sum combined
     * through distributed shared memory, no block leaving before the others read its slots */
    const char *wide[] = {"V=128256"};
    char *bwd = one_kernel_source(suites, "cross_entropy/cross_entropy_bwd.fusion", wide, 1, FU_BF16);
    if (bwd) {
        CHECK_CONTAINS(bwd, "__cluster_dims__(2, 1, 1)");
        CHECK_CONTAINS(bwd, "fu_kbase = (int)fu_rank * 64128");
        CHECK_CONTAINS(bwd, "for (int row = blockIdx.x / 2; row < 8192; row += gridDim.x / 2, fu_par ^= 1u)");
        CHECK(count_of(bwd, "fu_lse_cluster<2, true>(r0, r1, ") == 1); /* warp 0 releases, the others relaxed */
        /* pass 1's one batch, loaded twice in the text: the block's first row before the loop,
         * each next row during the row before (an H200's bytes a clock an SM, the default
         * options: ROW_PREFETCH_CLUSTER_*) */
        CHECK(count_of(bwd, "__ldg((const uint4 *)(in0 + ") == 2);
        CHECK_CONTAINS(bwd, "// the block's next row: its first batch in flight");
        CHECK(count_of(bwd, "fu_cluster_sync();") == 1);
        CHECK(count_of(bwd, "fu_take_row(") == 0);
    }
    free(bwd);
    /* the loss's picked logit (op 12's gather) is needed only at the row's end: in a cluster's
     * row it is loaded after pass 1's reductions, whose cluster barrier covers its trip
     * (HOIST_PASS_AHEAD); in one block's row when the row starts (a block barrier does not:
     * bf16 8192x50304 ran 3% slower, docs/perf.md v41) */
    char *fused_cl = one_kernel_source(suites, "cross_entropy/cross_entropy_fwdbwd.fusion", wide, 1, FU_BF16);
    char *fused_one = one_kernel_source(suites, "cross_entropy/cross_entropy_fwdbwd.fusion", NULL, 0, FU_BF16);
    if (fused_cl && fused_one) {
        const char *picked = ", 12, (long long)o0)";
        const char *cl_pick = strstr(fused_cl, picked), *cl_lse = strstr(fused_cl, "fu_lse_cluster<2, true>(");
        const char *cl_pass2 = strstr(fused_cl, "// pass 2 over the row");
        CHECK(cl_pick && cl_lse && cl_pass2 && cl_lse < cl_pick && cl_pick < cl_pass2);
        const char *one_pick = strstr(fused_one, picked), *one_pass1 = strstr(fused_one, "// pass 1 over the row");
        CHECK(one_pick && one_pass1 && one_pick < one_pass1);
    }
    free(fused_cl);
    free(fused_one);
    /* qkv split, bf16: loaded elements are stored as they are */
    char *qkv = one_kernel_source(suites, "qkv_split/qkv_split.fusion", NULL, 0, FU_BF16);
    if (qkv) {
        CHECK(count_of(qkv, "fu_pack_bf16x2(") == 0);
        CHECK(count_of(qkv, "fu_to_bf16(") == 0);
        CHECK_CONTAINS(qkv, "o0_0[7] = x");
    }
    free(qkv);
    /* embedding backward, bf16 (rows of 96 vectors): 10 rows side by side (1024 threads at most) */
    char *emb = one_kernel_source(suites, "embedding/embedding_bwd.fusion", NULL, 0, FU_BF16);
    if (emb) {
        CHECK_CONTAINS(emb, "fu_rl = threadIdx.x % 96");
        /* the 10 groups split the sorted list at row boundaries; 4 source loads in flight */
        CHECK_CONTAINS(emb, "const int ca = fu_r0 * nlist / 10, cb = (fu_r0 + 1) * nlist / 10;");
        CHECK_CONTAINS(emb, "fu_sorted[min(e0 + 3, eb - 1)]");
        CHECK(count_of(emb, "fu_sorted[min(e0 + 4,") == 0);
        /* the batch's slots added by one rolled loop: one slot's code */
        CHECK_CONTAINS(emb, "for (int u = 0; u < 4; u++) {");
        CHECK(count_of(emb, "if (e0 + u < eb) {") == 1);
        CHECK(count_of(emb, "if (e0 + 1 < eb) {") == 0);
        /* the rows no position lands in: by the warps after warp 0 while it sorts, one
         * vector each in turn over the block's rows */
        CHECK_CONTAINS(emb, "} else if (first) {");
        CHECK_CONTAINS(emb, "for (int k = fu_early * 96 + threadIdx.x - 32; k < (int)nrows * 96; k += 928) {");
        /* past the first rows, stored during the scan's first pass by the warps with a chunk,
         * after its loads: 128 KiB of rows of 1536 bytes (the base is zero, the scan one trip) */
        CHECK_CONTAINS(emb, "const int fu_early = min(nrows, 85);");
        CHECK_CONTAINS(emb, "if (pass == 0 && warp < 29) {"); /* warp 29 has no chunk: 8192 ids, 288 a warp */
        CHECK_CONTAINS(emb, "for (int k = threadIdx.x; k < (int)fu_early * 96; k += 928) {");
        CHECK(strstr(emb, "if (pass == 0 && warp") > strstr(emb, "jv[8] = v"));
        CHECK(strstr(emb, "if (pass == 0 && warp") < strstr(emb, "__ballot_sync(0xffffffffu, kept)"));
        CHECK(count_of(emb, "walk_first") == 0);
        CHECK_CONTAINS(emb, "if (fu_hit[r >> 5] >> (r & 31) & 1u) continue;");
        CHECK_CONTAINS(emb, "__shared__ int fu_pos[3072];");
        /* the id scan: each of the 30 warps its chunk (288 ids: 9 loads per lane, one trip),
         * into its 102 slots of the staging list; the chunk loop has the same trips in every
         * lane (its ballots take the whole warp) */
        CHECK_CONTAINS(emb, "int *const fu_stage = fu_sorted + warp * 102;");
        CHECK_CONTAINS(emb, "for (long long p1 = w0; p1 < w1; p1 += 288) {");
        CHECK_CONTAINS(emb, "long long jv[9];");
        CHECK_CONTAINS(emb, "const unsigned m = __ballot_sync(0xffffffffu, kept);");
        CHECK(count_of(emb, "flush();") == 1); /* one call site: compiled once */
        /* the list counted by the whole block, sorted by warp 0 in index order */
        CHECK(count_of(emb, "atomicAdd(&fu_cnt[r], 1)") == 1);
        CHECK_CONTAINS(emb, "if (threadIdx.x < 32) { // warp 0 sorts the list by row");
        CHECK(count_of(emb, "__match_any_sync(") == 1);
        CHECK(count_of(emb, "if (threadIdx.x == 0) { // stable counting sort") == 0);
    }
    free(emb);
    /* pointwise items (v7): one vector per thread for a big copy, 4 where a
     * gather's row load waits on its index, one wave for small grids */
    const char *qkv_big[] = {"B=32", "T=2048", "C=2048", "H=32"};
    char *qb = one_kernel_source(suites, "qkv_split/qkv_split.fusion", qkv_big, 4, FU_BF16);
    if (qb) CHECK_CONTAINS(qb, "1 item of 8 lanes per thread");
    free(qb);
    const char *emb_big[] = {"V=128256", "D=4096", "T=65536"};
    char *eb = one_kernel_source(suites, "embedding/embedding_fwd.fusion", emb_big, 3, FU_BF16);
    if (eb) CHECK_CONTAINS(eb, "4 items of 8 lanes per thread");
    free(eb);
    /* the big backward's scan takes several trips per warp: no rows stored during it (their
     * stores would queue ahead of the later trips' loads) */
    char *ebb = one_kernel_source(suites, "embedding/embedding_bwd.fusion", emb_big, 3, FU_BF16);
    if (ebb) {
        CHECK_CONTAINS(ebb, "const int fu_early = min(nrows, 0);");
        CHECK(count_of(ebb, "if (pass == 0") == 0);
    }
    free(ebb);
    char *es = one_kernel_source(suites, "embedding/embedding_fwd.fusion", NULL, 0, FU_BF16);
    if (es) CHECK_CONTAINS(es, "3 items of 8 lanes per thread");
    free(es);
    printf("%-48s %s\n", "codegen choices", check_failures ? "FAIL" : "OK");
}

/* A chain that reuses each tensor twice (x1 = add(x0, x0), x2 = add(x1, x1),
 * ...) reaches x0 along 2^depth paths: the reduction scheduler's walks of the
 * graph (reads_at_row, hoist_row_values) must not follow every path, or
 * planning takes exponential time (12 s at depth 28; depth 40 would take
 * hours). Plans to one kernel at once. */
static fu_fusion *reuse_chain(fu_dtype dt, int depth)
{
    fu_fusion *f = fu_fusion_new("reuse_chain");
    int64_t xs[2] = {64, 256};
    int ax1[1] = {1};
    fu_tensor a = fu_input(f, "a", dt, 2, xs), b = fu_input(f, "b", dt, 2, xs);
    fu_tensor x = fu_binary(f, FU_OP_MUL, a, tc_scalar(f, 0.5, dt, "half"), "x0");
    for (int i = 1; i <= depth; i++) {
        char name[16];
        snprintf(name, sizeof name, "x%d", i);
        x = fu_binary(f, FU_OP_ADD, x, x, name);
    }
    fu_output(f, fu_reduce(f, FU_OP_SUM, x, 1, ax1, false, "s1"));
    fu_output(f, fu_reduce(f, FU_OP_SUM, b, 1, ax1, false, "s2"));
    return f;
}

/* An output that is an input's bytes (returned as it is, permuted by the identity,
 * reshaped) is a view of that input for fu_exec_output_view; an output a kernel
 * writes is not, and neither is an input's copy under another order. */
static void check_output_views(fu_runtime *rt)
{
    static const char *TEXT = "fusion views\n"
                              "input x: f32[4, 6]\n"
                              "input y: f32[6]\n"
                              "flat = reshape(x, shape=[24])\n"
                              "same = permute(x, dims=[0, 1])\n"
                              "moved = permute(x, dims=[1, 0])\n"
                              "z = neg(y)\n"
                              "output flat\noutput z\noutput y\noutput same\noutput moved\n";
    int before = check_failures;
    fu_error err = {0};
    fu_program *prog = NULL;
    fu_fusion *f = NULL;
    fu_plan *p = NULL;
    fu_executable *x = NULL;
    fu_plan_options po;
    fu_plan_options_default(&po);
    CHECK(fu_program_parse(TEXT, "views.fusion", &prog, &err) == FU_OK);
    if (prog) CHECK(fu_program_build(prog, NULL, 0, &f, &err) == FU_OK);
    if (f) CHECK(fu_plan_build(f, &po, &p, &err) == FU_OK);
    if (p) CHECK(fu_exec_prepare(rt, p, &x, &err) == FU_OK);
    if (err.message[0]) fprintf(stderr, "views: %s\n", err.message);
    if (x) {
        const int want[5] = {0, -1, 1, 0, -1};
        for (int i = 0; i < 5; i++) {
            CHECK(fu_exec_output_view(x, i) == want[i]);
            if (fu_exec_output_view(x, i) != want[i])
                fprintf(stderr, "views: output %d is a view of %d, want %d\n", i, fu_exec_output_view(x, i), want[i]);
        }
        CHECK(fu_exec_output_view(x, 5) == -1 && fu_exec_output_view(x, -1) == -1);
    }
    printf("%-48s output views                 %s\n", "views", check_failures == before ? "OK" : "FAIL");
    fu_exec_free(x);
    fu_plan_free(p);
    fu_fusion_free(f);
    fu_program_free(prog);
}

int main(void)
{
    const char *suites = getenv("FUSER_SUITES_DIR");
    if (!suites) {
        fprintf(stderr, "test_plan_compile: FUSER_SUITES_DIR must be set\n");
        return 1;
    }
    char cache[512];
    if (!tu_make_temp_dir(cache, sizeof cache, "test_plan_compile")) return 1;
    fu_runtime_options ro = {0};
    ro.compile_only = true;
    ro.cache_dir = cache;
    ro.arch = "sm_90";
    fu_runtime *rt = NULL;
    fu_error err = {0};
    fu_status s = fu_runtime_open(&ro, &rt, &err);
    CHECK(s == FU_OK);
    if (s != FU_OK) {
        fprintf(stderr, "fu_runtime_open: %s\n", err.message);
        return check_finish("test_plan_compile");
    }
    printf("%s\n", fu_runtime_describe(rt));
    CHECK(fu_runtime_has_nvrtc(rt));
    CHECK(strcmp(fu_runtime_arch(rt), "sm_90") == 0);

    tc_list l = {0};
    /* (a) the seed workloads: defaults, a tiny set and an odd set of sizes */
    const char *small[] = {"N=4", "V=7", "D=8", "T=5", "B=1", "C=64", "H=2"};
    const char *odd[] = {"N=37", "V=1000", "D=100", "T=100", "B=2", "C=384", "H=3"};
    const fu_dtype dts[2] = {FU_F32, FU_BF16};
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < TC_NSUITES; i++) {
            tc_add_suite(&l, suites, tc_suite_files[i], "default", NULL, 0, dts[d], NULL);
            tc_add_suite(&l, suites, tc_suite_files[i], "small", small, 7, dts[d], NULL);
            tc_add_suite(&l, suites, tc_suite_files[i], "odd", odd, 7, dts[d], NULL);
        }
    /* f16 and f64 at a small odd size: the other float storage types plan to
     * one kernel and compile too (f64 rows use two passes, not the online state) */
    const fu_dtype other[2] = {FU_F16, FU_F64};
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < TC_NSUITES; i++) tc_add_suite(&l, suites, tc_suite_files[i], "odd", odd, 7, other[d], NULL);
    /* embedding_bwd in atomic mode: one kernel after a memset of the output (bf16: adds
     * into an f32 copy, then a kernel that rounds once) */
    for (int d = 0; d < 2; d++) {
        tc_case *c =
            tc_add_suite(&l, suites, "embedding/embedding_bwd.fusion", "default_atomic", NULL, 0, dts[d], NULL);
        if (c) c->scatter = FU_SCATTER_ATOMIC, c->want_zero_before = true, c->want_kernels = dts[d] == FU_BF16 ? 2 : 1;
        c = tc_add_suite(&l, suites, "embedding/embedding_bwd.fusion", "odd_atomic", odd, 7, dts[d], NULL);
        if (c) c->scatter = FU_SCATTER_ATOMIC, c->want_zero_before = true, c->want_kernels = dts[d] == FU_BF16 ? 2 : 1;
    }
    /* (b) C-API variants and (d) multi-kernel fusions */
    tc_sizes z = {.ce_n = 1024, .ce_v = 32768, .emb_v = 50304, .emb_d = 768, .emb_t = 8192,
                  .qkv_b = 16, .qkv_t = 128, .qkv_c = 1024, .multi_n = 1024, .multi_v = 4096};
    for (int d = 0; d < 2; d++) tc_add_api_cases(&l, &z, dts[d]);
    /* (e) a depth-40 chain of reused tensors: one kernel, planned at once */
    tc_push(&l, reuse_chain(FU_F32, 40), "reuse_chain_40", 1);
    CHECK(l.errors == 0);

    for (int i = 0; i < l.n; i++) plan_and_compile(rt, &l.v[i]);
    check_codegen_choices(suites);
    check_shared_memory_limits(suites);
    check_shared_memory_rows();
    check_aligned_rows(rt, suites);
    check_output_domains(suites);
    check_output_views(rt);

    fu_runtime_stats st = stats_of(rt);
    printf("%d plans; nvrtc_calls=%lld cache_hits=%lld compile_ms=%.0f\n", l.n, (long long)st.nvrtc_calls,
           (long long)st.cache_hits, st.compile_ms);
    tc_list_free(&l);
    fu_runtime_close(rt);
    if (check_failures) /* keep <cache>/failed/ (sources and logs of failed compiles) */
        printf("cache directory kept: %s\n", cache);
    else
        tu_remove_tree(cache);
    return check_finish("test_plan_compile");
}
