// The pure planner: (CSPI, observation, this node, clock) → ordered actions and the reasons for not acting.
// It never runs anything. The daemon executes the first action, observes again and plans again, so each
// action is decided on what the previous one really did.
import { ANNOTATION, DEFAULTS, FINALIZER, POOL_REMOVAL_REQUESTED, type RaidType } from "../api/constants.js";
import type { CSPI, CSPIRaidGroup } from "../api/types.js";
import { lastReport } from "../lib/cspi/heartbeat.js";
import { claimName, zpoolName } from "../lib/names.js";
import { deviceSizeProblem, groupRole, layoutType, type GroupRole } from "../lib/rules/pool-spec.js";
import {
  poolHoldingDevice,
  sameDevice,
  type ImportCandidate,
  type Observation,
  type PoolObservation,
} from "../zfs/observation.js";
import { allLeaves, leaves, type PoolStatus, type Section, type Vdev } from "../zfs/parse.js";
import { planScrub } from "./scrub.js";
import { cspiProblems, deviceSource, resolvedPathProblems } from "./validate.js";
import { parentDir, type VdevSpec } from "../zfs/layout.js";

interface ActionBase {
  /** Identifies the action for logs, metrics and the no-progress guard. */
  key: string;
  /** Block devices concerned, for events. */
  blockDevices?: string[];
}

export type Action = ActionBase &
  (
    | { kind: "add-finalizer" }
    | { kind: "remove-finalizer" }
    | {
        kind: "import";
        pool: string;
        id?: string;
        from: { cachefile?: string; dirs?: string[] };
        cachefile?: string;
        force: boolean;
        renamedFrom?: string;
      }
    | {
        kind: "create";
        pool: string;
        vdevs: VdevSpec[];
        compression: string;
        cachefile?: string;
        force: boolean;
      }
    | { kind: "add"; pool: string; vdevs: VdevSpec[]; force: boolean }
    | { kind: "replace"; pool: string; old: string; oldDevice: string; newDevice: string }
    | { kind: "remove"; pool: string; device: string }
    | { kind: "grow"; pool: string; devices: string[] }
    | { kind: "scrub"; pool: string; interval: string; lastEnd?: string }
    | { kind: "set-pool-property"; pool: string; property: string; value: string }
    | { kind: "set-dataset-property"; dataset: string; property: string; value: string }
    | { kind: "export"; pool: string }
    | { kind: "destroy"; pool: string; clearLabels: string[] }
    | { kind: "clear-predecessor"; claim: string }
    | { kind: "confirm-removal"; claim: string }
  );

export type ActionKind = Action["kind"];

/** Why the planner does not do something it otherwise would. Reported as events (and conditions). */
export interface Hold {
  reason: string;
  message: string;
}

export interface Plan {
  actions: Action[];
  holds: Hold[];
  /** This node writes the CSPI's status: it holds the pool, or it is the pool's node and nobody else holds it. */
  statusOwner: boolean;
  /** Why a scheduled scrub that is due has not started (node-daemon/scrub.ts); shown in status.scrub.waiting. */
  scrubWaiting?: string;
}

export interface PlanInput {
  cspi: CSPI;
  /** Written to status.importedOn: the migration handshake. */
  nodeName: string;
  /** Compared with spec.hostName (the node's kubernetes.io/hostname label); usually the node name. */
  hostName: string;
  now: Date;
  observation: Observation;
  /** False in local mode: no API server, so no finalizer to manage. */
  manageFinalizer: boolean;
  /** Directories devices must be under (DEVICE_ROOTS): anything else is refused as InvalidSpec. */
  deviceRoots: readonly string[];
  /** How long the holder's heartbeat stays fresh (CSPI_STALE_STATUS_SECONDS, as the hooks read it); default 300. */
  staleStatusSeconds?: number;
  /**
   * The CStorVolumeReplicas that name this CSPI; undefined when they cannot be read (their watch is not synced,
   * or local mode, which has no API): then the pool is never destroyed (fail closed).
   */
  replicas?: readonly string[];
}

const UNIMPORTABLE_STATES = new Set(["FAULTED", "UNAVAIL"]);
const GROW_MIN_BYTES = 64 * 2 ** 20;
const GROW_MIN_FRACTION = 0.1;

/** What one step of the planner contributes to the plan: its actions and its holds, each in order. */
interface Part {
  actions: Action[];
  holds: Hold[];
}

function nothing(): Part {
  return { actions: [], holds: [] };
}

function acting(...actions: Action[]): Part {
  return { actions, holds: [] };
}

function holding(...holds: (Hold | undefined)[]): Part {
  return { actions: [], holds: holds.filter((hold) => hold !== undefined) };
}

/** The parts one after the other: their actions in order, and their holds in order. */
function joined(...parts: Part[]): Part {
  return { actions: parts.flatMap((part) => part.actions), holds: parts.flatMap((part) => part.holds) };
}

export function plan(given: PlanInput): Plan {
  const input = withoutPoolHeldElsewhere(given);
  const target = input.cspi.spec?.hostName === input.hostName;
  const handshake = importHandshake(input);
  const { actions, holds, scrubWaiting } = planPool(input, target, handshake);
  return {
    actions,
    holds,
    statusOwner: ownsStatus(input, target, handshake),
    ...(scrubWaiting ? { scrubWaiting } : {}),
  };
}

