/*
 * test_harness_unit.c -- the harness without a GPU: statistics and the stop
 * rule of the sampling loop, byte accounting (the formulas against hand
 * counts, the anchors' floors and the fusion files themselves), the JSON
 * writer (read back by a strict parser), sizes and dtypes, output
 * comparison and tolerances, fast random inputs, throttle reasons.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "json_read.h"
#include "suite.h"
#include "bench_shim.h"

/* ------------------------------------------------------------ statistics */

static void test_stats(void)
{
    double s4[] = {1, 2, 3, 4};
    CHECK_NEAR(hb_quantile_sorted(s4, 4, 0.5), 2.5, 1e-15);
    CHECK_NEAR(hb_quantile_sorted(s4, 4, 0.25), 1.75, 1e-15);
    CHECK_NEAR(hb_quantile_sorted(s4, 4, 0.75), 3.25, 1e-15);
    CHECK(hb_quantile_sorted(s4, 4, 0) == 1 && hb_quantile_sorted(s4, 4, 1) == 4);
    CHECK(isnan(hb_quantile_sorted(s4, 0, 0.5)));
    double one[] = {7};
    CHECK(hb_quantile_sorted(one, 1, 0.3) == 7);

    double odd[] = {5, -1, 3, 9, 0};
    CHECK(hb_median(odd, 5) == 3);
    double even[] = {8, 2, 6, 4};
    CHECK(hb_median(even, 4) == 5);
    CHECK(isnan(hb_median(even, 0)));
    CHECK(even[0] == 8 && even[3] == 4); /* not sorted in place */

    hb_summary s;
    double x[] = {10, 14, 12, 11, 13};
    CHECK(hb_summarize(x, 5, &s));
    CHECK(s.n == 5 && s.min == 10 && s.max == 14);
    CHECK_NEAR(s.median, 12, 1e-15);
    CHECK_NEAR(s.p25, 11, 1e-15);
    CHECK_NEAR(s.p75, 13, 1e-15);
    CHECK_NEAR(s.mean, 12, 1e-15);
    CHECK_NEAR(s.stddev, sqrt(2.5), 1e-15);
    CHECK_NEAR(s.spread, 2.0 / 12.0, 1e-15);
    CHECK(hb_summarize(one, 1, &s) && s.spread == 0 && s.stddev == 0 && s.median == 7);
    double same[] = {3, 3, 3};
    CHECK(hb_summarize(same, 3, &s) && s.spread == 0);
    double zeros[] = {0, 0, 1, 0, 5};
    CHECK(hb_summarize(zeros, 5, &s) && s.median == 0 && isinf(s.spread));
    CHECK(!hb_summarize(x, 0, &s) && isnan(s.median));
}

static void test_stop_rule(void)
{
    hb_stop_rule r = {.min_samples = 10, .max_samples = 50, .max_spread = 0.02, .time_limit_s = 1.0};
    double flat[60], noisy[60];
    for (int i = 0; i < 60; i++) {
        flat[i] = 100.0 + (i % 3) * 0.1;     /* spread ~0.1% */
        noisy[i] = 100.0 + (i % 4) * 10.0;   /* spread ~10% */
    }
    CHECK(hb_should_stop(&r, flat, 9, 0.1) == HB_CONTINUE);      /* too few, though flat */
    CHECK(hb_should_stop(&r, flat, 10, 0.1) == HB_STOP_CONVERGED);
    CHECK(hb_should_stop(&r, noisy, 30, 0.5) == HB_CONTINUE);    /* not converged, time left */
    CHECK(hb_should_stop(&r, noisy, 30, 1.0) == HB_STOP_TIME_LIMIT);
    CHECK(hb_should_stop(&r, noisy, 50, 0.1) == HB_STOP_MAX_SAMPLES);
    CHECK(hb_should_stop(&r, noisy, 2, 1.5) == HB_CONTINUE);     /* past the limit: a few samples first */
    CHECK(hb_should_stop(&r, noisy, 5, 1.5) == HB_STOP_TIME_LIMIT);
    CHECK(hb_should_stop(&r, noisy, 1, 2.0) == HB_STOP_TIME_LIMIT); /* twice the limit: whatever there is */
    CHECK(strcmp(hb_stop_name(HB_STOP_CONVERGED), "converged") == 0);

    hb_timing_options o;
    hb_timing_options_default(&o);
    CHECK(o.mode == HB_MODE_COLD && o.stop.min_samples == 10 && o.stop.max_spread == 0.02);
    hb_mode m;
    CHECK(hb_mode_from_name("hot", &m) && m == HB_MODE_HOT);
    CHECK(hb_mode_from_name("cold", &m) && m == HB_MODE_COLD);
    CHECK(!hb_mode_from_name("warm", &m));
    CHECK(strcmp(hb_mode_name(HB_MODE_HOT), "hot") == 0);
}

/* ------------------------------------------------------------ bytes */

static hb_suite_set g_suites; /* the source tree's suite folders */

static const hb_suite *suite_named(const char *name)
{
    const hb_suite *s = hb_suite_set_find(&g_suites, name);
    CHECK(s != NULL);
    return s;
}

static const hb_case *find_case(const hb_suite *s, const char *name)
{
    for (int i = 0; s && i < s->ncases; i++)
        if (strcmp(s->cases[i].name, name) == 0) return &s->cases[i];
    return NULL;
}

/* fu_fusion_min_bytes of a case at a size, elem 4 (f32) or 2 (bf16). */
static int64_t bytes_of(const hb_suite *s, const char *cname, int64_t a, int64_t b, int64_t c, int64_t elem)
{
    hb_size sz = {s ? s->ndims : 0, {a, b, c}};
    const hb_case *k = find_case(s, cname);
    CHECK(k != NULL);
    if (!k) return -1;
    fu_fusion *f = NULL;
    fu_error err;
    if (hb_build_case(s, k, &sz, elem == 2 ? FU_BF16 : FU_F32, &f, &err)) {
        fprintf(stderr, "%s/%s: %s\n", s->name, cname, err.message);
        CHECK(!"case builds");
        return -1;
    }
    int64_t n = fu_fusion_min_bytes(f);
    fu_fusion_free(f);
    return n;
}

/* The formulas the seed suites' C files carried (hb_case.bytes before the
 * suites became folders): N*V*elem + 8N, 2*N*V*elem + 8N, 2*T*D*elem + 8T,
 * V*D*elem + T*D*elem + 8T, 2*B*T*3C*elem. */
