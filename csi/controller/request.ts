// What a controller request asks for, checked before anything is read or written
// (docs/adr/0047-the-csi-driver-one-writer-per-volume.md): the volume or snapshot id a CSI name becomes, the
// StorageClass's and VolumeSnapshotClass's parameters, the capabilities a cStor volume can serve (the node judges
// them the same way), the size a capacity range asks for, and a list's page. Pure; a refusal is a CsiError naming
// the field and the fix.
import { createHash } from "node:crypto";
import { LIMITS } from "../../api/constants.js";
import {
  CLASS_PARAMETERS,
  FILESYSTEMS,
  KUBERNETES_PARAMETER_PREFIX,
  PARAMETER_FIX,
} from "../../api/csi-class.js";
import { isDnsSubdomain } from "../../lib/names.js";
import { aborted, invalidArgument, outOfRange } from "../errors.js";
import type { AccessMode, CapacityRange, VolumeCapability } from "../protocol.js";

const MIB = 1024 * 1024;
/** The size of a volume asked for without a capacity range. */
export const DEFAULT_VOLUME_BYTES = 1024 * MIB;

/** One node at a time: iSCSI serves a LUN to one initiator, and the CStorVolume names one node. */
const SERVED_MODES: readonly AccessMode[] = [
  "SINGLE_NODE_WRITER",
  "SINGLE_NODE_READER_ONLY",
  "SINGLE_NODE_SINGLE_WRITER",
  "SINGLE_NODE_MULTI_WRITER",
];
/** Filesystems the node makes ("" leaves the choice to the node: ext4). */
const FS_TYPES: readonly string[] = ["", ...FILESYSTEMS];

/** The provisioner's --extra-create-metadata keys: the claim is recorded on the CVC. */
export const CLAIM_KEYS = {
  pvcName: `${KUBERNETES_PARAMETER_PREFIX}pvc/name`,
  pvcNamespace: `${KUBERNETES_PARAMETER_PREFIX}pvc/namespace`,
} as const;
const PARAMETERS: readonly string[] = CLASS_PARAMETERS;
/** csi-snapshotter's --extra-create-metadata keys: the VolumeSnapshot is recorded on the CStorVolumeSnapshot. */
export const SNAPSHOT_KEYS = {
  name: `${KUBERNETES_PARAMETER_PREFIX}volumesnapshot/name`,
  namespace: `${KUBERNETES_PARAMETER_PREFIX}volumesnapshot/namespace`,
} as const;

/** Whether a name is a DNS label: a Service, and so a volume, may have it. */
function isDnsLabel(name: string): boolean {
  return name.length <= 63 && /^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(name);
}

/** A CSI name as an object's name: the name itself when it is a DNS label, else `prefix` and a hash of it. */
function objectNameFor(name: string, prefix: string): string {
  return isDnsLabel(name) ? name : `${prefix}${createHash("sha256").update(name).digest("hex").slice(0, 32)}`;
}

/**
 * The CStorVolumeConfig a CSI name becomes: the name itself when it is a DNS label (external-provisioner's
 * pvc-<uid>, so the PV and every object of the volume share it), else csi- and a hash of it.
 */
export function volumeIdFor(name: string): string {
  return objectNameFor(name, "csi-");
}

/**
 * The CStorVolumeSnapshot a CSI snapshot name becomes: the name itself when it is a DNS label (csi-snapshotter's
 * snapshot-<uid>, so the VolumeSnapshotContent's handle, the object and each replica's ZFS snapshot share it),
 * else csi-snap- and a hash of it (docs/adr/0052-the-csi-controller-answers-a-snapshot-once-every-replica-has-it.md).
 */
export function snapshotIdFor(name: string): string {
  return objectNameFor(name, "csi-snap-");
}

export function required(value: string | undefined, field: string, rpc: string): string {
  if (!value) throw invalidArgument(`${rpc}: ${field} is empty; the CO must name it`);
  return value;
}

export interface VolumeParameters {
  cstorPoolCluster: string;
  replicaCount: number;
  /** "<namespace>/<name>" of the PVC, when the provisioner says (--extra-create-metadata). */
  claim?: string;
}

/** The StorageClass's parameters; every unknown key is refused, so a typo is not a silent default. */
export function volumeParameters(parameters: Record<string, string> | undefined): VolumeParameters {
  const given = parameters ?? {};
  const unknown = Object.keys(given).filter(
    (key) => !PARAMETERS.includes(key) && !key.startsWith(KUBERNETES_PARAMETER_PREFIX),
  );
  if (unknown.length > 0)
    throw invalidArgument(`parameters ${unknown.sort().join(", ")} ${PARAMETER_FIX.unknown}`);
  const namespace = given[CLAIM_KEYS.pvcNamespace];
  const name = given[CLAIM_KEYS.pvcName];
  return {
    cstorPoolCluster: poolClusterOf(given.cstorPoolCluster),
    replicaCount: replicaCountOf(given.replicaCount),
    ...(namespace && name ? { claim: `${namespace}/${name}` } : {}),
  };
}

export interface SnapshotParameters {
  /** "<namespace>/<name>" of the VolumeSnapshot, when csi-snapshotter says (--extra-create-metadata). */
  volumeSnapshot?: string;
}

