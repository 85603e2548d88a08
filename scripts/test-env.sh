#!/usr/bin/env bash
# Prepares this machine for `npm test`: installs and starts what the tests need. Idempotent and quick when
# everything is already there. Slow artefacts are cached outside the clone under $CSTOR_CACHE.
set -euo pipefail
export CSTOR_CACHE="${CSTOR_CACHE:-/var/cache/cstor-pool-operator}"
mkdir -p "$CSTOR_CACHE"

# zfs-fuse for the node daemon's tests (pools on sparse files and loop devices; see docs/node-daemon.md).
ensure_zfs_fuse() {
  if ! command -v zpool >/dev/null 2>&1 || ! command -v zfs-fuse >/dev/null 2>&1; then
    echo "test-env: installing zfs-fuse" >&2
    # A fresh machine has empty package lists: update only when the install cannot find the package.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zfs-fuse >&2 2>/dev/null \
      || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zfs-fuse >&2; }
  fi
  # The daemon answers `zpool list` once it is up; the pidfile alone may be stale after a crash.
  if ! zpool list >/dev/null 2>&1; then
    echo "test-env: starting zfs-fuse" >&2
    [ -e /dev/fuse ] || modprobe fuse 2>/dev/null || true
    if [ -f /run/zfs-fuse.pid ] && ! kill -0 "$(cat /run/zfs-fuse.pid)" 2>/dev/null; then rm -f /run/zfs-fuse.pid; fi
    zfs-fuse --pidfile /run/zfs-fuse.pid
    # After a crash it first imports every pool its cache file lists, which takes longer than a clean start.
    for _ in $(seq 1 300); do zpool list >/dev/null 2>&1 && break; sleep 0.2; done
    zpool list >/dev/null 2>&1 || { echo "test-env: zfs-fuse did not start (is /dev/fuse available?)" >&2; exit 1; }
  fi
  # Loop devices back the read-cache (L2ARC) tests: ZFS refuses plain files as cache devices.
  [ -e /dev/loop-control ] || modprobe loop 2>/dev/null || true
}
ensure_zfs_fuse

# promtool (Debian's prometheus package) checks the daemon's /metrics and unit-tests the alerts
# (docs/operations.md#alerts). Only the binary is used: no Prometheus server is started.
ensure_promtool() {
  if ! command -v promtool >/dev/null 2>&1; then
    echo "test-env: installing promtool (prometheus)" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >&2 2>/dev/null \
      || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >&2; }
  fi
}
ensure_promtool
# tgt (tgtd, tgtadm), libiscsi's tools and qemu-img with libiscsi for the pool agent's iSCSI export tests.
ensure_iscsi_tools() {
  if ! command -v tgtd >/dev/null 2>&1 || ! command -v iscsi-ls >/dev/null 2>&1 || ! command -v qemu-img >/dev/null 2>&1; then
    echo "test-env: installing tgt, libiscsi-bin and qemu-utils" >&2
    local packages=(tgt libiscsi-bin qemu-utils)
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >&2 2>/dev/null \
      || { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >&2; }
  fi
}
ensure_iscsi_tools

# user-mode-linux, open-iscsi, mdadm and e2fsprogs for the data-path tests (Linux 6.1 as a process: md, the
# iSCSI initiator and LIO run in it), the UML module root and the FPU shim, cached (docs/data-path-tests.md).
bash "$(dirname "$0")/uml-env.sh"

# etcd, kubectl and kube-apiserver for test/integration (kube-apiserver is built once from Go modules).
bash "$(dirname "$0")/kube-env.sh"

# csi-sanity and the CSI sidecars (external-provisioner, -attacher, -resizer) for test/csi and
# test/integration/csi-sidecars.test.ts, each built once from its Go module.
bash "$(dirname "$0")/csi-env.sh"

# Node 24 (the production image's runtime, which test/runtime runs the hooks under too), podman and buildah with
# their configuration and storage in the cache, and the images' base made here when no registry answers
# (test/images builds and starts every image; docs/adr/0049-the-images-built-by-buildah-from-the-dockerfile.md).
bash "$(dirname "$0")/image-env.sh" --local-base
