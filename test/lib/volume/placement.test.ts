// Properties of placement over random pools: the same inputs give the same pools whatever order the pools are
// listed in; never two replicas on one pool or one node; every chosen pool is one that can take the volume;
// kept replicas are never moved; and replicas spread over as many failure domains as the eligible pools allow.
import { expect } from "chai";
import fc from "fast-check";
import {
  largestPlaceable,
  place,
  whyNot,
  type PlacementInput,
  type PoolView,
} from "../../../lib/volume/placement.js";

const GI = 1024n ** 3n;

/** The first value nine times out of ten. */
function usually<T>(common: T, ...rare: T[]): T[] {
  return [...Array.from({ length: 9 * Math.max(rare.length, 1) }, () => common), ...rare];
}

const poolArb = (index: number): fc.Arbitrary<PoolView> =>
  fc
    .record({
      node: fc.constantFrom("n0", "n1", "n2", "n3", "n4", "n5", "n6"),
      zone: fc.option(fc.constantFrom("z1", "z2", "z3"), { nil: undefined }),
      // Mostly usable pools, so that most inputs have a placement to check.
      cspc: fc.constantFrom(...usually("pools", "other")),
      phase: fc.constantFrom(...usually("ONLINE", "DEGRADED", "OFFLINE")),
      readOnly: fc.constantFrom(...usually(false, true)),
      podAvailable: fc.constantFrom(...usually(true, false)),
      leaving: fc.constantFrom(...usually(false, true)),
      overProvisioning: fc.boolean(),
      free: fc.integer({ min: 0, max: 60 }),
      reserved: fc.integer({ min: 0, max: 20 }),
      used: fc.integer({ min: 0, max: 5 }),
    })
    .map(({ free, reserved, used, zone, ...rest }) => ({
      ...rest,
      ...(zone !== undefined ? { zone } : {}),
      name: `p${index}`,
      freeBytes: BigInt(free) * GI,
      reservedBytes: BigInt(reserved) * GI,
      replicaUsedBytes: BigInt(Math.min(used, reserved)) * GI,
    }));

const inputArb: fc.Arbitrary<PlacementInput> = fc
  .integer({ min: 1, max: 10 })
  .chain((count) => fc.tuple(...Array.from({ length: count }, (_, i) => poolArb(i))))
  .chain((pools) =>
    fc
      .record({
        replicaCount: fc.integer({ min: 1, max: 5 }),
        size: fc.integer({ min: 1, max: 20 }),
        existing: fc.subarray(
          pools.map((p) => p.name),
          { maxLength: Math.min(2, pools.length) },
        ),
      })
      .map(({ replicaCount, size, existing }) => ({
        cspc: "pools",
        sizeBytes: BigInt(size) * GI,
        replicaCount,
        existing,
        pools,
      })),
  );

function shuffled<T>(items: readonly T[], seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) % 2147483648;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

// Seeded: the spread property checks that its inputs really placed replicas (the after hook), and an unseeded
// run could fall short of that by chance.
const RUNS = { seed: 20261123 };

