// The pure planner: (CSPI, observation, this node, clock) → ordered actions and the reasons for not acting.
// It never runs anything. The daemon executes the first action, observes again and plans again, so each
// action is decided on what the previous one really did.
import { ANNOTATION, DEFAULTS, FINALIZER, POOL_REMOVAL_REQUESTED, type RaidType } from "../api/constants.js";
import type { CSPI, CSPIRaidGroup } from "../api/types.js";
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

export function plan(given: PlanInput): Plan {
  const input = withoutPoolHeldElsewhere(given);
  const { cspi, observation } = input;
  const invalid = cspiProblems(cspi, input.deviceRoots);
  const problems =
    invalid.length > 0 ? invalid : resolvedPathProblems(cspi, observation.devices, input.deviceRoots);
  const pool = zpoolName(cspi.metadata.name ?? "");
  const imported = observation.pool !== undefined;
  const importedOn = cspi.status?.importedOn ?? "";
  const target = cspi.spec?.hostName === input.hostName;
  const handshake = importHandshake(input);
  const statusOwner = imported || importedOn === input.nodeName || (target && handshake.allowed);
  if (problems.length > 0) {
    return {
      actions: [],
      holds: problems.map((message) => ({ reason: "InvalidSpec", message })),
      statusOwner,
    };
  }
  if (cspi.metadata.deletionTimestamp) return planDeletion(input, pool, handshake, statusOwner);
  if (!target) {
    // The pool moved to another node: hand it over (export), which clears status.importedOn.
    return { actions: imported ? [exportAction(pool)] : [], holds: [], statusOwner };
  }
  const actions: Action[] = [];
  const holds: Hold[] = [];
  if (input.manageFinalizer && !hasFinalizer(cspi))
    actions.push({ kind: "add-finalizer", key: "add-finalizer" });
  if (!observation.pool) {
    planBringUp(input, pool, handshake, actions, holds);
    return { actions, holds, statusOwner };
  }
  planDayTwo(input, pool, observation.pool, actions, holds);
  // Last, and only when nothing else is planned or held: a scrub never runs beside a day-2 change.
  const scrub = planScrub({ cspi, pool, observed: observation.pool, actions, holds, now: input.now });
  if (scrub.action) actions.push(scrub.action);
  return { actions, holds, statusOwner, ...(scrub.waiting ? { scrubWaiting: scrub.waiting } : {}) };
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
  const heartbeat = cspi.status?.lastUpdateTime ? Date.parse(cspi.status.lastUpdateTime) : Number.NaN;
  const ageSeconds = Number.isNaN(heartbeat) ? Infinity : Math.floor((now.getTime() - heartbeat) / 1000);
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
  const since = cspi.status?.lastUpdateTime ? `since ${cspi.status.lastUpdateTime}` : "ever";
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

function planDeletion(input: PlanInput, pool: string, handshake: Handshake, statusOwner: boolean): Plan {
  const { cspi, observation } = input;
  const removal = cspi.metadata.annotations?.[ANNOTATION.poolRemoval] === POOL_REMOVAL_REQUESTED;
  const finalizer = input.manageFinalizer && hasFinalizer(cspi);
  const holds: Hold[] = [];
  if (observation.pool) {
    if (!removal) return { actions: [exportAction(pool)], holds, statusOwner };
    const replicaHold = replicasHold(pool, input.replicas);
    if (replicaHold) return { actions: [], holds: [replicaHold], statusOwner };
    const volumes = observation.pool.volumes;
    if (volumes.length > 0) {
      holds.push({
        reason: "DestroyRefused",
        message:
          `pool ${pool} still holds ${volumes.length} volume(s) (${volumes.slice(0, 5).join(", ")}${volumes.length > 5 ? ", ..." : ""}): ` +
          `delete or move them first; the pool is kept`,
      });
      return { actions: [], holds, statusOwner };
    }
    // The real paths, checked against the device roots above: the labels zeroed are the ones just judged.
    const devices = devicesOf(cspi).map((d) => observation.devices[d.devLink]?.realPath ?? d.devLink);
    return {
      actions: [{ kind: "destroy", key: `destroy:${pool}`, pool, clearLabels: devices }],
      holds,
      statusOwner,
    };
  }
  const target = cspi.spec.hostName === input.hostName;
  if (removal && target && handshake.allowed) {
    // Destroying needs the pool imported; its volumes are checked once it is.
    const candidate = importCandidate(pool, input, holds);
    if (candidate)
      return { actions: [importAction(pool, candidate, input, handshake.force)], holds, statusOwner };
  }
  if (!finalizer) return { actions: [], holds, statusOwner };
  const mine = (cspi.status?.importedOn ?? "") === input.nodeName || target;
  if (!mine) return { actions: [], holds, statusOwner };
  if (!handshake.allowed) return { actions: [], holds: handshake.hold ? [handshake.hold] : [], statusOwner };
  return { actions: [{ kind: "remove-finalizer", key: "remove-finalizer" }], holds, statusOwner };
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

function planBringUp(
  input: PlanInput,
  pool: string,
  handshake: Handshake,
  actions: Action[],
  holds: Hold[],
): void {
  const { cspi, observation } = input;
  if (!handshake.allowed) {
    if (handshake.hold) holds.push(handshake.hold);
    return;
  }
  const candidate = importCandidate(pool, input, holds);
  if (candidate) {
    if (UNIMPORTABLE_STATES.has(candidate.pool.state)) {
      holds.push({
        reason: "ImportFailed",
        message: `pool ${pool} was found on the devices but cannot be imported: it is ${candidate.pool.state}${candidate.pool.status ? ` (${candidate.pool.status})` : ""}`,
      });
      return;
    }
    actions.push(importAction(pool, candidate, input, handshake.force));
    return;
  }
  if (holds.length > 0) return;
  if (cspi.status?.poolName) {
    // Created before: never create again over what may still be the data.
    holds.push({
      reason: "ImportFailed",
      message:
        `pool ${pool} existed but is neither imported nor importable from ${importDescription(input)}: ` +
        `check that the block devices are attached to node ${input.hostName}; the daemon never re-creates a pool that existed`,
    });
    return;
  }
  const existing = cspi.spec.poolConfig?.existingPoolName;
  if (existing && existing !== pool) {
    // Another operator's pool, taken over (docs/decisions.md, 30): imported and renamed, never created over.
    const adopted = adoptionCandidate(existing, pool, input, holds);
    if (adopted) actions.push(importAction(pool, adopted, input, false, existing));
    return;
  }
  const force = cspi.metadata.annotations?.[ANNOTATION.forceCreate] === "true";
  const devices = devicesOf(cspi);
  const blocked = deviceBlocks(devices, observation, pool, force);
  if (blocked.length > 0) {
    holds.push(...blocked);
    return;
  }
  const config = cspi.spec.poolConfig ?? {};
  actions.push({
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

function importCandidate(pool: string, input: PlanInput, holds: Hold[]): ImportCandidate | undefined {
  const named = input.observation.importable.filter((c) => c.pool.name === pool);
  if (named.length === 0) return undefined;
  // The same pool may be listed by the cachefile and the scan; distinct ids are distinct pools.
  const byId = new Map<string, ImportCandidate>();
  for (const candidate of named) {
    const id = candidate.pool.id ?? "";
    if (!byId.has(id)) byId.set(id, candidate);
  }
  const distinct = [...byId.values()];
  if (distinct.length === 1) return distinct[0];
  const devices = devicesOf(input.cspi);
  const ours = distinct.filter((c) =>
    allLeaves(c.pool.layout).some((leaf) =>
      devices.some((d) => sameDevice(leaf, d.devLink, input.observation.devices[d.devLink])),
    ),
  );
  if (ours.length === 1) return ours[0];
  holds.push({
    reason: "ImportAmbiguous",
    message: `${distinct.length} different pools named ${pool} can be imported (ids ${distinct.map((c) => c.pool.id).join(", ")}): import the right one by hand with zpool import <id>`,
  });
  return undefined;
}

/**
 * The pool named `existing` (poolConfig.existingPoolName) to import as `pool`: only when it is found exactly
 * once on the CSPI's devices, can be opened, and holds exactly the CSPI's devices. Otherwise a hold says why.
 */
function adoptionCandidate(
  existing: string,
  pool: string,
  input: PlanInput,
  holds: Hold[],
): ImportCandidate | undefined {
  const { observation } = input;
  const hold = (reason: string, message: string): undefined =>
    void holds.push({ reason, message: `pool ${existing} (poolConfig.existingPoolName) ${message}` });
  if (observation.imported.some((p) => p.name === existing)) {
    return hold(
      "AdoptionWaiting",
      `is imported on this node under its old name: export it (zpool export ${existing}) and it is imported as ${pool}; nothing is created over its devices`,
    );
  }
  const byId = new Map<string, ImportCandidate>();
  for (const c of observation.importable)
    if (c.pool.name === existing && !byId.has(c.pool.id ?? "")) byId.set(c.pool.id ?? "", c);
  const found = [...byId.values()];
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
  return candidate;
}

function importAction(
  pool: string,
  candidate: ImportCandidate,
  input: PlanInput,
  force: boolean,
  renamedFrom?: string,
): Action {
  const cachefile = input.cspi.spec.poolConfig?.cacheFile;
  return {
    kind: "import",
    key: `import:${pool}`,
    pool,
    ...(candidate.pool.id ? { id: candidate.pool.id } : {}),
    from: candidate.source,
    ...(cachefile ? { cachefile } : {}),
    force,
    ...(renamedFrom ? { renamedFrom } : {}),
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
  const holds: Hold[] = [];
  for (const device of devices) {
    const info = observation.devices[device.devLink];
    if (!info?.exists) {
      holds.push({
        reason: "DeviceMissing",
        message: `block device ${device.blockDeviceName} (${device.devLink}) does not exist on this node: attach it or fix ${device.source}`,
      });
      continue;
    }
    const tooSmall = info.size === undefined ? undefined : deviceSizeProblem(info.size);
    if (tooSmall) {
      holds.push({
        reason: "DeviceTooSmall",
        message: `block device ${device.blockDeviceName} (${device.devLink}) ${tooSmall}: attach a larger device or fix ${device.source}`,
      });
      continue;
    }
    const active = poolHoldingDevice(observation.imported, device.devLink, info, (p) => p.name === pool);
    if (active) {
      holds.push({
        reason: "DeviceInUse",
        message: `block device ${device.blockDeviceName} (${device.devLink}) belongs to imported pool ${active.name}: it is never reused`,
      });
      continue;
    }
    const exported = poolHoldingDevice(
      observation.importable.map((c) => c.pool),
      device.devLink,
      info,
      (p) => p.name === pool,
    );
    if (exported && !force) {
      holds.push({
        reason: "DeviceInUse",
        message:
          `block device ${device.blockDeviceName} (${device.devLink}) carries a label of exported pool ${exported.name}: ` +
          `import that pool, or clear the device, or annotate the CSPI with ${ANNOTATION.forceCreate}=true to overwrite it`,
      });
    }
  }
  return holds;
}

const SECTION_OF_ROLE: Record<GroupRole, Section> = {
  data: "data",
  writeCache: "logs",
  readCache: "cache",
  spare: "spares",
};

function planDayTwo(
  input: PlanInput,
  pool: string,
  observed: PoolObservation,
  actions: Action[],
  holds: Hold[],
): void {
  const { cspi, observation } = input;
  const force = cspi.metadata.annotations?.[ANNOTATION.forceCreate] === "true";
  const listed = devicesOf(cspi);
  const layout = observed.status.layout;
  const info = (devLink: string) => observation.devices[devLink];
  const inPool = (devLink: string) =>
    allLeaves(layout).some((leaf) => sameDevice(leaf, devLink, info(devLink)));
  const isListed = (leaf: Vdev) => listed.some((d) => sameDevice(leaf, d.devLink, info(d.devLink)));
  const replacements: Action[] = [];
  const additions: Action[] = [];
  const removals: Action[] = [];

  cspi.spec.raidGroups.forEach((group, g) => {
    const role = groupRole(group);
    const section = layout[SECTION_OF_ROLE[role]];
    const devices = listed.filter((d) => d.group === g);
    const fresh = devices.filter((d) => !inPool(d.devLink));
    const usable = fresh.filter((d) => deviceBlocks([d], observation, pool, force).length === 0);
    holds.push(...fresh.flatMap((d) => deviceBlocks([d], observation, pool, force)));
    const where = `raid group ${g} (${role === "data" ? group.type : role})`;
    const mismatch = layoutMismatch(group, role, devices, layout, info, `${where} of pool ${pool}`);
    if (mismatch) {
      holds.push(mismatch);
      return;
    }

    if (role === "spare" || role === "readCache") {
      if (usable.length > 0)
        additions.push(
          addAction(pool, { role, type: "stripe", devices: usable.map((d) => d.devLink) }, force, usable),
        );
      return;
    }
    if (group.type === "stripe") {
      if (usable.length > 0)
        additions.push(
          addAction(pool, { role, type: "stripe", devices: usable.map((d) => d.devLink) }, force, usable),
        );
      return;
    }
    const touching = section.filter(
      (top) =>
        top.children.length > 0 &&
        devices.some((d) => leaves([top]).some((leaf) => sameDevice(leaf, d.devLink, info(d.devLink)))),
    );
    if (touching.length === 0) {
      if (fresh.length === devices.length && usable.length === devices.length) {
        additions.push(addAction(pool, vdevSpec(group), force, usable));
      }
      return;
    }
    if (touching.length > 1) {
      holds.push({
        reason: "GroupMismatch",
        message: `${where} has devices in ${touching.length} different vdevs of pool ${pool} (${touching.map((t) => t.name).join(", ")}): fix the CSPC`,
      });
      return;
    }
    const vdev = touching[0];
    // Members of a replacing vdev that are not listed are on their way out: ZFS detaches them after resilver.
    const gone = membersOutsideReplacing(vdev).filter((leaf) => !isListed(leaf));
    const pairs = Math.min(gone.length, usable.length);
    for (let i = 0; i < pairs; i++) {
      const old = gone[i];
      const next = usable[i];
      replacements.push({
        kind: "replace",
        key: `replace:${pool}:${old.name}`,
        pool,
        old: old.name,
        oldDevice: old.device ?? old.name,
        newDevice: next.devLink,
        blockDevices: [next.blockDeviceName],
      });
    }
    if (usable.length > pairs) {
      holds.push({
        reason: "UnsupportedChange",
        message: `${where} lists ${usable
          .slice(pairs)
          .map((d) => d.blockDeviceName)
          .join(
            ", ",
          )} but no member left the group to be replaced: a ${group.type} group cannot grow by a device`,
      });
    }
    if (gone.length > pairs && fresh.length === 0) {
      holds.push({
        reason: "DeviceNotListed",
        message: `pool ${pool} member ${gone
          .slice(pairs)
          .map((l) => l.device ?? l.name)
          .join(", ")} of ${vdev.name} is no longer listed in ${where}: list its replacement to replace it`,
      });
    }
  });

  // Top-level single devices that nobody lists any more: ZFS cannot take them out of the data.
  const unlisted = [...layout.data, ...layout.logs].filter(
    (top) => top.children.length === 0 && !isListed(top),
  );
  if (unlisted.length > 0) {
    holds.push({
      reason: "DeviceNotListed",
      message: `pool ${pool} has devices no raid group lists (${unlisted.map((l) => l.device ?? l.name).join(", ")}): striped devices cannot be removed from a pool`,
    });
  }

  // Spares and read caches no group lists any more (a device or a whole group removed): they hold no data,
  // so they leave the pool; a spare standing in for a failed device stays until it is no longer needed.
  for (const leaf of [...leaves(layout.spares), ...leaves(layout.cache)]) {
    if (isListed(leaf)) continue;
    if (leaf.state === "INUSE") {
      holds.push({
        reason: "SpareInUse",
        message: `spare ${leaf.name} is no longer listed but is in use; it is removed once the pool no longer needs it`,
      });
    } else
      removals.push({
        kind: "remove",
        key: `remove:${pool}:${leaf.name}`,
        pool,
        device: removalTarget(leaf),
      });
  }

  actions.push(...replacements, ...additions, ...removals);
  const grow = growAction(pool, observed, listed, observation);
  if (grow) actions.push(grow);
  actions.push(...propertyActions(cspi, pool, observed));
  if (observation.claims) {
    actions.push(...predecessorActions(cspi, observed.status, observation));
    actions.push(...removalConfirmations(cspi, observed.status, observation));
  }
}

/**
 * Claims marked for removal (ANNOTATION.bdRemoval: the device's path) whose device the CSPI no longer lists
 * and the pool no longer has: the mark goes, and with it cspc-sync releases the claim.
 */
function removalConfirmations(cspi: CSPI, status: PoolStatus, observation: Observation): Action[] {
  const listed = new Set(devicesOf(cspi).map((d) => d.blockDeviceName));
  const out: Action[] = [];
  for (const [device, annotations] of Object.entries(observation.claims ?? {})) {
    const devLink = annotations[ANNOTATION.bdRemoval];
    if (devLink === undefined || listed.has(device)) continue;
    const info = devLink ? observation.devices[devLink] : undefined;
    if (devLink && allLeaves(status.layout).some((leaf) => sameDevice(leaf, devLink, info))) continue;
    out.push({
      kind: "confirm-removal",
      key: `confirm-removal:${device}`,
      claim: claimName(device),
      blockDevices: [device],
    });
  }
  return out.sort((a, b) => a.key.localeCompare(b.key));
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
function layoutMismatch(
  group: CSPIRaidGroup,
  role: GroupRole,
  devices: readonly ListedDevice[],
  layout: PoolStatus["layout"],
  info: (devLink: string) => Observation["devices"][string],
  where: string,
): Hold | undefined {
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

function addAction(pool: string, vdev: VdevSpec, force: boolean, devices: readonly ListedDevice[]): Action {
  return {
    kind: "add",
    key: `add:${pool}:${vdev.devices.join(",")}`,
    pool,
    vdevs: [vdev],
    force,
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
  const members: string[] = [];
  let expected = 0;
  for (const top of observed.status.layout.data) {
    const sizes: number[] = [];
    for (const leaf of leaves([top])) {
      const device = listed.find((d) => sameDevice(leaf, d.devLink, observation.devices[d.devLink]));
      const size = device ? observation.devices[device.devLink]?.size : undefined;
      if (size === undefined || leaf.state !== "ONLINE") return undefined;
      sizes.push(size);
      members.push(leaf.name);
    }
    const smallest = Math.min(...sizes);
    expected += top.children.length === 0 || top.kind === "mirror" ? smallest : smallest * sizes.length;
  }
  if (expected - observed.size < Math.max(GROW_MIN_BYTES, observed.size * GROW_MIN_FRACTION))
    return undefined;
  return { kind: "grow", key: `grow:${pool}:${expected}`, pool, devices: members };
}

function propertyActions(cspi: CSPI, pool: string, observed: PoolObservation): Action[] {
  const config = cspi.spec.poolConfig ?? {};
  const out: Action[] = [];
  const compression = config.compression ?? DEFAULTS.compression;
  if (observed.compression !== undefined && observed.compression !== compression) {
    out.push(datasetProperty(pool, "compression", compression));
  }
  const cachefile = config.cacheFile ?? "";
  if (observed.cachefile !== undefined && observed.cachefile !== cachefile) {
    out.push({
      kind: "set-pool-property",
      key: `set:${pool}:cachefile`,
      pool,
      property: "cachefile",
      value: cachefile || "none",
    });
  }
  const readOnly = shouldBeReadOnly(config.roThresholdLimit ?? DEFAULTS.roThresholdLimit, observed.space);
  if (readOnly !== undefined && observed.readonly !== undefined && observed.readonly !== readOnly) {
    out.push(datasetProperty(pool, "readonly", readOnly ? "on" : "off"));
  }
  return out;
}

function datasetProperty(dataset: string, property: string, value: string): Action {
  return { kind: "set-dataset-property", key: `set:${dataset}:${property}`, dataset, property, value };
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
  const out: Action[] = [];
  for (const device of devicesOf(cspi)) {
    const annotations = observation.claims?.[device.blockDeviceName];
    if (!annotations?.[ANNOTATION.bdPredecessor]) continue;
    const member = settledMember(status, device.devLink, observation);
    if (!member) continue;
    out.push({
      kind: "clear-predecessor",
      key: `clear-predecessor:${device.blockDeviceName}`,
      claim: claimName(device.blockDeviceName),
      blockDevices: [device.blockDeviceName],
    });
  }
  return out;
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
