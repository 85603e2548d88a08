// POST /hooks/cspi-finalize (DecoratorController finalize): refused unless the CSPI is going away, then the
// teardown answer from lib/cspi.
import { KIND } from "../../api/constants.js";
import type { Clock, DecoratorSyncResponse } from "../../api/types.js";
import { answerCspiFinalize } from "../../lib/cspi/finalize.js";
import type { HookConfig } from "../../lib/hook-config.js";
import { parseDecoratorRequest } from "../../lib/request.js";
import { requireDeletion } from "./deletion.js";

export function handleCspiFinalize(body: unknown, clock: Clock, config: HookConfig): DecoratorSyncResponse {
  const request = parseDecoratorRequest(body, KIND.cspi);
  requireDeletion(request.object, request.finalizing, "/hooks/cspi-sync");
  return answerCspiFinalize(request, clock, config);
}