/** Plan["statusOwner"]: this node holds the pool, or it is the pool's node and nobody else holds it. */
function ownsStatus(input: PlanInput, target: boolean, handshake: Handshake): boolean {
  return (
    input.observation.pool !== undefined ||
    (input.cspi.status?.importedOn ?? "") === input.nodeName ||
    (target && handshake.allowed)
  );
}

function planPool(
  input: PlanInput,
  target: boolean,
  handshake: Handshake,
): Part & Pick<Plan, "scrubWaiting"> {
  const { cspi, observation } = input;
  const pool = zpoolName(cspi.metadata.name ?? "");
  const problems = specProblems(input);
  if (problems.length > 0) return holding(...problems.map((message) => ({ reason: "InvalidSpec", message })));
  if (cspi.metadata.deletionTimestamp) return planDeletion(input, pool, handshake);
  // The pool moved to another node: hand it over (export), which clears status.importedOn.
  if (!target) return observation.pool ? acting(exportAction(pool)) : nothing();
  const finalizer =
    input.manageFinalizer && !hasFinalizer(cspi)
      ? acting({ kind: "add-finalizer", key: "add-finalizer" })
      : nothing();
  if (!observation.pool) return joined(finalizer, planBringUp(input, pool, handshake));
  const dayTwo = joined(finalizer, planDayTwo(input, pool, observation.pool));
  // Last, and only when nothing else is planned or held: a scrub never runs beside a day-2 change.
  const scrub = planScrub({ cspi, pool, observed: observation.pool, ...dayTwo, now: input.now });
  return {
    ...joined(dayTwo, scrub.action ? acting(scrub.action) : nothing()),
    ...(scrub.waiting ? { scrubWaiting: scrub.waiting } : {}),
  };
}

/** What makes the CSPI unusable as it is: its spec, then the paths its devices resolve to. */
function specProblems(input: PlanInput): string[] {
  const invalid = cspiProblems(input.cspi, input.deviceRoots);
  return invalid.length > 0
    ? invalid
    : resolvedPathProblems(input.cspi, input.observation.devices, input.deviceRoots);
}

/**
 * A pool visible here while status.importedOn names another node is that node's (a shared host, or a stale
 * cache): this daemon leaves it alone rather than fight over it.
 */
function withoutPoolHeldElsewhere(input: PlanInput): PlanInput {
  const importedOn = input.cspi.status?.importedOn ?? "";
  if (!input.observation.pool || importedOn === "" || importedOn === input.nodeName) return input;
  const { pool: _elsewhere, ...observation } = input.observation;
  return { ...input, observation };
}

interface Handshake {
  allowed: boolean;
  force: boolean;
  hold?: Hold;
}

/**
 * May this node import the pool? Only when nobody else has it (importedOn empty or this node), or when the
 * node that has it is dead (stale heartbeat) and the user said so with the force-import annotation.
 */
function importHandshake(input: PlanInput): Handshake {
  const { cspi, now, nodeName } = input;
  const holder = cspi.status?.importedOn ?? "";
  if (holder === "" || holder === nodeName) return { allowed: true, force: false };
  const pool = zpoolName(cspi.metadata.name ?? "");
  // The holder's Lease renewal or its last status write, whichever is later (docs/adr/0045-*).
  const heartbeat = lastReport(
    cspi,
    input.observation.holderRenewedAt ? [input.observation.holderRenewedAt] : [],
  ).at;
  const ageSeconds = heartbeat ? Math.floor((now.getTime() - Date.parse(heartbeat)) / 1000) : Infinity;
  const staleSeconds = input.staleStatusSeconds ?? DEFAULTS.staleStatusSeconds;
  if (ageSeconds <= staleSeconds) {
    // No clock value in the message: the same wait is the same Event, however long it lasts.
    return {
      allowed: false,
      force: false,
      hold: {
        reason: "WaitingForExport",
        message: `pool ${pool} is imported on node ${holder}, whose heartbeat is fresh; waiting for it to export the pool before importing it here (after ${staleSeconds}s without a heartbeat, a force-import becomes possible)`,
      },
    };
  }
  if (cspi.metadata.annotations?.[ANNOTATION.forceImport] === "true") return { allowed: true, force: true };
  const since = heartbeat ? `since ${heartbeat}` : "ever";
  return {
    allowed: false,
    force: false,
    hold: {
      reason: "ImportBlocked",
      message:
        `pool ${pool} is still marked imported on node ${holder}, whose heartbeat is stale ${since}; ` +
        `if that node is really gone, annotate the CSPI with ${ANNOTATION.forceImport}=true to import the pool here`,
    },
  };
}

