// Every admission rule, accepted and refused, with the message checked: a table per family. The verdict is a
// pure function of (request, cluster facts); the facts come from the fake lookup, as in the webhook.
import { expect } from "chai";
import type { KubeObject } from "../../../api/types.js";
import { factsNeeded, judgeCspc, type AdmissionInput, type Judgement } from "../../../lib/admission/judge.js";
import { gatherFacts, type FactName } from "../../../lib/admission/lookup.js";
import { FakeClusterLookup } from "./fake-lookup.js";
import { SPEC_CASES, specCaseObject } from "./spec-cases.js";
import {
  blockDevice,
  claim,
  cspc,
  CSPC_NAME,
  DEVICES,
  livePool,
  node,
  NODES,
  NS,
  type PoolDef,
} from "./world.js";

const ALL_FACTS: FactName[] = ["blockDevices", "claims", "nodes", "cspis"];

async function judge(
  input: AdmissionInput,
  objects: readonly KubeObject[],
): Promise<{ judgement: Judgement; lookups: string[] }> {
  const lookup = new FakeClusterLookup({ objects: [...objects] });
  const gathered = await gatherFacts(lookup, ALL_FACTS, { namespace: NS, cspc: CSPC_NAME });
  if ("failure" in gathered) throw gathered.failure;
  return { judgement: judgeCspc(input, gathered.facts), lookups: lookup.calls };
}

type Expectation =
  | { allowed: true; warning?: RegExp; noWarnings?: true }
  | { allowed: false; reason: string; message: RegExp; code?: number };

interface Row {
  rule: string;
  input: AdmissionInput;
  cluster: KubeObject[];
  expect: Expectation;
}

function check(row: Row): void {
  it(`${row.rule}: ${row.expect.allowed ? "allowed" : "refused"}`, async () => {
    const { judgement } = await judge(row.input, row.cluster);
    const e = row.expect;
    if (e.allowed) {
      expect(judgement.allowed, judgement.status?.message).to.equal(true);
      if (e.warning) expect(judgement.warnings.join("\n")).to.match(e.warning);
      if (e.noWarnings) expect(judgement.warnings).to.deep.equal([]);
      return;
    }
    expect(judgement.allowed, "allowed").to.equal(false);
    expect(judgement.status?.code).to.equal(e.code ?? 422);
    if (e.code === undefined) expect(judgement.violations.map((v) => v.reason)).to.include(e.reason);
    expect(judgement.status?.message).to.match(e.message);
  });
}

const create = (pools: PoolDef[], metadata: Record<string, unknown> = {}): AdmissionInput => ({
  operation: "CREATE",
  namespace: NS,
  name: CSPC_NAME,
  object: cspc(pools, metadata),
});
const update = (
  stored: PoolDef[],
  pools: PoolDef[],
  metadata: Record<string, unknown> = {},
): AdmissionInput => ({
  operation: "UPDATE",
  namespace: NS,
  name: CSPC_NAME,
  object: cspc(pools, metadata),
  oldObject: cspc(stored),
});
const remove = (stored: PoolDef[]): AdmissionInput => ({
  operation: "DELETE",
  namespace: NS,
  name: CSPC_NAME,
  oldObject: cspc(stored),
});

const devicesWith = (...changed: KubeObject[]) => [
  ...DEVICES.filter((d) => !changed.some((c) => c.metadata.name === d.metadata.name)),
  ...changed,
];
const world = (...extra: KubeObject[]) => [...NODES, ...DEVICES, ...extra];

const A: PoolDef = {
  host: "node-a",
  groups: [
    { type: "mirror", devices: ["a1", "a2"] },
    { type: "mirror", devices: ["a3", "a4"] },
  ],
};
const B: PoolDef = { host: "node-b", groups: [{ type: "stripe", devices: ["b1", "b2"] }] };
const C: PoolDef = { host: "node-c", groups: [{ type: "raidz", devices: ["c1", "c2", "c3"] }] };
const STORED = [A, B, C];
const LIVE = [...livePool(A, { volumes: 2 }), ...livePool(B), ...livePool(C)];
const live = (...extra: KubeObject[]) => [...NODES, ...DEVICES, ...LIVE, ...extra];
const withGroups = (p: PoolDef, ...groups: PoolDef["groups"]): PoolDef => ({ ...p, groups });

