// CSPC status: counts and conditions, a pure function of the request and the clock. Every condition type is
// always present, so `kubectl get cspc -o yaml` shows the whole picture and nothing appears or vanishes.
import { CSPI_CONDITION } from "../../api/constants.js";
import type { Condition, CSPC, CSPCStatus, CSPI, UnreadableObject } from "../../api/types.js";
import type { CSPC_PHASES } from "../../api/schema.js";
import { findCondition, nextCondition, phaseWithTime, type ConditionInput } from "../conditions.js";
import { describeHeld, heldVolumesFix, type HeldVolumes } from "../rules/held-volumes.js";
import { isTerminating } from "../inventory.js";
import type { Violation } from "../rules/pool-spec.js";
import { UNREADABLE_CONDITION, unreadableCondition } from "./unreadable.js";

export const CSPC_CONDITION = {
  ready: "Ready",
  provisioningBlocked: "ProvisioningBlocked",
  claimsPending: "ClaimsPending",
  specRejected: "PoolSpecRejected",
  progressing: "Progressing",
  paused: "ReconcilePaused",
  removalBlocked: "PoolRemovalBlocked",
  unreadable: UNREADABLE_CONDITION,
} as const;

export interface RemovalBlocked {
  cspi: CSPI;
  held: HeldVolumes;
  /** Kept marked while its volumes move their replicas off it (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md): every replica on it is a readable CVR. */
  moving?: boolean;
}

/** A removed pool whose CSPI is being deleted, which its node daemon will not destroy (it found data on it). */
export interface DestroyRefused {
  cspi: CSPI;
  /** The node daemon's PoolDestroyBlocked message: what it found, and what to do. */
  message: string;
}

/** Why a removed pool is kept: moving its replicas, or held with what to do. */
export function removalBlockedText({ cspi, held, moving }: RemovalBlocked): string {
  if (moving) {
    return (
      `${describeHeld(cspi, held)} and was removed from the spec: it stays, marked for removal, while its volumes move their replicas to other pools ` +
      `(condition ReplicaChange of each CStorVolumeConfig); it is removed once it holds none`
    );
  }
  return `${describeHeld(cspi, held)} and was removed from the spec, so it is kept: ${heldVolumesFix(cspi, held)}, or add its pool spec back`;
}

export function destroyRefusedText({ cspi, message }: DestroyRefused): string {
  const namespace = cspi.metadata.namespace ?? "<namespace>";
  return (
    `${message} (CStorPoolInstance ${namespace}/${cspi.metadata.name} is deleted once it is destroyed; ` +
    `its Events: kubectl describe cspi ${cspi.metadata.name} -n ${namespace})`
  );
}

/** CSPIs being deleted whose node daemons say they will not destroy the pool: shown on the CSPC, not only in Events. */
export function destroyRefusedPools(cspis: readonly CSPI[]): DestroyRefused[] {
  return cspis.flatMap((cspi) => {
    const blocked = findCondition(cspi.status?.conditions, CSPI_CONDITION.poolDestroyBlocked);
    if (!isTerminating(cspi) || blocked?.status !== "True") return [];
    return [{ cspi, message: blocked.message ?? blocked.reason }];
  });
}

/** What the sync decided, as far as status needs to know. */
export interface SyncFindings {
  /** Pools not provisioned (or not changed) because of a violation. */
  blocked: Violation[];
  /** Devices whose claims are not Bound yet, per CSPI name. */
  pendingClaims: Map<string, string[]>;
  /** Pools on device sets and their PVCs not Bound yet (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md). */
  pendingVolumeClaims?: Map<string, string[]>;
  /** Day-2 changes refused; the CSPI keeps its spec. */
  rejected: Violation[];
  /** Disruptive day-2 changes: the pool being changed now and the pools waiting for it. */
  progressing: { active: string[]; waiting: string[] };
  paused: boolean;
  /** CSPIs whose pool spec is gone but which still hold volumes, or may. */
  removalBlocked: RemovalBlocked[];
  /** Removed pools being deleted whose node daemons will not destroy them. */
  destroyRefused?: DestroyRefused[];
  /** Children and related objects of the request the hook could not use. */
  unreadable: UnreadableObject[];
}

const MAX_MESSAGE = 4000;

