// A CSPI's phase as users read it: the zpool's health as the node daemon sees it, unless the pool pod that
// serves the pool's volumes is not available, which makes an ONLINE or DEGRADED pool PodUnavailable. The
// node daemon (which writes the zpool's health) and cspi-sync (which writes PodAvailable) both apply this one
// rule to what they read, so neither undoes the other's phase.
import { CSPI_CONDITION } from "../../api/constants.js";
import type { CSPI_PHASES } from "../../api/schema.js";
import type { Condition } from "../../api/types.js";
import { findCondition } from "../conditions.js";

export type CspiPhase = (typeof CSPI_PHASES)[number];

/** Phases of a pool that could serve volumes: these are the ones a missing pool pod turns PodUnavailable. */
const SERVING: ReadonlySet<string> = new Set(["ONLINE", "DEGRADED", "PodUnavailable"]);

export function servingPhase(poolPhase: CspiPhase, conditions: readonly Condition[] | undefined): CspiPhase {
  const podAvailable = findCondition(conditions, CSPI_CONDITION.podAvailable);
  if (podAvailable?.status === "False" && SERVING.has(poolPhase)) return "PodUnavailable";
  return poolPhase;
}
