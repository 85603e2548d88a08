// The StorageClass decorator's answer (docs/adr/0022-from-a-pvc-to-a-volume-a-decoratorcontroller.md): for each PVC of the class handed to us, a
// CStorVolumeConfig in the pools' namespace and, once the volume is served, a PersistentVolume bound to the
// claim; an Event on each PVC still waiting, saying why. Volumes whose claim is gone are kept or dropped by
// their reclaim policy. Pure: the same request and clock give the same answer.
import { API_VERSION, CSI, KIND, LABEL, PROVISIONING, TYPE_KEY } from "../../api/constants.js";
import type {
  Clock,
  CV,
  CVC,
  DecoratorSyncRequest,
  DecoratorSyncResponse,
  KubeObject,
} from "../../api/types.js";
import { formatTime } from "../conditions.js";
import { objectsOf } from "../request.js";
import { checkClaim, claimKey, isHandedToUs, largerCapacity, volumeName } from "./claim.js";
import type {
  CoreEvent,
  ObservedEvent,
  PersistentVolume,
  PersistentVolumeClaim,
  PersistentVolumeSpec,
  StorageClass,
} from "../../api/core-schema.js";
import { checkClass, DEFAULT_FS_TYPE, type ClassCheck, type ClassParameters } from "./parameters.js";
import { chapSecretName } from "../volume/chap.js";
import { clientInitiatorIqn } from "../volume/iqn.js";
import { CVC_CONDITION } from "../volume/sync.js";

const DEFAULT_RECLAIM_POLICY = "Delete";
const READY = "ready";

interface Notice {
  type: CoreEvent["type"];
  reason: string;
  message: string;
}

interface Observed {
  claims: Map<string, PersistentVolumeClaim>;
  /**
   * Volumes with an attachment or a PVC the hooks cannot read (stored under an older schema, say), by volume
   * name, with those attachments: held as they are.
   */
  held: Map<string, KubeObject[]>;
  cvcs: Map<string, CVC>;
  pvs: Map<string, PersistentVolume>;
  cvs: Map<string, CV>;
  events: Map<string, ObservedEvent>;
}

function byKey<T extends KubeObject>(objects: T[], key: (object: T) => string): Map<string, T> {
  return new Map(objects.map((object) => [key(object), object]));
}

// Request parsing guarantees every object of a map a name.
const nameOf = (object: KubeObject): string => object.metadata.name!;
const namespaced = (object: KubeObject): string => `${object.metadata.namespace}/${nameOf(object)}`;

function observe(request: DecoratorSyncRequest<StorageClass>): Observed {
  // The API server gives every stored object a uid; the volume is named after it.
  const claims = objectsOf(request.related, TYPE_KEY.persistentVolumeClaim).filter(
    (claim) => claim.metadata.uid,
  );
  const held = new Map<string, KubeObject[]>();
  for (const { field, object } of request.unreadable ?? []) {
    // A volume's objects and its PVC's Event share the volume's name; an unreadable PVC holds its volume too.
    if (field === "attachments") held.set(nameOf(object), [...(held.get(nameOf(object)) ?? []), object]);
    else if (object.kind === KIND.persistentVolumeClaim && object.metadata.uid)
      held.set(volumeName(object), held.get(volumeName(object)) ?? []);
  }
  return {
    claims: byKey(claims, volumeName),
    held,
    cvcs: byKey(objectsOf(request.attachments, TYPE_KEY.cvc), nameOf),
    pvs: byKey(objectsOf(request.attachments, TYPE_KEY.persistentVolume), nameOf),
    cvs: byKey(objectsOf(request.related, TYPE_KEY.cv), namespaced),
    events: byKey(objectsOf(request.attachments, TYPE_KEY.event), namespaced),
  };
}

