// The volume as the controller sees it (docs/adr/0047-the-csi-driver-one-writer-per-volume.md): the
// CStorVolumeConfig it writes for a CSI name, whether an existing one answers a request, when a volume is ready to
// be answered and what the answer carries, and whom its CStorVolume admits. Pure.
import { API_VERSION, CSI, KIND, LABEL } from "../../api/constants.js";
import type { CV, CVC } from "../../api/types.js";
import { parseQuantity, quantityBytes } from "../../lib/quantity.js";
import { failedPrecondition } from "../errors.js";
import type { Message } from "../protocol.js";
import { fitsRange, type VolumeParameters } from "./request.js";

/** The LUN the volume target serves the array at: LIO has no controller LUN (tgt's LUN 0 serves only replicas). */
export const VOLUME_LUN = "0";

export interface NewVolume {
  id: string;
  /** The CSI name: CreateVolume's idempotency key. */
  name: string;
  namespace: string;
  parameters: VolumeParameters;
  bytes: number;
  /** The snapshot the volume starts from (csi/controller/restore.ts). */
  source?: CVC["spec"]["source"];
}

/** The CVC the driver writes, as a user would write it; the hooks make the rest. */
export function volumeConfig(volume: NewVolume): CVC {
  const { parameters } = volume;
  return {
    apiVersion: API_VERSION,
    kind: KIND.cvc,
    metadata: {
      name: volume.id,
      namespace: volume.namespace,
      labels: { [LABEL.managedBy]: CSI.driverName },
      annotations: {
        [CSI.nameAnnotation]: volume.name,
        ...(parameters.claim ? { [CSI.claimAnnotation]: parameters.claim } : {}),
      },
    },
    spec: {
      capacity: capacityQuantity(volume.bytes),
      cstorPoolCluster: parameters.cstorPoolCluster,
      replicaCount: parameters.replicaCount,
      ...(volume.source ? { source: volume.source } : {}),
    },
  };
}

/** Whole MiB as the API server writes the quantity ("1Gi", "1536Mi"), as people write sizes. */
export function capacityQuantity(bytes: number): string {
  return parseQuantity(`${Math.ceil(bytes / (1024 * 1024))}Mi`)!.canonical;
}

export function capacityBytes(cvc: CVC): number {
  return Number(quantityBytes(cvc.spec.capacity) ?? 0n);
}

/** A CStorVolumeConfig or CStorVolumeSnapshot: the driver records on it the CSI name it was made for. */
interface Recorded {
  metadata: {
    name?: string;
    namespace?: string;
    deletionTimestamp?: string;
    annotations?: Record<string, string>;
  };
}

/** What keeps a volume from deletion: those that stand, and those being deleted (waited for). */
export interface Dependents {
  standing: string[];
  deleting: string[];
}

/** `objects` told apart by whether they are being deleted, each named by `name`. */
export function dependents<T extends Recorded>(
  objects: readonly T[],
  name: (object: T) => string,
): Dependents {
  return {
    standing: objects.filter((o) => !o.metadata.deletionTimestamp).map(name),
    deleting: objects.filter((o) => o.metadata.deletionTimestamp).map(name),
  };
}

/** The object the driver made for this CSI name; one made otherwise is never answered, changed or deleted. */
export function madeFor(object: Recorded, name: string): boolean {
  return object.metadata.annotations?.[CSI.nameAnnotation] === name;
}

/** An object the driver made, for any name. */
export function madeByDriver(object: Recorded): boolean {
  return Boolean(object.metadata.annotations?.[CSI.nameAnnotation]);
}

/**
 * Whether a Delete call has an object to delete: false when it is gone or already being deleted (the call is
 * answered OK, as the spec asks); FAILED_PRECONDITION when the driver did not make it.
 */
export function toDelete(object: Recorded | undefined, rpc: string, kind: string): object is Recorded {
  if (!object || object.metadata.deletionTimestamp) return false;
  if (!madeByDriver(object))
    throw failedPrecondition(
      `${rpc}: ${kind} ${object.metadata.namespace}/${object.metadata.name} was not made by this driver; delete it by hand if its data can go`,
    );
  return true;
}

/** Why an existing CVC does not answer a CreateVolume for the same name, or undefined when it does. */
export function mismatch(
  cvc: CVC,
  request: { name: string; parameters: VolumeParameters; range: Message<"CapacityRange"> | null | undefined },
): string | undefined {
  const where = `CStorVolumeConfig ${cvc.metadata.namespace}/${cvc.metadata.name}`;
  if (!madeFor(cvc, request.name))
    return `${where} exists and was not made by this driver for volume ${JSON.stringify(request.name)}: give the volume another name, or delete that CStorVolumeConfig`;
  const { cstorPoolCluster, replicaCount } = request.parameters;
  if (cvc.spec.cstorPoolCluster !== cstorPoolCluster || cvc.spec.replicaCount !== replicaCount)
    return `${where} holds volume ${JSON.stringify(request.name)} with cstorPoolCluster ${cvc.spec.cstorPoolCluster} and replicaCount ${cvc.spec.replicaCount}, not ${cstorPoolCluster} and ${replicaCount}`;
  const bytes = capacityBytes(cvc);
  if (!fitsRange(bytes, request.range))
    return `${where} holds volume ${JSON.stringify(request.name)} at ${bytes} bytes, outside the capacity range asked for (required ${request.range?.required_bytes ?? 0}, limit ${request.range?.limit_bytes ?? 0})`;
  return undefined;
}

/**
 * Whom the LUN admits: the node the CStorVolume names, "" for nobody, undefined when it names none (a volume made
 * before the driver: its client initiator).
 */
export function publishedNode(cv: CV): string | undefined {
  return cv.metadata.annotations?.[CSI.publishedNodeAnnotation];
}

export type Readiness = { ready: true; volume: Message<"Volume"> } | { ready: false; waiting: string };

/** A volume is answered once cvc-sync made it Bound and its CStorVolume has the target's portal and IQN. */
export function readiness(cvc: CVC, cv: CV | undefined): Readiness {
  const where = `CStorVolumeConfig ${cvc.metadata.namespace}/${cvc.metadata.name}`;
  if (cvc.metadata.deletionTimestamp) return { ready: false, waiting: `${where} is being deleted` };
  const phase = cvc.status?.phase ?? "Pending";
  if (phase !== "Bound") {
    const reason = cvc.status?.reason ? ` (${cvc.status.reason})` : "";
    const message = conditionMessage(cvc);
    return {
      ready: false,
      waiting: `${where} is ${phase}${reason}${message ? `: ${message}` : ""}; waiting for it to be Bound`,
    };
  }
  if (!cv?.spec.targetPortal || !cv.spec.iqn)
    return {
      ready: false,
      waiting: `${where} is Bound; waiting for its CStorVolume's target portal and IQN`,
    };
  return {
    ready: true,
    volume: {
      volume_id: cvc.metadata.name,
      capacity_bytes: capacityBytes(cvc),
      volume_context: {
        [CSI.contextKeys.targetPortal]: cv.spec.targetPortal,
        [CSI.contextKeys.iqn]: cv.spec.iqn,
        [CSI.contextKeys.lun]: VOLUME_LUN,
      },
    },
  };
}

/** The message of the condition that says most about a volume that is not Bound: Placed, else Bound. */
function conditionMessage(cvc: CVC): string | undefined {
  const conditions = cvc.status?.conditions ?? [];
  const placed = conditions.find((c) => c.type === "Placed" && c.status !== "True");
  return (placed ?? conditions.find((c) => c.type === "Bound" && c.status !== "True"))?.message;
}
