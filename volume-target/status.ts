// What the agent writes to its CStorVolume's status.target (docs/adr/0040-the-target-agent-credentials-names-and-status.md)
// and when: pure, from the last plan. The write is a JSON merge patch, so a field that disappears is sent as null.
import type { CVTargetStatus } from "../api/types.js";
import type { TargetPlan } from "./plan.js";

export type TargetState = CVTargetStatus["state"];

/** Serving while the array is assembled and enough legs are in sync, ReadOnly below that; Refused, Starting otherwise. */
export function targetState(plan: TargetPlan, consistencyFactor: number): TargetState {
  if (plan.assembled) return plan.healthy >= consistencyFactor ? "Serving" : "ReadOnly";
  return plan.refusal ? "Refused" : "Starting";
}

export interface StatusInput {
  plan: TargetPlan;
  state: TargetState;
  node: string;
  /** The array's UUID once it exists (created or assembled); kept from the previous status otherwise. */
  arrayUuid?: string;
  /** The array's size while it is assembled: what the LUN serves. */
  arraySizeBytes?: number;
  /** While the LUN is served: the initiators its ACLs admit. */
  initiators?: string[];
  consistencyFactor: number;
  /** A step that failed in the last pass, said in the message. */
  failures: string[];
  now: string;
}

export function targetStatus(input: StatusInput, previous: CVTargetStatus | undefined): CVTargetStatus {
  const { plan, state, node, failures } = input;
  const message = [messageFor(input), plan.growth, ...failures].filter(Boolean).join("; ");
  const arrayUUID = input.arrayUuid ?? previous?.arrayUUID;
  return {
    state,
    ...(message ? { message: message.slice(0, 4000) } : {}),
    node,
    ...(arrayUUID ? { arrayUUID } : {}),
    ...(input.arraySizeBytes !== undefined ? { arraySizeBytes: input.arraySizeBytes } : {}),
    ...(input.initiators ? { initiators: input.initiators } : {}),
    lastTransitionTime:
      previous?.state === state && previous.lastTransitionTime ? previous.lastTransitionTime : input.now,
    replicas: plan.replicas.map((r) => (r.message ? { ...r, message: r.message.slice(0, 1000) } : r)),
  };
}

function messageFor({ plan, state, consistencyFactor }: StatusInput): string {
  switch (state) {
    case "Serving":
      return `${plan.healthy} replica(s) in sync; writes need ${consistencyFactor}`;
    case "ReadOnly":
      return `read-only: ${plan.healthy} replica(s) in sync and writes need ${consistencyFactor}`;
    case "Refused":
      return plan.refusal ?? "";
    default:
      return plan.waiting ?? "";
  }
}

/** The merge patch from `previous` to `next`: null for the optional fields `next` dropped. */
export function statusPatch(
  next: CVTargetStatus,
  previous: CVTargetStatus | undefined,
): Record<string, unknown> | undefined {
  if (previous && sameStatus(next, previous)) return undefined;
  const patch: Record<string, unknown> = { ...next };
  for (const key of Object.keys(previous ?? {})) if (!(key in next)) patch[key] = null;
  return { status: { target: patch } };
}

/** Equal but for lastTransitionTime, which only follows state. */
function sameStatus(a: CVTargetStatus, b: CVTargetStatus): boolean {
  const strip = ({ lastTransitionTime: _, ...rest }: CVTargetStatus) => rest;
  return JSON.stringify(strip(a)) === JSON.stringify(strip(b));
}
