/*
 * test_parse.c -- the text format: every kind of parse and build error (with
 * its file:line:column), canonical printing and its round trips over every
 * suites/ file, integer expressions, parameter overrides, positional and
 * keyword attributes, fu_fusion_print, and garbage input.
 */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "fuser.h"
#include "ir.h"

#define HEAD "fusion t\nparam N = 4\ninput a: f32[N, 8]\ninput b: f32[N, 8]\ninput i: i64[N]\n"

/* Parses text as "t.fusion" and builds it; the program is freed here. */
static fu_status parse_build(const char *text, const fu_param_value *ov, int nov, fu_fusion **out, fu_error *err)
{
    fu_program *p = NULL;
    *out = NULL;
    fu_status s = fu_program_parse(text, "t.fusion", &p, err);
    if (s != FU_OK) return s;
    s = fu_program_build(p, ov, nov, out, err);
    fu_program_free(p);
    return s;
}

static void expect_error_ov(const char *text, const fu_param_value *ov, int nov, fu_status status, const char *needle)
{
    fu_error err;
    fu_fusion *f = NULL;
    fu_status s = parse_build(text, ov, nov, &f, &err);
    CHECK(s == status);
    CHECK(f == NULL);
    if (s != FU_OK) CHECK_CONTAINS(err.message, needle);
    if (s != status) fprintf(stderr, "  status %s for: %s\n  message: %s\n", fu_status_name(s), text, err.message);
    fu_fusion_free(f);
}

static void expect_error(const char *text, fu_status status, const char *needle)
{
    expect_error_ov(text, NULL, 0, status, needle);
}

/* ------------------------------------------------------------ errors */

