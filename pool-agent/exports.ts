// The pool's replicas served to volume targets over iSCSI (docs/adr/0011-a-replica-is-a-zvol-on-the-pool-data-reaches.md, docs/adr/0032-the-pool-agent-what-it-reads-how-it-exports.md and
// docs/adr/0040-the-target-agent-credentials-names-and-status.md): one tgt target per replica, named from its
// volume, LUN 1 written through on the replica's zvol or file, admitting only the volume's target initiator with
// the volume's CHAP. planExports is pure: what tgtd holds against what the pool holds. Only targets with the
// replica IQN prefix are the agent's; others are left alone.
import { Buffer } from "node:buffer";
import { volumeChap, type ChapCredentials } from "../lib/volume/chap.js";
import {
  MAX_IQN_BYTES,
  REPLICA_DATA_LUN,
  REPLICA_IQN_PREFIX,
  replicaIqn,
  targetInitiatorIqn,
} from "../lib/volume/iqn.js";
import { SERVING_STATES, type AgentObservation } from "./observe.js";
import { tgtShownMegabytes, WRITE_THROUGH_FLAG, type Tgt, type TgtTarget } from "../iscsi/tgt.js";

export interface WantedExport {
  iqn: string;
  volume: string;
  backingStore: string;
  /** The only initiator name the export admits: the volume's target (lib/volume/iqn.ts). */
  initiator: string;
  /** The volume's CHAP account (lib/volume/chap.ts): the password is never logged. */
  chap: ChapCredentials;
  /** The replica's size in bytes now: tgtd serves it once it opens the backing store again. */
  sizeBytes: number;
}

export type ExportAction =
  | {
      kind: "delete";
      tid: number;
      iqn: string;
      why: string;
      /** Its CHAP accounts that no remaining target holds: deleted after it. */
      accounts: string[];
    }
  | { kind: "create"; tid: number; iqn: string; want: WantedExport }
  | { kind: "reopen"; tid: number; iqn: string; backingStore: string; why: string };

/** What an action may show in a log: everything but the password. */
export function actionFields(action: ExportAction): Record<string, unknown> {
  if (action.kind !== "create") return { ...action };
  const { want, ...rest } = action;
  return {
    ...rest,
    volume: want.volume,
    backingStore: want.backingStore,
    initiator: want.initiator,
    user: want.chap.user,
    sizeBytes: want.sizeBytes,
  };
}

/** What the agent logs of an action done, and of one that failed. */
export const ACTION_MESSAGES: Record<ExportAction["kind"], { done: string; failed: string }> = {
  create: { done: "replica exported", failed: "replica export failed" },
  delete: { done: "export removed", failed: "export removal failed" },
  reopen: { done: "replica reopened at its new size", failed: "replica reopen failed" },
};

/**
 * What should be served: every replica of a serving pool but those being destroyed or not finished, each with
 * its volume's initiator and credentials under `chapKey` (the cluster's key, pool-agent/config.ts).
 */
export function wantedExports(
  observation: AgentObservation,
  chapKey: string,
): { wanted: WantedExport[]; refused: string[] } {
  const wanted: WantedExport[] = [];
  const refused: string[] = [];
  if (!observation.status || !SERVING_STATES.has(observation.status.state)) return { wanted, refused };
  const seen = new Set<string>();
  for (const replica of observation.replicas) {
    if (replica.destroying || replica.size === undefined) continue;
    // The longest of the volume's names (the target initiator's is one byte shorter).
    const iqn = replicaIqn(replica.volume);
    if (Buffer.byteLength(iqn) > MAX_IQN_BYTES) {
      refused.push(
        `replica ${replica.dataset} is not exported: its iSCSI name ${iqn} is longer than ${MAX_IQN_BYTES} bytes; give the volume a shorter name`,
      );
      continue;
    }
    if (seen.has(iqn)) {
      refused.push(
        `replica ${replica.dataset} is not exported: another dataset of the pool names volume ${replica.volume} too`,
      );
      continue;
    }
    seen.add(iqn);
    wanted.push({
      iqn,
      volume: replica.volume,
      backingStore: replica.backingStore,
      initiator: targetInitiatorIqn(replica.volume),
      chap: volumeChap(chapKey, replica.volume),
      sizeBytes: replica.size,
    });
  }
  return { wanted, refused };
}

/**
 * Deletions first (they may free a target id), then creations with the smallest free target ids, then the
 * reopens of grown replicas. A target of ours that serves anything else, admits any other initiator (ALL
 * included: how exports made before ADR 0040 are closed), lacks the volume's account or is not written through
 * is deleted and made again.
 */
export function planExports(wanted: readonly WantedExport[], current: readonly TgtTarget[]): ExportAction[] {
  const actions = planTargets(wanted, current);
  const byIqn = new Map(wanted.map((w) => [w.iqn, w]));
  const deleted = new Set(actions.map((a) => a.tid));
  for (const target of current) {
    const want = byIqn.get(target.iqn);
    if (!want || deleted.has(target.tid)) continue;
    const reopen = reopenFor(target, want);
    if (reopen) actions.push(reopen);
  }
  return actions;
}

/**
 * A replica that grew (the node daemon's `zfs set volsize` or truncate) is served at its old size until tgtd
 * opens it again, which is safe only while nobody is logged in to it (tgt's reopen does not wait for the I/O
 * in flight; docs/adr/0041-a-grown-replica-is-reopened-by-tgt-while-no.md). While its volume's target is
 * logged in, the export waits: the target logs the leg out for this when it grows the volume.
 */
