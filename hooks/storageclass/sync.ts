// POST /hooks/storageclass-sync and /hooks/storageclass-finalize (DecoratorController on cStor StorageClasses,
// hook version v2): the request parsed, then the class's answer from lib/provision. A finalizing request gets
// the same answer with `finalized` set once the class holds no volume (docs/adr/0022-from-a-pvc-to-a-volume-a-decoratorcontroller.md).
import { KIND } from "../../api/constants.js";
import type { Clock, DecoratorSyncResponse } from "../../api/types.js";
import { answerStorageClassSync } from "../../lib/provision/sync.js";
import { parseDecoratorRequest } from "../../lib/request.js";

export function handleStorageClassSync(body: unknown, clock: Clock): DecoratorSyncResponse {
  return answerStorageClassSync(parseDecoratorRequest(body, KIND.storageClass), clock);
}