static void test_syntax_errors(void)
{
    expect_error(HEAD "x = add(a b)\noutput x\n", FU_ERR_PARSE, "t.fusion:6:11: expected ')' or ',' after operand, found 'b'");
    expect_error(HEAD "x = slcie(a)\n", FU_ERR_PARSE, "t.fusion:6:5: unknown op 'slcie'");
    expect_error(HEAD "x = a * 2\n", FU_ERR_PARSE,
                 "t.fusion:6:5: 'a' is a tensor, not an op: a statement is NAME = OP(operands...), arithmetic too "
                 "(`mul(x, 2)`, not `x * 2`)");
    expect_error(HEAD "x = add(a, q9)\n", FU_ERR_PARSE, "t.fusion:6:12: unknown tensor 'q9'");
    expect_error(HEAD "output q9\n", FU_ERR_PARSE, "t.fusion:6:8: unknown tensor 'q9'");
    expect_error(HEAD "x = add(a, mul(a, a))\n", FU_ERR_PARSE,
                 "t.fusion:6:12: nested call of 'mul': an operand is a tensor name or a literal; "
                 "give the call its own statement (`t = mul(...)`) and use t");
    {   /* an op's name is a tensor's name too: only a call of it is nested */
        fu_fusion *f = NULL;
        fu_error err;
        CHECK(parse_build(HEAD "mul = add(a, a)\nx = add(mul, a)\noutput x\n", NULL, 0, &f, &err) == FU_OK);
        fu_fusion_free(f);
    }
    expect_error(HEAD "x = sum(a, axes=[Q])\n", FU_ERR_PARSE, "t.fusion:6:18: unknown parameter 'Q'");
    expect_error("fusion t\nparam M = Q + 1\n", FU_ERR_PARSE, "t.fusion:2:11: unknown parameter 'Q'");
    expect_error(HEAD "x = iota(shape=[N], axis=Q)\n", FU_ERR_PARSE, "t.fusion:6:26: unknown parameter 'Q'");
    expect_error(HEAD "x = cast(a, f31)\n", FU_ERR_PARSE, "t.fusion:6:13: unknown dtype 'f31'");
    expect_error("fusion t\ninput z: f31[2]\n", FU_ERR_PARSE, "t.fusion:2:10: unknown dtype 'f31'");
    expect_error("fusion t\ndtype D = f31\n", FU_ERR_PARSE, "t.fusion:2:11: unknown dtype 'f31'");
    expect_error(HEAD "x = sum(a, axes=1)\n", FU_ERR_PARSE, "t.fusion:6:17: attribute 'axes' expects a list, found 1");
    expect_error(HEAD "x = sum(a, 1)\n", FU_ERR_PARSE, "t.fusion:6:12: attribute 'axes' expects a list");
    expect_error(HEAD "x = sum(a, keepdim=1)\n", FU_ERR_PARSE, "t.fusion:6:20: attribute 'keepdim' expects true or false");
    expect_error(HEAD "x = softmax(a, axis=[1])\n", FU_ERR_PARSE, "attribute 'axis' expects an integer, found [1]");
    expect_error(HEAD "x = softmax(a, axis=b)\n", FU_ERR_PARSE, "t.fusion:6:21: attribute 'axis' expects an integer, found tensor 'b'");
    expect_error(HEAD "x = sum(a, axis=1)\n", FU_ERR_PARSE,
                 "t.fusion:6:12: unknown attribute 'axis' for op 'sum' (its attributes: axes, keepdim)");
    expect_error(HEAD "x = exp(a, axis=1)\n", FU_ERR_PARSE,
                 "t.fusion:6:12: unknown attribute 'axis' for op 'exp' (its attributes: none)");
    expect_error(HEAD "x = embedding_backward(a, i)\n", FU_ERR_PARSE,
                 "t.fusion:6:5: missing attribute 'num_weights' for op 'embedding_backward'");
    expect_error(HEAD "x = exp(a)\nx = exp(b)\n", FU_ERR_PARSE, "t.fusion:7:1: tensor 'x' is defined twice (first at 6:1)");
    expect_error(HEAD "a = exp(b)\n", FU_ERR_PARSE, "t.fusion:6:1: tensor 'a' is defined twice (first at 3:7)");
    expect_error("fusion t\nparam N = 1\nparam N = 2\n", FU_ERR_PARSE, "t.fusion:3:7: parameter 'N' is defined twice");
    expect_error(HEAD "N = exp(a)\n", FU_ERR_PARSE, "t.fusion:6:1: 'N' is already defined as a parameter");
    expect_error(HEAD "x = exp(a)\ninput c: f32[2]\n", FU_ERR_PARSE, "t.fusion:7:1: input declared after the first op");
    expect_error(HEAD "x = exp(0.5)\n", FU_ERR_PARSE, "t.fusion:6:9: operand 1 of 'exp' must be a tensor, found number '0.5'");
    expect_error(HEAD "x = where(1, a, b)\n", FU_ERR_PARSE, "t.fusion:6:11: operand 1 of 'where' must be a tensor, found number '1'");
    expect_error(HEAD "x = exp(N)\n", FU_ERR_PARSE, "t.fusion:6:9: 'N' is a parameter, not a tensor");
    expect_error(HEAD "x = sum(a, axes=[0, 1)\n", FU_ERR_PARSE,
                 "t.fusion:6:22: expected ',' or ']' in the list opened at 6:17, found ')'");
    expect_error(HEAD "x = sum(a, axes=[0, 1\n", FU_ERR_PARSE, "t.fusion:6:22: expected ',' or ']' in the list opened at 6:17, found end of line");
    expect_error(HEAD "x = sum(a, axes=[0, 1", FU_ERR_PARSE, "found end of file");
    expect_error(HEAD "x = sum(a, axes=[0, 1, 2, 3, 4, 5, 6, 7, 8])\n", FU_ERR_PARSE, "t.fusion:6:42: list has more than 8 elements");
    expect_error("param N = 4\n", FU_ERR_PARSE, "t.fusion:1:1: expected 'fusion NAME' as the first statement, found 'param'");
    expect_error("", FU_ERR_PARSE, "t.fusion:1:1: expected 'fusion NAME' as the first statement, found end of file");
    expect_error("# only a comment\n\n", FU_ERR_PARSE, "t.fusion:3:1: expected 'fusion NAME' as the first statement, found end of file");
    expect_error("fusion\n", FU_ERR_PARSE, "t.fusion:1:7: expected a fusion name after 'fusion', found end of line");
    expect_error(HEAD "fusion u\n", FU_ERR_PARSE, "t.fusion:6:1: 'fusion' may appear only once");
    expect_error(HEAD "x exp(a)\n", FU_ERR_PARSE, "t.fusion:6:3: expected '=' after 'x', found 'exp'");
    expect_error(HEAD "x = exp(a) b\n", FU_ERR_PARSE, "t.fusion:6:12: expected end of line after ')', found 'b'");
    expect_error(HEAD "x = sum(a, axes=[1], true)\n", FU_ERR_PARSE, "t.fusion:6:22: expected 'key=value'");
    expect_error(HEAD "x = exp(a, 1)\n", FU_ERR_PARSE, "t.fusion:6:12: too many arguments for op 'exp'");
    expect_error(HEAD "x = sum(a, [1], axes=[0])\n", FU_ERR_PARSE, "t.fusion:6:17: attribute 'axes' is given twice");
    expect_error(HEAD "x = sum(a, axes=[1], axes=[0])\n", FU_ERR_PARSE, "t.fusion:6:22: attribute 'axes' is given twice");
    expect_error(HEAD "x = cross_entropy(a, i, reduction=avg)\n", FU_ERR_PARSE,
                 "t.fusion:6:35: unknown reduction 'avg' (expected none, mean or sum)");
    expect_error(HEAD "x = add(a, axis=1)\n", FU_ERR_PARSE, "t.fusion:6:12: op 'add' takes 2 tensor operand(s) before its attributes");
    expect_error(HEAD "x = add(a)\n", FU_ERR_PARSE, "t.fusion:6:10: op 'add' takes 2 tensor operand(s), found ')' after 1");
    expect_error(HEAD "x = add(1, 2)\n", FU_ERR_PARSE, "t.fusion:6:5: op 'add' needs at least one tensor operand");
    expect_error(HEAD "x = where(i, 1, 2)\n", FU_ERR_PARSE, "t.fusion:6:5: op 'where' needs a tensor");
    expect_error(HEAD "none = exp(a)\n", FU_ERR_PARSE, "t.fusion:6:1: 'none' is a reserved word and cannot name a tensor");
    expect_error("fusion t\nparam mean = 3\n", FU_ERR_PARSE, "t.fusion:2:7: 'mean' is a reserved word and cannot name a parameter");
    expect_error(HEAD "x = sum(a, axes=[1.5])\n", FU_ERR_PARSE, "t.fusion:6:18: expected an integer expression, found '1.5'");
    expect_error("fusion t\ndtype DT = f32\ninput z: f32[DT]\n", FU_ERR_PARSE, "t.fusion:3:14: parameter 'DT' is a dtype, not an integer");
    expect_error("fusion t\nparam N = 2\ninput z: N[2]\n", FU_ERR_PARSE, "t.fusion:3:10: parameter 'N' is an integer, not a dtype");
    expect_error("fusion t\nparam M = 12abc\n", FU_ERR_PARSE, "t.fusion:2:11: malformed number '12abc'");
    expect_error("fusion t\nparam M = 99999999999999999999\n", FU_ERR_PARSE,
                 "t.fusion:2:11: integer literal '99999999999999999999' is too large");
    expect_error("fusion t\nparam M = 4 $ 2\n", FU_ERR_PARSE, "t.fusion:2:13: unexpected character '$'");
    expect_error(HEAD "x = full([], 1e999)\n", FU_ERR_PARSE, "t.fusion:6:14: float literal '1e999' is out of range");
    expect_error(HEAD "x = add(a, b,)\n", FU_ERR_PARSE, "t.fusion:6:14: expected an argument after ',', found ')'");
    expect_error(HEAD "x = sum(a, [0,])\n", FU_ERR_PARSE, "t.fusion:6:15: expected an integer expression, found ']'");
    expect_error(HEAD "x = add(a, -b)\n", FU_ERR_PARSE, "t.fusion:6:12: expected operand 2 of 'add' (a tensor name), found '-'");
}