function reopenFor(target: TgtTarget, want: WantedExport): ExportAction | undefined {
  const shown = target.luns[REPLICA_DATA_LUN]?.shownMegabytes;
  if (shown === undefined || tgtShownMegabytes(want.sizeBytes) <= shown || target.loggedIn.length > 0)
    return undefined;
  return {
    kind: "reopen",
    tid: target.tid,
    iqn: target.iqn,
    backingStore: want.backingStore,
    why: `the replica grew to ${want.sizeBytes} bytes; tgtd serves ${shown} MB`,
  };
}

/** Targets to delete and to create: what tgtd holds against what should be served. */
function planTargets(wanted: readonly WantedExport[], current: readonly TgtTarget[]): ExportAction[] {
  const byIqn = new Map(wanted.map((w) => [w.iqn, w]));
  const deletions: { target: TgtTarget; why: string }[] = [];
  const staying: TgtTarget[] = [];
  const kept = new Set<string>();
  for (const target of [...current].sort((a, b) => a.tid - b.tid)) {
    if (!target.iqn.startsWith(REPLICA_IQN_PREFIX)) {
      staying.push(target);
      continue;
    }
    const want = byIqn.get(target.iqn);
    const why = !want
      ? "its replica is not on the pool, is being destroyed, or the pool is not serving"
      : mismatch(target, want);
    if (why === undefined && !kept.has(target.iqn)) {
      kept.add(target.iqn);
      staying.push(target);
    } else {
      deletions.push({ target, why: why ?? "a second target with the same name" });
    }
  }
  // Deleting an account unbinds it from every target, so one that a remaining target holds stays.
  const held = new Set(staying.flatMap((t) => t.accounts));
  const actions: ExportAction[] = deletions.map(({ target, why }) => ({
    kind: "delete",
    tid: target.tid,
    iqn: target.iqn,
    why,
    accounts: target.accounts.filter((user) => !held.has(user)),
  }));
  const usedTids = new Set(staying.map((t) => t.tid));
  let tid = 1;
  for (const want of wanted) {
    if (kept.has(want.iqn)) continue;
    while (usedTids.has(tid)) tid++;
    usedTids.add(tid);
    actions.push({ kind: "create", tid, iqn: want.iqn, want });
  }
  return actions;
}

function mismatch(target: TgtTarget, want: WantedExport): string | undefined {
  const luns = Object.keys(target.luns);
  const lun = target.luns[REPLICA_DATA_LUN];
  if (luns.length !== 1 || lun?.backingStore !== want.backingStore) {
    const served = Object.entries(target.luns).map(([n, l]) => `LUN ${n} on ${l.backingStore}`);
    return `it serves ${served.join(", ") || "no LUN"}, not LUN ${REPLICA_DATA_LUN} on ${want.backingStore}`;
  }
  if (target.acl.includes("ALL")) return "it admits every initiator (ACL ALL)";
  if (target.acl.length === 0) return "it admits no initiator (an earlier creation stopped half way)";
  if (target.acl.length !== 1 || target.acl[0] !== want.initiator)
    return `it admits ${target.acl.join(", ")}, not only ${want.initiator}`;
  if (target.accounts.length !== 1 || target.accounts[0] !== want.chap.user) {
    const bound =
      target.accounts.length === 0 ? "no CHAP account" : `CHAP accounts ${target.accounts.join(", ")}`;
    return `it has ${bound}, not only the volume's (${want.chap.user})`;
  }
  if (!lun.flags.includes(WRITE_THROUGH_FLAG))
    return `its LUN is not written through (backing store flags ${JSON.stringify(lun.flags.join(":"))}, not ${WRITE_THROUGH_FLAG})`;
  return undefined;
}

export interface ExportResult {
  /** Targets of ours tgtd serves after the reconcile. */
  served: number;
  done: ExportAction[];
  failed: { action: ExportAction; error: string }[];
  refused: string[];
}

/**
 * One reconcile: tgtd read, the plan applied action by action (a failure does not stop the others). A deleted
 * target's accounts go only once the target is gone: without its account, a target still serving would admit
 * its initiator without CHAP.
 */
export async function reconcileExports(
  tgt: Tgt,
  observation: AgentObservation,
  chapKey: string,
): Promise<ExportResult> {
  const { wanted, refused } = wantedExports(observation, chapKey);
  const current = await tgt.targets();
  const actions = planExports(wanted, current);
  const result: ExportResult = { served: 0, done: [], failed: [], refused };
  for (const action of actions) {
    try {
      if (action.kind === "delete") {
        await tgt.delete(action.tid);
        for (const user of action.accounts) await tgt.deleteAccount(user);
      } else if (action.kind === "reopen") {
        await tgt.reopen(action.tid, REPLICA_DATA_LUN, action.backingStore);
      } else {
        const { want } = action;
        await tgt.create({
          tid: action.tid,
          iqn: want.iqn,
          backingStore: want.backingStore,
          initiatorName: want.initiator,
          user: want.chap.user,
          password: want.chap.password,
        });
      }
      result.done.push(action);
    } catch (error) {
      result.failed.push({ action, error: (error as Error).message });
    }
  }
  result.served = (await tgt.targets()).filter((t) => t.iqn.startsWith(REPLICA_IQN_PREFIX)).length;
  return result;
}
