// A hook context for callers that want only a hook's answer (tests, benchmarks, the fleet generator): it logs
// nothing and drops the Events the hook emits.
import type { Clock } from "../api/types.js";
import type { HookContext } from "../hooks/http/app.js";
import { createLogger } from "../runtime/log.js";

export function quietHookContext(clock: Clock): HookContext {
  return { clock, log: createLogger({ level: "silent" }), emit: () => {} };
}
