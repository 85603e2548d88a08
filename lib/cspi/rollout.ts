// cspi-sync's half of the rollout gate (docs/adr/0028-pool-pod-rollouts-go-one-pool-at-a-time.md): a running pool pod moves to a new template only
// with the permit cspc-sync grants to one pool of a CSPC at a time, or when its pool moves to another node
// (the move was gated by cspc-sync; docs/adr/0043-a-pool-moves-by-an-ordered-hand-over-its-pod.md). Pure: the decision follows from the CSPI,
// the wanted and the observed Deployment, and whether the pool pod is available.
import { ANNOTATION, CSPI_CONDITION, LABEL } from "../../api/constants.js";
import type { CSPI, KubeObject } from "../../api/types.js";
import { canonicalJson } from "../canonical.js";
import { BadRequestError } from "../errors.js";
import type { ConditionInput } from "../conditions.js";
import { shortHash } from "../hash.js";
import { isTerminating } from "../inventory.js";
import { hasEveryFieldOf } from "./deployment.js";

export interface RolloutDecision {
  /** The Deployment to answer: the wanted one, or the wanted one with the observed pod template kept. */
  deployment: KubeObject;
  condition: ConditionInput;
  /** status.pendingRollout: the wanted template's hash while the running pod has another. */
  pending?: string;
}

/** The hash a permit names: of the pod template as cspi-sync writes it (canonical, so stable). */
export function podTemplateHash(deployment: KubeObject): string {
  return shortHash([canonicalJson(templateOf(deployment))], 10);
}

export function gateRollout(
  cspi: CSPI,
  wanted: KubeObject,
  observed: KubeObject | undefined,
  podAvailable: boolean,
): RolloutDecision {
  const type = CSPI_CONDITION.rolloutPending;
  const rolledOut = (message: string): RolloutDecision => ({
    deployment: wanted,
    condition: { type, status: "False", reason: "RolledOut", message },
  });
  // Nothing runs to be kept: the Deployment is created (again) as wanted.
  if (!observed || isTerminating(observed))
    return rolledOut("no pool pod runs yet: the pool Deployment is created with the wanted pod template");
  // The apiserver stores no Deployment without an object spec and template: Metacontroller never sends one.
  const template = templateOf(observed);
  if (typeof template !== "object" || template === null || Array.isArray(template))
    throw new BadRequestError(
      `Deployment ${observed.metadata.namespace ?? ""}/${observed.metadata.name ?? ""} in the request has no pod template object (spec.template): send the Deployment as the apiserver stores it`,
    );
  if (hasEveryFieldOf(template, templateOf(wanted)))
    return rolledOut("the pool pod runs the wanted pod template");

  const hash = podTemplateHash(wanted);
  const permitted = (message: string): RolloutDecision => ({
    deployment: wanted,
    pending: hash,
    condition: { type, status: "True", reason: "Permitted", message },
  });
  if (!podAvailable) {
    return permitted(
      `the pool pod is not available, so it moves to pod template ${hash} without waiting: restarting a pod that serves nothing takes nothing away`,
    );
  }
  if (cspi.metadata.annotations?.[ANNOTATION.rolloutPermit] === hash) {
    return permitted(
      `the pool pod is restarted with pod template ${hash} (permit ${ANNOTATION.rolloutPermit}=${hash})`,
    );
  }
  const movedFrom = nodeLeft(template, templateOf(wanted));
  if (movedFrom !== undefined) {
    return permitted(
      `the pool moved from node ${movedFrom} to ${cspi.spec?.hostName}: its pool pod on ${movedFrom} stops without a rollout permit (pod template ${hash}), ` +
        `since the pool can leave that node only once the pod no longer holds it open; the pod on the new node serves once the pool is imported there`,
    );
  }
  const spec = { ...(wanted.spec as Record<string, unknown>), template: templateOf(observed) };
  return {
    deployment: { ...wanted, spec },
    pending: hash,
    condition: {
      type,
      status: "True",
      reason: "Waiting",
      message:
        `the pool pod keeps its pod template until cspc-sync permits pod template ${hash} (annotation ${ANNOTATION.rolloutPermit}), one pool of the ` +
        `CStorPoolCluster at a time, while the others are ONLINE with their pods available and every volume keeps its consistency factor elsewhere`,
    },
  };
}

/**
 * The node the running pod is pinned to when the wanted template pins it elsewhere: the pool moved (cspc-sync
 * changed the CSPI's hostName under its one disruptive change at a time gate). That pod either holds the pool
 * open, so it must stop before the pool can leave, or serves nothing any more: waiting for a permit would wait
 * on the move, which waits for this pod (docs/adr/0043-a-pool-moves-by-an-ordered-hand-over-its-pod.md).
 */
function nodeLeft(running: unknown, wanted: unknown): string | undefined {
  const nodeOf = (template: unknown) =>
    (template as { spec?: { nodeSelector?: Record<string, unknown> } } | undefined)?.spec?.nodeSelector?.[
      LABEL.hostname
    ];
  const [from, to] = [nodeOf(running), nodeOf(wanted)];
  return typeof from === "string" && from !== to ? from : undefined;
}

function templateOf(deployment: KubeObject): unknown {
  return (deployment.spec as { template?: unknown } | undefined)?.template;
}
