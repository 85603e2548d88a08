// The target's part of a snapshot (docs/adr/0050-a-snapshot-is-taken-while-md-holds-the-volumes-writes.md,
// docs/adr/0054-the-targets-snapshot-pass-one-at-a-time-a-bound-kept-by-a-timer.md), pure: from the volume's
// CStorVolumeSnapshots, its replicas, which of them md has in sync, whether md holds the writes and since when,
// the clock and the bound, the steps of one go. The agent applies them, reads the replicas again while it holds,
// and plans again until a plan releases.
//
// One rule above the others: while writes are held, a plan made at or after the bound releases first.
import type { CVR, CVSnap, CVSnapStatus } from "../api/types.js";
import { ANNOTATION, FINALIZER, LIMITS } from "../api/constants.js";
import { snapshotListEntries, snapshotListValue } from "../lib/volume/replica-snapshots.js";

export interface SnapshotWorld {
  /** The volume: the CStorVolume's (and its CStorVolumeConfig's) name, what a snapshot's spec.volume names. */
  volume: string;
  /** The volume's spec.capacity: a snapshot's restoreSize. */
  capacity: string;
  consistencyFactor: number;
  /** The array is assembled: there are writes to hold. */
  assembled: boolean;
  /** The replicas (CStorVolumeReplica names) whose leg md has in sync, their session and disk up. */
  inSync: readonly string[];
  /** The volume's CStorVolumeSnapshots. */
  snapshots: readonly CVSnap[];
  /** The volume's CStorVolumeReplicas. */
  replicas: readonly CVR[];
  /**
   * md holds the array's writes now: for which snapshot and since when, as far as the agent knows (after a
   * restart it knows neither).
   */
  held?: { snapshot?: string; since?: Date };
  now: Date;
  /** SNAPSHOT_HOLD_SECONDS, in milliseconds. */
  holdBoundMs: number;
}

export type SnapshotStep =
  /** Hold the array's writes (md's suspend range): the snapshot's instant is the plan's clock. */
  | { kind: "hold"; snapshot: string }
  | { kind: "release"; why: string }
  /** The replica's two annotations as they are to be: snapshot-now (absent: removed) and the snapshots it keeps. */
  | { kind: "annotate"; replica: string; snapshotNow?: string; snapshots: string[] }
  /** The snapshot's whole status, replaced. */
  | { kind: "status"; snapshot: string; status: CVSnapStatus }
  | { kind: "removeFinalizer"; snapshot: string };

/** A failed attempt is tried again after this, doubling per attempt, up to RETRY_MAX_MS. */
export const RETRY_FIRST_MS = 10_000;
export const RETRY_MAX_MS = 5 * 60_000;
const REASON_LENGTH = 256;

export function planSnapshots(world: SnapshotWorld): SnapshotStep[] {
  const { held } = world;
  if (!held) return planIdle(world);
  const snapshot = live(world).find((s) => s.metadata.name === held.snapshot);
  if (snapshot && held.since) return planHeld(world, snapshot, held.since);
  const why = !held.snapshot
    ? "md holds the volume's writes and no snapshot of this run asked for it (a target that stopped while holding)"
    : `snapshot ${held.snapshot} is gone or being deleted`;
  // No hold in the same plan: the next pass holds, with its own bound.
  return [{ kind: "release", why }, ...planIdle({ ...world, held: undefined }, false)];
}

/** The snapshots of this volume not being deleted, oldest first. */
function live(world: SnapshotWorld): CVSnap[] {
  return ours(world)
    .filter((s) => !s.metadata.deletionTimestamp)
    .sort((a, b) => order(a).localeCompare(order(b)));
}

const ours = (world: SnapshotWorld) => world.snapshots.filter((s) => s.spec?.volume === world.volume);
const order = (s: CVSnap) => `${s.metadata.creationTimestamp ?? ""}/${s.metadata.name}`;
const nameOf = (object: { metadata: { name?: string } }) => object.metadata.name ?? "";

/** The names a replica's cstor.openebs.io/snapshots lists. */
export function listedSnapshots(replica: CVR): string[] {
  return (snapshotListEntries(replica.metadata.annotations) ?? []).filter(Boolean);
}