describe("admission rules", () => {
  describe("spec-only rules (the cases the CRD's CEL rules are tested on)", () => {
    for (const c of SPEC_CASES) {
      it(`${c.name}: ${c.reasons.length === 0 ? "allowed" : `refused (${c.reasons.join(", ")})`}`, async () => {
        const object = specCaseObject(c, NS, CSPC_NAME);
        const devices = (
          c.pools as { raidGroups: { blockDevices: { blockDeviceName: string }[] }[] }[]
        ).flatMap((p, i) =>
          (p.raidGroups ?? []).flatMap((g) =>
            g.blockDevices.map((d) => blockDevice(d.blockDeviceName, `node-${i}`)),
          ),
        );
        const { judgement } = await judge({ operation: "CREATE", namespace: NS, name: CSPC_NAME, object }, [
          ...c.pools.map((_, i) => node(`node-${i}`)),
          ...devices,
        ]);
        expect([...new Set(judgement.violations.map((v) => v.reason))]).to.have.members(c.reasons);
        expect(judgement.allowed).to.equal(c.reasons.length === 0);
        for (const v of judgement.violations) {
          expect(v.message, "names the field").to.match(/^spec\.pools(\[\d+\])?|^block device /);
          expect(judgement.status?.message).to.include(v.message);
        }
      });
    }
  });

  describe("placement: node and devices", () => {
    const pool = (devices: string[], host = "node-a"): PoolDef => ({
      host,
      groups: [{ type: "stripe", devices }],
    });
    const rows: Row[] = [
      {
        rule: "BlockDeviceTooSmall: a device below ZFS's 64 MiB minimum",
        input: create([A]),
        cluster: [...NODES, ...devicesWith(blockDevice("a2", "node-a", { gib: 1 / 32 }))],
        expect: {
          allowed: false,
          reason: "BlockDeviceTooSmall",
          message:
            /spec\.pools\[0\] \(nodeSelector kubernetes\.io\/hostname=node-a\): block device a2 holds 33554432 bytes \(32 MiB\); ZFS needs at least 64 MiB \(67108864 bytes\) per device: pick a larger device/,
        },
      },
      {
        rule: "a device of exactly 64 MiB is enough",
        input: create([A]),
        cluster: [...NODES, ...devicesWith(blockDevice("a2", "node-a", { gib: 1 / 16 }))],
        expect: { allowed: true, noWarnings: true },
      },
      {
        rule: "pools on their own nodes with free devices",
        input: create([A, B, C]),
        cluster: world(),
        expect: { allowed: true, noWarnings: true },
      },
      {
        rule: "NodeNotFound",
        input: create([{ ...pool(["a1"]), selector: { "kubernetes.io/hostname": "node-x" } }]),
        cluster: world(),
        expect: {
          allowed: false,
          reason: "NodeNotFound",
          message:
            /spec\.pools\[0\] \(nodeSelector kubernetes\.io\/hostname=node-x\) selects no node: fix the nodeSelector/,
        },
      },
      {
        rule: "a selector on a custom label one node carries",
        input: create([{ ...pool(["b1"], "node-b"), selector: { "example.com/storage": "fast" } }]),
        cluster: [node("node-a"), node("node-b", { "example.com/storage": "fast" }), ...DEVICES],
        expect: { allowed: true, noWarnings: true },
      },
      {
        rule: "AmbiguousNodeSelector",
        input: create([{ ...pool(["a1"]), selector: { "kubernetes.io/os": "linux" } }]),
        cluster: world(),
        expect: {
          allowed: false,
          reason: "AmbiguousNodeSelector",
          message:
            /selects 3 nodes \(node-a, node-b, node-c\); a pool lives on one node: narrow the nodeSelector, e\.g\. kubernetes\.io\/hostname: node-a/,
        },
      },
      {
        rule: "DuplicateNode",
        input: create([pool(["a1"]), pool(["a2"])]),
        cluster: world(),
        expect: {
          allowed: false,
          reason: "DuplicateNode",
          message: /select the same node node-a: one CSPC has at most one pool per node/,
        },
      },
      {
        rule: "BlockDeviceNotFound",
        input: create([pool(["a9"])]),
        cluster: world(),
        expect: {
          allowed: false,
          reason: "BlockDeviceNotFound",
          message:
            /block device a9 does not exist in namespace openebs: check the name \(kubectl get bd -n openebs\)/,
        },
      },
      {
        rule: "BlockDeviceOnOtherNode",
        input: create([pool(["a1", "b1"])]),
        cluster: world(),
        expect: {
          allowed: false,
          reason: "BlockDeviceOnOtherNode",
          message: /block device b1 is attached to node node-b, not to node-a/,
        },
      },
      {
        rule: "BlockDeviceNotActive",
        input: create([pool(["a1"])]),
        cluster: [...NODES, ...devicesWith(blockDevice("a1", "node-a", { state: "Inactive" }))],
        expect: {
          allowed: false,
          reason: "BlockDeviceNotActive",
          message: /block device a1 is Inactive, not Active: reconnect the disk or pick another device/,
        },
      },
      {
        rule: "BlockDeviceHasFilesystem",
        input: create([pool(["a1"])]),
        cluster: [...NODES, ...devicesWith(blockDevice("a1", "node-a", { fs: "ext4" }))],
        expect: {
          allowed: false,
          reason: "BlockDeviceHasFilesystem",
          message: /block device a1 carries a filesystem \(ext4\).*wipefs -a \/dev\/disk-a1/,
        },
      },
      {
        rule: "BlockDeviceHasZfsLabel",
        input: create([pool(["a1"])]),
        cluster: [...NODES, ...devicesWith(blockDevice("a1", "node-a", { fs: "zfs_member" }))],
        expect: {
          allowed: false,
          reason: "BlockDeviceHasZfsLabel",
          message: /block device a1 carries a ZFS label.*zpool labelclear -f \/dev\/disk-a1/,
        },
      },
      {
        rule: "a ZFS label on a device this pool already uses",
        input: update(STORED, [withGroups(A, ...A.groups, { type: "mirror", devices: ["a5", "a6"] }), B, C]),
        cluster: [
          ...NODES,
          ...devicesWith(
            blockDevice("a1", "node-a", { fs: "zfs_member" }),
            blockDevice("a2", "node-a", { fs: "zfs_member" }),
          ),
          ...LIVE,
        ],
        expect: { allowed: true, noWarnings: true },
      },
      {
        rule: "BlockDeviceClaimedElsewhere",
        input: create([pool(["a1"])]),
        cluster: [
          ...NODES,
          ...devicesWith(blockDevice("a1", "node-a", { claimedBy: "bdc-localpv" })),
          claim("a1", { foreign: "bdc-localpv" }),
        ],
        expect: {
          allowed: false,
          reason: "BlockDeviceClaimedElsewhere",
          message:
            /block device a1 is claimed by BlockDeviceClaim openebs\/bdc-localpv: release that claim or pick another device/,
        },
      },
      {
        rule: "a device claimed by this CSPC's own claim",
        input: create([pool(["a1"])]),
        cluster: world(claim("a1")),
        expect: { allowed: true, noWarnings: true },
      },
    ];
    rows.forEach(check);
  });

  describe("day-2 changes (UPDATE)", () => {
    const rows: Row[] = [
      {
        rule: "expansion: a device added to a stripe group",
        input: update(STORED, [A, withGroups(B, { type: "stripe", devices: ["b1", "b2", "b3"] }), C]),
        cluster: live(),
        expect: { allowed: true, noWarnings: true },
      },
      {
        rule: "expansion: a new mirror group",
        input: update(STORED, [withGroups(A, ...A.groups, { type: "mirror", devices: ["a5", "a6"] }), B, C]),
        cluster: live(),
        expect: { allowed: true, noWarnings: true },
      },
      {
        rule: "BlockDeviceAddedToRedundantGroup",
        input: update(STORED, [
          A,
          B,
          withGroups(C, { type: "raidz", devices: ["c1", "c2", "c3", "c4", "c5"] }),
        ]),
        cluster: live(),
        expect: {
          allowed: false,
          reason: "BlockDeviceAddedToRedundantGroup",
          message:
            /adding c4, c5 to a raidz group is not supported; ZFS cannot widen it: add a new raid group/,
        },
      },
      {
        rule: "BlockDeviceRemoved",
        input: update(STORED, [A, withGroups(B, { type: "stripe", devices: ["b1"] }), C]),
        cluster: live(),
        expect: {
          allowed: false,
          reason: "BlockDeviceRemoved",
          message:
            /raidGroups\[0\] \(stripe: b1, b2\): block device b2 was removed; data on it would be lost: put it back/,
        },
      },
      {
        rule: "RaidGroupRemoved",
        input: update(STORED, [withGroups(A, A.groups[0]), B, C]),
        cluster: live(),
        expect: {
          allowed: false,
          reason: "RaidGroupRemoved",
          message: /raid group \(mirror: a3, a4\) was removed; ZFS cannot take a raid group out of a pool/,
        },
      },
      {
        rule: "RaidGroupTypeChanged",
        input: update(STORED, [A, withGroups(B, { type: "mirror", devices: ["b1", "b2"] }), C]),
        cluster: live(),
        expect: {
          allowed: false,
          reason: "RaidGroupTypeChanged",
          message: /changed type from stripe to mirror; ZFS cannot convert a raid group: restore type stripe/,
        },
      },
      {
        rule: "RaidGroupRoleChanged",
        input: update(STORED, [
          withGroups(A, A.groups[0], { type: "mirror", role: "isWriteCache", devices: ["a3", "a4"] }),
          B,
          C,
        ]),
        cluster: live(),
        expect: {
          allowed: false,
          reason: "RaidGroupRoleChanged",
          message: /changed from data to writeCache; a group's role cannot change/,
        },
      },
      {
        rule: "RaidGroupsMerged",
        input: update(STORED, [withGroups(A, { type: "mirror", devices: ["a1", "a2", "a3", "a4"] }), B, C]),
        cluster: live(),
        expect: {
          allowed: false,
          reason: "RaidGroupsMerged",
          message: /raidGroups\[0\] holds devices of 2 existing raid groups/,
        },
      },
      {
        rule: "replacement: one device of a mirror",
        input: update(STORED, [withGroups(A, { type: "mirror", devices: ["a5", "a2"] }, A.groups[1]), B, C]),
        cluster: live(),
        expect: { allowed: true, noWarnings: true },
      },
      {
        rule: "replacement: one device of a raidz",
        input: update(STORED, [A, B, withGroups(C, { type: "raidz", devices: ["c1", "c4", "c3"] })]),
        cluster: live(),
        expect: { allowed: true, noWarnings: true },
      },
      {
        rule: "ReplacementInStripeGroup",
        input: update(STORED, [A, withGroups(B, { type: "stripe", devices: ["b1", "b3"] }), C]),
        cluster: live(),
        expect: {
          allowed: false,
          reason: "ReplacementInStripeGroup",
          message:
            /replacing b2 with b3 is not possible in a stripe group, which has no redundancy to rebuild from/,
        },
      },
      {
        rule: "MultipleReplacements",
        input: update(STORED, [A, B, withGroups(C, { type: "raidz", devices: ["c4", "c5", "c3"] })]),
        cluster: live(),
        expect: {
          allowed: false,
          reason: "MultipleReplacements",
          message: /2 devices replaced at once \(c1, c2\); one replacement per raid group at a time/,
        },
      },
      {
        rule: "ReplacementInProgress",
        input: update(STORED, [withGroups(A, { type: "mirror", devices: ["a1", "a5"] }, A.groups[1]), B, C]),
        cluster: [
          ...live().filter((o) => o.metadata.name !== "bdc-a1"),
          claim("a1", { cspi: "x", predecessor: "a0" }),
        ],
        expect: {
          allowed: false,
          reason: "ReplacementInProgress",
          message:
            /a1 is still resilvering in place of a0; replacing a2 now could lose the group's redundancy: wait until the resilver is done/,
        },
      },
      {
        rule: "a replacement in another group while one group resilvers (legal, waits for its turn)",
        input: update(STORED, [withGroups(A, A.groups[0], { type: "mirror", devices: ["a5", "a4"] }), B, C]),
        cluster: [
          ...live().filter((o) => o.metadata.name !== "bdc-a1"),
          claim("a1", { cspi: "x", predecessor: "a0" }),
        ],
        expect: { allowed: true },
      },
      {
        rule: "ReplacementTooSmall",
        input: update(STORED, [
          withGroups(A, { type: "mirror", devices: ["a-small", "a2"] }, A.groups[1]),
          B,
          C,
        ]),
        cluster: live(blockDevice("a-small", "node-a", { gib: 5 })),
        expect: {
          allowed: false,
          reason: "ReplacementTooSmall",
          message: /a-small \(5368709120 bytes\) is smaller than a1 \(10737418240 bytes\) it replaces/,
        },
      },
      {
        rule: "a larger replacement device",
        input: update(STORED, [
          withGroups(A, { type: "mirror", devices: ["a-big", "a2"] }, A.groups[1]),
          B,
          C,
        ]),
        cluster: live(blockDevice("a-big", "node-a", { gib: 20 })),
        expect: { allowed: true, noWarnings: true },
      },
      {
        rule: "BlockDeviceClaimedElsewhere (replacement)",
        input: update(STORED, [withGroups(A, { type: "mirror", devices: ["a5", "a2"] }, A.groups[1]), B, C]),
        cluster: [
          ...NODES,
          ...devicesWith(blockDevice("a5", "node-a", { claimedBy: "bdc-other" })),
          ...LIVE,
          claim("a5", { foreign: "bdc-other" }),
        ],
        expect: {
          allowed: false,
          reason: "BlockDeviceClaimedElsewhere",
          message: /a5 is claimed by BlockDeviceClaim openebs\/bdc-other/,
        },
      },
      {
        rule: "BlockDeviceMovedBetweenPools",
        input: update(STORED, [A, withGroups(B, { type: "stripe", devices: ["b1", "b2", "c1"] }), C]),
        cluster: live(),
        expect: {
          allowed: false,
          reason: "BlockDeviceMovedBetweenPools",
          message: /c1 belongs to pool pools-[0-9a-f]+; taking it from there would destroy that pool's data/,
        },
      },
      {
        rule: "BlockDeviceBeingReplaced",
        input: update(STORED, [A, withGroups(B, { type: "stripe", devices: ["b1", "b2", "a0"] }), C]),
        cluster: [
          ...live(blockDevice("a0", "node-b")).filter((o) => o.metadata.name !== "bdc-a1"),
          claim("a1", { cspi: "x", predecessor: "a0" }),
        ],
        expect: {
          allowed: false,
          reason: "BlockDeviceBeingReplaced",
          message:
            /a0 is being replaced by a1 and still holds data until that resilver ends: pick another device/,
        },
      },
      {
        rule: "PoolRemovalWithVolumes",
        input: update(STORED, [B, C]),
        cluster: live(),
        expect: {
          allowed: false,
          reason: "PoolRemovalWithVolumes",
          message:
            /spec\.pools no longer lists pool pools-[0-9a-f]+ \(node node-a\), which holds 2 volume replicas \(as its node daemon reports\): removing it would destroy them/,
        },
      },
      {
        rule: "removal of a pool without volumes",
        input: update(STORED, [A, C]),
        cluster: live(),
        expect: {
          allowed: true,
          warning:
            /pool pools-[0-9a-f]+ on node node-b is no longer in spec\.pools: cspc-sync will destroy it and the data on it/,
        },
      },
      {
        rule: "migration whose devices have not moved yet",
        input: update([A, B], [A, { ...B, host: "node-c" }]),
        cluster: [...NODES, ...DEVICES, ...livePool(A, { volumes: 2 }), ...livePool(B)],
        expect: {
          allowed: true,
          warning:
            /not carried out yet: pool pools-[0-9a-f]+ moves from node-b to node-c once its block devices report that node \(not yet: b1, b2\)/,
        },
      },
      {
        rule: "migration whose devices already report the new node",
        input: update([A, C], [A, { ...C, host: "node-b" }]),
        cluster: [
          ...NODES,
          ...devicesWith(...["c1", "c2", "c3"].map((d) => blockDevice(d, "node-b"))),
          ...livePool(A, { volumes: 2 }),
          ...livePool(C),
        ],
        expect: { allowed: true, noWarnings: true },
      },
      {
        rule: "a changed pool whose new nodeSelector selects no node",
        input: update(STORED, [A, { ...B, host: "node-x" }, C]),
        cluster: live(),
        expect: {
          allowed: false,
          reason: "NodeNotFound",
          message: /spec\.pools\[1\] \(nodeSelector kubernetes\.io\/hostname=node-x\) selects no node/,
        },
      },
      {
        rule: "an untouched pool whose node is gone does not block editing another pool",
        input: update(STORED, [A, withGroups(B, { type: "stripe", devices: ["b1", "b2", "b3"] }), C]),
        cluster: [node("node-a"), node("node-b"), ...DEVICES, ...LIVE],
        expect: {
          allowed: true,
          warning:
            /unchanged by this edit and still refused by cspc-sync: spec\.pools\[2\] \(nodeSelector kubernetes\.io\/hostname=node-c\) selects no node/,
        },
      },
      {
        rule: "pools reordered, nothing else changed",
        input: update(STORED, [C, A, B]),
        cluster: live(),
        expect: { allowed: true, noWarnings: true },
      },
    ];
    rows.forEach(check);

    it("a duplicate this edit makes is refused, and not blamed on the untouched pool it collides with", async () => {
      // b1 stays where it was (pool B unchanged) and is also added to pool A: the edit made the duplicate.
      const input = update(STORED, [
        withGroups(A, ...A.groups, { type: "mirror", devices: ["b1", "a5"] }),
        B,
        C,
      ]);
      const { judgement } = await judge(input, live());
      expect(judgement.allowed).to.equal(false);
      expect(judgement.status?.message).to.match(
        /block device b1 is listed 2 times \(spec\.pools\[0\] and spec\.pools\[1\]\)/,
      );
      expect(judgement.warnings.join("\n")).to.not.contain("unchanged by this edit");
    });

    it("a metadata-only update needs no lookup and is allowed", () => {
      const input = update(STORED, STORED, { labels: { team: "storage" } });
      expect(factsNeeded(input)).to.deep.equal([]);
      expect(judgeCspc(input, {})).to.deep.include({ allowed: true, warnings: [] });
    });
  });

  describe("warnings and the pause", () => {
    const rows: Row[] = [
      {
        rule: "a nodeSelector key that differs in case from a node's label key",
        input: create([{ ...B, selector: { "kubernetes.io/hostName": "node-b" } }]),
        cluster: [node("node-a"), node("node-b", { "kubernetes.io/hostName": "node-b" }), ...DEVICES],
        expect: {
          allowed: true,
          warning:
            /uses label key kubernetes\.io\/hostName; label keys are case-sensitive and nodes carry kubernetes\.io\/hostname: use kubernetes\.io\/hostname/,
        },
      },
      {
        rule: "paused: a valid change is held",
        input: update(STORED, [A, withGroups(B, { type: "stripe", devices: ["b1", "b2", "b3"] }), C], {
          annotations: { "openebs.io/reconcile-paused": "true" },
        }),
        cluster: live(),
        expect: {
          allowed: true,
          warning:
            /openebs\.io\/reconcile-paused is "true": cspc-sync holds this change until the annotation is removed/,
        },
      },
      {
        rule: "paused: an invalid change is still refused",
        input: update(STORED, [A, withGroups(B, { type: "stripe", devices: ["b1"] }), C], {
          annotations: { "openebs.io/reconcile-paused": "true" },
        }),
        cluster: live(),
        expect: { allowed: false, reason: "BlockDeviceRemoved", message: /block device b2 was removed/ },
      },
    ];
    rows.forEach(check);
  });

  describe("structure (for input that has not been through the API server)", () => {
    const malformed: AdmissionInput = {
      operation: "CREATE",
      namespace: NS,
      name: CSPC_NAME,
      object: {
        ...cspc([A]),
        spec: {
          pools: [
            {
              nodeSelector: { "kubernetes.io/hostname": "node-a" },
              raidGroups: [{ typ: "mirror", blockDevices: [{ blockDeviceName: "a1" }] }],
            },
          ],
        },
      },
    };
    check({
      rule: "InvalidField",
      input: malformed,
      cluster: world(),
      expect: {
        allowed: false,
        reason: "InvalidField",
        message:
          /spec\.pools\[0\]\.raidGroups\[0\] has an unknown field typ: remove it \(known fields: type, isWriteCache, isSpare, isReadCache, blockDevices\)/,
      },
    });
    check({
      rule: "a compression value one character short of a supported one gets the rule's hint, not only the list",
      input: create([{ ...A, poolConfig: { compression: "lz" } }]),
      cluster: world(),
      expect: {
        allowed: false,
        reason: "UnsupportedCompression",
        message:
          /poolConfig\.compression "lz" is not supported \(did you mean lz4\?\): use one of off, on, lz4, lzjb, gzip, zle/,
      },
    });
    check({
      rule: "a scrub interval that is not whole hours or days is refused with the form and examples",
      input: create([{ ...A, poolConfig: { scrub: { interval: "weekly" } } }]),
      cluster: world(),
      expect: {
        allowed: false,
        reason: "InvalidField",
        message:
          /spec\.pools\[0\]\.poolConfig\.scrub\.interval is "weekly", which does not have the form .*: How long after the pool's last scrub ended the node daemon scrubs it again: a whole number of hours or days, such as 168h or 30d/,
      },
    });
    check({
      rule: "a raid group type written as ZFS names it (raidz1) gets a hint",
      input: create([withGroups(C, { type: "raidz1", devices: ["c1", "c2", "c3"] })]),
      cluster: world(),
      expect: {
        allowed: false,
        reason: "UnsupportedRaidType",
        message:
          /raidGroups\[0\] type "raidz1" is not supported \(did you mean raidz\?\): use stripe, mirror, raidz or raidz2/,
      },
    });
    check({
      rule: "a spec of JSON null",
      input: { ...create([A]), object: { ...cspc([A]), spec: null } },
      cluster: world(),
      expect: {
        allowed: false,
        reason: "InvalidField",
        message: /^CStorPoolCluster openebs\/pools: spec must be an object$/,
      },
    });
    check({
      rule: "a name longer than the CSPI names allow",
      input: create([A], { name: "p".repeat(57) }),
      cluster: world(),
      expect: {
        allowed: false,
        reason: "NameTooLong",
        message: /a CStorPoolCluster name can be at most 56 characters/,
      },
    });
  });

  describe("DELETE", () => {
    const rows: Row[] = [
      {
        rule: "while a pool holds volumes",
        input: remove(STORED),
        cluster: live(),
        expect: {
          allowed: false,
          reason: "",
          code: 403,
          message:
            /cannot be deleted while its pools hold volumes: pool pools-[0-9a-f]+ on node node-a holds 2 volume replicas \(as its node daemon reports\)\. Deleting it would destroy those pools and every volume on them: move or delete those volumes first/,
        },
      },
      {
        rule: "while no pool holds volumes",
        input: remove(STORED),
        cluster: [...NODES, ...DEVICES, ...livePool(A), ...livePool(B)],
        expect: {
          allowed: true,
          warning:
            /deleting CStorPoolCluster openebs\/pools destroys its pools pools-[0-9a-f]+ \(node node-[ab]\), pools-[0-9a-f]+ \(node node-[ab]\) and the data on them/,
        },
      },
      {
        rule: "after every CSPI was deleted by hand",
        input: remove(STORED),
        cluster: world(),
        expect: { allowed: true, noWarnings: true },
      },
    ];
    rows.forEach(check);
  });
});
