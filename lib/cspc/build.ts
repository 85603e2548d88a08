// Desired objects, built from a pool spec and the observed cluster. Pure and deterministic.
import {
  ANNOTATION,
  API_VERSION,
  DEFAULTS,
  KIND,
  LABEL,
  POOL_REMOVAL_REQUESTED,
} from "../../api/constants.js";
import type {
  BlockDeviceClaim,
  BlockPoolSpec,
  CSPI,
  CSPIRaidGroup,
  CSPISpec,
  KubeObject,
  PoolConfig,
} from "../../api/types.js";
import { deviceCapacity, deviceHost, deviceLink, type Inventory } from "../inventory.js";
import { claimName } from "../names.js";
import { groupRole, resolvedType } from "../rules/pool-spec.js";

/** poolConfig with its defaults made explicit, so the CSPI says exactly what the node daemon builds. */
export function resolvePoolConfig(config: PoolConfig | undefined): PoolConfig {
  return {
    ...config,
    compression: config?.compression ?? DEFAULTS.compression,
    roThresholdLimit: config?.roThresholdLimit ?? DEFAULTS.roThresholdLimit,
    overProvisioning: config?.overProvisioning ?? false,
  };
}

/** A raid group as the CSPI carries it: type resolved, role flags explicit only when set, devices filled in. */
export function resolveRaidGroup(
  group: BlockPoolSpec["raidGroups"][number],
  pool: BlockPoolSpec,
  inventory: Inventory,
): CSPIRaidGroup {
  const role = groupRole(group);
  const resolved: CSPIRaidGroup = {
    type: resolvedType(group, pool) ?? "stripe",
    blockDevices: group.blockDevices.map((d) => {
      const bd = inventory.blockDevices.get(d.blockDeviceName);
      const devLink = (bd && deviceLink(bd)) ?? d.devLink;
      const capacity = (bd && deviceCapacity(bd)) ?? d.capacity;
      return {
        blockDeviceName: d.blockDeviceName,
        ...(capacity !== undefined ? { capacity } : {}),
        ...(devLink !== undefined ? { devLink } : {}),
      };
    }),
  };
  if (role === "writeCache") resolved.isWriteCache = true;
  if (role === "spare") resolved.isSpare = true;
  if (role === "readCache") resolved.isReadCache = true;
  return resolved;
}

export function buildCspiSpec(pool: BlockPoolSpec, host: string, inventory: Inventory): CSPISpec {
  return {
    hostName: host,
    nodeSelector: { ...pool.nodeSelector },
    poolConfig: resolvePoolConfig(pool.poolConfig),
    raidGroups: pool.raidGroups.map((g) => resolveRaidGroup(g, pool, inventory)),
  };
}

export function cspiObject(
  name: string,
  inventory: Inventory,
  spec: CSPISpec,
  annotations?: Record<string, string>,
): CSPI {
  const metadata: CSPI["metadata"] = {
    name,
    namespace: inventory.namespace,
    labels: { [LABEL.cspc]: inventory.cspcName, [LABEL.hostname]: spec.hostName },
  };
  // A pool on device sets: its devices are PVCs (the pool Deployment mounts them, no BlockDeviceClaim is made).
  if (devicesOf(spec.raidGroups).some((d) => inventory.setDevices.has(d)))
    metadata.labels![LABEL.onDeviceSets] = "true";
  if (annotations && Object.keys(annotations).length > 0) metadata.annotations = annotations;
  return { apiVersion: API_VERSION, kind: KIND.cspi, metadata, spec };
}

export interface ClaimOptions {
  cspi: string;
  predecessor?: string;
  /** The device leaves the pool: its path, until the node daemon confirms it gone (ANNOTATION.bdRemoval). */
  removing?: string;
}

export function claimObject(device: string, inventory: Inventory, options: ClaimOptions): BlockDeviceClaim {
  const bd = inventory.blockDevices.get(device);
  const annotations =
    options.predecessor !== undefined || options.removing !== undefined
      ? {
          ...(options.predecessor !== undefined ? { [ANNOTATION.bdPredecessor]: options.predecessor } : {}),
          ...(options.removing !== undefined ? { [ANNOTATION.bdRemoval]: options.removing } : {}),
        }
      : undefined;
  const capacity = bd && deviceCapacity(bd);
  const host = bd && deviceHost(bd);
  const claim: BlockDeviceClaim = {
    apiVersion: API_VERSION,
    kind: KIND.blockDeviceClaim,
    metadata: {
      // An adopted claim (another operator's, docs/migration.md) keeps its name: returning another one would
      // have Metacontroller delete it, and NDM wipe the device.
      name: inventory.ownClaims.get(device)?.metadata.name ?? claimName(device),
      namespace: inventory.namespace,
      labels: { [LABEL.cspc]: inventory.cspcName, [LABEL.cspi]: options.cspi },
      ...(annotations ? { annotations } : {}),
    },
    spec: {
      blockDeviceName: device,
      ...(host ? { blockDeviceNodeAttributes: { hostName: host } } : {}),
      ...(capacity !== undefined ? { resources: { requests: { storage: String(capacity) } } } : {}),
    },
  };
  return claim;
}

