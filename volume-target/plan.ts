// The target agent's decisions (docs/adr/0039-the-volume-target-md-raid1-served-by-lio.md,
// docs/adr/0040-the-target-agent-credentials-names-and-status.md), pure: from the volume as the API describes it
// and what the kernel holds now, the steps of one pass and each replica's state. The agent applies the steps,
// looks again and plans again; no step depends on another's result within a pass except by order.
//
// Two rules carry the data: an array is created only for a volume that never had one, from every replica, all
// blank; anything else is assembled from the legs whose md event counters are the highest, and only when at
// least the consistency factor of them agree. A leg that cannot be read is assumed to hold data.
//
// A restored volume (spec.source) that never had an array is neither created nor assembled so: its cloned
// replicas are ZFS clones of the snapshot's legs and carry the source array's superblock
// (docs/adr/0055-a-restore-clones-where-the-snapshot-is.md). Once every clone is logged in and examined and all
// carry one array, one step assembles them under the volume's UUID; the other legs then join as any new replica
// does (blank: a full sync) and the array grows to the volume's capacity. A clone that carries no superblock,
// another array's or one that cannot be read stops the restore (never created over, never a mix assembled).
// The consistency factor does not gate that first assembly: it counts the legs a write must reach, and it
// refuses a stale leg alone, but every clone holds the same snapshot and no leg of the new volume holds newer
// data. A restore with fewer clones than the factor is served read-only, by the factor's usual rule, until
// enough copies are in sync. What the restore waits for instead is every clone: one left out would keep the
// source's UUID and could never join.
import type { ArrayState, SessionView, Superblock } from "./kernel.js";
import type { CVTargetStatus } from "../api/types.js";
import { REPLICA_DATA_LUN } from "../lib/volume/iqn.js";

export interface DesiredLeg {
  replicaId: string;
  /** The CStorPoolInstance holding the replica. */
  pool: string;
  /** The replica export's portal, `ip:3260`; undefined while its pool pod has no address. */
  portal?: string;
}

export interface DesiredVolume {
  /** The replicas' export name (lib/volume/iqn.ts replicaIqn): one per volume, a portal per pool. */
  replicaIqn: string;
  /** md's UUID for the array: the CStorVolumeConfig's uid. */
  arrayUuid: string;
  consistencyFactor: number;
  legs: DesiredLeg[];
  /** status.target.arrayUUID was written: the volume had an array, which is never created again. */
  created: boolean;
  /** The CStorVolume's spec.capacity in bytes: every leg's disk reaches it before the array grows to it. */
  capacityBytes: number;
  /** The CStorVolume's spec.source: the volume starts with a snapshot's data, on the replicas named clones. */
  source?: { snapshot: string; clonedReplicas: string[] };
}

/** What `mdadm --examine` said of a leg's disk: its superblock, none at all, or no answer. */
export type Examined = Superblock | "none" | "unreadable";

export interface KernelView {
  /** Sessions of the agent's own interface record. */
  sessions: SessionView[];
  /** The volume's array, when assembled. */
  array?: ArrayState;
  /** By disk ("sdb"): only the disks the agent needed to examine. */
  examined: Record<string, Examined>;
  /** Sessions rescanned since they logged in (their disks show what the replica exports serve now). */
  rescanned?: number[];
  /** Portals the agent keeps logged out for a while, so that their pool re-reads the grown replica's size. */
  heldOut?: string[];
}

export type Step =
  | { kind: "login"; portal: string; replicaId: string }
  | { kind: "logout"; targetIqn: string; portal: string; why: string; holdOut?: true }
  | { kind: "create"; disks: string[] }
  | { kind: "assemble"; disks: string[] }
  /** A restore's first array, from the clones of the snapshot's legs, under the volume's UUID. */
  | { kind: "assembleClones"; disks: string[] }
  | { kind: "grow"; raidDevices: number }
  | { kind: "growSize" }
  | { kind: "add"; disk: string; replicaId: string }
  | { kind: "reAdd"; disk: string; replicaId: string }
  | { kind: "remove"; disk: string; why: string };