const snapshotNow = (replica: CVR) => replica.metadata.annotations?.[ANNOTATION.snapshotNow];
/** The replica's pool reports the ZFS snapshot `name` in the replica's status. */
const reports = (replica: CVR, name: string) =>
  (replica.status?.snapshots ?? []).some((s) => s.name === name);

/** While writes are held for `snapshot`: release once every replica held confirmed it, or at the bound. */
function planHeld(world: SnapshotWorld, snapshot: CVSnap, since: Date): SnapshotStep[] {
  const name = nameOf(snapshot);
  const elapsed = world.now.getTime() - since.getTime();
  const annotated = world.replicas.filter((r) => snapshotNow(r) === name);
  // A replica in sync that has not been asked yet (its patch failed, or md finished its rebuild meanwhile);
  // never one that still holds an earlier attempt's snapshot: that would confirm what it did not take now.
  const unasked = inSyncReplicas(world).filter(
    (r) => !annotated.includes(r) && !reports(r, name) && !listedSnapshots(r).includes(name),
  );
  const asked = [...annotated, ...unasked];
  const silent = asked.filter((r) => !reports(r, name));
  const attempt = attemptOf(snapshot);
  const timing = { creationTime: since.toISOString(), holdMilliseconds: elapsed };
  if (unasked.length === 0 && silent.length === 0 && asked.length >= world.consistencyFactor)
    return [
      { kind: "release", why: `every replica held confirmed snapshot ${name}` },
      status(snapshot, {
        phase: "ReadyToUse",
        ...timing,
        restoreSize: world.capacity,
        replicas: asked.map(nameOf).sort(),
        attempts: attempt,
        ...generation(snapshot),
      }),
      ...annotateAll(world, (r) => (snapshotNow(r) === name ? { now: null } : undefined)),
    ];
  if (elapsed >= world.holdBoundMs) {
    const reason =
      silent.length > 0
        ? `replica(s) ${silent.map(nameOf).sort().join(", ")} did not confirm snapshot ${name} within ` +
          `${world.holdBoundMs / 1000} s of holding the writes: their pools' node daemons did not report it in status.snapshots`
        : `${asked.length} replica(s) were asked to take snapshot ${name} and it needs ${world.consistencyFactor}, ` +
          "the volume's consistency factor";
    return [
      { kind: "release", why: `the bound passed: ${reason}` },
      status(snapshot, failed(snapshot, reason, { now: world.now, attempts: attempt, ...timing })),
      ...annotateAll(world, (r) =>
        snapshotNow(r) === name || listedSnapshots(r).includes(name) ? { now: null, drop: name } : undefined,
      ),
    ];
  }
  return unasked.map((r) => annotateStep(r, { now: name, add: name }));
}

/** Nothing held: deletions, clean-ups, statuses, and the hold of the oldest snapshot due, if it can be held. */
function planIdle(world: SnapshotWorld, mayHold = true): SnapshotStep[] {
  const snapshots = live(world);
  const steps: SnapshotStep[] = [];
  // A snapshot left Holding with no hold: the target stopped during it, or could not write the outcome. Failed;
  // tried again after a back-off.
  const interrupted = snapshots.filter((s) => s.status?.phase === "Holding");
  const why =
    "the hold ended before its outcome was written (the target restarted during it, or its status write failed)";
  for (const s of interrupted) steps.push(status(s, holdFailed(s, why, world.now)));
  const due = snapshots.filter((s) => !interrupted.includes(s) && isDue(s, world.now));
  const [active, ...behind] = due;
  for (const s of behind.filter((b) => (b.status?.phase ?? "Pending") === "Pending"))
    steps.push(
      ...statusIfChanged(
        s,
        pending(s, `waiting for snapshot ${nameOf(active)}: a volume's snapshots are taken one at a time`),
      ),
    );
  const activation: Activation = active && mayHold ? activate(world, active) : { steps: [] };
  steps.push(...activation.steps);
  // Names of deleted snapshots, and of snapshots not ReadyToUse (what a failed attempt left), leave every list.
  const dropped = new Set(
    ours(world)
      .filter((s) => s.metadata.deletionTimestamp || s.status?.phase !== "ReadyToUse")
      .map(nameOf),
  );
  const { hold } = activation;
  const isHeld = (r: CVR) => hold?.replicas.includes(r) ?? false;
  const annotations = annotateAll(world, (r) =>
    hold && isHeld(r)
      ? { now: nameOf(hold.snapshot), dropAll: dropped, add: nameOf(hold.snapshot) }
      : { now: null, dropAll: dropped },
  );
  const heldNames = new Set(hold?.replicas.map(nameOf));
  return [
    ...finalizersToRemove(world),
    ...steps,
    ...annotations.filter((s) => !heldNames.has(s.replica)),
    ...(hold
      ? [
          { kind: "hold", snapshot: nameOf(hold.snapshot) } as const,
          ...annotations.filter((s) => heldNames.has(s.replica)),
          status(hold.snapshot, hold.status),
        ]
      : []),
  ];
}

