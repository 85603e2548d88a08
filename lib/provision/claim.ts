// Which PVCs of a class are ours to provision, and what a claim asks for, checked.
import { PROVISIONING } from "../../api/constants.js";
import { parseQuantity } from "../quantity.js";
import type { PersistentVolumeClaim, StorageClass } from "../../api/core-schema.js";

/** iSCSI serves a LUN to one initiator at a time: read-write by one node. */
const ACCESS_MODES = ["ReadWriteOnce", "ReadWriteOncePod"];
const MIB = 1024n * 1024n;
const NANO = 10n ** 9n;

/** The volume of a claim, named as csi-provisioner names PVs: the CVC, the PV and the target share it. */
export function volumeName(claim: PersistentVolumeClaim): string {
  return `pvc-${claim.metadata.uid}`;
}

export function claimKey(claim: PersistentVolumeClaim): string {
  return `${claim.metadata.namespace}/${claim.metadata.name}`;
}

/** The class a PVC names (the beta annotation is what a PVC written before storageClassName carries). */
function className(claim: PersistentVolumeClaim): string | undefined {
  return (
    claim.spec?.storageClassName ?? claim.metadata.annotations?.["volume.beta.kubernetes.io/storage-class"]
  );
}

/**
 * Whether the PV controller handed this claim to us to provision: it names our class, the PV controller
 * found no existing PV for it and set the provisioner annotation, it is not bound to another volume, and a
 * WaitForFirstConsumer class has its node chosen.
 */
export function isHandedToUs(claim: PersistentVolumeClaim, storageClass: StorageClass): boolean {
  if (className(claim) !== storageClass.metadata.name || claim.metadata.deletionTimestamp) return false;
  const annotations = claim.metadata.annotations ?? {};
  if (!PROVISIONING.claimProvisionerAnnotations.some((key) => annotations[key] === PROVISIONING.provisioner))
    return false;
  const volume = claim.spec?.volumeName;
  if (volume && volume !== volumeName(claim)) return false;
  return (
    storageClass.volumeBindingMode !== "WaitForFirstConsumer" ||
    Boolean(annotations[PROVISIONING.selectedNodeAnnotation])
  );
}

export type ClaimCheck = { ok: true; capacity: string } | { ok: false; problem: string };

/** What the claim asks for, or why it cannot be served, naming the field and the fix. */
export function checkClaim(claim: PersistentVolumeClaim): ClaimCheck {
  const where = `PersistentVolumeClaim ${claimKey(claim)}`;
  const spec = claim.spec ?? {};
  const modes = spec.accessModes ?? [];
  const refused = modes.filter((mode) => !ACCESS_MODES.includes(mode));
  if (refused.length > 0) {
    return {
      ok: false,
      problem: `${where}: spec.accessModes ${refused.join(", ")} cannot be served by a cStor volume (one iSCSI initiator at a time): use ReadWriteOnce or ReadWriteOncePod`,
    };
  }
  const source = spec.dataSourceRef ?? spec.dataSource;
  if (source) {
    return {
      ok: false,
      problem: `${where}: spec.dataSource (${source.kind ?? "?"} ${source.name ?? "?"}) asks for a copy; cStor volumes here start empty: remove the data source`,
    };
  }
  if (spec.selector) {
    return {
      ok: false,
      problem: `${where}: spec.selector chooses among existing volumes, which a provisioned volume cannot match: remove the selector`,
    };
  }
  const capacity = roundedCapacity(spec.resources?.requests?.storage);
  if (!capacity) {
    return {
      ok: false,
      problem: `${where}: spec.resources.requests.storage ${JSON.stringify(spec.resources?.requests?.storage ?? "")} is not a size: write e.g. "10Gi"`,
    };
  }
  return { ok: true, capacity };
}

/** The request rounded up to a whole MiB (a LUN is whole 4K blocks), written as the API server writes it. */
export function roundedCapacity(request: string | undefined): string | undefined {
  const quantity = request === undefined ? undefined : parseQuantity(request);
  if (!quantity || quantity.nano === 0n) return undefined;
  const bytes = (quantity.nano + NANO - 1n) / NANO;
  const mib = (bytes + MIB - 1n) / MIB;
  return parseQuantity(`${mib}Mi`)!.canonical;
}

/** The larger of two capacities (a volume only grows); an unreadable one loses. */
export function largerCapacity(a: string | undefined, b: string | undefined): string | undefined {
  const qa = a === undefined ? undefined : parseQuantity(a);
  const qb = b === undefined ? undefined : parseQuantity(b);
  if (!qa) return qb ? b : undefined;
  if (!qb) return a;
  return qb.nano > qa.nano ? b : a;
}
