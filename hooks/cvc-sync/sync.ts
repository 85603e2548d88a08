// POST /hooks/cvc-sync (CompositeController on CStorVolumeConfigs, hook version v2): the request parsed, then
// the volume's answer from lib/volume.
import { KIND } from "../../api/constants.js";
import type { Clock, CompositeSyncResponse } from "../../api/types.js";
import type { HookConfig } from "../../lib/hook-config.js";
import { parseCompositeRequest } from "../../lib/request.js";
import { answerCvcSync } from "../../lib/volume/sync.js";

export function handleCvcSync(body: unknown, clock: Clock, config: HookConfig): CompositeSyncResponse {
  return answerCvcSync(parseCompositeRequest(body, KIND.cvc), clock, config.volumeTarget);
}
