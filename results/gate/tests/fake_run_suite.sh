#!/bin/sh
# fake_run_suite.sh -- a stand-in for ./run_suite in the ci/nightly test: it
# takes run_suite's arguments and writes a synthetic run (gate_synth) instead
# of measuring.
#   fake_run_suite.sh SUITE|all --format json --out FILE [--repetitions N]
#       [--filter REGEX] [--time-limit S]   (logged to FAKE_ARGS_LOG, not applied)
# (exactly what ./run_suite accepts of ci/nightly's arguments: anything else fails)
# FAKE_SCALE (of the cases matching FAKE_SLOW, default all), FAKE_KERNELS_PLUS, FAKE_SEED, FAKE_DATE, FAKE_COMMIT shape the
# run; FAKE_FAIL_SUITE makes that suite exit 1 without a file; every call
# appends "SUITE CUDA_VISIBLE_DEVICES omp=OMP_NUM_THREADS" to FAKE_LOG.
set -eu
suite=$1; shift
args="$*"
out='' reps=10
while [ $# -gt 0 ]; do
    case "$1" in
        --format) [ "$2" = json ] || { echo "fake_run_suite: --format $2?" >&2; exit 2; }; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --repetitions) reps=$2; shift 2 ;;
        --filter|--time-limit) shift 2 ;;
        *) echo "fake_run_suite: unexpected '$1'" >&2; exit 2 ;;
    esac
done
[ -n "$out" ] || { echo "fake_run_suite: no --out" >&2; exit 2; }
echo "$suite ${CUDA_VISIBLE_DEVICES:-unset} omp=${OMP_NUM_THREADS:-}" >> "${FAKE_LOG:-/dev/null}"
echo "$args" >> "${FAKE_ARGS_LOG:-/dev/null}"
[ "$suite" != "${FAKE_FAIL_SUITE:-}" ] || { echo "fake_run_suite: $suite crashed" >&2; exit 1; }
only='*'
[ "$suite" = all ] || only="$suite/*"
# The time a suite takes, so that parallel shards overlap.
[ "$suite" = all ] || sleep 1
exec "$GATE_SYNTH" "$out" --only "$only" --reps "$reps" --samples 10 \
    --scale "${FAKE_SCALE:-1}" --slow "${FAKE_SLOW:-*}" --kernels-plus "${FAKE_KERNELS_PLUS:-0}" --seed "${FAKE_SEED:-1}" \
    --date "${FAKE_DATE:-2025-03-01T01:00:00+00:00}" --commit "${FAKE_COMMIT:-abc1234}"
