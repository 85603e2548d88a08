// The reporter: CSPI status as a pure function of what was observed, what is still planned, what was done
// in this pass, the previous status and the clock. Same inputs, same status: conditions keep their
// lastTransitionTime unless their status flips, and nothing but lastUpdateTime (the heartbeat) moves.
import { CSPI_CONDITION } from "../api/constants.js";
import type { CSPI, CSPIStatus } from "../api/types.js";
import { CSPI_PHASES } from "../api/schema.js";
import {
  findCondition,
  formatTime,
  mergeConditions,
  nextCondition,
  phaseWithTime,
  type ConditionInput,
} from "../lib/conditions.js";
import { servingPhase } from "../lib/cspi/phase.js";
import { zpoolName } from "../lib/names.js";
import { groupRole } from "../lib/rules/pool-spec.js";
import { deviceHealth } from "./devices.js";
import { sameDevice, type Observation } from "../zfs/observation.js";
import { allLeaves, parseScrub, type ScrubReading, type Vdev } from "../zfs/parse.js";
import type { Action, ActionKind, Plan } from "./planner.js";

/** What happened to one executed action. */
export interface Outcome {
  action: Action;
  error?: string;
}

export interface ReportInput {
  cspi: CSPI;
  nodeName: string;
  now: Date;
  /** The last observation of the pass; absent when observing failed. */
  observation?: Observation;
  observationError?: string;
  /** The plan made on that observation: what is still to do, and why not. */
  plan: Plan;
  outcomes: readonly Outcome[];
  /**
   * The CStorVolumeReplicas naming this CSPI (provisioned) and those Healthy on its pool; absent when they
   * cannot be read (watch not synced, local mode): the counts are then left out, unknown, never 0.
   */
  replicas?: ReplicaCounts;
}

export interface ReplicaCounts {
  provisioned: number;
  healthy: number;
}

export const CONDITION = {
  poolExpansion: CSPI_CONDITION.poolExpansion,
  diskReplacement: CSPI_CONDITION.diskReplacement,
  diskUnavailable: CSPI_CONDITION.diskUnavailable,
  poolLost: CSPI_CONDITION.poolLost,
  poolDestroyBlocked: CSPI_CONDITION.poolDestroyBlocked,
} as const;

type Phase = (typeof CSPI_PHASES)[number];
const ZFS_HEALTH: ReadonlySet<string> = new Set([
  "ONLINE",
  "DEGRADED",
  "FAULTED",
  "OFFLINE",
  "UNAVAIL",
  "REMOVED",
]);
const BAD_LEAF_STATES: ReadonlySet<string> = new Set(["UNAVAIL", "FAULTED", "REMOVED", "OFFLINE"]);

export function report(input: ReportInput): CSPIStatus {
  const { cspi, observation, now } = input;
  const previous = cspi.status ?? {};
  const pool = observation?.pool;
  const did = (kind: ActionKind) => input.outcomes.some((o) => o.action.kind === kind && !o.error);
  const status: CSPIStatus = { lastUpdateTime: formatTime(now) };

  if (pool || previous.poolName || did("create") || did("import"))
    status.poolName = zpoolName(cspi.metadata.name ?? "");
  const importedOn = importedOnOf(input, did("export") || did("destroy"));
  if (importedOn !== undefined) status.importedOn = importedOn;

  Object.assign(status, phaseWithTime(previous, servingPhase(phaseOf(input), previous.conditions), now));
  if (observation?.pool) Object.assign(status, poolFacts(cspi, observation));
  const scrub = scrubStatus(input);
  if (scrub) status.scrub = scrub;
  if (input.replicas) {
    status.provisionedReplicas = input.replicas.provisioned;
    status.healthyReplicas = input.replicas.healthy;
  }

  const updates = [
    expansionCondition(input),
    replacementCondition(input),
    unavailableCondition(input),
    lostCondition(input),
    destroyBlockedCondition(input),
  ]
    .filter((c): c is ConditionInput => c !== undefined)
    .map((c) => nextCondition(previous.conditions, c, now));
  const conditions = mergeConditions(previous.conditions, updates);
  if (conditions.length > 0) status.conditions = conditions;
  return status;
}

