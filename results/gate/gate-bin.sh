# gate-bin.sh -- sourced (POSIX sh) by scripts/compare, scripts/plot,
# scripts/save_baseline and ci/nightly to find the gate's programs, building
# them when they are missing. The caller sets gate_root (the repository root)
# and gate_prog (its name, for messages).
#
#   gate_bin NAME    prints the path of NAME (fusebench-compare,
#                    fusebench-json2tsv or fusebench-merge); returns 2 with a
#                    message on stderr when it cannot be found or built.
#
# Where: $FUSEBENCH_GATE_DIR when set (and only there: the tests use it);
# else ${FUSEBENCH_BUILD_DIR:-ROOT/build}/results/gate; else ROOT/build/gate-only.
# Building, when missing: `cmake --build` in the configured build directory, or
# scripts/setup (which installs libcjson-dev and gnuplot-nox and builds); where
# that fails (no CUDA toolkit here) the gate alone, which needs only cJSON, into
# ROOT/build/gate-only. Build output goes to stderr.

gate_bin() {
    _gb_name=$1
    if [ -n "${FUSEBENCH_GATE_DIR:-}" ]; then
        if [ -x "$FUSEBENCH_GATE_DIR/$_gb_name" ]; then
            printf '%s\n' "$FUSEBENCH_GATE_DIR/$_gb_name"
            return 0
        fi
        echo "$gate_prog: $_gb_name is not in FUSEBENCH_GATE_DIR ($FUSEBENCH_GATE_DIR)" >&2
        return 2
    fi
    _gb_build=${FUSEBENCH_BUILD_DIR:-$gate_root/build}
    for _gb_dir in "$_gb_build/results/gate" "$gate_root/build/gate-only"; do
        if [ -x "$_gb_dir/$_gb_name" ]; then
            printf '%s\n' "$_gb_dir/$_gb_name"
            return 0
        fi
    done
    echo "$gate_prog: $_gb_name is not built yet; building it" >&2
    if [ -f "$_gb_build/CMakeCache.txt" ]; then
        cmake --build "$_gb_build" --target "$_gb_name" >&2 || true
    else
        "$gate_root/scripts/setup" --build-dir "$_gb_build" >&2 || true
    fi
    if [ -x "$_gb_build/results/gate/$_gb_name" ]; then
        printf '%s\n' "$_gb_build/results/gate/$_gb_name"
        return 0
    fi
    echo "$gate_prog: building the gate on its own (it needs only cJSON)" >&2
    if cmake -S "$gate_root/results/gate" -B "$gate_root/build/gate-only" \
            -DCMAKE_BUILD_TYPE=Release >&2 &&
        cmake --build "$gate_root/build/gate-only" --target "$_gb_name" >&2 &&
        [ -x "$gate_root/build/gate-only/$_gb_name" ]; then
        printf '%s\n' "$gate_root/build/gate-only/$_gb_name"
        return 0
    fi
    echo "$gate_prog: cannot build $_gb_name: it needs cJSON (apt-get install libcjson-dev, or run scripts/setup)" >&2
    return 2
}
