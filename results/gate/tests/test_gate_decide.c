/*
 * test_gate_decide.c -- the gate's decisions on synthetic runs (synth.h), no
 * GPU: A/A over 20 seeds never says SLOWER; a 5% slowdown with 10 repetitions
 * and 1% noise says SLOWER (and a speedup FASTER); effects under the threshold
 * are SAME, with per-suite overrides; a kernel, launch or segment count rise
 * regresses whatever the timing; a failed check regresses; too few samples
 * and missing cases are UNKNOWN; other GPU models, other schemas and malformed
 * files are refused without crashing; the reports say what was decided.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gate.h"
#include "report.h"
#include "run.h"
#include "synth.h"
#include "test_util.h"

static int parse_json(gate_run *run, cJSON *json, const char *name)
{
    char err[512];
    char *text = cJSON_Print(json);
    int rc = gate_run_parse(run, text, strlen(text), name, err, sizeof err);
    if (rc) fprintf(stderr, "parse %s: %s\n", name, err);
    cJSON_free(text);
    return rc;
}

static int parse_opts(gate_run *run, const synth_opts *o, const char *name)
{
    cJSON *json = synth_run(o);
    int rc = parse_json(run, json, name);
    cJSON_Delete(json);
    return rc;
}

/* Compares two synthetic runs; the report is left in rep (free it). */
static int compare_opts(const synth_opts *run_o, const synth_opts *base_o, const gate_options *opt,
                        gate_report *rep, gate_run *run, gate_run *base)
{
    char err[512];
    CHECK(parse_opts(run, run_o, "run.json") == 0);
    CHECK(parse_opts(base, base_o, "base.json") == 0);
    int rc = gate_compare(run, base, opt, rep, err, sizeof err);
    if (rc) fprintf(stderr, "compare: %s\n", err);
    return rc;
}

static const gate_result *find(const gate_report *rep, const char *name)
{
    for (size_t i = 0; i < rep->n; i++)
        if (strcmp(rep->results[i].name, name) == 0) return &rep->results[i];
    return NULL;
}

static size_t count(const gate_report *rep, gate_verdict v) { return rep->counts[v]; }

static void done(gate_report *rep, gate_run *run, gate_run *base)
{
    gate_report_free(rep);
    gate_run_free(run);
    gate_run_free(base);
}

static void test_aa(void)
{
    gate_options opt;
    gate_options_default(&opt);
    int samples_modes[2] = {20, 0};
    for (int m = 0; m < 2; m++)
        for (uint64_t seed = 1; seed <= 20; seed++) {
            synth_opts b, r;
            synth_defaults(&b);
            synth_defaults(&r);
            b.seed = seed;
            r.seed = seed + 1000;
            b.samples = r.samples = samples_modes[m];
            gate_report rep;
            gate_run run, base;
            CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
            CHECK(rep.n == run.n_cases && rep.n > 30);
            CHECK(count(&rep, GATE_SLOWER) == 0);
            CHECK(count(&rep, GATE_REGRESSION) == 0);
            CHECK(count(&rep, GATE_UNKNOWN) == 0);
            CHECK(!rep.regressed);
            if (count(&rep, GATE_SLOWER)) fprintf(stderr, "  A/A seed %llu said SLOWER\n",
                                                  (unsigned long long)seed);
            done(&rep, &run, &base);
        }
}

