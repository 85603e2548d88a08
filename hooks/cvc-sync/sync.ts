// POST /hooks/cvc-sync (CompositeController on CStorVolumeConfigs, hook version v2): the request parsed, then
// the volume's answer from lib/volume.
import { KIND } from "../../api/constants.js";
import type { Clock, CompositeSyncResponse } from "../../api/types.js";
import type { HookConfig } from "../../lib/hook-config.js";
import { parseCompositeRequest } from "../../lib/request.js";
import { syncCvcRequest } from "../../lib/volume/sync.js";

export function syncCvc(body: unknown, clock: Clock, config: HookConfig): CompositeSyncResponse {
  return syncCvcRequest(parseCompositeRequest(body, KIND.cvc), clock, config.volumeTarget);
}
