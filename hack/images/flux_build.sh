#!/bin/bash
# Builds flux-core and then flux-sched (Fluxion) from their source tarballs into one prefix, so
# that Fluxion is loaded by flux-core's own rc1.d. Runs inside the builder rootfs (see
# chroot_run.sh), which has the build dependencies; the sources are in /build/src.
#
# Environment: PREFIX (where the containers will see the install: Flux is not relocatable),
# FLUX_VERSION and FLUX_SCHED_VERSION (the snapshots have no git metadata to describe), JOBS.
# Prints "=== step NAME SECONDS" after each step, for the caller's timings.
set -euo pipefail
: "${PREFIX:?}" "${FLUX_VERSION:?}" "${FLUX_SCHED_VERSION:?}"
export FLUX_VERSION FLUX_SCHED_VERSION
jobs="${JOBS:-$(nproc)}"
# Debian's interpreter: it is compiled into the install, and it has ply, cffi and yaml.
export PYTHON=/usr/bin/python3
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
core="/build/flux-core-$FLUX_VERSION"
sched="/build/flux-sched-$FLUX_SCHED_VERSION"

timed() { # NAME COMMAND...
  local name="$1" start=$SECONDS
  shift
  echo "=== $name: $*"
  "$@"
  echo "=== step $name $((SECONDS - start))"
}

cd /build
timed unpack-core tar -xzf "src/flux-core-$FLUX_VERSION.tar.gz"
timed unpack-sched tar -xzf "src/flux-sched-$FLUX_SCHED_VERSION.tar.gz"

cd "$core"
timed core-autogen ./autogen.sh
timed core-configure ./configure --prefix="$PREFIX" --disable-docs
timed core-make make -j"$jobs"
timed core-install make install

cd "$sched"
# No CMAKE_BUILD_TYPE, as upstream's default: Fluxion's speed does not matter for clusters of a
# few brokers, and optimising its template-heavy C++ would make the build much longer.
timed sched-configure cmake -G Ninja -S . -B build -DCMAKE_INSTALL_PREFIX="$PREFIX" \
  -DENABLE_DOCS=OFF -DBUILD_TESTING=OFF
timed sched-build ninja -C build -j"$jobs"
timed sched-install ninja -C build install

# Debian's Python scheme puts packages of a prefix under local/lib/python3.11/dist-packages, where
# Flux's Python does not look: move them next to flux-core's.
# flux-sched also links lib/flux/python3.11/fluxion (where flux commands look) to that place: the
# link follows the move.
site="$PREFIX/lib/python3.11/site-packages"
debian_site="$PREFIX/local/lib/python3.11/dist-packages"
if [ -d "$debian_site" ]; then
  mkdir -p "$site"
  cp -a "$debian_site/." "$site/"
  find "$PREFIX" -type l -lname "$debian_site/*" -print0 |
    while IFS= read -r -d '' link; do
      target="$(readlink "$link")"
      ln -sfn "$site/${target#"$debian_site/"}" "$link"
    done
  rm -rf "$PREFIX/local"
fi

# Static archives of the Python extension modules are only a by-product of libtool; debug
# information is most of the install's size.
find "$PREFIX/lib/python3.11" -name '*.a' -delete
strip_elf() {
  local f
  for f in "$@"; do
    if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
      strip --strip-debug "$f"
    fi
  done
}
export -f strip_elf
timed strip find "$PREFIX" -type f -exec bash -c 'strip_elf "$@"' strip_elf {} +

dangling="$(find "$PREFIX" -xtype l)"
if [ -n "$dangling" ]; then
  echo "dangling links in the install:" >&2
  echo "$dangling" >&2
  exit 1
fi
"$PREFIX/bin/flux" version
"$PREFIX/bin/flux" python -c 'import flux, fluxion; print("flux python: flux and fluxion import")'
find "$PREFIX" -name 'sched-fluxion*' -o -name 'resource.so' | sort
