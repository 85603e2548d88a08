// The replica planner's snapshots (docs/adr/0050-a-snapshot-is-taken-while-md-holds-the-volumes-writes.md,
// docs/adr/0053-the-node-daemons-snapshots-one-zfs-get-deferred.md): pure. From a CVR's annotations
// cstor.openebs.io/snapshot-now and cstor.openebs.io/snapshots and the ZFS snapshots of its replica it plans the
// take and the deferred destroys, says what status.snapshots reports, and why a deleted CVR's replica is kept.
import { ANNOTATION, LIMITS } from "../api/constants.js";
import type { CVR } from "../api/types.js";
import { formatTime } from "../lib/conditions.js";
import {
  quotedName,
  readSnapshotList,
  snapshotNameProblem,
  type SnapshotList,
} from "../lib/volume/replica-snapshots.js";
import type { HostCommand } from "../zfs/layout.js";
import type { SnapshotRecord } from "../zfs/parse.js";

/**
 * ZFS's longest name (ZFS_MAX_DATASET_NAME_LEN, less its terminating NUL): `<dataset>@<snapshot>` must fit.
 * Measured on zfs-fuse 0.7: 255 characters taken, 256 refused ("name is too long").
 */
export const ZFS_NAME_MAX = 255;

/** A snapshot of the replica as ZFS holds it. */
export interface HeldSnapshot {
  name: string;
  /** RFC 3339, from ZFS's `creation`; undefined when ZFS did not print it as seconds. */
  creationTime?: string;
  /** Bytes only this snapshot holds. */
  used?: number;
  /** Destroyed with -d while a clone depends on it: gone for the API, kept by ZFS until its last clone goes. */
  deferred: boolean;
}

/** One entry of the CVR's status.snapshots. */
export interface ReportedSnapshot {
  name: string;
  creationTime: string;
  used?: number;
}

export interface SnapshotAction {
  kind: "snapshot-replica" | "destroy-snapshot";
  key: string;
  cvr: string;
  dataset: string;
  snapshot: string;
  commands: HostCommand[];
}

/** Why the CVR's snapshots are not as its annotations say; shown when the replica has no reason of its own. */
export interface SnapshotNote {
  reason: "InvalidSpec" | "SnapshotsKept";
  message: string;
}

export interface SnapshotPlan {
  actions: SnapshotAction[];
  /** What status.snapshots lists: the snapshots not deferred, oldest first. */
  reported: ReportedSnapshot[];
  note?: SnapshotNote;
}

/** The snapshots of one dataset, from the pool's snapshots (those of every dataset). */
export function snapshotsByDataset(records: readonly SnapshotRecord[]): Map<string, HeldSnapshot[]> {
  const byDataset = new Map<string, HeldSnapshot[]>();
  for (const record of records) {
    const seconds = record.properties.creation;
    const used = record.properties.used;
    const held: HeldSnapshot = { name: record.name, deferred: record.properties.defer_destroy === "on" };
    if (seconds !== undefined && /^\d+$/.test(seconds))
      held.creationTime = formatTime(new Date(Number(seconds) * 1000));
    if (used !== undefined && /^\d+$/.test(used)) held.used = Number(used);
    const list = byDataset.get(record.dataset);
    if (list) list.push(held);
    else byDataset.set(record.dataset, [held]);
  }
  return byDataset;
}

/**
 * A live replica's snapshots: the snapshot-now taken when the list names it and ZFS has none of that name (only
 * when `canTake`: a Healthy replica of a writable pool), and every snapshot neither listed nor the snapshot-now
 * destroyed with -d, but only while the list is readable.
 */
export function planSnapshots(
  cvr: CVR,
  dataset: string,
  held: readonly HeldSnapshot[],
  canTake: boolean,
): SnapshotPlan {
  const target = { cvr: cvr.metadata.name ?? "", dataset };
  const list = readSnapshotList(cvr.metadata.annotations);
  const now = cvr.metadata.annotations?.[ANNOTATION.snapshotNow];
  const nowProblem = now === undefined ? undefined : snapshotNowProblem(now, dataset);
  const listed = list.state === "listed" ? list.names : new Set<string>();
  const take =
    canTake && now !== undefined && !nowProblem && listed.has(now) && !held.some((s) => s.name === now);
  // Only a readable list lets a snapshot go; the snapshot-now is never destroyed, whatever the list says.
  const unlisted =
    list.state === "listed" ? held.filter((s) => !s.deferred && !listed.has(s.name) && s.name !== now) : [];
  const actions = [
    ...(take ? [snapshotAction("snapshot-replica", target, now, ["snapshot"])] : []),
    ...unlisted.map((s) => snapshotAction("destroy-snapshot", target, s.name, ["destroy", "-d"])),
  ];
  const plan: SnapshotPlan = { actions, reported: reported(held) };
  const note = snapshotNote(list, { cvr, now, nowProblem, dataset, held });
  if (note) plan.note = note;
  return plan;
}

function snapshotAction(
  kind: SnapshotAction["kind"],
  { cvr, dataset }: { cvr: string; dataset: string },
  snapshot: string,
  verb: string[],
): SnapshotAction {
  return {
    kind,
    key: `${kind}:${dataset}@${snapshot}`,
    cvr,
    dataset,
    snapshot,
    commands: [{ program: "zfs", args: [...verb, `${dataset}@${snapshot}`] }],
  };
}