/** Joins messages, cut to a readable length with a count of what was left out. */
export function joinMessages(messages: readonly string[]): string {
  const unique = [...new Set(messages)];
  let out = "";
  for (let i = 0; i < unique.length; i++) {
    const next = out ? `${out}; ${unique[i]}` : unique[i];
    if (next.length > MAX_MESSAGE) return `${out}; and ${unique.length - i} more`;
    out = next;
  }
  return out;
}

export function isCspiHealthy(cspi: CSPI): boolean {
  return (
    cspi.status?.phase === "ONLINE" &&
    findCondition(cspi.status?.conditions, CSPI_CONDITION.podAvailable)?.status === "True"
  );
}

export function computeStatus(
  cspc: CSPC,
  observed: readonly CSPI[],
  findings: SyncFindings,
  now: Date,
): CSPCStatus {
  const previous = cspc.status?.conditions;
  const generation = cspc.metadata.generation;
  const counts: PoolCounts = {
    desired: cspc.spec?.pools?.length ?? 0,
    provisioned: observed.length,
    healthy: observed.filter(isCspiHealthy).length,
  };
  const flags = [
    blockedCondition(findings),
    claimsPendingCondition(findings, cspc.metadata.namespace ?? "default"),
    rejectedCondition(findings),
    progressingCondition(findings),
    pausedCondition(findings),
    removalBlockedCondition(findings),
    unreadableCondition(findings.unreadable, joinMessages),
  ];
  const problems = flags.filter((c) => c.status === "True" && c.type !== CSPC_CONDITION.progressing);
  const conditions: Condition[] = [...flags, readyCondition(counts, problems)]
    .map((input) => nextCondition(previous, input, now, generation))
    .sort((a, b) => a.type.localeCompare(b.type));
  const { active, waiting } = findings.progressing;
  const phase = cspcPhase({
    ...counts,
    changing:
      active.length + waiting.length > 0 ||
      findings.pendingClaims.size > 0 ||
      (findings.pendingVolumeClaims?.size ?? 0) > 0,
    blocked: problems.some((c) => c.type !== CSPC_CONDITION.claimsPending),
  });
  const status: CSPCStatus = {
    desiredInstances: counts.desired,
    provisionedInstances: counts.provisioned,
    healthyInstances: counts.healthy,
    conditions,
    ...phaseWithTime(cspc.status, phase, now),
  };
  if (generation !== undefined) status.observedGeneration = generation;
  return status;
}

type PoolCounts = Pick<PhaseInputs, "desired" | "provisioned" | "healthy">;

/** The reason and message of a condition in one of its two states. */
type ConditionState = Pick<ConditionInput, "reason" | "message">;

/** A condition that is True with `ifTrue` when `on`, else False with `ifFalse`. */
function flagCondition(
  type: string,
  on: boolean,
  ifTrue: ConditionState,
  ifFalse: ConditionState,
): ConditionInput {
  return on ? { type, status: "True", ...ifTrue } : { type, status: "False", ...ifFalse };
}

function blockedCondition(findings: SyncFindings): ConditionInput {
  return flagCondition(
    CSPC_CONDITION.provisioningBlocked,
    findings.blocked.length > 0,
    { reason: "PoolsBlocked", message: joinMessages(findings.blocked.map((v) => v.message)) },
    { reason: "NoneBlocked", message: "every pool spec is valid and its block devices are usable" },
  );
}

function claimsPendingCondition(findings: SyncFindings, namespace: string): ConditionInput {
  const pending = [...findings.pendingClaims.entries()].sort(([a], [b]) => a.localeCompare(b));
  const pendingVolumes = [...(findings.pendingVolumeClaims ?? new Map<string, string[]>()).entries()].sort(
    ([a], [b]) => a.localeCompare(b),
  );
  const message = joinMessages([
    ...pending.map(
      ([cspi, devices]) =>
        `pool ${cspi} waits for ${devices.length} BlockDeviceClaim(s) to be Bound (${devices.join(", ")}); NDM binds them, without NDM bind them by hand`,
    ),
    ...pendingVolumes.map(
      ([cspi, pvcs]) =>
        `pool ${cspi} waits for ${pvcs.length} PersistentVolumeClaim(s) of its device sets to be Bound (${pvcs.join(", ")}); their StorageClass binds them if its volumeBindingMode is Immediate (a WaitForFirstConsumer class waits for a pod, and none is started for them in this release): kubectl -n ${namespace} describe pvc ${pvcs[0]}`,
    ),
  ]);
  return flagCondition(
    CSPC_CONDITION.claimsPending,
    pending.length + pendingVolumes.length > 0,
    { reason: "WaitingForClaims", message },
    { reason: "AllClaimsBound", message: "every block device of every pool is claimed" },
  );
}

