import type { Condition } from "../api/types.js";

export type ConditionStatus = Condition["status"];

export interface ConditionInput {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
}

/**
 * The next condition, given the previous list: lastTransitionTime moves only when status flips (as
 * apimachinery's SetStatusCondition), so the same observation always yields the same condition.
 */
export function nextCondition(
  previous: readonly Condition[] | undefined,
  input: ConditionInput,
  now: Date,
  observedGeneration?: number,
): Condition {
  const before = previous?.find((c) => c.type === input.type);
  const lastTransitionTime =
    before && before.status === input.status && before.lastTransitionTime
      ? before.lastTransitionTime
      : formatTime(now);
  const condition: Condition = { ...input, lastTransitionTime };
  if (observedGeneration !== undefined) condition.observedGeneration = observedGeneration;
  return condition;
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

export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** RFC 3339 with second precision, as Kubernetes metav1.Time serialises. */
export function formatTime(date: Date): string {
  return date.toISOString().replace(/\.\d{3}Z$/, "Z");
}
