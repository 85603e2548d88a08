// The target agent's decisions from what the API and the kernel say (volume-target/plan.ts): when an array is
// created, assembled (a restore's from its clones) or refused, which legs rejoin how, and when a replica counts
// as caught up. The kernel side of each case is the shape the shared rooms read from sysfs and mdadm
// (iscsi/initiator.ts, md/mdadm.ts).
import { expect } from "chai";
import type { ArrayState, SessionView, Superblock } from "../../volume-target/kernel.js";
import {
  caughtUpReplicas,
  planTarget,
  sameUuid,
  type DesiredVolume,
  type Examined,
  type KernelView,
} from "../../volume-target/plan.js";
import { statusPatch, targetState, targetStatus } from "../../volume-target/status.js";
import { admittedInitiators, desiredVolume, replicasToConfirm } from "../../volume-target/desired.js";
import type { CV, CVR } from "../../api/types.js";

const IQN = "iqn.2016-09.com.openebs.cstor:replica:pvc-1";
const UUID = "0b5a2c61-2f0e-4d39-9a51-6a3d1c3e9f10";
const MD_UUID = "0b5a2c61:2f0e4d39:9a516a3d:1c3e9f10";
const PORTALS = ["10.0.0.11:3260", "10.0.0.12:3260", "10.0.0.13:3260"];
const DISKS = ["sdb", "sdc", "sdd"];
const MiB = 1024 * 1024;
/** The volume's capacity; each replica's disk shows it, and the array (64 MiB) is that less md's 1 MiB. */
const CAPACITY = 65 * MiB;

const volume = (over: Partial<DesiredVolume> = {}): DesiredVolume => ({
  replicaIqn: IQN,
  arrayUuid: UUID,
  consistencyFactor: 2,
  legs: PORTALS.map((portal, i) => ({ replicaId: `r${i}`, pool: `pool-${i}`, portal })),
  created: true,
  capacityBytes: CAPACITY,
  ...over,
});

const session = (i: number, over: Partial<SessionView> = {}): SessionView => ({
  sid: i + 1,
  targetIqn: IQN,
  portal: PORTALS[i],
  iface: "cstor-x",
  state: "LOGGED_IN",
  luns: { 1: { disk: DISKS[i], state: "running", sizeBytes: CAPACITY } },
  ...over,
});

const sb = (i: number, events: number, uuid = MD_UUID): Superblock => ({
  disk: DISKS[i],
  arrayUuid: uuid,
  events,
});

const stat = { reads: 0, readSectors: 0, readMs: 0, writes: 0, writeSectors: 0, writeMs: 0, inFlight: 0 };
const array = (legs: [string, string[]][], over: Partial<ArrayState> = {}): ArrayState => ({
  kernelName: "md127",
  uuid: UUID,
  arrayState: "clean",
  raidDisks: 3,
  degraded: 3 - legs.filter(([, s]) => s.includes("in_sync")).length,
  syncAction: "idle",
  sizeBytes: 64 << 20,
  legs: legs.map(([disk, states], slot) => ({ disk, slot, states, dataOffsetBytes: MiB })),
  stat,
  ...over,
});

const view = (
  sessions: SessionView[],
  examined: Record<string, Examined> = {},
  md?: ArrayState,
): KernelView => ({
  sessions,
  examined,
  ...(md ? { array: md } : {}),
});

