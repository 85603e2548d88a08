// A cstor-operators CStorPoolCluster (cstor.openebs.io/v1) → the openebs.io/v1alpha1 one. v1 field names are
// mapped (dataRaidGroups + poolConfig.dataRaidGroupType → raidGroups[].type, writeCacheRaidGroups →
// isWriteCache groups, CSPC-wide resources and tolerations → each pool's poolConfig); a field without an
// equivalent is a problem, never dropped. Given its CStorPoolInstances, each pool must match its CSPI's
// devices: a pool that differs is mid-change, and its spec does not say what is on the disks.
import { LABEL } from "../../api/constants.js";
import type { KubeObject, PoolConfig, PoolSpec } from "../../api/types.js";
import { isRecord } from "../request.js";
import {
  cspcObject,
  upstreamPoolName,
  uidOf,
  type Conversion,
  type Converted,
  type KnownFields,
  type ObjectProblems,
} from "./common.js";

/** A converted pool always names its raid groups (device sets have no v1 equivalent). */
type RaidGroups = NonNullable<PoolSpec["raidGroups"]>;

export const V1_GROUP = "cstor.openebs.io/";

const RAID_TYPES = ["stripe", "mirror", "raidz", "raidz2"] as const;
/** cstor-operators' pool manager turned compression on (lz4) when poolConfig did not say. */
const V1_DEFAULT_COMPRESSION = "lz4";
const V1_COMPRESSION = ["on", "off", "lzjb", "gzip", "zle", "lz4"];

/** Names of the proposed v1 design (openebs/api design/cstor/v1) that some tutorials still show; the CRD has the others. */
const DESIGN_NAMES: Readonly<Record<string, string>> = {
  cspiBlockDevices: "blockDevices",
  writeCacheGroups: "writeCacheRaidGroups",
  writeCacheRaidGroupType: "writeCacheGroupType",
  thickProvisioning: "thickProvision",
};
const SPEC_FIELDS: KnownFields = {
  known: ["pools", "resources", "auxResources", "tolerations", "priorityClassName"],
};
const POOL_FIELDS: KnownFields = {
  known: ["nodeSelector", "dataRaidGroups", "writeCacheRaidGroups", "poolConfig"],
  renamed: DESIGN_NAMES,
};
const POOL_CONFIG_FIELDS: KnownFields = {
  known: [
    "dataRaidGroupType",
    "writeCacheGroupType",
    "thickProvision",
    "compression",
    "resources",
    "auxResources",
    "tolerations",
    "priorityClassName",
    "roThresholdLimit",
  ],
  renamed: DESIGN_NAMES,
};
const GROUP_FIELDS: KnownFields = { known: ["blockDevices"], renamed: DESIGN_NAMES };
/** capacity and devLink are filled in by the operator from the BlockDevice: not carried, the hook fills them again. */
const DEVICE_FIELDS: KnownFields = { known: ["blockDeviceName", "capacity", "devLink"] };

export function convertV1Cspc(
  cspc: KubeObject,
  cspis: readonly KubeObject[],
  { problems: all, devices }: Conversion,
): Converted | undefined {
  const problems = all.about(cspc);
  const name = cspc.metadata.name ?? "";
  const namespace = cspc.metadata.namespace ?? "openebs";
  const spec = isRecord(cspc.spec) ? cspc.spec : {};
  problems.unknownFields("spec", spec, SPEC_FIELDS);
  const uid = uidOf(problems, "every pool of a v1 CStorPoolCluster is named cstor-<uid> on its node");
  const pools = Array.isArray(spec.pools) ? spec.pools : [];
  if (pools.length === 0) problems.add("spec.pools", "spec.pools is empty: nothing to convert");
  const mine = cspis.filter(
    (c) => c.metadata.labels?.[LABEL.cspc] === name && (c.metadata.namespace ?? namespace) === namespace,
  );
  const matched = new Set<KubeObject>();
  const notes: string[] = [];
  if (!devices.knowsDevices)
    notes.push(
      `${cspc.kind} ${namespace}/${name}: no BlockDevices given, so the devices' nodes were not checked`,
    );
  const converted = pools.map((pool: unknown, i) => {
    const field = `spec.pools[${i}]`;
    if (!isRecord(pool)) {
      problems.add(field, `${field} is not a map: fix the CStorPoolCluster`);
      return undefined;
    }
    problems.unknownFields(field, pool, POOL_FIELDS);
    const out = convertPool({ spec, uid, problems }, pool, field);
    if (!out) return undefined;
    const cspi = cspis.length > 0 ? matchCspi(mine, out.pool, field, problems) : undefined;
    if (cspi) matched.add(cspi);
    const host =
      (cspi && isRecord(cspi.spec) && typeof cspi.spec.hostName === "string"
        ? cspi.spec.hostName
        : undefined) ?? out.pool.nodeSelector?.[LABEL.hostname];
    out.devices.forEach(({ name: device, field: at }) => devices.take(cspc, at, device, host));
    return out.pool;
  });
  // A CSPI left over is only known to be unmatched when every pool could be read.
  const allRead = converted.every((p) => p !== undefined);
  for (const cspi of allRead ? mine : []) {
    if (!matched.has(cspi))
      all.add(
        cspi,
        "spec",
        `the CStorPoolInstance's pool is in no pool of CStorPoolCluster ${namespace}/${name} (a pool being removed?): let cstor-operators finish, or add its pool back, before converting`,
      );
  }
  if (!allRead || !uid) return undefined;
  return { cspc: cspcObject(name, namespace, converted), notes };
}

