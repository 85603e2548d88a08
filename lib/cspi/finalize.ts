// cspi-finalize's answer: the CSPI is being deleted, so its pool Deployment goes first (the node daemon cannot destroy a pool that a pool pod still serves). finalized: true only once
// Metacontroller observes no attachment at all. The CSPI's health is still reported while it waits.
import type { Clock, CSPI, DecoratorSyncRequest, DecoratorSyncResponse } from "../../api/types.js";
import type { HookConfig } from "../hook-config.js";
import { observedPoolDeployment } from "./deployment.js";
import { leaseRenewals } from "./heartbeat.js";
import { cspiHealth } from "./status.js";

export function answerCspiFinalize(
  request: DecoratorSyncRequest<CSPI>,
  clock: Clock,
  config: HookConfig,
): DecoratorSyncResponse {
  const remaining = Object.values(request.attachments).reduce(
    (n, objects) => n + Object.keys(objects ?? {}).length,
    0,
  );
  const health = cspiHealth(
    {
      cspi: request.object,
      deployment: observedPoolDeployment(request),
      deleting: true,
      leaseRenewals: leaseRenewals(request.related, request.object.spec?.hostName),
    },
    clock(),
    config,
  );
  return {
    labels: {},
    annotations: {},
    status: health.status,
    attachments: [],
    resyncAfterSeconds: health.resyncAfterSeconds,
    finalized: remaining === 0,
  };
}
