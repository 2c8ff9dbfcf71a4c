/*
 * fuser_main.c -- the `fuser` command: check, print, plan, compile and run
 * fusion files.
 *
 *   fuser check FILE [--set NAME=VALUE]...
 *   fuser print FILE [--set NAME=VALUE]...
 *   fuser run FILE [--set ...] [--input NAME=PATH] [--output NAME=PATH] [--seed N] [--device cpu|gpu]
 *             [--check] [--scatter deterministic|atomic]
 *   fuser plan FILE [--set ...] [--json] [--scatter deterministic|atomic]
 *   fuser codegen FILE [--set ...] [--scatter deterministic|atomic]
 *
 * Options are parsed in cli_options.c, `run` lives in cli_run.c, `plan` and
 * `codegen` in cli_plan.c. Every error
 * prints "fuser: MESSAGE" on stderr and exits 2; success exits 0.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

fu_status cli_load(const cli_options *o, bool want_fusion, fu_program **prog, fu_fusion **fusion,
                   fu_error *err)
{
    *prog = NULL;
    if (fusion) *fusion = NULL;
    fu_status s = fu_program_parse_file(o->file, prog, err);
    if (s) {
        *prog = NULL;
        return s;
    }
    if (!want_fusion) return FU_OK;
    s = fu_program_build(*prog, o->sets, o->nsets, fusion, err);
    if (s) {
        *fusion = NULL;
        return s;
    }
    return fu_fusion_verify(*fusion, err);
}

static fu_status cmd_check(const cli_options *o, fu_error *err)
{
    fu_program *p;
    fu_fusion *f;
    fu_status s = cli_load(o, true, &p, &f, err);
    if (!s)
        printf("ok: fusion '%s': %d inputs, %d ops, %d outputs\n", fu_fusion_name(f), fu_fusion_num_inputs(f),
               fu_fusion_num_ops(f), fu_fusion_num_outputs(f));
    if (f) fu_fusion_free(f);
    if (p) fu_program_free(p);
    return s;
}

/* The program text as written (canonically), or with --set the built fusion. */
static fu_status cmd_print(const cli_options *o, fu_error *err)
{
    fu_program *p;
    fu_fusion *f = NULL;
    bool built = o->nsets > 0;
    fu_status s = cli_load(o, built, &p, built ? &f : NULL, err);
    if (!s) {
        char *text = built ? fu_fusion_print(f) : fu_program_print(p);
        if (!text) {
            s = fu_error_set(err, FU_ERR_NOMEM, "out of memory printing %s", o->file);
        } else {
            size_t n = strlen(text);
            fputs(text, stdout);
            if (n == 0 || text[n - 1] != '\n') putchar('\n');
            free(text);
        }
    }
    if (f) fu_fusion_free(f);
    if (p) fu_program_free(p);
    return s;
}

static fu_status dispatch(const cli_options *o, fu_error *err)
{
    switch (o->command) {
    case CLI_CMD_CHECK: return cmd_check(o, err);
    case CLI_CMD_PRINT: return cmd_print(o, err);
    case CLI_CMD_RUN: return cli_cmd_run(o, err);
    case CLI_CMD_PLAN: return cli_cmd_plan(o, err);
    case CLI_CMD_CODEGEN: return cli_cmd_codegen(o, err);
    default: return fu_error_set(err, FU_ERR_ARG, "missing command (see 'fuser --help')");
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("fuser (fusebench) %s\n", FUSEBENCH_VERSION);
        return 0;
    }
    cli_options o;
    fu_error err;
    memset(&err, 0, sizeof err);
    fu_status s = cli_parse(argc, argv, &o, &err);
    if (!s && o.help) {
        cli_print_usage(stdout, o.command);
    } else if (!s) {
        s = dispatch(&o, &err);
    }
    cli_options_free(&o);
    if (!s && (fflush(stdout) != 0 || ferror(stdout)))
        s = fu_error_set(&err, FU_ERR_IO, "cannot write to standard output");
    if (s) {
        fprintf(stderr, "fuser: %s\n", err.message[0] ? err.message : fu_status_name(s));
        return CLI_EXIT_ERROR;
    }
    return CLI_EXIT_OK;
}
