/*
 * suite.h -- suites, cases, variants and the runner that checks and times them.
 *
 * A suite is a folder with a manifest (suite.txt, docs/suites.md): its axes
 * (a size is numbers joined by 'x', one per axis), dtypes, and cases (fwd,
 * bwd, ...). A case is a fusion file with parameters bound from the size and
 * dtype, and plan options; its bytes come from the fusion
 * (fu_fusion_min_bytes). A variant is one way of computing a case: the
 * fuser today; hand-written reference kernels (compiled with NVRTC through the
 * runtime) later. Every variant of a case runs on the same device inputs, is
 * checked against the CPU interpreter, and is timed by the same method. Rows
 * measured elsewhere (PyTorch eager and torch.compile, from a Python script's
 * JSON) are run entries (hb_entry) merged into the run file, not variants.
 *
 * One benchmark, an item, is suite/case/variant/dtype/size.
 */
#ifndef FUSEBENCH_SUITE_H
#define FUSEBENCH_SUITE_H

#include "fuser_plan.h"
#include "harness.h"

#define HB_MAX_DIMS 8   /* axes of a suite; a fusion file's size parameters */
#define HB_MAX_PARAMS 16

typedef struct hb_size {
    int n;
    int64_t d[HB_MAX_DIMS];
} hb_size;

/* "8192x32768"; the text of a size. */
void hb_size_str(const hb_size *s, char *out, size_t cap);
/* Parses "8192x32768,4096x50304" (ndims numbers each, every one >= 1 and
 * below 2^40, their product at most 2^58). false and why when malformed.
 * *out is malloc'd. */
bool hb_parse_sizes(const char *text, int ndims, hb_size **out, int *n, char *why, size_t nwhy);
/* Parses "f32,bf16": the dtypes the suites take (the float ones: f32, bf16, f16, f64). */
bool hb_parse_dtypes(const char *text, fu_dtype *out, int cap, int *n, char *why, size_t nwhy);

/* --set overrides for a fusion file. */
typedef struct hb_params {
    int n;
    fu_param_value v[HB_MAX_PARAMS];
    char names[HB_MAX_PARAMS][HB_NAME_MAX];
    char values[HB_MAX_PARAMS][32];
} hb_params;
void hb_params_int(hb_params *p, const char *name, int64_t value);
void hb_params_str(hb_params *p, const char *name, const char *value);

/* ------------------------------------------------------------ suites as folders
 *
 * A suite is a folder with a manifest (HB_MANIFEST, the language is
 * docs/suites.md) and its .fusion files; manifest.c reads it. A case is a
 * fusion file plus plan options; a size is one number per axis; each axis
 * binds the fusion parameter of its name, or the 'let' names built from the
 * axes do. */
#define HB_MANIFEST "suite.txt"
#define HB_MAX_LETS 8

typedef struct hb_case {
    char name[HB_NAME_MAX];       /* "fwd"; a fusion file's: its fusion line */
    char fusion_file[1024];       /* path of the file */
    char file_name[128];          /* as the manifest names it */
    fu_program *prog;             /* the parsed file */
    fu_scatter_mode scatter;      /* plan option (embedding backward) */
    bool scatter_named;           /* the manifest names the mode (PyTorch's deterministic mode follows it) */
    char reference[32];           /* the reference kernel family, "" = none */
    char reference_file[1100];    /* its source: the suite folder's reference.cu */
    int manifest_line;
} hb_case;

typedef struct hb_let {
    char name[16];
    char expr[192];
    int line;
} hb_let;

typedef struct hb_require {
    char expr[192];
    char message[256];
} hb_require;

typedef struct hb_check {
    int axis;                     /* the interpreter's size: axis = min(axis, expr) */
    char expr[192];
} hb_check;

typedef struct hb_suite {
    char name[HB_NAME_MAX];       /* a fusion file's: its file name */
    char dir[1024];
    char manifest[1100];          /* the manifest's path (the file, for one fusion file) */
    bool from_file;               /* made from one .fusion file */
    int ndims;
    char axes[HB_MAX_DIMS][HB_NAME_MAX];
    int axis_col[HB_MAX_DIMS];
    int size_line;
    char about[128];
    char size_help[768];          /* "NxV (rows x vocabulary), e.g. 8192x32768" */
    char default_sizes[1024];
    char sweep_sizes[1024];
    char dtype_param[HB_NAME_MAX]; /* "DT"; "" = none */
    char default_dtypes[64];
    int nlets, nrequires, nchecks;
    hb_let lets[HB_MAX_LETS];
    hb_require requires[HB_MAX_LETS];
    hb_check checks[HB_MAX_DIMS * 2];
    int spot_axis;                /* rows checked at full size along this axis; -1 none */
    hb_case *cases;
    int ncases;
} hb_suite;