/** The node the pool is imported on: "" once it left this node; undefined when never known. */
function importedOnOf(input: ReportInput, leftHere: boolean): string | undefined {
  const previous = input.cspi.status?.importedOn;
  if (input.observation?.pool) return input.nodeName;
  if (leftHere) return "";
  // A failed observation (zpool timed out, unreadable) cannot tell that the pool is gone: it is still here.
  if (previous === input.nodeName && input.observationError === undefined) return "";
  return previous;
}

/** What the imported pool says of itself: its capacity, whether it is read-only, its devices. */
function poolFacts(
  cspi: CSPI,
  observation: Observation,
): Pick<CSPIStatus, "capacity" | "readOnly" | "devices"> {
  const pool = observation.pool!;
  const facts: Pick<CSPIStatus, "capacity" | "readOnly" | "devices"> = {};
  if (pool.space) {
    const { used, available } = pool.space;
    facts.capacity = { total: quantity(used + available), free: quantity(available), used: quantity(used) };
    if (pool.snapshotBytes !== undefined) facts.capacity.snapshots = quantity(pool.snapshotBytes);
  }
  facts.readOnly = pool.readonly ?? false;
  facts.devices = deviceHealth(cspi, observation);
  return facts;
}

type ScrubStatus = NonNullable<CSPIStatus["scrub"]>;

/**
 * The last scrub: what zpool status says of it, else what the status said before (zfs-fuse forgets a scrub
 * on import, a resilver's line replaces it); a scrub that vanished while running (the pool exported) is
 * Canceled.
 */
function scrubStatus(input: ReportInput): ScrubStatus | undefined {
  const previous = input.cspi.status?.scrub ?? {};
  const { waiting: _waiting, ...last } = previous;
  const pool = input.observation?.pool;
  const reading = pool ? parseScrub(pool.status) : undefined;
  let out: ScrubStatus = last;
  if (reading && !staleReading(reading, last)) {
    out = scrubRead(reading, last, input.now);
  } else if (pool && last.state === "Scrubbing" && !reading) {
    const { progress: _progress, ...stopped } = last;
    out = { ...stopped, state: "Canceled" };
  }
  if (input.plan.scrubWaiting) out = { ...out, waiting: input.plan.scrubWaiting };
  return Object.keys(out).length > 0 ? out : undefined;
}

/** A scrub that ended before the last one the status knows: zpool's reading is stale. */
function staleReading(reading: ScrubReading, last: ScrubStatus): boolean {
  return !!(
    reading.endTime &&
    last.lastEndTime &&
    Date.parse(last.lastEndTime) > Date.parse(reading.endTime)
  );
}

/** The scrub as zpool reads it. */
function scrubRead(reading: ScrubReading, last: ScrubStatus, now: Date): ScrubStatus {
  // A start zpool prints (OpenZFS), or reckons from the end and the duration; else the one seen running is carried.
  const carried = last.state === "Scrubbing" ? last.lastStartTime : undefined;
  const running =
    reading.elapsedSeconds !== undefined
      ? formatTime(new Date(now.getTime() - reading.elapsedSeconds * 1000))
      : undefined;
  const startTime = reading.startTime ?? carried ?? running;
  return {
    state: reading.state,
    ...(startTime ? { lastStartTime: startTime } : {}),
    ...(reading.endTime ? { lastEndTime: reading.endTime } : {}),
    ...(reading.progress ? { progress: reading.progress } : {}),
    ...(reading.repairedBytes !== undefined ? { repairedBytes: reading.repairedBytes } : {}),
    ...(reading.errors !== undefined ? { errors: reading.errors } : {}),
  };
}

function phaseOf(input: ReportInput): Phase {
  const { observation, plan } = input;
  if (input.observationError) return "Error";
  const pool = observation?.pool;
  if (pool) return ZFS_HEALTH.has(pool.status.state) ? (pool.status.state as Phase) : "Error";
  if (input.outcomes.some((o) => o.action.kind === "export" && !o.error)) return "Exported";
  if (plan.holds.some((h) => h.reason === "ImportFailed")) return "UNAVAIL";
  return "Pending";
}