static int64_t seed_formula(const char *suite, const char *cs, const hb_size *z, int64_t e)
{
    const int64_t *d = z->d;
    if (strcmp(suite, "cross_entropy") == 0) return (strcmp(cs, "fwd") == 0 ? 1 : 2) * d[0] * d[1] * e + 8 * d[0];
    if (strcmp(suite, "embedding") == 0)
        return strcmp(cs, "fwd") == 0 ? 2 * d[2] * d[1] * e + 8 * d[2] : d[0] * d[1] * e + d[2] * d[1] * e + 8 * d[2];
    return 2 * d[0] * d[1] * d[2] * e; /* qkv_split */
}

static int64_t text_bytes(const char *text, char *formula, size_t cap)
{
    fu_program *p = NULL;
    fu_fusion *f = NULL;
    fu_error err;
    int64_t n = -1;
    if (fu_program_parse(text, "<test>", &p, &err) || fu_program_build(p, NULL, 0, &f, &err)) {
        fprintf(stderr, "%s\n", err.message);
        CHECK(!"test fusion builds");
    } else {
        n = fu_fusion_min_bytes(f);
        CHECK(fu_program_bytes_formula(p, NULL, 0, formula, cap, &err) == FU_OK);
    }
    fu_fusion_free(f);
    fu_program_free(p);
    return n;
}

static void test_bytes(void)
{
    const hb_suite *ce = suite_named("cross_entropy"), *emb = suite_named("embedding"), *qkv = suite_named("qkv_split");
    if (!ce || !emb || !qkv) return;
    /* hand counts */
    CHECK(bytes_of(ce, "fwd", 8192, 32768, 0, 4) == 8192ll * 32768 * 4 + 8 * 8192);
    CHECK(bytes_of(ce, "fwd", 8192, 32768, 0, 2) == 8192ll * 32768 * 2 + 8 * 8192);
    CHECK(bytes_of(ce, "bwd", 8192, 32768, 0, 4) == 2 * 8192ll * 32768 * 4 + 8 * 8192);
    CHECK(bytes_of(ce, "fwdbwd", 8192, 128256, 0, 2) == 2 * 8192ll * 128256 * 2 + 8 * 8192);
    CHECK(bytes_of(emb, "fwd", 50304, 768, 8192, 4) == 2 * 8192ll * 768 * 4 + 8 * 8192);
    CHECK(bytes_of(emb, "bwd_atomic", 50304, 768, 8192, 4) == 50304ll * 768 * 4 + 8192ll * 768 * 4 + 8 * 8192);
    CHECK(bytes_of(emb, "bwd_deterministic", 128256, 4096, 65536, 2) ==
          128256ll * 4096 * 2 + 65536ll * 4096 * 2 + 8 * 65536);
    CHECK(bytes_of(qkv, "fwd", 16, 128, 3072, 4) == 2 * 16ll * 128 * 3072 * 4);
    CHECK(bytes_of(qkv, "fwd", 32, 2048, 6144, 2) == 2 * 32ll * 2048 * 6144 * 2);

    /* the anchors' floors at 4233 GB/s (../shared/anchors/README.md), in microseconds */
    struct {
        const hb_suite *s;
        const char *c;
        int64_t a, b, d, elem;
        double floor_us;
    } anchors[] = {
        {ce, "fwd", 8192, 32768, 0, 4, 254},      {ce, "fwd", 8192, 32768, 0, 2, 127},
        {ce, "fwd", 8192, 128256, 0, 4, 993},     {ce, "fwd", 8192, 128256, 0, 2, 497},
        {emb, "fwd", 50304, 768, 8192, 4, 11.9},  {emb, "bwd_atomic", 50304, 768, 8192, 4, 42.6},
        {emb, "fwd", 128256, 4096, 65536, 2, 254}, {emb, "bwd_deterministic", 128256, 4096, 65536, 2, 375},
        {qkv, "fwd", 16, 128, 3072, 4, 11.9},     {qkv, "fwd", 16, 128, 3072, 2, 5.9},
        {qkv, "fwd", 16, 1024, 2304, 2, 35.7},    {qkv, "fwd", 32, 2048, 6144, 2, 381},
    };
    for (size_t i = 0; i < sizeof anchors / sizeof anchors[0]; i++) {
        double us = (double)bytes_of(anchors[i].s, anchors[i].c, anchors[i].a, anchors[i].b, anchors[i].d,
                                     anchors[i].elem) / 4233e9 * 1e6;
        if (fabs(us - anchors[i].floor_us) > 0.01 * anchors[i].floor_us + 0.06)
            fprintf(stderr, "anchor %s/%s: %.2f us, the anchors say %.1f\n", anchors[i].s->name, anchors[i].c, us,
                    anchors[i].floor_us);
        CHECK(fabs(us - anchors[i].floor_us) <= 0.01 * anchors[i].floor_us + 0.06);
    }

    /* every seed case at every default and sweep size, both dtypes: the IR's
     * count equals the formula the suite's C file had, and the printed
     * formula is the expected one */
    const char *seeds[] = {"cross_entropy", "embedding", "qkv_split"};
    struct {
        const char *suite, *cs, *formula;
    } printed[] = {
        {"cross_entropy", "fwd", "N*V*elem + 8*N"},          {"cross_entropy", "bwd", "2*N*V*elem + 8*N"},
        {"cross_entropy", "fwdbwd", "2*N*V*elem + 8*N"},     {"embedding", "fwd", "2*D*T*elem + 8*T"},
        {"embedding", "bwd_atomic", "D*T*elem + V*D*elem + 8*T"},
        {"embedding", "bwd_deterministic", "D*T*elem + V*D*elem + 8*T"},
        {"qkv_split", "fwd", "6*B*T*C*elem"},
    };
    int compared = 0;
    for (int si = 0; si < 3; si++) {
        const hb_suite *s = suite_named(seeds[si]);
        const char *lists[2] = {s->default_sizes, s->sweep_sizes};
        for (int l = 0; l < 2; l++) {
            hb_size *sz;
            int nsz;
            char why[256];
            bool parsed = hb_parse_sizes(lists[l], s->ndims, &sz, &nsz, why, sizeof why);
            CHECK(parsed);
            for (int k = 0; parsed && k < nsz; k++)
                for (int ci = 0; ci < s->ncases; ci++)
                    for (int d = 0; d < 2; d++) {
                        const hb_case *c = &s->cases[ci];
                        fu_dtype dt = d ? FU_BF16 : FU_F32;
                        fu_fusion *f = NULL;
                        fu_error err;
                        if (hb_build_case(s, c, &sz[k], dt, &f, &err)) {
                            fprintf(stderr, "%s/%s: %s\n", s->name, c->name, err.message);
                            CHECK(!"fusion file builds");
                            continue;
                        }
                        int64_t want = seed_formula(s->name, c->name, &sz[k], (int64_t)fu_dtype_size(dt));
                        int64_t got = fu_fusion_min_bytes(f);
                        if (got != want)
                            fprintf(stderr, "%s/%s %s: the IR counts %lld bytes, the formula %lld\n", s->name, c->name,
                                    fu_dtype_name(dt), (long long)got, (long long)want);
                        CHECK(got == want);
                        hb_params prm;
                        char formula[96];
                        CHECK(hb_suite_bind(s, c, &sz[k], dt, &prm, why, sizeof why));
                        CHECK(fu_program_bytes_formula(c->prog, prm.v, prm.n, formula, sizeof formula, &err) == FU_OK);
                        for (size_t q = 0; q < sizeof printed / sizeof printed[0]; q++)
                            if (strcmp(printed[q].suite, s->name) == 0 && strcmp(printed[q].cs, c->name) == 0) {
                                if (strcmp(formula, printed[q].formula))
                                    fprintf(stderr, "%s/%s: formula '%s', expected '%s'\n", s->name, c->name, formula,
                                            printed[q].formula);
                                CHECK(strcmp(formula, printed[q].formula) == 0);
                            }
                        compared++;
                        fu_fusion_free(f);
                    }
            if (parsed) free(sz);
        }
    }
    CHECK(compared == 2 * (1 + 10) * 3 + 2 * (2 + 5) * 3 + 2 * (3 + 3) * 1); /* sizes x cases x dtypes */

    /* hand counts of one op each */
    char formula[96];
    /* a gather: 100 rows of 8 f32 selected from a 1000-row table */
    CHECK(text_bytes("fusion g\nparam T = 100\ninput w: f32[1000, 8]\ninput ids: i64[T]\n"
                     "o = index_select(w, ids, axis=0)\noutput o\n", formula, sizeof formula) ==
          100 * 8 * 4 + 100 * 8 + 100 * 8 * 4);
    CHECK(strcmp(formula, "72*T") == 0);
    /* a gather of more rows than the table has: the table once */
    CHECK(text_bytes("fusion g\ninput w: f32[10, 8]\ninput ids: i64[100]\n"
                     "o = index_select(w, ids, axis=0)\noutput o\n", formula, sizeof formula) ==
          10 * 8 * 4 + 100 * 8 + 100 * 8 * 4);
    /* a scatter: base and output whole, the index and the source once */
    CHECK(text_bytes("fusion s\ninput base: f32[50, 4]\ninput idx: i64[30]\ninput src: f32[30, 4]\n"
                     "o = index_add(base, idx, src, axis=0)\noutput o\n", formula, sizeof formula) ==
          50 * 4 * 4 + 30 * 8 + 30 * 4 * 4 + 50 * 4 * 4);
    /* a slice: the part it keeps */
    CHECK(text_bytes("fusion sl\nparam N = 64\ninput x: f32[N, 16]\n"
                     "y = slice(x, start=[0, 4], stop=[N, 12])\noutput y\n", formula, sizeof formula) ==
          64 * 8 * 4 * 2);
    CHECK(strcmp(formula, "64*N") == 0);
    /* a broadcast: the input once, the output whole */
    CHECK(text_bytes("fusion b\nparam N = 32\ndtype DT = bf16\ninput x: DT[1, 16]\n"
                     "y = broadcast(x, shape=[N, 16])\noutput y\n", formula, sizeof formula) ==
          16 * 2 + 32 * 16 * 2);
    CHECK(strcmp(formula, "16*N*elem + 16*elem") == 0);
}

