// Property tests of volume day-2 (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md) over random sequences of what users and nodes do: replicaCount
// edits, pools marked for removal, replicas going Offline or Healthy, the target confirming a rebuild,
// replicas declared lost, node daemons destroying deleted replicas. Each answer of cvc-sync is applied as
// Metacontroller applies it (3-way merge; a child left out is deleted, a replica stays Terminating behind its
// finalizer) and fed back.
import { expect } from "chai";
import fc from "fast-check";
import {
  ANNOTATION,
  API_VERSION,
  CSPI_CONDITION,
  KIND,
  LABEL,
  POOL_REMOVAL_REQUESTED,
  REPLICA_LOST_CONFIRM,
  TYPE_KEY,
} from "../../../api/constants.js";
import type { CompositeSyncResponse } from "../../../api/types.js";
import { handleCvcSync } from "../../../hooks/cvc-sync/sync.js";
import { canonicalJson } from "../../../lib/canonical.js";
import { TEST_HOOK_CONFIG } from "../../../testkit/hook-config.js";
import { consistencyFactor } from "../../../lib/volume/children.js";
import { applyUpdate, type Obj } from "../../../testkit/metacontroller-driver.js";

const NS = "openebs";
const VOLUME = "pvc-9";
const POOLS = ["p0", "p1", "p2", "p3", "p4"];
const KEY: Record<string, string> = {
  [KIND.service]: TYPE_KEY.service,
  [KIND.cv]: TYPE_KEY.cv,
  [KIND.secret]: TYPE_KEY.secret,
  [KIND.deployment]: TYPE_KEY.deployment,
  [KIND.cvr]: TYPE_KEY.cvr,
  [KIND.podDisruptionBudget]: TYPE_KEY.podDisruptionBudget,
};

interface Cluster {
  parent: Obj;
  /** The volume's children by Kind/name, as the API server stores them. */
  children: Map<string, Obj>;
  /** Pools marked for removal. */
  leaving: Set<string>;
  tick: number;
}

function cspi(name: string, leaving: boolean): Obj {
  return {
    apiVersion: API_VERSION,
    kind: KIND.cspi,
    metadata: {
      name,
      namespace: NS,
      labels: { [LABEL.cspc]: "pools" },
      ...(leaving ? { annotations: { [ANNOTATION.poolRemoval]: POOL_REMOVAL_REQUESTED } } : {}),
    },
    spec: {
      hostName: `node-${name}`,
      nodeSelector: { [LABEL.hostname]: `node-${name}` },
      poolConfig: { compression: "off", overProvisioning: false, roThresholdLimit: 85 },
      raidGroups: [
        {
          type: "stripe",
          blockDevices: [
            { blockDeviceName: `bd-${name}`, capacity: 107374182400, devLink: `/dev/disk/by-id/${name}` },
          ],
        },
      ],
    },
    status: {
      phase: "ONLINE",
      readOnly: false,
      capacity: { total: "100Gi", free: "100Gi", used: "0" },
      conditions: [
        {
          type: CSPI_CONDITION.podAvailable,
          status: "True",
          reason: "PoolPodAvailable",
          message: "available",
        },
      ],
    },
  };
}

function newCluster(replicaCount: number): Cluster {
  const parent = {
    apiVersion: API_VERSION,
    kind: KIND.cvc,
    metadata: { name: VOLUME, namespace: NS, uid: "uid-pvc-9", generation: 1 },
    spec: { capacity: "1Gi", cstorPoolCluster: "pools", replicaCount },
  };
  return { parent, children: new Map(), leaving: new Set(), tick: 0 };
}

