// What `kubectl cstor-pool get|describe|tree` show, as a pure function of the objects of one namespace: each view
// is first a model (printed as is by -o json|yaml), then aligned text. No clock: times are printed as stored.
// The objects come from the apiserver or from files (cli/views-command.ts); nothing here knows which.
import { ANNOTATION, KIND, LABEL } from "../api/constants.js";
import type {
  BlockDeviceClaim,
  Condition,
  CSPC,
  CSPI,
  CV,
  CVC,
  CVR,
  DeviceHealth,
  KubeObject,
} from "../api/types.js";
import { poolDeploymentName, zpoolName } from "../lib/names.js";
import { quantityBytes } from "../lib/quantity.js";

/** A pool or volume target Deployment: only what the views read. */
export interface Deployment extends KubeObject {
  spec?: { replicas?: number };
  status?: { availableReplicas?: number; readyReplicas?: number };
}

/** A core/v1 Event: only what the views read. */
export interface KubeEvent extends KubeObject {
  involvedObject?: { kind?: string; name?: string };
  type?: string;
  reason?: string;
  message?: string;
  count?: number;
  firstTimestamp?: string;
  lastTimestamp?: string;
  eventTime?: string;
  source?: { component?: string; host?: string };
}

/** Every object a view may read, of one namespace. */
export interface ClusterObjects {
  namespace: string;
  cspcs: CSPC[];
  cspis: CSPI[];
  claims: BlockDeviceClaim[];
  deployments: Deployment[];
  events: KubeEvent[];
  cvcs: CVC[];
  cvs: CV[];
  cvrs: CVR[];
}

const BY_KIND: Record<string, Exclude<keyof ClusterObjects, "namespace">> = {
  [KIND.cspc]: "cspcs",
  [KIND.cspi]: "cspis",
  [KIND.blockDeviceClaim]: "claims",
  [KIND.deployment]: "deployments",
  [KIND.event]: "events",
  [KIND.cvc]: "cvcs",
  [KIND.cv]: "cvs",
  [KIND.cvr]: "cvrs",
};

/** The kinds a view reads; other objects (BlockDevices, Pods...) are left out. */
export const VIEW_KINDS = Object.keys(BY_KIND);

/** Objects of any kinds, as files hold them, sorted into a namespace's ClusterObjects (other namespaces left out). */
export function clusterObjects(namespace: string, objects: readonly KubeObject[]): ClusterObjects {
  const out: ClusterObjects = {
    namespace,
    cspcs: [],
    cspis: [],
    claims: [],
    deployments: [],
    events: [],
    cvcs: [],
    cvs: [],
    cvrs: [],
  };
  for (const object of objects) {
    const key = BY_KIND[object.kind];
    if (key && (object.metadata?.namespace ?? namespace) === namespace)
      (out[key] as KubeObject[]).push(object);
  }
  return out;
}

const NONE = "-";
const nameOf = (o: KubeObject): string => o.metadata?.name ?? "";
const byName = <T extends KubeObject>(items: readonly T[]): T[] =>
  [...items].sort((a, b) => nameOf(a).localeCompare(nameOf(b)));

/** Used space as a share of the total, from Kubernetes quantities; undefined when either is missing or unreadable. */
export function usedRatio(used: string | undefined, total: string | undefined): number | undefined {
  const u = quantityBytes(used);
  const t = quantityBytes(total);
  if (u === undefined || t === undefined || t === 0n) return undefined;
  return Number((u * 10_000n) / t) / 10_000;
}

const BAR_WIDTH = 10;

/** `[####------]  42%`: a share as ten cells, then the percentage; `-` when unknown. */
export function capacityBar(ratio: number | undefined): string {
  if (ratio === undefined) return NONE;
  const clamped = Math.min(Math.max(ratio, 0), 1);
  const filled = Math.round(clamped * BAR_WIDTH);
  return `[${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}] ${String(Math.round(ratio * 100)).padStart(3)}%`;
}