static void test_build_errors(void)
{
    /* values are checked when built, with the location of the operator */
    expect_error(HEAD "x = reshape(a, [N / (N - 4), 8])\noutput x\n", FU_ERR_PARSE, "t.fusion:6:19: division by zero");
    expect_error(HEAD "x = reshape(a, [N % 0, 8])\noutput x\n", FU_ERR_PARSE, "t.fusion:6:19: division by zero");
    expect_error("fusion t\nparam N = 3037000500 * 3037000500\ninput z: f32[N]\noutput z\n", FU_ERR_PARSE,
                 "t.fusion:2:22: integer overflow evaluating '3037000500 * 3037000500'");
    expect_error("fusion t\nparam N = 9223372036854775807\nparam M = N + 1\n", FU_ERR_PARSE, "t.fusion:3:13: integer overflow");
    expect_error("fusion t\nparam N = -9223372036854775807 - 1\nparam M = N / -1\n", FU_ERR_PARSE,
                 "t.fusion:3:13: integer overflow evaluating 'N / -1'");
    expect_error("fusion t\nparam N = -9223372036854775807 - 1\nparam M = -N\n", FU_ERR_PARSE,
                 "t.fusion:3:11: integer overflow evaluating '-N'");
    /* the builder's own checks, located at the op */
    expect_error(HEAD "x = add(a, i)\noutput x\n", FU_ERR_VERIFY, "t.fusion:6:5: op 'add' -> 'x': dtype mismatch");
    expect_error(HEAD "x = reshape(a, [N, 9], [8, 4])\noutput x\n", FU_ERR_VERIFY,
                 "t.fusion:6:16: reshape: old shape [4, 9] does not match the shape [4, 8] of 'a'");
    expect_error(HEAD "x = softmax(a, axis=2)\noutput x\n", FU_ERR_VERIFY, "t.fusion:6:21: axis 2 is out of range for rank 2");
    expect_error(HEAD "x = slice(a, [0], [1])\noutput x\n", FU_ERR_VERIFY,
                 "t.fusion:6:14: attribute 'start' has 1 entries but 'a' has rank 2");
    expect_error(HEAD "x = permute(a, [0, 1, 2])\noutput x\n", FU_ERR_VERIFY, "attribute 'dims' has 3 entries but 'a' has rank 2");
    expect_error(HEAD "x = add(i, 0.5)\noutput x\n", FU_ERR_VERIFY,
                 "t.fusion:6:12: literal 0.5 is not representable as i64, the dtype of 'i'");
    expect_error(HEAD "x = slice(a, [0, 0], [5, 8])\noutput x\n", FU_ERR_VERIFY, "t.fusion:6:5: op 'slice' -> 'x': slice [0:5]");
    expect_error(HEAD "x = exp(a)\noutput x, x\n", FU_ERR_VERIFY, "t.fusion:7:11: output: tensor 'x' is listed twice");
    expect_error(HEAD "x = exp(a)\n", FU_ERR_VERIFY, "fusion 't' has no outputs");
    /* negative and zero sizes flow to the builder's checks */
    expect_error("fusion t\nparam N = -4\ninput z: f32[N, 2]\noutput z\n", FU_ERR_VERIFY,
                 "t.fusion:3:7: input 'z': axis 0 has negative extent -4");
    expect_error(HEAD "x = embedding_backward(a, i, num_weights=0)\noutput x\n", FU_ERR_VERIFY, "num_weights 0 must be >= 1");
}

static void test_override_errors(void)
{
    const char *text = "fusion x\nparam N = 4\ndtype DT = f32\ninput z: DT[N]\noutput z\n";
    fu_param_value q[] = {{"Q", "3"}};
    expect_error_ov(text, q, 1, FU_ERR_ARG, "no parameter 'Q' in fusion 'x'");
    fu_param_value bad_int[] = {{"N", "4x"}};
    expect_error_ov(text, bad_int, 1, FU_ERR_ARG, "parameter 'N' of fusion 'x' is an integer, got '4x'");
    fu_param_value dtype_for_int[] = {{"N", "f32"}};
    expect_error_ov(text, dtype_for_int, 1, FU_ERR_ARG, "is an integer, got 'f32'");
    fu_param_value bad_dtype[] = {{"DT", "f31"}};
    expect_error_ov(text, bad_dtype, 1, FU_ERR_ARG, "parameter 'DT' of fusion 'x' is a dtype");
    fu_param_value huge[] = {{"N", "9223372036854775808"}};
    expect_error_ov(text, huge, 1, FU_ERR_ARG, "is an integer, got '9223372036854775808'");
    fu_param_value zero[] = {{"N", "0"}};
    expect_error_ov("fusion x\nparam N = 4\ninput z: f32[8 / N]\noutput z\n", zero, 1, FU_ERR_PARSE,
                    "t.fusion:3:16: division by zero");
}

