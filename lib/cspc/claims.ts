// Which BlockDeviceClaims cspc-sync returns. Several steps of the sync want claims for their own reasons;
// each returns its wants, and one merge (mergeClaims) decides, with a fixed precedence, what every claim
// says. The answer does not depend on the order in which the steps run.
import { ANNOTATION, LABEL } from "../../api/constants.js";
import type { BlockDeviceClaim } from "../../api/types.js";
import type { Inventory } from "../inventory.js";
import { claimObject, devicesOf } from "./build.js";

/** The steps that want claims, highest precedence first. */
export const CLAIM_PRECEDENCE = [
  /** A new pool's devices, claimed before its CSPI is created. */
  "newPool",
  /**
   * A live pool's day-2 plan: devices it expands onto, each replacement's new device with the device it
   * replaces, and each spare or read cache device leaving the pool, marked with the path to remove.
   */
  "dayTwo",
  /** A spare or read cache device whose removal the node daemon has not confirmed yet: it keeps its mark. */
  "removalPending",
  /** Every device an observed CSPI lists: the node daemon may still use it. */
  "listedByCspi",
  /** Paused, or the spec refused as a whole: every claim stays as observed. */
  "heldWhileFrozen",
  /** A device being replaced, while its successor's claim is kept: it holds data until the resilver ends. */
  "replacedDevice",
] as const;

export type ClaimSource = (typeof CLAIM_PRECEDENCE)[number];

/**
 * One step wants the claim of `device` to exist, naming `cspi`, marked as replacing `predecessor`, or as
 * leaving the pool (`removing`: the device path the node daemon removes).
 */
export interface ClaimWant {
  device: string;
  cspi: string;
  predecessor?: string;
  removing?: string;
}

export interface ClaimPart {
  source: ClaimSource;
  /** In the step's own order; within one step the first want of a device counts. */
  wants: readonly ClaimWant[];
}

/**
 * The claims of all steps, one per device. Every device any step wants is in the answer: a claim must never
 * be released while any step wants it held (NDM would hand the device to someone else, or wipe it). When
 * steps want the same device's claim with different content, the step earlier in CLAIM_PRECEDENCE decides
 * it: the steps that plan a change this sync (a new pool, a day-2 expansion or replacement) say where the
 * device is going and which device it replaces; the steps that only hold claims say where it was last seen.
 */
export function mergeClaims(parts: readonly ClaimPart[]): Map<string, ClaimWant> {
  const rank = (part: ClaimPart) => CLAIM_PRECEDENCE.indexOf(part.source);
  const merged = new Map<string, ClaimWant>();
  for (const part of [...parts].sort((a, b) => rank(a) - rank(b))) {
    for (const want of part.wants) if (!merged.has(want.device)) merged.set(want.device, want);
  }
  return merged;
}

/** Every device an observed CSPI lists keeps its claim while the CSPI exists. */
export function claimsListedByCspis(inventory: Inventory): ClaimWant[] {
  return [...inventory.cspis.values()].flatMap((cspi) =>
    devicesOf(cspi.spec?.raidGroups).map((device) => ({ device, cspi: cspi.metadata.name! })),
  );
}

/**
 * Every claim marked for removal whose CSPI still exists, mark kept: the node daemon clears the mark once
 * `zpool remove` is done, and only then is the claim released (docs/adr/0026-spare-and-read-cache-devices-may-leave-a-live.md).
 */
export function claimsBeingRemoved(inventory: Inventory): ClaimWant[] {
  return [...inventory.ownClaims].flatMap(([device, own]) => {
    const removing = own.metadata.annotations?.[ANNOTATION.bdRemoval];
    const cspi = own.metadata.labels?.[LABEL.cspi];
    return removing !== undefined && cspi && inventory.cspis.has(cspi) ? [{ device, cspi, removing }] : [];
  });
}

/** Every observed claim as it is: nothing changes, so no claim goes away either. */
export function claimsAsObserved(inventory: Inventory): ClaimWant[] {
  return [...inventory.ownClaims].map(([device, own]) => ({
    device,
    cspi: own.metadata.labels?.[LABEL.cspi] ?? "",
  }));
}

/**
 * The claim of each device being replaced whose successor's claim is kept, naming the successor's CSPI; and
 * so on down a chain of replacements, since a device replaced by a kept one holds data too.
 */
export function claimsOfReplacedDevices(inventory: Inventory, kept: ReadonlySet<string>): ClaimWant[] {
  const wants: ClaimWant[] = [];
  const held = new Set(kept);
  let frontier = [...held];
  while (frontier.length > 0) {
    const next: string[] = [];
    for (const device of frontier) {
      const own = inventory.ownClaims.get(device);
      const predecessor = own?.metadata.annotations?.[ANNOTATION.bdPredecessor];
      const cspi = own?.metadata.labels?.[LABEL.cspi];
      if (!predecessor || !cspi || held.has(predecessor)) continue;
      held.add(predecessor);
      wants.push({ device: predecessor, cspi });
      next.push(predecessor);
    }
    frontier = next;
  }
  return wants;
}

/**
 * The claim objects, sorted by name. A claim keeps the predecessor mark it carries unless its want names one:
 * a replacement's mark stays until the node daemon removes it after the resilver.
 */
export function claimObjects(
  wants: ReadonlyMap<string, ClaimWant>,
  inventory: Inventory,
): BlockDeviceClaim[] {
  return [...wants.values()]
    .map(({ device, cspi, predecessor, removing }) => {
      const marked =
        predecessor ?? inventory.ownClaims.get(device)?.metadata.annotations?.[ANNOTATION.bdPredecessor];
      return claimObject(device, inventory, {
        cspi,
        ...(marked ? { predecessor: marked } : {}),
        ...(removing !== undefined ? { removing } : {}),
      });
    })
    .sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""));
}
