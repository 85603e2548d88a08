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
  /**
   * When the named node's daemon last renewed its Lease (RFC 3339), undefined when it has none; it throws when
   * the Lease cannot be read. Absent in local mode.
   */
  holderRenewedAt?: (node: string) => Promise<string | undefined>;
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
  const pass: PassSoFar = { current: cspi, outcomes: [], ineffective: [], lastPlan: NOTHING_PLANNED };
  const target = cspi.spec?.hostName === deps.hostName;

  for (let step = 0; step < MAX_STEPS && pass.current; step++) {
    const seen = await observeStep(pass.current, deps, target, pass.outcomes);
    pass.observation = seen.observation;
    pass.observationError = seen.error;
    if (!seen.observation) break;
    pass.lastPlan = planStep(pass.current, seen.observation, deps);
    pass.firstPlan ??= pass.lastPlan;
    if (deps.dryRun || deps.stopping?.()) break;
    const next = pass.lastPlan.actions.find((a) => !deps.suppressed?.(a));
    if (!next) break;
    if (pass.outcomes.some((o) => o.action.key === next.key && !o.error)) {
      pass.ineffective.push(next);
      break;
    }
    const done = await actStep(next, pass.current, deps, cspi.metadata.name);
    pass.outcomes.push(done.outcome);
    if (done.outcome.error !== undefined) break;
    pass.current = done.cspi;
  }
  return passResult(cspi, pass, deps, target);
}

/** What a pass has seen and done so far. */
interface PassSoFar {
  current: CSPI | undefined;
  outcomes: Outcome[];
  ineffective: Action[];
  firstPlan?: Plan;
  lastPlan: Plan;
  observation?: Observation;
  observationError?: string;
}

const NOTHING_PLANNED: Plan = { actions: [], holds: [], statusOwner: false };

/** The CSPI's pool and devices, with its claims when they matter; an unreadable host is an error, logged. */
async function observeStep(
  current: CSPI,
  deps: PassDeps,
  target: boolean,
  outcomes: readonly Outcome[],
): Promise<{ observation?: Observation; error?: string }> {
  try {
    const observation = await observe(deps.host, deps.inspect, current, {
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
        deps.logger.warn("cannot read the claims", { cspi: current.metadata.name, error: error.message });
        return undefined;
      });
      if (claims) observation.claims = claims;
    }
    const holderRenewedAt = await readHolderLease(current, deps);
    if (holderRenewedAt) observation.holderRenewedAt = holderRenewedAt;
    return { observation };
  } catch (error) {
    const message = (error as Error).message;
    deps.logger.warn("observation failed", { cspi: current.metadata.name, error: message });
    return { error: message };
  }
}

/**
 * The Lease renewal of the node that holds the pool elsewhere, for the import handshake. Fail closed: a Lease
 * that cannot be read counts as renewed now, so a pool is never imported beside a holder that may be alive.
 */
async function readHolderLease(current: CSPI, deps: PassDeps): Promise<string | undefined> {
  const holder = current.status?.importedOn ?? "";
  if (!deps.holderRenewedAt || holder === "" || holder === deps.nodeName) return undefined;
  try {
    return await deps.holderRenewedAt(holder);
  } catch (error) {
    deps.logger.warn("cannot read the holder node's Lease; counting it alive", {
      cspi: current.metadata.name,
      node: holder,
      error: (error as Error).message,
    });
    return deps.clock().toISOString();
  }
}

function planStep(current: CSPI, observation: Observation, deps: PassDeps): Plan {
  return plan({
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
}

/** Runs one action, logged and timed: its outcome, and the CSPI afterwards when it succeeded. */
async function actStep(
  next: Action,
  current: CSPI,
  deps: PassDeps,
  name: string | undefined,
): Promise<{ outcome: Outcome; cspi?: CSPI }> {
  const started = performance.now();
  try {
    const after = await execute(next, current, deps.host, deps.api);
    deps.logger.info(describeAction(next), { cspi: name, action: next.kind });
    deps.onAction?.({ action: next, durationMs: performance.now() - started });
    return { outcome: { action: next }, ...(after ? { cspi: after } : {}) };
  } catch (error) {
    const message = (error as Error).message;
    deps.logger.warn("action failed", { cspi: name, action: next.kind, error: message });
    deps.onAction?.({ action: next, error: message, durationMs: performance.now() - started });
    return { outcome: { action: next, error: message } };
  }
}

/** The pass's result, with the status it reports when this node owns it or did something. */
async function passResult(cspi: CSPI, pass: PassSoFar, deps: PassDeps, target: boolean): Promise<PassResult> {
  const { current, observation, observationError, lastPlan, outcomes } = pass;
  const result: PassResult = {
    firstPlan: pass.firstPlan ?? lastPlan,
    plan: lastPlan,
    outcomes,
    ineffective: pass.ineffective,
  };
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