function planDeletion(input: PlanInput, pool: string, handshake: Handshake): Part {
  const { cspi, observation } = input;
  const removal = cspi.metadata.annotations?.[ANNOTATION.poolRemoval] === POOL_REMOVAL_REQUESTED;
  if (observation.pool)
    return removal ? planDestroy(input, pool, observation.pool) : acting(exportAction(pool));
  const target = cspi.spec.hostName === input.hostName;
  // Destroying needs the pool imported; its volumes are checked once it is.
  const lookup: Lookup = removal && target && handshake.allowed ? importCandidate(pool, input) : {};
  if (lookup.candidate)
    return acting(importAction(input, pool, lookup.candidate, { force: handshake.force }));
  return joined(holding(lookup.hold), releaseFinalizer(input, handshake, target));
}

/** A pool marked for removal is destroyed once nothing holds data on it. */
function planDestroy(input: PlanInput, pool: string, observed: PoolObservation): Part {
  const replicaHold = replicasHold(pool, input.replicas);
  if (replicaHold) return holding(replicaHold);
  const volumes = observed.volumes;
  if (volumes.length > 0) {
    return holding({
      reason: "DestroyRefused",
      message:
        `pool ${pool} still holds ${volumes.length} volume(s) (${volumes.slice(0, 5).join(", ")}${volumes.length > 5 ? ", ..." : ""}): ` +
        `delete or move them first; the pool is kept`,
    });
  }
  // The real paths, checked against the device roots above: the labels zeroed are the ones just judged.
  const devices = devicesOf(input.cspi).map(
    (d) => input.observation.devices[d.devLink]?.realPath ?? d.devLink,
  );
  return acting({ kind: "destroy", key: `destroy:${pool}`, pool, clearLabels: devices });
}

/** A deleted CSPI whose pool is not here lets go once this node is the one that had it, or its target. */
function releaseFinalizer(input: PlanInput, handshake: Handshake, target: boolean): Part {
  const { cspi } = input;
  if (!(input.manageFinalizer && hasFinalizer(cspi))) return nothing();
  const mine = (cspi.status?.importedOn ?? "") === input.nodeName || target;
  if (!mine) return nothing();
  if (!handshake.allowed) return holding(handshake.hold);
  return acting({ kind: "remove-finalizer", key: "remove-finalizer" });
}

/** A pool named by any CStorVolumeReplica, or whose replicas cannot be counted, is never destroyed. */
function replicasHold(pool: string, replicas: readonly string[] | undefined): Hold | undefined {
  if (replicas === undefined) {
    return {
      reason: "DestroyRefused",
      message: `pool ${pool}: its CStorVolumeReplicas cannot be read (their watch is not synced), so whether it holds replicas is unknown; the pool is kept until they can be read`,
    };
  }
  if (replicas.length === 0) return undefined;
  const names = [...replicas].sort();
  return {
    reason: "DestroyRefused",
    message:
      `pool ${pool} still holds ${names.length} replica(s) (CStorVolumeReplica ${names.slice(0, 5).join(", ")}${names.length > 5 ? ", ..." : ""}): ` +
      `delete or move those volumes first; the pool is kept`,
  };
}

/** A pool that is not imported here: imported, adopted or created, in that order of preference. */
function planBringUp(input: PlanInput, pool: string, handshake: Handshake): Part {
  if (!handshake.allowed) return holding(handshake.hold);
  const lookup = importCandidate(pool, input);
  if (lookup.candidate) return planImport(input, pool, lookup.candidate, handshake.force);
  if (lookup.hold) return holding(lookup.hold);
  if (input.cspi.status?.poolName) {
    // Created before: never create again over what may still be the data.
    return holding({
      reason: "ImportFailed",
      message:
        `pool ${pool} existed but is neither imported nor importable from ${importDescription(input)}: ` +
        `check that the block devices are attached to node ${input.hostName}; the daemon never re-creates a pool that existed`,
    });
  }
  const existing = input.cspi.spec.poolConfig?.existingPoolName;
  if (existing && existing !== pool) {
    // Another operator's pool, taken over (docs/adr/0030-from-storagepoolclaim-and-cstor-openebs-io-v1.md): imported and renamed, never created over.
    const adopted = adoptionCandidate(existing, pool, input);
    return adopted.candidate
      ? acting(importAction(input, pool, adopted.candidate, { force: false, renamedFrom: existing }))
      : holding(adopted.hold);
  }
  return planCreate(input, pool);
}

function planImport(input: PlanInput, pool: string, candidate: ImportCandidate, force: boolean): Part {
  if (UNIMPORTABLE_STATES.has(candidate.pool.state)) {
    return holding({
      reason: "ImportFailed",
      message: `pool ${pool} was found on the devices but cannot be imported: it is ${candidate.pool.state}${candidate.pool.status ? ` (${candidate.pool.status})` : ""}`,
    });
  }
  return acting(importAction(input, pool, candidate, { force }));
}

function planCreate(input: PlanInput, pool: string): Part {
  const { cspi } = input;
  const force = cspi.metadata.annotations?.[ANNOTATION.forceCreate] === "true";
  const devices = devicesOf(cspi);
  const blocked = deviceBlocks(devices, input.observation, pool, force);
  if (blocked.length > 0) return holding(...blocked);
  const config = cspi.spec.poolConfig ?? {};
  return acting({
    kind: "create",
    key: `create:${pool}`,
    pool,
    vdevs: cspi.spec.raidGroups.map(vdevSpec),
    compression: config.compression ?? DEFAULTS.compression,
    ...(config.cacheFile ? { cachefile: config.cacheFile } : {}),
    force,
    blockDevices: devices.map((d) => d.blockDeviceName),
  });
}

