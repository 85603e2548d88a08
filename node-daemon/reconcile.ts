// One reconcile pass for one CSPI: observe → plan → run the first action → observe again..., then report.
// Shared by the daemon and local mode. One action at a time, each decided on a fresh observation.
import type { CSPI, CSPIStatus } from "../api/types.js";
import { findCondition } from "../lib/conditions.js";
import type { Logger } from "../runtime/log.js";
import { describeAction, execute, type ApiActions } from "./executor.js";
import type { ZfsHost } from "../zfs/host.js";
import type { Observation } from "../zfs/observation.js";
import { observe, type DeviceInspector } from "./observe.js";
import { plan, type Action, type Plan } from "./planner.js";
import { CONDITION, report, type Outcome, type ReplicaCounts } from "./reporter.js";

export interface PassDeps {
  host: ZfsHost;
  inspect: DeviceInspector;
  /** Absent in local mode. */
  api?: ApiActions;
  /** Annotations of the CSPI's claims by block device name; read only while our pool is imported here. */
  readClaims?: (cspi: CSPI) => Promise<Record<string, Record<string, string>>>;
  /**
   * Must the claims be read although no replacement is visible? The daemon answers no once it has seen them
   * settled for the CSPI's current devices. Absent: they are read on every observation.
   */
  claimsDue?: (cspi: CSPI) => boolean;
  nodeName: string;
  hostName: string;
  /** Directories devices must be under (DEVICE_ROOTS). */
  deviceRoots: readonly string[];
  /** CSPI_STALE_STATUS_SECONDS (the planner's default when absent). */
  staleStatusSeconds?: number;
  clock: () => Date;
  logger: Logger;
  /** Plan only. */
  dryRun?: boolean;
  /** Checked before each action: a stopping daemon starts nothing new. */
  stopping?: () => boolean;
  /** Actions that recently did nothing; skipped so a no-op is not repeated every pass. */
  suppressed?: (action: Action) => boolean;
  onAction?: (outcome: Outcome & { durationMs: number }) => void;
  /** The CStorVolumeReplicas naming the CSPI, for the destroy guard; undefined (or absent) = unknown. */
  replicaNames?: () => readonly string[] | undefined;
  /**
   * Looks after the pool's replicas once the pool itself is done (the daemon's replica pass) and counts them
   * for the status; undefined when they cannot be counted. Absent in local mode.
   */
  replicas?: (
    cspi: CSPI,
    observation: Observation | undefined,
    statusOwner: boolean,
  ) => Promise<ReplicaCounts | undefined>;
}

export interface PassResult {
  /** The CSPI afterwards; undefined when it was deleted (its last finalizer removed). */
  cspi?: CSPI;
  /** The plan as first made, before any action: what a dry run prints. */
  firstPlan: Plan;
  /** The plan on the last observation: what is left. */
  plan: Plan;
  observation?: Observation;
  observationError?: string;
  outcomes: Outcome[];
  /** Actions that succeeded yet were planned again at once: they changed nothing. */
  ineffective: Action[];
  status?: CSPIStatus;
  /**
   * The same report on a newer CSPI (its status written by someone else meanwhile): what this pass saw and
   * did, merged onto that status instead of the one the pass started from.
   */
  restatus?: (fresh: CSPI) => CSPIStatus;
}

const MAX_STEPS = 12;