/* Garbage must give an error with a location, never a crash. */
static void test_garbage(void)
{
    expect_error("fusion t\n\x01\x02", FU_ERR_PARSE, "t.fusion:2:1: unexpected byte 0x01");
    expect_error("\xff\xfe\x00", FU_ERR_PARSE, "t.fusion:1:1: unexpected byte 0xff");
    expect_error("fusion t # \xc3\xa9 comments may hold any bytes\n\xc3\xa9", FU_ERR_PARSE, "t.fusion:2:1: unexpected byte 0xc3");

    size_t n = 100000;
    char *text = malloc(n + 64);
    /* a very long identifier */
    strcpy(text, "fusion t\n");
    memset(text + 9, 'n', n);
    strcpy(text + 9 + n, " = exp(x)\n");
    expect_error(text, FU_ERR_PARSE, "t.fusion:2:1: name 'nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...' is longer than 63 characters");
    /* deep parentheses */
    strcpy(text, "fusion t\nparam N = ");
    size_t k = strlen(text);
    memset(text + k, '(', n);
    strcpy(text + k + n, "1\n");
    expect_error(text, FU_ERR_PARSE, "t.fusion:2:75: expression nested more than 64 levels deep");
    /* a long chain of unary minus */
    memset(text + k, '-', n);
    expect_error(text, FU_ERR_PARSE, "nested more than 64 levels deep");
    /* a long flat expression, whose tree would be too tall to print or evaluate */
    for (size_t i = 0; i + 2 < n; i += 2) memcpy(text + k + i, "1+", 2);
    strcpy(text + k + n - 2, "1\n");
    expect_error(text, FU_ERR_PARSE, "expression is too long");
    /* a very long comment is fine */
    strcpy(text, "fusion t #");
    memset(text + 10, 'c', n);
    strcpy(text + 10 + n, "\ninput z: f32[2]\noutput z\n");
    fu_fusion *f = NULL;
    fu_error err;
    CHECK(parse_build(text, NULL, 0, &f, &err) == FU_OK);
    fu_fusion_free(f);
    free(text);
}

static void test_nul_and_missing_file(void)
{
    const char *path = "test_parse_nul.fusion";
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    if (!fp) return;
    fwrite("fusion t\ninput z: f32[2]\n  \0x\n", 1, 29, fp);
    fclose(fp);
    fu_program *p = NULL;
    fu_error err;
    CHECK(fu_program_parse_file(path, &p, &err) == FU_ERR_PARSE);
    CHECK_CONTAINS(err.message, "test_parse_nul.fusion:3:3: unexpected byte 0x00");
    CHECK(p == NULL);
    remove(path);
    CHECK(fu_program_parse_file("no/such/file.fusion", &p, &err) == FU_ERR_IO);
    CHECK_CONTAINS(err.message, "no/such/file.fusion");
}

/* ------------------------------------------------------------ expressions */

/* Each `eN = full(shape=[], value=EXPR)` holds one expression's value. */
static void test_expressions(void)
{
    static const struct {
        const char *text, *printed;
        double value;
    } cases[] = {
        {"2 + 3 * 4", "2 + 3 * 4", 14},         {"(2 + 3) * 4", "(2 + 3) * 4", 20},
        {"-(2 + 3) * 4", "-(2 + 3) * 4", -20},  {"2 - (3 - 4)", "2 - (3 - 4)", 3},
        {"2 - 3 - 4", "2 - 3 - 4", -5},         {"(2 - 3) - 4", "2 - 3 - 4", -5},
        {"2+(3*4)", "2 + 3 * 4", 14},           {"2 * (3 * 4)", "2 * (3 * 4)", 24},
        {"7 / 2", "7 / 2", 3},                  {"-7 / 2", "-7 / 2", -3},
        {"7 % 3", "7 % 3", 1},                  {"-7 % 3", "-7 % 3", -1},
        {"7 % -3", "7 % -3", 1},                {"((C))", "C", 1024},
        {"C / H", "C / H", 64},                 {"3 * C", "3 * C", 3072},
        {"-C / H", "-C / H", -64},              {"- -5", "--5", 5},
        {"1 - 2 * 3", "1 - 2 * 3", -5},         {"100 / 7 * 7", "100 / 7 * 7", 98},
        {"C / (H / 4)", "C / (H / 4)", 256},    {"-(-(C))", "--C", 1024},
        {"2 * -3", "2 * -3", -6},               {"(1 + 2) % (7 - 5)", "(1 + 2) % (7 - 5)", 1},
    };
    int n = (int)(sizeof cases / sizeof cases[0]);
    fu_strbuf sb;
    fu_sb_init(&sb);
    fu_sb_puts(&sb, "fusion e\nparam C = 1024\nparam H = 16\ninput z: f32[]\n");
    for (int i = 0; i < n; i++) fu_sb_printf(&sb, "e%d = full(shape=[], value=%s)\n", i, cases[i].text);
    fu_sb_puts(&sb, "output z\n");
    fu_program *p = NULL;
    fu_error err;
    CHECK(fu_program_parse(sb.data, "e.fusion", &p, &err) == FU_OK);
    fu_fusion *f = NULL;
    if (p) CHECK(fu_program_build(p, NULL, 0, &f, &err) == FU_OK);
    char *printed = p ? fu_program_print(p) : NULL;
    for (int i = 0; f && i < n; i++) {
        char name[16], line[128];
        snprintf(name, sizeof name, "e%d", i);
        fu_tensor t = fu_fusion_find(f, name);
        CHECK(t >= 0);
        if (t >= 0) CHECK_NEAR(fu_producer(f, t)->attrs.value, cases[i].value, 0);
        snprintf(line, sizeof line, "e%d = full(shape=[], value=%s, dtype=f32)\n", i, cases[i].printed);
        CHECK_CONTAINS(printed, line);
    }
    /* parameter defaults are expressions over earlier parameters */
    fu_program *q = NULL;
    CHECK(fu_program_parse("fusion d\nparam C = 1024\nparam H = 16\nparam D = (C) / (H)\n", NULL, &q, &err) == FU_OK);
    if (q) {
        CHECK(strcmp(fu_program_param_default(q, 2), "C / H") == 0);
        fu_program_free(q);
    }
    free(printed);
    fu_fusion_free(f);
    fu_program_free(p);
    fu_sb_free(&sb);
}