/** The pool to import, or why none can be; neither when there is none to import. */
interface Lookup {
  candidate?: ImportCandidate;
  hold?: Hold;
}

/** The importable pools of this name, one per pool id: the cachefile and the scan may list the same pool. */
function distinctImportable(observation: Observation, name: string): ImportCandidate[] {
  const byId = new Map<string, ImportCandidate>();
  for (const candidate of observation.importable) {
    const id = candidate.pool.id ?? "";
    if (candidate.pool.name === name && !byId.has(id)) byId.set(id, candidate);
  }
  return [...byId.values()];
}

function importCandidate(pool: string, input: PlanInput): Lookup {
  const distinct = distinctImportable(input.observation, pool);
  if (distinct.length <= 1) return distinct.length === 1 ? { candidate: distinct[0] } : {};
  const devices = devicesOf(input.cspi);
  const ours = distinct.filter((c) =>
    allLeaves(c.pool.layout).some((leaf) =>
      devices.some((d) => sameDevice(leaf, d.devLink, input.observation.devices[d.devLink])),
    ),
  );
  if (ours.length === 1) return { candidate: ours[0] };
  return {
    hold: {
      reason: "ImportAmbiguous",
      message: `${distinct.length} different pools named ${pool} can be imported (ids ${distinct.map((c) => c.pool.id).join(", ")}): import the right one by hand with zpool import <id>`,
    },
  };
}

/**
 * The pool named `existing` (poolConfig.existingPoolName) to import as `pool`: only when it is found exactly
 * once on the CSPI's devices, can be opened, and holds exactly the CSPI's devices. Otherwise a hold says why.
 */
function adoptionCandidate(existing: string, pool: string, input: PlanInput): Lookup {
  const { observation } = input;
  const hold = (reason: string, message: string): Lookup => ({
    hold: { reason, message: `pool ${existing} (poolConfig.existingPoolName) ${message}` },
  });
  if (observation.imported.some((p) => p.name === existing)) {
    return hold(
      "AdoptionWaiting",
      `is imported on this node under its old name: export it (zpool export ${existing}) and it is imported as ${pool}; nothing is created over its devices`,
    );
  }
  const found = distinctImportable(observation, existing);
  if (found.length === 0) {
    return hold(
      "AdoptionWaiting",
      `is not importable from ${importDescription(input)}: check that its devices are attached to node ${input.hostName} and nothing else has it open (a pool left open by the old pool pod: zpool import -f ${existing} && zpool export ${existing}); nothing is created over its devices`,
    );
  }
  if (found.length > 1) {
    return hold(
      "ImportAmbiguous",
      `names ${found.length} different pools (ids ${found.map((c) => c.pool.id).join(", ")}): import the right one by hand with zpool import <id> ${pool}`,
    );
  }
  const candidate = found[0];
  if (UNIMPORTABLE_STATES.has(candidate.pool.state))
    return hold(
      "ImportFailed",
      `was found on the devices but cannot be imported: it is ${candidate.pool.state}`,
    );
  const devices = devicesOf(input.cspi);
  const leaves = allLeaves(candidate.pool.layout);
  const same = (leaf: Vdev, d: ListedDevice) => sameDevice(leaf, d.devLink, observation.devices[d.devLink]);
  const unlisted = leaves.filter((leaf) => !devices.some((d) => same(leaf, d))).map((leaf) => leaf.name);
  const absent = devices.filter((d) => !leaves.some((leaf) => same(leaf, d))).map((d) => d.blockDeviceName);
  if (unlisted.length > 0 || absent.length > 0) {
    return hold(
      "AdoptionMismatch",
      `does not hold exactly the CSPI's devices (${[unlisted.length > 0 ? `in the pool, not listed: ${unlisted.join(", ")}` : "", absent.length > 0 ? `listed, not in the pool: ${absent.join(", ")}` : ""].filter(Boolean).join("; ")}): fix the CStorPoolCluster's pool spec to what zpool import shows; nothing is imported or created`,
    );
  }
  return { candidate };
}

function importAction(
  input: PlanInput,
  pool: string,
  candidate: ImportCandidate,
  how: { force: boolean; renamedFrom?: string },
): Action {
  const cachefile = input.cspi.spec.poolConfig?.cacheFile;
  return {
    kind: "import",
    key: `import:${pool}`,
    pool,
    ...(candidate.pool.id ? { id: candidate.pool.id } : {}),
    from: candidate.source,
    ...(cachefile ? { cachefile } : {}),
    force: how.force,
    ...(how.renamedFrom ? { renamedFrom: how.renamedFrom } : {}),
  };
}

function importDescription(input: PlanInput): string {
  const dirs = [...new Set(devicesOf(input.cspi).map((d) => parentDir(d.devLink)))].sort();
  const cachefile = input.cspi.spec.poolConfig?.cacheFile;
  return `${cachefile ? `cachefile ${cachefile} or ` : ""}a scan of ${dirs.join(", ")}`;
}

