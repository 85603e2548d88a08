// A StoragePoolClaim (maya, openebs.io/v1alpha1) and its CStorPools → one CStorPoolCluster. The pools are the
// CStorPools that exist, one pool spec each, with the devices and groups they were built with: an SPC in auto
// mode (maxPools, diskTypes) says how disks were chosen, and choosing again could pick other disks.
import { parse as parseYaml } from "yaml";
import { LABEL } from "../../api/constants.js";
import type { KubeObject, PoolConfig, PoolSpec } from "../../api/types.js";
import { isRecord } from "../request.js";
import {
  cspcObject,
  poolOnHost,
  upstreamPoolName,
  uidOf,
  type Conversion,
  type Converted,
  type KnownFields,
  type ObjectProblems,
} from "./common.js";

/** maya's label on a CStorPool: the SPC it belongs to. */
export const SPC_LABEL = "openebs.io/storage-pool-claim";
const CONFIG_ANNOTATION = "cas.openebs.io/config";

/** A raid type, and how many devices maya put in a group of it. */
interface PoolType {
  type: "stripe" | "mirror" | "raidz" | "raidz2";
  groupSize: number;
}

/** maya's pool types → raid types. */
const POOL_TYPES: Readonly<Record<string, PoolType>> = {
  striped: { type: "stripe", groupSize: 1 },
  mirrored: { type: "mirror", groupSize: 2 },
  raidz: { type: "raidz", groupSize: 3 },
  raidz2: { type: "raidz2", groupSize: 6 },
};

/** The resource settings of the SPC's cas.openebs.io/config and where they go. */
const CONFIG_RESOURCES: Readonly<Record<string, ["resources" | "auxResources", "requests" | "limits"]>> = {
  PoolResourceRequests: ["resources", "requests"],
  PoolResourceLimits: ["resources", "limits"],
  AuxResourceRequests: ["auxResources", "requests"],
  AuxResourceLimits: ["auxResources", "limits"],
};

const SPC_SPEC_FIELDS: KnownFields = {
  known: ["name", "type", "maxPools", "minPools", "blockDevices", "disks", "poolSpec"],
};
const POOL_SPEC_FIELDS: KnownFields = {
  known: ["poolType", "cacheFile", "overProvisioning", "thickProvisioning", "roThresholdLimit"],
};

export function convertSpc(
  spc: KubeObject,
  cstorPools: readonly KubeObject[],
  namespace: string,
  conversion: Conversion,
): Converted | undefined {
  const problems = conversion.problems.about(spc);
  const name = spc.metadata.name ?? "";
  const spec = isRecord(spc.spec) ? spc.spec : {};
  const notes: string[] = [];
  problems.unknownFields("spec", spec, SPC_SPEC_FIELDS);
  if (spec.type !== undefined && spec.type !== "disk" && spec.type !== "sparse") {
    problems.add(
      "spec.type",
      `spec.type ${JSON.stringify(spec.type)} is not a cStor pool (disk or sparse): only cStor SPCs are converted`,
    );
  }
  if (!conversion.devices.knowsDevices)
    problems.add(
      "spec",
      "no BlockDevices given: convert needs them to check each device's node (kubectl get spc,csp,bd -o yaml)",
    );
  const poolSpec = isRecord(spec.poolSpec) ? spec.poolSpec : {};
  problems.unknownFields("spec.poolSpec", poolSpec, POOL_SPEC_FIELDS);
  const config = sharedConfig(poolSpec, problems, notes);

  const mine = cstorPools.filter((csp) => csp.metadata.labels?.[SPC_LABEL] === name);
  if (mine.length === 0) {
    problems.add(
      "metadata.name",
      `no CStorPool carries ${SPC_LABEL}=${name}: convert reads the pools that exist (kubectl get spc,csp,bd -o yaml), it never chooses disks`,
    );
    return undefined;
  }
  if (spec.maxPools !== undefined || !hasDeviceList(spec)) {
    notes.push(
      `StoragePoolClaim ${name}: auto mode resolved from the ${mine.length} CStorPool(s) that exist; their disks are listed, none chosen anew`,
    );
  }
  const hosts = new Map<string, string>();
  const pools: { host: string; pool: PoolSpec }[] = [];
  for (const csp of mine) {
    const pool = convertCstorPool(csp, poolSpec.poolType, config, conversion);
    if (!pool) continue;
    const earlier = hosts.get(pool.host);
    if (earlier) {
      conversion.problems.add(
        csp,
        `metadata.labels.${LABEL.hostname}`,
        `CStorPool ${earlier} is on node ${pool.host} too: a CStorPoolCluster has one pool per node; convert by hand into two CStorPoolClusters`,
      );
      continue;
    }
    hosts.set(pool.host, csp.metadata.name ?? "");
    pools.push(pool);
  }
  pools.sort((a, b) => a.host.localeCompare(b.host));
  return {
    cspc: cspcObject(
      name,
      namespace,
      pools.map((p) => p.pool),
    ),
    notes,
  };
}

