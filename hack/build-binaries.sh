#!/usr/bin/env bash
# Builds the Kubernetes binaries, etcd, KWOK, CoreDNS and the real nodes' container runtime
# (containerd and runc) from their Go modules (through the Go module proxy) into a cache outside
# the repository, keyed by version.
# Re-running is cheap: a binary that is already in the cache is not rebuilt.
# Concurrent runs are safe: each holds an exclusive lock on the cache for its whole build (a second
# run waits, then finds the binaries built), and every output is written under a unique temporary
# name in its final directory and renamed into place.
#
#   build-binaries.sh [NAME...]   NAME: etcd kube-apiserver kube-controller-manager
#                                 kube-scheduler kwok kubelet kube-proxy coredns helm kueue
#                                 containerd runc metrics-server keda
#                                 (default: the first five, what a KWOK cluster runs)
#         containerd: the daemon, containerd-shim-runc-v2 and ctr (side by side: containerd
#         starts the shim found next to itself); each of containerd and runc has a version stamp
#         (<name>.version) beside it, so a new pin rebuilds it without touching the rest.
#         keda: its operator (keda), metrics API server (keda-adapter) and admission webhooks
#         (keda-admission-webhooks).
#
# Prints the cache directory as its last line.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.5.21}"
KWOK_VERSION="${KWOK_VERSION:-v0.7.0}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.12.3}"
HELM_VERSION="${HELM_VERSION:-v3.18.6}"
# The one version of sigs.k8s.io/kueue the Go module proxy serves here; its chart comes from the
# same module (hack/cluster/kueue.ts), so the two cannot disagree.
KUEUE_VERSION="${KUEUE_VERSION:-v0.17.0}"
# The newest containerd the Go module proxy serves here: its RELEASES.md lists 2.4 (and 2.3) for
# Kubernetes 1.37, 2.2 only up to 1.36; it needs go 1.26.6 (the machine has 1.26.8).
CONTAINERD_VERSION="${CONTAINERD_VERSION:-v2.4.2}"
# containerd v2.4.2 is tested with runc v1.5.2 (its script/setup/runc-version) and asks for that or
# newer (docs/RUNC.md): the newest served. Debian's runc 1.1.5 is far below it.
RUNC_VERSION="${RUNC_VERSION:-v1.5.3}"
# The newest metrics-server the Go module proxy lists; its chart comes from the same module
# (hack/cluster/metrics_server.ts).
METRICS_SERVER_VERSION="${METRICS_SERVER_VERSION:-v0.9.0}"
# The newest KEDA the Go module proxy lists; its manifests come from the same module
# (hack/cluster/keda.ts).
KEDA_VERSION="${KEDA_VERSION:-v2.21.0}"
CACHE_ROOT="${MINICLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minicluster-operator}"
BIN_DIR="$CACHE_ROOT/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
WORK="$CACHE_ROOT/build"
mkdir -p "$BIN_DIR" "$WORK"

export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
step() { printf '[build-binaries] %s\n' "$*" >&2; }

if [ $# -gt 0 ]; then WANTED=("$@"); else
  WANTED=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
fi

# The files of one wanted name (containerd is three binaries).
files_of() {
  case "$1" in
    containerd) echo containerd containerd-shim-runc-v2 ctr ;;
    keda) echo keda keda-adapter keda-admission-webhooks ;;
    *) echo "$1" ;;
  esac
}
# version_of NAME: the pin of a name whose binaries carry a version stamp (empty for the others,
# whose version is in BIN_DIR's name or which are built once).
version_of() {
  case "$1" in
    containerd) echo "$CONTAINERD_VERSION" ;;
    runc) echo "$RUNC_VERSION" ;;
  esac
}
present() { # name
  local f v
  for f in $(files_of "$1"); do [ -x "$BIN_DIR/$f" ] || return 1; done
  v=$(version_of "$1")
  [ -z "$v" ] || [ "$(cat "$BIN_DIR/$1.version" 2>/dev/null)" = "$v" ]
}

# Everything wanted is built: no need to wait for the lock (another run may be building
# something else for minutes).
all_built=1
for n in "${WANTED[@]}"; do present "$n" || all_built=0; done
if [ "$all_built" = 1 ]; then
  echo "$BIN_DIR"
  exit 0