interface ListedDevice {
  blockDeviceName: string;
  devLink: string;
  group: number;
  /** What to fix when the device is unusable (deviceSource). */
  source: string;
}

function devicesOf(cspi: CSPI): ListedDevice[] {
  return cspi.spec.raidGroups.flatMap((group, g) =>
    group.blockDevices.map((d) => ({
      blockDeviceName: d.blockDeviceName,
      devLink: d.devLink ?? "",
      group: g,
      source: deviceSource(cspi, d.blockDeviceName),
    })),
  );
}

function vdevSpec(group: CSPIRaidGroup): VdevSpec {
  const role = groupRole(group);
  return {
    role,
    type: layoutType(role, group.type),
    devices: group.blockDevices.map((d) => d.devLink ?? ""),
  };
}

/**
 * Devices that must not be used: missing on the node, smaller than ZFS accepts, or members of another pool
 * (imported, or exported unless forced). Checked before every create, add and replace that would use them.
 */
function deviceBlocks(
  devices: readonly ListedDevice[],
  observation: Observation,
  pool: string,
  force: boolean,
): Hold[] {
  return devices.flatMap((device) => deviceBlock(device, { observation, pool, force }) ?? []);
}

/** Why this device must not be used, if it must not; the first reason only. */
function deviceBlock(
  device: ListedDevice,
  { observation, pool, force }: { observation: Observation; pool: string; force: boolean },
): Hold | undefined {
  const info = observation.devices[device.devLink];
  const named = `block device ${device.blockDeviceName} (${device.devLink})`;
  if (!info?.exists) {
    return {
      reason: "DeviceMissing",
      message: `${named} does not exist on this node: attach it or fix ${device.source}`,
    };
  }
  const tooSmall = info.size === undefined ? undefined : deviceSizeProblem(info.size);
  if (tooSmall) {
    return {
      reason: "DeviceTooSmall",
      message: `${named} ${tooSmall}: attach a larger device or fix ${device.source}`,
    };
  }
  const ours = (p: PoolStatus) => p.name === pool;
  const active = poolHoldingDevice(observation.imported, device.devLink, info, ours);
  if (active) {
    return {
      reason: "DeviceInUse",
      message: `${named} belongs to imported pool ${active.name}: it is never reused`,
    };
  }
  const importable = observation.importable.map((c) => c.pool);
  const exported = poolHoldingDevice(importable, device.devLink, info, ours);
  if (!exported || force) return undefined;
  return {
    reason: "DeviceInUse",
    message:
      `${named} carries a label of exported pool ${exported.name}: ` +
      `import that pool, or clear the device, or annotate the CSPI with ${ANNOTATION.forceCreate}=true to overwrite it`,
  };
}

const SECTION_OF_ROLE: Record<GroupRole, Section> = {
  data: "data",
  writeCache: "logs",
  readCache: "cache",
  spare: "spares",
};

/** The imported pool as day-2 planning reads it, next to the devices the CSPI lists. */
interface PoolView {
  pool: string;
  observation: Observation;
  layout: PoolStatus["layout"];
  listed: ListedDevice[];
  /** The CSPI's force-create annotation: devices labelled by an exported pool may be used. */
  force: boolean;
  info: (devLink: string) => Observation["devices"][string];
  inPool: (devLink: string) => boolean;
  isListed: (leaf: Vdev) => boolean;
}

/** One raid group of the CSPI and its devices, as the pool has them. */
interface GroupView {
  group: CSPIRaidGroup;
  role: GroupRole;
  devices: ListedDevice[];
  /** Devices the pool does not have yet. */
  fresh: ListedDevice[];
  /** Fresh devices nothing keeps from being used. */
  usable: ListedDevice[];
  /** The group, in messages. */
  where: string;
}

/** What one raid group asks of the pool: the plan runs every group's replacements before any addition. */
interface GroupPlan {
  replacements: Action[];
  additions: Action[];
  holds: Hold[];
}

function planDayTwo(input: PlanInput, pool: string, observed: PoolObservation): Part {
  const { cspi, observation } = input;
  const listed = devicesOf(cspi);
  const layout = observed.status.layout;
  const info = (devLink: string) => observation.devices[devLink];
  const view: PoolView = {
    pool,
    observation,
    layout,
    listed,
    force: cspi.metadata.annotations?.[ANNOTATION.forceCreate] === "true",
    info,
    inPool: (devLink) => allLeaves(layout).some((leaf) => sameDevice(leaf, devLink, info(devLink))),
    isListed: (leaf) => listed.some((d) => sameDevice(leaf, d.devLink, info(d.devLink))),
  };
  const groups = cspi.spec.raidGroups.map((group, g) => planGroup(view, group, g));
  const leaving = planLeavingCaches(view);
  const grow = growAction(pool, observed, listed, observation);
  return {
    actions: [
      ...groups.flatMap((group) => group.replacements),
      ...groups.flatMap((group) => group.additions),
      ...leaving.actions,
      ...(grow ? [grow] : []),
      ...propertyActions(cspi, pool, observed),
      ...(observation.claims
        ? [
            ...predecessorActions(cspi, observed.status, observation),
            ...removalConfirmations(cspi, observed.status, observation),
          ]
        : []),
    ],
    holds: [...groups.flatMap((group) => group.holds), ...unlistedStripes(view), ...leaving.holds],
  };
}