function hasDeviceList(spec: Record<string, unknown>): boolean {
  const list = (field: string, key: string) =>
    isRecord(spec[field]) && Array.isArray(spec[field][key]) && spec[field][key].length > 0;
  return list("blockDevices", "blockDeviceList") || list("disks", "diskList");
}

/** What every pool of the SPC gets: pool settings and pod resources. */
function sharedConfig(
  poolSpec: Record<string, unknown>,
  problems: ObjectProblems,
  notes: string[],
): PoolConfig {
  const spc = problems.obj;
  const config: PoolConfig = {};
  if (poolSpec.thickProvisioning === true) {
    problems.add(
      "spec.poolSpec.thickProvisioning",
      "thickProvisioning: true has no openebs.io/v1alpha1 equivalent (volumes are thin unless overProvisioning is false): set it false after checking no volume relies on it",
    );
  }
  if (typeof poolSpec.overProvisioning === "boolean") config.overProvisioning = poolSpec.overProvisioning;
  // maya stores 0 for "not set"; the pool then used the default, which is also ours.
  if (typeof poolSpec.roThresholdLimit === "number" && poolSpec.roThresholdLimit > 0)
    config.roThresholdLimit = poolSpec.roThresholdLimit;
  if (typeof poolSpec.cacheFile === "string" && poolSpec.cacheFile !== "") {
    notes.push(
      `StoragePoolClaim ${spc.metadata.name}: spec.poolSpec.cacheFile ${poolSpec.cacheFile} was a file inside the old pool pod; it is not carried over (the node daemon finds the pool on its devices)`,
    );
  }
  const text = spc.metadata.annotations?.[CONFIG_ANNOTATION];
  if (text === undefined) return config;
  const field = `metadata.annotations.${CONFIG_ANNOTATION}`;
  let entries: unknown;
  try {
    entries = parseYaml(text);
  } catch (err) {
    problems.add(
      field,
      `${field} is not YAML (${(err as Error).message.split("\n")[0]}): fix the annotation`,
    );
    return config;
  }
  if (!Array.isArray(entries)) {
    problems.add(field, `${field} is not a list of {name, value}: fix the annotation`);
    return config;
  }
  entries.forEach((entry, i) => {
    const key = isRecord(entry) && typeof entry.name === "string" ? entry.name : undefined;
    const target = key !== undefined ? CONFIG_RESOURCES[key] : undefined;
    if (!target) {
      problems.add(
        `${field}[${i}]`,
        `${field}[${i}] ${key ?? "(no name)"} has no openebs.io/v1alpha1 equivalent (known: ${Object.keys(CONFIG_RESOURCES).join(", ")}): remove it, or set the pool's poolConfig by hand`,
      );
      return;
    }
    const value: unknown =
      isRecord(entry) && typeof entry.value === "string" ? parseQuantities(entry.value) : undefined;
    if (!isRecord(value)) {
      problems.add(
        `${field}[${i}].value`,
        `${field}[${i}] ${key} has no map of resources as its value (e.g. "memory: 2Gi"): fix the annotation`,
      );
      return;
    }
    const [group, kind] = target;
    config[group] = { ...config[group], [kind]: value as Record<string, string | number> };
  });
  return config;
}

function parseQuantities(text: string): unknown {
  try {
    return parseYaml(text);
  } catch {
    return undefined;
  }
}

