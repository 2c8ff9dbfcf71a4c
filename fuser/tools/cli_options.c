/* cli_options.c -- the `fuser` command line: usage texts and option parsing. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ------------------------------------------------------------ usage */

static const char *const usage_main =
    "usage: fuser COMMAND FILE [options]\n"
    "\n"
    "Commands:\n"
    "  check FILE [--set NAME=VALUE]...   parse, build and verify a fusion file\n"
    "  print FILE [--set NAME=VALUE]...   print the canonical program text (the built\n"
    "                                     fusion when --set is given)\n"
    "  run FILE [options]                 run a fusion on the CPU interpreter or the GPU\n"
    "  plan FILE [options]                split a fusion into GPU kernels, compile them\n"
    "                                     (NVRTC) and report each kernel\n"
    "  codegen FILE [options]             print the generated CUDA C of every kernel\n"
    "  help [COMMAND]                     this text, or a command's\n"
    "\n"
    "Options:\n"
    "  -h, --help                         show usage (also after a command)\n"
    "  --version                          the version\n"
    "\n"
    "Run 'fuser COMMAND --help' for a command's options. Every error exits 2.\n";

static const char *const usage_check =
    "usage: fuser check FILE [--set NAME=VALUE]...\n"
    "\n"
    "Parses FILE, binds its parameters, builds and verifies the fusion, and prints\n"
    "  ok: fusion 'NAME': N inputs, M ops, K outputs\n"
    "\n"
    "Options:\n"
    "  --set NAME=VALUE   bind a parameter (an integer, or a dtype for a dtype\n"
    "                     parameter); repeatable, or NAME=VALUE,NAME=VALUE; the\n"
    "                     others keep their defaults\n"
    "  -h, --help         show this help\n";

static const char *const usage_print =
    "usage: fuser print FILE [--set NAME=VALUE]...\n"
    "\n"
    "Prints the canonical text of the program in FILE. With --set, binds the\n"
    "parameters and prints the built fusion instead (every size a number).\n"
    "\n"
    "Options:\n"
    "  --set NAME=VALUE   bind a parameter; repeatable, or NAME=VALUE,NAME=VALUE\n"
    "  -h, --help         show this help\n";

static const char *const usage_run =
    "usage: fuser run FILE [--set NAME=VALUE]... [--input NAME=PATH.npy]...\n"
    "                      [--output NAME=PATH.npy]... [--seed N] [--device cpu|gpu]\n"
    "                      [--check] [--scatter deterministic|atomic]\n"
    "\n"
    "Runs the fusion in FILE and prints one line per output:\n"
    "  NAME: DTYPE[SHAPE] sum=S absmax=A first=X\n"
    "With --check (GPU only), then one line per output comparing the GPU with the\n"
    "CPU interpreter on the same inputs:\n"
    "  NAME: max_rel_error=E        max|gpu - cpu| / max|cpu| (float outputs)\n"
    "  NAME: mismatches=N           elements that differ (integer and bool outputs)\n"
    "\n"
    "Options:\n"
    "  --set NAME=VALUE        bind a parameter; repeatable, or NAME=VALUE,NAME=VALUE\n"
    "  --input NAME=PATH.npy   read input NAME from a .npy file; its shape must be the\n"
    "                          declared one; float data converts to any float dtype,\n"
    "                          int data to any int dtype; repeatable. Inputs not\n"
    "                          given are random (see --seed)\n"
    "  --output NAME=PATH.npy  write output NAME to a .npy file (bf16 as f32); an\n"
    "                          input's name writes that input as the run had it\n"
    "                          (random or read); repeatable; nothing is written\n"
    "                          unless the run succeeds\n"
    "  --seed N                seed of the random inputs (default 0): normal(0,1) floats,\n"
    "                          valid indices for index inputs, [0,10) for other ints\n"
    "  --device cpu|gpu        where to run (default cpu: the reference interpreter;\n"
    "                          gpu: the fuser's kernels, an error where there is no GPU)\n"
    "  --check                 with --device gpu: also run the interpreter and compare\n"
    "  --scatter MODE          GPU scatter (index_add, embedding backward): deterministic\n"
    "                          (default; bit-identical run to run) or atomic (the output\n"
    "                          is zeroed, then atomic adds)\n"
    "  -h, --help              show this help\n";

