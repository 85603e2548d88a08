// The pool's replicas served to volume targets over iSCSI (docs/adr/0011-a-replica-is-a-zvol-on-the-pool-data-reaches.md and docs/adr/0032-the-pool-agent-what-it-reads-how-it-exports.md): one tgt target per
// replica, named from its volume, LUN 1 on the replica's zvol or file. planExports is pure: what tgtd holds
// against what the pool holds. Only targets with the replica IQN prefix are the agent's; others are left alone.
import { Buffer } from "node:buffer";
import { MAX_IQN_BYTES, REPLICA_IQN_PREFIX, replicaIqn } from "../lib/volume/iqn.js";
import { SERVING_STATES, type AgentObservation } from "./observe.js";
import type { Tgt, TgtTarget } from "../iscsi/tgt.js";

export interface WantedExport {
  iqn: string;
  volume: string;
  backingStore: string;
}

export type ExportAction =
  | { kind: "delete"; tid: number; iqn: string; why: string }
  | { kind: "create"; tid: number; iqn: string; volume: string; backingStore: string };

/** What should be served: every replica of a serving pool but those being destroyed or not finished. */
export function wantedExports(observation: AgentObservation): { wanted: WantedExport[]; refused: string[] } {
  const wanted: WantedExport[] = [];
  const refused: string[] = [];
  if (!observation.status || !SERVING_STATES.has(observation.status.state)) return { wanted, refused };
  const seen = new Set<string>();
  for (const replica of observation.replicas) {
    if (replica.destroying || replica.size === undefined) continue;
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
    wanted.push({ iqn, volume: replica.volume, backingStore: replica.backingStore });
  }
  return { wanted, refused };
}

/** Deletions first (they may free a target id), then creations with the smallest free target ids. */
export function planExports(wanted: readonly WantedExport[], current: readonly TgtTarget[]): ExportAction[] {
  const byIqn = new Map(wanted.map((w) => [w.iqn, w]));
  const actions: ExportAction[] = [];
  const kept = new Set<string>();
  const usedTids = new Set<number>();
  for (const target of [...current].sort((a, b) => a.tid - b.tid)) {
    if (!target.iqn.startsWith(REPLICA_IQN_PREFIX)) {
      usedTids.add(target.tid);
      continue;
    }
    const want = byIqn.get(target.iqn);
    const why = !want
      ? "its replica is not on the pool, is being destroyed, or the pool is not serving"
      : mismatch(target, want);
    if (why === undefined && !kept.has(target.iqn)) {
      kept.add(target.iqn);
      usedTids.add(target.tid);
    } else {
      actions.push({
        kind: "delete",
        tid: target.tid,
        iqn: target.iqn,
        why: why ?? "a second target with the same name",
      });
    }
  }
  let tid = 1;
  for (const want of wanted) {
    if (kept.has(want.iqn)) continue;
    while (usedTids.has(tid)) tid++;
    usedTids.add(tid);
    actions.push({
      kind: "create",
      tid,
      iqn: want.iqn,
      volume: want.volume,
      backingStore: want.backingStore,
    });
  }
  return actions;
}

function mismatch(target: TgtTarget, want: WantedExport): string | undefined {
  const luns = Object.keys(target.luns);
  if (luns.length !== 1 || target.luns[1] !== want.backingStore) {
    return `it serves ${JSON.stringify(target.luns)}, not LUN 1 on ${want.backingStore}`;
  }
  if (!target.acl.includes("ALL"))
    return "it is not bound to initiators (an earlier creation stopped half way)";
  return undefined;
}

export interface ExportResult {
  /** Targets of ours tgtd serves after the reconcile. */
  served: number;
  done: ExportAction[];
  failed: { action: ExportAction; error: string }[];
  refused: string[];
}

/** One reconcile: tgtd read, the plan applied action by action (a failure does not stop the others). */
export async function reconcileExports(tgt: Tgt, observation: AgentObservation): Promise<ExportResult> {
  const { wanted, refused } = wantedExports(observation);
  const current = await tgt.targets();
  const actions = planExports(wanted, current);
  const result: ExportResult = { served: 0, done: [], failed: [], refused };
  for (const action of actions) {
    try {
      if (action.kind === "delete") await tgt.delete(action.tid);
      else await tgt.create(action.tid, action.iqn, action.backingStore);
      result.done.push(action);
    } catch (error) {
      result.failed.push({ action, error: (error as Error).message });
    }
  }
  result.served = (await tgt.targets()).filter((t) => t.iqn.startsWith(REPLICA_IQN_PREFIX)).length;
  return result;
}