export async function reconcilePass(cspi: CSPI, deps: PassDeps): Promise<PassResult> {
  let current: CSPI | undefined = cspi;
  const outcomes: Outcome[] = [];
  const ineffective: Action[] = [];
  let firstPlan: Plan | undefined;
  let lastPlan: Plan = { actions: [], holds: [], statusOwner: false };
  let observation: Observation | undefined;
  let observationError: string | undefined;
  const target = cspi.spec?.hostName === deps.hostName;

  for (let step = 0; step < MAX_STEPS && current; step++) {
    try {
      observation = await observe(deps.host, deps.inspect, current, {
        scanImportable: target,
        deviceRoots: deps.deviceRoots,
      });
      if (
        deps.readClaims &&
        observation.pool &&
        ((deps.claimsDue?.(current) ?? true) || replacementVisible(current, observation, outcomes))
      ) {
        // Without them only the predecessor mark waits; the pool itself is still looked after (API server away).
        const claims = await deps.readClaims(current).catch((error: Error) => {
          deps.logger.warn("cannot read the claims", { cspi: current!.metadata.name, error: error.message });
          return undefined;
        });
        if (claims) observation.claims = claims;
      }
      observationError = undefined;
    } catch (error) {
      observation = undefined;
      observationError = (error as Error).message;
      deps.logger.warn("observation failed", { cspi: current.metadata.name, error: observationError });
      break;
    }
    lastPlan = plan({
      cspi: current,
      nodeName: deps.nodeName,
      hostName: deps.hostName,
      now: deps.clock(),
      observation,
      manageFinalizer: deps.api !== undefined,
      deviceRoots: deps.deviceRoots,
      ...(deps.staleStatusSeconds !== undefined ? { staleStatusSeconds: deps.staleStatusSeconds } : {}),
      ...replicasInput(deps),
    });
    firstPlan ??= lastPlan;
    if (deps.dryRun || deps.stopping?.()) break;
    const next = lastPlan.actions.find((a) => !deps.suppressed?.(a));
    if (!next) break;
    if (outcomes.some((o) => o.action.key === next.key && !o.error)) {
      ineffective.push(next);
      break;
    }
    const started = performance.now();
    try {
      current = await execute(next, current, deps.host, deps.api);
      outcomes.push({ action: next });
      deps.logger.info(describeAction(next), { cspi: cspi.metadata.name, action: next.kind });
      deps.onAction?.({ action: next, durationMs: performance.now() - started });
    } catch (error) {
      const message = (error as Error).message;
      outcomes.push({ action: next, error: message });
      deps.logger.warn("action failed", { cspi: cspi.metadata.name, action: next.kind, error: message });
      deps.onAction?.({ action: next, error: message, durationMs: performance.now() - started });
      break;
    }
  }

  const result: PassResult = { firstPlan: firstPlan ?? lastPlan, plan: lastPlan, outcomes, ineffective };
  if (current) result.cspi = current;
  if (observation) result.observation = observation;
  if (observationError !== undefined) result.observationError = observationError;
  const owner =
    observationError !== undefined
      ? target || cspi.status?.importedOn === deps.nodeName
      : lastPlan.statusOwner;
  // Replicas are judged on a pool observed: after a failed observation they stay as they were, counts unknown.
  const replicas =
    current && observationError === undefined && !deps.dryRun
      ? await deps.replicas?.(current, observation, owner)
      : undefined;
  if (current && (owner || outcomes.length > 0)) {
    const now = deps.clock();
    result.restatus = (fresh) =>
      report({
        cspi: fresh,
        nodeName: deps.nodeName,
        now,
        ...(observation ? { observation } : {}),
        ...(observationError !== undefined ? { observationError } : {}),
        plan: lastPlan,
        outcomes,
        ...(replicas ? { replicas } : {}),
      });
    result.status = result.restatus(current);
  }
  return result;
}

function replicasInput(deps: PassDeps): { replicas?: readonly string[] } {
  const names = deps.replicaNames?.();
  return names ? { replicas: names } : {};
}

/**
 * A replacement this pass did or can see: its claims are read whatever the daemon remembers, to clear the
 * predecessor mark once the new device has resilvered.
 */
function replacementVisible(cspi: CSPI, observation: Observation, outcomes: readonly Outcome[]): boolean {
  if (findCondition(cspi.status?.conditions, CONDITION.diskReplacement)?.status === "True") return true;
  if (outcomes.some((o) => o.action.kind === "replace" && !o.error)) return true;
  const pool = observation.pool?.status;
  if (!pool) return false;
  const hasReplacing = (vdevs: typeof pool.layout.data): boolean =>
    vdevs.some((v) => v.kind === "replacing" || hasReplacing(v.children));
  return (
    hasReplacing(pool.layout.data) ||
    hasReplacing(pool.layout.logs) ||
    (pool.scan.activity === "resilver" && pool.scan.inProgress)
  );
}
