# shellcheck shell=bash disable=SC2034 # sets the variables its callers use
# scripts/gpu/part.sh -- sourced by a part of scripts/gpu_session.sh (`. "$(dirname "$0")/part.sh" NAME`):
# here (the repository), build (${BUILD:-/tmp/b}, a Release build), out (${OUT:-/tmp/out}/NAME,
# created) and FUSER_CACHE_DIR (default /tmp/fuser-cache), with `set -u`.
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-/tmp/b}
out=${OUT:-/tmp/out}/${1:?part.sh: give the name of the part}
mkdir -p "$out"
export FUSER_CACHE_DIR=${FUSER_CACHE_DIR:-/tmp/fuser-cache}

# A plan option's A/B (the option's environment switch at 0, then 1): option_ab VAR FUSION SIZES
# runs `run_suite FUSION --sizes SIZES --dtype f32,bf16` under each setting, the first with
# torch.compile beside it; logs run_0.txt and run_1.txt under $out, and the rows printed.
option_ab() {
  local var=$1 fusion=$2 sizes=$3 torch=--with-torch on t0
  for on in 0 1; do
    t0=$SECONDS
    # shellcheck disable=SC2086 # $torch is one word or none
    env "$var=$on" timeout 200 "$build/suites/run_suite" "$fusion" --sizes "$sizes" \
      --dtype f32,bf16 $torch --repetitions 3 --time-limit 0.1 >"$out/run_$on.txt" 2>"$out/run_$on.err"
    echo "== $var=$on: exit $? in $((SECONDS - t0)) s"
    grep -hE ' (ok|FAIL|WRONG)|copy bandwidth| kernels? \(' "$out/run_$on.txt" "$out/run_$on.err" || tail -n 5 "$out/run_$on.err"
    torch=
  done
}
