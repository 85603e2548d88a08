// The Events cspc-sync wants on its CSPC (docs/adr/0029-events-on-the-cspc-computed-by-cspc-sync-as-data.md): plain data from the status it computed, held
// against the status the request carries. The hook server writes them after answering; they are never part of
// the answer. No message holds a clock value, so the same finding is the same Event, counted up.
import { LABEL } from "../../api/constants.js";
import type { Condition, CSPC, CSPCStatus } from "../../api/types.js";
import type { CoreEvent } from "../events/recorder.js";
import { CSPC_CONDITION } from "./status.js";
import { MAX_EVENT_MESSAGE as MAX_MESSAGE } from "../events/recorder.js";

/**
 * Conditions that ask the user to act, in the reasons that do: a Warning on every sync while they hold (the
 * recorder counts the repeats). Any other reason of theirs (replicas moving off a removed pool) is progress.
 */
const ACT_NOW: Readonly<Record<string, readonly string[]>> = {
  [CSPC_CONDITION.specRejected]: ["ChangesRejected"],
  [CSPC_CONDITION.provisioningBlocked]: ["PoolsBlocked"],
  [CSPC_CONDITION.removalBlocked]: ["PoolHoldsVolumes"],
  [CSPC_CONDITION.unreadable]: ["ObjectsSkipped"],
};

export function cspcEvents(cspc: CSPC, next: CSPCStatus): CoreEvent[] {
  const before = cspc.status;
  const events: CoreEvent[] = [];
  for (const condition of next.conditions ?? []) {
    if (condition.type === CSPC_CONDITION.ready) continue;
    const previous = before?.conditions?.find((c) => c.type === condition.type);
    if (condition.status === "True" && ACT_NOW[condition.type]?.includes(condition.reason))
      events.push(eventOf("Warning", condition, cspc));
    else if (changed(previous, condition) && (condition.status === "True" || previous?.status === "True"))
      events.push(eventOf("Normal", condition, cspc));
  }
  events.push(...healthEvents(cspc, next));
  return events;
}

/** A pool became healthy (all of them: Ready), or one stopped being healthy although none was removed. */
function healthEvents(cspc: CSPC, next: CSPCStatus): CoreEvent[] {
  const before = cspc.status;
  if (before?.healthyInstances === undefined || next.healthyInstances === undefined) return [];
  const ready = next.conditions?.find((c) => c.type === CSPC_CONDITION.ready);
  const wasReady = before.conditions?.find((c) => c.type === CSPC_CONDITION.ready)?.status === "True";
  if (ready?.status === "True" && (!wasReady || next.healthyInstances > before.healthyInstances))
    return [eventOf("Normal", ready, cspc)];
  return healthCountEvents(cspc, before, next);
}

/** The count of healthy pools went up, or down while no pool was removed. */
function healthCountEvents(cspc: CSPC, before: CSPCStatus, next: CSPCStatus): CoreEvent[] {
  const was = before.healthyInstances ?? 0;
  const is = next.healthyInstances ?? 0;
  const counted = `${is} of ${next.desiredInstances ?? is} pools are ONLINE with their pool pod available`;
  if (is > was) return [{ type: "Normal", reason: "PoolOnline", message: counted }];
  if (is >= was || (next.provisionedInstances ?? 0) < (before.provisionedInstances ?? 0)) return [];
  const selector = `${LABEL.cspc}=${cspc.metadata.name ?? ""}`;
  return [
    {
      type: "Warning",
      reason: "PoolsNotHealthy",
      message: `${counted}, ${was} before: kubectl -n ${cspc.metadata.namespace ?? "default"} get cspi -l ${selector} shows which, and each one's conditions why`,
    },
  ];
}

function changed(previous: Condition | undefined, next: Condition): boolean {
  return (
    !previous ||
    previous.status !== next.status ||
    previous.reason !== next.reason ||
    previous.message !== next.message
  );
}

/**
 * The condition as an Event. An Event's message is cut at 1,024 characters (runtime/kube-event-writer.ts): a longer
 * one (several refusals joined) says where the whole of it is.
 */
function eventOf(type: CoreEvent["type"], condition: Condition, cspc: CSPC): CoreEvent {
  if (condition.message.length <= MAX_MESSAGE)
    return { type, reason: condition.reason, message: condition.message };
  const rest = ` … (the rest: kubectl -n ${cspc.metadata.namespace ?? "default"} get cspc ${cspc.metadata.name ?? ""} -o yaml, condition ${condition.type})`;
  return {
    type,
    reason: condition.reason,
    message: `${condition.message.slice(0, MAX_MESSAGE - rest.length)}${rest}`,
  };
}