describe("volume target: the plan of a pass", () => {
  describe("before the array is assembled", () => {
    it("logs in to every replica whose pool pod has an address, and waits for the others", () => {
      const desired = volume({ legs: [...volume().legs.slice(0, 2), { replicaId: "r2", pool: "pool-2" }] });
      const plan = planTarget(desired, view([]));
      expect(plan.steps).to.deep.equal([
        { kind: "login", portal: PORTALS[0], replicaId: "r0" },
        { kind: "login", portal: PORTALS[1], replicaId: "r1" },
      ]);
      expect(plan.replicas.map((r) => r.message)).to.deep.equal([
        `not logged in to ${PORTALS[0]}`,
        `not logged in to ${PORTALS[1]}`,
        "its pool pod has no address yet",
      ]);
      expect(targetState(plan, 2)).to.equal("Starting");
    });

    it("examines every leg's disk before deciding anything", () => {
      const plan = planTarget(volume(), view([0, 1, 2].map((i) => session(i))));
      expect(plan.examine).to.deep.equal(DISKS);
      expect(plan.steps).to.deep.equal([]);
    });

    it("creates a new volume's array from every replica, all blank, and only then", () => {
      const sessions = [0, 1, 2].map((i) => session(i));
      const blank = { sdb: "none", sdc: "none", sdd: "none" } as const;
      const plan = planTarget(volume({ created: false }), view(sessions, blank));
      expect(plan.steps).to.deep.equal([{ kind: "create", disks: DISKS }]);

      const twoOfThree = planTarget(volume({ created: false }), view(sessions.slice(0, 2), blank));
      expect(twoOfThree.steps).to.deep.equal([{ kind: "login", portal: PORTALS[2], replicaId: "r2" }]);
      expect(twoOfThree.waiting).to.equal(
        "a new volume's array is created from every replica at once: 2 of 3 logged in",
      );
    });

    it("never creates over a leg it could not read, nor for a volume that had an array", () => {
      const sessions = [0, 1, 2].map((i) => session(i));
      const unreadable = planTarget(
        volume({ created: false }),
        view(sessions, { sdb: "none", sdc: "none", sdd: "unreadable" }),
      );
      expect(unreadable.steps).to.deep.equal([]);
      expect(targetState(unreadable, 2)).to.equal("Refused");

      const hadOne = planTarget(
        volume({ created: true }),
        view(sessions, { sdb: "none", sdc: "none", sdd: "none" }),
      );
      expect(hadOne.steps).to.deep.equal([]);
      expect(hadOne.refusal).to.match(/^0 replica\(s\) hold the newest data .* 2 are needed/);
    });

    it("assembles from the legs with the newest event count when at least the consistency factor agree", () => {
      const sessions = [0, 1, 2].map((i) => session(i));
      const plan = planTarget(volume(), view(sessions, { sdb: sb(0, 40), sdc: sb(1, 38), sdd: sb(2, 40) }));
      expect(plan.steps).to.deep.equal([{ kind: "assemble", disks: ["sdb", "sdd"] }]);
    });

    it("assembles after a crash between create and the status write (superblocks, no record)", () => {
      const sessions = [0, 1, 2].map((i) => session(i));
      const plan = planTarget(
        volume({ created: false }),
        view(sessions, { sdb: sb(0, 2), sdc: sb(1, 2), sdd: sb(2, 2) }),
      );
      expect(plan.steps).to.deep.equal([{ kind: "assemble", disks: DISKS }]);
    });

    it("waits for legs still logging in, then refuses to serve a stale leg alone, saying which legs and why", () => {
      const sessions = [session(0), session(1, { state: "FAILED" })];
      const other = "11111111:22222222:33333333:44444444";
      const waiting = planTarget(volume(), view(sessions, { sdb: sb(0, 40) }));
      expect(waiting.steps).to.deep.equal([{ kind: "login", portal: PORTALS[2], replicaId: "r2" }]);
      expect(waiting.refusal).to.equal(undefined);
      expect(targetState(waiting, 2)).to.equal("Starting");
      const podless = volume({ legs: [...volume().legs.slice(0, 2), { replicaId: "r2", pool: "pool-2" }] });
      const plan = planTarget(podless, view(sessions, { sdb: sb(0, 40) }));
      expect(plan.steps).to.deep.equal([]);
      expect(plan.refusal).to.equal(
        "1 replica(s) hold the newest data of the volume's array and 2 are needed to serve it (never a stale " +
          `replica alone): r0 on pool-0: disk sdb holds the array at event 40; r1 on pool-1: its session to ${PORTALS[1]} ` +
          "is FAILED; r2 on pool-2: its pool pod has no address yet",
      );
      expect(targetState(plan, 2)).to.equal("Refused");
      const foreign = planTarget(
        volume(),
        view([session(0), session(1)], { sdb: sb(0, 40), sdc: sb(1, 90, other) }),
      );
      expect(foreign.steps.filter((s) => s.kind === "assemble")).to.deep.equal([]);
      expect(foreign.replicas[1].message).to.equal(`disk sdc holds another array (${other}); never used`);
    });
  });

  describe("with the array assembled", () => {
    const sessions = [0, 1, 2].map((i) => session(i));

    it("counts the legs in sync and serves read-write at the consistency factor, read-only below", () => {
      const healthy = planTarget(
        volume(),
        view(
          sessions,
          {},
          array([
            ["sdb", ["in_sync"]],
            ["sdc", ["in_sync"]],
            ["sdd", ["in_sync"]],
          ]),
        ),
      );
      expect(healthy.steps).to.deep.equal([]);
      expect(healthy.healthy).to.equal(3);
      expect(targetState(healthy, 2)).to.equal("Serving");
      const down = [
        session(0),
        session(1, { luns: { 1: { disk: "sdc", state: "transport-offline", sizeBytes: CAPACITY } } }),
      ];
      const one = planTarget(
        volume(),
        view(
          down,
          {},
          array([
            ["sdb", ["in_sync"]],
            ["sdc", ["in_sync"]],
            ["sdd", ["faulty"]],
          ]),
        ),
      );
      expect(one.healthy).to.equal(1);
      expect(targetState(one, 2)).to.equal("ReadOnly");
      expect(one.replicas.map((r) => r.state)).to.deep.equal(["InSync", "Offline", "Offline"]);
    });

    it("logs out of a session open-iscsi gave up on, so that the next pass logs in again", () => {
      const given = [session(0), session(1), session(2, { state: "FREE" })];
      const md = array([
        ["sdb", ["in_sync"]],
        ["sdc", ["in_sync"]],
        ["sdd", ["faulty"]],
      ]);
      const plan = planTarget(volume(), view(given, {}, md));
      expect(plan.steps).to.deep.equal([
        {
          kind: "logout",
          targetIqn: IQN,
          portal: PORTALS[2],
          why: `its session to ${PORTALS[2]} was given up (FREE); logging in again`,
        },
      ]);
      const gone = planTarget(volume(), view(given.slice(0, 2), {}, md));
      expect(gone.steps).to.deep.equal([
        { kind: "login", portal: PORTALS[2], replicaId: "r2" },
        { kind: "remove", disk: "sdd", why: "its replica's session is gone" },
      ]);
      // Logged in again under a new disk name: the dead member goes first, then the leg returns from the bitmap.
      const again = [
        ...given.slice(0, 2),
        session(2, { sid: 7, luns: { 1: { disk: "sde", state: "running", sizeBytes: CAPACITY } } }),
      ];
      expect(planTarget(volume(), view(again, { sde: sb(2, 30) }, md)).steps).to.deep.equal([
        { kind: "remove", disk: "sdd", why: "its replica's session is gone" },
        { kind: "reAdd", disk: "sde", replicaId: "r2" },
      ]);
    });

    it("re-adds a failed leg once its session is back, from the bitmap", () => {
      const plan = planTarget(
        volume(),
        view(
          sessions,
          {},
          array([
            ["sdb", ["in_sync"]],
            ["sdc", ["in_sync"]],
            ["sdd", ["faulty"]],
          ]),
        ),
      );
      expect(plan.steps).to.deep.equal([{ kind: "reAdd", disk: "sdd", replicaId: "r2" }]);
      expect(plan.replicas[2]).to.deep.include({ state: "Degraded" });
    });

    it("reports a leg being recovered with md's progress, and confirms nothing while md resyncs", () => {
      const md = array(
        [
          ["sdb", ["in_sync"]],
          ["sdc", ["in_sync"]],
          ["sdd", ["spare"]],
        ],
        {
          syncAction: "recover",
          syncCompleted: { done: 300, total: 1000 },
        },
      );
      const plan = planTarget(volume(), view(sessions, {}, md));
      expect(plan.replicas[2]).to.deep.equal({
        replicaId: "r2",
        pool: "pool-2",
        state: "Rebuilding",
        rebuildPercent: 30,
      });
      expect(caughtUpReplicas(plan, md)).to.deep.equal([]);
      const done = array([
        ["sdb", ["in_sync"]],
        ["sdc", ["in_sync"]],
        ["sdd", ["in_sync"]],
      ]);
      expect(caughtUpReplicas(planTarget(volume(), view(sessions, {}, done)), done)).to.deep.equal([
        "r0",
        "r1",
        "r2",
      ]);
    });

    it("adds a new replica's blank disk with a full sync, then grows the array to take it", () => {
      const four = volume({
        legs: [...volume().legs, { replicaId: "r3", pool: "pool-3", portal: "10.0.0.14:3260" }],
      });
      const withNew = [
        ...sessions,
        {
          ...session(0),
          sid: 9,
          portal: "10.0.0.14:3260",
          luns: { 1: { disk: "sde", state: "running", sizeBytes: CAPACITY } },
        },
      ];
      const md = array([
        ["sdb", ["in_sync"]],
        ["sdc", ["in_sync"]],
        ["sdd", ["in_sync"]],
      ]);
      const first = planTarget(four, view(withNew, {}, md));
      expect(first.examine).to.deep.equal(["sde"]);
      const plan = planTarget(four, view(withNew, { sde: "none" }, md));
      // mdadm refuses to grow a RAID1 without a spare for the new slot: the disk goes in first.
      expect(plan.steps).to.deep.equal([
        { kind: "add", disk: "sde", replicaId: "r3" },
        { kind: "grow", raidDevices: 4 },
      ]);
      const returning = planTarget(four, view(withNew, { sde: sb(3, 12) }, md));
      expect(returning.steps.map((s) => s.kind)).to.deep.equal(["reAdd", "grow"]);
      // A pass whose grow failed left the disk a spare: the next one grows the array.
      const spare = array([
        ["sdb", ["in_sync"]],
        ["sdc", ["in_sync"]],
        ["sdd", ["in_sync"]],
        ["sde", ["spare"]],
      ]);
      expect(planTarget(four, view(withNew, {}, spare)).steps).to.deep.equal([
        { kind: "grow", raidDevices: 4 },
      ]);
    });

    it("never adds a disk that holds another array or could not be read", () => {
      const md = array(
        [
          ["sdb", ["in_sync"]],
          ["sdc", ["in_sync"]],
        ],
        { raidDisks: 3 },
      );
      for (const found of [sb(2, 5, "11111111:22222222:33333333:44444444"), "unreadable" as const]) {
        const plan = planTarget(volume(), view(sessions, { sdd: found }, md));
        expect(plan.steps).to.deep.equal([]);
        expect(plan.replicas[2].state).to.equal("Degraded");
      }
    });

    it("takes a removed replica's leg out of the array, logs out, then shrinks the array", () => {
      const two = volume({ legs: volume().legs.slice(0, 2) });
      const md = array([
        ["sdb", ["in_sync"]],
        ["sdc", ["in_sync"]],
        ["sdd", ["in_sync"]],
      ]);
      const plan = planTarget(two, view(sessions, {}, md));
      const why = `no replica of the volume is served at ${PORTALS[2]} any more`;
      expect(plan.steps).to.deep.equal([
        { kind: "remove", disk: "sdd", why },
        { kind: "logout", targetIqn: IQN, portal: PORTALS[2], why },
      ]);
      const after = array([
        ["sdb", ["in_sync"]],
        ["sdc", ["in_sync"]],
      ]);
      expect(planTarget(two, view(sessions.slice(0, 2), {}, after)).steps).to.deep.equal([
        { kind: "grow", raidDevices: 2 },
      ]);
    });
  });
});

