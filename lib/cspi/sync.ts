// cspi-sync's answer: a CSPI and its observed pool Deployment → the desired Deployment (a running pod keeps its
// template until its rollout is permitted: lib/cspi/rollout.ts) and the CSPI status fields the hook owns. A pure function of the parsed request, the clock and the configuration.
import { DEFAULTS } from "../../api/constants.js";
import type { Clock, CSPI, DecoratorSyncRequest, DecoratorSyncResponse } from "../../api/types.js";
import { isTerminating } from "../inventory.js";
import type { HookConfig } from "../hook-config.js";
import { answerCspiFinalize } from "./finalize.js";
import { isApplied, observedPoolDeployment, poolDeployment } from "./deployment.js";
import { gateRollout } from "./rollout.js";
import { leaseRenewals } from "./heartbeat.js";
import { cspiHealth, podAvailability } from "./status.js";

export function answerCspiSync(
  request: DecoratorSyncRequest<CSPI>,
  clock: Clock,
  config: HookConfig,
): DecoratorSyncResponse {
  // The finalize hook may point here too; answering a plain sync would never let the CSPI go.
  if (request.finalizing) return answerCspiFinalize(request, clock, config);
  const cspi = request.object;
  const deployment = observedPoolDeployment(request);
  const observed = {
    cspi,
    deployment,
    deleting: isTerminating(cspi),
    leaseRenewals: leaseRenewals(request.related, cspi.spec?.hostName),
  };
  const rollout = gateRollout(
    cspi,
    poolDeployment(cspi, config.poolPod),
    deployment,
    podAvailability(observed).status === "True",
  );
  const desired = rollout.deployment;
  const health = cspiHealth(observed, clock(), config, rollout);
  // Until Metacontroller has applied the Deployment (and the status: cspiHealth), this sync may be given up on a
  // conflict with nothing else to trigger the next one (docs/adr/0015-cspi-sync-asks-for-a-short-resync-until-its-pool.md).
  const resyncAfterSeconds = isApplied(desired, deployment)
    ? health.resyncAfterSeconds
    : Math.min(health.resyncAfterSeconds, DEFAULTS.confirmResyncSeconds);
  return {
    labels: {},
    annotations: {},
    status: health.status,
    attachments: [desired],
    resyncAfterSeconds,
  };
}