/* ------------------------------------------------------------ JSON */

static char *json_of(void (*write)(hb_json *), bool *ok)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    hb_json j;
    hb_json_init(&j, f, 2);
    write(&j);
    *ok = hb_json_finish(&j);
    fclose(f);
    return buf;
}

static void write_values(hb_json *j)
{
    hb_json_object_begin(j);
    hb_json_key(j, "s");
    hb_json_string(j, "quote\" backslash\\ nl\n tab\t ctl\x01 utf8 \xc3\xa9");
    hb_json_key(j, "tenth");
    hb_json_number(j, 0.1);
    hb_json_key(j, "big");
    hb_json_number(j, 1e300);
    hb_json_key(j, "neg");
    hb_json_number(j, -3);
    hb_json_key(j, "nan");
    hb_json_number(j, NAN);
    hb_json_key(j, "inf");
    hb_json_number(j, INFINITY);
    hb_json_key(j, "i64");
    hb_json_int(j, INT64_MAX);
    hb_json_key(j, "t");
    hb_json_bool(j, true);
    hb_json_key(j, "null");
    hb_json_string(j, NULL);
    hb_json_key(j, "empty_obj");
    hb_json_object_begin(j);
    hb_json_object_end(j);
    hb_json_key(j, "arr");
    hb_json_array_begin(j);
    hb_json_int(j, 1);
    hb_json_array_begin(j);
    hb_json_array_end(j);
    hb_json_object_begin(j);
    hb_json_key(j, "k");
    hb_json_number(j, 2.5);
    hb_json_object_end(j);
    hb_json_array_end(j);
    hb_json_object_end(j);
}

static void write_value_without_key(hb_json *j)
{
    hb_json_object_begin(j);
    hb_json_int(j, 1);
    hb_json_object_end(j);
}

static void write_unbalanced(hb_json *j)
{
    hb_json_array_begin(j);
    hb_json_int(j, 1);
}

static void write_key_in_array(hb_json *j)
{
    hb_json_array_begin(j);
    hb_json_key(j, "k");
    hb_json_array_end(j);
}

static void write_wrong_close(hb_json *j)
{
    hb_json_array_begin(j);
    hb_json_object_end(j);
}

