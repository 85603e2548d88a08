// The CSPI status fields this hook owns (docs/architecture.md, "Status ownership"): the PodAvailable,
// NodeDaemonHeartbeat and RolloutPending conditions, pendingRollout (lib/cspi/rollout.ts), phase Unknown while
// the node daemon's heartbeat is stale, and phase PodUnavailable while the pool pod is not (lib/cspi/phase.ts;
// the node daemon writes the zpool's state back once the pod is available again). Everything else is the node daemon's and is returned exactly as observed, in the observed order, so the hook and the
// node daemon never undo each other's writes. Messages carry no clock-derived values: the same observation
// gives the same status, and a stale CSPI is written once, not on every resync.
import { CSPI_CONDITION } from "../../api/constants.js";
import { CSPIStatusSchema } from "../../api/schema.js";
import type { Condition, CSPI, CSPIStatus, KubeObject } from "../../api/types.js";
import { formatTime, nextCondition, phaseWithTime, type ConditionInput } from "../conditions.js";
import { resyncUntilSeen } from "../confirm-status.js";
import { poolDeploymentName } from "../names.js";
import { isTerminating } from "../inventory.js";
import { lastReport, type LastReport } from "./heartbeat.js";
import { servingPhase } from "./phase.js";
import type { RolloutDecision } from "./rollout.js";

export { CSPI_CONDITION };

const STATUS_FIELDS = new Set(Object.keys(CSPIStatusSchema.properties));

export interface HealthSettings {
  staleStatusSeconds: number;
  resyncSeconds: number;
}

export interface HealthResult {
  status: CSPIStatus;
  /**
   * When a fresh heartbeat turns stale, or the resync bound, whichever comes first; sooner while the status
   * answered is not the one observed (a write Metacontroller may give up on a conflict).
   */
  resyncAfterSeconds: number;
}

/** A CSPI as the hook sees it: with its observed pool Deployment, if any. */
export interface ObservedCspi {
  cspi: CSPI;
  deployment: KubeObject | undefined;
  /** The CSPI is on its way out, so a missing Deployment is expected rather than about to be recreated. */
  deleting: boolean;
  /** The renewTimes of its node daemon's Lease (lib/cspi/heartbeat.ts); none from an older daemon. */
  leaseRenewals?: readonly string[];
}

/** The observed status with the hook's fields brought up to date. */
export function cspiHealth(
  pool: ObservedCspi,
  now: Date,
  settings: HealthSettings,
  rollout?: Pick<RolloutDecision, "condition" | "pending">,
): HealthResult {
  const { cspi } = pool;
  const observed: CSPIStatus = cspi.status ?? {};
  const podAvailable = podAvailability(pool);
  const heartbeat = heartbeatOf(lastReport(cspi, pool.leaseRenewals ?? []), cspi, now, settings);

  const status = storedFields(observed);
  status.conditions = replaceConditions(observed.conditions, [
    nextCondition(observed.conditions, podAvailable, now),
    nextCondition(observed.conditions, heartbeat.condition, now),
    ...(rollout ? [nextCondition(observed.conditions, rollout.condition, now)] : []),
  ]);
  if (rollout?.pending) status.pendingRollout = rollout.pending;
  else if (rollout) delete status.pendingRollout;
  if (heartbeat.stale) Object.assign(status, phaseWithTime(observed, "Unknown", now));
  else if (observed.phase)
    Object.assign(status, phaseWithTime(observed, servingPhase(observed.phase, status.conditions), now));
  return {
    status,
    resyncAfterSeconds: resyncUntilSeen(storedFields(observed), status, heartbeat.resyncAfterSeconds),
  };
}

/** Only the fields the CRD knows: the API server prunes any other when the status is written. */
function storedFields(observed: CSPIStatus): CSPIStatus {
  return Object.fromEntries(Object.entries(observed).filter(([key]) => STATUS_FIELDS.has(key)));
}

