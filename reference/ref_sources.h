/*
 * ref_sources.h -- the reference kernels' CUDA sources, embedded in the binary
 * at build time (reference/cmake/embed.cmake turns reference/kernels/ into
 * ref_sources.c), so that run_suite does not depend on the source tree's path.
 */
#ifndef FUSEBENCH_REF_SOURCES_H
#define FUSEBENCH_REF_SOURCES_H

typedef struct ref_source {
    const char *name; /* "cross_entropy.cu", "common.cuh" */
    const char *text; /* NUL-terminated */
} ref_source;

/* Every file of reference/kernels/, in name order; ends with {NULL, NULL}. */
extern const ref_source ref_sources[];

/* The text of the named file, or NULL. */
const char *ref_source_text(const char *name);

#endif
