/*
 * cg_prelude.c -- the device helpers a kernel includes: the .cuh files of
 * fuser/src/codegen/prelude/, embedded at build time (cg_prelude_files.c,
 * made by reference/cmake/embed.cmake). Each file's first lines say what it
 * defines ("// provides: fu_exp fu_log ...") and which files it uses ("//
 * needs: 10_minmax.cuh"). A kernel gets 00_core.cuh, every file one of whose
 * names its text uses, and what those need, in file-name order (a file needs
 * only files named before it).
 */
#include <stdbool.h>
#include <string.h>

#include "cg.h"

static const char marker[] = "// ---- fuser prelude: the helpers this kernel uses ----\n";

const char *cg_prelude_marker(void) { return marker; }

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Whether `text` uses the identifier word[0, n) as a whole word. */
static bool uses_word(const char *text, const char *word, size_t n)
{
    char w[64];
    if (n == 0 || n >= sizeof w) return false;
    memcpy(w, word, n);
    w[n] = '\0';
    for (const char *p = text; (p = strstr(p, w)) != NULL; p++)
        if ((p == text || !ident_char(p[-1])) && !ident_char(p[n])) return true;
    return false;
}

/* The words of the header line "// KEY: a b c" of a file (in its first
 * lines), one at a time: *at walks the line; false at its end (or where the
 * file has no such line). */
static bool next_word(const char *file_text, const char *key, const char **at, const char **w, size_t *n)
{
    if (!*at) {
        const char *line = strstr(file_text, key);
        if (!line || line - file_text > 512) return false;
        *at = line + strlen(key);
    }
    while (**at == ' ') (*at)++;
    if (**at == '\n' || **at == '\0') return false;
    *w = *at;
    while (**at && **at != ' ' && **at != '\n') (*at)++;
    *n = (size_t)(*at - *w);
    return true;
}

static int file_index(const char *name, size_t n)
{
    for (int i = 0; cg_prelude_files[i].name; i++)
        if (strlen(cg_prelude_files[i].name) == n && strncmp(cg_prelude_files[i].name, name, n) == 0) return i;
    return -1;
}

char *cg_prelude_expand(const char *source)
{
    const char *at = strstr(source, marker);
    if (!at) return fu_strdup(source);
    const char *body = at + strlen(marker);
    int nfiles = 0;
    while (cg_prelude_files[nfiles].name) nfiles++;
    bool *use = fu_calloc((size_t)nfiles + 1, sizeof *use);
    if (!use) return NULL;
    for (int i = 0; i < nfiles; i++) {
        const char *p = NULL, *w;
        size_t n;
        use[i] = strncmp(cg_prelude_files[i].name, "00_", 3) == 0;
        while (!use[i] && next_word(cg_prelude_files[i].text, "// provides:", &p, &w, &n)) use[i] = uses_word(body, w, n);
    }
    /* what the chosen files need: from the last file down, each need names an earlier file */
    for (int i = nfiles - 1; i >= 0; i--) {
        const char *p = NULL, *w;
        size_t n;
        while (use[i] && next_word(cg_prelude_files[i].text, "// needs:", &p, &w, &n)) {
            int k = file_index(w, n);
            FU_ASSERT(k >= 0 && k < i);
            use[k] = true;
        }
    }
    fu_strbuf sb;
    fu_sb_init(&sb);
    fu_sb_printf(&sb, "%.*s", (int)(at - source), source);
    for (int i = 0; i < nfiles; i++)
        if (use[i]) fu_sb_puts(&sb, cg_prelude_files[i].text);
    fu_sb_puts(&sb, "// ---- end of prelude ----\n");
    fu_sb_puts(&sb, body);
    fu_free(use);
    return fu_sb_take(&sb);
}
