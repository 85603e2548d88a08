// POST /hooks/cvc-finalize (CompositeController finalize): refused unless the CStorVolumeConfig is going away,
// then the teardown answer from lib/volume.
import { KIND } from "../../api/constants.js";
import type { Clock, CompositeSyncResponse } from "../../api/types.js";
import { parseCompositeRequest } from "../../lib/request.js";
import { answerCvcFinalize } from "../../lib/volume/finalize.js";
import { requireDeletion } from "./deletion.js";

export function handleCvcFinalize(body: unknown, clock: Clock): CompositeSyncResponse {
  const request = parseCompositeRequest(body, KIND.cvc);
  requireDeletion(request.parent, request.finalizing, "/hooks/cvc-sync");
  return answerCvcFinalize(request, clock);
}