/* Reads dir/suite.txt and parses its fusion files. false and why
 * ("FILE:LINE:COL: ...") on any error. */
bool hb_suite_load(const char *dir, hb_suite **out, char *why, size_t nwhy);
/* A suite of one fusion file: its integer parameters (with plain number
 * defaults) are the axes, its first dtype parameter the dtype. */
bool hb_suite_from_fusion(const char *path, hb_suite **out, char *why, size_t nwhy);
void hb_suite_free(hb_suite *s);

typedef struct hb_suite_set {
    hb_suite **suites;            /* by folder name */
    int n;
} hb_suite_set;
/* Every folder of root with a manifest. false and why on the first error. */
bool hb_suites_discover(const char *root, hb_suite_set *set, char *why, size_t nwhy);
const hb_suite *hb_suite_set_find(const hb_suite_set *set, const char *name);
void hb_suite_set_free(hb_suite_set *set);

/* Sizes as "8192x32768,4096x50304" or "N=4096,V=50304;N=8192" (axes not
 * named: from the first default size). */
bool hb_suite_parse_sizes(const hb_suite *s, const char *text, hb_size **out, int *n, char *why, size_t nwhy);
/* The parameters of case c at size sz and dtype dt (axes, lets, the dtype
 * parameter, those c's file has). false and why when a 'require' fails. */
bool hb_suite_bind(const hb_suite *s, const hb_case *c, const hb_size *sz, fu_dtype dt, hb_params *out, char *why,
                   size_t nwhy);
/* The smaller size the CPU interpreter checks (the 'check' lines). */
bool hb_suite_check_size(const hb_suite *s, const hb_size *sz, hb_size *out, char *why, size_t nwhy);

/* ---- for checks and variants (suites.c) ---- */
/* Position of the input / output called name, or -1. */
int hb_input_index(const fu_fusion *f, const char *name);
int hb_output_index(const fu_fusion *f, const char *name);
#define HB_SPOT_ROWS 8
/* Up to HB_SPOT_ROWS distinct rows of n: the first, the last, and random ones. */
int hb_spot_rows(int64_t n, uint64_t seed, int64_t *rows);
/* got against ref (n values of an output of dtype dt) with hb_tolerance;
 * false and why (naming `what`) when they differ. */
bool hb_spot_compare(const double *got, const double *ref, int64_t n, fu_dtype dt, const char *what, char *why,
                     size_t nwhy);

/* The whole text file at path (malloc'd, NUL-terminated), or NULL and why. */
char *hb_read_text_file(const char *path, char *why, size_t nwhy);

/* A case's fusion at one size and dtype: the suite's parameters bound into
 * the case's parsed file, built and verified. On error *out is NULL. */
fu_status hb_build_case(const hb_suite *s, const hb_case *c, const hb_size *size, fu_dtype dt, fu_fusion **out,
                        fu_error *err);

/* ------------------------------------------------------------ variants */

/* What a variant planned for one fusion (before anything runs). */
typedef struct hb_variant_info {
    int segments;                 /* kernels the fuser planned (0 for other variants) */
    int kernels, memsets, copies; /* launches one call makes, as planned */
    int compiled;                 /* kernels compiled */
    int cache_hits;               /* of those, from the disk cache */
    double compile_ms;            /* NVRTC time */
    char detail[256];             /* e.g. the schedulers */
    /* kernel_source_hash: the identity of what runs (the kernels' source and launch
     * configuration), so the gate can tell byte-identical kernels across commits; "" = none */
    char source_hash[17];
} hb_variant_info;

/* 64-bit FNV-1a of text, chained from h (start with HB_HASH_INIT): an identity for
 * kernel_source_hash, not a cryptographic digest. */
#define HB_HASH_INIT 0xcbf29ce484222325ull
uint64_t hb_hash_text(uint64_t h, const char *text);
/* h as 16 hex digits into out (17 bytes). */
void hb_hash_hex(uint64_t h, char out[17]);

/*
 * A variant: how one case is computed. Inputs and outputs are device buffers
 * in the order of the case fusion's inputs and outputs (dense, row-major).
 */
typedef struct hb_variant {
    const char *name;             /* "fuser", "reference" */
    /* Plans and compiles for fusion f (the case at some size). Without a
     * device it compiles only. */
    fu_status (*prepare)(fu_runtime *rt, const fu_fusion *f, const hb_case *c, void **state,
                         hb_variant_info *info, fu_error *err);
    /* Enqueues one call on the runtime's stream. */
    fu_status (*run)(void *state, const fu_devptr *inputs, const fu_devptr *outputs, fu_error *err);
    /* Waits for the calls made so far and reports an error they left (an index
     * out of range, say). May be NULL. */
    fu_status (*check)(void *state, fu_error *err);
    /* Launches of the last call as the variant counted them (used when CUPTI
     * is unavailable). May be NULL. */
    void (*launch_counts)(void *state, int *kernels, int *memsets, int *copies);
    void (*free)(void *state);
    /* The case fusion's input whose bytes output i is, returned as a view of it
     * (the runner then passes that input's buffer as the output, and the call
     * writes nothing for it), or -1. May be NULL: no views. */
    int (*output_view)(void *state, int output);
    /* Whether it computes cases of dtype dt (run_suite adds no row where not). May be NULL:
     * every dtype. */
    bool (*takes_dtype)(fu_dtype dt);
} hb_variant;

