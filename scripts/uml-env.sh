#!/usr/bin/env bash
# user-mode-linux and the tools the data-path tests run inside it (docs/data-path-tests.md), set up on a Debian 12
# machine and cached. Called by scripts/test-env.sh; the data-path tests call it too, so they also run alone.
#
#   bash scripts/uml-env.sh              install what is missing (idempotent; well under a second when cached)
#   bash scripts/uml-env.sh --print-env  the same, then print UML_KERNEL=… UML_MODROOT=… UML_FPU_SHIM=… lines
#
# Debian's user-mode-linux is Linux 6.1 as a process (/usr/bin/linux) with its modules (md, iscsi_tcp, LIO) in
# /usr/lib/uml/modules/<version>. The guest boots on the host's / (hostfs), and `modprobe -d DIR` looks in
# DIR/lib/modules/<version>, so the module root is a directory in the cache holding that one symlink.
# open-iscsi, mdadm, e2fsprogs, xfsprogs and fio are run by the guest from the host's /; tgt (tgtd) by the host.
set -euo pipefail
CACHE_DIR="${CSTOR_CACHE:-/var/cache/cstor-pool-operator}"
UML_DIR="$CACHE_DIR/uml"
SHIM_SOURCE="$(cd "$(dirname "$0")/.." && pwd)/testkit/uml/fpu-shim.c"
SHIM="$UML_DIR/fpu-shim.so"

log() { echo "uml-env: $*" >&2; }

# Like test-env.sh: apt-get update only when the install cannot find a package (a fresh machine's lists are empty).
apt_install() {
  if [ "$(id -u)" != 0 ]; then
    log "need root to apt-get install $*; install them by hand or run as root"
    exit 1
  fi
  log "installing $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2 2>/dev/null \
    || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2; }
}

ensure_packages() {
  local missing=()
  command -v linux.uml >/dev/null 2>&1 || [ -x /usr/bin/linux.uml ] || missing+=(user-mode-linux)
  command -v iscsiadm >/dev/null 2>&1 || missing+=(open-iscsi)
  command -v mdadm >/dev/null 2>&1 || missing+=(mdadm)
  command -v mkfs.ext4 >/dev/null 2>&1 || missing+=(e2fsprogs)
  # The CSI node's filesystems (csi/node/filesystem.ts): ext4 above, xfs here.
  command -v mkfs.xfs >/dev/null 2>&1 || missing+=(xfsprogs)
  command -v tgtd >/dev/null 2>&1 || missing+=(tgt)
  command -v gcc >/dev/null 2>&1 || missing+=(gcc libc6-dev)
  # The guests run the host's modprobe (through hostfs) to load md, iscsi_tcp and LIO; a minimal image lacks it.
  [ -x /sbin/modprobe ] || [ -x /usr/sbin/modprobe ] || missing+=(kmod)
  # The volume target's benchmark (bench/target.ts) runs the host's fio inside the guests.
  command -v fio >/dev/null 2>&1 || missing+=(fio)
  if [ "${#missing[@]}" -gt 0 ]; then apt_install "${missing[@]}"; fi
}

# The package's module directory: from its file list, else the one directory under /usr/lib/uml/modules.
module_dir() {
  local dir
  dir="$(dpkg -L user-mode-linux 2>/dev/null | grep -E '^/usr/lib/uml/modules/[^/]+$' | head -n 1 || true)"
  if [ -z "$dir" ]; then
    for dir in /usr/lib/uml/modules/*; do [ -d "$dir" ] && break; done
  fi
  [ -d "$dir" ] || { log "no UML module directory (dpkg -L user-mode-linux, /usr/lib/uml/modules/*)"; exit 1; }
  echo "$dir"
}

ensure_modroot() {
  local dir version link
  dir="$(module_dir)"
  version="${dir##*/}"
  link="$UML_DIR/modroot/lib/modules/$version"
  if [ "$(readlink "$link" 2>/dev/null || true)" != "$dir" ]; then
    mkdir -p "$UML_DIR/modroot/lib/modules"
    ln -sfn "$dir" "$link"
  fi
}

# Rebuilt when missing or older than its source (testkit/uml/fpu-shim.c says why it exists).
ensure_fpu_shim() {
  if [ ! -f "$SHIM" ] || [ "$SHIM_SOURCE" -nt "$SHIM" ]; then
    log "building $SHIM"
    mkdir -p "$UML_DIR"
    gcc -O2 -Wall -shared -fPIC -o "$SHIM.tmp" "$SHIM_SOURCE" -ldl
    mv "$SHIM.tmp" "$SHIM"
  fi
}

ensure_packages
ensure_modroot
ensure_fpu_shim

if [ "${1:-}" = "--print-env" ]; then
  echo "UML_KERNEL=/usr/bin/linux.uml"
  echo "UML_MODROOT=$UML_DIR/modroot"
  echo "UML_FPU_SHIM=$SHIM"
fi