static const char *const usage_plan =
    "usage: fuser plan FILE [--set NAME=VALUE]... [--json] [--scatter deterministic|atomic]\n"
    "\n"
    "Splits the fusion in FILE into GPU kernels and prints the plan: each kernel's\n"
    "scheduler, launch configuration and ops. Then compiles every kernel with NVRTC\n"
    "(through the disk cache) and reports, per kernel, the NVRTC time or a cache\n"
    "hit and, with a GPU, the registers and local (spill) bytes per thread; and the\n"
    "total time until the plan is ready to launch. Works without a GPU (the plan\n"
    "is then made for 132 SMs and compiled for sm_90, or $FUSER_ARCH).\n"
    "\n"
    "Options:\n"
    "  --set NAME=VALUE   bind a parameter; repeatable, or NAME=VALUE,NAME=VALUE\n"
    "  --json             print one JSON object instead: the plan, with per kernel\n"
    "                     \"compile_ms\", \"cache_hit\", \"registers\", \"local_bytes\"\n"
    "                     (null without a GPU), and \"ready_ms\", \"nvrtc_calls\",\n"
    "                     \"cache_hits\", \"device\", \"arch\", \"sm_count\", \"scatter\"\n"
    "  --scatter MODE     deterministic (default) or atomic (see 'fuser run --help')\n"
    "  -h, --help         show this help\n";

static const char *const usage_codegen =
    "usage: fuser codegen FILE [--set NAME=VALUE]... [--scatter deterministic|atomic]\n"
    "\n"
    "Plans the fusion in FILE as 'fuser plan' does and prints the generated CUDA C\n"
    "of every kernel, each after a line\n"
    "  // ==== kernel I: NAME ====\n"
    "\n"
    "Options:\n"
    "  --set NAME=VALUE   bind a parameter; repeatable, or NAME=VALUE,NAME=VALUE\n"
    "  --scatter MODE     deterministic (default) or atomic\n"
    "  -h, --help         show this help\n";

const char *cli_command_name(cli_command c)
{
    switch (c) {
    case CLI_CMD_CHECK: return "check";
    case CLI_CMD_PRINT: return "print";
    case CLI_CMD_RUN: return "run";
    case CLI_CMD_PLAN: return "plan";
    case CLI_CMD_CODEGEN: return "codegen";
    default: return "";
    }
}

void cli_print_usage(FILE *fp, cli_command c)
{
    switch (c) {
    case CLI_CMD_CHECK: fputs(usage_check, fp); break;
    case CLI_CMD_PRINT: fputs(usage_print, fp); break;
    case CLI_CMD_RUN: fputs(usage_run, fp); break;
    case CLI_CMD_PLAN: fputs(usage_plan, fp); break;
    case CLI_CMD_CODEGEN: fputs(usage_codegen, fp); break;
    default: fputs(usage_main, fp); break;
    }
}

/* ------------------------------------------------------------ option table */

typedef enum opt_id {
    OPT_HELP,
    OPT_SET,
    OPT_INPUT,
    OPT_OUTPUT,
    OPT_SEED,
    OPT_DEVICE,
    OPT_CHECK,
    OPT_JSON,
    OPT_SCATTER
} opt_id;

#define FOR_CHECK (1u << CLI_CMD_CHECK)
#define FOR_PRINT (1u << CLI_CMD_PRINT)
#define FOR_RUN (1u << CLI_CMD_RUN)
#define FOR_PLAN (1u << CLI_CMD_PLAN)
#define FOR_CODEGEN (1u << CLI_CMD_CODEGEN)
#define FOR_ALL (FOR_CHECK | FOR_PRINT | FOR_RUN | FOR_PLAN | FOR_CODEGEN)