extern const hb_variant hb_variant_fuser;
extern const hb_variant hb_variant_reference; /* reference/variant_reference.c */

/* Every variant run_suite runs for each case, in order; NULL-terminated. */
extern const hb_variant *const hb_variants[];

/* ------------------------------------------------------------ the runner */

typedef struct hb_runner_options {
    hb_timing_options timing;
    int repetitions;              /* Google Benchmark repetitions per item (3) */
    uint64_t seed;
    bool compile_only;            /* plan and compile, time nothing, even with a GPU */
    /* The interpreter checks the full size when its inputs and outputs hold
     * at most this many elements, else the suite's check size. */
    int64_t check_elements;
    /* fu_random_inputs for full-size timing inputs up to this many elements,
     * hb_fast_random_inputs above. */
    int64_t exact_random_elements;
    int profile_calls;            /* calls recorded by CUPTI per item (5) */
    size_t copy_bytes;            /* copy-bandwidth buffer (1 GiB) */
    FILE *progress;               /* progress lines; NULL = none */
} hb_runner_options;
void hb_runner_options_default(hb_runner_options *o);

typedef struct hb_runner hb_runner;

fu_status hb_runner_new(const hb_runner_options *o, hb_runner **out, fu_error *err);
void hb_runner_free(hb_runner *r);
/* Adds an item (nothing is built yet). */
fu_status hb_runner_add(hb_runner *r, const hb_suite *s, const hb_case *c, const hb_variant *v, fu_dtype dt,
                        const hb_size *size, fu_error *err);
int hb_runner_count(const hb_runner *r);
const char *hb_runner_item_name(const hb_runner *r, int i);
/* Builds, plans and compiles every item with runtime rt (which the runner
 * uses from then on; it must outlive the runner); an item that fails is
 * marked failed (the run goes on). Returns the number of failed items. */
int hb_runner_prepare(hb_runner *r, fu_runtime *rt);
/* Planned launches of item i (after hb_runner_prepare). */
const hb_variant_info *hb_runner_item_info(const hb_runner *r, int i);
/* Checks and times every prepared item through Google Benchmark (gb_flags:
 * its own flags). Needs a device (after hb_runner_prepare). It initializes
 * Google Benchmark and shuts it down, which a process does once
 * (bench_shim.h), so a process calls it at most once. */
fu_status hb_runner_measure(hb_runner *r, const char *argv0, int ngb_flags, char **gb_flags, fu_error *err);
/* The same through g, initialized by the caller (hb_gb_init, which checks
 * the flags early) and freed and shut down by the caller after this returns;
 * argv0 is the context's "executable". */
typedef struct hb_gbench hb_gbench;
fu_status hb_runner_measure_gb(hb_runner *r, hb_gbench *g, const char *argv0, fu_error *err);
/* The run file's context and entries (after prepare or measure). */
void hb_runner_context(hb_runner *r, hb_context *out);
int hb_runner_entries(hb_runner *r, const hb_entry **out);
/* Items whose status is failed. */
int hb_runner_failures(const hb_runner *r);
/* Gives entries measured elsewhere (PyTorch's) the floor this run measured
 * for their byte count: floor_us, and floor_fraction of their time (ok
 * repetitions and time aggregates; left as they are where the run has no
 * floor for their bytes). */
void hb_runner_add_floors(const hb_runner *r, hb_entry *e, int n);
/* The items file of reference/torch_bench.py (its --fusions): every distinct
 * suite/case/dtype/size that was built, with its fusion as fu_fusion_print
 * writes it, its bytes and formula, the index bound of each input, and
 * whether PyTorch runs it in deterministic mode. false on a write error. */
bool hb_runner_write_torch_items(const hb_runner *r, FILE *out);
/* The readable table: one row per item. */
void hb_runner_print_table(const hb_runner *r, FILE *out);
/* The same with rows measured elsewhere (PyTorch's run-file entries: each
 * printed after the items of its suite/case/dtype/size, its time the median
 * of its repetitions), and a "vs compile" column: torch.compile's time over
 * the row's. */
void hb_runner_print_table_with(const hb_runner *r, const hb_entry *extra, int nextra, FILE *out);

#endif
