#!/usr/bin/env bash
# The Kubernetes CSI tools the CSI driver's tests run against (docs/adr/0047-the-csi-driver-one-writer-per-volume.md): csi-sanity,
# the controller sidecars, and the snapshot-controller with the snapshot CRDs (docs/adr/0050-a-snapshot-is-taken-while-md-holds-the-volumes-writes.md),
# each built once from its Go module through the module proxy and cached outside the clone, as scripts/kube-env.sh
# builds kube-apiserver.
#
#   bash scripts/csi-env.sh              build what is missing (idempotent; instant when cached)
#   bash scripts/csi-env.sh --print-env  the same, then print CSI_SANITY=… CSI_PROVISIONER=… lines, and
#                                        SNAPSHOT_CRDS=<the directory of the snapshot CRDs' YAML>
#
# Each tool gets a throwaway module under $CSTOR_CACHE/csi-tools/<tool>-<version>/ that requires the tool's module
# at its tag and repeats the version pins of the tool's own go.mod `replace` lines (go install refuses a module
# that has them). A replace that points into the tool's own repository (external-snapshotter's client => ./client)
# becomes a require of that module at the same tag, named after the package. The first build of all six takes
# about 15 minutes on 2 cores; a version bump rebuilds that tool.
# node-driver-registrar and livenessprobe are not here: the proxy serves no version of either module (their v2
# tags lack the /v2 module path), so they run only as the upstream images the manifests name.
set -euo pipefail

CACHE_DIR="${CSTOR_CACHE:-/var/cache/cstor-pool-operator}/csi-tools"

SNAPSHOTTER_VERSION=v8.7.0
# The module whose config/crd/ holds the snapshot CRDs, at the snapshotter's tag.
SNAPSHOT_CLIENT=github.com/kubernetes-csi/external-snapshotter/client/v8

# name  module  version  package of the binary  [module required at the same version]
TOOLS=(
  "csi-sanity github.com/kubernetes-csi/csi-test/v5 v5.6.0 cmd/csi-sanity"
  "csi-provisioner github.com/kubernetes-csi/external-provisioner/v6 v6.4.0 cmd/csi-provisioner"
  "csi-attacher github.com/kubernetes-csi/external-attacher/v4 v4.13.0 cmd/csi-attacher"
  "csi-resizer github.com/kubernetes-csi/external-resizer/v2 v2.3.0 cmd/csi-resizer"
  "csi-snapshotter github.com/kubernetes-csi/external-snapshotter/v8 $SNAPSHOTTER_VERSION cmd/csi-snapshotter $SNAPSHOT_CLIENT"
  "snapshot-controller github.com/kubernetes-csi/external-snapshotter/v8 $SNAPSHOTTER_VERSION cmd/snapshot-controller $SNAPSHOT_CLIENT"
)

log() { echo "csi-env: $*" >&2; }

ensure_go() {
  if ! command -v go >/dev/null 2>&1; then
    [ -x /usr/local/go/bin/go ] && export PATH="$PATH:/usr/local/go/bin"
  fi
  if ! command -v go >/dev/null 2>&1; then
    log "the Go toolchain is needed once to build the CSI tools (Debian ships none); install Go >= 1.26"
    exit 1
  fi
}

# The throwaway module: the tool at its tag, plus its go.mod's replace lines that pin versions (never a path).
write_build_module() {
  local module="$1" version="$2" package="$3" sibling="${4:-}" tool_mod
  tool_mod="$(go mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')"
  [ -f "$tool_mod" ] || { log "could not download $module@$version through the Go module proxy"; exit 1; }
  {
    echo "module cstor-pool-operator/csi-tool-build"
    echo
    echo "go $(sed -n 's/^go \([0-9.]*\)$/\1/p' "$tool_mod")"
    echo
    echo "require $module $version"
    [ -z "$sibling" ] || echo "require $sibling $version"
    echo
    sed -n 's|^replace \([^ ]*\) => \([^ ./][^ ]*\) \(v[^ ]*\)$|replace \1 => \2 \3|p' "$tool_mod"
  } >go.mod
  printf '//go:build tools\n\npackage tools\n\nimport _ "%s/%s"\n' "$module" "$package" >tools.go
}

build_tool() {
  local name="$1" module="$2" version="$3" package="$4" sibling="${5:-}"
  local dir="$CACHE_DIR/$name-$version"
  [ -x "$dir/bin/$name" ] && return 0
  ensure_go
  mkdir -p "$dir/bin"
  (
    cd "$dir"
    # One build at a time per tool: two test runs starting together must not race on the same output.
    exec 9>"$dir/.lock"
    flock 9
    [ -x "bin/$name" ] && exit 0
    log "building $name $version from $module into $dir (once)"
    export GOFLAGS="${GOFLAGS:-} -mod=mod" CGO_ENABLED=0
    write_build_module "$module" "$version" "$package" "$sibling"
    go mod tidy >tidy.log 2>&1 || { cat tidy.log >&2; exit 1; }
    go build -trimpath -ldflags "-s -w -X main.version=$version" -o "bin/$name.tmp" "$module/$package" \
      >build.log 2>&1 || { cat build.log >&2; exit 1; }
    mv "bin/$name.tmp" "bin/$name"
  )
}

for tool in "${TOOLS[@]}"; do
  # shellcheck disable=SC2086
  build_tool $tool
done
if [ "${1:-}" = "--print-env" ]; then
  for tool in "${TOOLS[@]}"; do
    read -r name _ version _ <<<"$tool"
    variable="CSI_$(echo "${name#csi-}" | tr '[:lower:]-' '[:upper:]_')"
    echo "$variable=$CACHE_DIR/$name-$version/bin/$name"
  done
  ensure_go
  crds="$(go mod download -json "$SNAPSHOT_CLIENT@$SNAPSHOTTER_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')/config/crd"
  [ -f "$crds/snapshot.storage.k8s.io_volumesnapshots.yaml" ] || { log "no snapshot CRDs in $crds"; exit 1; }
  echo "SNAPSHOT_CRDS=$crds"
fi
