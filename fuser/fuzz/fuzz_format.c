/*
 * fuzz_format.c -- the text format: parse, build, both printers, and the
 * properties of docs/format.md ("Canonical printing"):
 *   - print(parse(t)) parses, and is a fixed point of print(parse(.));
 *   - it builds the same as t (same status; the same fusion print);
 *   - fu_fusion_print of a built fusion parses back to a fusion that prints
 *     identically.
 * Seeds: fuser/fuzz/corpus/format (the repository's .fusion files).
 */
#include "fuser.h"
#include "fuzz_common.h"

/* Builds p with its defaults; the fusion print (malloc'd) or NULL, status in *s. */
static char *build_print(const fu_program *p, fu_status *s)
{
    fu_fusion *f = NULL;
    fu_error err;
    *s = fu_program_build(p, NULL, 0, &f, &err);
    char *text = NULL;
    if (*s == FU_OK) {
        text = fu_fusion_print(f);
        FUZZ_REQUIRE(text != NULL, "fu_fusion_print failed");
    }
    fu_fusion_free(f);
    return text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16) return 0; /* a fusion file is small; longer inputs only slow the search */
    char *text = fuzz_text(data, size);
    fu_program *p = NULL;
    fu_error err;
    if (fu_program_parse(text, "fuzz.fusion", &p, &err) != FU_OK) {
        free(text);
        return 0;
    }
    char *c1 = fu_program_print(p);
    FUZZ_REQUIRE(c1 != NULL, "fu_program_print failed");
    fu_program *q = NULL;
    FUZZ_REQUIRE(fu_program_parse(c1, "printed.fusion", &q, &err) == FU_OK, "the canonical print does not parse: %s\n%s",
                 err.message, c1);
    char *c2 = fu_program_print(q);
    FUZZ_REQUIRE(c2 && strcmp(c1, c2) == 0, "print(parse(.)) is not a fixed point:\n%s\n----\n%s", c1, c2 ? c2 : "");

    fu_status s1, s2;
    char *f1 = build_print(p, &s1), *f2 = build_print(q, &s2);
    FUZZ_REQUIRE(s1 == s2, "the print builds with status %d, the source with %d\n%s", (int)s2, (int)s1, c1);
    if (f1) {
        FUZZ_REQUIRE(strcmp(f1, f2) == 0, "the print builds another fusion:\n%s\n----\n%s", f1, f2);
        /* the concrete print parses back and prints identically */
        fu_program *r = NULL;
        FUZZ_REQUIRE(fu_program_parse(f1, "concrete.fusion", &r, &err) == FU_OK, "the fusion print does not parse: %s\n%s",
                     err.message, f1);
        fu_status s3;
        char *f3 = build_print(r, &s3);
        FUZZ_REQUIRE(s3 == FU_OK && strcmp(f1, f3) == 0, "the fusion print does not round-trip:\n%s\n----\n%s", f1,
                     f3 ? f3 : err.message);
        free(f3);
        fu_program_free(r);
    }
    free(f1);
    free(f2);
    free(c2);
    fu_program_free(q);
    free(c1);
    fu_program_free(p);
    free(text);
    return 0;
}
