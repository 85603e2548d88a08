// POST /hooks/cspc-finalize (CompositeController finalize): refused unless the CSPC is going away, then the
// teardown answer from lib/cspc.
import { KIND } from "../../api/constants.js";
import type { Clock, CompositeSyncResponse } from "../../api/types.js";
import { answerCspcFinalize } from "../../lib/cspc/finalize.js";
import type { HookConfig } from "../../lib/hook-config.js";
import { parseCompositeRequest } from "../../lib/request.js";
import { requireDeletion } from "./deletion.js";

export function handleCspcFinalize(body: unknown, clock: Clock, config: HookConfig): CompositeSyncResponse {
  const request = parseCompositeRequest(body, KIND.cspc);
  requireDeletion(request.parent, request.finalizing, "/hooks/cspc-sync");
  return answerCspcFinalize(request, clock, config);
}
