#!/bin/bash
# Runs one container's command of a simulated pod for the conformance suite: chrooted into ROOT
# (a directory the caller prepared), with the machine's /usr and /etc read-only, a private /proc,
# /tmp as a plain directory of ROOT (so that its files can be compared afterwards), a minimal /dev,
# no network, the pod's hostname, and the pod's volumes bind-mounted where the container mounts
# them. Everything happens in private namespaces (mount, UTS, network, PID): the mounts vanish with
# the command, nothing it starts outlives it, and nothing it does reaches the machine.
#
#   sandbox.sh ROOT TOOLS HOSTNAME WORKDIR MOUNTS ENVFILE -- COMMAND [ARG...]
#
# TOOLS: the directory that becomes /usr (bin/, lib/, lib64/; /bin, /lib... link into it): a shell,
# the basic utilities the scripts use and their libraries, nothing else, so a user's `pip install`
# or `dnf update` fails at once the same way for both operators (with the machine's /usr it would
# run the machine's tools, or time out).
#
# MOUNTS: lines "SOURCE<TAB>TARGET<TAB>ro|rw" (TARGET inside the container; a SOURCE file is bound
# onto a file). ENVFILE: NUL-separated NAME=VALUE entries, the container's environment.
set -euo pipefail

if [ -z "${MC_SANDBOX_INSIDE:-}" ]; then
  exec env MC_SANDBOX_INSIDE=1 unshare --mount --uts --net --pid --fork --kill-child \
    --propagation private -- bash "$0" "$@"
fi

if [ $# -lt 8 ] || [ "$7" != "--" ]; then
  echo "usage: sandbox.sh ROOT TOOLS HOSTNAME WORKDIR MOUNTS ENVFILE -- COMMAND [ARG...]" >&2
  exit 2
fi
root="$1" tools="$2" name="$3" workdir="$4" mounts="$5" envfile="$6"
shift 7

hostname "$name"

bind_read_only() { # SOURCE TARGET
  mount --bind "$1" "$2"
  mount -o remount,bind,ro "$2"
}

mkdir -p "$root/usr" "$root/etc" "$root/proc" "$root/dev" "$root/tmp"
bind_read_only "$tools" "$root/usr"
bind_read_only /etc "$root/etc"
for dir in bin sbin lib lib64; do
  if [ ! -e "$root/$dir" ]; then ln -s "usr/$dir" "$root/$dir"; fi
done
mount -t proc proc "$root/proc"
mount -t tmpfs -o mode=755,nosuid tmpfs "$root/dev"
for dev in null zero full random urandom; do
  touch "$root/dev/$dev"
  mount --bind "/dev/$dev" "$root/dev/$dev"
done
mkdir -p "$root/dev/shm"
ln -s /proc/self/fd "$root/dev/fd"
chmod 1777 "$root/tmp"

while IFS=$'\t' read -r source target mode; do
  [ -n "$source" ] || continue
  if [ -d "$source" ]; then
    mkdir -p "$root$target"
  else
    mkdir -p "$(dirname "$root$target")"
    touch "$root$target"
  fi
  if [ "$mode" = ro ]; then bind_read_only "$source" "$root$target"; else mount --bind "$source" "$root$target"; fi
done < "$mounts"

mkdir -p "$root$workdir"
env=()
while IFS= read -r -d '' entry; do env+=("$entry"); done < "$envfile"
# shellcheck disable=SC2016 # $1 and $@ belong to the inner shell
exec chroot "$root" /usr/bin/env -i "${env[@]}" /bin/bash -c 'cd "$1" && shift && exec "$@"' \
  sandbox "$workdir" "$@"