/** A condition is reported once it has happened: absent conditions stay absent while nothing concerns them. */
function settle(
  input: ReportInput,
  active: ConditionInput | undefined,
  done: ConditionInput,
  happenedNow: boolean,
): ConditionInput | undefined {
  if (active) return active;
  const previous = findCondition(input.cspi.status?.conditions, done.type);
  // Something under way is over only when seen over: a failed observation (unreadable output) says nothing.
  if (happenedNow || (previous?.status === "True" && input.observationError === undefined)) return done;
  return undefined;
}

function failures(input: ReportInput, kind: ActionKind): string[] {
  return input.outcomes.filter((o) => o.action.kind === kind && o.error).map((o) => o.error!);
}

function deviceNames(actions: readonly Action[]): string {
  return [...new Set(actions.flatMap((a) => a.blockDevices ?? []))].sort().join(", ");
}

function expansionCondition(input: ReportInput): ConditionInput | undefined {
  const pending = input.plan.actions.filter((a) => a.kind === "add");
  const errors = failures(input, "add");
  const added = input.outcomes.filter((o) => o.action.kind === "add" && !o.error).map((o) => o.action);
  const previous = findCondition(input.cspi.status?.conditions, CONDITION.poolExpansion);
  const active: ConditionInput | undefined =
    pending.length > 0
      ? {
          type: CONDITION.poolExpansion,
          status: "True",
          reason: "PoolExpansionInProgress",
          message: `Pool expansion is in progress because of blockdevice/raid group addition [${deviceNames(pending)}]${errors.length ? ` error: ${errors.join("; ")}` : ""}`,
        }
      : undefined;
  const done: ConditionInput = {
    type: CONDITION.poolExpansion,
    status: "False",
    reason: "PoolExpansionSuccessful",
    message: added.length
      ? `Pool expansion was successful by adding blockdevices/raid groups [${deviceNames(added)}]`
      : (previous?.status === "False" && previous.message) ||
        "Pool expansion was successful by adding blockdevices/raid groups",
  };
  return settle(input, active, done, added.length > 0);
}

function replacementCondition(input: ReportInput): ConditionInput | undefined {
  const pool = input.observation?.pool?.status;
  const replacing = pool
    ? allVdevs(pool.layout.data.concat(pool.layout.logs)).filter((v) => v.kind === "replacing")
    : [];
  const resilvering = !!pool && pool.scan.activity === "resilver" && pool.scan.inProgress;
  const pending = input.plan.actions.filter((a) => a.kind === "replace" || a.kind === "clear-predecessor");
  const errors = [...failures(input, "replace"), ...failures(input, "clear-predecessor")];
  const replacedNow = input.outcomes.some(
    (o) => (o.action.kind === "replace" || o.action.kind === "clear-predecessor") && !o.error,
  );
  const previous = findCondition(input.cspi.status?.conditions, CONDITION.diskReplacement);
  const inProgress =
    replacing.length > 0 ||
    (resilvering && (replacedNow || previous?.status === "True")) ||
    pending.length > 0;
  const what = [
    ...replacing.map((v) => `${v.children.map((c) => c.device ?? c.name).join(" -> ")}`),
    ...pending
      .filter((a) => a.kind === "replace")
      .map((a) => (a.kind === "replace" ? `${a.oldDevice} -> ${a.newDevice}` : "")),
    ...pending
      .filter((a) => a.kind === "clear-predecessor")
      .map((a) => `${deviceNames([a])} resilvered, claim not yet updated`),
  ];
  const active: ConditionInput | undefined = inProgress
    ? {
        type: CONDITION.diskReplacement,
        status: "True",
        reason: "BlockDeviceReplacementInprogress",
        message: `Resilvering ${what.length ? what.join(", ") : "replaced block devices"}${resilvering ? ` (${pool.scan.text})` : ""}${errors.length ? ` error: ${errors.join("; ")}` : ""}`,
      }
    : undefined;
  // Upstream's reason, misspelling included, so tooling that matches it keeps working.
  const done: ConditionInput = {
    type: CONDITION.diskReplacement,
    status: "False",
    reason: "BlockDeviceReplacementSucceess",
    message: "Blockdevice replacement was successfully completed",
  };
  return settle(input, active, done, replacedNow);
}

