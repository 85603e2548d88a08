// cspc-sync over random timelines of cluster events, on the in-memory world of test/support/cspc-world.ts.
// The property tests next to the hook edit the CSPC spec; here the cluster misbehaves too: claims and CSPIs
// deleted by hand or stuck terminating, claims unbound, BlockDevices and Nodes gone, pools failing or
// holding volumes, reconciliation paused, replacements started and finished, pools removed and re-added.
// After every sync: no observed CSPI disappears unmarked, no device leaves a pool outside a replacement, and
// every device of every observed CSPI keeps its claim.
import { expect } from "chai";
import fc from "fast-check";
import { ANNOTATION } from "../../api/constants.js";
import type { KubeObject } from "../../api/types.js";
import {
  apply,
  blockDevice,
  cspcWith,
  node,
  requestOf,
  settle,
  sync,
  type World,
} from "../support/cspc-world.js";
import { compositeChildrenProblems } from "./support/invariants.js";
import { tally } from "./support/tally.js";

const NODES = ["n0", "n1", "n2"];
const dev = (n: number, d: number) => `n${n}-d${d}`;
const devices = (n: number, ...d: number[]) => d.map((i) => ({ blockDeviceName: dev(n, i) }));
const TERMINATING = "2026-11-21T11:00:00Z";

function pools(): unknown[] {
  return [
    {
      nodeSelector: { "kubernetes.io/hostname": "n0" },
      raidGroups: [
        { type: "mirror", blockDevices: devices(0, 0, 1) },
        { type: "mirror", blockDevices: devices(0, 2, 3) },
      ],
    },
    {
      nodeSelector: { "kubernetes.io/hostname": "n1" },
      raidGroups: [{ type: "raidz", blockDevices: devices(1, 0, 1, 2) }],
    },
    {
      nodeSelector: { "kubernetes.io/hostname": "n2" },
      raidGroups: [{ type: "stripe", blockDevices: devices(2, 0) }],
    },
  ];
}

function start(): World {
  const blockDevices: KubeObject[] = [];
  for (let n = 0; n < NODES.length; n++)
    for (let d = 0; d < 6; d++) blockDevices.push(blockDevice(dev(n, d), NODES[n]));
  return settle({ parent: cspcWith(pools()), cspis: [], claims: [], blockDevices, nodes: NODES.map(node) });
}

type Event = { describe: string; happen(world: World): World };

const pick = <T>(list: readonly T[], i: number): T | undefined =>
  list.length ? list[i % list.length] : undefined;
const without = <T>(list: readonly T[], item: T | undefined): T[] => list.filter((x) => x !== item);
const edit = <T extends KubeObject>(list: readonly T[], i: number, change: (o: T) => void): T[] =>
  list.map((o, k) => {
    if (k !== i % Math.max(1, list.length)) return o;
    const copy = structuredClone(o);
    change(copy);
    return copy;
  });
function editSpec(world: World, change: (pools: any[]) => void): World {
  const spec = structuredClone(world.parent.spec) as { pools: any[] };
  change(spec.pools);
  const generation = (world.parent.metadata.generation ?? 1) + 1;
  return { ...world, parent: { ...world.parent, metadata: { ...world.parent.metadata, generation }, spec } };
}