export function podAvailability({ cspi, deployment, deleting }: ObservedCspi): ConditionInput {
  const namespace = cspi.metadata.namespace ?? "default";
  const name = `${namespace}/${poolDeploymentName(cspi.metadata.name ?? "")}`;
  const type = CSPI_CONDITION.podAvailable;
  if (!deployment || isTerminating(deployment)) {
    const message = missingDeploymentMessage(name, deployment !== undefined, deleting);
    return { type, status: "False", reason: "MissingPoolDeployment", message };
  }

  const status = (deployment.status ?? {}) as DeploymentCounts;
  const generation = deployment.metadata.generation ?? 0;
  const rolledOut = (status.observedGeneration ?? 0) >= generation && (status.updatedReplicas ?? 0) >= 1;
  const available = status.availableReplicas ?? 0;
  if (available >= 1 && rolledOut) {
    return {
      type,
      status: "True",
      reason: "PoolPodAvailable",
      message: `the pool pod of Deployment ${name} is available`,
    };
  }
  const selector = `-l openebs.io/cstor-pool-instance=${cspi.metadata.name}`;
  const message = !rolledOut
    ? `pool Deployment ${name} is replacing its pod after a change of node, resources or tolerations (Recreate: the old pod stops first)`
    : `pool Deployment ${name} has no available pod (${readyOf(status)}): see kubectl -n ${namespace} describe pods ${selector}`;
  return { type, status: "False", reason: "PoolPodNotReady", message };
}

type DeploymentCounts = Record<string, number | undefined>;

function missingDeploymentMessage(name: string, beingDeleted: boolean, cspiDeleting: boolean): string {
  if (cspiDeleting)
    return `pool Deployment ${name} is removed because the CStorPoolInstance is being deleted`;
  return beingDeleted
    ? `pool Deployment ${name} is being deleted; it is created again once it is gone`
    : `pool Deployment ${name} does not exist; it is being created`;
}

function readyOf(status: DeploymentCounts): string {
  return `${status.readyReplicas ?? 0} of ${status.replicas ?? 0} ready`;
}

interface Heartbeat {
  stale: boolean;
  condition: ConditionInput;
  resyncAfterSeconds: number;
}

function heartbeatOf(report: LastReport, cspi: CSPI, now: Date, settings: HealthSettings): Heartbeat {
  const type = CSPI_CONDITION.heartbeat;
  const bound = settings.staleStatusSeconds;
  const node = cspi.spec?.hostName ?? "its node";
  const reportedAt = report.at ? Date.parse(report.at) : Number.NaN;
  if (Number.isNaN(reportedAt)) {
    const message = report.unreadable
      ? `status.lastUpdateTime ${JSON.stringify(report.unreadable)} is not an RFC 3339 time; the node daemon on ${node} writes it`
      : `the node daemon on ${node} has not reported this pool yet`;
    return {
      stale: false,
      condition: { type, status: "Unknown", reason: "NoHeartbeat", message },
      resyncAfterSeconds: settings.resyncSeconds,
    };
  }
  const ageSeconds = (now.getTime() - reportedAt) / 1000;
  if (ageSeconds > bound) {
    return {
      stale: true,
      condition: {
        type,
        status: "False",
        reason: "HeartbeatStale",
        message:
          `the node daemon on ${node} last reported at ${formatTime(new Date(reportedAt))}, more than ${bound}s ago, so the pool's phase is Unknown ` +
          `until it reports again: check the node and the node daemon pod on it`,
      },
      resyncAfterSeconds: settings.resyncSeconds,
    };
  }
  return {
    stale: false,
    condition: {
      type,
      status: "True",
      reason: "HeartbeatFresh",
      message: `the node daemon reported within the last ${bound}s`,
    },
    resyncAfterSeconds: Math.max(1, Math.min(settings.resyncSeconds, Math.floor(bound - ageSeconds) + 1)),
  };
}

/** Replaces conditions of the same type where they are and appends new ones: the observed order stays. */
function replaceConditions(
  observed: readonly Condition[] | undefined,
  updates: readonly Condition[],
): Condition[] {
  const out = [...(observed ?? [])];
  for (const update of updates) {
    const at = out.findIndex((c) => c.type === update.type);
    if (at >= 0) out[at] = update;
    else out.push(update);
  }
  return out;
}
