// What a host's ZFS looks like to the node daemon and the pool agent: the shapes the observers fill in from
// zpool/zfs/fs and the planners and reporter read. Plain data, so golden fixtures can state an observation in YAML.
import { basename } from "node:path";
import { allLeaves, type PoolFacts, type PoolStatus, type Vdev } from "./parse.js";

export interface DeviceInfo {
  /** The devLink exists on the node (a real udev removal makes the node vanish; a deleted file too). */
  exists: boolean;
  /** Bytes, for files and block devices. */
  size?: number;
  /** Resolved symlinks, so /dev/disk/by-id/x matches a pool member shown as /dev/sdb. */
  realPath?: string;
}

export interface ImportSource {
  /** Listed from this cachefile (`zpool import -c`). */
  cachefile?: string;
  /** Listed by scanning these directories (`zpool import -d`). */
  dirs?: string[];
}

export interface ImportCandidate {
  pool: PoolStatus;
  source: ImportSource;
}

/** The CSPI's own pool, when it is imported on this node. */
export interface PoolObservation extends PoolFacts {
  status: PoolStatus;
  /** Datasets and volumes under the pool, excluding the root: the volumes the pool holds. */
  volumes: string[];
}

/** An imported pool as observed from its status and the facts read of it. */
export function poolObservation(status: PoolStatus, facts: PoolFacts): PoolObservation {
  return { status, volumes: (facts.datasets ?? []).map((d) => d.name), ...facts };
}

export interface Observation {
  /** Every pool imported on the node, ours included: devices in use elsewhere are never reused. */
  imported: PoolStatus[];
  pool?: PoolObservation;
  /** Pools that `zpool import` could bring in (cachefile first, then a device scan); only when ours is not imported. */
  importable: ImportCandidate[];
  /** By devLink. */
  devices: Record<string, DeviceInfo>;
  /** Annotations of the CSPI's block device claims by block device name; absent when not read. */
  claims?: Record<string, Record<string, string>>;
  /**
   * When the daemon of the node the CSPI says holds the pool (status.importedOn, another node) last renewed its
   * Lease (RFC 3339); absent when not read or that node has none. Read only while the pool is held elsewhere.
   */
  holderRenewedAt?: string;
}

/** Does this pool member denote this device? Full path, resolved path, or short name under /dev. */
export function sameDevice(member: Vdev, devLink: string, info: DeviceInfo | undefined): boolean {
  const shown = member.device ?? member.name;
  const candidates = [devLink, info?.realPath].filter((p): p is string => !!p);
  return candidates.some(
    (path) =>
      shown === path || (!shown.includes("/") && path.startsWith("/dev/") && basename(path) === shown),
  );
}

/** The pool (imported or importable) other than `except` that has this device as a member. */
export function poolHoldingDevice(
  pools: readonly PoolStatus[],
  devLink: string,
  info: DeviceInfo | undefined,
  except?: (pool: PoolStatus) => boolean,
): PoolStatus | undefined {
  return pools.find(
    (pool) => !except?.(pool) && allLeaves(pool.layout).some((leaf) => sameDevice(leaf, devLink, info)),
  );
}
