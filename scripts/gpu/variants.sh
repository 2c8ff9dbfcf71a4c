#!/usr/bin/env bash
# scripts/gpu/variants.sh -- A/B of compile-time switches of the schedulers (the #ifndef macros
# of fuser/src/sched/*.c) in one call on a GPU machine: run_suite built once per variant, the
# same selection run on each, alternating, so that a drift of the card shows between rounds.
#
#   VARIANTS="name=-DMACRO=0 -DOTHER=1;name2=..." VARIANT_ARGS="<run_suite args>" scripts/gpu/variants.sh
#
# VARIANT_ARGS may hold several selections separated by ' | ', a bar between spaces
# ("a.fusion --sizes X | b --sizes Y"), each run in turn (files NAMEROUND-K.json; one selection:
# NAMEROUND.json); a bar inside an argument (a filter's alternation, /(bwd|fwdbwd)/) is the
# argument's.
#
# The variant "default" is the Release build at ${BUILD:-/tmp/b} (no flags; always run first).
# A variant "name=@DIR" is another source tree, built with no flags: an older commit's
# `git archive COMMIT | tar -x -C DIR` in a carried folder, for an A/B against that commit on the
# same card (here, `scripts/compare variants/name1.json variants/default1.json` then gates the
# rows as CI would).
# VARIANT_ROUNDS (default 2) rounds; VARIANT_TIMEOUT_S (default 120) seconds a run; each run's
# table is printed in full (fuser rows).
# Logs under ${OUT:-/tmp/out}/variants/.
# shellcheck source=part.sh
. "$(dirname "$0")/part.sh" variants
cd "$here" || exit 2
: "${VARIANT_ARGS:?variants.sh: give VARIANT_ARGS, the run_suite arguments}"
names=(default)
declare -A bin=([default]=$build/suites/run_suite)
IFS=';' read -r -a specs <<<"${VARIANTS:-}"
pids=()
for spec in "${specs[@]}"; do
  [ -n "$spec" ] || continue
  name=${spec%%=*} flags=${spec#*=} src=.
  case "$name" in ''|*[!A-Za-z0-9_]*) echo "variants.sh: bad variant name '$name'"; exit 2 ;; esac
  case "$flags" in @*) src=${flags#@} flags= ;; esac
  [ -f "$src/CMakeLists.txt" ] || { echo "variants.sh: $name: no source tree at $src"; exit 2; }
  dir=$build-$name
  (cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_C_FLAGS=$flags" >"$out/build_$name.log" 2>&1 &&
     cmake --build "$dir" -j "$(nproc)" --target run_suite >>"$out/build_$name.log" 2>&1) &
  pids+=($!)
  names+=("$name")
  bin[$name]=$dir/suites/run_suite
done
for p in "${pids[@]}"; do wait "$p" || echo "variants.sh: a build failed (build_*.log)"; done
sep=$'\x1f'
IFS=$sep read -r -a selections <<<"${VARIANT_ARGS// | /$sep}"
for round in $(seq 1 "${VARIANT_ROUNDS:-2}"); do
  for name in "${names[@]}"; do
    [ -x "${bin[$name]}" ] || { echo "variants.sh: $name: no run_suite (build_$name.log)"; continue; }
    for k in "${!selections[@]}"; do
      read -r -a args <<<"${selections[$k]}"
      run=$name$round which=
      [ "${#selections[@]}" -gt 1 ] && run=$name$round-$((k + 1)) which=" selection $((k + 1))"
      timeout -k 5 "${VARIANT_TIMEOUT_S:-120}" "${bin[$name]}" "${args[@]}" --out "$out/$run.json" >"$out/$run.txt" 2>&1
      echo "variants.sh: $name round $round$which: exit $?"
      grep -E ' fuser ' "$out/$run.txt"
    done
  done
done
