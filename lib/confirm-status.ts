// A DecoratorController's status write that loses a 409 (the node daemon or the target agent wrote first) is
// given up by Metacontroller v4.17.2 with no requeue, and the write that beat it changes only status, which
// ignoreStatusChanges hides. The resync a hook asks for is enqueued before that write, so a hook asks for a
// short one until it observes what it answered (docs/adr/0042-a-decorator-asks-for-a-short-resync-until-its-status.md).
import { isDeepStrictEqual } from "node:util";
import { DEFAULTS } from "../api/constants.js";

/** `otherwise` once the observed status is the answered one; until then at most `confirmResyncSeconds`. */
export function resyncUntilSeen(observed: unknown, answered: unknown, otherwise: number): number;
export function resyncUntilSeen(observed: unknown, answered: unknown): number | undefined;
export function resyncUntilSeen(
  observed: unknown,
  answered: unknown,
  otherwise?: number,
): number | undefined {
  if (isDeepStrictEqual(observed ?? {}, answered ?? {})) return otherwise;
  return Math.min(otherwise ?? Infinity, DEFAULTS.confirmResyncSeconds);
}