/* ------------------------------------------------------------ suites */

static char *read_text(const char *path)
{
    return fu_read_file(path, NULL);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* Builds text with default parameters and prints the fusion; NULL on error. */
static char *build_and_print(const char *text, const char *name)
{
    fu_program *p = NULL;
    fu_fusion *f = NULL;
    fu_error err;
    if (fu_program_parse(text, name, &p, &err) != FU_OK || fu_program_build(p, NULL, 0, &f, &err) != FU_OK) {
        fprintf(stderr, "  %s: %s\n", name, err.message);
        fu_program_free(p);
        return NULL;
    }
    char *s = fu_fusion_print(f);
    fu_fusion_free(f);
    fu_program_free(p);
    return s;
}

static char *parse_and_print(const char *text, const char *name)
{
    fu_program *p = NULL;
    fu_error err;
    if (fu_program_parse(text, name, &p, &err) != FU_OK) {
        fprintf(stderr, "  %s: %s\n", name, err.message);
        return NULL;
    }
    char *s = fu_program_print(p);
    fu_program_free(p);
    return s;
}

static void check_same(const char *a, const char *b, const char *what, const char *path)
{
    CHECK(a && b && strcmp(a, b) == 0);
    if (a && b && strcmp(a, b) != 0) fprintf(stderr, "  %s differs for %s:\n%s---\n%s", what, path, a, b);
}

/* print(parse(t)) is stable, parses back to the same fusion, and
 * fu_fusion_print parses back to a fusion that prints identically. */
static void round_trip_file(const char *path)
{
    char *text = read_text(path);
    CHECK(text != NULL);
    if (!text) return;
    char *p1 = parse_and_print(text, path);
    char *p2 = p1 ? parse_and_print(p1, "printed") : NULL;
    check_same(p1, p2, "print(parse(print(parse(t))))", path);
    char *f1 = build_and_print(text, path);
    char *f2 = p1 ? build_and_print(p1, "printed") : NULL;
    check_same(f1, f2, "fusion built from the printed program", path);
    char *f3 = f1 ? build_and_print(f1, "fusion print") : NULL;
    check_same(f1, f3, "fu_fusion_print after parsing it back", path);
    char *f4 = f1 ? parse_and_print(f1, "fusion print") : NULL;
    check_same(f1, f4, "fu_fusion_print is already canonical", path);
    free(text);
    free(p1);
    free(p2);
    free(f1);
    free(f2);
    free(f3);
    free(f4);
}

/* Calls fn on every *.fusion under dir; returns how many. */
static int walk_suites(const char *dir, void (*fn)(const char *path))
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) count += walk_suites(path, fn);
        else if (ends_with(e->d_name, ".fusion")) {
            fn(path);
            count++;
        }
    }
    closedir(d);
    return count;
}

static const char *suites_dir(void)
{
    const char *d = getenv("FUSER_SUITES_DIR");
    return d ? d : "suites";
}

static void test_suites_round_trip(void)
{
    int n = walk_suites(suites_dir(), round_trip_file);
    printf("round-tripped %d suite files\n", n);
    CHECK(n >= 8);
}

/* Loads a suites file and builds it with overrides. */
static fu_fusion *build_suite(const char *rel, const fu_param_value *ov, int nov)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", suites_dir(), rel);
    fu_program *p = NULL;
    fu_fusion *f = NULL;
    fu_error err;
    fu_status s = fu_program_parse_file(path, &p, &err);
    if (s == FU_OK) s = fu_program_build(p, ov, nov, &f, &err);
    if (s != FU_OK) fprintf(stderr, "  %s: %s\n", rel, err.message);
    CHECK(s == FU_OK);
    fu_program_free(p);
    return f;
}

static bool has_shape(const fu_fusion *f, fu_tensor t, int rank, const int64_t *shape)
{
    if (t < 0 || fu_tensor_rank(f, t) != rank) return false;
    return rank == 0 || memcmp(fu_tensor_shape(f, t), shape, (size_t)rank * sizeof *shape) == 0;
}

static void test_suite_contents(void)
{
    static const int64_t out_shape[] = {16, 16, 128, 64};
    fu_fusion *f = build_suite("qkv_split/seed_repro.fusion", NULL, 0);
    if (f) {
        CHECK(fu_fusion_num_outputs(f) == 3);
        CHECK(fu_fusion_num_inputs(f) == 1);
        CHECK(fu_fusion_num_ops(f) == 9);
        for (int i = 0; i < fu_fusion_num_outputs(f); i++) {
            CHECK(has_shape(f, fu_fusion_output(f, i), 4, out_shape));
            CHECK(fu_tensor_dtype(f, fu_fusion_output(f, i)) == FU_F32);
        }
        CHECK(strcmp(fu_tensor_name(f, fu_fusion_output(f, 2)), "T2_slice3") == 0);
    }
    fu_fusion_free(f);

    /* the parameterized split matches the repro at its defaults */
    f = build_suite("qkv_split/qkv_split.fusion", NULL, 0);
    for (int i = 0; f && i < 3; i++) CHECK(has_shape(f, fu_fusion_output(f, i), 4, out_shape));
    fu_fusion_free(f);

    f = build_suite("embedding/embedding_bwd.fusion", NULL, 0);
    static const int64_t dw[] = {50304, 768};
    if (f) CHECK(has_shape(f, fu_fusion_output(f, 0), 2, dw));
    fu_fusion_free(f);

    f = build_suite("cross_entropy/cross_entropy_fwdbwd.fusion", NULL, 0);
    static const int64_t logits[] = {8192, 32768};
    if (f) {
        CHECK(fu_fusion_num_outputs(f) == 2);
        CHECK(has_shape(f, fu_fusion_output(f, 0), 0, NULL));
        CHECK(has_shape(f, fu_fusion_output(f, 1), 2, logits));
    }
    fu_fusion_free(f);
}