static void test_slowdown(void)
{
    gate_options opt;
    gate_options_default(&opt);
    int samples_modes[2] = {0, 20};
    for (int m = 0; m < 2; m++) {
        synth_opts b, r;
        synth_defaults(&b);
        synth_defaults(&r);
        b.reps = r.reps = 10;
        b.noise = r.noise = 0.01;
        b.samples = r.samples = samples_modes[m];
        r.seed = 99;
        r.scale = 1.05;
        gate_report rep;
        gate_run run, base;
        CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
        CHECK(count(&rep, GATE_SLOWER) == rep.n);
        CHECK(rep.regressed);
        const gate_result *x = find(&rep, "cross_entropy/fwd/fuser/bf16/8192x32768");
        CHECK(x != NULL);
        if (x) {
            CHECK(x->verdict == GATE_SLOWER && x->timing == GATE_SLOWER);
            CHECK(strcmp(x->reason, "time") == 0);
            CHECK_NEAR(x->change_pct, 5.0, 0.25);
            CHECK(x->p_value < 1e-3);
            CHECK(x->n_run == 10u); /* the units are repetitions, with or without samples */
            CHECK(!x->exact);       /* Welch, not the exact rank distribution */
            CHECK(x->ci_low_pct > 3.0 && x->ci_high_pct < 7.0);
            CHECK(x->noise_pct > 0.3 && x->noise_pct < 3.0);
            CHECK_CONTAINS(x->detail, "threshold 3%");
        }
        done(&rep, &run, &base);

        r.scale = 1 / 1.05; /* faster is not a regression */
        CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
        CHECK(count(&rep, GATE_FASTER) == rep.n);
        CHECK(!rep.regressed);
        done(&rep, &run, &base);
    }

    /* Only some cases slower: exactly those. */
    synth_opts b, r;
    synth_defaults(&b);
    synth_defaults(&r);
    r.seed = 5;
    r.scale = 1.06;
    r.slow = "embedding/bwd/*";
    gate_report rep;
    gate_run run, base;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_SLOWER) == 6); /* 3 variants x 2 sizes */
    CHECK(find(&rep, "embedding/bwd/fuser/bf16/8192x768")->verdict == GATE_SLOWER);
    CHECK(find(&rep, "embedding/fwd/fuser/bf16/8192x768")->verdict == GATE_SAME);
    done(&rep, &run, &base);
}

/* Gated and informational rows: a torch row slower never fails the gate
 * unless --gate-variants says so; the default nightly's 3 repetitions never
 * call an A/A SLOWER; AMBIGUOUS where the data cannot tell. */
static void test_gated_and_ambiguous(void)
{
    gate_options opt;
    gate_options_default(&opt);
    synth_opts b, r;
    synth_defaults(&b);
    synth_defaults(&r);
    r.seed = 7;
    r.scale = 1.10;
    r.slow = "*/torch_*";
    gate_report rep;
    gate_run run, base;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_SLOWER) > 0);
    CHECK(!rep.regressed);
    for (size_t i = 0; i < rep.n; i++) {
        const gate_result *x = &rep.results[i];
        int torch = strstr(x->name, "/torch_") != NULL;
        CHECK(x->gated == !torch);
        CHECK(x->verdict == (torch ? GATE_SLOWER : GATE_SAME));
    }
    done(&rep, &run, &base);
    opt.gate_variants = "fuser,torch_compile";
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(rep.regressed);
    CHECK(find(&rep, "qkv_split/fwd/torch_compile/bf16/12x1024x768")->gated);
    CHECK(!find(&rep, "embedding/fwd/reference/bf16/8192x768")->gated);
    done(&rep, &run, &base);
    opt.gate_variants = "all";
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(rep.regressed && find(&rep, "embedding/fwd/reference/bf16/8192x768")->gated);
    done(&rep, &run, &base);

    /* A/A with 3 repetitions of 20 samples, 1% noise: never SLOWER or FASTER. */
    gate_options_default(&opt);
    for (uint64_t seed = 1; seed <= 20; seed++) {
        synth_defaults(&b);
        synth_defaults(&r);
        b.reps = r.reps = 3;
        b.samples = r.samples = 20;
        b.seed = seed;
        r.seed = seed + 500;
        CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
        CHECK(count(&rep, GATE_SLOWER) == 0 && count(&rep, GATE_FASTER) == 0);
        CHECK(!rep.regressed);
        done(&rep, &run, &base);
    }

    /* 3% noise per repetition, 3 a side, 4% slower: the interval straddles the
     * threshold: AMBIGUOUS (passes), not SAME and not SLOWER. */
    synth_defaults(&b);
    synth_defaults(&r);
    b.reps = r.reps = 3;
    b.noise = r.noise = 0.03;
    r.seed = 11;
    r.scale = 1.04;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_AMBIGUOUS) > rep.n / 2);
    CHECK(count(&rep, GATE_SAME) == 0);
    CHECK(!rep.regressed);
    done(&rep, &run, &base);

    /* --max-noise: noise above it is AMBIGUOUS whatever the change. */
    b.noise = r.noise = 0.01;
    b.reps = r.reps = 10;
    r.scale = 1.2;
    opt.max_noise_pct = 0.1;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_AMBIGUOUS) == rep.n);
    CHECK(strcmp(rep.results[0].reason, "noise") == 0);
    done(&rep, &run, &base);
}