/** Rows under a header, each column as wide as its widest cell, two spaces apart; no trailing spaces. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  return (
    [header, ...rows]
      .map((cells) =>
        cells
          .map((c, i) => c.padEnd(widths[i]))
          .join("  ")
          .trimEnd(),
      )
      .join("\n") + "\n"
  );
}

/** A table column: its header and cell; a wide one only with -o wide. */
interface Column<R> {
  header: string;
  cell: (row: R) => string;
  wide?: true;
}

function columnsTable<R>(columns: readonly Column<R>[], rows: readonly R[], wide: boolean): string {
  if (rows.length === 0) return "";
  const shown = columns.filter((c) => wide || !c.wide);
  return table(
    shown.map((c) => c.header),
    rows.map((r) => shown.map((c) => c.cell(r))),
  );
}

const replicasOn = (objects: ClusterObjects, cspi: string): CVR[] =>
  byName(objects.cvrs.filter((r) => r.metadata.labels?.[LABEL.replicaPool] === cspi));
const isHealthy = (r: CVR): boolean => r.status?.phase === "Healthy";

// ---- get pools ----

export interface PoolRow {
  name: string;
  cspc: string;
  node: string;
  health: string;
  readOnly: boolean;
  capacity?: { total: string; used: string; free: string };
  usedRatio?: number;
  /** CStorVolumeReplicas on the pool: Healthy ones and all. */
  replicas: { healthy: number; total: number };
  /** Members ONLINE (or a spare AVAIL) and all members the node daemon reported. */
  devices: { online: number; total: number };
  zpool: string;
  lastUpdateTime?: string;
}

const deviceOk = (d: DeviceHealth): boolean => d.state === "ONLINE" || d.state === "AVAIL";

export function poolRows(objects: ClusterObjects): PoolRow[] {
  return byName(objects.cspis).map((cspi) => {
    const status = cspi.status ?? {};
    const replicas = replicasOn(objects, nameOf(cspi));
    const devices = status.devices ?? [];
    const ratio = usedRatio(status.capacity?.used, status.capacity?.total);
    return {
      name: nameOf(cspi),
      cspc: cspi.metadata.labels?.[LABEL.cspc] ?? NONE,
      node: cspi.spec.hostName,
      health: status.phase ?? "Pending",
      readOnly: status.readOnly === true,
      ...(status.capacity ? { capacity: status.capacity } : {}),
      ...(ratio !== undefined ? { usedRatio: ratio } : {}),
      replicas: { healthy: replicas.filter(isHealthy).length, total: replicas.length },
      devices: { online: devices.filter(deviceOk).length, total: devices.length },
      zpool: status.poolName ?? zpoolName(nameOf(cspi)),
      ...(status.lastUpdateTime ? { lastUpdateTime: status.lastUpdateTime } : {}),
    };
  });
}

const POOL_COLUMNS: readonly Column<PoolRow>[] = [
  { header: "NAME", cell: (r) => r.name },
  { header: "NODE", cell: (r) => r.node },
  { header: "HEALTH", cell: (r) => r.health },
  { header: "CAPACITY", cell: (r) => capacityBar(r.usedRatio) },
  { header: "REPLICAS", cell: (r) => `${r.replicas.healthy}/${r.replicas.total}` },
  { header: "CSPC", cell: (r) => r.cspc, wide: true },
  { header: "USED", cell: (r) => r.capacity?.used ?? NONE, wide: true },
  { header: "TOTAL", cell: (r) => r.capacity?.total ?? NONE, wide: true },
  {
    header: "DEVICES",
    cell: (r) => (r.devices.total ? `${r.devices.online}/${r.devices.total}` : NONE),
    wide: true,
  },
  { header: "READONLY", cell: (r) => (r.readOnly ? "yes" : "no"), wide: true },
  { header: "POOL", cell: (r) => r.zpool, wide: true },
  { header: "LASTUPDATE", cell: (r) => r.lastUpdateTime ?? NONE, wide: true },
];

export const poolsText = (rows: readonly PoolRow[], wide: boolean): string =>
  columnsTable(POOL_COLUMNS, rows, wide);