describe("volume target: a restored volume's first array, from the snapshot's clones", () => {
  /** The source volume's array, which every clone of its legs carries (md's form). */
  const SOURCE = "5d41402a:bc4b2a76:b9719d91:1017c592";
  const restore = (clonedReplicas = ["r0", "r1"], over: Partial<DesiredVolume> = {}) =>
    volume({ created: false, source: { snapshot: "snap-1", clonedReplicas }, ...over });
  const sessions = [0, 1, 2].map((i) => session(i));
  /** r0 and r1 clones of the source's legs (one snapshot taken while md had the array active: one event on), r2 blank. */
  const cloned: Record<string, Examined> = { sdb: sb(0, 19, SOURCE), sdc: sb(1, 18, SOURCE), sdd: "none" };

  it("waits until every clone is logged in and examined, naming the clones it waits for", () => {
    const late = planTarget(restore(), view([session(0), session(2)], { sdb: cloned.sdb, sdd: "none" }));
    expect(late.steps).to.deep.equal([{ kind: "login", portal: PORTALS[1], replicaId: "r1" }]);
    expect(late.waiting).to.equal(
      "a restored volume's first array is assembled from every clone of snapshot snap-1 at once; waiting for " +
        `r1 on pool-1: not logged in to ${PORTALS[1]}`,
    );
    expect(targetState(late, 2)).to.equal("Starting");
    const unexamined = planTarget(restore(), view(sessions, { sdb: cloned.sdb }));
    expect([unexamined.examine, unexamined.steps]).to.deep.equal([["sdc", "sdd"], []]);
  });

  it("assembles every clone in one step under the volume's UUID, and never creates over them", () => {
    const plan = planTarget(restore(), view(sessions, cloned));
    expect(plan.steps).to.deep.equal([{ kind: "assembleClones", disks: ["sdb", "sdc"] }]);
    expect(plan.replicas.map((r) => r.message)).to.deep.equal([
      `disk sdb is a clone of snapshot snap-1: the source's array (${SOURCE}) at event 19`,
      `disk sdc is a clone of snapshot snap-1: the source's array (${SOURCE}) at event 18`,
      "disk sdd holds no md superblock",
    ]);
    // One clone and a consistency factor of 3: the snapshot is on every clone and newer data on no leg, so
    // the first array is assembled; the LUN is read-only until the copies are in sync.
    const one = planTarget(restore(["r0"], { consistencyFactor: 3 }), view(sessions, cloned));
    expect(one.steps).to.deep.equal([{ kind: "assembleClones", disks: ["sdb"] }]);
    // A clone whose replica left the volume is no leg: the restore goes on from those that are.
    expect(planTarget(restore(["r0", "r9"]), view(sessions, cloned)).steps).to.deep.equal([
      { kind: "assembleClones", disks: ["sdb"] },
    ]);
  });

  it("refuses clones of different arrays, a clone without a superblock or unreadable, naming each replica", () => {
    const mixed = planTarget(restore(), view(sessions, { ...cloned, sdc: sb(1, 18, MD_UUID) }));
    expect(mixed.steps).to.deep.equal([]);
    expect(mixed.refusal).to.equal(
      `the clones of snapshot snap-1 carry different md arrays (r0 on pool-0: ${SOURCE}; r1 on pool-1: ` +
        `${MD_UUID}); never assembled together: delete the volume and restore the snapshot again`,
    );
    expect(targetState(mixed, 2)).to.equal("Refused");
    const unusable = planTarget(restore(), view(sessions, { ...cloned, sdb: "none", sdc: "unreadable" }));
    expect(unusable.steps).to.deep.equal([]);
    expect(unusable.refusal).to.equal(
      "clone(s) of snapshot snap-1 carry no md array to assemble (r0 on pool-0: disk sdb holds no md " +
        "superblock; r1 on pool-1: disk sdc: its md superblock could not be read); nothing is created over " +
        "them: delete the volume and restore the snapshot again",
    );
    const none = planTarget(restore(["r7"]), view(sessions, cloned));
    expect(none.refusal).to.equal(
      "the CStorVolume's spec.source.clonedReplicas (r7) names none of its replicas (r0 on pool-0, r1 on " +
        "pool-1, r2 on pool-2): no leg holds snapshot snap-1, and a restore is never made blank; delete the " +
        "volume and restore the snapshot again",
    );
  });

  it("adds the blank leg once the array runs, as a new replica (full sync), and grows it to the volume", () => {
    // The clones' superblocks kept the source's three slots: the blank disk takes the empty one.
    const md = array([
      ["sdb", ["in_sync"]],
      ["sdc", ["in_sync"]],
    ]);
    const plan = planTarget(restore(), view(sessions, { sdd: "none" }, md));
    expect(plan.steps).to.deep.equal([{ kind: "add", disk: "sdd", replicaId: "r2" }]);
    expect(plan.replicas[2]).to.deep.include({
      state: "Degraded",
      message: "disk sdd is blank; adding it (full sync)",
    });
    const grown = volume({ created: true, capacityBytes: 129 * MiB, source: restore().source });
    const big = [0, 1, 2].map((i) =>
      session(i, { luns: { 1: { disk: DISKS[i], state: "running", sizeBytes: 129 * MiB } } }),
    );
    const inSync = array([
      ["sdb", ["in_sync"]],
      ["sdc", ["in_sync"]],
      ["sdd", ["in_sync"]],
    ]);
    expect(planTarget(grown, { ...view(big, {}, inSync), rescanned: [1, 2, 3] }).steps).to.deep.equal([
      { kind: "growSize" },
    ]);
  });

  it("ignores spec.source once the volume had an array, and assembles clones already renamed by a target that stopped first", () => {
    const had = planTarget(
      volume({ source: restore().source }),
      view(sessions, { sdb: sb(0, 40), sdc: sb(1, 40), sdd: sb(2, 38) }),
    );
    expect(had.steps).to.deep.equal([{ kind: "assemble", disks: ["sdb", "sdc"] }]);
    const stale = planTarget(volume({ source: restore().source }), view(sessions, cloned));
    expect(stale.steps).to.deep.equal([]);
    expect(stale.replicas[0].message).to.equal(`disk sdb holds another array (${SOURCE}); never used`);
    // Renamed, then the target stopped before status.target.arrayUUID: the newest legs of the volume's array
    // are assembled by its UUID (one clone, below the consistency factor, is that whole array).
    const renamed = planTarget(restore(["r0"]), view(sessions, { sdb: sb(0, 20), sdc: "none", sdd: "none" }));
    expect(renamed.steps).to.deep.equal([{ kind: "assemble", disks: ["sdb"] }]);
  });
});