/* Google Benchmark's own forms of a failed and a skipped entry (no "status";
 * error_occurred / skipped; real_time 0; the name suffixed as json.c writes
 * it, the run_name the case's): a failure is a REGRESSION, never FASTER, and a
 * skip UNKNOWN. */
static void test_gb_forms(void)
{
    gate_options opt;
    gate_options_default(&opt);
    synth_opts b;
    synth_defaults(&b);
    cJSON *bj = synth_run(&b), *rj = synth_run(&b);
    const char *failed = "embedding/fwd/fuser/bf16/8192x768", *skipped = "embedding/fwd/reference/bf16/8192x768";
    int nf = 0, ns = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(rj, "benchmarks"))
    {
        const cJSON *rn = cJSON_GetObjectItemCaseSensitive(e, "run_name");
        const cJSON *rt = cJSON_GetObjectItemCaseSensitive(e, "run_type");
        if (!cJSON_IsString(rn) || !cJSON_IsString(rt) || strcmp(rt->valuestring, "iteration") != 0) continue;
        int f = strcmp(rn->valuestring, failed) == 0, k = strcmp(rn->valuestring, skipped) == 0;
        if (!f && !k) continue;
        cJSON *x = (cJSON *)e;
        cJSON_DeleteItemFromObjectCaseSensitive(x, "status");
        cJSON_DeleteItemFromObjectCaseSensitive(x, "samples_us");
        cJSON_ReplaceItemInObjectCaseSensitive(x, "real_time", cJSON_CreateNumber(0));
        char name[300];
        snprintf(name, sizeof name, "%s/%s", rn->valuestring, f ? "failed" : "skipped");
        cJSON_ReplaceItemInObjectCaseSensitive(x, "name", cJSON_CreateString(name));
        cJSON_AddBoolToObject(x, f ? "error_occurred" : "skipped", 1);
        cJSON_AddStringToObject(x, f ? "error_message" : "skip_message", f ? "output differs" : "no GPU");
        nf += f;
        ns += k;
    }
    CHECK(nf == b.reps && ns == b.reps);
    gate_run run, base;
    gate_report rep;
    char err[256];
    CHECK(parse_json(&run, rj, "run.json") == 0);
    CHECK(parse_json(&base, bj, "base.json") == 0);
    CHECK(gate_compare(&run, &base, &opt, &rep, err, sizeof err) == 0);
    const gate_result *x = find(&rep, failed);
    CHECK(x && x->verdict == GATE_REGRESSION && strcmp(x->reason, "correctness") == 0);
    if (x) CHECK_CONTAINS(x->detail, "output differs");
    CHECK(x && x->timing != GATE_FASTER);
    x = find(&rep, skipped);
    CHECK(x && x->verdict == GATE_UNKNOWN && strcmp(x->reason, "skipped") == 0);
    if (x) CHECK_CONTAINS(x->detail, "no GPU");
    CHECK(count(&rep, GATE_FASTER) == 0);
    CHECK(rep.regressed);
    done(&rep, &run, &base);
    cJSON_Delete(bj);
    cJSON_Delete(rj);
}