/* ------------------------------------------------------------ overrides */

static void test_overrides(void)
{
    fu_program *p = NULL;
    fu_error err;
    char path[1024];
    snprintf(path, sizeof path, "%s/cross_entropy/cross_entropy_fwd.fusion", suites_dir());
    CHECK(fu_program_parse_file(path, &p, &err) == FU_OK);
    if (!p) return;
    CHECK(strcmp(fu_program_name(p), "cross_entropy_fwd") == 0);
    CHECK(fu_program_num_params(p) == 3);
    CHECK(strcmp(fu_program_param_name(p, 0), "N") == 0 && !fu_program_param_is_dtype(p, 0));
    CHECK(strcmp(fu_program_param_default(p, 1), "32768") == 0);
    CHECK(strcmp(fu_program_param_name(p, 2), "DT") == 0 && fu_program_param_is_dtype(p, 2));
    CHECK(strcmp(fu_program_param_default(p, 2), "f32") == 0);
    CHECK(fu_program_param_name(p, 3) == NULL);

    fu_param_value ov[] = {{"N", "4"}, {"V", "7"}, {"DT", "bf16"}};
    fu_fusion *f = NULL;
    CHECK(fu_program_build(p, ov, 3, &f, &err) == FU_OK);
    if (f) {
        static const int64_t ls[] = {4, 7}, ts[] = {4};
        fu_tensor logits = fu_fusion_find(f, "logits"), target = fu_fusion_find(f, "target");
        CHECK(has_shape(f, logits, 2, ls) && fu_tensor_dtype(f, logits) == FU_BF16);
        CHECK(has_shape(f, target, 1, ts) && fu_tensor_dtype(f, target) == FU_I64);
        CHECK(fu_tensor_dtype(f, fu_fusion_output(f, 0)) == FU_BF16);
        CHECK(fu_tensor_rank(f, fu_fusion_output(f, 0)) == 0);
    }
    fu_fusion_free(f);
    /* the last override of a name wins; defaults elsewhere */
    fu_param_value twice[] = {{"N", "4"}, {"N", "5"}};
    CHECK(fu_program_build(p, twice, 2, &f, &err) == FU_OK);
    if (f) {
        CHECK(fu_tensor_shape(f, fu_fusion_find(f, "logits"))[0] == 5);
        CHECK(fu_tensor_shape(f, fu_fusion_find(f, "logits"))[1] == 32768);
        CHECK(fu_tensor_dtype(f, fu_fusion_find(f, "logits")) == FU_F32);
    }
    fu_fusion_free(f);
    fu_program_free(p);

    /* expressions follow the overrides: C/H and 3*C */
    fu_param_value qkv[] = {{"C", "512"}, {"H", "8"}, {"B", "2"}, {"DT", "f16"}};
    f = build_suite("qkv_split/qkv_split.fusion", qkv, 4);
    static const int64_t xs[] = {2, 128, 1536}, qs[] = {2, 8, 128, 64};
    if (f) {
        CHECK(has_shape(f, fu_fusion_find(f, "x"), 3, xs));
        CHECK(has_shape(f, fu_fusion_find(f, "q"), 4, qs));
        CHECK(fu_tensor_dtype(f, fu_fusion_find(f, "v")) == FU_F16);
    }
    fu_fusion_free(f);

    /* a literal operand takes the dtype of the tensor beside it */
    fu_param_value prim[] = {{"N", "3"}, {"V", "5"}, {"DT", "f16"}};
    f = build_suite("cross_entropy/cross_entropy_primitives.fusion", prim, 3);
    if (f) {
        fu_tensor c0 = fu_fusion_find(f, "_c0"), c1 = fu_fusion_find(f, "_c1");
        CHECK(c0 >= 0 && fu_tensor_dtype(f, c0) == FU_F16 && fu_tensor_rank(f, c0) == 0);
        CHECK(c0 >= 0 && fu_producer(f, c0)->attrs.value == 0.5);
        CHECK(c1 >= 0 && fu_tensor_dtype(f, c1) == FU_I64 && fu_producer(f, c1)->attrs.value == -100);
        CHECK(fu_tensor_dtype(f, fu_fusion_output(f, 0)) == FU_F16);
        CHECK(fu_tensor_rank(f, fu_fusion_output(f, 0)) == 0);
    }
    fu_fusion_free(f);
}

/* ------------------------------------------------------------ attributes */

/* a and b build the same fusion; with same_text, they also print the same
 * program (only the order and form of the arguments differ, not the values). */
static void check_same_fusion(const char *a, const char *b, bool same_text)
{
    fu_fusion *fa = NULL, *fb = NULL;
    fu_error err;
    CHECK(parse_build(a, NULL, 0, &fa, &err) == FU_OK);
    if (!fa) fprintf(stderr, "  %s\n", err.message);
    CHECK(parse_build(b, NULL, 0, &fb, &err) == FU_OK);
    if (!fb) fprintf(stderr, "  %s\n", err.message);
    char *pa = fa ? fu_fusion_print(fa) : NULL, *pb = fb ? fu_fusion_print(fb) : NULL;
    check_same(pa, pb, "positional vs keyword", a);
    char *qa = parse_and_print(a, "a"), *qb = parse_and_print(b, "b");
    if (same_text) check_same(qa, qb, "printed programs", a);
    else CHECK(qa && qb && strcmp(qa, qb) != 0);
    free(pa);
    free(pb);
    free(qa);
    free(qb);
    fu_fusion_free(fa);
    fu_fusion_free(fb);
}