export function answerStorageClassSync(
  request: DecoratorSyncRequest<StorageClass>,
  clock: Clock,
): DecoratorSyncResponse {
  const storageClass = request.object;
  const observed = observe(request);
  const check = checkClass(storageClass);
  const classProblem = classProblemOf(request, observed, check);
  // A volume with an object the hooks cannot read is held as it is: what it holds cannot be known, so nothing
  // of it is created, changed or deleted until that object is fixed (docs/adr/0016-read-tolerantly-what-the-api-server-stores-hold.md).
  const held = [...observed.held.values()].flatMap((objects) => objects.map(heldView));
  const existing = existingVolumes(observed, storageClass);
  const created = newVolumes(observed, storageClass, check, classProblem);
  const volumes = [...held, ...existing.volumes, ...created.volumes];
  const events = [...existing.notices, ...created.notices].map(([claim, notice]) =>
    event(claim, notice, observed.events, clock),
  );
  const heldProblem = unreadableProblem(request.unreadable ?? []);
  return {
    annotations: {
      [PROVISIONING.classAnnotation]: [classProblem, heldProblem].filter(Boolean).join("; ") || READY,
    },
    attachments: [...volumes, ...events].sort(byKindAndName),
    ...(request.finalizing ? { finalized: volumes.length === 0 } : {}),
  };
}

/** Volumes to answer, and the claims still waiting with the Event that says why. */
interface VolumesPlan {
  volumes: KubeObject[];
  notices: [PersistentVolumeClaim, Notice][];
}

/** Why the class makes no new volume: it is going, it is malformed, or its CStorPoolCluster does not exist. */
function classProblemOf(
  request: DecoratorSyncRequest<StorageClass>,
  observed: Observed,
  check: ClassCheck,
): string | undefined {
  if (request.finalizing)
    return `StorageClass ${request.object.metadata.name} is being deleted or lost its label ${PROVISIONING.classLabel}: it provisions no new volume, and goes once no CStorVolumeConfig or PersistentVolume it made remains (${observed.cvcs.size + observed.pvs.size} now)`;
  return check.ok ? poolClusterProblem(request, check.parameters) : check.problem;
}

/** Volumes that exist: kept while their claim lives, then by reclaim policy; a PV once the volume is served. */
function existingVolumes(observed: Observed, storageClass: StorageClass): VolumesPlan {
  const plan: VolumesPlan = { volumes: [], notices: [] };
  for (const name of [...new Set([...observed.cvcs.keys(), ...observed.pvs.keys()])].sort()) {
    const cvc = observed.cvcs.get(name);
    const pv = observed.pvs.get(name);
    if (observed.held.has(name)) {
      plan.volumes.push(...[cvc, pv].filter((o) => o !== undefined).map(heldView));
      continue;
    }
    const claim = observed.claims.get(name);
    if (!claim && !keptWithoutClaim(cvc, pv)) continue;
    if (cvc) plan.volumes.push(existingCvc(cvc, storageClass, claim, pv));
    if (pv) plan.volumes.push(existingPv(pv, cvc && (cvc.status?.capacity ?? cvc.spec.capacity)));
    else if (cvc && claim) {
      const served = servedVolume(cvc, observed.cvs.get(namespaced(cvc)));
      if (typeof served === "string") plan.notices.push([claim, waitingNotice(cvc, served)]);
      else plan.volumes.push(newPv(claim, storageClass, cvc, served));
    }
  }
  return plan;
}

/** Claims handed to us that have no volume yet: a CVC each, or a warning saying why not. */
function newVolumes(
  observed: Observed,
  storageClass: StorageClass,
  check: ClassCheck,
  classProblem: string | undefined,
): VolumesPlan {
  const plan: VolumesPlan = { volumes: [], notices: [] };
  for (const claim of observed.claims.values()) {
    const name = volumeName(claim);
    if (
      observed.cvcs.has(name) ||
      observed.pvs.has(name) ||
      observed.held.has(name) ||
      !isHandedToUs(claim, storageClass)
    )
      continue;
    const planned = plannedVolume(claim, check, classProblem);
    if (typeof planned === "string")
      plan.notices.push([claim, { type: "Warning", reason: PROVISIONING.failedReason, message: planned }]);
    else plan.volumes.push(newCvc(claim, storageClass, planned.parameters, planned.capacity));
  }
  return plan;
}

