#!/bin/sh
# fuser/fuzz/build.sh BUILD_DIR -- configures and builds the fuzz targets
# (fuser/fuzz/CMakeLists.txt) with clang and libFuzzer into BUILD_DIR. The
# fixture of the `fuzz` tests. Exit 77 with one line when clang or libFuzzer
# is absent (scripts/setup installs them: clang, libclang-rt-N-dev).
set -eu
src=$(cd "$(dirname "$0")" && pwd)
out=$1
cc=$(command -v clang || command -v clang-14 || true)
if [ -z "$cc" ]; then
    echo "fuzz_build: skipped: no clang (apt-get install clang libclang-rt-dev, or run scripts/setup)"
    exit 77
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$probe/p.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined -o "$probe/p" "$probe/p.c" 2>"$probe/err"; then
    echo "fuzz_build: skipped: $cc cannot link libFuzzer ($(head -n 1 "$probe/err"); apt-get install libclang-rt-$("$cc" -dumpversion | cut -d. -f1)-dev)"
    exit 77
fi
cmake -S "$src" -B "$out" -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE= >"$probe/cmake.log" 2>&1 || { cat "$probe/cmake.log"; exit 1; }
cmake --build "$out" -j 2
