#!/bin/bash
# The recording stand-in for `flux` in the conformance sandbox. Every call appends its arguments
# (NUL-separated, one call per line) to $MC_RECORD. What the scripts rely on is imitated:
# - `flux R encode --hosts=H ...` prints a resource set naming H;
# - `flux start` and `flux broker` create the broker's local socket (-Slocal-uri=local://PATH),
#   which the sidecars wait for; `flux start` then runs its initial program, as the broker does
#   (so `flux submit`, `flux batch` and the user's launcher commands are recorded or run too) and
#   exits with its exit code;
# - `flux batch ... FILE` runs FILE, as its sub-instance would;
# - everything else succeeds and prints nothing.

# record ARG...: appends one call under a lock, since the two ends of a pipeline (`flux R encode |
# flux R decode`) record at once and their writes would otherwise interleave into one line.
record() {
  exec 9>>"${MC_RECORD:-/dev/null}"
  flock 9
  {
    printf '%s\0' "$@"
    printf '\n'
  } >&9
  exec 9>&-
}
record "$@"

case "${1:-}" in
  batch)
    # The batch script runs (as in its sub-instance), so its `flux submit`s are recorded too.
    for arg in "$@"; do last="$arg"; done
    if [ -f "${last:-}" ]; then bash "$last"; exit $?; fi
    ;;
  R)
    for arg in "$@"; do
      case "$arg" in
        --hosts=*) printf '{"version": 1, "execution": {"nodelist": ["%s"]}}\n' "${arg#--hosts=}" ;;
      esac
    done
    ;;
  start | broker)
    sub="$1"
    shift
    # What the broker reads from the environment, recorded as a call of its own.
    record "@env" "FLUX_RC_EXTRA=${FLUX_RC_EXTRA-<unset>}"
    for arg in "$@"; do
      case "$arg" in
        -Slocal-uri=local://*)
          socket="${arg#-Slocal-uri=local://}"
          mkdir -p "$(dirname "$socket")"
          : >"$socket"
          ;;
      esac
    done
    [ "$sub" = start ] || exit 0
    # flux start's options, then the broker's (flux start hands `-o` values and everything from
    # its first operand on to the broker): the initial program starts at the first word that is
    # neither an option nor an option's value.
    while [ $# -gt 0 ]; do
      case "$1" in
        -o)
          # `-o --config PATH`: the broker reads --config (its --config-path) and then PATH.
          case "${2:-}" in
            -c | --config | --config-path) shift 3 || set -- ;;
            *) shift 2 || set -- ;;
          esac
          ;;
        -c | --config | --config-path | --conf) shift 2 || set -- ;;
        -*) shift ;;
        *) break ;;
      esac
    done
    [ $# -gt 0 ] || exit 0
    "$@"
    exit $?
    ;;
esac
exit 0