function unreadableProblem(unreadable: NonNullable<DecoratorSyncRequest["unreadable"]>): string | undefined {
  if (unreadable.length === 0) return undefined;
  return unreadable
    .map(
      (u) =>
        `cannot read ${u.object.kind} ${u.object.metadata.namespace ? namespaced(u.object) : nameOf(u.object)} (${u.problem}): fix the object; until then its volume is left as it is`,
    )
    .join("; ");
}

/** An object as observed, without what the API server and other writers own (Metacontroller would revert it). */
function heldView(object: KubeObject): KubeObject {
  const { status: _status, ...rest } = object;
  const { name, namespace, labels, annotations } = object.metadata;
  return { ...rest, metadata: { name, namespace, labels, annotations } };
}

/** A new claim's volume, or why it gets none: the class's problem first, then the claim's own. */
function plannedVolume(
  claim: PersistentVolumeClaim,
  check: ClassCheck,
  classProblem: string | undefined,
): { parameters: ClassParameters; capacity: string } | string {
  if (classProblem !== undefined) return classProblem;
  // A class that fails its check always has a classProblem; this narrows the type.
  if (!check.ok) return check.problem;
  const claimCheck = checkClaim(claim);
  return claimCheck.ok ? { parameters: check.parameters, capacity: claimCheck.capacity } : claimCheck.problem;
}

/** Why new volumes of a well-formed class cannot be made now: its CStorPoolCluster does not exist. */
function poolClusterProblem(
  request: DecoratorSyncRequest<StorageClass>,
  parameters: ClassParameters,
): string | undefined {
  const found = Object.keys(request.related[`${KIND.cspc}.${API_VERSION}`] ?? {}).length > 0;
  if (found) return undefined;
  return `StorageClass ${request.object.metadata.name}: parameters.cstorPoolCluster names CStorPoolCluster ${parameters.poolNamespace}/${parameters.cstorPoolCluster}, which does not exist: create it, or create a class naming an existing one`;
}

/**
 * A volume whose claim is gone. Retain keeps it. Delete drops it once the PV controller marked the PV
 * Released (two observers agree the claim is gone), or at once when it never had a PV (it never held data).
 * The policy is the PV's (an administrator may have changed it there), else the one the CVC remembers;
 * unknown keeps the volume.
 */
function keptWithoutClaim(cvc: CVC | undefined, pv: PersistentVolume | undefined): boolean {
  const policy = pv
    ? pv.spec?.persistentVolumeReclaimPolicy
    : cvc?.metadata.annotations?.[PROVISIONING.reclaimPolicyAnnotation];
  if (policy !== "Delete") return true;
  return pv !== undefined && pv.status?.phase !== "Released";
}

/** The CVC as it is, its capacity grown when the claim asks for more and the class allows it. */
function existingCvc(
  cvc: CVC,
  storageClass: StorageClass,
  claim: PersistentVolumeClaim | undefined,
  pv: PersistentVolume | undefined,
): CVC {
  const requested = claim && storageClass.allowVolumeExpansion === true ? checkClaim(claim) : undefined;
  const capacity = requested?.ok ? largerCapacity(cvc.spec.capacity, requested.capacity)! : cvc.spec.capacity;
  const annotations = cvc.metadata.annotations ?? {};
  const policy = pv?.spec?.persistentVolumeReclaimPolicy ?? annotations[PROVISIONING.reclaimPolicyAnnotation];
  return cvcObject(
    nameOf(cvc),
    cvc.metadata.namespace!,
    {
      capacity,
      cstorPoolCluster: cvc.spec.cstorPoolCluster,
      replicaCount: cvc.spec.replicaCount,
    },
    { reclaimPolicy: policy, claim: annotations[CSI.claimAnnotation] },
  );
}