export type ReplicaState = NonNullable<CVTargetStatus["replicas"]>[number];

export interface TargetPlan {
  steps: Step[];
  replicas: ReplicaState[];
  /** The array is assembled: the LUN can be served. */
  assembled: boolean;
  /** Replicas in sync whose session and device are up: what a write reaches. */
  healthy: number;
  /** Why nothing is served yet: the plan waits for replicas before it creates the array. */
  waiting?: string;
  /** Why nothing can be served: fewer legs with the newest data than the consistency factor (fail closed). */
  refusal?: string;
  /** Disks to examine before planning again (legs whose superblock decides what to do). */
  examine: string[];
  /** Sessions to rescan before planning again: their disk is smaller than the volume. */
  rescan: number[];
  /** Why the array has not grown to the volume's capacity yet. */
  growth?: string;
}

/** A leg located in the kernel: its session and data disk, when it has them. */
interface LocatedLeg extends DesiredLeg {
  session?: SessionView;
  /** The data LUN's disk, only when its session is logged in and the device runs. */
  disk?: string;
  /** The disk's size as the kernel last read it. */
  sizeBytes?: number;
  /** Why the leg has no usable disk. */
  down?: string;
}

export function planTarget(desired: DesiredVolume, kernel: KernelView): TargetPlan {
  const heldOut = new Set(kernel.heldOut ?? []);
  const located = desired.legs.map((leg) => locate(leg, desired.replicaIqn, kernel.sessions, heldOut));
  const steps: Step[] = [
    ...loginSteps(located, desired.replicaIqn, heldOut),
    ...staleSessionSteps(desired, kernel),
  ];
  const part = kernel.array
    ? planMembers(desired, located, kernel)
    : planAssembly(desired, located, kernel.examined);
  return { ...part, steps: [...steps, ...part.steps] };
}

function locate(
  leg: DesiredLeg,
  replicaIqn: string,
  sessions: readonly SessionView[],
  heldOut: ReadonlySet<string>,
): LocatedLeg {
  if (!leg.portal) return { ...leg, down: "its pool pod has no address yet" };
  const session = sessions.find((s) => s.targetIqn === replicaIqn && s.portal === leg.portal);
  if (!session && heldOut.has(leg.portal))
    return {
      ...leg,
      down: `logged out of ${leg.portal} for a while, so that its pool re-reads the grown replica`,
    };
  if (!session) return { ...leg, down: `not logged in to ${leg.portal}` };
  const lun = session.luns[REPLICA_DATA_LUN];
  if (session.state !== "LOGGED_IN")
    return { ...leg, session, down: `its session to ${leg.portal} is ${session.state}` };
  if (!lun) return { ...leg, session, down: `${leg.portal} serves no LUN ${REPLICA_DATA_LUN}` };
  if (lun.state !== "running") return { ...leg, session, down: `its disk ${lun.disk} is ${lun.state}` };
  return { ...leg, session, disk: lun.disk, sizeBytes: lun.sizeBytes };
}

/**
 * A leg without a session logs in. A session open-iscsi gave up on (FREE: the export was gone when it
 * reconnected, as when a replica's tgtd restarts before its agent exported again) never comes back by itself:
 * it is logged out here and in again at the next pass.
 */
function loginSteps(
  located: readonly LocatedLeg[],
  replicaIqn: string,
  heldOut: ReadonlySet<string>,
): Step[] {
  return located.flatMap((leg): Step[] => {
    if (!leg.portal || (!leg.session && heldOut.has(leg.portal))) return [];
    if (!leg.session) return [{ kind: "login", portal: leg.portal, replicaId: leg.replicaId }];
    if (leg.session.state !== "FREE") return [];
    const why = `its session to ${leg.portal} was given up (FREE); logging in again`;
    return [{ kind: "logout", targetIqn: replicaIqn, portal: leg.portal, why }];
  });
}

