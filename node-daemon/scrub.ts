// Scheduled scrubs (docs/adr/0034-scrubs-an-interval-in-poolconfig-decided.md), decided like every other action: a pure function of the CSPI,
// the observed pool, the rest of the plan and the clock. A scrub is due an interval after the pool's last
// scrub ended, which is the later of what zpool status says (lost by zfs-fuse on export/import) and what
// the CSPI status remembers (lost with a status write); a scrub still running is never started again.
import { ANNOTATION, CSPI_CONDITION } from "../api/constants.js";
import type { CSPI } from "../api/types.js";
import { findCondition } from "../lib/conditions.js";
import type { PoolObservation } from "../zfs/observation.js";
import { parseScrub, type Vdev } from "../zfs/parse.js";
import type { Action, Hold } from "./planner.js";

const UNIT_SECONDS: Record<string, number> = { h: 3600, d: 86_400 };

/** "168h", "30d" (the schema's form) in seconds; undefined for anything else. */
export function scrubIntervalSeconds(interval: string): number | undefined {
  const match = /^([1-9][0-9]{0,3})([hd])$/.exec(interval);
  return match ? Number(match[1]) * UNIT_SECONDS[match[2]] : undefined;
}

/** When the pool's last scrub ended, finished or stopped: the later of zpool status and the CSPI status. */
export function lastScrubEnd(cspi: CSPI, observed: PoolObservation): string | undefined {
  const reading = parseScrub(observed.status);
  const ends = [
    reading?.state === "Scrubbing" ? undefined : reading?.endTime,
    cspi.status?.scrub?.lastEndTime,
  ].filter((t): t is string => !!t);
  return ends.sort((a, b) => Date.parse(b) - Date.parse(a))[0];
}

export interface ScrubInput {
  cspi: CSPI;
  pool: string;
  observed: PoolObservation;
  /** The rest of the pool's plan: anything in it is a change under way, which a scrub waits for. */
  actions: readonly Action[];
  holds: readonly Hold[];
  now: Date;
}

/** Start a scrub now, or, when one is due but held, why it waits (no clock value: the same wait is the same status). */
export function planScrub(input: ScrubInput): { action?: Action; waiting?: string } {
  const { cspi, pool, observed, now } = input;
  const interval = cspi.spec.poolConfig?.scrub?.interval;
  const seconds = interval ? scrubIntervalSeconds(interval) : undefined;
  if (!interval || seconds === undefined) return {};
  const status = observed.status;
  // A scrub running, or one someone paused (OpenZFS `zpool scrub -p`: `zpool scrub` would resume it), is left alone.
  if (status.scan.activity === "scrub" && (status.scan.inProgress || /\bpaused\b/.test(status.scan.text)))
    return {};
  const lastEnd = lastScrubEnd(cspi, observed);
  if (lastEnd && now.getTime() < Date.parse(lastEnd) + seconds * 1000) return {};
  const waiting = scrubBlock(input);
  if (waiting)
    return { waiting: `a scrub is due (poolConfig.scrub.interval ${interval}) but waits: ${waiting}` };
  return { action: { kind: "scrub", key: `scrub:${pool}`, pool, interval, ...(lastEnd ? { lastEnd } : {}) } };
}

/** What keeps a due scrub from starting, in words; undefined when nothing does. */
function scrubBlock(input: ScrubInput): string | undefined {
  const { cspi, observed, actions, holds } = input;
  const status = observed.status;
  if (cspi.metadata.annotations?.[ANNOTATION.reconcilePaused] === "true") {
    return `the CSPI carries ${ANNOTATION.reconcilePaused}=true (copied from its CSPC): remove it from the CSPC (or from the CSPI, if set there by hand) to let scrubs run`;
  }
  if (status.state !== "ONLINE")
    return `the pool is ${status.state}: a pool scrubs only when ONLINE (replace the failed device first)`;
  // Not its progress: a message that moved every pass would rewrite the status every pass.
  if (status.scan.inProgress) return `a ${status.scan.activity} is running`;
  const busy = [...status.layout.data, ...status.layout.logs].flatMap(vdevsAtWork);
  if (busy.length > 0) return `a device is being replaced (${busy.map((v) => v.name).join(", ")})`;
  const changing = [CSPI_CONDITION.diskReplacement, CSPI_CONDITION.poolExpansion].filter(
    (type) => findCondition(cspi.status?.conditions, type)?.status === "True",
  );
  if (changing.length > 0) return `condition ${changing.join(" and ")} is True: a day-2 change is under way`;
  if (actions.length > 0 || holds.length > 0) {
    const what = [...actions.map((a) => a.key), ...holds.map((h) => h.reason)];
    return `the pool has changes to make or held first (${[...new Set(what)].join(", ")})`;
  }
  return undefined;
}

/** A replacing vdev, or a hot spare standing in for a member: a resilver's work, not yet done. */
function vdevsAtWork(vdev: Vdev): Vdev[] {
  const self = vdev.kind === "replacing" || vdev.kind === "spare" ? [vdev] : [];
  return [...self, ...vdev.children.flatMap(vdevsAtWork)];
}