fi

# One build of the cache at a time (`./task demo` and `./task test` started together once raced
# on the same temporary file). The lock is released when this script exits.
LOCK="$CACHE_ROOT/build.lock"
exec 9>>"$LOCK"
if ! flock -n 9; then
  step "waiting for another build of $CACHE_ROOT to finish (lock $LOCK)"
  flock 9
fi

# Temporary outputs of this run, removed if it stops halfway.
TEMPS=()
trap 'rm -f "${TEMPS[@]}"' EXIT
# new_temp PATH: sets TMP to a new, empty, uniquely named file next to PATH (same directory, so
# that the final mv is an atomic rename). Not in a subshell: TEMPS must see it.
new_temp() {
  TMP=$(mktemp "$1.tmp.XXXXXX")
  TEMPS+=("$TMP")
}

# Shows that a long `go build` is alive: elapsed time every 20 s (checked every second, so a
# short build is not held up).
with_progress() {
  local what="$1"; shift
  local start=$SECONDS next=$((SECONDS + 20))
  "$@" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ "$SECONDS" -ge "$next" ] && kill -0 "$pid" 2>/dev/null; then
      step "  ... still building $what ($((SECONDS - start)) s)"
      next=$((next + 20))
    fi
  done
  wait "$pid"
  step "  built $what in $((SECONDS - start)) s"
}

# go_build DIR NAME LDFLAGS PACKAGE [TAGS]: builds PACKAGE in module DIR into $BIN_DIR/NAME.
go_build() {
  local dir="$1" name="$2" ldflags="$3" pkg="$4" tags="${5:-}" tmp
  new_temp "$BIN_DIR/$name"
  tmp=$TMP
  # go build overwrites the empty file that mktemp made.
  (cd "$dir" && with_progress "$name" go build -trimpath -tags "$tags" -ldflags "$ldflags" \
    -o "$tmp" "$pkg")
  chmod 0755 "$tmp"
  mv "$tmp" "$BIN_DIR/$name"
}