/** Sessions to a portal no replica has any more (the replica left the volume, or its pool pod moved). */
function staleSessionSteps(desired: DesiredVolume, kernel: KernelView): Step[] {
  const portals = new Set(desired.legs.map((leg) => leg.portal).filter(Boolean));
  const members = new Set(kernel.array?.legs.map((leg) => leg.disk) ?? []);
  const steps: Step[] = [];
  for (const session of kernel.sessions) {
    if (session.targetIqn === desired.replicaIqn && session.portal && portals.has(session.portal)) continue;
    const why = `no replica of the volume is served at ${session.portal ?? "its portal"} any more`;
    for (const { disk } of Object.values(session.luns))
      if (members.has(disk)) steps.push({ kind: "remove", disk, why });
    if (session.portal)
      steps.push({ kind: "logout", targetIqn: session.targetIqn, portal: session.portal, why });
  }
  return steps;
}

const offline = (leg: LocatedLeg, message: string): ReplicaState => ({
  replicaId: leg.replicaId,
  pool: leg.pool,
  state: "Offline",
  message,
});

type Part = Omit<TargetPlan, "steps"> & { steps: Step[] };

function planAssembly(
  desired: DesiredVolume,
  legs: readonly LocatedLeg[],
  examined: Readonly<Record<string, Examined>>,
): Part {
  const up = legs.filter((leg) => leg.disk);
  const unexamined = up.map((leg) => leg.disk!).filter((disk) => !(disk in examined));
  const base = { assembled: false, healthy: 0, examine: unexamined, rescan: [] };
  if (unexamined.length > 0)
    return { ...base, steps: [], replicas: legs.map((leg) => describeUnassembled(leg, examined, desired)) };
  const replicas = legs.map((leg) => describeUnassembled(leg, examined, desired));
  if (!desired.created && desired.source)
    return planRestore(desired, legs, examined, { ...base, steps: [], replicas });
  const blank = up.every((leg) => examined[leg.disk!] === "none");
  if (!desired.created && blank) {
    if (up.length === legs.length && legs.length > 0)
      return { ...base, steps: [{ kind: "create", disks: up.map((leg) => leg.disk!) }], replicas };
    return {
      ...base,
      steps: [],
      replicas,
      waiting: `a new volume's array is created from every replica at once: ${up.length} of ${legs.length} logged in`,
    };
  }
  const fresh = freshLegs(up, examined, desired.arrayUuid);
  if (fresh.length >= desired.consistencyFactor)
    return { ...base, steps: [{ kind: "assemble", disks: fresh.map((leg) => leg.disk!) }], replicas };
  const found = replicas.map((r) => `${r.replicaId} on ${r.pool}: ${r.message}`).join("; ");
  // Legs still being logged in may hold the newest data: wait for them before refusing.
  if (legs.some((leg) => leg.portal && !leg.session))
    return {
      ...base,
      steps: [],
      replicas,
      waiting: `logging in to the replicas before assembling: ${found}`,
    };
  return {
    ...base,
    steps: [],
    replicas,
    refusal:
      `${fresh.length} replica(s) hold the newest data of the volume's array and ${desired.consistencyFactor} are needed ` +
      `to serve it (never a stale replica alone): ${found}`,
  };
}

/** The legs that carry the volume's array at its highest event count: the newest data. */
function freshLegs(
  up: readonly LocatedLeg[],
  examined: Readonly<Record<string, Examined>>,
  uuid: string,
): LocatedLeg[] {
  const ours = up.filter((leg) => isOurs(examined[leg.disk!], uuid));
  const newest = Math.max(...ours.map((leg) => (examined[leg.disk!] as Superblock).events));
  return ours.filter((leg) => (examined[leg.disk!] as Superblock).events === newest);
}