function rejectedCondition(findings: SyncFindings): ConditionInput {
  return flagCondition(
    CSPC_CONDITION.specRejected,
    findings.rejected.length > 0,
    { reason: "ChangesRejected", message: joinMessages(findings.rejected.map((v) => v.message)) },
    { reason: "NoneRejected", message: "every change to the spec was carried into the pools" },
  );
}

function progressingCondition(findings: SyncFindings): ConditionInput {
  const { active, waiting } = findings.progressing;
  const message = [
    active.length ? `updating: ${active.join(", ")}` : "",
    waiting.length
      ? `waiting (one disruptive change at a time, while all other pools are ONLINE): ${waiting.join(", ")}`
      : "",
  ]
    .filter(Boolean)
    .join("; ");
  return flagCondition(
    CSPC_CONDITION.progressing,
    active.length + waiting.length > 0,
    { reason: "PoolUpdateInProgress", message },
    { reason: "NoUpdatesPending", message: "no disruptive change is in flight" },
  );
}

function pausedCondition(findings: SyncFindings): ConditionInput {
  return flagCondition(
    CSPC_CONDITION.paused,
    findings.paused,
    {
      reason: "PausedByAnnotation",
      message: "day-2 changes are held by annotation openebs.io/reconcile-paused=true; remove it to continue",
    },
    { reason: "NotPaused", message: "day-2 changes are applied as they come" },
  );
}

function removalBlockedCondition(findings: SyncFindings): ConditionInput {
  const refused = findings.destroyRefused ?? [];
  return flagCondition(
    CSPC_CONDITION.removalBlocked,
    findings.removalBlocked.length + refused.length > 0,
    {
      reason:
        refused.length === 0 && findings.removalBlocked.every((b) => b.moving)
          ? "ReplicasMoving"
          : "PoolHoldsVolumes",
      message: joinMessages([
        ...refused.map(destroyRefusedText),
        ...findings.removalBlocked.map(removalBlockedText),
      ]),
    },
    { reason: "NoneBlocked", message: "no removed pool holds volumes" },
  );
}

/** Ready when no condition but Progressing says True and every pool is provisioned and healthy. */
function readyCondition(counts: PoolCounts, problems: readonly ConditionInput[]): ConditionInput {
  const { desired, provisioned, healthy } = counts;
  if (problems.length === 0 && desired === provisioned && provisioned === healthy) {
    return {
      type: CSPC_CONDITION.ready,
      status: "True",
      reason: "AllPoolsHealthy",
      message: `${healthy} of ${desired} pools are ONLINE with their pool pod available`,
    };
  }
  const first = problems[0];
  return {
    type: CSPC_CONDITION.ready,
    status: "False",
    reason: first ? first.reason : "PoolsNotHealthy",
    message: `${healthy} of ${desired} pools healthy, ${provisioned} provisioned${first ? `; see condition ${problems.map((p) => p.type).join(", ")}` : ""}`,
  };
}

export type CspcPhase = (typeof CSPC_PHASES)[number];

export interface PhaseInputs {
  desired: number;
  provisioned: number;
  healthy: number;
  /** A day-2 change in flight or waiting, or claims of a pool not yet Bound. */
  changing: boolean;
  /** A condition says the user must act: refused, blocked, paused, unreadable, a removal held by volumes. */
  blocked: boolean;
}

/** The CSPC's phase (api/schema.ts CSPC_PHASES says what each means), first match wins. */
export function cspcPhase(inputs: PhaseInputs): CspcPhase {
  const { desired, provisioned, healthy } = inputs;
  if (provisioned === 0) return "Pending";
  if (provisioned < desired) return "Provisioning";
  if (inputs.blocked) return "Blocked";
  if (inputs.changing || provisioned > desired) return "Changing";
  return healthy < provisioned ? "Degraded" : "Healthy";
}
