// The target's snapshot pass as a pure plan (volume-target/snapshots.ts): golden cases in
// test/fixtures/volume-target/snapshots/<case>/ (input.yaml: the volume, its CStorVolumeSnapshots and replicas,
// which replicas md has in sync, what md holds; plan.yaml: the steps), and the rule a writer depends on: while
// writes are held, a plan made at or after the bound releases first, whatever the world says.
import { expect } from "chai";
import { ANNOTATION } from "../../api/constants.js";
import type { CVR, CVSnap } from "../../api/types.js";
import { readWorld } from "../../testkit/case-documents.js";
import {
  listedSnapshots,
  planSnapshots,
  retryDelayMs,
  RETRY_FIRST_MS,
  RETRY_MAX_MS,
  type SnapshotWorld,
} from "../../volume-target/snapshots.js";
import { expectGolden, goldenCases, type GoldenCase } from "../support/golden.js";

/** input.yaml as written: times as text, the bound in seconds. */
interface SnapshotInput extends Omit<SnapshotWorld, "held" | "now" | "holdBoundMs"> {
  held?: { snapshot?: string; since?: string };
  holdSeconds: number;
}

function worldOf(input: SnapshotInput, now: Date): SnapshotWorld {
  const { held, holdSeconds, ...rest } = input;
  return {
    ...rest,
    now,
    holdBoundMs: holdSeconds * 1000,
    ...(held
      ? { held: { ...held, ...(held.since ? { since: new Date(held.since) } : {}) } as SnapshotWorld["held"] }
      : {}),
  };
}

const inputOf = (goldenCase: GoldenCase) =>
  worldOf(goldenCase.read("input.yaml") as SnapshotInput, goldenCase.now);

describe("volume target: the snapshot plan (golden)", () => {
  for (const goldenCase of goldenCases("volume-target/snapshots")) {
    it(`${goldenCase.name}: ${goldenCase.description}`, () => {
      const steps = planSnapshots(inputOf(goldenCase));
      expectGolden(goldenCase, "plan.yaml", steps);
      expect(planSnapshots(inputOf(goldenCase)), "pure: the same input gives the same plan").to.deep.equal(
        steps,
      );
    });
  }
});

describe("volume target: the snapshot plan's rules", () => {
  const base = worldOf(
    readWorld("target-snapshots-pvc-1") as SnapshotInput,
    new Date("2026-11-29T10:00:10Z"),
  );
  const since = new Date("2026-11-29T10:00:10Z");
  const annotated = (replica: CVR, now: string | undefined, listed: string, reported: string[]): CVR => ({
    ...replica,
    metadata: {
      ...replica.metadata,
      annotations: {
        ...replica.metadata.annotations,
        ...(now ? { [ANNOTATION.snapshotNow]: now } : {}),
        [ANNOTATION.replicaSnapshots]: listed,
      },
    },
    status: {
      ...replica.status,
      snapshots: reported.map((name) => ({ name, creationTime: "2026-11-29T10:00:10Z" })),
    },
  });
  const phased = (snapshot: CVSnap, phase: NonNullable<CVSnap["status"]>["phase"]): CVSnap => ({
    ...snapshot,
    status: { phase, creationTime: since.toISOString(), attempts: 1 },
  });
  const deleted = (snapshot: CVSnap): CVSnap => ({
    ...snapshot,
    metadata: { ...snapshot.metadata, deletionTimestamp: "2026-11-29T10:00:11Z" },
  });

  /** Worlds that differ in everything the plan reads, each with writes held since `since`. */
  function heldWorlds(): SnapshotWorld[] {
    const [snapshot] = base.snapshots;
    const replicas = base.replicas;
    const worlds: SnapshotWorld[] = [];
    // None asked; all asked, none answered; two answered; all answered; the remains of another attempt.
    const replicaSets: (readonly CVR[])[] = [
      replicas,
      replicas.map((r) => annotated(r, "snap-a", "snap-a", [])),
      replicas.map((r, i) => annotated(r, "snap-a", "snap-a", i < 2 ? ["snap-a"] : [])),
      replicas.map((r) => annotated(r, "snap-a", "snap-a", ["snap-a"])),
      replicas.map((r) => annotated(r, undefined, "", ["snap-a"])),
    ];
    // Holding, Pending, being deleted, gone.
    const snapshotSets: CVSnap[][] = [
      [phased(snapshot, "Holding")],
      [snapshot],
      [deleted(phased(snapshot, "Holding"))],
      [],
    ];
    // Held for snap-a since `since`; for snap-a, since an unknown time; for nothing the agent knows.
    const helds: SnapshotWorld["held"][] = [{ snapshot: "snap-a", since }, { snapshot: "snap-a" }, {}];
    for (const replicaSet of replicaSets)
      for (const snapshots of snapshotSets)
        for (const held of helds)
          for (const inSync of [base.inSync, base.inSync.slice(0, 1), []])
            for (const assembled of [true, false])
              worlds.push({ ...base, replicas: replicaSet, snapshots, held, inSync, assembled });
    return worlds;
  }

  it("releases first once the bound has passed, on every world with writes held", () => {
    for (const world of heldWorlds())
      for (const after of [0, 1, 60_000]) {
        const now = new Date(since.getTime() + world.holdBoundMs + after);
        const steps = planSnapshots({ ...world, now });
        expect(steps[0]?.kind, JSON.stringify({ ...world, now })).to.equal("release");
        expect(steps.filter((s) => s.kind === "hold" || s.kind === "release")).to.have.length(1);
      }
  });

  it("never holds while writes are held: after releasing a hold it knows nothing of, the next pass holds", () => {
    for (const world of heldWorlds())
      for (const after of [0, 2_000, 10_000]) {
        const steps = planSnapshots({ ...world, now: new Date(since.getTime() + after) });
        expect(steps.filter((s) => s.kind === "hold")).to.deep.equal([]);
      }
  });

  it("doubles the back-off per failed attempt, from 10 s to at most 5 minutes", () => {
    expect([1, 2, 3, 4, 5, 6, 7, 20].map(retryDelayMs)).to.deep.equal([
      RETRY_FIRST_MS,
      20_000,
      40_000,
      80_000,
      160_000,
      RETRY_MAX_MS,
      RETRY_MAX_MS,
      RETRY_MAX_MS,
    ]);
  });

  it("reads a replica's snapshot list tolerantly: spaces and empty entries are no names", () => {
    const [replica] = base.replicas;
    expect(listedSnapshots(annotated(replica, undefined, " snap-a,,snap-b ,", []))).to.deep.equal([
      "snap-a",
      "snap-b",
    ]);
    expect(listedSnapshots(replica)).to.deep.equal([]);
  });
});