describe("volume target: the array follows a volume that grew", () => {
  const GROWN = 129 * MiB;
  const grown = volume({ capacityBytes: GROWN });
  const inSync = (over: Partial<ArrayState> = {}) =>
    array(
      [
        ["sdb", ["in_sync"]],
        ["sdc", ["in_sync"]],
        ["sdd", ["in_sync"]],
      ],
      over,
    );
  /** Sessions whose disks show these sizes (undefined: not logged in). */
  const sized = (...sizes: (number | undefined)[]) =>
    sizes.flatMap((size, i) =>
      size === undefined
        ? []
        : [session(i, { luns: { 1: { disk: DISKS[i], state: "running", sizeBytes: size } } })],
    );
  const withMemory = (kernel: KernelView, rescanned: number[], heldOut: string[] = []): KernelView => ({
    ...kernel,
    rescanned,
    heldOut,
  });

  it("rescans the legs whose disks are smaller than the volume first, and grows md once every leg shows the new size", () => {
    const before = planTarget(grown, view(sized(CAPACITY, CAPACITY, CAPACITY), {}, inSync()));
    expect(before.rescan).to.deep.equal([1, 2, 3]);
    expect(before.steps).to.deep.equal([]);
    expect(before.growth).to.match(
      /once every replica's export serves that size; still smaller: r0 .*asking them again/,
    );

    const after = planTarget(grown, withMemory(view(sized(GROWN, GROWN, GROWN), {}, inSync()), [1, 2, 3]));
    expect(after.rescan).to.deep.equal([]);
    expect(after.steps).to.deep.equal([{ kind: "growSize" }]);
    expect(targetState(after, 2)).to.equal("Serving");

    // Grown (md keeps its data offset and rounds down): nothing more, and never a shrink.
    const done = inSync({ sizeBytes: 128 * MiB - 64 * 1024 });
    expect(planTarget(grown, view(sized(GROWN, GROWN, GROWN), {}, done)).steps).to.deep.equal([]);
    const smaller = volume({ capacityBytes: 32 * MiB });
    const untouched = planTarget(smaller, view(sized(GROWN, GROWN, GROWN), {}, done));
    expect([untouched.steps, untouched.rescan, untouched.growth]).to.deep.equal([[], [], undefined]);
  });

  it("waits while md resyncs or a leg is out, before growing", () => {
    const resyncing = inSync({ syncAction: "recover" });
    const plan = planTarget(grown, withMemory(view(sized(GROWN, GROWN, GROWN), {}, resyncing), [1, 2, 3]));
    expect(plan.steps).to.deep.equal([]);
    expect(plan.growth).to.equal(
      `the array grows to ${GROWN} bytes once every replica is back in sync at that size`,
    );
  });

  it("takes one leg still small after its rescan out and logs it out, so that its pool reopens the replica; then holds it out", () => {
    const kernel = withMemory(view(sized(CAPACITY, CAPACITY, CAPACITY), {}, inSync()), [1, 2, 3]);
    const plan = planTarget(grown, kernel);
    const why = `its export still serves ${CAPACITY} bytes of the volume's ${GROWN}: taken out and logged out so that its pool re-reads the grown replica`;
    expect(plan.steps).to.deep.equal([
      { kind: "remove", disk: "sdb", why },
      { kind: "logout", targetIqn: IQN, portal: PORTALS[0], why, holdOut: true },
    ]);

    // Out and held: no login for it, nobody else leaves, writes still reach the consistency factor.
    const out = array([
      ["sdc", ["in_sync"]],
      ["sdd", ["in_sync"]],
    ]);
    const held = planTarget(
      grown,
      withMemory(view(sized(undefined, CAPACITY, CAPACITY), {}, out), [2, 3], [PORTALS[0]]),
    );
    expect(held.steps).to.deep.equal([]);
    expect(held.replicas[0].message).to.equal(
      `logged out of ${PORTALS[0]} for a while, so that its pool re-reads the grown replica`,
    );
    expect(held.growth).to.match(/one replica is re-read at a time/);
    expect(targetState(held, 2)).to.equal("Serving");

    // Back at the new size: re-added from the bitmap; the next small leg waits until it is in sync.
    const back = planTarget(
      grown,
      withMemory(view(sized(GROWN, CAPACITY, CAPACITY), { sdb: sb(0, 50) }, out), [2, 3]),
    );
    expect(back.steps).to.deep.equal([{ kind: "reAdd", disk: "sdb", replicaId: "r0" }]);
  });

  it("adds a leg that left before the array grew anew, with a full sync: md re-adds no leg smaller than the array", () => {
    const grownOut = array(
      [
        ["sdc", ["in_sync"]],
        ["sdd", ["in_sync"]],
      ],
      { sizeBytes: 128 * MiB },
    );
    const left = { ...sb(0, 50), dataSizeSectors: (64 * MiB) / 512 };
    const plan = planTarget(grown, view(sized(GROWN, GROWN, GROWN), { sdb: left }, grownOut));
    expect(plan.steps).to.deep.equal([{ kind: "add", disk: "sdb", replicaId: "r0" }]);
    expect(plan.replicas[0].message).to.equal(
      `disk sdb left the array before it grew (its superblock holds ${64 * MiB} bytes, the array ${128 * MiB}); adding it anew (full sync)`,
    );
    // One that holds the array's size still comes back from the bitmap.
    const kept = { ...sb(0, 50), dataSizeSectors: (128 * MiB) / 512 };
    expect(planTarget(grown, view(sized(GROWN, GROWN, GROWN), { sdb: kept }, grownOut)).steps).to.deep.equal([
      { kind: "reAdd", disk: "sdb", replicaId: "r0" },
    ]);
  });

  it("never adds a leg smaller than the volume: logs it out so that its pool grows it, and says why", () => {
    const out = array(
      [
        ["sdc", ["in_sync"]],
        ["sdd", ["in_sync"]],
      ],
      { sizeBytes: 128 * MiB - 64 * 1024 },
    );
    const plan = planTarget(
      grown,
      withMemory(view(sized(CAPACITY, GROWN, GROWN), { sdb: sb(0, 50) }, out), [1]),
    );
    const why = `its disk sdb is ${CAPACITY} bytes, too small for the array's ${128 * MiB - 64 * 1024} (md refuses it): not added; logged out so that its pool re-reads the grown replica`;
    expect(plan.steps).to.deep.equal([
      { kind: "logout", targetIqn: IQN, portal: PORTALS[0], why, holdOut: true },
    ]);
    expect(plan.replicas[0]).to.deep.equal({
      replicaId: "r0",
      pool: "pool-0",
      state: "Degraded",
      message: why,
    });
  });

  it("takes no leg out when the others in sync would fall below the consistency factor, and says what to do", () => {
    const two = volume({ capacityBytes: GROWN, legs: volume().legs.slice(0, 2) });
    const md = array(
      [
        ["sdb", ["in_sync"]],
        ["sdc", ["in_sync"]],
      ],
      { raidDisks: 2 },
    );
    const plan = planTarget(two, withMemory(view(sized(CAPACITY, CAPACITY), {}, md), [1, 2]));
    expect(plan.steps).to.deep.equal([]);
    expect(plan.growth).to.match(
      /taking one out would leave 1 in sync, below the consistency factor 2: add a replica \(spec.replicaCount\)/,
    );
  });
});