describe("volume placement (properties)", () => {
  it("is deterministic: the same pools in any order give the same answer", () => {
    fc.assert(
      fc.property(inputArb, fc.nat(), (input, seed) => {
        expect(place({ ...input, pools: shuffled(input.pools, seed) })).to.deep.equal(place(input));
      }),
      RUNS,
    );
  });

  it("keeps existing replicas, and puts new ones on distinct, eligible pools of distinct nodes", () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const result = place(input);
        expect(result.pools.slice(0, new Set(input.existing).size)).to.deep.equal([
          ...new Set(input.existing),
        ]);
        expect(new Set(result.pools).size, "one replica per pool").to.equal(result.pools.length);
        const byName = new Map(input.pools.map((p) => [p.name, p]));
        const keptNodes = new Set(input.existing.map((p) => byName.get(p)!.node));
        const addedNodes = result.added.map((p) => byName.get(p)!.node);
        expect(new Set(addedNodes).size, "one replica per node").to.equal(addedNodes.length);
        for (const node of addedNodes)
          expect(keptNodes.has(node), `${node} already holds a replica`).to.equal(false);
        if (result.added.length > 0) expect(result.pools).to.have.length(input.replicaCount);
        for (const name of result.added) expect(whyNot(byName.get(name)!, input), name).to.equal(undefined);
        if (result.unplaced) {
          expect(result.added).to.deep.equal([]);
          const named = new Set(result.unplaced.skipped.map((s) => s.name));
          for (const pool of input.pools.filter((p) => p.cspc === "pools"))
            expect(named.has(pool.name), `${pool.name} is accounted for`).to.equal(true);
        }
      }),
      RUNS,
    );
  });

  let placedSomewhere = 0;
  after(() => expect(placedSomewhere, "inputs where two or more replicas were placed").to.be.above(20));

  it("spreads: no failure domain gets a second new replica while an eligible pool in an empty one is left out", () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const fresh = { ...input, existing: [] };
        const result = place(fresh);
        if (result.added.length < 2) return;
        placedSomewhere++;
        const domain = (p: PoolView) => (p.zone !== undefined ? `z:${p.zone}` : `n:${p.node}`);
        const byName = new Map(input.pools.map((p) => [p.name, p]));
        const chosen = result.added.map((n) => byName.get(n)!);
        const counts = new Map<string, number>();
        for (const p of chosen) counts.set(domain(p), (counts.get(domain(p)) ?? 0) + 1);
        const crowded = [...counts.values()].some((c) => c > 1);
        if (!crowded) return;
        const usedNodes = new Set(chosen.map((p) => p.node));
        const leftOut = input.pools.filter(
          (p) =>
            !result.added.includes(p.name) &&
            !usedNodes.has(p.node) &&
            !counts.has(domain(p)) &&
            whyNot(p, fresh) === undefined,
        );
        expect(
          leftOut.map((p) => p.name),
          "eligible pools in domains without a replica",
        ).to.deep.equal([]);
      }),
      RUNS,
    );
  });

  it("a restore's first replicas: at least one on a pool holding its snapshot, and no holder passed over for another", () => {
    let restored = 0;
    fc.assert(
      fc.property(inputArb, fc.array(fc.boolean(), { minLength: 10, maxLength: 10 }), (input, holds) => {
        const holders = new Set(input.pools.filter((_, i) => holds[i]).map((p) => p.name));
        const fresh = { ...input, existing: [], clonable: { pools: holders, snapshot: "snap" } };
        const result = place(fresh);
        if (result.unplaced) return;
        restored++;
        expect(
          result.added.some((p) => holders.has(p)),
          "a clone to copy the others from",
        ).to.equal(true);
        if (result.added.every((p) => holders.has(p))) return;
        const byName = new Map(input.pools.map((p) => [p.name, p]));
        const usedNodes = new Set(result.added.map((p) => byName.get(p)!.node));
        for (const holder of input.pools.filter((p) => holders.has(p.name) && !whyNot(p, input)))
          expect(
            result.added.includes(holder.name) || usedNodes.has(holder.node),
            `${holder.name} holds the snapshot, can take a replica, and was passed over`,
          ).to.equal(true);
      }),
      RUNS,
    );
    expect(restored, "inputs that placed a restore").to.be.above(20);
  });

  it("takes pinned pools only: more replicas than pins add none and say so, whatever other pool is free", () => {
    const pools: PoolView[] = ["p0", "p1", "p2", "p3"].map((name, i) => ({
      name,
      node: `n${i}`,
      cspc: "pools",
      phase: "ONLINE",
      readOnly: false,
      podAvailable: true,
      leaving: false,
      overProvisioning: false,
      freeBytes: 50n * GI,
      reservedBytes: 0n,
      replicaUsedBytes: 0n,
    }));
    const input = { cspc: "pools", sizeBytes: GI, pools, pinned: ["p0", "p1"] };
    const placed = place({ ...input, replicaCount: 4, existing: ["p0", "p1"] });
    expect(placed.added).to.deep.equal([]);
    expect(placed.pools).to.deep.equal(["p0", "p1"]);
    expect(placed.unplaced?.message).to.match(/spec.pinnedPools names 2 pool\(s\) and 2 more are needed/);
    expect(place({ ...input, replicaCount: 2, existing: ["p0"] }).added).to.deep.equal(["p1"]);
  });

  it("says the largest volume it would place: that size is placed, a byte more is not (no over-provisioning)", () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const fresh = { ...input, existing: [] };
        const largest = largestPlaceable(fresh);
        if (largest > 0n) expect(place({ ...fresh, sizeBytes: largest }).unplaced).to.equal(undefined);
        else expect(place({ ...fresh, sizeBytes: 1n }).unplaced).not.to.equal(undefined);
        if (largest > 0n && !fresh.pools.some((p) => p.overProvisioning))
          expect(place({ ...fresh, sizeBytes: largest + 1n }).unplaced).not.to.equal(undefined);
      }),
      RUNS,
    );
  });
});
