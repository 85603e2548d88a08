// Rules that need the cluster's objects: which node a pool lands on and whether its devices are usable.
// Shared by cspc-sync and the admission webhook.
import { LABEL } from "../../api/constants.js";
import type { BlockDevice, PoolSpec } from "../../api/types.js";
import { claimName } from "../names.js";
import { deviceCapacity, deviceHost, nodeHostname, type Inventory } from "../inventory.js";
import { deviceSizeProblem, poolLabel, type Violation } from "./pool-spec.js";

export interface Placement {
  /** The selected node's kubernetes.io/hostname label. */
  host?: string;
  violation?: Violation;
}

export function resolveNode(pool: PoolSpec, index: number, inventory: Inventory): Placement {
  const selector = pool.nodeSelector ?? {};
  const keys = Object.keys(selector);
  // Only nodes carrying the first selector label can match, so each pool looks at its own node(s), not all.
  const candidates =
    keys.length === 0 ? inventory.nodes : (inventory.nodesByLabel.get(keys[0])?.get(selector[keys[0]]) ?? []);
  const matches = candidates.filter((node) => keys.every((k) => node.metadata.labels?.[k] === selector[k]));
  if (matches.length === 1) return { host: nodeHostname(matches[0]) };
  const where = poolLabel(pool, index);
  if (matches.length === 0) {
    return {
      violation: {
        pool: index,
        reason: "NodeNotFound",
        message: `${where} selects no node${labelKeyHint(keys, inventory)}: fix the nodeSelector so it matches exactly one node's labels (kubectl get nodes --show-labels)`,
      },
    };
  }
  const names = matches.map(nodeHostname).sort();
  return {
    violation: {
      pool: index,
      reason: "AmbiguousNodeSelector",
      message: `${where} selects ${matches.length} nodes (${names.join(", ")}); a pool lives on one node: narrow the nodeSelector, e.g. kubernetes.io/hostname: ${names[0]}`,
    },
  };
}

/** Label keys are case-sensitive; the seed examples' kubernetes.io/hostName is a classic miss. */
function labelKeyHint(keys: string[], inventory: Inventory): string {
  const known = inventory.nodesByLabel;
  for (const key of keys) {
    if (known.has(key)) continue;
    const near = [...known.keys()].find((k) => k.toLowerCase() === key.toLowerCase());
    if (near) return ` (no node has label ${key}; did you mean ${near}?)`;
  }
  return "";
}

/** Two pools of one CSPC on one node would fight over the node's daemon and devices. */
export function checkOneNodePerPool(hosts: readonly (string | undefined)[]): Violation[] {
  const byHost = new Map<string, number[]>();
  hosts.forEach((host, i) => {
    if (!host) return;
    byHost.set(host, [...(byHost.get(host) ?? []), i]);
  });
  const out: Violation[] = [];
  for (const [host, indexes] of byHost) {
    if (indexes.length < 2) continue;
    const message = `${indexes.map((j) => `spec.pools[${j}]`).join(" and ")} select the same node ${host}: one CSPC has at most one pool per node, put their raid groups in one pool spec`;
    for (const i of indexes) out.push({ pool: i, reason: "DuplicateNode", message });
  }
  return out;
}

export interface DeviceCheckOptions {
  /** Devices the pool already uses (in its observed CSPI): they carry our own ZFS label, which is expected. */
  inUse?: ReadonlySet<string>;
  /** Skip the node check, e.g. for a pool whose migration waits for its devices to move. */
  skipNodeCheck?: boolean;
}

/** A pool spec, by its index in spec.pools, on the node its nodeSelector resolved to. */
export interface PlacedPool {
  pool: PoolSpec;
  index: number;
  host: string;
}

/** Why each listed device cannot be used by this pool on this host. */
export function checkDevices(
  placed: PlacedPool,
  devices: readonly string[],
  inventory: Inventory,
  options: DeviceCheckOptions = {},
): Violation[] {
  const { pool, index } = placed;
  return devices.flatMap((name) =>
    deviceProblems(name, placed.host, inventory, options).map(([reason, message]): Violation => ({
      pool: index,
      reason,
      message: `${poolLabel(pool, index)}: ${message}`,
    })),
  );
}

/** A reason and its message, which names the device first. */
type DeviceProblem = [reason: string, message: string];

function deviceProblems(
  name: string,
  host: string,
  inventory: Inventory,
  options: DeviceCheckOptions,
): DeviceProblem[] {
  const ns = inventory.namespace;
  const bd = inventory.blockDevices.get(name);
  if (!bd) {
    return [
      [
        "BlockDeviceNotFound",
        `block device ${name} does not exist in namespace ${ns}: check the name (kubectl get bd -n ${ns})`,
      ],
    ];
  }
  const ours = options.inUse?.has(name) || inventory.ownClaims.has(name);
  return [
    options.skipNodeCheck ? undefined : otherNodeProblem(name, bd, host),
    tooSmallProblem(name, bd),
    notActiveProblem(name, bd),
    contentProblem(name, bd, ours),
    claimProblem(name, inventory),
  ].filter((problem) => problem !== undefined);
}

