// POST /hooks/cspi-finalize (DecoratorController finalize): the CSPI is being deleted, so its pool Deployment
// goes first (the node daemon cannot destroy a pool that a pool pod still serves). finalized: true only once
// Metacontroller observes no attachment at all. The CSPI's health is still reported while it waits.
import { KIND } from "../../api/constants.js";
import type { Clock, CSPI, DecoratorSyncRequest, DecoratorSyncResponse } from "../../api/types.js";
import { parseDecoratorRequest } from "../../lib/request.js";
import type { HookConfig } from "../config.js";
import { observedPoolDeployment } from "../cspi-sync/deployment.js";
import { cspiHealth } from "../cspi-sync/status.js";
import { requireDeletion } from "./deletion.js";

export function finalizeCspi(body: unknown, clock: Clock, config: HookConfig): DecoratorSyncResponse {
  const request = parseDecoratorRequest(body, KIND.cspi);
  requireDeletion(request.object, request.finalizing, "/hooks/cspi-sync");
  return finalizeCspiRequest(request, clock, config);
}

export function finalizeCspiRequest(request: DecoratorSyncRequest, clock: Clock, config: HookConfig): DecoratorSyncResponse {
  const remaining = Object.values(request.attachments).reduce((n, objects) => n + Object.keys(objects ?? {}).length, 0);
  const health = cspiHealth(request.object as unknown as CSPI, observedPoolDeployment(request), clock(), config, true);
  return {
    labels: {},
    annotations: {},
    status: health.status as Record<string, unknown>,
    attachments: [],
    resyncAfterSeconds: health.resyncAfterSeconds,
    finalized: remaining === 0,
  };
}