static void test_threshold(void)
{
    /* 2% slower with 200 samples a side: significant, but under 3%. */
    synth_opts b, r;
    synth_defaults(&b);
    synth_defaults(&r);
    b.samples = r.samples = 20;
    r.seed = 3;
    r.scale = 1.02;
    gate_options opt;
    gate_options_default(&opt);
    gate_report rep;
    gate_run run, base;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_SAME) == rep.n);
    const gate_result *x = find(&rep, "qkv_split/fwd/fuser/bf16/12x1024x768");
    CHECK(x && x->p_value < 0.01);
    if (x) CHECK_CONTAINS(x->detail, "inside the 3% threshold");
    done(&rep, &run, &base);

    /* --threshold 1 */
    opt.threshold_pct = 1;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_SLOWER) == rep.n);
    done(&rep, &run, &base);

    /* Rules: everything 1%, but embedding 10%; last match wins. */
    gate_thresholds t;
    char err[256];
    CHECK(gate_thresholds_parse(&t, "* 1\nembedding/* 10\n", "thr", err, sizeof err) == 0);
    gate_options_default(&opt);
    opt.thresholds = &t;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    for (size_t i = 0; i < rep.n; i++) {
        const gate_result *y = &rep.results[i];
        int emb = strncmp(y->name, "embedding/", 10) == 0;
        CHECK(y->verdict == (emb ? GATE_SAME : GATE_SLOWER));
        CHECK_NEAR(y->threshold_pct, emb ? 10 : 1, 0);
    }
    done(&rep, &run, &base);
    gate_thresholds_free(&t);

    /* alpha: with --test mwu and 5 repetitions a side the smallest exact p is
     * 2/252 = 0.0079, so alpha 0.005 can never be met: the interval is far from
     * the threshold but the test does not say, so AMBIGUOUS, never SAME. */
    synth_defaults(&b);
    synth_defaults(&r);
    b.reps = r.reps = 5;
    r.scale = 1.2;
    gate_options_default(&opt);
    opt.test_mwu = 1;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_SLOWER) == rep.n);
    CHECK(rep.results[0].exact);
    done(&rep, &run, &base);
    opt.alpha = 0.005;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_AMBIGUOUS) == rep.n);
    CHECK(!rep.regressed);
    CHECK_CONTAINS(rep.results[0].detail, "p = 0.0079");
    done(&rep, &run, &base);
    /* Welch at alpha 0.005 sees it. */
    opt.test_mwu = 0;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_SLOWER) == rep.n);
    done(&rep, &run, &base);
}

static void test_counts(void)
{
    gate_options opt;
    gate_options_default(&opt);
    synth_opts b, r;
    synth_defaults(&b);
    synth_defaults(&r);
    r.kernels_plus = 1; /* identical timing model, one more kernel in fuser cases */
    gate_report rep;
    gate_run run, base;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(rep.regressed);
    for (size_t i = 0; i < rep.n; i++) {
        const gate_result *x = &rep.results[i];
        int fused = strstr(x->name, "/fuser/") != NULL;
        CHECK(x->verdict == (fused ? GATE_REGRESSION : GATE_SAME));
        if (fused) {
            CHECK(strcmp(x->reason, "launches") == 0);
            CHECK_CONTAINS(x->detail, "kernels 1 -> 2");
            CHECK_CONTAINS(x->detail, "segments 1 -> 2");
            CHECK(x->timing == GATE_SAME);
        }
    }
    done(&rep, &run, &base);

    /* Fewer kernels is noted, not a regression. */
    CHECK(compare_opts(&b, &r, &opt, &rep, &run, &base) == 0);
    CHECK(!rep.regressed);
    CHECK_CONTAINS(find(&rep, "embedding/fwd/fuser/bf16/8192x768")->detail, "fewer: kernels 2 -> 1");
    done(&rep, &run, &base);

    /* One key at a time, in one repetition's entry is enough; and with too few
     * samples to time, a count rise still regresses. */
    const char *keys[3] = {"kernels", "launches", "segments"};
    for (int k = 0; k < 3; k++) {
        synth_defaults(&b);
        b.reps = 2;
        cJSON *bj = synth_run(&b), *rj = synth_run(&b);
        CHECK(synth_bump(rj, "qkv_split/fwd/torch_compile/bf16/12x1024x768", keys[k], 2) == 2);
        CHECK(parse_json(&run, rj, "run.json") == 0);
        CHECK(parse_json(&base, bj, "base.json") == 0);
        char err[256];
        CHECK(gate_compare(&run, &base, &opt, &rep, err, sizeof err) == 0);
        const gate_result *x = find(&rep, "qkv_split/fwd/torch_compile/bf16/12x1024x768");
        CHECK(x && x->verdict == GATE_REGRESSION && strcmp(x->reason, "launches") == 0);
        if (x) CHECK_CONTAINS(x->detail, keys[k]);
        CHECK(x && x->timing == GATE_UNKNOWN);
        CHECK(count(&rep, GATE_REGRESSION) == 1);
        CHECK(count(&rep, GATE_UNKNOWN) == rep.n - 1);
        done(&rep, &run, &base);
        cJSON_Delete(bj);
        cJSON_Delete(rj);
    }
}