static void test_positional_and_keyword(void)
{
    check_same_fusion(HEAD "y = sum(a, [1], true)\noutput y\n", HEAD "y = sum(a, keepdim=true, axes=[-1])\noutput y\n", false);
    check_same_fusion(HEAD "y = sum(a)\noutput y\n", HEAD "y = sum(a, axes=[], keepdim=false)\noutput y\n", true);
    check_same_fusion(HEAD "y = slice(a, [0, 2], [N, 8], [1, 3])\noutput y\n",
                      HEAD "y = slice(a, step=[1, 3], stop=[N, 8], start=[0, 2])\noutput y\n", true);
    check_same_fusion(HEAD "y = cross_entropy(a, i, sum, 3, 0.25)\noutput y\n",
                      HEAD "y = cross_entropy(a, i, label_smoothing=0.25, reduction=sum, ignore_index=3)\noutput y\n", true);
    check_same_fusion(HEAD "y = full([2, N], 1.5, f64)\noutput y\n", HEAD "y = full(dtype=f64, value=1.5, shape=[2, N])\noutput y\n", true);
    check_same_fusion(HEAD "y = reshape(a, [N, 8], [2, 2, -1])\noutput y\n",
                      HEAD "y = reshape(a, shape=[2, 2, -1], old_shape=[N, 8])\noutput y\n", true);
    check_same_fusion(HEAD "y = reshape(a, [32])\noutput y\n", HEAD "y = reshape(a, shape=[4 * 8])\noutput y\n", false);
    check_same_fusion(HEAD "r = reshape(i, [N, 1])\ny = take_along_axis(a, r, 1)\noutput y\n",
                      HEAD "r = reshape(i, [N, 1])\ny = take_along_axis(a, r, axis=-1)\noutput y\n", false);
    check_same_fusion(HEAD "y = embedding_backward(a, i, 10, 3)\noutput y\n",
                      HEAD "y = embedding_backward(a, i, padding_idx=-7, num_weights=10)\noutput y\n", false);
    check_same_fusion(HEAD "y = iota([N, 3], 1, i32)\noutput y\n", HEAD "y = iota(axis=-1, shape=[N, 3], dtype=i32)\noutput y\n", false);
}

/* The canonical text: every attribute as a keyword, defaults written out. */
static void test_canonical_text(void)
{
    char *s = parse_and_print(HEAD "# comment\n\ny = sum(a)    # trailing\nz = mul(y, 0.50)\nm = ge(z, 1e-3)\nw = where(m, z, -inf)\n"
                             "e = embedding(a, i)\nc = cross_entropy(a, i)\nh = softmax(a)\noutput z\noutput w, e, c, h\n",
                        "t.fusion");
    CHECK_CONTAINS(s, "fusion t\nparam N = 4\ninput a: f32[N, 8]\ninput b: f32[N, 8]\ninput i: i64[N]\n");
    CHECK_CONTAINS(s, "\ny = sum(a, axes=[], keepdim=false)\n");
    CHECK_CONTAINS(s, "\nz = mul(y, 0.5)\n");
    CHECK_CONTAINS(s, "\nm = ge(z, 0.001)\n");
    CHECK_CONTAINS(s, "\nw = where(m, z, -inf)\n");
    CHECK_CONTAINS(s, "\ne = embedding(a, i, padding_idx=none)\n");
    CHECK_CONTAINS(s, "\nc = cross_entropy(a, i, reduction=mean, ignore_index=-100, label_smoothing=0.0)\n");
    CHECK_CONTAINS(s, "\nh = softmax(a, axis=-1)\n");
    CHECK_CONTAINS(s, "\noutput z, w, e, c, h\n");
    CHECK(s && !strstr(s, "#"));
    free(s);
}

/* ------------------------------------------------------------ fu_fusion_print */

static void test_fusion_print(void)
{
    fu_fusion *f = fu_fusion_new("c_api");
    int64_t xs[2] = {3, 5}, is[1] = {3}, ws[2] = {10, 5};
    fu_tensor x = fu_input(f, "x", FU_F32, 2, xs);
    fu_tensor idx = fu_input(f, "idx", FU_I64, 1, is);
    fu_tensor w = fu_input(f, "w", FU_BF16, 2, ws);
    fu_tensor half = fu_full(f, 0, NULL, 0.1, FU_F32, NULL); /* auto-named */
    fu_tensor y = fu_binary(f, FU_OP_MUL, x, half, NULL);
    fu_tensor m = fu_reduce(f, FU_OP_RMAX, y, 1, (int[]){-1}, true, "m");
    fu_tensor s = fu_softmax(f, y, -1, "s");
    fu_tensor neg = fu_full(f, 0, NULL, -INFINITY, FU_F32, "neg_inf");
    fu_tensor cond = fu_binary(f, FU_OP_GT, y, m, "cond");
    fu_tensor wh = fu_where(f, cond, s, neg, "wh");
    fu_tensor e = fu_embedding(f, w, idx, 0, "e");
    fu_tensor io = fu_iota(f, 2, xs, 1, FU_I32, "io");
    fu_tensor sl = fu_slice(f, x, (int64_t[]){0, 1}, (int64_t[]){3, 5}, (int64_t[]){2, 2}, "sl");
    fu_tensor ce = fu_cross_entropy(f, x, idx, FU_REDUCTION_NONE, 2, 0.1, "ce");
    fu_tensor nz = fu_full(f, 1, is, -0.0, FU_BOOL, "nz");
    fu_tensor big = fu_full(f, 0, NULL, 1e20, FU_I64, "big");
    fu_output(f, wh);
    fu_output(f, e);
    fu_output(f, io);
    fu_output(f, sl);
    fu_output(f, ce);
    fu_output(f, nz);
    fu_output(f, big);
    fu_error err;
    CHECK(fu_fusion_verify(f, &err) == FU_OK);
    char *text = fu_fusion_print(f);
    CHECK_CONTAINS(text, "fusion c_api\ninput x: f32[3, 5]\ninput idx: i64[3]\ninput w: bf16[10, 5]\n");
    CHECK_CONTAINS(text, "\nt3 = full(shape=[], value=0.1, dtype=f32)\n");
    CHECK_CONTAINS(text, "\nt4 = mul(x, t3)\n");
    CHECK_CONTAINS(text, "\nm = max(t4, axes=[1], keepdim=true)\n");
    CHECK_CONTAINS(text, "\ns = softmax(t4, axis=1)\n");
    CHECK_CONTAINS(text, "\nneg_inf = full(shape=[], value=-inf, dtype=f32)\n");
    CHECK_CONTAINS(text, "\ne = embedding(w, idx, padding_idx=0)\n");
    CHECK_CONTAINS(text, "\nio = iota(shape=[3, 5], axis=1, dtype=i32)\n");
    CHECK_CONTAINS(text, "\nsl = slice(x, start=[0, 1], stop=[3, 5], step=[2, 2])\n");
    CHECK_CONTAINS(text, "\nce = cross_entropy(x, idx, reduction=none, ignore_index=2, label_smoothing=0.1)\n");
    CHECK_CONTAINS(text, "\nnz = full(shape=[3], value=0, dtype=bool)\n");
    CHECK_CONTAINS(text, "\nbig = full(shape=[], value=1e+20, dtype=i64)\n");
    CHECK_CONTAINS(text, "\noutput wh, e, io, sl, ce, nz, big\n");
    char *again = text ? build_and_print(text, "printed") : NULL;
    check_same(text, again, "fu_fusion_print round trip", "c_api");
    (void)y;
    free(text);
    free(again);
    fu_fusion_free(f);
}

