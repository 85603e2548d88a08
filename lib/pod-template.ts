// Parts of a pod template written the way the API server stores them, shared by the pool and the volume
// target Deployments: what the server would store differently makes Metacontroller update them on every sync.
import type { PoolConfig } from "../api/types.js";
import { BadRequestError } from "./errors.js";
import { parseQuantity, type Quantity } from "./quantity.js";

export type Resources = NonNullable<PoolConfig["resources"]>;

/**
 * Container resources with canonical quantities. What the API server would reject (not a quantity, a
 * request above its limit) is a 400 naming the field, instead of a Deployment that never gets created.
 */
export function canonicalResources(
  requirements: Resources | undefined,
  field: string,
  fix: string,
): Record<string, Record<string, string>> {
  const parsed: Partial<Record<"limits" | "requests", Map<string, Quantity>>> = {};
  for (const kind of ["limits", "requests"] as const) {
    for (const [resource, value] of Object.entries(requirements?.[kind] ?? {})) {
      const quantity = parseQuantity(value);
      if (!quantity) {
        throw new BadRequestError(
          `${field}.${kind}.${resource} ${JSON.stringify(value)} is not a non-negative Kubernetes quantity (e.g. 500m, 2Gi, 1): ${fix}`,
        );
      }
      (parsed[kind] ??= new Map()).set(resource, quantity);
    }
  }
  for (const [resource, request] of parsed.requests ?? []) {
    const limit = parsed.limits?.get(resource);
    if (limit && request.nano > limit.nano) {
      throw new BadRequestError(
        `${field}.requests.${resource} ${request.canonical} is above its limit ${limit.canonical}: a container cannot request more than its limit; ${fix}`,
      );
    }
  }
  const out: Record<string, Record<string, string>> = {};
  for (const kind of ["limits", "requests"] as const) {
    const entries = [...(parsed[kind] ?? [])].sort(([a], [b]) => a.localeCompare(b));
    if (entries.length > 0)
      out[kind] = Object.fromEntries(entries.map(([resource, q]) => [resource, q.canonical]));
  }
  return out;
}

/** The API server drops empty optional strings; emitting them would differ from what it stores. */
export function withoutEmptyFields<T extends object>(item: T): T {
  return Object.fromEntries(
    Object.entries(item).filter(([, v]) => v !== "" && v !== undefined && v !== null),
  ) as T;
}
