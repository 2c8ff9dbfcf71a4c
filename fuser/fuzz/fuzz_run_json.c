/*
 * fuzz_run_json.c -- the gate's run-file reader (gate_run_parse) on any
 * bytes; a run it accepts is then compared with itself and reported in every
 * format (Markdown, JSON, TSV) to /dev/null. Seeds: fuser/fuzz/corpus/run_json
 * (cut-down run files).
 */
#include "fuzz_common.h"
#include "gate.h"
#include "report.h"
#include "run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16) return 0;
    char *text = fuzz_text(data, size);
    gate_run run;
    char err[512];
    if (gate_run_parse(&run, text, size, "fuzz.json", err, sizeof err) == 0) {
        gate_options opt;
        gate_options_default(&opt);
        gate_report rep;
        memset(&rep, 0, sizeof rep);
        if (gate_compare(&run, &run, &opt, &rep, err, sizeof err) == 0) {
            FILE *null = fopen("/dev/null", "w");
            if (!null) abort();
            gate_write_markdown(null, &rep, &run, &run, &opt);
            gate_write_json(null, &rep, &run, &run, &opt);
            gate_write_tsv(null, &rep);
            fclose(null);
        }
        gate_report_free(&rep);
    }
    gate_run_free(&run);
    free(text);
    return 0;
}
