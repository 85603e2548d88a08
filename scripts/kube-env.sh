#!/usr/bin/env bash
# etcd, kubectl, kube-apiserver and kube-controller-manager for the integration tests, set up on a fresh Debian
# 12 machine and cached.
#
#   bash scripts/kube-env.sh              install what is missing (idempotent; seconds when cached)
#   bash scripts/kube-env.sh --print-env  the same, then print KUBE_APISERVER=… KUBE_CONTROLLER_MANAGER=… ETCD=…
#                                         KUBECTL=… lines
#
# etcd comes from Debian (etcd-server), kubectl from the image or Debian (kubernetes-client). Debian ships no
# kube-apiserver, so it is built from Go modules: k8s.io/kubernetes at KUBE_VERSION with each staging module
# (its go.mod replace block points into ./staging) pinned to the matching k8s.io/<module> v0.<minor>.<patch>.
# The binaries are cached outside the clone under $CSTOR_CACHE/kube-apiserver-<version>/, so a version bump
# rebuilds and a fresh clone on the same machine does not. The first build takes about 4 minutes on 2 cores.
# kube-controller-manager (its PV controllers bind the device sets' and the CSI driver's PVs in
# test/integration) is built from the same module; it shares most packages with kube-apiserver and adds about
# 1.5 minutes.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.34.4}"
CACHE_DIR="${CSTOR_CACHE:-/var/cache/cstor-pool-operator}"
BUILD_DIR="$CACHE_DIR/kube-apiserver-$KUBE_VERSION"
APISERVER="$BUILD_DIR/bin/kube-apiserver"
CONTROLLER_MANAGER="$BUILD_DIR/bin/kube-controller-manager"

log() { echo "kube-env: $*" >&2; }

apt_updated=0
apt_install() {
  if [ "$(id -u)" != 0 ]; then
    log "need root to apt-get install $*; install them by hand or run as root"
    exit 1
  fi
  if [ "$apt_updated" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

ensure_etcd() {
  command -v etcd >/dev/null 2>&1 || apt_install etcd-server
}

ensure_kubectl() {
  command -v kubectl >/dev/null 2>&1 || apt_install kubernetes-client
}

ensure_go() {
  if ! command -v go >/dev/null 2>&1; then
    [ -x /usr/local/go/bin/go ] && export PATH="$PATH:/usr/local/go/bin"
  fi
  if ! command -v go >/dev/null 2>&1; then
    log "the Go toolchain is needed once to build kube-apiserver $KUBE_VERSION (Debian ships none); install Go >= 1.24"
    exit 1
  fi
}

binary_current() {
  [ -x "$1" ] && "$1" --version 2>/dev/null | grep -qx "Kubernetes $KUBE_VERSION"
}

apiserver_current() {
  binary_current "$APISERVER" && binary_current "$CONTROLLER_MANAGER"
}

# go.mod for a throwaway module whose only job is to build cmd/kube-apiserver and cmd/kube-controller-manager at
# KUBE_VERSION.
write_build_module() {
  local staging_version="v0.${KUBE_VERSION#v1.}"
  local kubernetes_mod
  kubernetes_mod="$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  [ -f "$kubernetes_mod" ] || { log "could not download k8s.io/kubernetes@$KUBE_VERSION through the Go module proxy"; exit 1; }
  {
    echo "module cstor-pool-operator/kube-apiserver-build"
    echo
    echo "go 1.24.0"
    echo
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    echo
    echo "replace ("
    sed -n 's|^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/src/k8s.io/.*$|\1|p' "$kubernetes_mod" | sort -u |
      while read -r module; do echo "	$module => $module $staging_version"; done
    echo ")"
  } >go.mod
  printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n)\n' >tools.go
}

build_apiserver() {
  ensure_go
  mkdir -p "$BUILD_DIR/bin"
  local minor="${KUBE_VERSION#v1.}"
  minor="${minor%%.*}"
  (
    cd "$BUILD_DIR"
    # One build at a time: two test runs starting together must not race on the same output.
    exec 9>"$BUILD_DIR/.lock"
    flock 9
    apiserver_current && exit 0
    log "building kube-apiserver and kube-controller-manager $KUBE_VERSION from Go modules into $BUILD_DIR (once; about 5 minutes)"
    export GOFLAGS="${GOFLAGS:-} -mod=mod" CGO_ENABLED=0
    write_build_module
    go mod tidy >tidy.log 2>&1 || { cat tidy.log >&2; exit 1; }
    local pkg=k8s.io/component-base/version
    local binary
    for binary in kube-apiserver kube-controller-manager; do
      binary_current "bin/$binary" && continue
      go build -trimpath -o "bin/$binary.tmp" \
        -ldflags "-s -w -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean" \
        "k8s.io/kubernetes/cmd/$binary" >build.log 2>&1 || { cat build.log >&2; exit 1; }
      mv "bin/$binary.tmp" "bin/$binary"
    done
  )
  apiserver_current || { log "built $APISERVER and $CONTROLLER_MANAGER but they do not both report $KUBE_VERSION"; exit 1; }
}

ensure_kube_env() {
  ensure_etcd
  ensure_kubectl
  apiserver_current || build_apiserver
}

ensure_kube_env
if [ "${1:-}" = "--print-env" ]; then
  echo "KUBE_VERSION=$KUBE_VERSION"
  echo "KUBE_APISERVER=$APISERVER"
  echo "KUBE_CONTROLLER_MANAGER=$CONTROLLER_MANAGER"
  echo "ETCD=$(command -v etcd)"
  echo "KUBECTL=$(command -v kubectl)"
fi