static void test_failed_missing_unknown(void)
{
    gate_options opt;
    gate_options_default(&opt);
    synth_opts b, r;
    gate_report rep;
    gate_run run, base;

    /* A case that fails its check in the run. */
    synth_defaults(&b);
    synth_defaults(&r);
    r.fail = "cross_entropy/bwd/fuser/f32/*";
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(rep.regressed);
    CHECK(count(&rep, GATE_REGRESSION) == 3);
    const gate_result *x = find(&rep, "cross_entropy/bwd/fuser/f32/2048x32768");
    CHECK(x && strcmp(x->reason, "correctness") == 0);
    if (x) CHECK_CONTAINS(x->detail, "max_rel_error 0.5");
    done(&rep, &run, &base);

    /* Failed in the baseline, fixed in the run: nothing to time against. */
    CHECK(compare_opts(&b, &r, &opt, &rep, &run, &base) == 0);
    CHECK(!rep.regressed);
    CHECK(count(&rep, GATE_UNKNOWN) == 3);
    done(&rep, &run, &base);

    /* Missing in the run: UNKNOWN with a note (a REGRESSION with require_all);
     * new in the run: UNKNOWN. */
    synth_defaults(&b);
    synth_defaults(&r);
    r.only = "*/fwd/*";
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(!rep.regressed);
    CHECK(rep.n == base.n_cases);
    x = find(&rep, "embedding/bwd/reference/bf16/8192x768");
    CHECK(x && x->verdict == GATE_UNKNOWN && x->run == NULL && strcmp(x->reason, "missing") == 0);
    CHECK(rep.results[0].run != NULL); /* run's cases first */
    done(&rep, &run, &base);
    opt.require_all = 1;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(rep.regressed);
    done(&rep, &run, &base);
    opt.require_all = 0;
    CHECK(compare_opts(&b, &r, &opt, &rep, &run, &base) == 0);
    CHECK(!rep.regressed);
    x = find(&rep, "embedding/bwd/reference/bf16/8192x768");
    CHECK(x && x->verdict == GATE_UNKNOWN && strcmp(x->reason, "new") == 0);
    done(&rep, &run, &base);

    /* Too few repetitions: 2, no samples_us, 20% slower: UNKNOWN. */
    synth_defaults(&b);
    synth_defaults(&r);
    b.reps = r.reps = 2;
    r.scale = 1.2;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_UNKNOWN) == rep.n);
    CHECK(!rep.regressed);
    CHECK_CONTAINS(rep.results[0].detail, "too few repetitions");
    done(&rep, &run, &base);
    /* Too few samples in a repetition: 3 samples each, --min-samples 5. */
    b.reps = r.reps = 6;
    b.samples = r.samples = 3;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_UNKNOWN) == rep.n);
    CHECK_CONTAINS(rep.results[0].detail, "too few samples");
    done(&rep, &run, &base);
    opt.min_samples = 3;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_SLOWER) == rep.n);
    done(&rep, &run, &base);
    b.samples = r.samples = 0;
    opt.min_samples = 5;
    /* The rank test on 4 against 4: the smallest exact p is 2/70 = 0.029, so
     * it cannot tell at 0.01: AMBIGUOUS, with the p that says why. */
    b.reps = r.reps = 4;
    opt.test_mwu = 1;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_AMBIGUOUS) == rep.n);
    CHECK_CONTAINS(rep.results[0].detail, "p = 0.029");
    done(&rep, &run, &base);
    opt.test_mwu = 0;
    opt.alpha = 0.05;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);
    CHECK(count(&rep, GATE_SLOWER) == rep.n);
    done(&rep, &run, &base);
    gate_options_default(&opt);

    /* Filter */
    synth_defaults(&b);
    opt.filter = "qkv_split/*";
    CHECK(compare_opts(&b, &b, &opt, &rep, &run, &base) == 0);
    CHECK(rep.n == 4);
    done(&rep, &run, &base);
}