/** A restored volume's first array, from its clones (the header above says why these rules). */
function planRestore(
  desired: DesiredVolume,
  legs: readonly LocatedLeg[],
  examined: Readonly<Record<string, Examined>>,
  part: Part,
): Part {
  const { snapshot, clonedReplicas } = desired.source!;
  const clones = legs.filter((leg) => clonedReplicas.includes(leg.replicaId));
  const named = (leg: LocatedLeg) => `${leg.replicaId} on ${leg.pool}`;
  const up = legs.filter((leg) => leg.disk);
  if (clones.length === 0)
    return {
      ...part,
      refusal:
        `the CStorVolume's spec.source.clonedReplicas (${clonedReplicas.join(", ") || "none"}) names none of its ` +
        `replicas (${legs.map(named).join(", ") || "none"}): no leg holds snapshot ${snapshot}, and a restore is ` +
        "never made blank; delete the volume and restore the snapshot again",
    };
  const down = clones.filter((leg) => !leg.disk);
  if (down.length > 0)
    return {
      ...part,
      waiting:
        `a restored volume's first array is assembled from every clone of snapshot ${snapshot} at once; ` +
        `waiting for ${down.map((leg) => `${named(leg)}: ${leg.down}`).join("; ")}`,
    };
  const unusable = clones.filter((leg) => typeof examined[leg.disk!] !== "object");
  const said = (leg: LocatedLeg) => part.replicas.find((r) => r.replicaId === leg.replicaId)!.message;
  if (unusable.length > 0)
    return {
      ...part,
      refusal:
        `clone(s) of snapshot ${snapshot} carry no md array to assemble (` +
        `${unusable.map((leg) => `${named(leg)}: ${said(leg)}`).join("; ")}); nothing is created over them: ` +
        "delete the volume and restore the snapshot again",
    };
  const uuidOf = (leg: LocatedLeg) => (examined[leg.disk!] as Superblock).arrayUuid;
  const arrays = new Set(clones.map((leg) => digits(uuidOf(leg))));
  if (arrays.size > 1)
    return {
      ...part,
      refusal:
        `the clones of snapshot ${snapshot} carry different md arrays (` +
        `${clones.map((leg) => `${named(leg)}: ${uuidOf(leg)}`).join("; ")}); never assembled together: ` +
        "delete the volume and restore the snapshot again",
    };
  // Clones already under the volume's UUID: assembled once, and the target stopped before it wrote
  // status.target.arrayUUID. The newest of every leg that carries the array are assembled again.
  if (arrays.has(digits(desired.arrayUuid)))
    return {
      ...part,
      steps: [
        { kind: "assemble", disks: freshLegs(up, examined, desired.arrayUuid).map((leg) => leg.disk!) },
      ],
    };
  return { ...part, steps: [{ kind: "assembleClones", disks: clones.map((leg) => leg.disk!) }] };
}

function isOurs(examined: Examined | undefined, uuid: string): examined is Superblock {
  return typeof examined === "object" && sameUuid(examined.arrayUuid, uuid);
}

/** md prints UUIDs as 8:8:8:8 hex groups, Kubernetes as 8-4-4-4-12: compare the hex digits. */
export function sameUuid(a: string, b: string): boolean {
  return digits(a) === digits(b);
}

const digits = (uuid: string) => uuid.toLowerCase().replace(/[^0-9a-f]/g, "");

function describeUnassembled(
  leg: LocatedLeg,
  examined: Readonly<Record<string, Examined>>,
  desired: DesiredVolume,
): ReplicaState {
  if (!leg.disk) return offline(leg, leg.down!);
  const found = examined[leg.disk];
  const state = (message: string): ReplicaState => ({ ...offline(leg, message), state: "Offline" });
  if (found === undefined) return state(`disk ${leg.disk} not examined yet`);
  if (found === "unreadable") return state(`disk ${leg.disk}: its md superblock could not be read`);
  if (found === "none") return state(`disk ${leg.disk} holds no md superblock`);
  const clone = !desired.created && desired.source?.clonedReplicas.includes(leg.replicaId);
  if (clone && !sameUuid(found.arrayUuid, desired.arrayUuid))
    return state(
      `disk ${leg.disk} is a clone of snapshot ${desired.source!.snapshot}: the source's array (${found.arrayUuid}) at event ${found.events}`,
    );
  if (!sameUuid(found.arrayUuid, desired.arrayUuid))
    return state(`disk ${leg.disk} holds another array (${found.arrayUuid}); never used`);
  return state(`disk ${leg.disk} holds the array at event ${found.events}`);
}

