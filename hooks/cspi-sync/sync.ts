// POST /hooks/cspi-sync (DecoratorController on CStorPoolInstances, hook version v2): the request parsed, then
// the CSPI's answer from lib/cspi. The finalize hook may point here too; answering a plain sync would never let
// the CSPI go, so a finalizing request gets the finalize answer.
import { KIND } from "../../api/constants.js";
import type { Clock, DecoratorSyncResponse } from "../../api/types.js";
import { answerCspiFinalize } from "../../lib/cspi/finalize.js";
import { answerCspiSync } from "../../lib/cspi/sync.js";
import type { HookConfig } from "../../lib/hook-config.js";
import { parseDecoratorRequest } from "../../lib/request.js";

export function handleCspiSync(body: unknown, clock: Clock, config: HookConfig): DecoratorSyncResponse {
  const request = parseDecoratorRequest(body, KIND.cspi);
  return request.finalizing
    ? answerCspiFinalize(request, clock, config)
    : answerCspiSync(request, clock, config);
}
