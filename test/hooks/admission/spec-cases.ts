// Spec-only cases, judged twice: by the TypeScript rules (rules.test.ts) and by the CRD's OpenAPI + CEL rules
// in a real kube-apiserver (cel.test.ts). Each names the TypeScript reasons it must produce; `celToo: false`
// marks the rules that only the webhook and cspc-sync enforce (too costly for CEL, docs/validation.md).
import { LIMITS } from "../../../api/constants.js";
import type { KubeObject } from "../../../api/types.js";

export interface SpecCase {
  name: string;
  pools: unknown[];
  /** TypeScript reasons (Violation.reason); empty = valid. */
  reasons: string[];
  /** False when the API server accepts what the TypeScript rules refuse. Default true. */
  celToo?: boolean;
}

const dev = (...names: string[]) => names.map((blockDeviceName) => ({ blockDeviceName }));
const on = (node: string, raidGroups: unknown[], poolConfig?: object) => ({
  nodeSelector: { "kubernetes.io/hostname": node },
  raidGroups,
  ...(poolConfig ? { poolConfig } : {}),
});

/** Pools of one full stripe group each (the per-group limit), `count` devices in all, each pool on its own node. */
function manyDevices(count: number): unknown[] {
  const pools: unknown[] = [];
  for (let first = 0, p = 0; first < count; first += LIMITS.blockDevicesPerGroup, p++) {
    const names = Array.from(
      { length: Math.min(LIMITS.blockDevicesPerGroup, count - first) },
      (_, d) => `d${first + d}`,
    );
    pools.push(on(`node-${p}`, [{ type: "stripe", blockDevices: dev(...names) }]));
  }
  return pools;
}

/** A device set of local block PVCs; `over` changes its fields, `template` its volumeClaimTemplate.spec. */
const set = (name: string, over: object = {}, template: object = {}) => ({
  name,
  count: 3,
  type: "raidz",
  groupSize: 3,
  volumeClaimTemplate: {
    spec: {
      storageClassName: "local-block",
      volumeMode: "Block",
      resources: { requests: { storage: "10Gi" } },
      ...template,
    },
  },
  ...over,
});