interface Activation {
  /** Statuses to write when nothing is held: the snapshot waits, or is refused. */
  steps: SnapshotStep[];
  /** The hold: of which snapshot, on which replicas, and its status (Holding) once the writes are held. */
  hold?: { snapshot: CVSnap; replicas: CVR[]; status: CVSnapStatus };
}

/** The oldest snapshot due: held on the replicas in sync, or refused, or kept waiting, and why. */
function activate(world: SnapshotWorld, snapshot: CVSnap): Activation {
  const name = nameOf(snapshot);
  const attempt = attemptOf(snapshot);
  if (!world.assembled)
    return {
      steps: statusIfChanged(
        snapshot,
        pending(snapshot, "waiting for the target to assemble the volume's array: nothing to hold yet"),
      ),
    };
  const inSync = inSyncReplicas(world);
  const refuse = (reason: string): Activation => ({
    steps: [status(snapshot, failed(snapshot, reason, { now: world.now, attempts: attempt }))],
  });
  if (inSync.length < world.consistencyFactor)
    return refuse(
      `the volume is degraded: ${inSync.length} replica(s) in sync (${inSync.map(nameOf).join(", ") || "none"}) and a snapshot ` +
        `needs ${world.consistencyFactor}, its consistency factor; tried again after a back-off`,
    );
  const full = inSync.filter(
    (r) => listedSnapshots(r).filter((n) => n !== name).length >= LIMITS.maxSnapshotsPerVolume,
  );
  if (full.length > 0)
    return refuse(
      `replica(s) ${full.map(nameOf).join(", ")} already keep ${LIMITS.maxSnapshotsPerVolume} snapshots, the most a ` +
        "volume keeps: delete one of the volume's snapshots",
    );
  const remains = inSync.filter((r) => reports(r, name) || listedSnapshots(r).includes(name));
  if (remains.length > 0)
    return {
      steps: statusIfChanged(snapshot, {
        ...snapshot.status,
        phase: snapshot.status?.phase ?? "Pending",
        message:
          `waiting for the pools of replica(s) ${remains.map(nameOf).join(", ")} to destroy what an earlier attempt ` +
          `at snapshot ${name} left, before holding again`,
        ...generation(snapshot),
      }),
    };
  return {
    steps: [],
    hold: {
      snapshot,
      replicas: inSync,
      status: {
        phase: "Holding",
        creationTime: world.now.toISOString(),
        attempts: attempt,
        message: `writes held; waiting for replica(s) ${inSync.map(nameOf).join(", ")} to confirm`,
        ...generation(snapshot),
      },
    },
  };
}

/** The in-sync replicas that are not being deleted, by name. */
function inSyncReplicas(world: SnapshotWorld): CVR[] {
  const inSync = new Set(world.inSync);
  return world.replicas
    .filter((r) => inSync.has(nameOf(r)) && !r.metadata.deletionTimestamp)
    .sort((a, b) => nameOf(a).localeCompare(nameOf(b)));
}

/** Pending, or Failed with its next attempt due. */
function isDue(snapshot: CVSnap, now: Date): boolean {
  const phase = snapshot.status?.phase ?? "Pending";
  if (phase === "Pending") return true;
  if (phase !== "Failed") return false;
  const next = Date.parse(snapshot.status?.nextAttemptTime ?? "");
  return Number.isNaN(next) || next <= now.getTime();
}

/** The number of the attempt a hold starting (or under way) now is. */
function attemptOf(snapshot: CVSnap): number {
  const made = snapshot.status?.attempts ?? 0;
  return snapshot.status?.phase === "Holding" ? Math.max(1, made) : made + 1;
}