static void test_units_and_sources(void)
{
    /* real_time in ns is read as us; samples_us are used when every passing
     * repetition has them. */
    synth_opts o;
    synth_defaults(&o);
    o.time_unit = "ns";
    gate_run a, b;
    CHECK(parse_opts(&a, &o, "ns.json") == 0);
    o.time_unit = "us";
    CHECK(parse_opts(&b, &o, "us.json") == 0);
    const gate_case *ca = gate_run_find(&a, "embedding/fwd/fuser/bf16/8192x768");
    const gate_case *cb = gate_run_find(&b, "embedding/fwd/fuser/bf16/8192x768");
    CHECK(ca && cb && ca->n_samples == 10 && ca->source == GATE_FROM_REAL_TIME);
    if (ca && cb) CHECK_NEAR(ca->samples[3], cb->samples[3], 1e-12);
    CHECK(cb && cb->kernels == 1 && cb->launches == 1 && cb->segments == 1 && cb->bytes > 0);
    CHECK(a.n_cases == b.n_cases && strcmp(a.gpu_key, "nvidia_h200") == 0);
    gate_run_free(&a);
    gate_run_free(&b);

    /* One repetition without samples_us: the case falls back to real_time. */
    o.samples = 8;
    o.reps = 6;
    cJSON *j = synth_run(&o);
    cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "benchmarks"), 2);
    cJSON_DeleteItemFromObjectCaseSensitive(e, "samples_us");
    CHECK(parse_json(&a, j, "mixed.json") == 0);
    CHECK(a.cases[0].source == GATE_FROM_REAL_TIME && a.cases[0].n_samples == 6);
    CHECK(a.cases[1].source == GATE_FROM_SAMPLES && a.cases[1].n_samples == 48);
    gate_run_free(&a);
    cJSON_Delete(j);

    char key[64];
    gate_gpu_key_from_name("NVIDIA H200 NVL (141GB)", key, sizeof key);
    CHECK(strcmp(key, "nvidia_h200_nvl_141gb") == 0);
}

static void expect_error(const char *text, const char *name, const char *needle)
{
    gate_run run;
    char err[512] = "";
    CHECK(gate_run_parse(&run, text, strlen(text), name, err, sizeof err) == -1);
    CHECK_CONTAINS(err, needle);
    CHECK_CONTAINS(err, name);
    CHECK(run.n_cases == 0 && run.json == NULL);
    gate_run_free(&run);
}