// ---- get volumes ----

export interface VolumeRow {
  name: string;
  cspc: string;
  capacity: string;
  phase: string;
  health: string;
  /** Healthy replicas (the CStorVolume's count) and the replicas wanted. */
  replicas: { healthy: number; desired: number };
  consistencyFactor?: number;
  /** The fullest replica's used share of its size. */
  usedRatio?: number;
  pools: string[];
  nodes: string[];
}

export function volumeRows(objects: ClusterObjects): VolumeRow[] {
  const hosts = new Map(objects.cspis.map((c) => [nameOf(c), c.spec.hostName]));
  return byName(objects.cvcs).map((cvc) => {
    const name = nameOf(cvc);
    const cv = objects.cvs.find((v) => nameOf(v) === name);
    const replicas = byName(objects.cvrs.filter((r) => r.metadata.labels?.[LABEL.replicaVolume] === name));
    const pools = replicas.map((r) => r.metadata.labels?.[LABEL.replicaPool] ?? "").filter(Boolean);
    const ratios = replicas
      .map((r) => usedRatio(r.status?.capacity?.used, r.status?.capacity?.total))
      .filter((x): x is number => x !== undefined);
    const nodes = replicas.map(
      (r) =>
        hosts.get(r.metadata.labels?.[LABEL.replicaPool] ?? "") ??
        r.metadata.annotations?.[ANNOTATION.replicaPoolHost] ??
        NONE,
    );
    return {
      name,
      cspc: cvc.spec.cstorPoolCluster,
      capacity: cvc.spec.capacity,
      phase: cvc.status?.phase ?? "Pending",
      health: cv?.status?.phase ?? NONE,
      replicas: {
        healthy: cv?.status?.healthyReplicas ?? replicas.filter(isHealthy).length,
        desired: cvc.spec.replicaCount,
      },
      ...(cv ? { consistencyFactor: cv.spec.consistencyFactor } : {}),
      ...(ratios.length ? { usedRatio: Math.max(...ratios) } : {}),
      pools,
      nodes,
    };
  });
}

const VOLUME_COLUMNS: readonly Column<VolumeRow>[] = [
  { header: "NAME", cell: (r) => r.name },
  { header: "CAPACITY", cell: (r) => r.capacity },
  { header: "PHASE", cell: (r) => r.phase },
  { header: "HEALTH", cell: (r) => r.health },
  { header: "REPLICAS", cell: (r) => `${r.replicas.healthy}/${r.replicas.desired}` },
  { header: "USED", cell: (r) => capacityBar(r.usedRatio) },
  { header: "CSPC", cell: (r) => r.cspc, wide: true },
  {
    header: "CONSISTENCY",
    cell: (r) => (r.consistencyFactor === undefined ? NONE : String(r.consistencyFactor)),
    wide: true,
  },
  { header: "POOLS", cell: (r) => r.pools.join(",") || NONE, wide: true },
  { header: "NODES", cell: (r) => r.nodes.join(",") || NONE, wide: true },
];

export const volumesText = (rows: readonly VolumeRow[], wide: boolean): string =>
  columnsTable(VOLUME_COLUMNS, rows, wide);

// ---- describe pool ----

export interface DeviceView {
  blockDeviceName?: string;
  devLink?: string;
  /** As the node daemon last reported it; "-" when it has not (the pool is not imported yet, say). */
  state: string;
  errors?: { read: number; write: number; checksum: number };
  note?: string;
  claim?: { name: string; phase: string };
}

export interface GroupView {
  /** data, write cache, read cache, spare. */
  role: string;
  type: string;
  devices: DeviceView[];
}

export interface PoolDescription {
  name: string;
  namespace: string;
  cspc: string;
  node: string;
  zpool: string;
  phase: string;
  phaseSince?: string;
  readOnly: boolean;
  capacity?: { total: string; used: string; free: string };
  usedRatio?: number;
  lastUpdateTime?: string;
  deployment?: { name: string; available: number; desired: number };
  groups: GroupView[];
  /** Members zpool reports that the spec does not list (a device ZFS swapped in, say). */
  otherDevices: DeviceView[];
  conditions: Condition[];
  replicas: { name: string; volume: string; phase: string; used?: string; total?: string }[];
  events: { time: string; type: string; reason: string; count: number; from: string; message: string }[];
}