function otherNodeProblem(name: string, bd: BlockDevice, host: string): DeviceProblem | undefined {
  const bdHost = deviceHost(bd);
  if (bdHost === host) return undefined;
  return [
    "BlockDeviceOnOtherNode",
    `block device ${name} is attached to node ${bdHost ?? "(unknown)"}, not to ${host} where the nodeSelector puts the pool: list it under the pool of its node, or fix the nodeSelector`,
  ];
}

function tooSmallProblem(name: string, bd: BlockDevice): DeviceProblem | undefined {
  const capacity = deviceCapacity(bd);
  const tooSmall = capacity === undefined ? undefined : deviceSizeProblem(capacity);
  return tooSmall
    ? ["BlockDeviceTooSmall", `block device ${name} ${tooSmall}: pick a larger device`]
    : undefined;
}

function notActiveProblem(name: string, bd: BlockDevice): DeviceProblem | undefined {
  const state = bd.status?.state;
  if (state === undefined || state === "Active") return undefined;
  return [
    "BlockDeviceNotActive",
    `block device ${name} is ${state}, not Active: reconnect the disk or pick another device`,
  ];
}

/** A filesystem on the device, or a ZFS label that is not our own pool's (`ours`). */
function contentProblem(name: string, bd: BlockDevice, ours: boolean): DeviceProblem | undefined {
  const fsType = bd.spec?.filesystem?.fsType;
  if (fsType && fsType !== "zfs_member") {
    return [
      "BlockDeviceHasFilesystem",
      `block device ${name} carries a filesystem (${fsType}): if its data is not needed wipe it (wipefs -a ${bd.spec?.path ?? "<device>"}) and wait for NDM to rescan, or pick another device`,
    ];
  }
  if (fsType !== "zfs_member" || ours) return undefined;
  return [
    "BlockDeviceHasZfsLabel",
    `block device ${name} carries a ZFS label, so another pool's data may be on it: import that pool elsewhere, or if it is no longer needed clear it (zpool labelclear -f ${bd.spec?.path ?? "<device>"})`,
  ];
}

/** A claim on the device left by an earlier install of this CSPC, else one of anyone else. */
function claimProblem(name: string, inventory: Inventory): DeviceProblem | undefined {
  const leftover = leftoverClaim(name, inventory);
  if (leftover) {
    return [
      "BlockDeviceClaimFromEarlierInstall",
      `block device ${name} is claimed by BlockDeviceClaim ${inventory.namespace}/${leftover}, left by an earlier CStorPoolCluster named ${inventory.cspcName} (its pool's data is kept on the disk): do not release that claim, NDM would wipe the disk; let this CStorPoolCluster adopt its claims: kubectl -n ${inventory.namespace} label bdc -l ${LABEL.cspc}=${inventory.cspcName} controller-uid=${inventory.cspcUid || "<uid of this CStorPoolCluster>"} --overwrite (docs/install.md, Reinstall)`,
    ];
  }
  const foreign = foreignClaim(name, inventory);
  if (!foreign) return undefined;
  return [
    "BlockDeviceClaimedElsewhere",
    `block device ${name} is claimed by ${foreign}: release that claim or pick another device`,
  ];
}

/**
 * A claim on the device carrying this CSPC's name but not owned by it: left by an earlier CSPC of the same
 * name (an uninstall that kept the data). Its name, or undefined.
 */
function leftoverClaim(device: string, inventory: Inventory): string | undefined {
  if (inventory.ownClaims.has(device)) return undefined;
  return (inventory.claimsByDevice.get(device) ?? []).find(
    (c) => c.metadata.labels?.[LABEL.cspc] === inventory.cspcName,
  )?.metadata.name;
}

/** A claim on the device that is not this CSPC's own, described for a message; undefined if none. */
export function foreignClaim(device: string, inventory: Inventory): string | undefined {
  const ownName = inventory.ownClaims.get(device)?.metadata.name;
  const other = (inventory.claimsByDevice.get(device) ?? []).find(
    (claim) => ownName === undefined || claim.metadata.name !== ownName,
  );
  if (other)
    return `BlockDeviceClaim ${other.metadata.namespace ?? inventory.namespace}/${other.metadata.name}`;
  // NDM's side of a claim: the device says Claimed, by a claim this request may not carry.
  const bd = inventory.blockDevices.get(device);
  const ref = bd?.spec?.claimRef;
  if (bd?.status?.claimState !== "Claimed" || !ref?.name || ref.name === (ownName ?? claimName(device)))
    return undefined;
  return `BlockDeviceClaim ${ref.namespace ?? inventory.namespace}/${ref.name}`;
}
