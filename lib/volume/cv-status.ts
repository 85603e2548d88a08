// POST /hooks/cv-status (DecoratorController on CStorVolumes): the CStorVolume's status from its replicas'
// status, which only the node daemon writes. Metacontroller cannot write a child's status, so cvc-sync
// cannot: this decorator does, with the same roll-up cvc-sync puts in the CStorVolumeConfig's conditions.
// It makes no attachments, and asks for a resync only until it sees the status it answered (the target agent
// writes status.target too: docs/adr/0042-a-decorator-asks-for-a-short-resync-until-its-status.md).
import { LABEL, TYPE_KEY } from "../../api/constants.js";
import type { Clock, CV, CVStatus, DecoratorSyncRequest, DecoratorSyncResponse } from "../../api/types.js";
import { mergeConditions, nextCondition } from "../conditions.js";
import { resyncUntilSeen } from "../confirm-status.js";
import { objectsOf } from "../request.js";
import { reachedCapacity, volumeHealth } from "./health.js";

export const CV_CONDITION_REPLICAS_HEALTHY = "ReplicasHealthy";

export function answerCvStatus(request: DecoratorSyncRequest<CV>, clock: Clock): DecoratorSyncResponse {
  const cv = request.object;
  const namespace = cv.metadata.namespace ?? "default";
  const replicas = objectsOf(request.related, TYPE_KEY.cvr).filter(
    (r) =>
      (r.metadata.namespace ?? namespace) === namespace &&
      r.metadata.labels?.[LABEL.replicaVolume] === cv.metadata.name,
  );
  const replicationFactor = cv.spec.replicationFactor;
  const health = volumeHealth(replicas, replicationFactor);
  const generation = cv.metadata.generation;
  const previous = cv.status?.conditions;
  const condition = nextCondition(
    previous,
    {
      type: CV_CONDITION_REPLICAS_HEALTHY,
      status: health.phase === "Healthy" ? "True" : "False",
      reason: health.phase,
      message: health.message,
    },
    clock(),
    generation,
  );
  const status: CVStatus = {
    // The target agent's part (docs/adr/0040-the-target-agent-credentials-names-and-status.md): Metacontroller
    // replaces the whole status with this answer, so what the agent wrote is passed through unchanged.
    ...(cv.status?.target ? { target: cv.status.target } : {}),
    phase: health.phase,
    healthyReplicas: health.healthyReplicas,
    conditions: mergeConditions(previous, [condition]),
  };
  const capacity = reachedCapacity(replicas, replicationFactor);
  if (capacity) status.capacity = capacity;
  if (generation !== undefined) status.observedGeneration = generation;
  const resyncAfterSeconds = resyncUntilSeen(cv.status, status);
  return { status, attachments: [], ...(resyncAfterSeconds ? { resyncAfterSeconds } : {}) };
}