static void test_bad_input(void)
{
    gate_options opt;
    gate_options_default(&opt);
    synth_opts b, r;
    synth_defaults(&b);
    synth_defaults(&r);
    r.gpu_name = "NVIDIA H100 80GB HBM3";
    gate_report rep;
    gate_run run, base;
    char err[512];
    CHECK(parse_opts(&run, &r, "h100.json") == 0);
    CHECK(parse_opts(&base, &b, "h200.json") == 0);
    CHECK(gate_compare(&run, &base, &opt, &rep, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "different GPU models");
    CHECK_CONTAINS(err, "NVIDIA H100 80GB HBM3");
    CHECK_CONTAINS(err, "NVIDIA H200");
    done(&rep, &run, &base);

    r.gpu_name = "NVIDIA H200";
    r.schema = "fusebench-run/2";
    char *t = synth_run_text(&r);
    expect_error(t, "v2.json", "schema mismatch");
    expect_error(t, "v2.json", "fusebench-run/2");
    free(t);
    r.schema = NULL;
    t = synth_run_text(&r);
    expect_error(t, "noschema.json", "schema mismatch");
    free(t);

    expect_error("", "empty.json", "empty file");
    expect_error("{\"context\": {\"schema\": \"fusebench-run/1\"", "trunc.json", "not valid JSON");
    expect_error("{\n  \"context\": {},\n  oops\n}", "bad.json", "bad.json:3:");
    expect_error("[1, 2]", "array.json", "not a JSON object");
    expect_error("{\"benchmarks\": []}", "noctx.json", "no \"context\"");
    expect_error("{\"context\": {\"schema\": \"fusebench-run/1\", \"gpu_name\": \"x\"}}", "nobench.json",
                 "no \"benchmarks\" array");
    expect_error("{\"context\": {\"schema\": \"fusebench-run/1\"}, \"benchmarks\": []}", "nogpu.json",
                 "gpu_name");
    expect_error("{\"context\": {\"schema\": \"fusebench-run/1\", \"gpu_name\": 3}, \"benchmarks\": []}",
                 "gpu3.json", "context.gpu_name is not a string");
    expect_error("{\"context\": {\"schema\": \"fusebench-run/1\", \"gpu_name\": \"x\"}, \"benchmarks\": "
                 "[{\"name\": \"a/b\", \"real_time\": 1, \"samples_us\": [1, \"2\"]}]}",
                 "samples.json", "samples_us[1] is not a non-negative number");
    expect_error("{\"context\": {\"schema\": \"fusebench-run/1\", \"gpu_name\": \"x\"}, \"benchmarks\": "
                 "[{\"name\": \"a/b\", \"real_time\": 1, \"status\": \"meh\"}]}",
                 "status.json", "benchmarks[0] (a/b)");
    expect_error("{\"context\": {\"schema\": \"fusebench-run/1\", \"gpu_name\": \"x\"}, \"benchmarks\": "
                 "[{\"name\": \"a/b\", \"status\": \"ok\"}]}",
                 "nort.json", "real_time");
    expect_error("{\"context\": {\"schema\": \"fusebench-run/1\", \"gpu_name\": \"x\"}, \"benchmarks\": "
                 "[{\"name\": \"a/b\", \"real_time\": 1, \"kernels\": 1.5}]}",
                 "k.json", "\"kernels\" is not a non-negative integer");
    expect_error("{\"context\": {\"schema\": \"fusebench-run/1\", \"gpu_name\": \"x\"}, \"benchmarks\": "
                 "[{\"real_time\": 1}]}",
                 "noname.json", "no \"name\"");
    expect_error("{\"context\": {\"schema\": \"fusebench-run/1\", \"gpu_name\": \"x\"}, \"benchmarks\": "
                 "[]} trailing",
                 "trail.json", "not valid JSON");

    /* Every prefix of a valid file, and files with bytes overwritten, are
     * refused or read, never a crash (the sanitizers watch). */
    synth_defaults(&b);
    b.reps = 2;
    b.samples = 3;
    b.only = "qkv_split/*";
    t = synth_run_text(&b);
    size_t len = strlen(t);
    int refused = 0;
    for (size_t n = 0; n < len; n++) {
        char *p = malloc(n + 1);
        memcpy(p, t, n);
        p[n] = '\0';
        gate_run x;
        refused += gate_run_parse(&x, p, n, "prefix.json", err, sizeof err) == -1;
        gate_run_free(&x);
        free(p);
    }
    CHECK(refused == (int)len - 1 || refused == (int)len); /* only the whole (modulo a final newline) */
    synth_rng rng = {11};
    const char junk[] = "{}[]\",:0-e.x\\ \n";
    for (int trial = 0; trial < 2000; trial++) {
        char *p = malloc(len + 1);
        memcpy(p, t, len + 1);
        for (int k = 0; k < 3; k++) p[synth_next(&rng) % len] = junk[synth_next(&rng) % (sizeof junk - 1)];
        gate_run x;
        if (gate_run_parse(&x, p, len, "noisy.json", err, sizeof err) == 0) {
            gate_report rr;
            gate_run y;
            CHECK(gate_run_parse(&y, t, len, "clean.json", err, sizeof err) == 0);
            if (gate_compare(&x, &y, &opt, &rr, err, sizeof err) == 0) gate_report_free(&rr);
            gate_run_free(&y);
        }
        gate_run_free(&x);
        free(p);
    }
    free(t);
}

static void test_reports(void)
{
    gate_options opt;
    gate_options_default(&opt);
    synth_opts b, r;
    synth_defaults(&b);
    synth_defaults(&r);
    r.scale = 1.08;
    r.slow = "qkv_split/*";
    r.kernels_plus = 1;
    r.only = "qkv_split/*";
    b.only = "*/fwd/*";
    gate_report rep;
    gate_run run, base;
    CHECK(compare_opts(&r, &b, &opt, &rep, &run, &base) == 0);

    FILE *f = tmpfile();
    CHECK(gate_write_markdown(f, &rep, &run, &base, &opt) == 0);
    char *md = tu_read_stream(f, NULL);
    fclose(f);
    CHECK_CONTAINS(md, "## Regression gate: FAILED");
    CHECK_CONTAINS(md, "| case | gated | baseline median (us) | run median (us) | change | 99% interval | noise | p-value | verdict | reason |");
    CHECK_CONTAINS(md, "| qkv_split/fwd/torch_compile/bf16/12x1024x768 | no |");
    CHECK_CONTAINS(md, "Slower or regressed, informational (not gated)");
    CHECK_CONTAINS(md, "| qkv_split | fuser | yes | ");
    CHECK_CONTAINS(md, "- Gated: the variants fuser,reference can fail the gate");
    CHECK_CONTAINS(md, "**REGRESSION** | launches: kernels 1 -> 2");
    CHECK_CONTAINS(md, "### Regressions");
    CHECK_CONTAINS(md, "missing: not in the run");
    CHECK_CONTAINS(md, "real_time per repetition");
    free(md);

    f = tmpfile();
    CHECK(gate_write_json(f, &rep, &run, &base, &opt) == 0);
    char *js = tu_read_stream(f, NULL);
    fclose(f);
    cJSON *j = cJSON_Parse(js);
    CHECK(j != NULL);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "regressed")));
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(j, "schema")->valuestring, "fusebench-gate/1") == 0);
    const cJSON *cases = cJSON_GetObjectItemCaseSensitive(j, "cases");
    CHECK(cJSON_GetArraySize(cases) == (int)rep.n);
    const cJSON *c0 = cJSON_GetArrayItem(cases, 0);
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(c0, "verdict")->valuestring, "REGRESSION") == 0);
    CHECK(strcmp(cJSON_GetObjectItemCaseSensitive(c0, "timing")->valuestring, "SLOWER") == 0);
    CHECK(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(c0, "kernels"), 1)->valuedouble == 2);
    const cJSON *counts = cJSON_GetObjectItemCaseSensitive(j, "counts");
    CHECK(cJSON_GetObjectItemCaseSensitive(counts, "SLOWER")->valuedouble == 2);
    CHECK(cJSON_GetObjectItemCaseSensitive(counts, "REGRESSION")->valuedouble == 2);
    const cJSON *last = cJSON_GetArrayItem(cases, cJSON_GetArraySize(cases) - 1);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(last, "run_median_us")));
    cJSON_Delete(j);
    free(js);

    f = tmpfile();
    CHECK(gate_write_tsv(f, &rep) == 0);
    char *tsv = tu_read_stream(f, NULL);
    fclose(f);
    int lines = 0;
    for (char *p = tsv; p && *p; p++) lines += *p == '\n';
    CHECK(lines == (int)rep.n + 1);
    CHECK_CONTAINS(tsv, "qkv_split/fwd/fuser/bf16/12x1024x768\tREGRESSION\tSLOWER\tlaunches\t");
    free(tsv);
    done(&rep, &run, &base);
}

int main(void)
{
    test_gated_and_ambiguous();
    test_gb_forms();
    test_aa();
    test_slowdown();
    test_threshold();
    test_counts();
    test_failed_missing_unknown();
    test_units_and_sources();
    test_bad_input();
    test_reports();
    return check_finish("test_gate_decide");
}
