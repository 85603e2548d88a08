// A small cluster for admission tests: three nodes, NDM BlockDevices on them, and helpers that write CSPCs,
// the CSPIs and claims cspc-sync would have made for them, and BlockDevices in odd states.
import type { KubeObject } from "../../../api/types.js";
import { claimName, cspiName } from "../../../lib/names.js";

export const NS = "openebs";
export const CSPC_NAME = "pools";
export const GiB = 1024 ** 3;

export interface GroupDef {
  type?: string;
  devices: string[];
  role?: "isWriteCache" | "isSpare" | "isReadCache";
}

export interface PoolDef {
  host: string;
  groups: GroupDef[];
  /** Default: kubernetes.io/hostname=<host>. */
  selector?: Record<string, string>;
  poolConfig?: Record<string, unknown>;
}

export function node(name: string, extraLabels: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name,
      labels: { "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", ...extraLabels },
    },
  };
}

export interface DeviceState {
  gib?: number;
  fs?: string;
  state?: string;
  claimedBy?: string;
}

export function blockDevice(name: string, host: string, o: DeviceState = {}): KubeObject {
  return {
    apiVersion: "openebs.io/v1alpha1",
    kind: "BlockDevice",
    metadata: { name, namespace: NS, labels: { "kubernetes.io/hostname": host } },
    spec: {
      path: `/dev/disk-${name}`,
      capacity: { storage: (o.gib ?? 10) * GiB },
      devlinks: [{ kind: "by-id", links: [`/dev/disk/by-id/scsi-0QEMU_HARDDISK_${name}`] }],
      nodeAttributes: { nodeName: host },
      ...(o.fs ? { filesystem: { fsType: o.fs } } : {}),
      ...(o.claimedBy ? { claimRef: { kind: "BlockDeviceClaim", name: o.claimedBy, namespace: NS } } : {}),
    },
    status: { claimState: o.claimedBy ? "Claimed" : "Unclaimed", state: o.state ?? "Active" },
  };
}

export interface ClaimOptions {
  /** This CSPC's CSPI that uses the device; omit with `foreign` for someone else's claim. */
  cspi?: string;
  /** Someone else's claim under this name (a local PV, another CSPC). */
  foreign?: string;
  predecessor?: string;
}

export function claim(device: string, o: ClaimOptions = {}): KubeObject {
  return {
    apiVersion: "openebs.io/v1alpha1",
    kind: "BlockDeviceClaim",
    metadata: {
      name: o.foreign ?? claimName(device),
      namespace: NS,
      labels: o.foreign
        ? {}
        : {
            "openebs.io/cstor-pool-cluster": CSPC_NAME,
            ...(o.cspi ? { "openebs.io/cstor-pool-instance": o.cspi } : {}),
          },
      ...(o.predecessor ? { annotations: { "openebs.io/bd-predecessor": o.predecessor } } : {}),
    },
    spec: { blockDeviceName: device },
    status: { phase: "Bound" },
  };
}

export function poolSpec(p: PoolDef): Record<string, unknown> {
  return {
    nodeSelector: p.selector ?? { "kubernetes.io/hostname": p.host },
    raidGroups: p.groups.map((g) => ({
      ...(g.type ? { type: g.type } : {}),
      ...(g.role ? { [g.role]: true } : {}),
      blockDevices: g.devices.map((blockDeviceName) => ({ blockDeviceName })),
    })),
    ...(p.poolConfig ? { poolConfig: p.poolConfig } : {}),
  };
}

export function cspc(pools: PoolDef[], metadata: Record<string, unknown> = {}): KubeObject {
  return {
    apiVersion: "openebs.io/v1alpha1",
    kind: "CStorPoolCluster",
    metadata: { name: CSPC_NAME, namespace: NS, ...metadata },
    spec: { pools: pools.map(poolSpec) },
  };
}

export function poolName(p: PoolDef): string {
  return cspiName(
    NS,
    CSPC_NAME,
    p.groups.flatMap((g) => g.devices),
  );
}

/** The CSPI cspc-sync made for a pool, built and ONLINE, holding `volumes` volumes. */
export function cspi(p: PoolDef, o: { volumes?: number; gib?: number } = {}): KubeObject {
  const stripeRole = (g: GroupDef) => g.role === "isSpare" || g.role === "isReadCache";
  return {
    apiVersion: "openebs.io/v1alpha1",
    kind: "CStorPoolInstance",
    metadata: {
      name: poolName(p),
      namespace: NS,
      labels: { "kubernetes.io/hostname": p.host, "openebs.io/cstor-pool-cluster": CSPC_NAME },
    },
    spec: {
      hostName: p.host,
      nodeSelector: p.selector ?? { "kubernetes.io/hostname": p.host },
      poolConfig: { compression: "off", overProvisioning: false, roThresholdLimit: 85, ...p.poolConfig },
      raidGroups: p.groups.map((g) => ({
        type: stripeRole(g) ? "stripe" : (g.type ?? "stripe"),
        ...(g.role ? { [g.role]: true } : {}),
        blockDevices: g.devices.map((d) => ({
          blockDeviceName: d,
          capacity: (o.gib ?? 10) * GiB,
          devLink: `/dev/disk/by-id/scsi-0QEMU_HARDDISK_${d}`,
        })),
      })),
    },
    status: {
      phase: "ONLINE",
      provisionedReplicas: o.volumes ?? 0,
      importedOn: p.host,
      conditions: [
        {
          type: "PodAvailable",
          status: "True",
          reason: "PoolPodAvailable",
          message: "pool pod is available",
          lastTransitionTime: "2026-11-21T10:05:00Z",
        },
      ],
    },
  };
}

/** A live pool: its CSPI and one Bound claim per device. */
export function livePool(p: PoolDef, o: { volumes?: number } = {}): KubeObject[] {
  const name = poolName(p);
  return [cspi(p, o), ...p.groups.flatMap((g) => g.devices).map((d) => claim(d, { cspi: name }))];
}

export const NODES = [node("node-a"), node("node-b"), node("node-c")];

/** Free, Active, empty 10 GiB devices: a1…a8 on node-a, b1…b5 on node-b, c1…c5 on node-c. */
export const DEVICES = [
  ...Array.from({ length: 8 }, (_, i) => blockDevice(`a${i + 1}`, "node-a")),
  ...Array.from({ length: 5 }, (_, i) => blockDevice(`b${i + 1}`, "node-b")),
  ...Array.from({ length: 5 }, (_, i) => blockDevice(`c${i + 1}`, "node-c")),
];