/** Why snapshot-now cannot be taken as it is written; undefined when it can. */
function snapshotNowProblem(now: string, dataset: string): string | undefined {
  const problem = snapshotNameProblem(now);
  if (problem) return problem;
  const length = `${dataset}@${now}`.length;
  return length > ZFS_NAME_MAX
    ? `is too long for ZFS: ${dataset}@<it> would be ${length} characters, more than ${ZFS_NAME_MAX}`
    : undefined;
}

function snapshotNote(
  list: SnapshotList,
  at: { cvr: CVR; now?: string; nowProblem?: string; dataset: string; held: readonly HeldSnapshot[] },
): SnapshotNote | undefined {
  const annotate = `kubectl annotate cvr ${at.cvr.metadata.name ?? ""} -n ${at.cvr.metadata.namespace ?? ""}`;
  if (at.now !== undefined && at.nowProblem)
    return {
      reason: "InvalidSpec",
      message:
        `annotation ${ANNOTATION.snapshotNow} ${quotedName(at.now)} ${at.nowProblem}, so no snapshot of ${at.dataset} is taken. ` +
        `The volume's target writes it from a CStorVolumeSnapshot's name: snapshot under a shorter DNS-1123 name, and remove it (${annotate} ${ANNOTATION.snapshotNow}-)`,
    };
  if (list.state === "unreadable")
    return {
      reason: "InvalidSpec",
      message:
        `${list.problem}, so no snapshot of ${at.dataset} is destroyed until it can be read. ` +
        `The volume's target writes it: correct the entry (${annotate} --overwrite ${ANNOTATION.replicaSnapshots}=<names>)`,
    };
  const unjudged = at.held.filter((s) => !s.deferred && s.name !== at.now);
  if (list.state === "absent" && unjudged.length > 0)
    return {
      reason: "SnapshotsKept",
      message:
        `keeps ${names(unjudged)} of ${at.dataset}: annotation ${ANNOTATION.replicaSnapshots} is absent, so which snapshots must ` +
        `exist is unknown and none is destroyed. The volume's target writes it; empty, it lets them be destroyed`,
    };
  return undefined;
}

/** status.snapshots: every snapshot not deferred that can be a CStorVolumeSnapshot's, oldest first, at most the CRD's bound. */
function reported(held: readonly HeldSnapshot[]): ReportedSnapshot[] {
  return held
    .filter(
      (s): s is HeldSnapshot & { creationTime: string } =>
        !s.deferred && s.creationTime !== undefined && snapshotNameProblem(s.name) === undefined,
    )
    .sort((a, b) => compare(a.creationTime, b.creationTime) || compare(a.name, b.name))
    .slice(0, LIMITS.maxSnapshotsPerVolume)
    .map((s) => ({
      name: s.name,
      creationTime: s.creationTime,
      ...(s.used !== undefined ? { used: s.used } : {}),
    }));
}

/**
 * Why a deleted CVR's replica must be kept for its snapshots' list, undefined when the list lets them go (its
 * `zfs destroy -r` takes the snapshots nobody lists): some are still listed, or the list cannot tell.
 */
export function snapshotsHoldReplica(
  cvr: CVR,
  dataset: string,
  held: readonly HeldSnapshot[],
): string | undefined {
  const list = readSnapshotList(cvr.metadata.annotations);
  const kept = `replica ${dataset} is kept`;
  if (list.state === "listed" && list.names.size > 0)
    return (
      `${kept}: annotation ${ANNOTATION.replicaSnapshots} still lists ${names([...list.names].map((name) => ({ name })))}. ` +
      `Delete the CStorVolumeSnapshots first (the volume's target drops each from the list), or set the list empty to destroy them with the replica`
    );
  if (list.state !== "listed" && held.length > 0)
    return (
      `${kept}: it holds ${names(held)} and annotation ${ANNOTATION.replicaSnapshots} is ` +
      `${list.state === "absent" ? "absent" : `unreadable (${list.problem})`}, so whether they must exist is unknown. ` +
      `Set the list (empty to destroy them with the replica)`
    );
  return undefined;
}

/**
 * Why a deleted CVR's replica is kept for a deleted snapshot ZFS still keeps (`-r` would fail on it; `-R`
 * would destroy its clones), when no clone of it was seen to name (replica-clones.ts says those).
 */
export function deferredHoldReplica(dataset: string, held: readonly HeldSnapshot[]): string | undefined {
  const deferred = held.filter((s) => s.deferred);
  if (deferred.length === 0) return undefined;
  return `replica ${dataset} is kept: ${names(deferred)}, deleted, still ${deferred.length === 1 ? "has clones" : "have clones"} (volumes restored from ${deferred.length === 1 ? "it" : "them"}); it is destroyed once those are gone`;
}

/** "snapshot a" or "snapshots a, b, c, d, e and 3 more". */
function names(snapshots: readonly { name: string }[]): string {
  const shown = snapshots.slice(0, 5).map((s) => s.name);
  const more = snapshots.length - shown.length;
  return `snapshot${snapshots.length === 1 ? "" : "s"} ${shown.join(", ")}${more > 0 ? ` and ${more} more` : ""}`;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
