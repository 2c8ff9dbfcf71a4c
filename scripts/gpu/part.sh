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
