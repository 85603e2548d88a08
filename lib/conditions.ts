import type { Condition } from "../api/types.js";

export type ConditionStatus = Condition["status"];

export interface ConditionInput {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
}

/**
 * The next condition, given the previous list. lastTransitionTime moves only when status flips (as
 * apimachinery's SetStatusCondition); lastUpdateTime moves when status, reason or message changes. Both
 * come from `now` only on a change, so the same observation always yields the same condition. A condition
 * an older release wrote has no lastUpdateTime: its lastTransitionTime is the latest change on record.
 */
export function nextCondition(
  previous: readonly Condition[] | undefined,
  input: ConditionInput,
  now: Date,
  observedGeneration?: number,
): Condition {
  const before = previous?.find((c) => c.type === input.type);
  const sameStatus = !!before && before.status === input.status && !!before.lastTransitionTime;
  const lastTransitionTime = sameStatus ? before.lastTransitionTime : formatTime(now);
  const sameContent = sameStatus && before.reason === input.reason && before.message === input.message;
  const lastUpdateTime = sameContent ? (before.lastUpdateTime ?? before.lastTransitionTime) : formatTime(now);
  const condition: Condition = { ...input, lastTransitionTime, lastUpdateTime };
  if (observedGeneration !== undefined) condition.observedGeneration = observedGeneration;
  return condition;
}

/**
 * The phase with the time it last changed: carried from the observed status while the phase stays, the
 * clock's time when it changes (or when an older status has none on record).
 */
export function phaseWithTime<P extends string>(
  observed: { phase?: string; phaseLastTransitionTime?: string } | undefined,
  phase: P,
  now: Date,
): { phase: P; phaseLastTransitionTime: string } {
  const kept = observed?.phase === phase && observed.phaseLastTransitionTime;
  return { phase, phaseLastTransitionTime: kept || formatTime(now) };
}

/** Replaces or adds conditions by type, keeping the others in their order; sorted by type for stable output. */
export function mergeConditions(
  previous: readonly Condition[] | undefined,
  updates: readonly Condition[],
): Condition[] {
  const byType = new Map<string, Condition>();
  for (const c of previous ?? []) byType.set(c.type, c);
  for (const c of updates) byType.set(c.type, c);
  return [...byType.values()].sort((a, b) => a.type.localeCompare(b.type));
}

export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** RFC 3339 with second precision, as Kubernetes metav1.Time serialises. */
export function formatTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}