const ROLE = (g: CSPI["spec"]["raidGroups"][number]): string =>
  g.isWriteCache ? "write cache" : g.isReadCache ? "read cache" : g.isSpare ? "spare" : "data";
const RECENT_EVENTS = 10;

/** A time as stored (cli/cluster.ts turns client-node's Dates into strings), in RFC 3339 to the second. */
function timeText(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? value : date.toISOString().replace(/\.\d{3}Z$/, "Z");
}

const eventTime = (e: KubeEvent): string =>
  timeText(e.lastTimestamp) ??
  timeText(e.eventTime) ??
  timeText(e.firstTimestamp) ??
  timeText(e.metadata?.creationTimestamp) ??
  "";

function deviceView(
  health: DeviceHealth | undefined,
  claim?: BlockDeviceClaim,
): Omit<DeviceView, "blockDeviceName" | "devLink"> {
  return {
    state: health?.state ?? NONE,
    ...(health
      ? { errors: { read: health.readErrors, write: health.writeErrors, checksum: health.checksumErrors } }
      : {}),
    ...(health?.note ? { note: health.note } : {}),
    ...(claim ? { claim: { name: nameOf(claim), phase: claim.status?.phase ?? NONE } } : {}),
  };
}

/** One pool as `describe pool` shows it, or undefined when the namespace has no CSPI of that name. */
export function describePool(objects: ClusterObjects, name: string): PoolDescription | undefined {
  const cspi = objects.cspis.find((c) => nameOf(c) === name);
  if (!cspi) return undefined;
  const status = cspi.status ?? {};
  const reported = status.devices ?? [];
  const claims = objects.claims.filter((c) => c.metadata.labels?.[LABEL.cspi] === name);
  const listed = new Set<DeviceHealth>();
  const groups = cspi.spec.raidGroups.map((group) => ({
    role: ROLE(group),
    type: group.type,
    devices: group.blockDevices.map((bd) => {
      const health =
        reported.find((d) => d.blockDeviceName === bd.blockDeviceName) ??
        (bd.devLink
          ? reported.find((d) => !d.blockDeviceName && (d.devLink ?? d.path) === bd.devLink)
          : undefined);
      if (health) listed.add(health);
      const claim = claims.find((c) => c.spec.blockDeviceName === bd.blockDeviceName);
      return {
        blockDeviceName: bd.blockDeviceName,
        ...(bd.devLink ? { devLink: bd.devLink } : {}),
        ...deviceView(health, claim),
      };
    }),
  }));
  const deployment = objects.deployments.find((d) => nameOf(d) === poolDeploymentName(name));
  const ratio = usedRatio(status.capacity?.used, status.capacity?.total);
  const events = objects.events
    .filter((e) => e.involvedObject?.kind === KIND.cspi && e.involvedObject.name === name)
    .map((e) => ({
      time: eventTime(e),
      type: e.type ?? NONE,
      reason: e.reason ?? NONE,
      count: e.count ?? 1,
      from: e.source?.component ?? NONE,
      message: (e.message ?? "").replace(/\s*\n\s*/g, " "),
      key: nameOf(e),
    }))
    .sort((a, b) => a.time.localeCompare(b.time) || a.key.localeCompare(b.key))
    .slice(-RECENT_EVENTS)
    .map(({ key: _key, ...event }) => event);
  return {
    name,
    namespace: cspi.metadata.namespace ?? objects.namespace,
    cspc: cspi.metadata.labels?.[LABEL.cspc] ?? NONE,
    node: cspi.spec.hostName,
    zpool: status.poolName ?? zpoolName(name),
    phase: status.phase ?? "Pending",
    ...(status.phaseLastTransitionTime ? { phaseSince: status.phaseLastTransitionTime } : {}),
    readOnly: status.readOnly === true,
    ...(status.capacity ? { capacity: status.capacity } : {}),
    ...(ratio !== undefined ? { usedRatio: ratio } : {}),
    ...(status.lastUpdateTime ? { lastUpdateTime: status.lastUpdateTime } : {}),
    ...(deployment
      ? {
          deployment: {
            name: nameOf(deployment),
            available: deployment.status?.availableReplicas ?? 0,
            desired: deployment.spec?.replicas ?? 1,
          },
        }
      : {}),
    groups,
    otherDevices: reported
      .filter((d) => !listed.has(d))
      .map((d) => ({
        ...(d.devLink ? { devLink: d.devLink } : {}),
        ...deviceView(d),
        note: d.note ?? `${d.section}: ${d.path}`,
      })),
    conditions: [...(status.conditions ?? [])].sort((a, b) => a.type.localeCompare(b.type)),
    replicas: replicasOn(objects, name).map((r) => ({
      name: nameOf(r),
      volume: r.metadata.labels?.[LABEL.replicaVolume] ?? NONE,
      phase: r.status?.phase ?? "Init",
      ...(r.status?.capacity ? { used: r.status.capacity.used, total: r.status.capacity.total } : {}),
    })),
    events,
  };
}

