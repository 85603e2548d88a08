// Finalize hooks tear things down, so they refuse to run for an object that is not going away: a
// misconfigured controller (finalize URL given as the sync hook) must not delete a healthy pool.
import type { KubeObject } from "../../api/types.js";
import { BadRequestError } from "../../lib/errors.js";
import { isTerminating } from "../../lib/inventory.js";

export function requireDeletion(object: KubeObject, finalizing: boolean, syncPath: string): void {
  if (finalizing || isTerminating(object)) return;
  const { namespace, name } = object.metadata;
  throw new BadRequestError(
    `${object.kind} ${namespace ?? ""}/${name} is not being deleted (finalizing is false and it has no deletionTimestamp): ` +
      `this is a finalize hook; point the controller's sync hook at ${syncPath}`,
  );
}