function unavailableCondition(input: ReportInput): ConditionInput | undefined {
  const observation = input.observation;
  if (!observation) return undefined;
  const pool = observation.pool?.status;
  const problems: string[] = [];
  for (const group of input.cspi.spec.raidGroups ?? []) {
    for (const device of group.blockDevices) {
      const devLink = device.devLink ?? "";
      const info = observation.devices[devLink];
      if (info && !info.exists) {
        problems.push(`${device.blockDeviceName} (${devLink}: not found on the node)`);
        continue;
      }
      const member = pool
        ? allLeaves(pool.layout).find((leaf) => sameDevice(leaf, devLink, info))
        : undefined;
      if (member && BAD_LEAF_STATES.has(member.state)) {
        problems.push(
          `${device.blockDeviceName} (${devLink}: ${member.state}${member.note ? ` ${member.note}` : ""}${groupRole(group) === "data" ? "" : `, ${groupRole(group)}`})`,
        );
      }
    }
  }
  const active: ConditionInput | undefined = problems.length
    ? {
        type: CONDITION.diskUnavailable,
        status: "True",
        reason: "DiskFailed",
        message: `Following disks are unavailable or faulted: ${problems.join(", ")}`,
      }
    : undefined;
  const done: ConditionInput = {
    type: CONDITION.diskUnavailable,
    status: "False",
    reason: "DisksAreAvailable",
    message: "All block devices are available",
  };
  return settle(input, active, done, false);
}

function lostCondition(input: ReportInput): ConditionInput | undefined {
  const previous = findCondition(input.cspi.status?.conditions, CONDITION.poolLost);
  const held = input.plan.holds.find((h) => h.reason === "ImportFailed");
  const errors = failures(input, "import");
  const active: ConditionInput | undefined =
    held || errors.length
      ? {
          type: CONDITION.poolLost,
          status: "True",
          reason: "ImportFailed",
          message: `unable to import pool ${zpoolName(input.cspi.metadata.name ?? "")}: ${held ? held.message : errors.join("; ")}`,
        }
      : undefined;
  const done: ConditionInput = {
    type: CONDITION.poolLost,
    status: "False",
    reason: "PoolImported",
    message: "pool is imported",
  };
  if (active) return active;
  // Lost stays reported until the pool is back.
  return previous?.status === "True" && input.observation?.pool ? done : undefined;
}

/** A removed pool this node will not destroy, and why: until it is destroyed, or nothing holds it any more. */
function destroyBlockedCondition(input: ReportInput): ConditionInput | undefined {
  const type = CONDITION.poolDestroyBlocked;
  const refused = input.plan.holds.filter((h) => h.reason === "DestroyRefused");
  if (refused.length > 0)
    return {
      type,
      status: "True",
      reason: "DestroyRefused",
      message: `the node daemon on ${input.nodeName} keeps the removed pool: ${refused.map((h) => h.message).join("; ")}`,
    };
  const previous = findCondition(input.cspi.status?.conditions, type);
  if (previous?.status !== "True") return undefined;
  return { type, status: "False", reason: "NothingHeld", message: "nothing holds the removed pool any more" };
}

function allVdevs(vdevs: readonly Vdev[]): Vdev[] {
  return vdevs.flatMap((v) => [v, ...allVdevs(v.children)]);
}

const QUANTITY_UNITS = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/** Bytes as a Kubernetes quantity with three significant digits ("90.6Mi"), as printer columns show it. */
export function quantity(bytes: number): string {
  let value = Math.max(0, bytes);
  let unit = 0;
  while (value >= 1024 && unit < QUANTITY_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return String(Math.round(value));
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  const fixed = value.toFixed(digits);
  const text = fixed.includes(".") ? fixed.replace(/\.?0+$/, "") : fixed;
  return `${text}${QUANTITY_UNITS[unit]}`;
}