function planGroup(view: PoolView, group: CSPIRaidGroup, index: number): GroupPlan {
  const role = groupRole(group);
  const devices = view.listed.filter((d) => d.group === index);
  const fresh = devices.filter((d) => !view.inPool(d.devLink));
  const blocks = fresh.map((d) => deviceBlock(d, view));
  const groupView: GroupView = {
    group,
    role,
    devices,
    fresh,
    usable: fresh.filter((_d, i) => blocks[i] === undefined),
    where: `raid group ${index} (${role === "data" ? group.type : role})`,
  };
  const blocked = blocks.filter((hold) => hold !== undefined);
  const mismatch = layoutMismatch(view, groupView);
  const change = mismatch
    ? { replacements: [], additions: [], holds: [mismatch] }
    : groupChange(view, groupView);
  return { ...change, holds: [...blocked, ...change.holds] };
}

/** The group's shape matches the pool: its fresh devices are added, or replace members that left it. */
function groupChange(view: PoolView, groupView: GroupView): GroupPlan {
  const { group, role, devices, fresh, usable, where } = groupView;
  const none: GroupPlan = { replacements: [], additions: [], holds: [] };
  if (role === "spare" || role === "readCache" || group.type === "stripe") {
    if (usable.length === 0) return none;
    const vdev: VdevSpec = { role, type: "stripe", devices: usable.map((d) => d.devLink) };
    return { ...none, additions: [addAction(view, vdev, usable)] };
  }
  const section = view.layout[SECTION_OF_ROLE[role]];
  const touching = section.filter(
    (top) =>
      top.children.length > 0 &&
      devices.some((d) => leaves([top]).some((leaf) => sameDevice(leaf, d.devLink, view.info(d.devLink)))),
  );
  if (touching.length === 0) {
    const whole = fresh.length === devices.length && usable.length === devices.length;
    return whole ? { ...none, additions: [addAction(view, vdevSpec(group), usable)] } : none;
  }
  if (touching.length > 1) {
    return {
      ...none,
      holds: [
        {
          reason: "GroupMismatch",
          message: `${where} has devices in ${touching.length} different vdevs of pool ${view.pool} (${touching.map((t) => t.name).join(", ")}): fix the CSPC`,
        },
      ],
    };
  }
  return replaceMembers(view, groupView, touching[0]);
}

/** Members of the group's vdev that the CSPI no longer lists are replaced by its fresh devices, in order. */
function replaceMembers(view: PoolView, groupView: GroupView, vdev: Vdev): GroupPlan {
  const { pool } = view;
  const { group, fresh, usable, where } = groupView;
  // Members of a replacing vdev that are not listed are on their way out: ZFS detaches them after resilver.
  const gone = membersOutsideReplacing(vdev).filter((leaf) => !view.isListed(leaf));
  const pairs = Math.min(gone.length, usable.length);
  const replacements: Action[] = usable.slice(0, pairs).map((next, i) => ({
    kind: "replace",
    key: `replace:${pool}:${gone[i].name}`,
    pool,
    old: gone[i].name,
    oldDevice: gone[i].device ?? gone[i].name,
    newDevice: next.devLink,
    blockDevices: [next.blockDeviceName],
  }));
  const unmatched: Hold | undefined =
    usable.length > pairs
      ? {
          reason: "UnsupportedChange",
          message: `${where} lists ${usable
            .slice(pairs)
            .map((d) => d.blockDeviceName)
            .join(
              ", ",
            )} but no member left the group to be replaced: a ${group.type} group cannot grow by a device`,
        }
      : undefined;
  const unreplaced: Hold | undefined =
    gone.length > pairs && fresh.length === 0
      ? {
          reason: "DeviceNotListed",
          message: `pool ${pool} member ${gone
            .slice(pairs)
            .map((l) => l.device ?? l.name)
            .join(", ")} of ${vdev.name} is no longer listed in ${where}: list its replacement to replace it`,
        }
      : undefined;
  return { replacements, additions: [], holds: holding(unmatched, unreplaced).holds };
}

/** Top-level single devices that nobody lists any more: ZFS cannot take them out of the data. */
function unlistedStripes(view: PoolView): Hold[] {
  const unlisted = [...view.layout.data, ...view.layout.logs].filter(
    (top) => top.children.length === 0 && !view.isListed(top),
  );
  if (unlisted.length === 0) return [];
  return [
    {
      reason: "DeviceNotListed",
      message: `pool ${view.pool} has devices no raid group lists (${unlisted.map((l) => l.device ?? l.name).join(", ")}): striped devices cannot be removed from a pool`,
    },
  ];
}

/**
 * Spares and read caches no group lists any more (a device or a whole group removed): they hold no data,
 * so they leave the pool; a spare standing in for a failed device stays until it is no longer needed.
 */