static void test_json_writer(void)
{
    bool ok;
    char err[256];
    char *text = json_of(write_values, &ok);
    CHECK(ok);
    jv *v = jv_parse(text, err, sizeof err);
    if (!v) fprintf(stderr, "parse: %s\n%s\n", err, text);
    CHECK(v != NULL);
    if (v) {
        CHECK(strcmp(jv_str(v, "s"), "quote\" backslash\\ nl\n tab\t ctl\x01 utf8 \xc3\xa9") == 0);
        CHECK(jv_num(v, "tenth") == 0.1); /* reads back exactly */
        CHECK(jv_num(v, "big") == 1e300);
        CHECK(jv_num(v, "neg") == -3);
        CHECK(jv_get(v, "nan") && jv_get(v, "nan")->kind == JV_NULL);
        CHECK(jv_get(v, "inf") && jv_get(v, "inf")->kind == JV_NULL);
        CHECK(jv_get(v, "null") && jv_get(v, "null")->kind == JV_NULL);
        CHECK(jv_get(v, "t") && jv_get(v, "t")->kind == JV_BOOL && jv_get(v, "t")->b);
        CHECK(jv_get(v, "empty_obj") && jv_get(v, "empty_obj")->kind == JV_OBJ && jv_get(v, "empty_obj")->n == 0);
        const jv *arr = jv_get(v, "arr");
        CHECK(arr && arr->kind == JV_ARR && arr->n == 3);
        if (arr && arr->n == 3) {
            CHECK(arr->items[1].kind == JV_ARR && arr->items[1].n == 0);
            CHECK(jv_num(&arr->items[2], "k") == 2.5);
        }
    }
    CHECK_CONTAINS(text, "\"i64\": 9223372036854775807");
    jv_free(v);
    free(text);

    text = json_of(write_value_without_key, &ok);
    CHECK(!ok);
    free(text);
    text = json_of(write_unbalanced, &ok);
    CHECK(!ok);
    free(text);
    text = json_of(write_key_in_array, &ok);
    CHECK(!ok);
    free(text);
    text = json_of(write_wrong_close, &ok);
    CHECK(!ok);
    free(text);

    char key[64];
    hb_gpu_key("NVIDIA H200", key, sizeof key);
    CHECK(strcmp(key, "nvidia_h200") == 0);
    hb_gpu_key("  NVIDIA GeForce RTX 4090 (Laptop)", key, sizeof key);
    CHECK(strcmp(key, "nvidia_geforce_rtx_4090_laptop") == 0);
    hb_gpu_key("", key, sizeof key);
    CHECK(strcmp(key, "none") == 0);
}


/* The keys Google Benchmark documents for its JSON (docs/user_guide.md,
 * src/json_reporter.cc of v1.8: context; each benchmark entry, before the
 * user counters), with their types; and the rule that makes a failed or
 * skipped entry unreadable as a speed-up by tools/compare.py: it carries
 * error_occurred/skipped, and no timed entry shares its name (compare.py
 * pairs entries by name and would read its time of 0 as -100%). */
static void check_gb_schema(const jv *v)
{
    static const char *const ctx_strings[] = {"date", "host_name", "executable", "library_build_type",
                                              "library_version"};
    static const char *const ctx_numbers[] = {"num_cpus", "mhz_per_cpu", "json_schema_version"};
    const jv *ctx = jv_get(v, "context");
    for (size_t i = 0; i < sizeof ctx_strings / sizeof *ctx_strings; i++)
        CHECK(jv_str(ctx, ctx_strings[i]) != NULL);
    for (size_t i = 0; i < sizeof ctx_numbers / sizeof *ctx_numbers; i++)
        CHECK(jv_get(ctx, ctx_numbers[i]) && jv_get(ctx, ctx_numbers[i])->kind == JV_NUM);
    CHECK(jv_get(ctx, "caches") && jv_get(ctx, "caches")->kind == JV_ARR);
    const jv *b = jv_get(v, "benchmarks");
    CHECK(b && b->kind == JV_ARR);
    for (int i = 0; b && i < b->n; i++) {
        const jv *e = &b->items[i];
        static const char *const strings[] = {"name", "run_name", "run_type", "time_unit"};
        static const char *const numbers[] = {"family_index", "per_family_instance_index", "repetitions",
                                              "threads", "iterations", "real_time", "cpu_time"};
        for (size_t k = 0; k < sizeof strings / sizeof *strings; k++) CHECK(jv_str(e, strings[k]) != NULL);
        for (size_t k = 0; k < sizeof numbers / sizeof *numbers; k++)
            CHECK(jv_get(e, numbers[k]) && jv_get(e, numbers[k])->kind == JV_NUM);
        const char *rt = jv_str(e, "run_type"), *unit = jv_str(e, "time_unit");
        CHECK(rt && (strcmp(rt, "iteration") == 0 || strcmp(rt, "aggregate") == 0));
        CHECK(unit && (!strcmp(unit, "ns") || !strcmp(unit, "us") || !strcmp(unit, "ms") || !strcmp(unit, "s")));
        if (rt && strcmp(rt, "iteration") == 0) CHECK(jv_get(e, "repetition_index") != NULL);
        if (rt && strcmp(rt, "aggregate") == 0) CHECK(jv_str(e, "aggregate_name") != NULL);
        const jv *eo = jv_get(e, "error_occurred"), *sk = jv_get(e, "skipped");
        if (eo) CHECK(eo->kind == JV_BOOL && eo->b && jv_str(e, "error_message") != NULL);
        if (sk) CHECK(sk->kind == JV_BOOL && sk->b && jv_str(e, "skip_message") != NULL);
        int untimed = (eo && eo->b) || (sk && sk->b);
        /* A time of 0 only with a reason; a reason only without a time. */
        CHECK(untimed == (jv_num(e, "real_time") == 0));
        if (untimed)
            for (int k = 0; k < b->n; k++) {
                const jv *o = &b->items[k];
                if (k == i || jv_get(o, "error_occurred") || jv_get(o, "skipped")) continue;
                CHECK(strcmp(jv_str(o, "name"), jv_str(e, "name")) != 0);
            }
    }
}