/** The v1 CSPC a pool is converted from: its spec (CSPC-wide defaults), its UID (the zpool names), its problems. */
interface V1Source {
  spec: Record<string, unknown>;
  uid: string | undefined;
  problems: ObjectProblems;
}

/** A device of a converted pool and the field that lists it; an empty name is a device that could not be read. */
interface ListedDevice {
  name: string;
  field: string;
}

interface ConvertedPool {
  pool: PoolSpec;
  devices: ListedDevice[];
}

function convertPool(
  source: V1Source,
  pool: Record<string, unknown>,
  field: string,
): ConvertedPool | undefined {
  const { problems, uid } = source;
  const nodeSelector = pool.nodeSelector;
  if (!isNodeSelector(nodeSelector)) {
    problems.add(
      `${field}.nodeSelector`,
      `${field}.nodeSelector must be labels (strings) selecting one node: fix the CStorPoolCluster`,
    );
    return undefined;
  }
  const v1Config = isRecord(pool.poolConfig) ? pool.poolConfig : {};
  problems.unknownFields(`${field}.poolConfig`, v1Config, POOL_CONFIG_FIELDS);
  const dataType = raidType(`${field}.poolConfig.dataRaidGroupType`, v1Config.dataRaidGroupType, problems);
  const writeCache = Array.isArray(pool.writeCacheRaidGroups) ? pool.writeCacheRaidGroups : [];
  const cacheType =
    writeCache.length > 0
      ? raidType(`${field}.poolConfig.writeCacheGroupType`, v1Config.writeCacheGroupType, problems)
      : undefined;
  if (v1Config.thickProvision === true) {
    problems.add(
      `${field}.poolConfig.thickProvision`,
      `${field}.poolConfig.thickProvision: true has no openebs.io/v1alpha1 equivalent (cstor-operators never acted on it): remove it`,
    );
  }
  const config = poolConfig(source, v1Config, field);
  const data = convertGroups(problems, {
    list: pool.dataRaidGroups,
    field: `${field}.dataRaidGroups`,
    type: dataType,
  });
  const cache = convertGroups(problems, {
    list: writeCache,
    field: `${field}.writeCacheRaidGroups`,
    type: cacheType,
    isWriteCache: true,
  });
  const devices = [...data.devices, ...cache.devices];
  if (!Array.isArray(pool.dataRaidGroups) || pool.dataRaidGroups.length === 0) {
    problems.add(`${field}.dataRaidGroups`, `${field}.dataRaidGroups is empty: fix the CStorPoolCluster`);
  }
  if (!dataType || (writeCache.length > 0 && !cacheType) || devices.some((d) => !d.name)) return undefined;
  return {
    pool: {
      nodeSelector,
      raidGroups: [...data.raidGroups, ...cache.raidGroups],
      poolConfig: { ...config, ...(uid ? { existingPoolName: upstreamPoolName(uid) } : {}) },
    },
    devices: devices.filter((d) => d.name),
  };
}

function isNodeSelector(value: unknown): value is Record<string, string> {
  return (
    isRecord(value) &&
    Object.keys(value).length > 0 &&
    Object.values(value).every((v) => typeof v === "string")
  );
}

/** One list of v1 raid groups (dataRaidGroups or writeCacheRaidGroups) and what its groups are. */
interface V1Groups {
  list: unknown;
  field: string;
  type: RaidGroups[number]["type"];
  isWriteCache?: boolean;
}

