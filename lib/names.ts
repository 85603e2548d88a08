// Names of everything the hooks create. Deterministic functions of their inputs, DNS-1123 safe.
import { DNS_SUBDOMAIN_PATTERN, LIMITS } from "../api/constants.js";
import { shortHash } from "./hash.js";

const MAX_LABEL_VALUE = 63;
const MAX_NAME = 253;
const DNS_SUBDOMAIN = new RegExp(DNS_SUBDOMAIN_PATTERN);

/**
 * Name of a new CSPI: "<cspc>-<hash of namespace, cspc and the pool's devices>". The hash input is the
 * sorted device list at first sight; afterwards the name is carried by the CSPI and its claims, never
 * recomputed, so expansion or replacement never renames a pool.
 */
export function cspiName(
  namespace: string,
  cspc: string,
  deviceNames: readonly string[],
  hashLength = 6,
): string {
  const prefix = cspc
    .slice(0, Math.min(LIMITS.cspcNameLength, MAX_LABEL_VALUE - 1 - hashLength))
    .replace(/-+$/, "");
  return `${prefix}-${shortHash([namespace, cspc, ...[...deviceNames].sort()], hashLength)}`;
}

/** Claims are named from the device: one claim per device per namespace. */
export function claimName(blockDeviceName: string): string {
  const name = `bdc-${blockDeviceName}`;
  if (name.length <= MAX_NAME) return name;
  return `${name.slice(0, MAX_NAME - 11)}-${shortHash([blockDeviceName], 10)}`;
}

/**
 * A device set's PVC: "<cspc>-<set>-<index>", hashed down past 253 characters (it is used as the CSPI's device
 * name and the pool pod's volume). Deterministic, so a sync can be answered twice the same (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md).
 */
export function deviceSetClaimName(cspc: string, set: string, index: number): string {
  const name = `${cspc}-${set}-${index}`;
  if (name.length <= MAX_NAME) return name;
  return `${name.slice(0, MAX_NAME - 11).replace(/-+$/, "")}-${shortHash([cspc, set, String(index)], 10)}`;
}

/** The pool Deployment carries the CSPI's name, so `kubectl get deploy <cspi>` finds it. */
export function poolDeploymentName(cspi: string): string {
  return cspi;
}

/**
 * The zpool's name on the node. Derived from the CSPI name (stable across recreation and migration);
 * the "cstor-" prefix keeps it clear of ZFS's reserved names (mirror, raidz, spare, log, c0...).
 */
export function zpoolName(cspi: string): string {
  return `cstor-${cspi}`;
}

/**
 * A node daemon's Lease, its liveness (docs/adr/0045-a-node-daemon-watches-its-own-node-liveness-is-a-lease.md):
 * "cstor-node-<node name>", hashed down past 253 characters.
 */
export function nodeLeaseName(nodeName: string): string {
  const name = `cstor-node-${nodeName}`;
  if (name.length <= MAX_NAME) return name;
  return `${name.slice(0, MAX_NAME - 11).replace(/[-.]+$/, "")}-${shortHash([nodeName], 10)}`;
}

/** The target Deployment of a volume: one pod serving the volume's LUN. Its Service and CStorVolume carry the volume's name. */
export function targetDeploymentName(volume: string): string {
  return `${volume}-target`;
}

/** A replica is named after its volume and pool, so a pool can hold only one replica of a volume. */
export function replicaName(volume: string, cspi: string): string {
  return `${volume}-${cspi}`;
}

/** A replica's id, stable for its volume and pool: the same replica keeps it across every sync. */
export function replicaId(volume: string, cspi: string): string {
  return shortHash([volume, cspi], 16);
}

/** The PodDisruptionBudget over the pool pods of a volume's pools. */
export function poolsDisruptionBudgetName(volume: string): string {
  return `${volume}-pools`;
}

/** An object name most kinds take (Secrets, PVCs): a DNS-1123 subdomain. */
export function isDnsSubdomain(value: string): boolean {
  return value.length <= MAX_NAME && DNS_SUBDOMAIN.test(value);
}

export function isValidLabelValue(value: string): boolean {
  return value.length <= MAX_LABEL_VALUE && /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(value);
}