/** One CStorPool → its node and pool spec; undefined (with problems) when it cannot be described. */
function convertCstorPool(
  csp: KubeObject,
  spcPoolType: unknown,
  config: PoolConfig,
  { problems: all, devices }: Conversion,
): { host: string; pool: PoolSpec } | undefined {
  const problems = all.about(csp);
  const spec = isRecord(csp.spec) ? csp.spec : {};
  const host = csp.metadata.labels?.[LABEL.hostname];
  const uid = uidOf(problems, "the pool on its node is named cstor-<uid>");
  if (!host)
    problems.add(
      `metadata.labels.${LABEL.hostname}`,
      `the CStorPool has no ${LABEL.hostname} label, so its node is unknown: give it as the cluster returns it`,
    );
  const poolType = cstorPoolType(spec, spcPoolType, problems);
  const groups = deviceGroups(spec, problems);
  if (!host || !uid || !poolType || !groups) return undefined;
  groups.forEach((group, g) =>
    group.forEach((device) => devices.take(csp, `spec.group[${g}]`, device, host)),
  );
  const raidGroups =
    poolType.type === "stripe"
      ? [{ type: poolType.type, blockDevices: groups.flat().map((blockDeviceName) => ({ blockDeviceName })) }]
      : regroup(groups, poolType, problems);
  if (!raidGroups) return undefined;
  return { host, pool: poolOnHost(host, raidGroups, { ...config, existingPoolName: upstreamPoolName(uid) }) };
}

/** The CStorPool's own poolType, else its SPC's; a problem when maya never built it or the two differ. */
function cstorPoolType(
  spec: Record<string, unknown>,
  spcPoolType: unknown,
  problems: ObjectProblems,
): PoolType | undefined {
  const poolSpec = isRecord(spec.poolSpec) ? spec.poolSpec : {};
  const typeName = poolSpec.poolType ?? spcPoolType;
  const poolType = typeof typeName === "string" ? POOL_TYPES[typeName] : undefined;
  if (!poolType) {
    problems.add(
      "spec.poolSpec.poolType",
      `poolType ${JSON.stringify(typeName ?? null)} is not one maya built (${Object.keys(POOL_TYPES).join(", ")}): convert by hand`,
    );
  } else if (
    spcPoolType !== undefined &&
    poolSpec.poolType !== undefined &&
    spcPoolType !== poolSpec.poolType
  ) {
    problems.add(
      "spec.poolSpec.poolType",
      `poolType ${JSON.stringify(poolSpec.poolType)} differs from its StoragePoolClaim's ${JSON.stringify(spcPoolType)}: the CStorPool is what was built; check the pool (zpool status) and fix the one that is wrong`,
    );
  }
  return poolType;
}

/** The device names of each group: maya's spec.group[].blockDevice[].name, or the design's flat spec.disks.diskList. */
function deviceGroups(spec: Record<string, unknown>, problems: ObjectProblems): string[][] | undefined {
  if (Array.isArray(spec.group)) {
    const groups = spec.group.map((group) =>
      (isRecord(group) && Array.isArray(group.blockDevice) ? group.blockDevice : []).map((d) =>
        isRecord(d) && typeof d.name === "string" ? d.name : "",
      ),
    );
    const bad = groups.findIndex((g) => g.length === 0 || g.includes(""));
    if (bad >= 0) {
      problems.add(
        `spec.group[${bad}]`,
        `spec.group[${bad}] has no block devices, or one without a name: give the CStorPool as the cluster returns it`,
      );
      return undefined;
    }
    return groups;
  }
  const list = isRecord(spec.disks) ? spec.disks.diskList : undefined;
  if (Array.isArray(list) && list.length > 0 && list.every((d) => typeof d === "string" && d !== ""))
    return [list as string[]];
  problems.add(
    "spec.group",
    "the CStorPool lists no devices (neither spec.group nor spec.disks.diskList): give it as the cluster returns it",
  );
  return undefined;
}

/** Mirror and raidz groups as maya built them: its groups, or a flat list cut into maya's group size. */
function regroup(
  groups: string[][],
  poolType: PoolType,
  problems: ObjectProblems,
): PoolSpec["raidGroups"] | undefined {
  const cut = groups.flatMap((group) => {
    if (groups.length > 1 || group.length === poolType.groupSize) return [group];
    const out: string[][] = [];
    for (let i = 0; i < group.length; i += poolType.groupSize)
      out.push(group.slice(i, i + poolType.groupSize));
    return out;
  });
  const bad = cut.findIndex((g) => g.length !== poolType.groupSize);
  if (bad >= 0) {
    problems.add(
      "spec.group",
      `a ${poolType.type} group of ${cut[bad].length} device(s) (${cut[bad].join(", ")}): maya built ${poolType.type} groups of ${poolType.groupSize}; check the pool (zpool status) and convert by hand`,
    );
    return undefined;
  }
  return cut.map((group) => ({
    type: poolType.type,
    blockDevices: group.map((blockDeviceName) => ({ blockDeviceName })),
  }));
}