function planLeavingCaches(view: PoolView): Part {
  const { pool } = view;
  const unlisted = [...leaves(view.layout.spares), ...leaves(view.layout.cache)].filter(
    (leaf) => !view.isListed(leaf),
  );
  return joined(
    ...unlisted.map((leaf) =>
      leaf.state === "INUSE"
        ? holding({
            reason: "SpareInUse",
            message: `spare ${leaf.name} is no longer listed but is in use; it is removed once the pool no longer needs it`,
          })
        : acting({ kind: "remove", key: `remove:${pool}:${leaf.name}`, pool, device: removalTarget(leaf) }),
    ),
  );
}

/**
 * Claims marked for removal (ANNOTATION.bdRemoval: the device's path) whose device the CSPI no longer lists
 * and the pool no longer has: the mark goes, and with it cspc-sync releases the claim.
 */
function removalConfirmations(cspi: CSPI, status: PoolStatus, observation: Observation): Action[] {
  const listed = new Set(devicesOf(cspi).map((d) => d.blockDeviceName));
  const stillInPool = (devLink: string) =>
    allLeaves(status.layout).some((leaf) => sameDevice(leaf, devLink, observation.devices[devLink]));
  return Object.entries(observation.claims ?? {})
    .filter(([device, annotations]) => {
      const devLink = annotations[ANNOTATION.bdRemoval];
      return devLink !== undefined && !listed.has(device) && !(devLink && stillInPool(devLink));
    })
    .map(([device]): Action => ({
      kind: "confirm-removal",
      key: `confirm-removal:${device}`,
      claim: claimName(device),
      blockDevices: [device],
    }))
    .sort((a, b) => a.key.localeCompare(b.key));
}

/**
 * What `zpool remove` is given for a leaf: a short name as `zpool status` shows it ("loop3") is made a /dev
 * path, which zfs-fuse needs for a cache device ("no such device in pool" otherwise); paths and guids as shown.
 */
function removalTarget(leaf: Vdev): string {
  const shown = leaf.device ?? leaf.name;
  return shown.includes("/") || /^\d+$/.test(shown) ? shown : `/dev/${shown}`;
}

/** How `zpool status` shows a group of each type at the top of its section. */
const VDEV_KIND: Record<RaidType, string> = {
  stripe: "disk",
  mirror: "mirror",
  raidz: "raidz1",
  raidz2: "raidz2",
};
const TYPE_OF_KIND: Record<string, string> = {
  disk: "stripe",
  mirror: "mirror",
  raidz1: "raidz",
  raidz2: "raidz2",
};
/** The sections this daemon builds (not special or dedup vdevs), by the role of their groups. */
const ROLE_OF_SECTION: Partial<Record<Section, GroupRole>> = {
  data: "data",
  logs: "writeCache",
  cache: "readCache",
  spares: "spare",
};

/**
 * A group whose devices the pool already has in another shape (another type, another role): ZFS converts
 * neither, so nothing is planned for it and the hold says what the pool has and what the CSPI must say again.
 */
function layoutMismatch(view: PoolView, groupView: GroupView): Hold | undefined {
  const { layout, info } = view;
  const { group, role, devices } = groupView;
  const where = `${groupView.where} of pool ${view.pool}`;
  const own = SECTION_OF_ROLE[role];
  // Its own section first: a hot spare at work shows in the data section too, and is still a spare.
  const sections = [own, ...(Object.keys(ROLE_OF_SECTION) as Section[]).filter((section) => section !== own)];
  for (const device of devices) {
    for (const section of sections) {
      const top = layout[section].find((vdev) =>
        leaves([vdev]).some((leaf) => sameDevice(leaf, device.devLink, info(device.devLink))),
      );
      if (!top) continue;
      const shown = `${device.blockDeviceName}, which the pool has`;
      if (section !== own) {
        return unsupported(
          `${where} lists ${shown} as ${ROLE_OF_SECTION[section]!} (${section}), not ${role}: a device's role in a pool cannot change; restore the group's role in the CSPC`,
        );
      }
      if (role !== "data" && role !== "writeCache") return undefined;
      // A replacement or a hot spare at work sits where the device was: the group's shape is its parent's.
      const kind =
        top.children.length === 0 || top.kind === "replacing" || top.kind === "spare" ? "disk" : top.kind;
      if (kind === VDEV_KIND[group.type]) return undefined;
      const has = kind === "disk" ? "as a single striped device" : `in ${top.name}`;
      return unsupported(
        `${where} lists ${shown} ${has}: ZFS cannot convert a raid group, so the CSPI no longer matches the pool; ` +
          `restore type ${TYPE_OF_KIND[kind] ?? kind} for this group in the CSPC`,
      );
    }
  }
  return undefined;
}

function unsupported(message: string): Hold {
  return { reason: "UnsupportedChange", message };
}

function addAction(view: PoolView, vdev: VdevSpec, devices: readonly ListedDevice[]): Action {
  return {
    kind: "add",
    key: `add:${view.pool}:${vdev.devices.join(",")}`,
    pool: view.pool,
    vdevs: [vdev],
    force: view.force,
    blockDevices: devices.map((d) => d.blockDeviceName),
  };
}