static void test_run_file(void)
{
    hb_context c;
    memset(&c, 0, sizeof c);
    hb_gb_host_info(&c.host);
    CHECK(c.host.num_cpus > 0);
    CHECK(strlen(c.host.date) >= 19 && c.host.date[4] == '-' && c.host.date[10] == 'T');
    snprintf(c.gpu_name, sizeof c.gpu_name, "NVIDIA H200");
    hb_gpu_key(c.gpu_name, c.gpu_key, sizeof c.gpu_key);
    snprintf(c.driver_version, sizeof c.driver_version, "13.0");
    c.sm_count = 132;
    c.l2_bytes = 62914560;
    c.copy_bandwidth_gbps = 4233.5;
    c.sm_clock_mhz = 1980;
    c.mem_clock_mhz = NAN; /* unknown: left out */
    snprintf(c.git_commit, sizeof c.git_commit, "abc1234");
    snprintf(c.build_type, sizeof c.build_type, "Release");
    snprintf(c.timing_mode, sizeof c.timing_mode, "cold");

    hb_entry e[4];
    double samples[] = {280.5, 281.25, 279.75};
    hb_kernel_record k = {.name = "ce_fwd_k0", .grid = {8192, 1, 1}, .block = {512, 1, 1}, .registers = 40, .us = 270};
    for (int i = 0; i < 4; i++) {
        hb_entry_init(&e[i]);
        snprintf(e[i].name, sizeof e[i].name, "cross_entropy/fwd/fuser/f32/8192x32768");
        snprintf(e[i].run_name, sizeof e[i].run_name, "cross_entropy/fwd/fuser/f32/8192x32768");
        snprintf(e[i].suite, sizeof e[i].suite, "cross_entropy");
        snprintf(e[i].case_name, sizeof e[i].case_name, "fwd");
        snprintf(e[i].variant, sizeof e[i].variant, "fuser");
        snprintf(e[i].dtype, sizeof e[i].dtype, "f32");
        snprintf(e[i].size, sizeof e[i].size, "8192x32768");
        snprintf(e[i].bytes_formula, sizeof e[i].bytes_formula, "N*V*elem + 8N");
        e[i].repetitions = 2;
        hb_entry_counter(&e[i], "kernels", 1);
        hb_entry_counter(&e[i], "bytes", 1073807360.0);
        hb_entry_counter(&e[i], "GB/s", 3830.25);
        hb_entry_counter(&e[i], "kernel_time_us", NAN); /* unknown: left out */
    }
    e[0].real_time = 280.5;
    e[0].cpu_time = 1000;
    e[0].samples_us = samples;
    e[0].nsamples = 3;
    e[0].kernel_records = &k;
    e[0].nkernel_records = 1;
    e[0].speedup_vs_torch_compile = 1.25;
    e[1].repetition_index = 1;
    e[1].status = HB_STATUS_FAILED;
    e[1].real_time = 123; /* a failed entry is written with real_time 0 */
    e[1].samples_us = samples;
    e[1].nsamples = 3;
    snprintf(e[1].error, sizeof e[1].error, "output 'loss' differs");
    e[2].aggregate = true;
    snprintf(e[2].name, sizeof e[2].name, "cross_entropy/fwd/fuser/f32/8192x32768_median");
    snprintf(e[2].aggregate_name, sizeof e[2].aggregate_name, "median");
    e[2].real_time = 280.5;
    snprintf(e[3].run_name, sizeof e[3].run_name, "cross_entropy/fwd/fuser/bf16/8192x32768");
    snprintf(e[3].name, sizeof e[3].name, "cross_entropy/fwd/fuser/bf16/8192x32768");
    e[3].status = HB_STATUS_SKIPPED;
    e[3].real_time = 99;
    snprintf(e[3].error, sizeof e[3].error, "no GPU");
    CHECK(hb_entry_get_counter(&e[2], "kernels") == 1);
    CHECK(isnan(hb_entry_get_counter(&e[2], "launches")));

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(hb_json_write_run(f, &c, e, 4));
    fclose(f);
    char err[256];
    jv *v = jv_parse(buf, err, sizeof err);
    if (!v) fprintf(stderr, "parse: %s\n%s\n", err, buf);
    CHECK(v != NULL);
    if (!v) {
        free(buf);
        return;
    }
    const jv *ctx = jv_get(v, "context");
    CHECK(ctx && ctx->kind == JV_OBJ);
    CHECK(jv_str(ctx, "schema") && strcmp(jv_str(ctx, "schema"), "fusebench-run/1") == 0);
    CHECK(jv_str(ctx, "gpu_key") && strcmp(jv_str(ctx, "gpu_key"), "nvidia_h200") == 0);
    CHECK(jv_str(ctx, "driver_version") && strcmp(jv_str(ctx, "driver_version"), "13.0") == 0);
    CHECK(jv_num(ctx, "copy_bandwidth_gbps") == 4233.5);
    CHECK(jv_num(ctx, "sm_count") == 132 && jv_num(ctx, "l2_bytes") == 62914560);
    CHECK(jv_num(ctx, "sm_clock_mhz") == 1980 && jv_get(ctx, "mem_clock_mhz") == NULL);
    CHECK(jv_str(ctx, "git_commit") && strcmp(jv_str(ctx, "git_commit"), "abc1234") == 0);
    CHECK(jv_str(ctx, "timing_mode") && strcmp(jv_str(ctx, "timing_mode"), "cold") == 0);
    /* Google Benchmark's own context keys */
    CHECK(jv_str(ctx, "date") && jv_str(ctx, "host_name") && jv_str(ctx, "executable"));
    CHECK(jv_num(ctx, "num_cpus") >= 1 && jv_get(ctx, "mhz_per_cpu") && jv_str(ctx, "library_build_type"));
    CHECK(jv_get(ctx, "caches") && jv_get(ctx, "caches")->kind == JV_ARR);
    CHECK(jv_num(ctx, "json_schema_version") == 1);
    CHECK(jv_str(ctx, "library_version") && strncmp(jv_str(ctx, "library_version"), "fusebench ", 10) == 0);
    check_gb_schema(v);

    const jv *b = jv_get(v, "benchmarks");
    CHECK(b && b->kind == JV_ARR && b->n == 4);
    if (b && b->n == 4) {
        const jv *it = &b->items[0], *failed = &b->items[1], *agg = &b->items[2];
        CHECK(strcmp(jv_str(it, "name"), "cross_entropy/fwd/fuser/f32/8192x32768") == 0);
        CHECK(strcmp(jv_str(it, "run_name"), "cross_entropy/fwd/fuser/f32/8192x32768") == 0);
        CHECK(strcmp(jv_str(it, "run_type"), "iteration") == 0);
        CHECK(jv_num(it, "repetitions") == 2 && jv_num(it, "repetition_index") == 0 && jv_num(it, "threads") == 1);
        CHECK(jv_num(it, "iterations") == 3); /* the calls timed: its samples */
        /* cpu_time is not measured: it repeats real_time, and the row says so */
        CHECK(jv_num(it, "real_time") == 280.5 && jv_num(it, "cpu_time") == 280.5);
        CHECK(jv_get(it, "cpu_time_measured") && !jv_get(it, "cpu_time_measured")->b);
        CHECK(strcmp(jv_str(it, "real_time_statistic"), "median") == 0);
        CHECK(strcmp(jv_str(it, "time_unit"), "us") == 0);
        CHECK(strcmp(jv_str(it, "suite"), "cross_entropy") == 0 && strcmp(jv_str(it, "case"), "fwd") == 0);
        CHECK(strcmp(jv_str(it, "variant"), "fuser") == 0 && strcmp(jv_str(it, "dtype"), "f32") == 0);
        CHECK(strcmp(jv_str(it, "size"), "8192x32768") == 0);
        CHECK(jv_num(it, "kernels") == 1 && jv_num(it, "bytes") == 1073807360.0 && jv_num(it, "GB/s") == 3830.25);
        CHECK(jv_get(it, "kernel_time_us") == NULL);
        CHECK(strcmp(jv_str(it, "bytes_formula"), "N*V*elem + 8N") == 0);
        CHECK(strcmp(jv_str(it, "status"), "ok") == 0 && jv_get(it, "error") == NULL);
        const jv *sm = jv_get(it, "samples_us");
        CHECK(sm && sm->kind == JV_ARR && sm->n == 3 && sm->items[1].num == 281.25);
        const jv *kr = jv_get(it, "kernel_records");
        CHECK(kr && kr->kind == JV_ARR && kr->n == 1);
        if (kr && kr->n == 1) {
            CHECK(strcmp(jv_str(&kr->items[0], "name"), "ce_fwd_k0") == 0);
            CHECK(jv_num(&kr->items[0], "registers") == 40 && jv_num(&kr->items[0], "time_us") == 270);
            const jv *g = jv_get(&kr->items[0], "grid");
            CHECK(g && g->kind == JV_ARR && g->n == 3 && g->items[0].num == 8192);
        }
        CHECK(jv_num(it, "speedup_vs_torch_compile") == 1.25);

        CHECK(strcmp(jv_str(failed, "status"), "failed") == 0);
        CHECK(jv_num(failed, "real_time") == 0 && jv_get(failed, "samples_us") == NULL);
        CHECK(jv_str(failed, "error") && strcmp(jv_str(failed, "error"), "output 'loss' differs") == 0);
        CHECK(jv_get(failed, "speedup_vs_torch_compile") == NULL);
        CHECK(jv_get(failed, "error_occurred") && jv_get(failed, "error_occurred")->b); /* Google Benchmark's keys */
        CHECK(jv_str(failed, "error_message") && strcmp(jv_str(failed, "error_message"), "output 'loss' differs") == 0);
        CHECK(jv_get(it, "error_occurred") == NULL);
        /* compare.py pairs by name: a failed entry must not pair with a timed one */
        CHECK(strcmp(jv_str(failed, "name"), "cross_entropy/fwd/fuser/f32/8192x32768/failed") == 0);
        CHECK(strcmp(jv_str(failed, "run_name"), "cross_entropy/fwd/fuser/f32/8192x32768") == 0);
        CHECK(jv_num(failed, "iterations") == 0);
        const jv *sk = &b->items[3];
        CHECK(jv_get(sk, "skipped") && jv_get(sk, "skipped")->b);
        CHECK(strcmp(jv_str(sk, "skip_message"), "no GPU") == 0);
        CHECK(jv_get(sk, "error_occurred") == NULL);
        CHECK(strcmp(jv_str(sk, "name"), "cross_entropy/fwd/fuser/bf16/8192x32768/skipped") == 0);
        CHECK(jv_num(sk, "real_time") == 0 && jv_num(sk, "iterations") == 0);

        CHECK(strcmp(jv_str(agg, "run_type"), "aggregate") == 0);
        CHECK(strcmp(jv_str(agg, "aggregate_name"), "median") == 0);
        CHECK(strcmp(jv_str(agg, "name"), "cross_entropy/fwd/fuser/f32/8192x32768_median") == 0);
        CHECK(jv_get(agg, "repetition_index") == NULL);
        CHECK(strcmp(jv_str(agg, "aggregate_unit"), "time") == 0 && jv_num(agg, "iterations") == 1);
    }
    jv_free(v);
    free(buf);

    /* The same entries as run_suite --format md|csv tables (table.h). */
    for (int fmt = 0; fmt < 2; fmt++) {
        buf = NULL;
        len = 0;
        f = open_memstream(&buf, &len);
        CHECK(hb_table_write_run(f, fmt ? "csv" : "md", &c, e, 4));
        fclose(f);
        if (fmt) {
            CHECK(strstr(buf, "name,suite,case,variant,dtype,size,status,reps,median_us,noise_pct,") == buf);
            /* one repetition ok (280.5), one failed: the case failed; bf16 skipped */
            CHECK(strstr(buf, "\ncross_entropy/fwd/fuser/f32/8192x32768,cross_entropy,fwd,fuser,f32,8192x32768,failed,1,280.5000,,") != NULL);
            CHECK(strstr(buf, ",skipped,0,,,,,1,,,no GPU\n") != NULL);
        } else {
            CHECK(strstr(buf, "## NVIDIA H200, commit abc1234, ") == buf);
            CHECK(strstr(buf, "| cross_entropy/fwd/fuser/f32/8192x32768 | failed: output 'loss' differs | 1 | 280.500 | - |") != NULL);
        }
        free(buf);
    }
    f = open_memstream(&buf, &len);
    CHECK(!hb_table_write_run(f, "xml", &c, e, 4));
    fclose(f);
    free(buf);
}

