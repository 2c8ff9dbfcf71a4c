/*
 * runtime.h -- the GPU runtime's header inside the fuser: the public API
 * (fuser/include/fuser_runtime.h) is all of it.
 */
#ifndef FUSER_RUNTIME_H
#define FUSER_RUNTIME_H

#include "fuser_runtime.h"

#endif
