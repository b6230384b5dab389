#!/bin/bash
# Writes the contents of DIR as an image layer: an uncompressed tar whose bytes depend only on the
# files (names sorted, one fixed mtime, numeric owners kept as they are, no atime/ctime), without
# the "./" prefix, and without what a container runtime provides (the contents of dev, proc, sys).
#
#   layer_tar.sh DIR OUT.tar EPOCH
set -euo pipefail
[ $# -eq 3 ] || {
  echo "usage: layer_tar.sh DIR OUT.tar EPOCH" >&2
  exit 2
}
dir="$1"
out="$2"
epoch="$3"
cd "$dir"
find . -mindepth 1 \( -path ./dev/\* -o -path ./proc/\* -o -path ./sys/\* \) -prune \
  -o -printf '%P\0' |
  LC_ALL=C sort -z |
  tar --create --file="$out" --null --no-recursion --files-from=- \
    --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    --mtime="@$epoch" --numeric-owner
