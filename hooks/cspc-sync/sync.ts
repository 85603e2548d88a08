// POST /hooks/cspc-sync (CompositeController on CStorPoolClusters, hook version v2): the request parsed, then
// the CSPC planner's answer from lib/cspc, and the Events it wants on the CSPC handed to the server to write.
import { KIND } from "../../api/constants.js";
import type { CompositeSyncResponse } from "../../api/types.js";
import { answerCspcSync } from "../../lib/cspc/sync.js";
import { parseCompositeRequest } from "../../lib/request.js";
import type { HookContext } from "../http/app.js";

/** The answer; its Events are emitted, and written only after the answer is sent. */
export function handleCspcSync(body: unknown, context: HookContext): CompositeSyncResponse {
  const request = parseCompositeRequest(body, KIND.cspc);
  const { response, events } = answerCspcSync(request, context.clock);
  context.emit({ kind: KIND.cspc, metadata: request.parent.metadata }, events);
  return response;
}