function planMembers(desired: DesiredVolume, legs: readonly LocatedLeg[], kernel: KernelView): Part {
  const array = kernel.array!;
  const members = new Map(array.legs.map((leg) => [leg.disk, leg]));
  const percent = rebuildPercent(array);
  const growth = growthOf(desired, legs, array);
  const verdicts = legs.map((leg): Verdict => {
    if (!leg.disk) return { replica: offline(leg, leg.down!) };
    const member = members.get(leg.disk);
    if (!member)
      return growth.tooSmall(leg) ?? planJoin(leg, kernel.examined[leg.disk], desired.arrayUuid, array);
    return memberVerdict(leg, member.states, percent);
  });
  const steps = verdicts.flatMap((v) => v.steps ?? []);
  const healthy = verdicts.filter((v) => v.replica.state === "InSync").length;
  const grow = planGrowth(desired, array, {
    growth,
    healthy,
    heldOut: kernel.heldOut ?? [],
    rescanned: kernel.rescanned ?? [],
  });
  return {
    // Dead members first: md has no slot for a returning leg while its old, gone device still holds one.
    steps: [...orphanSteps(legs, array), ...resizeSteps(desired, array, steps), ...grow.steps],
    replicas: verdicts.map((v) => v.replica),
    assembled: true,
    healthy,
    examine: verdicts.flatMap((v, i) => (v.examine ? [legs[i].disk!] : [])),
    rescan: growth.rescan(kernel.rescanned ?? []),
    ...(grow.why ? { growth: grow.why } : {}),
  };
}

/**
 * md keeps the first part of each leg for its superblock and bitmap (the data offset), and rounds the size it
 * uses down: an array counts as grown once it is within this of its legs' data room.
 */
export const GROWTH_SLACK_BYTES = 1024 * 1024;

interface Growth {
  /** The array is smaller than the volume's capacity allows (beyond md's own room and rounding). */
  behind: boolean;
  /** Legs up whose disk is smaller than the volume. */
  small: LocatedLeg[];
  /** A leg outside the array that is too small to join it: logged out so that its pool reopens it. */
  tooSmall(leg: LocatedLeg): Verdict | undefined;
  /** Sessions of small legs not rescanned since they logged in. */
  rescan(rescanned: readonly number[]): number[];
}

function growthOf(desired: DesiredVolume, legs: readonly LocatedLeg[], array: ArrayState): Growth {
  const need = desired.capacityBytes;
  const offset = Math.max(0, ...array.legs.map((leg) => leg.dataOffsetBytes ?? 0));
  const small = legs.filter((leg) => leg.disk && (leg.sizeBytes ?? 0) < need);
  const behind = array.sizeBytes + offset + GROWTH_SLACK_BYTES < need;
  return {
    behind,
    small,
    tooSmall(leg) {
      const refused = (leg.sizeBytes ?? 0) - offset < array.sizeBytes;
      if (!small.includes(leg) || !(behind || refused)) return undefined;
      const why = refused
        ? `its disk ${leg.disk} is ${leg.sizeBytes} bytes, too small for the array's ${array.sizeBytes} (md refuses it): not added; logged out so that its pool re-reads the grown replica`
        : `its disk ${leg.disk} is ${leg.sizeBytes} bytes, below the volume's ${need}: not added (it would have to leave again for the array to grow); logged out so that its pool re-reads the grown replica`;
      return {
        steps: [
          { kind: "logout", targetIqn: leg.session!.targetIqn, portal: leg.portal!, why, holdOut: true },
        ],
        replica: { ...offline(leg, why), state: "Degraded" },
      };
    },
    rescan: (rescanned) => small.map((leg) => leg.session!.sid).filter((sid) => !rescanned.includes(sid)),
  };
}