function newCvc(
  claim: PersistentVolumeClaim,
  storageClass: StorageClass,
  parameters: ClassParameters,
  capacity: string,
): CVC {
  return cvcObject(
    volumeName(claim),
    parameters.poolNamespace,
    {
      capacity,
      cstorPoolCluster: parameters.cstorPoolCluster,
      replicaCount: parameters.replicaCount,
    },
    { reclaimPolicy: storageClass.reclaimPolicy ?? DEFAULT_RECLAIM_POLICY, claim: claimKey(claim) },
  );
}

/** What a CVC remembers, in its annotations: the reclaim policy its class gave it and the claim it serves. */
interface CvcMemory {
  reclaimPolicy: string | undefined;
  claim: string | undefined;
}

function cvcObject(
  name: string,
  namespace: string,
  spec: CVC["spec"],
  { reclaimPolicy, claim }: CvcMemory,
): CVC {
  return {
    apiVersion: API_VERSION,
    kind: KIND.cvc,
    metadata: {
      name,
      namespace,
      labels: { [LABEL.persistentVolume]: name, [LABEL.cspc]: spec.cstorPoolCluster },
      annotations: {
        [PROVISIONING.reclaimPolicyAnnotation]: reclaimPolicy,
        [CSI.claimAnnotation]: claim,
      } as Record<string, string>,
    },
    spec,
  };
}

/**
 * Where the kubelet logs in, once the volume is Bound, its target has an address and credentials; else why
 * not yet.
 */
function servedVolume(cvc: CVC, cv: CV | undefined): { targetPortal: string; iqn: string } | string {
  const where = `CStorVolumeConfig ${namespaced(cvc)}`;
  if (cvc.status?.phase !== "Bound")
    return `${where} is ${cvc.status?.phase ?? "not yet placed"}${cvc.status?.reason ? `: ${cvc.status.reason}` : ""}`;
  const credentials = withoutCredentials(cvc);
  if (credentials) return `${where} has no target: ${credentials}`;
  if (!cv?.spec.targetPortal || !cv.spec.iqn)
    return `${where} is Bound; its CStorVolume has no target address yet`;
  return { targetPortal: cv.spec.targetPortal, iqn: cv.spec.iqn };
}

/** Why the volume has no CHAP credentials (its condition TargetCredentials is False), else undefined. */
function withoutCredentials(cvc: CVC): string | undefined {
  const condition = cvc.status?.conditions?.find((c) => c.type === CVC_CONDITION.targetCredentials);
  return condition?.status === "False" ? (condition.message ?? condition.reason ?? "") : undefined;
}

function waitingNotice(cvc: CVC, why: string): Notice {
  // Neither waits for something that happens by itself: the volume failed, or the hook server has no key.
  const failed = cvc.status?.phase === "Failed" || withoutCredentials(cvc) !== undefined;
  return {
    type: failed ? "Warning" : "Normal",
    reason: failed ? PROVISIONING.failedReason : PROVISIONING.waitingReason,
    message: `waiting for the volume: ${why}`,
  };
}

/** The fields of a PV this hook writes; the rest belongs to Kubernetes. */
const PV_FIELDS = [
  "accessModes",
  "capacity",
  "claimRef",
  "iscsi",
  "mountOptions",
  "persistentVolumeReclaimPolicy",
  "storageClassName",
  "volumeMode",
] as const;

/**
 * The PV as it is. Its source, mode and class cannot change and its reclaim policy and mount options are an
 * administrator's to change, so only the capacity follows the volume (it never shrinks).
 */