/** v1 raid groups → raid groups, with every device each lists (a group without devices lists an unnamed one). */
function convertGroups(
  problems: ObjectProblems,
  { list, field, type, isWriteCache }: V1Groups,
): { raidGroups: RaidGroups; devices: ListedDevice[] } {
  const devices: ListedDevice[] = [];
  const raidGroups = (Array.isArray(list) ? list : []).map((group: unknown, g) => {
    const gField = `${field}[${g}]`;
    problems.unknownFields(gField, group, GROUP_FIELDS);
    const listed = isRecord(group) && Array.isArray(group.blockDevices) ? group.blockDevices : [];
    if (listed.length === 0) {
      problems.add(`${gField}.blockDevices`, `${gField} has no blockDevices: fix the CStorPoolCluster`);
      devices.push({ name: "", field: `${gField}.blockDevices` });
    }
    const blockDevices = listed.map((d: unknown, k) => {
      problems.unknownFields(`${gField}.blockDevices[${k}]`, d, DEVICE_FIELDS);
      const name = isRecord(d) && typeof d.blockDeviceName === "string" ? d.blockDeviceName : "";
      if (!name)
        problems.add(
          `${gField}.blockDevices[${k}].blockDeviceName`,
          `${gField}.blockDevices[${k}] has no blockDeviceName: fix the CStorPoolCluster`,
        );
      devices.push({ name, field: `${gField}.blockDevices[${k}]` });
      return { blockDeviceName: name };
    });
    return { ...(type ? { type } : {}), ...(isWriteCache ? { isWriteCache: true } : {}), blockDevices };
  });
  return { raidGroups, devices };
}

function raidType(
  field: string,
  value: unknown,
  problems: ObjectProblems,
): (typeof RAID_TYPES)[number] | undefined {
  const found = RAID_TYPES.find((t) => t === value);
  if (!found)
    problems.add(
      field,
      `${field} ${JSON.stringify(value ?? null)} is not a raid type (${RAID_TYPES.join(", ")}): fix the CStorPoolCluster`,
    );
  return found;
}

/** The pool's settings, the CSPC-wide defaults filled in where the pool has none (as cstor-operators did). */
function poolConfig({ spec, problems }: V1Source, v1: Record<string, unknown>, field: string): PoolConfig {
  const config: Record<string, unknown> = {};
  const compression =
    v1.compression === undefined || v1.compression === "" ? V1_DEFAULT_COMPRESSION : v1.compression;
  if (typeof compression === "string" && V1_COMPRESSION.includes(compression))
    config.compression = compression;
  else
    problems.add(
      `${field}.poolConfig.compression`,
      `${field}.poolConfig.compression ${JSON.stringify(compression)} is not one cstor-operators accepted (${V1_COMPRESSION.join(", ")}): fix the CStorPoolCluster`,
    );
  if (v1.roThresholdLimit !== undefined && v1.roThresholdLimit !== null)
    config.roThresholdLimit = v1.roThresholdLimit;
  const inherited: [string, string][] = [
    ["resources", "resources"],
    ["auxResources", "auxResources"],
    ["tolerations", "tolerations"],
    ["priorityClassName", "priorityClassName"],
  ];
  for (const [own, wide] of inherited) {
    const value = v1[own] ?? spec[wide];
    if (value !== undefined && value !== null && !(Array.isArray(value) && value.length === 0))
      config[own] = value;
  }
  return config;
}

/** The CSPI holding the pool's devices; a problem when none does or when its devices differ. */
function matchCspi(
  cspis: readonly KubeObject[],
  pool: PoolSpec,
  field: string,
  problems: ObjectProblems,
): KubeObject | undefined {
  const wanted = (pool.raidGroups ?? []).flatMap((g) => g.blockDevices.map((d) => d.blockDeviceName));
  const devicesOf = (cspi: KubeObject): string[] => {
    const spec = isRecord(cspi.spec) ? cspi.spec : {};
    return ["dataRaidGroups", "writeCacheRaidGroups"].flatMap((key) =>
      (Array.isArray(spec[key]) ? spec[key] : []).flatMap((g: unknown) =>
        (isRecord(g) && Array.isArray(g.blockDevices) ? g.blockDevices : []).map((d: unknown) =>
          isRecord(d) ? String(d.blockDeviceName) : "",
        ),
      ),
    );
  };
  const cspi = cspis.find((c) => devicesOf(c).some((d) => wanted.includes(d)));
  if (!cspi) {
    problems.add(
      field,
      `${field} has no CStorPoolInstance holding its devices (${wanted.join(", ")}): its pool was never built; remove it from the spec before converting, or let cstor-operators build it`,
    );
    return undefined;
  }
  const have = devicesOf(cspi);
  const same = have.length === wanted.length && have.every((d) => wanted.includes(d));
  if (!same) {
    problems.add(
      field,
      `${field} lists ${wanted.join(", ")} but its CStorPoolInstance ${cspi.metadata.name} has ${have.join(", ")}: a change is in flight; let cstor-operators finish it (or undo it) before converting`,
    );
  }
  return cspi;
}
