#!/usr/bin/env bash
# scripts/gpu/robust.sh -- compute-sanitizer (memcheck, racecheck, initcheck,
# synccheck) over `fuser run --device gpu --check` of every suites/*/*.fusion,
# both dtypes where the file has `dtype DT`, the embedding backward also with
# --scatter atomic, at small sizes (--set), in at most ~4 minutes.
#   BUILD=/tmp/b OUT=/tmp/out scripts/gpu/robust.sh
# Logs: $OUT/robust/sanitize.log (every run's output); the last lines are a
# table, one row per run, one column per tool: ok, N errors, exit N, or
# "-" (not run: the time budget was spent). Exit 0 only when every cell is ok.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-/tmp/b}
out=${OUT:-/tmp/out}/robust
fuser=$build/fuser/fuser
budget=${ROBUST_SECONDS:-225}
mkdir -p "$out"
log=$out/sanitize.log
: >"$log"
san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$fuser" ] || { echo "robust.sh: no $fuser (build first)"; exit 2; }
[ -x "$san" ] || { echo "robust.sh: no compute-sanitizer"; exit 2; }
export FUSER_CACHE_DIR=$out/cache

# Small sizes for the suites' parameters; any other parameter at most 256.
small_value() {
    case "$1" in
    N) echo 64 ;; V) echo 1000 ;; D) echo 96 ;; T) echo 200 ;; B) echo 2 ;; C) echo 256 ;; H) echo 4 ;;
    *) [ "$2" -gt 256 ] && echo 256 || echo "$2" ;;
    esac
}

runs=()   # "file|dtype|extra args"
for f in "$here"/suites/*/*.fusion; do
    sets=""
    while read -r _ name _ value _; do
        sets="$sets --set $name=$(small_value "$name" "$value")"
    done < <(grep -E '^param [A-Za-z_][A-Za-z0-9_]* *= *[0-9]+' "$f" | sed 's/=/ = /')
    dts="-"
    grep -qE '^dtype DT\b' "$f" && dts="f32 bf16"
    for dt in $dts; do
        a="$sets"
        [ "$dt" != - ] && a="$a --set DT=$dt"
        runs+=("$f|$dt|$a")
        if grep -qE 'embedding_backward|index_add|scatter_add' "$f"; then runs+=("$f|$dt|$a --scatter atomic"); fi
    done
done

# ROBUST_TOOLS picks some of them (a short call: ROBUST_TOOLS=initcheck)
tools=(${ROBUST_TOOLS:-memcheck racecheck initcheck synccheck})
start=$(date +%s)
declare -A cell
fail=0
for i in "${!runs[@]}"; do
    IFS='|' read -r f dt args <<<"${runs[$i]}"
    # compile (and check) once outside the sanitizer, so NVRTC is not timed under it
    # shellcheck disable=SC2086
    if ! "$fuser" run "$f" $args --device gpu --check >>"$log" 2>&1; then
        for t in "${tools[@]}"; do cell[$i,$t]="run failed"; done
        fail=1
        continue
    fi
    for t in "${tools[@]}"; do
        if [ $(( $(date +%s) - start )) -ge "$budget" ]; then cell[$i,$t]="-"; fail=1; continue; fi
        echo "=== $t: fuser run $f $args --device gpu --check" >>"$log"
        # (initcheck's --track-unused-memory is a flag without a value, off by default: the
        # H200's compute-sanitizer took a "no" after it for the program to run)
        # shellcheck disable=SC2086
        "$san" --tool "$t" --error-exitcode 99 "$fuser" run "$f" $args --device gpu --check \
            >"$out/last.txt" 2>&1
        rc=$?
        cat "$out/last.txt" >>"$log"
        n=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "$out/last.txt" | tail -n 1)
        if [ "$rc" = 0 ] && [ "${n:-0}" = 0 ]; then cell[$i,$t]=ok
        elif [ -n "$n" ] && [ "$n" != 0 ]; then cell[$i,$t]="$n errors"; fail=1
        else cell[$i,$t]="exit $rc"; fail=1
        fi
    done
done
rm -f "$out/last.txt"

echo "robust.sh: $(( $(date +%s) - start )) s, log $log"
printf '%-34s %-5s %-8s' fusion dtype scatter
for t in "${tools[@]}"; do printf ' %-10s' "$t"; done
echo
for i in "${!runs[@]}"; do
    IFS='|' read -r f dt args <<<"${runs[$i]}"
    mode=det
    case "$args" in *atomic*) mode=atomic ;; esac
    printf '%-34s %-5s %-8s' "$(basename "$f")" "$dt" "$mode"
    for t in "${tools[@]}"; do printf ' %-10s' "${cell[$i,$t]}"; done
    echo
done
exit $fail
