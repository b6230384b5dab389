/**
 * Debian bookworm packages around Flux, as measured in /work/shared/flux/README.md: what building
 * flux-core and flux-sched needs, and what the built tree needs at run time.
 */

export const FLUX_BUILD_PACKAGES: readonly string[] = [
  // flux-core
  "autoconf",
  "automake",
  "libtool",
  "make",
  "gcc",
  "g++",
  "pkg-config",
  "libc6-dev",
  "libzmq3-dev",
  "libsodium-dev",
  "uuid-dev",
  "libjansson-dev",
  "liblz4-dev",
  "libarchive-dev",
  "libhwloc-dev",
  "libsqlite3-dev",
  "lua5.1",
  "liblua5.1-0-dev",
  "lua-posix",
  "python3-dev",
  "python3-cffi",
  "python3-ply",
  "python3-setuptools",
  "python3-yaml",
  "libncurses-dev",
  "libsystemd-dev",
  "jq",
  "file",
  // flux-sched (C++23: gcc 12 and cmake 3.25 are enough)
  "cmake",
  "ninja-build",
  "libboost-dev",
  "libboost-graph-dev",
  "libedit-dev",
  "libyaml-cpp-dev",
  "python3-jsonschema",
];

export const FLUX_RUNTIME_PACKAGES: readonly string[] = [
  "libzmq5",
  "libjansson4",
  "liblz4-1",
  "libarchive13",
  "libhwloc15",
  "libsqlite3-0",
  "libuuid1",
  "libncursesw6",
  "libsystemd0",
  "liblua5.1-0",
  "lua-posix",
  "python3",
  // Not pulled in by python3, but Flux's Python bindings link it.
  "libpython3.11",
  "python3-cffi-backend",
  "python3-yaml",
  "python3-ply",
  // Fluxion
  "libyaml-cpp0.7",
  "libboost-graph1.74.0",
  // flux.wrap, logging.timed, and tools people expect in a Flux container
  "strace",
  "time",
  "procps",
  "hostname",
  "iproute2",
  "ca-certificates",
];