typedef struct opt_def {
    const char *name;
    opt_id id;
    bool takes_value;
    unsigned commands; /* bit set of cli_command */
} opt_def;

static const opt_def opt_defs[] = {
    {"--help", OPT_HELP, false, FOR_ALL},
    {"-h", OPT_HELP, false, FOR_ALL},
    {"--set", OPT_SET, true, FOR_ALL},
    {"--input", OPT_INPUT, true, FOR_RUN},
    {"--output", OPT_OUTPUT, true, FOR_RUN},
    {"--seed", OPT_SEED, true, FOR_RUN},
    {"--device", OPT_DEVICE, true, FOR_RUN},
    {"--check", OPT_CHECK, false, FOR_RUN},
    {"--json", OPT_JSON, false, FOR_PLAN},
    {"--scatter", OPT_SCATTER, true, FOR_RUN | FOR_PLAN | FOR_CODEGEN},
};

static bool is_help(const char *a) { return strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0; }

static bool command_from_name(const char *s, cli_command *out)
{
    for (cli_command c = CLI_CMD_CHECK; c <= CLI_CMD_LAST; c++)
        if (strcmp(s, cli_command_name(c)) == 0) {
            *out = c;
            return true;
        }
    return false;
}

/* ------------------------------------------------------------ values */

static fu_status parse_seed(const char *s, uint64_t *out, fu_error *err)
{
    uint64_t v = 0;
    if (!*s) return fu_error_set(err, FU_ERR_ARG, "bad --seed '': expected a non-negative integer");
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return fu_error_set(err, FU_ERR_ARG, "bad --seed '%s': expected a non-negative integer", s);
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return fu_error_set(err, FU_ERR_ARG, "bad --seed '%s': larger than 2^64-1", s);
        v = v * 10 + d;
    }
    *out = v;
    return FU_OK;
}

static fu_status parse_device(const char *s, cli_device *out, fu_error *err)
{
    if (strcmp(s, "cpu") == 0) *out = CLI_DEVICE_CPU;
    else if (strcmp(s, "gpu") == 0) *out = CLI_DEVICE_GPU;
    else return fu_error_set(err, FU_ERR_ARG, "bad --device '%s': expected cpu or gpu", s);
    return FU_OK;
}

static fu_status parse_scatter(const char *s, fu_scatter_mode *out, fu_error *err)
{
    if (strcmp(s, "deterministic") == 0) *out = FU_SCATTER_DETERMINISTIC;
    else if (strcmp(s, "atomic") == 0) *out = FU_SCATTER_ATOMIC;
    else return fu_error_set(err, FU_ERR_ARG, "bad --scatter '%s': expected deterministic or atomic", s);
    return FU_OK;
}

/* Splits NAME=VALUE into a copy owned by o. */
static fu_status split_binding(cli_options *o, const char *opt, const char *arg, const char **name,
                               const char **value, fu_error *err)
{
    const char *what = strcmp(opt, "--set") == 0 ? "NAME=VALUE" : "NAME=PATH";
    const char *eq = strchr(arg, '=');
    if (!eq) return fu_error_set(err, FU_ERR_ARG, "bad %s '%s': expected %s", opt, arg, what);
    if (eq == arg) return fu_error_set(err, FU_ERR_ARG, "bad %s '%s': the NAME is empty", opt, arg);
    if (!eq[1]) return fu_error_set(err, FU_ERR_ARG, "bad %s '%s': nothing after '='", opt, arg);
    size_t len = strlen(arg) + 1;
    char *copy = malloc(len);
    if (!copy) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    memcpy(copy, arg, len);
    o->owned[o->nowned++] = copy;
    copy[eq - arg] = '\0';
    *name = copy;
    *value = copy + (eq - arg) + 1;
    return FU_OK;
}