/** `Key:  value` lines, the values aligned. */
function fields(pairs: readonly [string, string][]): string {
  const width = Math.max(...pairs.map(([key]) => key.length));
  return pairs.map(([key, value]) => `${key.padEnd(width)}  ${value}`).join("\n") + "\n";
}

const indent = (text: string, by = "  "): string => text.replace(/^(?=.)/gm, by);

function devicesTable(devices: readonly DeviceView[]): string {
  return table(
    ["DEVICE", "STATE", "READ", "WRITE", "CKSUM", "CLAIM", "PATH", "NOTE"],
    devices.map((d) => [
      d.blockDeviceName ?? NONE,
      d.state,
      d.errors ? String(d.errors.read) : NONE,
      d.errors ? String(d.errors.write) : NONE,
      d.errors ? String(d.errors.checksum) : NONE,
      d.claim ? `${d.claim.name} (${d.claim.phase})` : NONE,
      d.devLink ?? NONE,
      d.note ?? "",
    ]),
  );
}

export function describeText(pool: PoolDescription): string {
  const capacity = pool.capacity
    ? `${capacityBar(pool.usedRatio)}  ${pool.capacity.used} used of ${pool.capacity.total}, ${pool.capacity.free} free`
    : NONE;
  const head = fields([
    ["Name:", pool.name],
    ["Namespace:", pool.namespace],
    ["CSPC:", pool.cspc],
    ["Node:", pool.node],
    ["Pool:", pool.zpool],
    ["Phase:", pool.phaseSince ? `${pool.phase} (since ${pool.phaseSince})` : pool.phase],
    ["Read-only:", pool.readOnly ? "yes" : "no"],
    ["Capacity:", capacity],
    [
      "Pool pod:",
      pool.deployment
        ? `Deployment ${pool.deployment.name}, ${pool.deployment.available}/${pool.deployment.desired} available`
        : "no Deployment",
    ],
    ["Last update:", pool.lastUpdateTime ?? NONE],
  ]);
  const sections = [head];
  sections.push(
    "Raid groups:\n" +
      pool.groups
        .map(
          (g, i) => `  ${g.role} ${g.type} (raidGroups[${i}]):\n${indent(devicesTable(g.devices), "    ")}`,
        )
        .join("") +
      (pool.otherDevices.length
        ? `  not in the spec:\n${indent(devicesTable(pool.otherDevices), "    ")}`
        : ""),
  );
  sections.push(
    pool.conditions.length
      ? `Conditions:\n${indent(
          table(
            ["TYPE", "STATUS", "REASON", "SINCE", "MESSAGE"],
            pool.conditions.map((c) => [
              c.type,
              c.status,
              c.reason,
              c.lastTransitionTime,
              c.message.replace(/\s*\n\s*/g, " "),
            ]),
          ),
        )}`
      : "Conditions: none\n",
  );
  sections.push(
    pool.replicas.length
      ? `Volume replicas:\n${indent(
          table(
            ["VOLUME", "REPLICA", "PHASE", "USED", "SIZE"],
            pool.replicas.map((r) => [r.volume, r.name, r.phase, r.used ?? NONE, r.total ?? NONE]),
          ),
        )}`
      : "Volume replicas: none\n",
  );
  sections.push(
    pool.events.length
      ? `Events:\n${indent(
          table(
            ["LAST SEEN", "TYPE", "REASON", "COUNT", "FROM", "MESSAGE"],
            pool.events.map((e) => [e.time, e.type, e.reason, String(e.count), e.from, e.message]),
          ),
        )}`
      : "Events: none\n",
  );
  return sections.join("");
}

