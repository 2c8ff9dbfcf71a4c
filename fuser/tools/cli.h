/*
 * cli.h -- the `fuser` command's pieces: the parsed options (cli_options.c),
 * the subcommands (fuser_main.c: check, print; cli_run.c: run; cli_plan.c:
 * plan, codegen, and the runtime they share with run). Only the fuser's
 * public headers (fuser/include) are used here.
 *
 * Every failure is reported through a fu_error; main() prints it as
 * "fuser: MESSAGE" on stderr and exits 2. Success exits 0.
 */
#ifndef FUSER_CLI_H
#define FUSER_CLI_H

#include <stdio.h>

#include "fuser.h"
#include "fuser_exec.h"
#include "fuser_plan.h"
#include "fuser_runtime.h"

#define CLI_EXIT_OK 0
#define CLI_EXIT_ERROR 2

typedef enum cli_command {
    CLI_CMD_NONE = 0, /* `fuser --help` */
    CLI_CMD_CHECK,
    CLI_CMD_PRINT,
    CLI_CMD_RUN,
    CLI_CMD_PLAN,
    CLI_CMD_CODEGEN,
} cli_command;
#define CLI_CMD_LAST CLI_CMD_CODEGEN

typedef enum cli_device {
    CLI_DEVICE_CPU = 0,
    CLI_DEVICE_GPU,
} cli_device;

/* NAME=PATH of --input / --output. */
typedef struct cli_binding {
    const char *name;
    const char *path;
} cli_binding;

typedef struct cli_options {
    cli_command command;
    bool help;          /* --help / -h: print the usage and exit 0 */
    const char *file;   /* the fusion file */
    fu_param_value *sets; /* --set NAME=VALUE */
    int nsets;
    cli_binding *inputs; /* --input NAME=PATH */
    int ninputs;
    cli_binding *outputs; /* --output NAME=PATH */
    int noutputs;
    uint64_t seed;       /* --seed N, default 0 */
    cli_device device;   /* --device cpu|gpu, default cpu */
    bool check;          /* run --check: compare the GPU with the interpreter */
    bool json;           /* plan --json */
    fu_scatter_mode scatter; /* --scatter deterministic|atomic (plan, codegen, run) */
    char **owned;        /* copies of split NAME=VALUE arguments */
    int nowned;
} cli_options;

/* Parses argv into o (zeroed first). On error fills err (FU_ERR_ARG); o must
 * be freed with cli_options_free either way. */
fu_status cli_parse(int argc, char **argv, cli_options *o, fu_error *err);
void cli_options_free(cli_options *o);

const char *cli_command_name(cli_command c);
/* The usage text of a command (CLI_CMD_NONE: the whole tool). */
void cli_print_usage(FILE *fp, cli_command c);

/* Parses the file and binds --set: *prog always, *fusion when want_fusion. */
fu_status cli_load(const cli_options *o, bool want_fusion, fu_program **prog, fu_fusion **fusion,
                   fu_error *err);

fu_status cli_cmd_run(const cli_options *o, fu_error *err);
fu_status cli_cmd_plan(const cli_options *o, fu_error *err);
fu_status cli_cmd_codegen(const cli_options *o, fu_error *err);

/* The runtime with default options (the device if there is one, else
 * compile-only). */
fu_status cli_open_runtime(fu_runtime **rt, fu_error *err);

#endif