static fu_status add_one_set(cli_options *o, const char *arg, fu_error *err)
{
    const char *name, *value;
    fu_status s = split_binding(o, "--set", arg, &name, &value, err);
    if (s) return s;
    for (int i = 0; i < o->nsets; i++)
        if (strcmp(o->sets[i].name, name) == 0)
            return fu_error_set(err, FU_ERR_ARG, "--set %s is given twice", name);
    o->sets[o->nsets].name = name;
    o->sets[o->nsets].value = value;
    o->nsets++;
    return FU_OK;
}

/* --set N=4 or --set N=4,V=7 (run_suite's --sizes form): each binding of the list. */
static fu_status add_set(cli_options *o, const char *arg, fu_error *err)
{
    size_t len = strlen(arg) + 1;
    char *list = malloc(len);
    if (!list) return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    memcpy(list, arg, len);
    fu_status s = FU_OK;
    for (char *item = list, *next; item && s == FU_OK; item = next) {
        next = strchr(item, ',');
        if (next) *next++ = '\0';
        s = add_one_set(o, item, err);
    }
    free(list);
    return s;
}

static fu_status add_binding(cli_options *o, const char *opt, const char *arg, cli_binding *list, int *n,
                             fu_error *err)
{
    const char *name, *path;
    fu_status s = split_binding(o, opt, arg, &name, &path, err);
    if (s) return s;
    for (int i = 0; i < *n; i++) {
        if (strcmp(list[i].name, name) == 0)
            return fu_error_set(err, FU_ERR_ARG, "%s %s is given twice", opt, name);
        if (strcmp(list[i].path, path) == 0)
            return fu_error_set(err, FU_ERR_ARG, "%s: '%s' and '%s' name the same file %s", opt, list[i].name,
                                name, path);
    }
    list[*n].name = name;
    list[*n].path = path;
    (*n)++;
    return FU_OK;
}

static fu_status apply_option(cli_options *o, opt_id id, const char *value, fu_error *err)
{
    switch (id) {
    case OPT_HELP: o->help = true; return FU_OK;
    case OPT_SET: return add_set(o, value, err);
    case OPT_INPUT: return add_binding(o, "--input", value, o->inputs, &o->ninputs, err);
    case OPT_OUTPUT: return add_binding(o, "--output", value, o->outputs, &o->noutputs, err);
    case OPT_SEED: return parse_seed(value, &o->seed, err);
    case OPT_DEVICE: return parse_device(value, &o->device, err);
    case OPT_CHECK: o->check = true; return FU_OK;
    case OPT_JSON: o->json = true; return FU_OK;
    case OPT_SCATTER: return parse_scatter(value, &o->scatter, err);
    }
    return FU_OK;
}

/* argv[*i] is an option; consumes its value (inline after '=' or the next
 * argument). */
static fu_status parse_option(cli_options *o, int argc, char **argv, int *i, fu_error *err)
{
    const char *arg = argv[*i];
    const char *cmd = cli_command_name(o->command);
    const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
    size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
    const opt_def *def = NULL;
    for (size_t k = 0; k < sizeof opt_defs / sizeof opt_defs[0]; k++)
        if (strlen(opt_defs[k].name) == len && strncmp(opt_defs[k].name, arg, len) == 0) def = &opt_defs[k];
    if (!def || !(def->commands & (1u << o->command)))
        return fu_error_set(err, FU_ERR_ARG, "%s: unknown option '%.*s' (see 'fuser %s --help')", cmd, (int)len,
                            arg, cmd);
    if (!def->takes_value) {
        if (eq) return fu_error_set(err, FU_ERR_ARG, "%s: option '%s' takes no value", cmd, def->name);
        return apply_option(o, def->id, NULL, err);
    }
    const char *value;
    if (eq) {
        value = eq + 1;
    } else {
        if (*i + 1 >= argc)
            return fu_error_set(err, FU_ERR_ARG, "%s: option '%s' needs a value (see 'fuser %s --help')", cmd,
                                def->name, cmd);
        value = argv[++*i];
    }
    return apply_option(o, def->id, value, err);
}