// ---- tree ----

export interface TreeNode {
  kind: string;
  name: string;
  /** One line about its state, as the view shows it after the name. */
  summary: string;
  children: TreeNode[];
}

function cspcSummary(cspc: CSPC): string {
  const s = cspc.status ?? {};
  return [
    s.phase ?? "Pending",
    `${s.healthyInstances ?? 0}/${s.desiredInstances ?? cspc.spec.pools.length} healthy`,
  ].join(", ");
}

function cspiNode(objects: ClusterObjects, cspi: CSPI): TreeNode {
  const name = nameOf(cspi);
  const deployment = objects.deployments.find((d) => nameOf(d) === poolDeploymentName(name));
  const claims = byName(objects.claims.filter((c) => c.metadata.labels?.[LABEL.cspi] === name));
  return {
    kind: KIND.cspi,
    name,
    summary: [
      cspi.spec.hostName,
      cspi.status?.phase ?? "Pending",
      capacityBar(usedRatio(cspi.status?.capacity?.used, cspi.status?.capacity?.total)),
    ].join(", "),
    children: [
      ...(deployment
        ? [
            {
              kind: KIND.deployment,
              name: nameOf(deployment),
              summary: `${deployment.status?.availableReplicas ?? 0}/${deployment.spec?.replicas ?? 1} available`,
              children: [],
            },
          ]
        : []),
      ...claims.map((c) => ({
        kind: KIND.blockDeviceClaim,
        name: nameOf(c),
        summary: `${c.spec.blockDeviceName ?? NONE}, ${c.status?.phase ?? "Pending"}`,
        children: [],
      })),
      ...replicasOn(objects, name).map((r) => ({
        kind: KIND.cvr,
        name: nameOf(r),
        summary: `volume ${r.metadata.labels?.[LABEL.replicaVolume] ?? NONE}, ${r.status?.phase ?? "Init"}`,
        children: [],
      })),
    ],
  };
}

/** Every CSPC (or the one named) with its CSPIs, and under each its pool Deployment, claims and replicas. */
export function tree(objects: ClusterObjects, cspcName?: string): TreeNode[] {
  return byName(objects.cspcs)
    .filter((c) => cspcName === undefined || nameOf(c) === cspcName)
    .map((cspc) => ({
      kind: KIND.cspc,
      name: nameOf(cspc),
      summary: cspcSummary(cspc),
      children: byName(objects.cspis.filter((i) => i.metadata.labels?.[LABEL.cspc] === nameOf(cspc))).map(
        (cspi) => cspiNode(objects, cspi),
      ),
    }));
}

export function treeText(nodes: readonly TreeNode[]): string {
  const lines: string[] = [];
  const walk = (node: TreeNode, prefix: string, branch: string, last: boolean): void => {
    lines.push(`${prefix}${branch}${node.kind}/${node.name}  ${node.summary}`);
    const below = branch === "" ? "" : `${prefix}${last ? "    " : "│   "}`;
    node.children.forEach((child, i) =>
      walk(child, below, i === node.children.length - 1 ? "└── " : "├── ", i === node.children.length - 1),
    );
  };
  for (const node of nodes) walk(node, "", "", true);
  return lines.length ? `${lines.join("\n")}\n` : "";
}