/** How long after its `attempts`-th failed attempt a snapshot is tried again. */
export function retryDelayMs(attempts: number): number {
  return Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** Math.max(0, attempts - 1));
}

/** A failed attempt: when it ended, its number, and the hold's instant and length when there was one. */
interface Attempt {
  now: Date;
  attempts: number;
  creationTime?: string;
  holdMilliseconds?: number;
}

/**
 * The status of a failed attempt: the reason (cut to what the field holds; whole in the message then), and when
 * the next attempt is.
 */
function failed(snapshot: CVSnap, reason: string, { now, ...attempt }: Attempt): CVSnapStatus {
  const cut = reason.length > REASON_LENGTH;
  return {
    phase: "Failed",
    ...attempt,
    reason: cut ? `${reason.slice(0, REASON_LENGTH - 1)}…` : reason,
    ...(cut ? { message: reason } : {}),
    nextAttemptTime: new Date(now.getTime() + retryDelayMs(attempt.attempts)).toISOString(),
    ...generation(snapshot),
  };
}

/** The status of an attempt that failed before anything was asked of the replicas (md did not hold). */
export function holdFailed(snapshot: CVSnap, reason: string, now: Date): CVSnapStatus {
  return failed(snapshot, reason, { now, attempts: attemptOf(snapshot) });
}

function pending(snapshot: CVSnap, message: string): CVSnapStatus {
  return {
    ...snapshot.status,
    phase: snapshot.status?.phase === "Failed" ? "Failed" : "Pending",
    message,
    ...generation(snapshot),
  };
}

const generation = (snapshot: CVSnap) =>
  snapshot.metadata.generation !== undefined ? { observedGeneration: snapshot.metadata.generation } : {};

function status(snapshot: CVSnap, next: CVSnapStatus): SnapshotStep {
  return { kind: "status", snapshot: nameOf(snapshot), status: next };
}

function statusIfChanged(snapshot: CVSnap, next: CVSnapStatus): SnapshotStep[] {
  return JSON.stringify(next) === JSON.stringify(snapshot.status ?? {}) ? [] : [status(snapshot, next)];
}

/** What a plan changes in a replica's annotations. */
interface Marks {
  /** snapshot-now as it is to be (null: removed); absent: as it is. */
  now?: string | null;
  add?: string;
  drop?: string;
  dropAll?: ReadonlySet<string>;
}

function annotateStep(replica: CVR, marks: Marks): SnapshotStep & { kind: "annotate" } {
  const listed = listedSnapshots(replica).filter((n) => n !== marks.drop && !marks.dropAll?.has(n));
  const snapshots = marks.add && !listed.includes(marks.add) ? [...listed, marks.add] : listed;
  const now = marks.now === undefined ? snapshotNow(replica) : (marks.now ?? undefined);
  return { kind: "annotate", replica: nameOf(replica), ...(now ? { snapshotNow: now } : {}), snapshots };
}

/** One annotate step for each replica whose annotations `marksOf` changes. */
function annotateAll(
  world: SnapshotWorld,
  marksOf: (replica: CVR) => Marks | undefined,
): (SnapshotStep & { kind: "annotate" })[] {
  return world.replicas.flatMap((replica) => {
    const marks = marksOf(replica);
    if (!marks) return [];
    const step = annotateStep(replica, marks);
    const unchanged =
      step.snapshotNow === snapshotNow(replica) &&
      snapshotListValue(step.snapshots) === snapshotListValue(listedSnapshots(replica));
    return unchanged ? [] : [step];
  });
}

/** Deleted snapshots no replica lists any more, in its annotation or its status: their finalizer goes. */
function finalizersToRemove(world: SnapshotWorld): SnapshotStep[] {
  return ours(world)
    .filter(
      (s) => s.metadata.deletionTimestamp && s.metadata.finalizers?.includes(FINALIZER.replicaSnapshots),
    )
    .filter((s) =>
      world.replicas.every((r) => !reports(r, nameOf(s)) && !listedSnapshots(r).includes(nameOf(s))),
    )
    .map((s) => ({ kind: "removeFinalizer", snapshot: nameOf(s) }));
}