export const SPEC_CASES: SpecCase[] = [
  { name: "a device set of 3 PVCs in a raidz group", pools: [{ deviceSets: [set("data")] }], reasons: [] },
  {
    name: "a device set of 6 PVCs in raidz groups of 3",
    pools: [{ deviceSets: [set("data", { count: 6 })] }],
    reasons: [],
  },
  {
    name: "a device set whose count is not whole groups",
    pools: [{ deviceSets: [set("data", { count: 4 })] }],
    reasons: ["CountNotWholeGroups"],
  },
  {
    name: "a raidz device set with groupSize 4",
    pools: [{ deviceSets: [set("data", { count: 4, groupSize: 4 })] }],
    reasons: ["InvalidGroupSize"],
  },
  {
    name: "a device set of Filesystem PVCs",
    pools: [{ deviceSets: [set("data", {}, { volumeMode: "Filesystem" })] }],
    reasons: ["NotBlockMode"],
  },
  {
    name: "a device set without volumeMode",
    pools: [{ deviceSets: [set("data", {}, { volumeMode: undefined })] }],
    reasons: ["NotBlockMode"],
  },
  {
    name: "a device set of 10Mi PVCs",
    pools: [{ deviceSets: [set("data", {}, { resources: { requests: { storage: "10Mi" } } })] }],
    reasons: ["ClaimTooSmall"],
  },
  {
    name: "a pool with raid groups and device sets",
    pools: [{ raidGroups: [{ type: "stripe", blockDevices: dev("d1") }], deviceSets: [set("data")] }],
    reasons: ["BothDevicesAndSets"],
  },
  {
    name: "a pool on device sets with a nodeSelector",
    pools: [{ nodeSelector: { "kubernetes.io/hostname": "node-0" }, deviceSets: [set("data")] }],
    reasons: ["NodeSelectorWithDeviceSets"],
  },
  { name: "a pool with neither raid groups nor device sets", pools: [{}], reasons: ["NoDevices"] },
  {
    name: "a pool mixing a raidz set and a mirror set",
    pools: [{ deviceSets: [set("fast"), set("slow", { type: "mirror", groupSize: 2, count: 2 })] }],
    reasons: ["MixedDeviceSets"],
  },
  {
    name: "a device set making 33 raid groups",
    pools: [{ deviceSets: [set("data", { count: 99 })] }],
    reasons: ["TooManyRaidGroups"],
  },
  {
    name: "one device set name in two pools",
    pools: [{ deviceSets: [set("data")] }, { deviceSets: [set("data")] }],
    reasons: ["DuplicateDeviceSet"],
    celToo: false,
  },
  {
    name: "a stripe of one device",
    pools: [on("node-0", [{ type: "stripe", blockDevices: dev("d1") }])],
    reasons: [],
  },
  {
    name: "two 2-device mirrors",
    pools: [
      on("node-0", [
        { type: "mirror", blockDevices: dev("d1", "d2") },
        { type: "mirror", blockDevices: dev("d3", "d4") },
      ]),
    ],
    reasons: [],
  },
  {
    name: "raidz of 3",
    pools: [on("node-0", [{ type: "raidz", blockDevices: dev("d1", "d2", "d3") }])],
    reasons: [],
  },
  {
    name: "raidz2 of 4 (upstream refused 4)",
    pools: [on("node-0", [{ type: "raidz2", blockDevices: dev("d1", "d2", "d3", "d4") }])],
    reasons: [],
  },
  {
    name: "raidz2 of 6",
    pools: [on("node-0", [{ type: "raidz2", blockDevices: dev("d1", "d2", "d3", "d4", "d5", "d6") }])],
    reasons: [],
  },
  {
    name: "a mirror of one device",
    pools: [on("node-0", [{ type: "mirror", blockDevices: dev("d1") }])],
    reasons: ["InvalidDeviceCount"],
  },
  {
    name: "a raidz of 4",
    pools: [on("node-0", [{ type: "raidz", blockDevices: dev("d1", "d2", "d3", "d4") }])],
    reasons: ["InvalidDeviceCount"],
  },
  {
    name: "a raidz2 of 5",
    pools: [on("node-0", [{ type: "raidz2", blockDevices: dev("d1", "d2", "d3", "d4", "d5") }])],
    reasons: ["InvalidDeviceCount"],
  },
  {
    name: "a group typed by defaultRaidGroupType raidz with 2 devices",
    pools: [on("node-0", [{ blockDevices: dev("d1", "d2") }], { defaultRaidGroupType: "raidz" })],
    reasons: ["InvalidDeviceCount"],
  },
  {
    name: "a group typed by defaultRaidGroupType mirror",
    pools: [on("node-0", [{ blockDevices: dev("d1", "d2") }], { defaultRaidGroupType: "mirror" })],
    reasons: [],
  },
  {
    name: "a group without type or default",
    pools: [on("node-0", [{ blockDevices: dev("d1") }])],
    reasons: ["MissingRaidType"],
  },
  {
    name: "a spare group needs no type",
    pools: [
      on("node-0", [
        { type: "stripe", blockDevices: dev("d1") },
        { isSpare: true, blockDevices: dev("d2") },
      ]),
    ],
    reasons: [],
  },
  {
    name: "a spare typed mirror with one device is still a plain spare",
    pools: [
      on("node-0", [
        { type: "stripe", blockDevices: dev("d1") },
        { isSpare: true, type: "mirror", blockDevices: dev("d2") },
      ]),
    ],
    reasons: [],
  },
  {
    name: "a mirrored write cache",
    pools: [
      on("node-0", [
        { type: "stripe", blockDevices: dev("d1") },
        { isWriteCache: true, type: "mirror", blockDevices: dev("d2", "d3") },
      ]),
    ],
    reasons: [],
  },
  {
    name: "a raidz write cache",
    pools: [
      on("node-0", [
        { type: "stripe", blockDevices: dev("d1") },
        { isWriteCache: true, type: "raidz", blockDevices: dev("d2", "d3", "d4") },
      ]),
    ],
    reasons: ["UnsupportedWriteCacheType"],
  },
  {
    name: "a write cache typed raidz2 by the pool default",
    pools: [
      on(
        "node-0",
        [
          { blockDevices: dev("d1", "d2", "d3", "d4") },
          { isWriteCache: true, blockDevices: dev("d5", "d6", "d7", "d8") },
        ],
        {
          defaultRaidGroupType: "raidz2",
        },
      ),
    ],
    reasons: ["UnsupportedWriteCacheType"],
  },
  {
    name: "a group that is both spare and read cache",
    pools: [
      on("node-0", [
        { type: "stripe", blockDevices: dev("d1") },
        { isSpare: true, isReadCache: true, blockDevices: dev("d2") },
      ]),
    ],
    reasons: ["ConflictingGroupRoles"],
  },
  {
    name: "a pool of only a write cache",
    pools: [on("node-0", [{ isWriteCache: true, type: "stripe", blockDevices: dev("d1") }])],
    reasons: ["NoDataRaidGroup"],
  },
  {
    name: "a mirror next to a stripe",
    pools: [
      on("node-0", [
        { type: "mirror", blockDevices: dev("d1", "d2") },
        { type: "stripe", blockDevices: dev("d3") },
      ]),
    ],
    reasons: ["MixedRedundancy"],
  },
  {
    name: "a 2-device mirror next to a 3-device mirror",
    pools: [
      on("node-0", [
        { type: "mirror", blockDevices: dev("d1", "d2") },
        { type: "mirror", blockDevices: dev("d3", "d4", "d5") },
      ]),
    ],
    reasons: ["MixedRedundancy"],
  },
  {
    name: "two stripes of different widths (stripes have no redundancy to mix)",
    pools: [
      on("node-0", [
        { type: "stripe", blockDevices: dev("d1") },
        { type: "stripe", blockDevices: dev("d2", "d3") },
      ]),
    ],
    reasons: [],
  },
  {
    name: "a mirror data group with a stripe read cache",
    pools: [
      on("node-0", [
        { type: "mirror", blockDevices: dev("d1", "d2") },
        { isReadCache: true, blockDevices: dev("d3") },
      ]),
    ],
    reasons: [],
  },
  {
    name: "one device listed twice in a group",
    pools: [on("node-0", [{ type: "mirror", blockDevices: dev("d1", "d1") }])],
    reasons: ["DuplicateBlockDevice"],
  },
  {
    name: "one device in two groups of a pool",
    pools: [
      on("node-0", [
        { type: "mirror", blockDevices: dev("d1", "d2") },
        { type: "mirror", blockDevices: dev("d2", "d3") },
      ]),
    ],
    reasons: ["DuplicateBlockDevice"],
    celToo: false,
  },
  {
    name: "one device in two pools",
    pools: [
      on("node-0", [{ type: "stripe", blockDevices: dev("d1") }]),
      on("node-1", [{ type: "stripe", blockDevices: dev("d1") }]),
    ],
    reasons: ["DuplicateBlockDevice"],
    celToo: false,
  },
  { name: "no pools", pools: [], reasons: ["InvalidField"] },
  {
    name: "an empty nodeSelector",
    pools: [{ nodeSelector: {}, raidGroups: [{ type: "stripe", blockDevices: dev("d1") }] }],
    reasons: ["InvalidField"],
  },
  {
    name: "compression lz",
    pools: [on("node-0", [{ type: "stripe", blockDevices: dev("d1") }], { compression: "lz" })],
    reasons: ["UnsupportedCompression"],
  },
  {
    name: `${LIMITS.blockDevicesPerCspc + 1} block devices in one CSPC`,
    pools: manyDevices(LIMITS.blockDevicesPerCspc + 1),
    reasons: ["TooManyBlockDevicesInCspc"],
  },
  {
    name: `${LIMITS.blockDevicesPerCspc} block devices in one CSPC`,
    pools: manyDevices(LIMITS.blockDevicesPerCspc),
    reasons: [],
  },
  {
    name: "roThresholdLimit 101",
    pools: [on("node-0", [{ type: "stripe", blockDevices: dev("d1") }], { roThresholdLimit: 101 })],
    reasons: ["InvalidField"],
  },
];

export function specCaseObject(c: SpecCase, namespace: string, name = "pools"): KubeObject {
  return {
    apiVersion: "openebs.io/v1alpha1",
    kind: "CStorPoolCluster",
    metadata: { name, namespace },
    spec: { pools: c.pools },
  };
}