describe("volume target: what the API says and what it is told", () => {
  it("reads the replicas' portals from their pool pods and the array's UUID from the volume's owner", () => {
    const cv = {
      metadata: {
        name: "pvc-1",
        uid: "cv-uid",
        ownerReferences: [
          {
            apiVersion: "cstor.openebs.io/v1",
            kind: "CStorVolumeConfig",
            name: "pvc-1",
            uid: UUID,
            controller: true,
          },
        ],
      },
      spec: {
        capacity: "65Mi",
        consistencyFactor: 2,
        replicaDetails: { knownReplicas: { r1: "pool-b", r0: "pool-a" } },
      },
      status: { target: { state: "Serving", arrayUUID: UUID } },
    } as unknown as CV;
    expect(
      desiredVolume(
        cv,
        new Map([
          ["pool-a", "10.0.0.11"],
          ["pool-b", "fd00::2"],
        ]),
      ),
    ).to.deep.equal({
      replicaIqn: IQN,
      arrayUuid: UUID,
      consistencyFactor: 2,
      legs: [
        { replicaId: "r0", pool: "pool-a", portal: "10.0.0.11:3260" },
        { replicaId: "r1", pool: "pool-b", portal: "[fd00::2]:3260" },
      ],
      created: true,
      capacityBytes: CAPACITY,
    });
    expect(sameUuid(MD_UUID, UUID)).to.equal(true);
  });

  it("reads spec.source's clones, and a malformed list as no clone (the restore is then refused, never made blank)", () => {
    const cv = (source: unknown) =>
      ({
        metadata: { name: "pvc-1", uid: UUID },
        spec: { capacity: "65Mi", replicaDetails: { knownReplicas: { r0: "pool-a" } }, source },
      }) as unknown as CV;
    expect(desiredVolume(cv({ snapshot: "snap-1", clonedReplicas: ["r0"] }), new Map()).source).to.deep.equal(
      {
        snapshot: "snap-1",
        clonedReplicas: ["r0"],
      },
    );
    const malformed = desiredVolume(cv({ snapshot: "snap-1", clonedReplicas: "r0" }), new Map());
    expect(malformed.source).to.deep.equal({ snapshot: "snap-1", clonedReplicas: [] });
    expect(planTarget(malformed, view([])).refusal).to.match(
      /spec.source.clonedReplicas \(none\) names none/,
    );
    expect(desiredVolume(cv(undefined), new Map())).to.not.have.property("source");
  });

  it("confirms only replicas cvc-sync counts as rebuilding, once md has them in sync", () => {
    const cvr = (name: string, replicaId: string, annotations: Record<string, string>) =>
      ({ metadata: { name, annotations }, spec: { replicaId, capacity: "1Gi" } }) as unknown as CVR;
    const replicas = [
      cvr("a", "r0", {}),
      cvr("b", "r1", { "openebs.io/rebuilding-since": "2026-11-28T00:00:00Z" }),
      cvr("c", "r2", {
        "openebs.io/rebuilding-since": "2026-11-28T00:00:00Z",
        "openebs.io/replica-caught-up": "true",
      }),
      cvr("d", "r3", { "openebs.io/rebuilding-since": "2026-11-28T00:00:00Z" }),
    ];
    expect(replicasToConfirm(replicas, ["r0", "r1", "r2"])).to.deep.equal(["b"]);
  });

  it("writes status.target only when it changed, and removes what disappeared with null", () => {
    const plan = planTarget(volume(), view([]));
    const input = {
      plan,
      state: "Starting" as const,
      node: "node-a",
      consistencyFactor: 2,
      failures: [],
      now: "2026-11-28T01:00:00Z",
    };
    const first = targetStatus(input, undefined);
    expect(first.lastTransitionTime).to.equal("2026-11-28T01:00:00Z");
    const growing = targetStatus(
      { ...input, arraySizeBytes: 64 * MiB, plan: { ...plan, waiting: undefined, growth: "growing" } },
      first,
    );
    expect([growing.arraySizeBytes, growing.message]).to.deep.equal([64 * MiB, "growing"]);
    expect(statusPatch(first, first)).to.equal(undefined);
    const later = targetStatus({ ...input, now: "2026-11-28T01:05:00Z" }, first);
    expect(later.lastTransitionTime, "unchanged state keeps its time").to.equal("2026-11-28T01:00:00Z");
    const refused = targetStatus(
      { ...input, state: "Refused", plan: { ...plan, refusal: "too few" } },
      first,
    );
    expect(refused.message).to.equal("too few");
    const starting = targetStatus({ ...input, plan: { ...plan, waiting: undefined } }, refused);
    expect(starting).to.not.have.property("message");
    expect(statusPatch(starting, refused)).to.deep.equal({
      status: { target: { ...starting, message: null } },
    });
  });

  it("admits the node the volume is published to, nobody while it is published nowhere, the client before CSI", () => {
    const cv = (annotations?: Record<string, string>) =>
      ({ metadata: { name: "pvc-1", ...(annotations ? { annotations } : {}) } }) as unknown as CV;
    expect(admittedInitiators(cv({ "cstor.openebs.io/published-node": "node-b" }))).to.deep.equal([
      "iqn.2016-09.com.openebs.cstor:node:node-b",
    ]);
    expect(admittedInitiators(cv({ "cstor.openebs.io/published-node": "" }))).to.deep.equal([]);
    expect(admittedInitiators(cv())).to.deep.equal(["iqn.2016-09.com.openebs.cstor:client:pvc-1"]);
    const plan = planTarget(volume(), view([]));
    const input = {
      plan,
      state: "Serving" as const,
      node: "n",
      consistencyFactor: 2,
      failures: [],
      now: "t",
    };
    const served = targetStatus(
      { ...input, initiators: ["iqn.2016-09.com.openebs.cstor:node:node-b"] },
      undefined,
    );
    expect(served.initiators, "status.target says whom the LUN admits").to.deep.equal([
      "iqn.2016-09.com.openebs.cstor:node:node-b",
    ]);
  });
});