/* ------------------------------------------------------------ sizes, dtypes, params */

static void test_sizes(void)
{
    hb_size *s;
    int n;
    char why[256];
    CHECK(hb_parse_sizes("8192x32768,4096x50304", 2, &s, &n, why, sizeof why));
    CHECK(n == 2 && s[0].d[0] == 8192 && s[0].d[1] == 32768 && s[1].d[0] == 4096 && s[1].d[1] == 50304);
    char str[64];
    hb_size_str(&s[1], str, sizeof str);
    CHECK(strcmp(str, "4096x50304") == 0);
    free(s);
    const char *bad[] = {"8192x", "x5", "8192", "8192x32768x1", "0x5", "a", "", "8192x32768,", "8192xx5",
                         "99999999999999x2", "8192X32768", " 8192x32768", "-1x5", "99999999999x99999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = '\0';
        bool ok = hb_parse_sizes(bad[i], 2, &s, &n, why, sizeof why);
        if (ok) fprintf(stderr, "size '%s' was accepted\n", bad[i]);
        CHECK(!ok && s == NULL && n == 0 && why[0]);
    }
    CHECK(!hb_parse_sizes("8192", 2, &s, &n, why, sizeof why));
    CHECK_CONTAINS(why, "expected 2");
    CHECK(!hb_parse_sizes("8192x", 2, &s, &n, why, sizeof why));
    CHECK_CONTAINS(why, "8192x");

    fu_dtype dt[4];
    CHECK(hb_parse_dtypes("f32,bf16", dt, 4, &n, why, sizeof why) && n == 2 && dt[0] == FU_F32 && dt[1] == FU_BF16);
    CHECK(hb_parse_dtypes("bf16,bf16", dt, 4, &n, why, sizeof why) && n == 1);
    CHECK(!hb_parse_dtypes("f8", dt, 4, &n, why, sizeof why));
    CHECK_CONTAINS(why, "'f8'");
    /* every float dtype the fuser has; integers and bools name no case's items */
    CHECK(hb_parse_dtypes("f16,f64", dt, 4, &n, why, sizeof why) && n == 2 && dt[0] == FU_F16 && dt[1] == FU_F64);
    CHECK(!hb_parse_dtypes("f32,i64", dt, 4, &n, why, sizeof why));
    CHECK_CONTAINS(why, "'i64' (the suites take f32, bf16, f16 and f64)");
    CHECK(!hb_parse_dtypes("bool", dt, 4, &n, why, sizeof why));
    CHECK(!hb_parse_dtypes("f32,,bf16", dt, 4, &n, why, sizeof why));
    CHECK(!hb_parse_dtypes("", dt, 4, &n, why, sizeof why));

    hb_params p;
    const hb_suite *qkv = suite_named("qkv_split"), *ce_s = suite_named("cross_entropy"), *emb_s = suite_named("embedding");
    if (!qkv || !ce_s || !emb_s) return;
    hb_size q = {3, {16, 128, 3000}};
    CHECK(!hb_suite_bind(qkv, &qkv->cases[0], &q, FU_F32, &p, why, sizeof why));
    CHECK_CONTAINS(why, "multiple of 192");
    q.d[2] = 3072;
    CHECK(hb_suite_bind(qkv, &qkv->cases[0], &q, FU_BF16, &p, why, sizeof why));
    CHECK(p.n == 5);
    const char *want[5][2] = {{"B", "16"}, {"T", "128"}, {"C", "1024"}, {"H", "16"}, {"DT", "bf16"}};
    for (int i = 0; i < 5 && i < p.n; i++) {
        bool found = false;
        for (int k = 0; k < p.n; k++)
            found |= strcmp(p.v[k].name, want[i][0]) == 0 && strcmp(p.v[k].value, want[i][1]) == 0;
        CHECK(found);
    }

    /* check sizes (the manifests' 'check' lines): fewer rows, the same row length */
    hb_size out, ce = {2, {8192, 128256}};
    CHECK(hb_suite_check_size(ce_s, &ce, &out, why, sizeof why));
    CHECK(out.d[0] == (16ll << 20) / 128256 && out.d[1] == 128256);
    hb_size small = {2, {64, 1024}};
    CHECK(hb_suite_check_size(ce_s, &small, &out, why, sizeof why));
    CHECK(out.d[0] == 64 && out.d[1] == 1024);
    hb_size huge_v = {2, {8192, 4194304}};
    CHECK(hb_suite_check_size(ce_s, &huge_v, &out, why, sizeof why));
    CHECK(out.d[0] == 16); /* at least 16 rows */
    hb_size emb = {3, {128256, 4096, 65536}};
    CHECK(hb_suite_check_size(emb_s, &emb, &out, why, sizeof why));
    CHECK(out.d[0] == 4096 && out.d[1] == 4096 && out.d[2] == 4096);
    hb_size big = {3, {32, 2048, 6144}};
    CHECK(hb_suite_check_size(qkv, &big, &out, why, sizeof why));
    CHECK(out.d[0] == 1 && out.d[1] == 2048 && out.d[2] == 6144);
    hb_size mid = {3, {64, 1024, 2304}};
    CHECK(hb_suite_check_size(qkv, &mid, &out, why, sizeof why));
    CHECK(out.d[0] == (16ll << 20) / (1024 * 2304) && out.d[0] == 7);

    /* NAME=VALUE sizes */
    CHECK(hb_suite_parse_sizes(ce_s, "V=50304", &s, &n, why, sizeof why) && n == 1 && s[0].d[0] == 8192 &&
          s[0].d[1] == 50304);
    free(s);
    CHECK(hb_suite_parse_sizes(ce_s, "N=4096,V=50304;N=16", &s, &n, why, sizeof why) && n == 2 && s[0].d[0] == 4096 &&
          s[1].d[0] == 16 && s[1].d[1] == 32768);
    free(s);
    CHECK(!hb_suite_parse_sizes(ce_s, "X=4", &s, &n, why, sizeof why));
    CHECK_CONTAINS(why, "'X' is not an axis");
    CHECK(!hb_suite_parse_sizes(ce_s, "N=0", &s, &n, why, sizeof why));

    CHECK(hb_suite_set_find(&g_suites, "nope") == NULL);
}