function membersOutsideReplacing(vdev: Vdev): Vdev[] {
  if (vdev.children.length === 0) return [vdev];
  if (vdev.kind === "replacing") return [];
  return vdev.children.flatMap(membersOutsideReplacing);
}

function exportAction(pool: string): Action {
  return { kind: "export", key: `export:${pool}`, pool };
}

function hasFinalizer(cspi: CSPI): boolean {
  return (cspi.metadata.finalizers ?? []).includes(FINALIZER.poolProtection);
}

/**
 * Grow when the devices are clearly larger than the pool: the expected raw size of the data vdevs (a disk's
 * size, a mirror's smallest member, raidz members × smallest) exceeds the pool's size by 10% and 64 MiB,
 * margins far above ZFS's label and metaslab overhead.
 */
function growAction(
  pool: string,
  observed: PoolObservation,
  listed: readonly ListedDevice[],
  observation: Observation,
): Action | undefined {
  if (observed.size === undefined) return undefined;
  const data = observed.status.layout.data;
  /** A member's size, known only for a listed device that is online. */
  const sizeOf = (leaf: Vdev): number | undefined => {
    const device = listed.find((d) => sameDevice(leaf, d.devLink, observation.devices[d.devLink]));
    return device && leaf.state === "ONLINE" ? observation.devices[device.devLink]?.size : undefined;
  };
  const tops = data.map((top) => ({ top, sizes: leaves([top]).map(sizeOf) }));
  if (tops.some(({ sizes }) => sizes.includes(undefined))) return undefined;
  const expected = tops.reduce((sum, { top, sizes }) => {
    const known = sizes.filter((size) => size !== undefined);
    const smallest = Math.min(...known);
    return sum + (top.children.length === 0 || top.kind === "mirror" ? smallest : smallest * known.length);
  }, 0);
  if (expected - observed.size < Math.max(GROW_MIN_BYTES, observed.size * GROW_MIN_FRACTION))
    return undefined;
  const members = data.flatMap((top) => leaves([top]).map((leaf) => leaf.name));
  return { kind: "grow", key: `grow:${pool}:${expected}`, pool, devices: members };
}

function propertyActions(cspi: CSPI, pool: string, observed: PoolObservation): Action[] {
  const config = cspi.spec.poolConfig ?? {};
  const compression = config.compression ?? DEFAULTS.compression;
  const cachefile = config.cacheFile ?? "";
  const readOnly = shouldBeReadOnly(config.roThresholdLimit ?? DEFAULTS.roThresholdLimit, observed.space);
  return [
    observed.compression !== undefined && observed.compression !== compression
      ? datasetProperty(pool, "compression", compression)
      : undefined,
    observed.cachefile !== undefined && observed.cachefile !== cachefile
      ? poolProperty(pool, "cachefile", cachefile || "none")
      : undefined,
    readOnly !== undefined && observed.readonly !== undefined && observed.readonly !== readOnly
      ? datasetProperty(pool, "readonly", readOnly ? "on" : "off")
      : undefined,
  ].filter((action) => action !== undefined);
}

function datasetProperty(dataset: string, property: string, value: string): Action {
  return { kind: "set-dataset-property", key: `set:${dataset}:${property}`, dataset, property, value };
}

function poolProperty(pool: string, property: string, value: string): Action {
  return { kind: "set-pool-property", key: `set:${pool}:${property}`, pool, property, value };
}

/** Read-only once used capacity reaches the limit (percent of used + available); a limit of 100 never. */
export function shouldBeReadOnly(limit: number, space: PoolObservation["space"]): boolean | undefined {
  if (!space) return undefined;
  if (limit >= 100) return false;
  const total = space.used + space.available;
  if (total <= 0) return undefined;
  return (space.used * 100) / total >= limit;
}

/** A replacement is complete when the new device is a plain, healthy member and no resilver runs. */
function predecessorActions(cspi: CSPI, status: PoolStatus, observation: Observation): Action[] {
  if (status.scan.activity === "resilver" && status.scan.inProgress) return [];
  return devicesOf(cspi)
    .filter(
      (device) =>
        observation.claims?.[device.blockDeviceName]?.[ANNOTATION.bdPredecessor] &&
        settledMember(status, device.devLink, observation),
    )
    .map((device): Action => ({
      kind: "clear-predecessor",
      key: `clear-predecessor:${device.blockDeviceName}`,
      claim: claimName(device.blockDeviceName),
      blockDevices: [device.blockDeviceName],
    }));
}

function settledMember(status: PoolStatus, devLink: string, observation: Observation): Vdev | undefined {
  const info = observation.devices[devLink];
  const walk = (vdev: Vdev, insideReplacing: boolean): Vdev | undefined => {
    if (vdev.children.length === 0)
      return !insideReplacing && vdev.state === "ONLINE" && sameDevice(vdev, devLink, info)
        ? vdev
        : undefined;
    for (const child of vdev.children) {
      const found = walk(child, insideReplacing || vdev.kind === "replacing");
      if (found) return found;
    }
    return undefined;
  };
  for (const top of [...status.layout.data, ...status.layout.logs]) {
    const found = walk(top, false);
    if (found) return found;
  }
  return undefined;
}