function existingPv(pv: PersistentVolume, reached: string | undefined): PersistentVolume {
  const spec: PersistentVolumeSpec = {};
  for (const field of PV_FIELDS) (spec as Record<string, unknown>)[field] = pv.spec?.[field];
  const storage = largerCapacity(pv.spec?.capacity?.storage, reached);
  if (storage) spec.capacity = { storage };
  const ref = pv.spec?.claimRef;
  if (ref)
    spec.claimRef = {
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      namespace: ref.namespace,
      name: ref.name,
      uid: ref.uid,
    };
  return pvObject(nameOf(pv), pv.metadata.labels?.[LABEL.cspc], spec);
}

function newPv(
  claim: PersistentVolumeClaim,
  storageClass: StorageClass,
  cvc: CVC,
  served: { targetPortal: string; iqn: string },
): PersistentVolume {
  // The class's own word (its parameters were checked when the CVC was made, and cannot change since).
  const fsType = storageClass.parameters?.fsType ?? DEFAULT_FS_TYPE;
  const volumeMode = claim.spec?.volumeMode ?? "Filesystem";
  return pvObject(nameOf(cvc), cvc.spec.cstorPoolCluster, {
    accessModes: claim.spec?.accessModes,
    capacity: { storage: cvc.status?.capacity ?? cvc.spec.capacity },
    claimRef: {
      apiVersion: "v1",
      kind: KIND.persistentVolumeClaim,
      namespace: claim.metadata.namespace,
      name: claim.metadata.name,
      uid: claim.metadata.uid,
    },
    // LIO serves the data at LUN 0; the node logs in as the volume's client initiator with the volume's CHAP
    // (docs/adr/0040-the-target-agent-credentials-names-and-status.md), the Secret beside the CVC.
    iscsi: {
      ...served,
      lun: 0,
      ...(volumeMode === "Filesystem" ? { fsType } : {}),
      initiatorName: clientInitiatorIqn(nameOf(cvc)),
      chapAuthSession: true,
      secretRef: { name: chapSecretName(nameOf(cvc)), namespace: cvc.metadata.namespace },
    },
    mountOptions: storageClass.mountOptions,
    persistentVolumeReclaimPolicy: storageClass.reclaimPolicy ?? DEFAULT_RECLAIM_POLICY,
    storageClassName: storageClass.metadata.name,
    volumeMode,
  });
}

function pvObject(name: string, cspc: string | undefined, spec: PersistentVolumeSpec): PersistentVolume {
  return {
    apiVersion: "v1",
    kind: KIND.persistentVolume,
    metadata: {
      name,
      labels: cspc ? { [LABEL.cspc]: cspc } : {},
      annotations: { [PROVISIONING.provisionedByAnnotation]: PROVISIONING.provisioner },
    },
    spec,
  };
}

/** An Event on the claim, named after its volume; its time is carried forward while it says the same. */
function event(
  claim: PersistentVolumeClaim,
  notice: Notice,
  observed: Map<string, ObservedEvent>,
  clock: Clock,
): CoreEvent {
  const name = volumeName(claim);
  const namespace = claim.metadata.namespace!;
  const before = observed.get(`${namespace}/${name}`);
  const same =
    before &&
    before.reason === notice.reason &&
    before.message === notice.message &&
    before.type === notice.type;
  const time =
    same && typeof before.firstTimestamp === "string" ? before.firstTimestamp : formatTime(clock());
  return {
    apiVersion: "v1",
    kind: KIND.event,
    metadata: { name, namespace },
    involvedObject: {
      apiVersion: "v1",
      kind: KIND.persistentVolumeClaim,
      namespace,
      name: claim.metadata.name,
      uid: claim.metadata.uid,
    },
    ...notice,
    source: { component: PROVISIONING.eventSource },
    firstTimestamp: time,
    lastTimestamp: time,
    count: 1,
  };
}

function byKindAndName(a: KubeObject, b: KubeObject): number {
  const key = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
  return key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;
}
