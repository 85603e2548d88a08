// POST /hooks/cspc-sync (CompositeController on CStorPoolClusters, hook version v2): the request parsed, then
// the CSPC planner's answer from lib/cspc.
import { KIND } from "../../api/constants.js";
import type { Clock, CompositeSyncResponse } from "../../api/types.js";
import { syncCspcRequest } from "../../lib/cspc/sync.js";
import { parseCompositeRequest } from "../../lib/request.js";

export function syncCspc(body: unknown, clock: Clock): CompositeSyncResponse {
  return syncCspcRequest(parseCompositeRequest(body, KIND.cspc), clock);
}