/* ------------------------------------------------------------ compare, random, clocks */

static void test_compare(void)
{
    fu_host_tensor a, b;
    int64_t shape[1] = {100};
    fu_error err;
    CHECK(fu_host_tensor_alloc(&a, FU_F32, 1, shape, &err) == FU_OK);
    CHECK(fu_host_tensor_alloc(&b, FU_F32, 1, shape, &err) == FU_OK);
    for (int i = 0; i < 100; i++) {
        fu_host_tensor_set(&a, i, sin(i + 1.0));
        fu_host_tensor_set(&b, i, sin(i + 1.0));
    }
    hb_compare c;
    hb_compare_tensors(&a, &b, &c);
    CHECK(c.rel_l2 == 0 && c.worst_elem == 0 && c.nan_count == 0);
    fu_host_tensor_set(&a, 37, fu_host_tensor_get(&b, 37) + 0.5);
    hb_compare_tensors(&a, &b, &c);
    CHECK(c.worst_index == 37 && c.rel_l2 > 0.05 && c.worst_elem > 0.2);
    double tol_l2, tol_elem;
    hb_tolerance(FU_F32, &tol_l2, &tol_elem);
    CHECK(c.rel_l2 > tol_l2 && tol_l2 <= 1e-4);
    fu_host_tensor_set(&a, 37, fu_host_tensor_get(&b, 37) * (1 + 1e-7)); /* float rounding: passes */
    hb_compare_tensors(&a, &b, &c);
    CHECK(c.rel_l2 <= tol_l2 && c.worst_elem <= tol_elem);
    ((float *)a.data)[5] = NAN;
    hb_compare_tensors(&a, &b, &c);
    CHECK(c.nan_count == 1 && isinf(c.rel_l2) && c.worst_index == 5);
    fu_host_tensor_free(&a);
    int64_t shape2[1] = {99};
    CHECK(fu_host_tensor_alloc(&a, FU_F32, 1, shape2, &err) == FU_OK);
    hb_compare_tensors(&a, &b, &c);
    CHECK(isinf(c.rel_l2));
    fu_host_tensor_free(&a);
    fu_host_tensor_free(&b);

    /* An all-zero reference (cross entropy at V = 1): the error is absolute. */
    int64_t one[1] = {1};
    CHECK(fu_host_tensor_alloc(&a, FU_F32, 1, one, &err) == FU_OK);
    CHECK(fu_host_tensor_alloc(&b, FU_F32, 1, one, &err) == FU_OK);
    fu_host_tensor_set(&a, 0, -2.88e-9);
    fu_host_tensor_set(&b, 0, 0.0);
    hb_compare_tensors(&a, &b, &c);
    CHECK(fabs(c.worst_elem - 2.88e-9) < 1e-12 && fabs(c.rel_l2 - 2.88e-9) < 1e-12);
    fu_host_tensor_set(&a, 0, 0.5);
    hb_compare_tensors(&a, &b, &c);
    CHECK(c.worst_elem > tol_elem && c.rel_l2 > tol_l2);
    fu_host_tensor_free(&a);
    fu_host_tensor_free(&b);

    hb_tolerance(FU_BF16, &tol_l2, &tol_elem);
    CHECK(tol_l2 >= 1e-3 && tol_l2 <= 1e-2);
    hb_tolerance(FU_I64, &tol_l2, &tol_elem);
    CHECK(tol_l2 == 0 && tol_elem == 0);
}