function request(cluster: Cluster): Obj {
  const children: Record<string, Record<string, Obj>> = {};
  for (const child of cluster.children.values())
    (children[KEY[child.kind]] ??= {})[`${NS}/${child.metadata.name}`] = structuredClone(child);
  const cspis = Object.fromEntries(POOLS.map((p) => [`${NS}/${p}`, cspi(p, cluster.leaving.has(p))]));
  const cspc = {
    apiVersion: API_VERSION,
    kind: KIND.cspc,
    metadata: { name: "pools", namespace: NS },
    spec: {
      pools: POOLS.map((p) => ({
        nodeSelector: { [LABEL.hostname]: `node-${p}` },
        raidGroups: [{ type: "stripe", blockDevices: [{ blockDeviceName: `bd-${p}` }] }],
      })),
    },
  };
  return {
    controller: {},
    parent: structuredClone(cluster.parent),
    children,
    related: { [TYPE_KEY.cspi]: cspis, [TYPE_KEY.cspc]: { [`${NS}/pools`]: cspc } },
    finalizing: false,
  };
}

function sync(cluster: Cluster): { request: Obj; response: CompositeSyncResponse } {
  const req = request(cluster);
  const now = new Date(Date.UTC(2026, 10, 24, 8, 0, cluster.tick++));
  return { request: req, response: handleCvcSync(req, () => now, TEST_HOOK_CONFIG) };
}

/** Metacontroller applies the answer: children updated by 3-way merge, created, or deleted (a replica stays Terminating). */
function apply(cluster: Cluster, response: CompositeSyncResponse): void {
  const wanted = new Set<string>();
  for (const desired of response.children as Obj[]) {
    const key = `${desired.kind}/${desired.metadata.name}`;
    wanted.add(key);
    const current = cluster.children.get(key);
    if (current) {
      cluster.children.set(key, applyUpdate(current, desired));
      continue;
    }
    const created = applyUpdate(
      {
        apiVersion: desired.apiVersion,
        kind: desired.kind,
        metadata: { name: desired.metadata.name, namespace: NS },
      },
      desired,
    );
    // The API server gives a Service its ClusterIP.
    if (created.kind === KIND.service) created.spec.clusterIP = "10.96.0.9";
    cluster.children.set(key, created);
  }
  for (const [key, child] of [...cluster.children]) {
    if (wanted.has(key) || child.metadata.deletionTimestamp) continue;
    if ((child.metadata.finalizers ?? []).length > 0)
      child.metadata.deletionTimestamp = "2026-11-24T08:00:00Z";
    else cluster.children.delete(key);
  }
  cluster.parent.status = structuredClone(response.status);
}

const replicas = (cluster: Cluster): Obj[] =>
  [...cluster.children.values()].filter((c) => c.kind === KIND.cvr);
const poolOf = (cvr: Obj): string => cvr.metadata.labels[LABEL.replicaPool];
const rebuilding = (cvr: Obj): boolean =>
  cvr.metadata.annotations?.[ANNOTATION.rebuildingSince] !== undefined &&
  cvr.metadata.annotations?.[ANNOTATION.replicaCaughtUp] !== "true";
/** A copy the volume can count on: Healthy, caught up, not being deleted. */
const serving = (cvr: Obj): boolean =>
  cvr.status?.phase === "Healthy" && !rebuilding(cvr) && !cvr.metadata.deletionTimestamp;

type Event =
  | { kind: "replicaCount"; count: number }
  | { kind: "markPool"; pool: number }
  | { kind: "unmarkPool"; pool: number }
  | { kind: "daemonReports"; replica: number; phase: "Healthy" | "Offline" }
  | { kind: "targetConfirms"; replica: number }
  | { kind: "declareLost"; replica: number }
  | { kind: "daemonDestroys" }
  | { kind: "sync" };