/* ------------------------------------------------------------ fuzz */

static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* Parses (and builds, when it parses) text; errors must carry a location. */
static void survive(const char *text, int *parsed)
{
    fu_program *p = NULL;
    fu_error err;
    fu_status s = fu_program_parse(text, "g.fusion", &p, &err);
    if (s != FU_OK) {
        CHECK(s == FU_ERR_PARSE);
        CHECK(strncmp(err.message, "g.fusion:", 9) == 0);
        return;
    }
    (*parsed)++;
    char *t = fu_program_print(p);
    CHECK(t != NULL);
    fu_fusion *f = NULL;
    if (fu_program_build(p, NULL, 0, &f, &err) == FU_OK) {
        char *u = fu_fusion_print(f);
        CHECK(u != NULL);
        free(u);
    } else {
        CHECK(strncmp(err.message, "g.fusion:", 9) == 0 || strstr(err.message, "has no outputs"));
    }
    free(t);
    fu_fusion_free(f);
    fu_program_free(p);
}

/* Every prefix and many one-byte mutations of a suites file. */
static void fuzz_file(const char *path)
{
    char *text = read_text(path);
    if (!text) return;
    size_t n = strlen(text);
    char *buf = malloc(n + 1);
    int parsed = 0;
    uint64_t rng = 12345;
    static const char bytes[] = "()[],=:+-*/%#\n 0129aZ_.e\x01\xff";
    for (size_t k = 0; k <= n; k++) {
        memcpy(buf, text, k);
        buf[k] = '\0';
        survive(buf, &parsed);
    }
    for (int trial = 0; trial < 2000; trial++) {
        memcpy(buf, text, n + 1);
        size_t at = (size_t)(rng_next(&rng) % n);
        buf[at] = bytes[rng_next(&rng) % (sizeof bytes - 1)];
        survive(buf, &parsed);
    }
    CHECK(parsed > 0);
    free(buf);
    free(text);
}

static void test_fuzz(void)
{
    CHECK(walk_suites(suites_dir(), fuzz_file) >= 8);
    /* token soup */
    static const char *const words[] = {"fusion", "t", "\n", "param", "dtype", "input", "output", "N", "=", "(",
                                        ")", "[", "]", ",", ":", "-", "*", "/", "%", "1", "0", "2.5", "inf",
                                        "f32", "i64", "add", "sum", "x", "none", "true", "reshape", "where"};
    uint64_t rng = 99;
    int parsed = 0;
    char buf[512];
    for (int trial = 0; trial < 5000; trial++) {
        size_t k = (size_t)snprintf(buf, sizeof buf, "fusion t\n");
        int ntok = (int)(rng_next(&rng) % 40);
        for (int j = 0; j < ntok && k + 20 < sizeof buf; j++)
            k += (size_t)snprintf(buf + k, sizeof buf - k, "%s ", words[rng_next(&rng) % (sizeof words / sizeof words[0])]);
        survive(buf, &parsed);
    }
    CHECK(parsed > 0);
}

/* Random inputs need the range of every index input, also when the index
 * passes through an ignore_index guard (where) and a reshape first. */
static void test_index_bounds(void)
{
    fu_param_value ov[2] = {{"N", "16"}, {"V", "1000"}};
    fu_fusion *f = build_suite("cross_entropy/cross_entropy_primitives.fusion", ov, 2);
    if (!f) return;
    CHECK(fu_fusion_index_bound(f, fu_fusion_find(f, "target")) == 1000);
    CHECK(fu_fusion_index_bound(f, fu_fusion_find(f, "logits")) == 0);
    fu_fusion_free(f);
    f = build_suite("embedding/embedding_fwd.fusion", NULL, 0);
    if (!f) return;
    CHECK(fu_fusion_index_bound(f, fu_fusion_find(f, "ids")) == 50304);
    fu_fusion_free(f);
}

int main(void)
{
    test_index_bounds();
    test_syntax_errors();
    test_build_errors();
    test_override_errors();
    test_garbage();
    test_nul_and_missing_file();
    test_expressions();
    test_suites_round_trip();
    test_suite_contents();
    test_overrides();
    test_positional_and_keyword();
    test_canonical_text();
    test_fusion_print();
    test_fuzz();
    return check_finish("test_parse");
}