static fu_status alloc_lists(cli_options *o, int argc, char **argv, fu_error *err)
{
    size_t n = (size_t)argc, nsets = n; /* a --set list binds one more a comma */
    for (int i = 0; i < argc; i++)
        for (const char *c = argv[i]; (c = strchr(c, ',')) != NULL; c++) nsets++;
    o->sets = calloc(nsets, sizeof *o->sets);
    o->inputs = calloc(n, sizeof *o->inputs);
    o->outputs = calloc(n, sizeof *o->outputs);
    o->owned = calloc(nsets, sizeof *o->owned); /* a copy of each binding */
    if (!o->sets || !o->inputs || !o->outputs || !o->owned)
        return fu_error_set(err, FU_ERR_NOMEM, "out of memory");
    return FU_OK;
}

/* `fuser`, `fuser --help`, `fuser help [COMMAND]`, `fuser COMMAND ...`. */
static fu_status parse_command(int argc, char **argv, cli_options *o, fu_error *err)
{
    if (argc < 2)
        return fu_error_set(err, FU_ERR_ARG,
                            "missing command: check, print, plan, codegen or run (see 'fuser --help')");
    const char *first = argv[1];
    if (is_help(first)) {
        o->help = true;
        return FU_OK;
    }
    if (strcmp(first, "help") == 0) {
        o->help = true;
        if (argc > 2 && !command_from_name(argv[2], &o->command))
            return fu_error_set(err, FU_ERR_ARG,
                                "help: unknown command '%s' (expected check, print, plan, codegen or run)", argv[2]);
        return FU_OK;
    }
    if (first[0] == '-')
        return fu_error_set(err, FU_ERR_ARG, "unknown option '%s' (a command comes first; see 'fuser --help')",
                            first);
    if (!command_from_name(first, &o->command))
        return fu_error_set(err, FU_ERR_ARG, "unknown command '%s' (expected check, print, plan, codegen or run)",
                            first);
    return FU_OK;
}

fu_status cli_parse(int argc, char **argv, cli_options *o, fu_error *err)
{
    memset(o, 0, sizeof *o);
    fu_status s = parse_command(argc, argv, o, err);
    if (s || o->help) return s;
    s = alloc_lists(o, argc, argv, err);
    if (s) return s;
    const char *cmd = cli_command_name(o->command);
    bool options_done = false;
    for (int i = 2; i < argc; i++) {
        const char *arg = argv[i];
        if (!options_done && strcmp(arg, "--") == 0) {
            options_done = true;
        } else if (!options_done && arg[0] == '-' && arg[1] != '\0') {
            s = parse_option(o, argc, argv, &i, err);
            if (s) return s;
            if (o->help) return FU_OK;
        } else if (o->file) {
            return fu_error_set(err, FU_ERR_ARG, "%s: unexpected argument '%s' (one FILE only)", cmd, arg);
        } else {
            o->file = arg;
        }
    }
    if (!o->file) return fu_error_set(err, FU_ERR_ARG, "%s: missing FILE (see 'fuser %s --help')", cmd, cmd);
    if (o->check && o->device != CLI_DEVICE_GPU)
        return fu_error_set(err, FU_ERR_ARG,
                            "%s: --check compares a GPU run with the interpreter; it needs --device gpu", cmd);
    return FU_OK;
}

void cli_options_free(cli_options *o)
{
    for (int i = 0; i < o->nowned; i++) free(o->owned[i]);
    free(o->owned);
    free(o->sets);
    free(o->inputs);
    free(o->outputs);
    memset(o, 0, sizeof *o);
}