/** All device names of a pool spec or CSPI spec, in order. */
export function devicesOf(
  groups: readonly { blockDevices?: readonly { blockDeviceName: string }[] }[] | undefined,
): string[] {
  const out: string[] = [];
  for (const g of groups ?? [])
    for (const d of g.blockDevices ?? []) if (d.blockDeviceName) out.push(d.blockDeviceName);
  return out;
}

const HOOK_LABELS: readonly string[] = [LABEL.cspc, LABEL.cspi, LABEL.hostname, LABEL.onDeviceSets];
const HOOK_ANNOTATIONS: readonly string[] = [
  ANNOTATION.poolIndex,
  ANNOTATION.poolRemoval,
  ANNOTATION.bdPredecessor,
  ANNOTATION.bdRemoval,
];

function pick(map: Record<string, string> | undefined, keys: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of keys) if (map?.[key] !== undefined) out[key] = map[key]!;
  return out;
}

/**
 * The part of an observed child that the hook owns: what it would have returned for it. Labels and
 * annotations set by others (users, Metacontroller) are left out, so re-emitting a child never makes
 * them ours, and Metacontroller's 3-way merge never deletes them.
 */
export function ownedView(obj: KubeObject): KubeObject {
  const labels = pick(obj.metadata.labels, HOOK_LABELS);
  const annotations = pick(obj.metadata.annotations, HOOK_ANNOTATIONS);
  const metadata: KubeObject["metadata"] = { name: obj.metadata.name, namespace: obj.metadata.namespace };
  if (Object.keys(labels).length > 0) metadata.labels = labels;
  if (Object.keys(annotations).length > 0) metadata.annotations = annotations;
  return { apiVersion: obj.apiVersion, kind: obj.kind, metadata, spec: obj.spec };
}

/**
 * A paused CSPC's CSPIs carry its pause annotation: the node daemon, which never reads CSPCs, holds their
 * scheduled scrubs (docs/adr/0034-scrubs-an-interval-in-poolconfig-decided.md). Returned only while paused, so Metacontroller removes it after.
 */
export function withPause(cspi: KubeObject, paused: boolean): KubeObject {
  if (!paused) return cspi;
  return {
    ...cspi,
    metadata: {
      ...cspi.metadata,
      annotations: { ...cspi.metadata.annotations, [ANNOTATION.reconcilePaused]: "true" },
    },
  };
}

/**
 * The CSPI with the index of its pool spec in the CSPC's spec.pools, or without any for a CSPI no pool spec claims.
 * The admission policy looks for the CSPI's pool there first (docs/adr/0046-the-cspc-policy-finds-a-cspis-pool-by-a-recorded-index.md).
 */
export function withPoolIndex(cspi: KubeObject, index: number | undefined): KubeObject {
  const { [ANNOTATION.poolIndex]: _old, ...others } = cspi.metadata.annotations ?? {};
  const annotations = index === undefined ? others : { ...others, [ANNOTATION.poolIndex]: String(index) };
  const { annotations: _all, ...metadata } = cspi.metadata;
  return {
    ...cspi,
    metadata: Object.keys(annotations).length > 0 ? { ...metadata, annotations } : metadata,
  };
}

/** The node daemon may destroy a pool only once its CSPI carries this mark; removal is mark first, omit later. */
export function isMarkedForRemoval(cspi: CSPI): boolean {
  return cspi.metadata.annotations?.[ANNOTATION.poolRemoval] === POOL_REMOVAL_REQUESTED;
}

/** The observed CSPI as the hook returns it, marked for removal (its pool spec is gone: no pool index). */
export function markedForRemoval(cspi: CSPI): KubeObject {
  const marked = withPoolIndex(ownedView(cspi), undefined);
  marked.metadata.annotations = {
    ...marked.metadata.annotations,
    [ANNOTATION.poolRemoval]: POOL_REMOVAL_REQUESTED,
  };
  return marked;
}

/** The observed CSPI as the hook returns it, without a removal mark: its pool must not be destroyed. */
export function withoutRemovalMark(cspi: CSPI): KubeObject {
  const kept = ownedView(cspi);
  const { [ANNOTATION.poolRemoval]: _mark, ...annotations } = kept.metadata.annotations ?? {};
  if (Object.keys(annotations).length > 0) kept.metadata.annotations = annotations;
  else delete kept.metadata.annotations;
  return kept;
}
