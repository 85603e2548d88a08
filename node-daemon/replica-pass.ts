// One replica pass over one pool: plan (replicas.ts, pure) → run the first action → read the pool's datasets
// and snapshots again → plan again..., as the pool pass does, so every action is decided on what the previous
// one really did. A failed action marks its CVR Error (a failed snapshot action only says why: the replica's
// data is as it was) and the pass goes on with the other CVRs.
import type { CVR } from "../api/types.js";
import type { Logger } from "../runtime/log.js";
import type { ZfsHost } from "../zfs/host.js";
import type { CoreEvent } from "../lib/events/recorder.js";
import type { PoolObservation } from "../zfs/observation.js";
import {
  planReplicas,
  type ReplicaAction,
  type ReplicaBackend,
  type ReplicaPlan,
  type ReplicaState,
} from "./replicas.js";
import { DATASET_PROPERTIES } from "../zfs/layout.js";

export interface ReplicaPassDeps {
  host: ZfsHost;
  backend: ReplicaBackend;
  /** Removes the replica finalizer; the CVR afterwards, undefined once it is gone. */
  removeFinalizer: (cvr: CVR) => Promise<CVR | undefined>;
  logger: Logger;
  stopping?: () => boolean;
}

export interface ReplicaOutcome {
  action: ReplicaAction;
  error?: string;
}

export interface ReplicaPassResult {
  /** The CVRs the pass started from: each gets its Events, also one that went during the pass. */
  judged: readonly CVR[];
  /** The CVRs afterwards (those whose last finalizer was removed are gone). */
  cvrs: CVR[];
  /** By CVR name: the last plan's states, with failures of this pass over them. */
  states: Record<string, ReplicaState>;
  outcomes: ReplicaOutcome[];
}

/** Event reasons per action: Normal on success, Warning on failure (also the CVR's status reason then). */
export const REPLICA_EVENT_REASONS: Record<ReplicaAction["kind"], { done: string; failed: string }> = {
  "create-replica": { done: "ReplicaCreated", failed: "CreateFailed" },
  "clone-replica": { done: "ReplicaCloned", failed: "CloneFailed" },
  "grow-replica": { done: "ReplicaGrown", failed: "GrowFailed" },
  "destroy-replica": { done: "ReplicaDestroyed", failed: "DestroyFailed" },
  "remove-replica-finalizer": { done: "FinalizerRemoved", failed: "FinalizerFailed" },
  "snapshot-replica": { done: "SnapshotTaken", failed: "SnapshotFailed" },
  "destroy-snapshot": { done: "SnapshotDestroyed", failed: "SnapshotFailed" },
};

/** Actions on a replica's snapshots: their failure leaves the replica's phase as it is. */
const SNAPSHOT_ACTIONS: ReadonlySet<ReplicaAction["kind"]> = new Set([
  "snapshot-replica",
  "destroy-snapshot",
]);

/** States that a user must act on: a Warning Event each (repeated at most every 10 minutes). */
const WARNING_REASONS: ReadonlySet<string> = new Set([
  "InvalidSpec",
  "ForeignDataset",
  "ShrinkRefused",
  "SnapshotsExist",
  "ClonesExist",
  "SourceSnapshotMissing",
]);

