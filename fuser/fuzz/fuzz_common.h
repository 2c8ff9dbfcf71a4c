/*
 * fuzz_common.h -- what the fuzz targets share: the input as a NUL-terminated
 * string, and a property check that stops the run (libFuzzer saves the input
 * as a crash) when a documented property does not hold.
 */
#ifndef FUSER_FUZZ_COMMON_H
#define FUSER_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* data[0..size) as a malloc'd C string (a NUL inside ends it early, as in a file). */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
    char *t = malloc(size + 1);
    if (!t) abort();
    memcpy(t, data, size);
    t[size] = '\0';
    return t;
}

#define FUZZ_REQUIRE(cond, ...)                                                   \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "fuzz: property failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
            abort();                                                              \
        }                                                                         \
    } while (0)

#endif
