// Property tests over random edits of a live CSPC: whatever the user does to the spec, the hook never drops
// a device from a pool (except through a valid replacement), converges to a fixed point, and does not care
// about the order in which Metacontroller lists the children.
import { expect } from "chai";
import fc from "fast-check";
import { ANNOTATION } from "../../../api/constants.js";
import type { KubeObject } from "../../../api/types.js";
import { ownedView } from "../../../lib/cspc/build.js";
import { canonicalJson } from "../../../lib/canonical.js";
import {
  apply,
  blockDevice,
  cspcWith,
  node,
  requestOf,
  settle,
  sync,
  type World,
} from "../../support/cspc-world.js";
import { quietHookContext } from "../../../testkit/hook-context.js";
import { handleCspcSync } from "../../../hooks/cspc-sync/sync.js";

const NODES = ["n0", "n1", "n2", "n3"];
const dev = (n: number, d: number) => `n${n}-d${d}`;
const group = (type: string | undefined, devices: string[], extra: object = {}) => ({
  ...(type ? { type } : {}),
  ...extra,
  blockDevices: devices.map((blockDeviceName) => ({ blockDeviceName })),
});

function basePools() {
  return [
    {
      nodeSelector: { "kubernetes.io/hostname": "n0" },
      raidGroups: [group("mirror", [dev(0, 0), dev(0, 1)]), group("mirror", [dev(0, 2), dev(0, 3)])],
    },
    {
      nodeSelector: { "kubernetes.io/hostname": "n1" },
      raidGroups: [group("raidz", [dev(1, 0), dev(1, 1), dev(1, 2)])],
    },
    {
      nodeSelector: { "kubernetes.io/hostname": "n2" },
      raidGroups: [group("stripe", [dev(2, 0), dev(2, 1)])],
    },
  ];
}

function baseWorld(): World {
  const blockDevices: KubeObject[] = [];
  for (let n = 0; n < NODES.length; n++)
    for (let d = 0; d < 8; d++) blockDevices.push(blockDevice(dev(n, d), NODES[n]));
  return { parent: cspcWith(basePools()), cspis: [], claims: [], blockDevices, nodes: NODES.map(node) };
}

const steady = settle(baseWorld());

type Pools = ReturnType<typeof basePools>;
type Edit = (pools: Pools) => void;

const poolIndex = fc.nat({ max: 3 });
const groupIndex = fc.nat({ max: 2 });
const slot = fc.nat({ max: 3 });
const spare = fc.integer({ min: 3, max: 7 });
const nodeIndex = fc.nat({ max: 3 });

const edits: fc.Arbitrary<Edit> = fc.oneof(
  fc.tuple(poolIndex, groupIndex, slot).map(([p, g, i]) => (pools: Pools) => {
    pools[p]?.raidGroups[g]?.blockDevices.splice(i, 1);
  }),
  fc.tuple(poolIndex, groupIndex, spare).map(([p, g, s]) => (pools: Pools) => {
    pools[p]?.raidGroups[g]?.blockDevices.push({ blockDeviceName: dev(p, s) });
  }),
  fc.tuple(poolIndex, groupIndex, slot, spare, nodeIndex).map(([p, g, i, s, n]) => (pools: Pools) => {
    const devices = pools[p]?.raidGroups[g]?.blockDevices;
    if (devices && devices[i]) devices[i] = { blockDeviceName: dev(n, s) };
  }),
  fc
    .tuple(poolIndex, groupIndex, fc.constantFrom("stripe", "mirror", "raidz", "raidz2"))
    .map(([p, g, t]) => (pools: Pools) => {
      const rg = pools[p]?.raidGroups[g];
      if (rg) rg.type = t;
    }),
  fc.tuple(poolIndex, groupIndex).map(([p, g]) => (pools: Pools) => {
    pools[p]?.raidGroups.splice(g, 1);
  }),
  fc
    .tuple(
      poolIndex,
      fc.constantFrom("mirror", "stripe"),
      fc.constantFrom({}, { isWriteCache: true }, { isSpare: true }, { isReadCache: true }),
    )
    .map(([p, t, role]) => (pools: Pools) => {
      pools[p]?.raidGroups.push(group(t, [dev(p, 6), dev(p, 7)], role));
    }),
  fc.tuple(poolIndex, nodeIndex).map(([p, n]) => (pools: Pools) => {
    if (pools[p]) pools[p].nodeSelector = { "kubernetes.io/hostname": NODES[n] };
  }),
  poolIndex.map((p) => (pools: Pools) => {
    pools.splice(p, 1);
  }),
  fc.constant((pools: Pools) => {
    pools.push({
      nodeSelector: { "kubernetes.io/hostname": "n3" },
      raidGroups: [group("mirror", [dev(3, 0), dev(3, 1)])],
    });
  }),
);

