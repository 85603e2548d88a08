# syntax=docker/dockerfile:1
# Every image of the project, from one build (docs/adr/0049-the-images-built-by-buildah-from-the-dockerfile.md).
# An image is a stage no other stage builds on, named by its org.opencontainers.image.title label; its reference
# (registry and tag) is in metacontroller/default/kustomization.yaml. `npm run images` builds them all with
# buildah; with Docker, one is e.g.
#   docker build --target hooks -t <registry>/cstor-pool-hooks:<version> .
# Node 24 LTS, Debian bookworm slim (glibc, util-linux's nsenter), production dependencies only.

FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY api api
COPY lib lib
COPY runtime runtime
COPY process process
COPY zfs zfs
COPY iscsi iscsi
COPY md md
COPY hooks hooks
COPY node-daemon node-daemon
COPY pool-agent pool-agent
COPY volume-target volume-target
COPY csi csi
COPY cli cli
RUN npm run build && npm prune --omit=dev

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules node_modules
COPY --from=build /src/dist dist

# The hook server: stateless HTTP(S), as the image's unprivileged "node" user (uid 1000), nothing written to
# disk, so the Deployment runs it with a read-only root filesystem.
FROM runtime AS hooks
LABEL org.opencontainers.image.title="cstor-pool-hooks"
USER 1000:1000
EXPOSE 8080 8443
ENTRYPOINT ["node", "dist/hooks/main.js"]

# The node daemon: root, because it runs the HOST's zpool/zfs through `nsenter -t 1 -m --` (nsenter is in
# util-linux, part of the base image). No ZFS userland in the image: it must match the host's kernel module.
FROM runtime AS node-daemon
LABEL org.opencontainers.image.title="cstor-pool-node-daemon"
EXPOSE 9500
ENTRYPOINT ["node", "dist/node-daemon/main.js"]

# The pool pod (docs/adr/0010-the-hosts-zfs-owns-the-pool-the-pool-pod-runs.md and docs/adr/0032-the-pool-agent-what-it-reads-how-it-exports.md): the pool agent as the entrypoint (root: it runs the host's
# zpool/zfs through `nsenter -t 1 -m --`), and tgt, whose tgtd the pool Deployment runs in a second container
# from this same image to serve the pool's replicas over iSCSI.
FROM runtime AS pool-agent
LABEL org.opencontainers.image.title="cstor-pool-agent"
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends tgt \
    && rm -rf /var/lib/apt/lists/*
EXPOSE 9500 3260
ENTRYPOINT ["node", "dist/pool-agent/main.js"]

# The volume target (docs/adr/0039-the-volume-target-md-raid1-served-by-lio.md and
# docs/adr/0040-the-target-agent-credentials-names-and-status.md): root and privileged, because it mirrors the
# replicas with the node's md (mdadm), logs in to them with open-iscsi's iscsiadm (run in the host's network
# namespace through nsenter, where the node's iscsid listens) and serves the LUN through the kernel's LIO
# (configfs, written directly: no targetcli). No iscsid in the image: the node runs one. No tgt: the replicas'
# tgtd runs in their pool pods.
FROM runtime AS volume-target
LABEL org.opencontainers.image.title="cstor-volume-target"
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends mdadm open-iscsi \
    && rm -rf /var/lib/apt/lists/*
EXPOSE 9500 3260
ENTRYPOINT ["node", "dist/volume-target/main.js"]

# The CSI driver (docs/adr/0047-the-csi-driver-one-writer-per-volume.md): one image, started with --mode=controller
# in the controller Deployment (beside the provisioner, attacher, resizer and livenessprobe sidecars) and with
# --mode=node in the node DaemonSet, where it logs in with open-iscsi's iscsiadm (the node runs iscsid), makes
# filesystems (e2fsprogs, xfsprogs) and mounts (util-linux, in the base image).
FROM runtime AS csi
LABEL org.opencontainers.image.title="cstor-csi"
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends open-iscsi e2fsprogs xfsprogs \
    && rm -rf /var/lib/apt/lists/*
EXPOSE 9505
ENTRYPOINT ["node", "dist/csi/main.js"]
