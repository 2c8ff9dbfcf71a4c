/*
 * variant_reference.h -- the `reference` variant: hand-written CUDA kernels
 * (reference/kernels/, README.md there says what each does) compiled with
 * NVRTC through the fuser's runtime, specialized on the case's shapes, and
 * launched with fu_runtime_launch. The variant itself is hb_variant_reference
 * (suite.h); this header adds what the tests look at.
 */
#ifndef FUSEBENCH_VARIANT_REFERENCE_H
#define FUSEBENCH_VARIANT_REFERENCE_H

#include "suite.h"

#define HB_REF_MAX_KERNELS 4

/* The reference kernel family of fusion f (with case c, whose scatter mode
 * picks the embedding backward), e.g. "ce_fwdbwd"; NULL when there is none. */
const char *hb_reference_family(const fu_fusion *f, const hb_case *c);

/* After prepare: the module and the extern "C" entry points it launches, in
 * launch order (e.g. "ref_ce_fwd_bf16"). Returns their number. */
int hb_reference_kernels(const void *state, const fu_module **module, const char **names, int cap);

/* After prepare: the NVRTC options (-D defines) it compiled with, one line. */
const char *hb_reference_options(const void *state);

#endif