function edited(list: Edit[]): World {
  const pools = structuredClone(basePools());
  for (const edit of list) edit(pools);
  return { ...steady, parent: { ...cspcWith(pools, 2), status: steady.parent.status } };
}

function devicesByGroup(cspi: KubeObject): string[][] {
  const spec = cspi.spec as { raidGroups: { blockDevices: { blockDeviceName: string }[] }[] };
  return spec.raidGroups.map((g) => g.blockDevices.map((d) => d.blockDeviceName));
}

describe("cspc-sync properties over random CSPC edits", () => {
  const runs = { numRuns: 300, seed: 20261121 };

  it("never drops a device the observed CSPI had, unless a valid replacement names it or it is a spare or read cache device whose claim keeps the removal mark", () => {
    fc.assert(
      fc.property(fc.array(edits, { minLength: 1, maxLength: 3 }), (list) => {
        const world = edited(list);
        const response = sync(world);
        const out = new Map(
          response.children.filter((c) => c.kind === "CStorPoolInstance").map((c) => [c.metadata.name, c]),
        );
        const predecessors = new Map<string, string>();
        for (const c of response.children) {
          const p = c.metadata.annotations?.[ANNOTATION.bdPredecessor];
          if (c.kind === "BlockDeviceClaim" && p)
            predecessors.set(p, (c.spec as { blockDeviceName: string }).blockDeviceName);
        }
        for (const observed of world.cspis) {
          const now = out.get(observed.metadata.name);
          if (!now) {
            expect(
              observed.metadata.annotations?.[ANNOTATION.poolRemoval],
              `${observed.metadata.name} vanished without the removal mark`,
            ).to.equal("requested");
            continue;
          }
          const before = devicesByGroup(observed);
          const after = devicesByGroup(now);
          const removing = new Set(
            response.children
              .filter(
                (c) =>
                  c.kind === "BlockDeviceClaim" &&
                  c.metadata.annotations?.[ANNOTATION.bdRemoval] !== undefined,
              )
              .map((c) => (c.spec as { blockDeviceName: string }).blockDeviceName),
          );
          before.forEach((devices, g) => {
            const group = (observed.spec as { raidGroups: { isSpare?: boolean; isReadCache?: boolean }[] })
              .raidGroups[g];
            for (const d of devices) {
              if (after[g]?.includes(d)) continue;
              // A spare or read cache device may leave, its claim kept with the removal mark (docs/adr/0026-spare-and-read-cache-devices-may-leave-a-live.md).
              if ((group.isSpare || group.isReadCache) && removing.has(d)) continue;
              const successor = predecessors.get(d);
              expect(successor, `${d} left ${observed.metadata.name} without a replacement`).to.be.a(
                "string",
              );
              expect(after[g], `${d}'s successor sits in its group`).to.include(successor);
            }
          });
        }
      }),
      runs,
    );
  });

  it("converges: after the edit settles, feeding the answer back changes nothing", () => {
    fc.assert(
      fc.property(fc.array(edits, { minLength: 1, maxLength: 3 }), (list) => {
        const settled = settle(edited(list), 12);
        const response = sync(settled);
        const observed = [...settled.cspis, ...settled.claims].map(ownedView).map(canonicalJson).sort();
        expect(response.children.map(ownedView).map(canonicalJson).sort()).to.deep.equal(observed);
        expect(canonicalJson(apply(settled, response).parent.status)).to.equal(
          canonicalJson(settled.parent.status),
        );
      }),
      { ...runs, numRuns: 150 },
    );
  });

  it("answers the same whatever the order of children and related objects in the request", () => {
    fc.assert(
      fc.property(fc.array(edits, { minLength: 0, maxLength: 2 }), fc.func(fc.integer()), (list, rank) => {
        const world = edited(list);
        const reorder = <T extends KubeObject>(objects: T[]): T[] =>
          [...objects].sort(
            (a, b) =>
              rank(a.metadata.name) - rank(b.metadata.name) ||
              (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "") * -1,
          );
        const shuffled: World = {
          ...world,
          cspis: reorder(world.cspis),
          claims: reorder(world.claims),
          blockDevices: reorder(world.blockDevices),
          nodes: reorder(world.nodes),
        };
        const clock = () => new Date("2026-11-21T12:00:00Z");
        expect(canonicalJson(handleCspcSync(requestOf(shuffled), quietHookContext(clock)))).to.equal(
          canonicalJson(handleCspcSync(requestOf(world), quietHookContext(clock))),
        );
      }),
      runs,
    );
  });
});

describe("cspc-sync property test world", () => {
  it("starts from a live CSPC of three ONLINE pools with nine Bound claims", () => {
    expect(steady.cspis.map((c) => (c.status as { phase: string }).phase)).to.deep.equal([
      "ONLINE",
      "ONLINE",
      "ONLINE",
    ]);
    expect(steady.claims).to.have.length(9);
  });
});
