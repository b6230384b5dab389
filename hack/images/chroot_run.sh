#!/bin/bash
# Runs a command inside a root filesystem with /proc, a read-only /sys, a minimal /dev and a
# private /tmp, optionally on an overlay of cached directories (so a build or check never changes
# them). Everything runs in a private mount namespace: the mounts vanish with the command even if
# it is killed, and are never seen (or removed through) by anything outside. The EXIT trap also
# unmounts them explicitly, in reverse order.
#
#   chroot_run.sh [--lower DIR]... [--upper DIR --work DIR] [--user UID:GID] [--env K=V]...
#                 ROOT -- COMMAND [ARG...]
#
# --lower (repeatable, topmost first): mount ROOT as an overlay of these directories; writable
# into --upper (with --work, on the same file system) or read-only without it.
set -euo pipefail

if [ -z "${CHROOT_RUN_PRIVATE:-}" ]; then
  exec env CHROOT_RUN_PRIVATE=1 unshare --mount --propagation private -- "$0" "$@"
fi

lowers=()
upper=""
work=""
user=""
envs=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8)
while [ $# -gt 0 ]; do
  case "$1" in
    --lower) lowers+=("$2"); shift 2 ;;
    --upper) upper="$2"; shift 2 ;;
    --work) work="$2"; shift 2 ;;
    --user) user="$2"; shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    *) break ;;
  esac
done
if [ $# -lt 3 ] || [ "$2" != "--" ]; then
  echo "usage: chroot_run.sh [options] ROOT -- COMMAND [ARG...]" >&2
  exit 2
fi
root="$1"
shift 2

mounted=()
# shellcheck disable=SC2317 # called by the trap
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" || true
  done
}
trap unmount_all EXIT

mount_at() { # TARGET MOUNT-ARGS...
  local target="$1"
  shift
  mount "$@" "$target"
  mounted+=("$target")
}

bind_read_only() { # SOURCE TARGET
  mount_at "$2" --bind "$1"
  mount -o remount,bind,ro "$2"
}

if [ ${#lowers[@]} -gt 0 ]; then
  mkdir -p "$root"
  if [ -n "$upper" ]; then
    mount_at "$root" -t overlay overlay \
      -o "lowerdir=$(IFS=:; echo "${lowers[*]}"),upperdir=$upper,workdir=$work"
  elif [ ${#lowers[@]} -eq 1 ]; then
    bind_read_only "${lowers[0]}" "$root"
  else
    mount_at "$root" -t overlay overlay -o "lowerdir=$(IFS=:; echo "${lowers[*]}")"
  fi
fi

mount_at "$root/proc" -t proc proc
bind_read_only /sys "$root/sys"
mount_at "$root/tmp" -t tmpfs -o mode=1777 tmpfs

# A /dev with only the usual character devices, not the machine's disks.
mount_at "$root/dev" -t tmpfs -o mode=755,nosuid tmpfs
for dev in null zero full random urandom tty; do
  touch "$root/dev/$dev"
  mount_at "$root/dev/$dev" --bind "/dev/$dev"
done
mkdir "$root/dev/shm" "$root/dev/pts"
mount_at "$root/dev/shm" -t tmpfs -o mode=1777,nosuid,nodev tmpfs
ln -s /proc/self/fd "$root/dev/fd"
ln -s /proc/self/fd/0 "$root/dev/stdin"
ln -s /proc/self/fd/1 "$root/dev/stdout"
ln -s /proc/self/fd/2 "$root/dev/stderr"

as_user=()
if [ -n "$user" ]; then
  as_user=("--userspec=$user" "--groups=${user#*:}")
fi
# Not exec: the trap must run after the command.
status=0
chroot "${as_user[@]}" "$root" /usr/bin/env -i "${envs[@]}" "$@" || status=$?
exit "$status"