/**
 * The array follows the volume's capacity (never shrinks: `--size=max` is the legs' smallest, and every leg is
 * at least the capacity first). A member whose disk is still small after a rescan is taken out and logged out,
 * one at a time and only while the others in sync are at least the consistency factor, because tgt re-reads a
 * replica's size only while nobody is logged in to it (docs/adr/0041-a-grown-replica-is-reopened-by-tgt-while-no.md);
 * it is logged in again after a while and re-added from the bitmap.
 */
function planGrowth(
  desired: DesiredVolume,
  array: ArrayState,
  {
    growth,
    healthy,
    heldOut,
    rescanned,
  }: { growth: Growth; healthy: number; heldOut: readonly string[]; rescanned: readonly number[] },
): { steps: Step[]; why?: string } {
  if (!growth.behind) return { steps: [] };
  const need = desired.capacityBytes;
  const members = new Set(array.legs.map((leg) => leg.disk));
  const small = growth.small.filter((leg) => members.has(leg.disk!));
  const settled = array.syncAction === "idle" && array.legs.every((leg) => leg.states.includes("in_sync"));
  if (small.length === 0) {
    // A replica held out (its pool has not grown it yet) does not hold the others back: it rejoins once grown,
    // anew with a full sync (planJoin: md re-adds no leg whose superblock is smaller than the array).
    if (settled && array.legs.length > 0)
      return {
        steps: [{ kind: "growSize" }],
        why: `growing the array to its legs' size (the volume is ${need} bytes)`,
      };
    return {
      steps: [],
      why: `the array grows to ${need} bytes once every replica is back in sync at that size`,
    };
  }
  const names = small.map((leg) => `${leg.replicaId} (${leg.sizeBytes} bytes)`).join(", ");
  const waiting = `the array grows to ${need} bytes once every replica's export serves that size; still smaller: ${names}`;
  if (small.some((leg) => !rescanned.includes(leg.session!.sid)))
    return { steps: [], why: `${waiting}; asking them again (session rescan)` };
  if (!settled || heldOut.length > 0)
    return { steps: [], why: `${waiting}; one replica is re-read at a time, once the others are in sync` };
  if (healthy - 1 < desired.consistencyFactor)
    return {
      steps: [],
      why: `${waiting}; its pool re-reads a replica's size only while the target is logged out of it, and taking one out would leave ${healthy - 1} in sync, below the consistency factor ${desired.consistencyFactor}: add a replica (spec.replicaCount) so that one can leave, or restart the target (docs/volumes.md)`,
    };
  const leg = small[0];
  const why = `its export still serves ${leg.sizeBytes} bytes of the volume's ${need}: taken out and logged out so that its pool re-reads the grown replica`;
  return {
    steps: [
      { kind: "remove", disk: leg.disk!, why },
      { kind: "logout", targetIqn: leg.session!.targetIqn, portal: leg.portal!, why, holdOut: true },
    ],
    why: waiting,
  };
}

interface Verdict {
  steps?: Step[];
  examine?: boolean;
  replica: ReplicaState;
}

/** A leg md has: in sync, failed (re-added once its session is back, which it is here), or being recovered. */
function memberVerdict(leg: LocatedLeg, states: readonly string[], percent: number): Verdict {
  const { replicaId, pool } = leg;
  if (states.includes("faulty"))
    return {
      steps: [{ kind: "reAdd", disk: leg.disk!, replicaId }],
      replica: { ...offline(leg, `failed in the array; re-adding ${leg.disk}`), state: "Degraded" },
    };
  if (states.includes("in_sync")) return { replica: { replicaId, pool, state: "InSync" } };
  return { replica: { replicaId, pool, state: "Rebuilding", rebuildPercent: percent } };
}