static void test_fast_random(void)
{
    fu_fusion *f = fu_fusion_new("emb");
    int64_t ws[2] = {100, 8}, is[1] = {1000};
    fu_tensor w = fu_input(f, "weight", FU_F32, 2, ws);
    fu_tensor ids = fu_input(f, "ids", FU_I64, 1, is);
    fu_output(f, fu_embedding(f, w, ids, -1, "out"));
    fu_error err;
    CHECK(fu_fusion_verify(f, &err) == FU_OK);
    fu_host_tensor in[2], again[2], other[2];
    CHECK(hb_fast_random_inputs(f, 7, in, &err) == FU_OK);
    CHECK(hb_fast_random_inputs(f, 7, again, &err) == FU_OK);
    CHECK(hb_fast_random_inputs(f, 8, other, &err) == FU_OK);
    double sum = 0, sum2 = 0;
    for (int i = 0; i < 800; i++) {
        double x = fu_host_tensor_get(&in[0], i);
        sum += x;
        sum2 += x * x;
    }
    double mean = sum / 800, var = sum2 / 800 - mean * mean;
    CHECK(fabs(mean) < 0.15 && var > 0.8 && var < 1.2);
    int64_t lo = 1000, hi = -1;
    bool all_same = true;
    for (int i = 0; i < 1000; i++) {
        int64_t v = ((int64_t *)in[1].data)[i];
        if (v < lo) lo = v;
        if (v > hi) hi = v;
        all_same &= v == ((int64_t *)other[1].data)[i];
    }
    CHECK(lo >= 0 && hi < 100 && hi - lo > 90); /* within the table, and spread over it */
    CHECK(!all_same);
    CHECK(memcmp(in[0].data, again[0].data, fu_host_tensor_bytes(&in[0])) == 0);
    CHECK(memcmp(in[1].data, again[1].data, fu_host_tensor_bytes(&in[1])) == 0);
    /* an element's value comes from its index alone: a table of 131072 rows (filled on every
     * core) starts with the 100-row table's elements (filled on one) */
    fu_fusion *big = fu_fusion_new("emb_big");
    int64_t bws[2] = {131072, 8};
    fu_tensor bw = fu_input(big, "weight", FU_F32, 2, bws);
    fu_tensor bids = fu_input(big, "ids", FU_I64, 1, is);
    fu_output(big, fu_embedding(big, bw, bids, -1, "out"));
    CHECK(fu_fusion_verify(big, &err) == FU_OK);
    fu_host_tensor large[2];
    CHECK(hb_fast_random_inputs(big, 7, large, &err) == FU_OK);
    CHECK(memcmp(in[0].data, large[0].data, fu_host_tensor_bytes(&in[0])) == 0);
    for (int i = 0; i < 2; i++) {
        fu_host_tensor_free(&in[i]);
        fu_host_tensor_free(&again[i]);
        fu_host_tensor_free(&other[i]);
        fu_host_tensor_free(&large[i]);
    }
    fu_fusion_free(f);
    fu_fusion_free(big);
}

/* ------------------------------------------------------------ spot rows */

static void test_spot_rows(void)
{
    int64_t rows[HB_SPOT_ROWS];
    CHECK(hb_spot_rows(1, 1, rows) == 1 && rows[0] == 0);
    int k = hb_spot_rows(1000, 1, rows);
    CHECK(k == HB_SPOT_ROWS && rows[0] == 0 && rows[1] == 999);
    for (int i = 0; i < k; i++)
        for (int j = 0; j < i; j++) CHECK(rows[i] != rows[j] && rows[i] >= 0 && rows[i] < 1000);
    CHECK(hb_spot_rows(3, 1, rows) == 3);
    double ref[4] = {1, 2, 3, 4}, got[4] = {1, 2, 3, 4};
    char why[256];
    CHECK(hb_spot_compare(got, ref, 4, FU_F32, "x", why, sizeof why));
    got[0] = 5;
    CHECK(!hb_spot_compare(got, ref, 4, FU_F32, "x", why, sizeof why));
    CHECK_CONTAINS(why, "element 0");
}

static void test_clock_reasons(void)
{
    CHECK(!hb_clock_reasons_throttled(0));
    CHECK(!hb_clock_reasons_throttled(0x1));  /* idle */
    CHECK(!hb_clock_reasons_throttled(0x2));  /* application clocks */
    CHECK(hb_clock_reasons_throttled(0x4));   /* software power cap */
    CHECK(hb_clock_reasons_throttled(0x8));   /* hardware slowdown */
    CHECK(hb_clock_reasons_throttled(0x20));  /* software thermal */
    CHECK(hb_clock_reasons_throttled(0x40));  /* hardware thermal */
    CHECK(hb_clock_reasons_throttled(0x81));
}

int main(void)
{
    const char *dir = getenv("FUSEBENCH_SUITES_DIR");
    if (!dir) {
        fprintf(stderr, "FUSEBENCH_SUITES_DIR is not set (ctest sets it)\n");
        return 1;
    }
    char why[1200];
    if (!hb_suites_discover(dir, &g_suites, why, sizeof why)) {
        fprintf(stderr, "%s\n", why);
        return 1;
    }
    test_stats();
    test_stop_rule();
    test_bytes();
    test_json_writer();
    test_run_file();
    test_sizes();
    test_compare();
    test_fast_random();
    test_spot_rows();
    test_clock_reasons();
    hb_suite_set_free(&g_suites);
    return check_finish("test_harness_unit");
}