/** The VolumeSnapshotClass's parameters: none are the driver's, so any key but Kubernetes' own is refused. */
export function snapshotParameters(parameters: Record<string, string> | undefined): SnapshotParameters {
  const given = parameters ?? {};
  const unknown = Object.keys(given).filter((key) => !key.startsWith(KUBERNETES_PARAMETER_PREFIX));
  if (unknown.length > 0)
    throw invalidArgument(
      `CreateSnapshot: parameters ${unknown.sort().join(", ")} are not served: a cStor VolumeSnapshotClass takes no parameters; remove them from the class`,
    );
  const namespace = given[SNAPSHOT_KEYS.namespace];
  const name = given[SNAPSHOT_KEYS.name];
  return namespace && name ? { volumeSnapshot: `${namespace}/${name}` } : {};
}

export interface ListingPage {
  /** The first id the page may hold (the previous page's next_token); undefined from the start. */
  from: string | undefined;
  /** At most this many entries; undefined for all. */
  size: number | undefined;
}

/**
 * Where a ListSnapshots page starts and how long it is. The token is the id of the next entry, so a deletion
 * between pages skips nothing that remains; a token that is no id the driver makes is ABORTED (start again).
 */
export function listingPage(
  request: { max_entries?: number; starting_token?: string },
  rpc: string,
): ListingPage {
  const size = request.max_entries ?? 0;
  if (size < 0)
    throw invalidArgument(`${rpc}: max_entries is ${size}; give a positive number, or 0 for every entry`);
  const token = request.starting_token ?? "";
  if (token && !isDnsLabel(token))
    throw aborted(
      `${rpc}: starting_token ${JSON.stringify(token)} is not one this driver gave; list again without it`,
    );
  return { from: token || undefined, size: size || undefined };
}

function poolClusterOf(value: string | undefined): string {
  const name = value?.trim() ?? "";
  if (!name || !isDnsSubdomain(name) || name.length > LIMITS.cspcNameLength)
    throw invalidArgument(
      `parameters.cstorPoolCluster is ${JSON.stringify(value ?? "")}: ${PARAMETER_FIX.cstorPoolCluster}`,
    );
  return name;
}

function replicaCountOf(value: string | undefined): number {
  const text = value?.trim() ?? "";
  const count = /^[0-9]+$/.test(text) ? Number(text) : NaN;
  if (!(count >= 1 && count <= LIMITS.replicasPerVolume))
    throw invalidArgument(
      `parameters.replicaCount is ${JSON.stringify(value ?? "")}: ${PARAMETER_FIX.replicaCount}`,
    );
  return count;
}

/** Why a cStor volume cannot serve this capability, or undefined when it can. */
export function unservedCapability(capability: VolumeCapability | null | undefined): string | undefined {
  if (!capability) return "a volume capability is missing";
  const mode = capability.access_mode?.mode ?? "UNKNOWN";
  if (!SERVED_MODES.includes(mode))
    return `access mode ${mode} is not served: a cStor volume is used by one node at a time (${SERVED_MODES.join(", ")})`;
  if (capability.block && capability.mount) return "a capability is either block or mount, not both";
  if (!capability.block && !capability.mount) return "a capability must say block or mount";
  const fsType = capability.mount?.fs_type ?? "";
  if (capability.mount && !FS_TYPES.includes(fsType))
    return `fs_type ${JSON.stringify(fsType)} is not served: ${PARAMETER_FIX.fsType}`;
  return undefined;
}

/** Every capability served, at least one given; else INVALID_ARGUMENT saying which and why. */
export function checkCapabilities(capabilities: readonly VolumeCapability[] | undefined, rpc: string): void {
  if (!capabilities || capabilities.length === 0)
    throw invalidArgument(`${rpc}: volume_capabilities is empty; give at least one`);
  for (const capability of capabilities) {
    const why = unservedCapability(capability);
    if (why) throw invalidArgument(`${rpc}: ${why}`);
  }
}

/**
 * The size a range asks for, in whole MiB: required_bytes rounded up, or without it the default size under
 * limit_bytes; refused when that passes limit_bytes or the range is negative.
 */
export function requestedBytes(range: CapacityRange | null | undefined, rpc: string): number {
  const required = range?.required_bytes ?? 0;
  const limit = range?.limit_bytes ?? 0;
  if (required < 0 || limit < 0)
    throw invalidArgument(`${rpc}: capacity_range is negative (${required}, ${limit}); sizes are bytes`);
  if (limit > 0 && required > limit)
    throw invalidArgument(`${rpc}: capacity_range.required_bytes ${required} is above limit_bytes ${limit}`);
  const bytes =
    required > 0
      ? Math.ceil(required / MIB) * MIB
      : Math.min(DEFAULT_VOLUME_BYTES, limit > 0 ? Math.floor(limit / MIB) * MIB : DEFAULT_VOLUME_BYTES);
  if (bytes === 0 || (limit > 0 && bytes > limit))
    throw outOfRange(
      `${rpc}: volumes are whole MiB; no whole MiB fits between required_bytes ${required} and limit_bytes ${limit}: raise the limit`,
    );
  return bytes;
}

/** Whether a volume of `bytes` satisfies the range (CreateVolume's idempotency: an existing volume answers). */
export function fitsRange(bytes: number, range: CapacityRange | null | undefined): boolean {
  const required = range?.required_bytes ?? 0;
  const limit = range?.limit_bytes ?? 0;
  return bytes >= required && (limit === 0 || bytes <= limit);
}