wanted() { # name
  local w
  for w in "${WANTED[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}

build_kubernetes() {
  local names=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy)
  local missing=()
  for n in "${names[@]}"; do wanted "$n" && { [ -x "$BIN_DIR/$n" ] || missing+=("$n"); }; done
  [ ${#missing[@]} -eq 0 ] && return 0
  local dir="$WORK/kubernetes-$K8S_VERSION"
  mkdir -p "$dir"
  local staging="v0.${K8S_VERSION#v1.}"
  step "kubernetes $K8S_VERSION (staging modules at $staging): ${missing[*]}"
  if [ ! -f "$dir/go.mod" ]; then
    # A throwaway module that requires k8s.io/kubernetes and points each staging module
    # (declared as v0.0.0 with a local replace upstream) at its published v0.x version.
    local upstream tmp
    upstream=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    new_temp "$dir/go.mod"
    tmp=$TMP
    {
      echo "module local/k8sbuild"
      echo
      echo "go 1.24.0"
      echo
      echo "require k8s.io/kubernetes $K8S_VERSION"
      echo
      grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging' "$upstream" | awk '{print $1}' | sort -u |
        while read -r m; do echo "replace $m => $m $staging"; done
    } >"$tmp"
    mv "$tmp" "$dir/go.mod"
  fi
  local pkg="k8s.io/component-base/version"
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X $pkg.buildDate=1970-01-01T00:00:00Z"
  for n in "${missing[@]}"; do
    go_build "$dir" "$n" "$ldflags" "k8s.io/kubernetes/cmd/$n"
  done
}

build_module_binary() { # name module version package
  local name="$1" module="$2" version="$3" pkg="$4"
  wanted "$name" || return 0
  [ -x "$BIN_DIR/$name" ] && return 0
  local dir="$WORK/$name-$version"
  mkdir -p "$dir"
  step "$name from $module@$version"
  if [ ! -f "$dir/go.mod" ]; then
    local tmp
    new_temp "$dir/go.mod"
    tmp=$TMP
    printf 'module local/%sbuild\n\ngo 1.24.0\n\nrequire %s %s\n' "$name" "$module" "$version" >"$tmp"
    mv "$tmp" "$dir/go.mod"
  fi
  go_build "$dir" "$name" "-s -w" "$pkg"
}

# CoreDNS with only the plugins a cluster needs (hack/coredns/main.go); its Kubernetes client
# libraries are pinned to the cluster's version, which shares the Go build cache with the rest.
build_coredns() {
  wanted coredns || return 0
  [ -x "$BIN_DIR/coredns" ] && return 0
  local dir="$WORK/coredns-$COREDNS_VERSION"
  local staging="v0.${K8S_VERSION#v1.}"
  mkdir -p "$dir"
  step "coredns $COREDNS_VERSION (plugins of hack/coredns/main.go)"
  cp "$(dirname "$0")/coredns/main.go" "$dir/main.go"
  if [ ! -f "$dir/go.sum" ]; then
    {
      printf 'module local/corednsbuild\n\ngo 1.24.0\n\nrequire github.com/coredns/coredns %s\n' "$COREDNS_VERSION"
      for m in api apimachinery client-go; do printf 'replace k8s.io/%s => k8s.io/%s %s\n' "$m" "$m" "$staging"; done
    } >"$dir/go.mod"
    (cd "$dir" && go mod tidy >&2)
  fi
  go_build "$dir" coredns "-s -w" .
}

# module_dir NAME MODULE VERSION: sets MODULE_DIR to a throwaway module in $WORK that requires
# MODULE@VERSION, with the go version that module asks for. Not in a subshell: TEMPS must see it.
module_dir() {
  local name="$1" module="$2" version="$3" gomod go_line
  MODULE_DIR="$WORK/$name-$version"
  mkdir -p "$MODULE_DIR"
  if [ ! -f "$MODULE_DIR/go.mod" ]; then
    gomod=$(go mod download -json "$module@$version" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    go_line=$(grep -m1 -E '^go [0-9.]+$' "$gomod")
    new_temp "$MODULE_DIR/go.mod"
    printf 'module local/%sbuild\n\n%s\n\nrequire %s %s\n' "$name" "$go_line" "$module" "$version" >"$TMP"
    mv "$TMP" "$MODULE_DIR/go.mod"
  fi
}

# stamp NAME: records the version just built (last, after every file of NAME is in place).
stamp() {
  new_temp "$BIN_DIR/$1.version"
  version_of "$1" >"$TMP"
  chmod 0644 "$TMP"
  mv "$TMP" "$BIN_DIR/$1.version"
}

# containerd as its Makefile builds it, without cgo: the btrfs snapshotter (the only part that
# needs cgo) drops out, devmapper and ZFS are left out by their tags; the real nodes use
# overlayfs. The shim without its gRPC server (ttrpc only), as upstream ships it.
build_containerd() {
  wanted containerd || return 0
  present containerd && return 0
  local dir pkg=github.com/containerd/containerd/v2 ldflags
  module_dir containerd "$pkg" "$CONTAINERD_VERSION"
  dir=$MODULE_DIR
  step "containerd, containerd-shim-runc-v2 and ctr from $pkg@$CONTAINERD_VERSION"
  ldflags="-s -w -X $pkg/version.Version=$CONTAINERD_VERSION -X $pkg/version.Package=$pkg"
  go_build "$dir" containerd "$ldflags" "$pkg/cmd/containerd" "urfave_cli_no_docs no_devmapper no_zfs"
  go_build "$dir" containerd-shim-runc-v2 "$ldflags" "$pkg/cmd/containerd-shim-runc-v2" \
    "urfave_cli_no_docs no_grpc"
  go_build "$dir" ctr "$ldflags" "$pkg/cmd/ctr" urfave_cli_no_docs
  stamp containerd
}

# runc needs cgo (its nsenter is C) and, for seccomp profiles (RuntimeDefault, which the
# restricted Pod Security level requires), libseccomp: Debian's libseccomp-dev at build time, its
# libseccomp2 at run time. Upstream's default tags but libpathrs (a Rust library; without it runc
# uses its Go implementation of the same path checks).
build_runc() {
  wanted runc || return 0
  present runc && return 0
  local dir
  module_dir runc github.com/opencontainers/runc "$RUNC_VERSION"
  dir=$MODULE_DIR
  step "runc from github.com/opencontainers/runc@$RUNC_VERSION (cgo, libseccomp)"
  CGO_ENABLED=1 go_build "$dir" runc "-s -w -X main.gitCommit=$RUNC_VERSION" \
    github.com/opencontainers/runc "seccomp urfave_cli_no_docs"
  stamp runc
}

start=$SECONDS
build_module_binary etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" go.etcd.io/etcd/server/v3
build_kubernetes
build_module_binary kwok sigs.k8s.io/kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
build_coredns
build_containerd
build_runc
build_module_binary helm helm.sh/helm/v3 "$HELM_VERSION" helm.sh/helm/v3/cmd/helm
# Kueue's manager (cmd/kueue) with the version stamps its Makefile sets. Its own module: it pins its
# Kubernetes libraries (v0.35), which the cluster's build cannot share.
if wanted kueue && [ ! -x "$BIN_DIR/kueue" ]; then
  kdir="$WORK/kueue-$KUEUE_VERSION"
  mkdir -p "$kdir"
  step "kueue from sigs.k8s.io/kueue@$KUEUE_VERSION"
  if [ ! -f "$kdir/go.mod" ]; then
    new_temp "$kdir/go.mod"
    printf 'module local/kueuebuild\n\ngo 1.25.0\n\nrequire sigs.k8s.io/kueue %s\n' "$KUEUE_VERSION" >"$TMP"
    mv "$TMP" "$kdir/go.mod"
  fi
  vpkg=sigs.k8s.io/kueue/pkg/version
  go_build "$kdir" kueue "-s -w -X $vpkg.GitVersion=$KUEUE_VERSION -X $vpkg.BuildDate=1970-01-01T00:00:00Z" \
    sigs.k8s.io/kueue/cmd/kueue
fi
# metrics-server with the version stamps its Makefile sets (client-go's version package). Its own
# module: it pins its Kubernetes libraries (v0.36).
if wanted metrics-server && [ ! -x "$BIN_DIR/metrics-server" ]; then
  mdir="$WORK/metrics-server-$METRICS_SERVER_VERSION"
  mkdir -p "$mdir"
  step "metrics-server from sigs.k8s.io/metrics-server@$METRICS_SERVER_VERSION"
  if [ ! -f "$mdir/go.mod" ]; then
    new_temp "$mdir/go.mod"
    printf 'module local/metricsserverbuild\n\ngo 1.26.4\n\nrequire sigs.k8s.io/metrics-server %s\n' \
      "$METRICS_SERVER_VERSION" >"$TMP"
    mv "$TMP" "$mdir/go.mod"
  fi
  vpkg=k8s.io/client-go/pkg/version
  go_build "$mdir" metrics-server \
    "-s -w -X $vpkg.gitVersion=$METRICS_SERVER_VERSION -X $vpkg.buildDate=1970-01-01T00:00:00Z" \
    sigs.k8s.io/metrics-server/cmd/metrics-server
fi
# KEDA's three programs with the version stamps its Makefile sets. Its own module (it needs go
# 1.26.0); they share nearly every package (every scaler is linked into each), so the second and
# third build mostly link.
if wanted keda && ! present keda; then
  kedadir="$WORK/keda-$KEDA_VERSION"
  mkdir -p "$kedadir"
  step "keda from github.com/kedacore/keda/v2@$KEDA_VERSION (operator, metrics API server, webhooks)"
  if [ ! -f "$kedadir/go.mod" ]; then
    new_temp "$kedadir/go.mod"
    printf 'module local/kedabuild\n\ngo 1.26.0\n\nrequire github.com/kedacore/keda/v2 %s\n' \
      "$KEDA_VERSION" >"$TMP"
    mv "$TMP" "$kedadir/go.mod"
  fi
  vpkg=github.com/kedacore/keda/v2/version
  kflags="-s -w -X $vpkg.Version=${KEDA_VERSION#v} -X $vpkg.GitCommit=$KEDA_VERSION"
  go_build "$kedadir" keda "$kflags" github.com/kedacore/keda/v2/cmd/operator
  go_build "$kedadir" keda-adapter "$kflags" github.com/kedacore/keda/v2/cmd/adapter
  go_build "$kedadir" keda-admission-webhooks "$kflags" github.com/kedacore/keda/v2/cmd/webhooks
fi
step "all binaries ready in $((SECONDS - start)) s"
echo "$BIN_DIR"
