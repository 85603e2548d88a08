// POST /hooks/cv-status (DecoratorController on CStorVolumes, hook version v2): the request parsed, then the
// CStorVolume status from lib/volume.
import { KIND } from "../../api/constants.js";
import type { Clock, DecoratorSyncResponse } from "../../api/types.js";
import { parseDecoratorRequest } from "../../lib/request.js";
import { answerCvStatus } from "../../lib/volume/cv-status.js";

export function handleCvStatus(body: unknown, clock: Clock): DecoratorSyncResponse {
  return answerCvStatus(parseDecoratorRequest(body, KIND.cv), clock);
}