/** md's progress through a recovery or resync, in whole percent (0 when none runs). */
function rebuildPercent(array: ArrayState): number {
  const running = ["recover", "resync"].includes(array.syncAction) ? array.syncCompleted : undefined;
  return running && running.total > 0 ? Math.floor((running.done * 100) / running.total) : 0;
}

/**
 * A leg up but outside the array: back in from the bitmap if it is ours, in with a full sync if blank or if it
 * left before the array grew (md refuses to re-add a leg whose superblock holds less than the array's size).
 */
function planJoin(leg: LocatedLeg, found: Examined | undefined, uuid: string, array: ArrayState): Verdict {
  const disk = leg.disk!;
  const degraded = (message: string): ReplicaState => ({ ...offline(leg, message), state: "Degraded" });
  if (found === undefined) return { examine: true, replica: degraded(`disk ${disk} is being examined`) };
  if (found === "unreadable")
    return { replica: degraded(`disk ${disk}: its md superblock could not be read; not added`) };
  if (found === "none")
    return {
      steps: [{ kind: "add", disk, replicaId: leg.replicaId }],
      replica: degraded(`disk ${disk} is blank; adding it (full sync)`),
    };
  if (!sameUuid(found.arrayUuid, uuid))
    return { replica: degraded(`disk ${disk} holds another array (${found.arrayUuid}); never overwritten`) };
  const roomBytes = (found.dataSizeSectors ?? Infinity) * 512;
  if (roomBytes < array.sizeBytes)
    return {
      steps: [{ kind: "add", disk, replicaId: leg.replicaId }],
      replica: degraded(
        `disk ${disk} left the array before it grew (its superblock holds ${roomBytes} bytes, the array ` +
          `${array.sizeBytes}); adding it anew (full sync)`,
      ),
    };
  return {
    steps: [{ kind: "reAdd", disk, replicaId: leg.replicaId }],
    replica: degraded(`disk ${disk} returned; re-adding it (catch-up from the bitmap)`),
  };
}

/** md legs whose disk no replica's session holds any more: a dead leg that md may still count. */
function orphanSteps(legs: readonly LocatedLeg[], array: ArrayState): Step[] {
  const known = new Set(legs.flatMap((leg) => Object.values(leg.session?.luns ?? {}).map((lun) => lun.disk)));
  return array.legs
    .filter((member) => !known.has(member.disk) && member.states.includes("faulty"))
    .map((member) => ({ kind: "remove", disk: member.disk, why: "its replica's session is gone" }));
}

/**
 * The array's slots follow the replica count: grown once a leg joins, shrunk once a leg left. A joining leg
 * goes in first, as a spare: mdadm refuses to grow a RAID1 without a spare for the new slot. A spare left by
 * a pass whose grow failed makes the next pass grow.
 */
function resizeSteps(desired: DesiredVolume, array: ArrayState, joins: readonly Step[]): Step[] {
  const wanted = desired.legs.length;
  const joining = joins.some((step) => step.kind === "add" || step.kind === "reAdd");
  const spare = array.legs.length > array.raidDisks;
  if (wanted > array.raidDisks && (joining || spare))
    return [...joins, { kind: "grow", raidDevices: wanted }];
  if (wanted < array.raidDisks && array.legs.length <= wanted && wanted >= 1)
    return [{ kind: "grow", raidDevices: wanted }, ...joins];
  return [...joins];
}

/** Replicas md reports in sync with no resync running: what the agent confirms as caught up. */
export function caughtUpReplicas(plan: TargetPlan, array: ArrayState | undefined): string[] {
  if (!array || array.syncAction !== "idle") return [];
  return plan.replicas.filter((r) => r.state === "InSync").map((r) => r.replicaId);
}
