#!/usr/bin/env bash
# Builds the Kubernetes binaries, etcd, KWOK and CoreDNS from their Go modules (through the Go
# module proxy) into a cache outside the repository, keyed by version.
# Re-running is cheap: a binary that is already in the cache is not rebuilt.
#
#   build-binaries.sh [NAME...]   NAME: etcd kube-apiserver kube-controller-manager
#                                 kube-scheduler kwok kubelet kube-proxy coredns
#                                 (default: the first five, what a KWOK cluster runs)
#
# Prints the cache directory as its last line.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.33.13}"
ETCD_VERSION="${ETCD_VERSION:-v3.5.21}"
KWOK_VERSION="${KWOK_VERSION:-v0.7.0}"
COREDNS_VERSION="${COREDNS_VERSION:-v1.12.3}"
CACHE_ROOT="${MINICLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minicluster-operator}"
BIN_DIR="$CACHE_ROOT/bin/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION"
WORK="$CACHE_ROOT/build"
mkdir -p "$BIN_DIR" "$WORK"

export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
step() { printf '[build-binaries] %s\n' "$*" >&2; }

# Shows that a long `go build` is alive: elapsed time every 20 s.
with_progress() {
  local what="$1"; shift
  local start=$SECONDS
  "$@" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 20 &
    wait $! || true
    kill -0 "$pid" 2>/dev/null && step "  ... still building $what ($((SECONDS - start)) s)"
  done
  wait "$pid"
  step "  built $what in $((SECONDS - start)) s"
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
    local upstream
    upstream=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
    {
      echo "module local/k8sbuild"
      echo
      echo "go 1.24.0"
      echo
      echo "require k8s.io/kubernetes $K8S_VERSION"
      echo
      grep -oE '^\s*k8s\.io/[a-z0-9-]+ => \./staging' "$upstream" | awk '{print $1}' | sort -u |
        while read -r m; do echo "replace $m => $m $staging"; done
    } >"$dir/go.mod.tmp"
    mv "$dir/go.mod.tmp" "$dir/go.mod"
  fi
  local pkg="k8s.io/component-base/version"
  local minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  local ldflags="-s -w -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X k8s.io/client-go/pkg/version.gitVersion=$K8S_VERSION -X $pkg.buildDate=1970-01-01T00:00:00Z"
  for n in "${missing[@]}"; do
    (cd "$dir" && with_progress "$n" go build -trimpath -ldflags "$ldflags" -o "$BIN_DIR/$n.tmp" "k8s.io/kubernetes/cmd/$n")
    mv "$BIN_DIR/$n.tmp" "$BIN_DIR/$n"
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
    printf 'module local/%sbuild\n\ngo 1.24.0\n\nrequire %s %s\n' "$name" "$module" "$version" >"$dir/go.mod"
  fi
  (cd "$dir" && with_progress "$name" go build -trimpath -ldflags "-s -w" -o "$BIN_DIR/$name.tmp" "$pkg")
  mv "$BIN_DIR/$name.tmp" "$BIN_DIR/$name"
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
  (cd "$dir" && with_progress coredns go build -trimpath -ldflags "-s -w" -o "$BIN_DIR/coredns.tmp" .)
  mv "$BIN_DIR/coredns.tmp" "$BIN_DIR/coredns"
}

if [ $# -gt 0 ]; then WANTED=("$@"); else
  WANTED=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
fi
start=$SECONDS
build_module_binary etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION" go.etcd.io/etcd/server/v3
build_kubernetes
build_module_binary kwok sigs.k8s.io/kwok "$KWOK_VERSION" sigs.k8s.io/kwok/cmd/kwok
build_coredns
step "all binaries ready in $((SECONDS - start)) s"
echo "$BIN_DIR"