// Weighted towards what makes a change unsafe: count edits while replicas are Offline or still rebuilding.
const eventArb: fc.Arbitrary<Event> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant("replicaCount" as const),
      count: fc.integer({ min: 1, max: 5 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("markPool" as const), pool: fc.nat({ max: POOLS.length - 1 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("unmarkPool" as const),
      pool: fc.nat({ max: POOLS.length - 1 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("daemonReports" as const),
      replica: fc.nat({ max: 5 }),
      phase: fc.constantFrom("Healthy" as const, "Offline" as const),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant("targetConfirms" as const), replica: fc.nat({ max: 5 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant("declareLost" as const), replica: fc.nat({ max: 5 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: "daemonDestroys" as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: "sync" as const }) },
);

function happen(cluster: Cluster, event: Event): void {
  const list = replicas(cluster).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const pick = (i: number): Obj | undefined => (list.length > 0 ? list[i % list.length] : undefined);
  switch (event.kind) {
    case "replicaCount":
      cluster.parent.spec.replicaCount = event.count;
      cluster.parent.metadata.generation++;
      return;
    case "markPool":
      cluster.leaving.add(POOLS[event.pool]);
      return;
    case "unmarkPool":
      cluster.leaving.delete(POOLS[event.pool]);
      return;
    case "daemonReports": {
      const cvr = pick(event.replica);
      if (cvr) cvr.status = { phase: event.phase };
      return;
    }
    case "targetConfirms": {
      const cvr = pick(event.replica);
      if (cvr) (cvr.metadata.annotations ??= {})[ANNOTATION.replicaCaughtUp] = "true";
      return;
    }
    case "declareLost": {
      // A person declares lost only a replica that is not Healthy (its pool is gone).
      const cvr = pick(event.replica);
      if (cvr && cvr.status?.phase !== "Healthy")
        (cvr.metadata.annotations ??= {})[ANNOTATION.replicaLost] = REPLICA_LOST_CONFIRM;
      return;
    }
    case "daemonDestroys":
      for (const cvr of list)
        if (cvr.metadata.deletionTimestamp) cluster.children.delete(`${KIND.cvr}/${cvr.metadata.name}`);
      return;
    case "sync":
      return;
  }
}

/** One sync, checked: what the answer keeps of the volume's data. */
function checkedSync(cluster: Cluster): void {
  const before = replicas(cluster);
  const { response } = sync(cluster);
  const returned = (response.children as Obj[]).filter((c) => c.kind === KIND.cvr);
  const returnedNames = new Set(returned.map((c) => c.metadata.name));
  const pools = returned.map(poolOf);
  expect(new Set(pools).size, `two replicas of the volume on one pool: ${pools.join(", ")}`).to.equal(
    pools.length,
  );
  const added = returned.filter((c) => !before.some((b) => b.metadata.name === c.metadata.name));
  for (const made of added) {
    expect(
      before.some((b) => poolOf(b) === poolOf(made)),
      `new replica on pool ${poolOf(made)}, which still holds one being deleted`,
    ).to.equal(false);
  }
  const lost = (c: Obj): boolean => c.metadata.annotations?.[ANNOTATION.replicaLost] === REPLICA_LOST_CONFIRM;
  // One change at a time: a volume with replicas gets at most one new replica per answer, none while one rebuilds.
  if (before.length > 0) {
    expect(added.length, "replicas added at once").to.be.at.most(1);
    // A rebuilding replica declared lost will never catch up: it is replaced.
    const busy = before
      .filter((c) => rebuilding(c) && !c.metadata.deletionTimestamp && !lost(c))
      .map((c) => c.metadata.name);
    if (busy.length > 0)
      expect(
        added.map((c) => c.metadata.name),
        `added while ${busy.join(", ")} rebuild`,
      ).to.deep.equal([]);
  }
  const servingBefore = before.filter(serving);
  const servingAfter = servingBefore.filter((c) => returnedNames.has(c.metadata.name));
  const factor = consistencyFactor(cluster.parent.spec.replicaCount);
  expect(
    servingAfter.length,
    `the answer keeps ${servingAfter.length} of ${servingBefore.length} Healthy caught-up replicas, ${factor} needed`,
  ).to.be.at.least(Math.min(servingBefore.length, factor));
  expect(
    servingBefore.length - servingAfter.length,
    "at most one Healthy replica removed per answer",
  ).to.be.at.most(1);
  const destroying = before
    .filter((c) => c.metadata.deletionTimestamp && !lost(c))
    .map((c) => c.metadata.name);
  const dropped = before
    .filter((c) => !c.metadata.deletionTimestamp && !lost(c) && !returnedNames.has(c.metadata.name))
    .map((c) => c.metadata.name);
  if (destroying.length > 0)
    expect(dropped, `removed while ${destroying.join(", ")} is still being destroyed`).to.deep.equal([]);
  apply(cluster, response);
}

/** Nodes and target do their part until nothing changes: every replica Healthy and confirmed, deleted ones destroyed. */
function settle(cluster: Cluster): void {
  for (let round = 0, last = ""; round < 30; round++) {
    checkedSync(cluster);
    for (const cvr of replicas(cluster)) {
      if (cvr.metadata.deletionTimestamp) cluster.children.delete(`${KIND.cvr}/${cvr.metadata.name}`);
      else {
        cvr.status = { phase: "Healthy" };
        if (cvr.metadata.annotations?.[ANNOTATION.rebuildingSince])
          cvr.metadata.annotations[ANNOTATION.replicaCaughtUp] = "true";
      }
    }
    const now = snapshot(cluster);
    if (now === last) return;
    last = now;
  }
  expect.fail(`no fixed point after 30 rounds: ${snapshot(cluster)}`);
}

function snapshot(cluster: Cluster): string {
  return canonicalJson({
    children: [...cluster.children.entries()].sort(),
    status: cluster.parent.status ?? null,
  });
}

/** A settled volume of `initial` replicas, then each event followed by a checked sync. */
function run(initial: number, events: readonly Event[]): Cluster {
  const cluster = newCluster(initial);
  settle(cluster);
  for (const event of events) {
    happen(cluster, event);
    checkedSync(cluster);
  }
  return cluster;
}

const scenario = [fc.integer({ min: 1, max: 3 }), fc.array(eventArb, { maxLength: 30 })] as const;

describe("cvc-sync day-2 properties (decision 27)", function () {
  // Thousands of pure syncs; a few seconds alone, longer on a shared machine.
  this.timeout(120_000);
  it("over random edits: never two replicas of the volume on one pool, never below the consistency factor of Healthy caught-up replicas because of the hook, at most one removed per answer", () => {
    fc.assert(
      fc.property(...scenario, (initial, events) => {
        run(initial, events);
      }),
      { seed: 20261124, numRuns: 80 },
    );
  });

  it("once nodes and target have done their part, the answer fed back is a fixed point: replicaCount replicas, none on a pool marked for removal, ReplicaChange Settled", () => {
    fc.assert(
      fc.property(...scenario, (initial, events) => {
        const cluster = run(initial, events);
        // Lost replicas are replaced and released; what a person declared stays declared.
        settle(cluster);
        const at = snapshot(cluster);
        checkedSync(cluster);
        expect(snapshot(cluster), "the answer fed back changes nothing").to.equal(at);
        const live = replicas(cluster);
        const count = cluster.parent.spec.replicaCount;
        const placeable = POOLS.length - cluster.leaving.size;
        const change = (cluster.parent.status.conditions as Obj[]).find((c) => c.type === "ReplicaChange");
        if (count <= placeable) {
          expect(live.length, "replicas").to.equal(count);
          expect(
            live.map(poolOf).filter((p) => cluster.leaving.has(p)),
            "replicas left on pools marked for removal",
          ).to.deep.equal([]);
          expect(change?.reason, change?.message).to.equal("Settled");
        } else {
          // Not enough pools for every replica off the leaving ones: the condition says so, nothing is lost.
          expect(change?.status, change?.message).to.equal("True");
        }
      }),
      { seed: 20261125, numRuns: 50 },
    );
  });
});
