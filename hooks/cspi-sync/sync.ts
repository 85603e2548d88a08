// POST /hooks/cspi-sync (DecoratorController on CStorPoolInstances, hook version v2): a CSPI and its observed
// pool Deployment → the desired Deployment and the CSPI status fields this hook owns. A pure function of the
// request, the clock and the configuration.
import { DEFAULTS, KIND } from "../../api/constants.js";
import type { Clock, CSPI, DecoratorSyncResponse } from "../../api/types.js";
import { isTerminating } from "../../lib/inventory.js";
import { parseDecoratorRequest } from "../../lib/request.js";
import type { HookConfig } from "../config.js";
import { finalizeCspiRequest } from "../finalize/cspi.js";
import { isApplied, observedPoolDeployment, poolDeployment } from "./deployment.js";
import { cspiHealth } from "./status.js";

export function syncCspi(body: unknown, clock: Clock, config: HookConfig): DecoratorSyncResponse {
  const request = parseDecoratorRequest(body, KIND.cspi);
  // The finalize hook may point here too; answering a plain sync would never let the CSPI go.
  if (request.finalizing) return finalizeCspiRequest(request, clock, config);
  const cspi = request.object as unknown as CSPI;
  const deployment = observedPoolDeployment(request);
  const desired = poolDeployment(cspi, config.poolPod);
  const health = cspiHealth(cspi, deployment, clock(), config, isTerminating(request.object));
  // Until Metacontroller has applied the Deployment, this sync may be given up on a conflict with nothing
  // else to trigger the next one (docs/decisions.md, 12).
  const resyncAfterSeconds = isApplied(desired, deployment)
    ? health.resyncAfterSeconds
    : Math.min(health.resyncAfterSeconds, DEFAULTS.attachmentResyncSeconds);
  return {
    labels: {},
    annotations: {},
    status: health.status as Record<string, unknown>,
    attachments: [desired],
    resyncAfterSeconds,
  };
}