export async function replicaPass(
  deps: ReplicaPassDeps,
  input: { pool: string; observed: PoolObservation | undefined; cvrs: readonly CVR[] },
): Promise<ReplicaPassResult> {
  let cvrs = [...input.cvrs];
  const imported = input.observed && {
    health: input.observed.status.state,
    readonly: input.observed.readonly ?? false,
    datasets: input.observed.datasets ?? [],
    snapshots: input.observed.snapshots ?? [],
  };
  const outcomes: ReplicaOutcome[] = [];
  const failed = new Map<string, Partial<ReplicaState>>();
  const replan = (): ReplicaPlan =>
    planReplicas({ pool: input.pool, cvrs, backend: deps.backend, ...(imported ? { imported } : {}) });
  let plan = replan();
  // Each CVR needs at most create, grow, destroy, its finalizer and one take, and each snapshot one destroy:
  // more steps would be a loop.
  const steps = 5 * cvrs.length + (imported?.snapshots.length ?? 0) + 1;
  for (let step = 0; step < steps && !deps.stopping?.(); step++) {
    const next = plan.actions.find((a) => !failed.has(a.cvr));
    if (!next) break;
    if (outcomes.some((o) => o.action.key === next.key && !o.error)) {
      // Done, yet wanted again: the pool did not change as the command said (the next pass looks again).
      failed.set(next.cvr, failure(next, ": succeeded but changed nothing"));
      continue;
    }
    const cvr = cvrs.find((c) => c.metadata.name === next.cvr)!;
    try {
      if (next.kind === "remove-replica-finalizer") {
        const after = await deps.removeFinalizer(cvr);
        cvrs = cvrs.flatMap((c) => (c === cvr ? (after ? [after] : []) : [c]));
      } else {
        for (const command of next.commands) await deps.host.runReplicaCommand(command);
      }
      outcomes.push({ action: next });
      deps.logger.info(describeReplicaAction(next), { cvr: next.cvr, action: next.kind });
    } catch (error) {
      const message = (error as Error).message;
      outcomes.push({ action: next, error: message });
      failed.set(next.cvr, failure(next, ` failed: ${message}`));
      deps.logger.warn("replica action failed", { cvr: next.cvr, action: next.kind, error: message });
    }
    if (imported && next.kind !== "remove-replica-finalizer") {
      try {
        Object.assign(imported, await deps.host.contents(input.pool, DATASET_PROPERTIES));
      } catch (error) {
        deps.logger.warn("cannot read the pool's datasets", {
          pool: input.pool,
          error: (error as Error).message,
        });
        break;
      }
    }
    plan = replan();
  }
  const states = { ...plan.states };
  for (const [name, state] of failed) if (states[name]) states[name] = { ...states[name], ...state };
  return { judged: input.cvrs, cvrs, states, outcomes };
}

/** A CVR's state after its action failed: Error, but for a snapshot action, whose failure is only said. */
function failure(action: ReplicaAction, what: string): Partial<ReplicaState> {
  const said = {
    reason: REPLICA_EVENT_REASONS[action.kind].failed,
    message: `${describeReplicaAction(action)}${what}`,
  };
  return SNAPSHOT_ACTIONS.has(action.kind) ? said : { phase: "Error", ...said };
}

/** What a user reads in `kubectl describe cvr`. */
export function describeReplicaAction(action: ReplicaAction): string {
  switch (action.kind) {
    case "create-replica":
      return `created replica ${action.dataset} of ${action.bytes} bytes`;
    case "clone-replica":
      return `cloned replica ${action.dataset} from ${action.origin} (${action.bytes} bytes)`;
    case "grow-replica":
      return `grew replica ${action.dataset} to ${action.bytes} bytes`;
    case "destroy-replica":
      return `destroyed replica ${action.dataset}`;
    case "remove-replica-finalizer":
      return `replica ${action.dataset} is gone: removed the finalizer of CStorVolumeReplica ${action.cvr}`;
    case "snapshot-replica":
      return `took snapshot ${action.dataset}@${action.snapshot}`;
    case "destroy-snapshot":
      // -d destroys at once a snapshot no clone depends on; the one a clone depends on waits for its last clone.
      return `destroyed snapshot ${action.dataset}@${action.snapshot} (zfs destroy -d: kept by ZFS while clones of it exist)`;
  }
}

/** The Events of one CVR for this pass: its actions, and a Warning for a state the user must act on. */
export function replicaEvents(cvr: string, result: ReplicaPassResult): CoreEvent[] {
  const events: CoreEvent[] = result.outcomes
    .filter((o) => o.action.cvr === cvr)
    .map((o) => {
      const reasons = REPLICA_EVENT_REASONS[o.action.kind];
      return o.error
        ? {
            type: "Warning",
            reason: reasons.failed,
            message: `${describeReplicaAction(o.action)} failed: ${o.error}`,
          }
        : { type: "Normal", reason: reasons.done, message: describeReplicaAction(o.action) };
    });
  const state = result.states[cvr];
  if (state?.reason && WARNING_REASONS.has(state.reason))
    events.push({ type: "Warning", reason: state.reason, message: state.message ?? state.reason });
  return events;
}
