# ci/lib.sh -- sourced (POSIX sh) by ci/nightly and ci/slurm.
#
#   fb_default_suites ROOT   prints the suites that --sharded and ci/slurm run
#                            when --suites is not given: the directories of
#                            ROOT/suites/ that hold a manifest, suite.txt
#                            (docs/suites.md), space-separated, in name order.
#   fb_shq WORD              prints WORD single-quoted for a shell script.

fb_default_suites() {
    _fb_list=
    for _fb_d in "$1"/suites/*/; do
        [ -f "$_fb_d/suite.txt" ] && _fb_list="$_fb_list${_fb_list:+ }$(basename "$_fb_d")"
    done
    printf '%s\n' "$_fb_list"
}

fb_shq() {
    printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}