const i = fc.nat();
const events: fc.Arbitrary<Event> = fc.oneof(
  i.map((k) => ({
    describe: `claim #${k} deleted by hand`,
    happen: (w: World) => ({ ...w, claims: without(w.claims, pick(w.claims, k)) }),
  })),
  i.map((k) => ({
    describe: `claim #${k} unbound`,
    happen: (w: World) => ({ ...w, claims: edit(w.claims, k, (c) => (c.status = { phase: "Pending" })) }),
  })),
  i.map((k) => ({
    describe: `claim #${k} terminating`,
    happen: (w: World) => ({
      ...w,
      claims: edit(w.claims, k, (c) => (c.metadata.deletionTimestamp = TERMINATING)),
    }),
  })),
  i.map((k) => ({
    describe: `BlockDevice #${k} gone`,
    happen: (w: World) => ({ ...w, blockDevices: without(w.blockDevices, pick(w.blockDevices, k)) }),
  })),
  i.map((k) => ({
    describe: `node #${k} gone`,
    happen: (w: World) => ({ ...w, nodes: without(w.nodes, pick(w.nodes, k)) }),
  })),
  i.map((k) => ({
    describe: `CSPI #${k} deleted by hand`,
    happen: (w: World) => ({ ...w, cspis: without(w.cspis, pick(w.cspis, k)) }),
  })),
  i.map((k) => ({
    describe: `CSPI #${k} terminating`,
    happen: (w: World) => ({
      ...w,
      cspis: edit(w.cspis, k, (c) => (c.metadata.deletionTimestamp = TERMINATING)),
    }),
  })),
  fc
    .tuple(i, fc.constantFrom("OFFLINE", "DEGRADED", "FAULTED", "Pending", "Unknown"), fc.nat({ max: 3 }))
    .map(([k, phase, volumes]) => ({
      describe: `CSPI #${k} ${phase} with ${volumes} volume(s)`,
      happen: (w: World) => ({
        ...w,
        cspis: edit(
          w.cspis,
          k,
          (c) => (c.status = { ...(c.status as object), phase, provisionedReplicas: volumes }),
        ),
      }),
    })),
  fc.boolean().map((paused) => ({
    describe: paused ? "reconciliation paused" : "reconciliation resumed",
    happen: (w: World) => ({
      ...w,
      parent: {
        ...w.parent,
        metadata: {
          ...w.parent.metadata,
          // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- tsc needs it to type both arms alike
          annotations: paused ? { [ANNOTATION.reconcilePaused]: "true" } : ({} as Record<string, string>),
        },
      },
    }),
  })),
  fc.tuple(i, i, fc.integer({ min: 3, max: 5 })).map(([g, slot, spare]) => ({
    describe: `device ${slot} of n0 group ${g} replaced by spare ${spare}`,
    happen: (w: World) =>
      editSpec(w, (p) => {
        const group = p.find((x) => x.nodeSelector["kubernetes.io/hostname"] === "n0")?.raidGroups[g % 2];
        if (group) group.blockDevices[slot % group.blockDevices.length] = { blockDeviceName: dev(0, spare) };
      }),
  })),
  fc.integer({ min: 1, max: 5 }).map((d) => ({
    describe: `stripe on n2 extended by d${d}`,
    happen: (w: World) =>
      editSpec(w, (p) => {
        p.find((x) => x.nodeSelector["kubernetes.io/hostname"] === "n2")?.raidGroups[0].blockDevices.push({
          blockDeviceName: dev(2, d),
        });
      }),
  })),
  i.map((k) => ({
    describe: `pool #${k} removed from the spec`,
    happen: (w: World) => editSpec(w, (p) => void p.splice(k % Math.max(1, p.length), 1)),
  })),
  fc.constant({
    describe: "spec reset to the three pools",
    happen: (w: World) => editSpec(w, (p) => void p.splice(0, p.length, ...pools())),
  }),
  i.map((k) => ({
    describe: `the block devices come back, node #${k} comes back`,
    happen: (w: World) => restore(w, k),
  })),
);

/** Brings back the BlockDevices and one missing Node: failures in a real cluster are usually temporary. */
function restore(world: World, k: number): World {
  const fresh = start();
  const nodes = [...world.nodes];
  const missing = fresh.nodes.filter((n) => !nodes.some((m) => m.metadata.name === n.metadata.name));
  const back = pick(missing, k);
  return { ...world, blockDevices: fresh.blockDevices, nodes: back ? [...nodes, back] : nodes };
}

/**
 * Metacontroller's side of a step: apply the answer. What was being deleted stays deleted (a returned object
 * keeps its deletionTimestamp; an omitted one is gone).
 */
function step(world: World, resilver: boolean): { next: World; problems: string[] } {
  const response = sync(world);
  const problems = compositeChildrenProblems(requestOf(world), response);
  const next = apply(world, response, { resilver });
  const terminating = new Set(
    [...world.cspis, ...world.claims]
      .filter((o) => o.metadata.deletionTimestamp)
      .map((o) => `${o.kind}/${o.metadata.name}`),
  );
  const keep = (o: KubeObject) =>
    terminating.has(`${o.kind}/${o.metadata.name}`)
      ? { ...o, metadata: { ...o.metadata, deletionTimestamp: TERMINATING } }
      : o;
  return { next: { ...next, cspis: next.cspis.map(keep), claims: next.claims.map(keep) }, problems };
}

describe("cspc-sync over random timelines of cluster events", function () {
  this.timeout(120_000);
  const initial = start();
  const RUNS = Number(process.env.FUZZ_RUNS ?? 1500) / 5;

  it("starts from three ONLINE pools with eight Bound claims", () => {
    expect(initial.cspis.map((c) => (c.status as { phase: string }).phase)).to.deep.equal([
      "ONLINE",
      "ONLINE",
      "ONLINE",
    ]);
    expect(initial.claims).to.have.length(8);
  });

  it(`keeps every pool's devices and claims through ${RUNS} timelines of up to 12 events`, () => {
    let steps = 0;
    fc.assert(
      fc.property(fc.array(fc.tuple(events, fc.boolean()), { minLength: 1, maxLength: 12 }), (timeline) => {
        let world = initial;
        const seen: string[] = [];
        for (const [event, resilver] of timeline) {
          seen.push(event.describe);
          const { next, problems } = step(event.happen(world), resilver);
          steps++;
          expect(problems, `after ${seen.join(" → ")}: ${problems.join("; ")}`).to.deep.equal([]);
          world = next;
        }
      }),
      { numRuns: RUNS, seed: Number(process.env.FUZZ_SEED ?? 20261121) },
    );
    tally.fuzz("cspc-sync timelines (syncs)", steps, new Map());
  });
});
