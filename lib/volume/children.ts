// The children of a CStorVolumeConfig, built from it and the pools placement chose. Pure and deterministic,
// written the way the API server stores them so Metacontroller's 3-way merge finds nothing to change once
// they exist. docs/adr/0011-a-replica-is-a-zvol-on-the-pool-data-reaches.md shapes them: the target pod logs in to each replica (exported by its pool's agent)
// and serves the mirrored LUN on 3260, so the Service carries the LUN and the target's metrics only; no
// replica dials the target.
import { ANNOTATION, API_VERSION, FINALIZER, KIND, LABEL } from "../../api/constants.js";
import type { CV, CVR, KubeObject } from "../../api/types.js";
import type { ConditionInput } from "../conditions.js";
import type { VolumeTargetConfig } from "../hook-config.js";
import { poolsDisruptionBudgetName, replicaId, replicaName, targetDeploymentName } from "../names.js";
import { canonicalResources, withoutEmptyFields } from "../pod-template.js";
import { quantityBytes } from "../quantity.js";
import { HOST_NETWORK_PREFIX } from "../settings.js";
import {
  CHAP_PASSWORD_KEY,
  CHAP_SECRET_TYPE,
  CHAP_USERNAME_KEY,
  chapSecretName,
  volumeChap,
} from "./chap.js";
import type { VolumeInventory } from "./inventory.js";
import { replicaOrigin } from "./restore.js";

export const TARGET_APP = "cstor-volume-target";
export const TARGET_CONTAINER = "cstor-target";
export const ISCSI_PORT = 3260;
export const TARGET_METRICS_PORT = 9500;
/** The pool pods' app label (lib/cspi/deployment.ts): the disruption budget selects them. */
const POOL_APP = "cstor-pool";
const MANAGED_BY = "cstor-pool-operator";
/** IQN prefix upstream cStor volumes use, so initiators configured for them recognise ours. */
export const IQN_PREFIX = "iqn.2016-09.com.openebs.cstor";

/** Upstream's default target tolerations: leave a NotReady or unreachable node after 30 s, not the default 300 s. */
const DEFAULT_TARGET_TOLERATIONS = ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"].map(
  (key) => ({
    effect: "NoExecute",
    key,
    operator: "Exists",
    tolerationSeconds: 30,
  }),
);

/** Replicas a write needs: a majority. */
export function consistencyFactor(replicationFactor: number): number {
  return Math.floor(replicationFactor / 2) + 1;
}

function targetLabels(volume: string): Record<string, string> {
  return { [LABEL.app]: TARGET_APP, [LABEL.persistentVolume]: volume };
}

function volumeLabels(inventory: VolumeInventory): Record<string, string> {
  return { [LABEL.persistentVolume]: inventory.volume, [LABEL.cspc]: inventory.cvc.spec.cstorPoolCluster };
}

export function targetService(inventory: VolumeInventory): KubeObject {
  return {
    apiVersion: "v1",
    kind: KIND.service,
    metadata: { name: inventory.volume, namespace: inventory.namespace, labels: volumeLabels(inventory) },
    spec: {
      type: "ClusterIP",
      selector: targetLabels(inventory.volume),
      ports: [
        { name: "iscsi", port: ISCSI_PORT, protocol: "TCP", targetPort: ISCSI_PORT },
        { name: "metrics", port: TARGET_METRICS_PORT, protocol: "TCP", targetPort: TARGET_METRICS_PORT },
      ],
    },
  };
}

/**
 * The target's view. Its replicationFactor counts the replicas that are not rebuilding (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md), as
 * upstream's target expects: a replica being added raises desiredReplicationFactor first, so adding a second
 * replica to a one-replica volume does not make writes wait for the empty one.
 */
export function cstorVolume(
  inventory: VolumeInventory,
  targetIP: string,
  pools: readonly string[],
  rebuilding: ReadonlySet<string> = new Set(),
): KubeObject {
  const replicationFactor = Math.max(1, pools.filter((p) => !rebuilding.has(p)).length);
  const knownReplicas = Object.fromEntries(pools.map((pool) => [replicaId(inventory.volume, pool), pool]));
  return {
    apiVersion: API_VERSION,
    kind: KIND.cv,
    metadata: { name: inventory.volume, namespace: inventory.namespace, labels: volumeLabels(inventory) },
    spec: {
      capacity: volumeCapacity(inventory),
      targetIP,
      targetPort: String(ISCSI_PORT),
      targetPortal: `${targetIP}:${ISCSI_PORT}`,
      iqn: `${IQN_PREFIX}:${inventory.volume}`,
      replicationFactor,
      consistencyFactor: consistencyFactor(replicationFactor),
      desiredReplicationFactor: inventory.cvc.spec.replicaCount,
      replicaDetails: { knownReplicas },
      ...volumeSource(inventory, pools),
    },
  };
}

/** Thrown as a 400 by canonicalResources: a target resource list the API server would refuse. */
const TARGET_FIX = "fix spec.target.resources of the CStorVolumeConfig";
/** The target agent's identity (metacontroller/base/volume-target-rbac.yaml): what it reads and writes. */
export const TARGET_SERVICE_ACCOUNT = "cstor-volume-target";
/**
 * iscsiadm runs in the host's network namespace, where iscsid and the kernel's iSCSI netlink are (the pod
 * has hostPID, so PID 1 is the host's); a JSON array, as ZFS_COMMAND_PREFIX is, never a string to split.
 */
export const HOST_ISCSI_PREFIX = JSON.stringify(HOST_NETWORK_PREFIX);
/** Host paths the agent needs: the legs' and the array's device nodes, LIO's configfs tree, the kernel modules. */
const TARGET_HOST_PATHS = [
  { name: "dev", path: "/dev", readOnly: false },
  { name: "configfs", path: "/sys/kernel/config", readOnly: false },
  { name: "modules", path: "/lib/modules", readOnly: true },
] as const;

/**
 * The volume's CHAP Secret (type kubernetes.io/iscsi-chap, which the kubelet's iSCSI volume reads through the
 * PV's secretRef, and the target reads through its env): the credentials derived from the cluster's key.
 * `data` only, base64, as the API server stores it; `stringData` would be folded into `data` and look like a
 * change on every sync.
 */
export function chapSecret(inventory: VolumeInventory, key: string): KubeObject {
  const { user, password } = volumeChap(key, inventory.volume);
  const base64 = (text: string): string => Buffer.from(text, "utf8").toString("base64");
  return {
    apiVersion: "v1",
    kind: KIND.secret,
    metadata: {
      name: chapSecretName(inventory.volume),
      namespace: inventory.namespace,
      labels: volumeLabels(inventory),
    },
    type: CHAP_SECRET_TYPE,
    data: { [CHAP_USERNAME_KEY]: base64(user), [CHAP_PASSWORD_KEY]: base64(password) },
  };
}

/**
 * The target pod (docs/adr/0040-the-target-agent-credentials-names-and-status.md, option b): its own network
 * (its address; 3260 and 9500 never collide with another target on the node), iscsiadm in the host's network
 * namespace through hostPID and nsenter, LIO and md through the host's configfs and /dev.
 */
export function targetDeployment(inventory: VolumeInventory, config: VolumeTargetConfig): KubeObject {
  const { cvc, volume, namespace } = inventory;
  const target = cvc.spec.target ?? {};
  const labels = targetLabels(volume);
  const where = `CStorVolumeConfig ${namespace}/${volume}`;
  const resources = canonicalResources(target.resources, `${where} spec.target.resources`, TARGET_FIX);
  const container: Record<string, unknown> = {
    name: TARGET_CONTAINER,
    image: config.image,
    imagePullPolicy: "IfNotPresent",
    env: targetEnv(volume),
    // The agent assembles the array before it is ready: logins and md's assembly can take a minute.
    livenessProbe: targetProbe("/healthz", 30, 6),
    ports: [
      { containerPort: ISCSI_PORT, name: "iscsi", protocol: "TCP" },
      { containerPort: TARGET_METRICS_PORT, name: "metrics", protocol: "TCP" },
    ],
    readinessProbe: targetProbe("/readyz", 10, 3),
    // The iSCSI initiator (nsenter into the host's network namespace), md and LIO's configfs need the node's kernel.
    securityContext: { privileged: true },
    terminationMessagePath: "/dev/termination-log",
    terminationMessagePolicy: "File",
    volumeMounts: TARGET_HOST_PATHS.map(({ name, path, readOnly }) => ({
      mountPath: path,
      name,
      ...(readOnly ? { readOnly } : {}),
    })),
  };
  if (Object.keys(resources).length > 0) container.resources = resources;
  const tolerations = target.tolerations
    ? target.tolerations.map(withoutEmptyFields)
    : DEFAULT_TARGET_TOLERATIONS;
  const podSpec: Record<string, unknown> = {
    containers: [container],
    dnsPolicy: "ClusterFirst",
    hostPID: true,
    restartPolicy: "Always",
    schedulerName: "default-scheduler",
    securityContext: {},
    // The API server mirrors serviceAccountName into the deprecated serviceAccount; written as stored.
    serviceAccount: TARGET_SERVICE_ACCOUNT,
    serviceAccountName: TARGET_SERVICE_ACCOUNT,
    // SIGTERM: the agent removes its LIO entries, stops the array and logs the legs out, in that order.
    terminationGracePeriodSeconds: 60,
    volumes: TARGET_HOST_PATHS.map(({ name, path }) => ({ name, hostPath: { path, type: "Directory" } })),
  };
  if (tolerations.length > 0) podSpec.tolerations = tolerations;
  if (target.affinity && Object.keys(target.affinity).length > 0) podSpec.affinity = target.affinity;
  if (target.nodeSelector && Object.keys(target.nodeSelector).length > 0)
    podSpec.nodeSelector = { ...target.nodeSelector };
  if (target.priorityClassName) podSpec.priorityClassName = target.priorityClassName;
  if (config.imagePullSecrets.length > 0)
    podSpec.imagePullSecrets = config.imagePullSecrets.map((name) => ({ name }));
  return {
    apiVersion: "apps/v1",
    kind: KIND.deployment,
    metadata: {
      name: targetDeploymentName(volume),
      namespace,
      labels: { ...labels, [LABEL.managedBy]: MANAGED_BY },
    },
    spec: {
      progressDeadlineSeconds: 600,
      replicas: 1,
      revisionHistoryLimit: 10,
      selector: { matchLabels: labels },
      // One target per volume: the old pod stops before a new one logs in to the replicas.
      strategy: { type: "Recreate" },
      template: { metadata: { labels }, spec: podSpec },
    },
  };
}

/** What the agent reads: its volume, where it is, how it reaches iscsiadm, and its CHAP credentials. */
function targetEnv(volume: string): object[] {
  const field = (fieldPath: string) => ({ fieldRef: { apiVersion: "v1", fieldPath } });
  const chap = (key: string) => ({ secretKeyRef: { key, name: chapSecretName(volume) } });
  return [
    { name: "OPENEBS_IO_CSTOR_VOLUME", value: volume },
    { name: "NAMESPACE", valueFrom: field("metadata.namespace") },
    { name: "NODE_NAME", valueFrom: field("spec.nodeName") },
    { name: "POD_IP", valueFrom: field("status.podIP") },
    { name: "ISCSI_COMMAND_PREFIX", value: HOST_ISCSI_PREFIX },
    { name: "CHAP_USERNAME", valueFrom: chap(CHAP_USERNAME_KEY) },
    { name: "CHAP_PASSWORD", valueFrom: chap(CHAP_PASSWORD_KEY) },
  ];
}

function targetProbe(path: string, periodSeconds: number, failureThreshold: number): object {
  return {
    httpGet: { path, port: TARGET_METRICS_PORT, scheme: "HTTP" },
    failureThreshold,
    periodSeconds,
    successThreshold: 1,
    timeoutSeconds: 5,
  };
}

/**
 * The replica on one pool. Its capacity follows the volume's and never goes down: a replica observed larger
 * (written by an older release, say) keeps its size. The finalizer is the node daemon's to remove, once the
 * replica is destroyed on its pool. A replica added to a volume with data carries when it started rebuilding.
 */
export function volumeReplica(
  inventory: VolumeInventory,
  pool: string,
  targetIP: string | undefined,
  rebuildingSince?: string,
): CVR {
  const { cvc, volume, namespace } = inventory;
  const observed = inventory.ownReplicas.get(pool);
  const host =
    inventory.cspis.get(pool)?.spec?.hostName ?? observed?.metadata.annotations?.[ANNOTATION.replicaPoolHost];
  const annotations = {
    ...(host ? { [ANNOTATION.replicaPoolHost]: host } : {}),
    ...(rebuildingSince ? { [ANNOTATION.rebuildingSince]: rebuildingSince } : {}),
  };
  return {
    apiVersion: API_VERSION,
    kind: KIND.cvr,
    metadata: {
      name: replicaName(volume, pool),
      namespace,
      labels: {
        [LABEL.replicaPool]: pool,
        [LABEL.replicaVolume]: volume,
        [LABEL.persistentVolume]: volume,
        [LABEL.cspc]: cvc.spec.cstorPoolCluster,
      },
      ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      finalizers: [FINALIZER.replicaProtection],
    },
    spec: {
      capacity: replicaCapacity(inventory, observed),
      replicaId: observed?.spec?.replicaId ?? replicaId(volume, pool),
      ...(targetIP ? { targetIP } : {}),
      ...originOf(inventory, pool),
    },
  };
}

/** spec.source of the replica on `pool`, when it is (or is made as) a clone of a snapshot. */
export function originOf(inventory: VolumeInventory, pool: string): Pick<CVR["spec"], "source"> {
  const origin = replicaOrigin(inventory.restore, pool, inventory.ownReplicas.get(pool), inventory.cv);
  return origin ? { source: origin } : {};
}

/** The CStorVolume's spec.source: which replicas the target's first array is assembled from. */
function volumeSource(inventory: VolumeInventory, pools: readonly string[]): Pick<CV["spec"], "source"> {
  const cloned = pools.filter((pool) => originOf(inventory, pool).source);
  const snapshot = inventory.cvc.spec.source?.snapshot;
  if (!snapshot || cloned.length === 0) return {};
  const ids = cloned.map(
    (pool) => inventory.ownReplicas.get(pool)?.spec?.replicaId ?? replicaId(inventory.volume, pool),
  );
  return { source: { snapshot, clonedReplicas: ids.sort() } };
}

/** The volume's capacity, or the observed replica's where it is larger: a replica never shrinks. */
function replicaCapacity(inventory: VolumeInventory, observed: CVR | undefined): string {
  return larger(volumeCapacity(inventory), observed?.spec?.capacity);
}

/**
 * The volume's size: its spec.capacity, or its CStorVolume's where that is larger. A volume only grows: the CRD
 * refuses a smaller spec.capacity, and where an older CRD let one through, a shrink reaches no child, so the LUN
 * the target serves never becomes smaller than the replicas under it, nor a new replica smaller than the LUN.
 */
export function volumeCapacity(inventory: VolumeInventory): string {
  const served = (inventory.cv?.spec as { capacity?: unknown } | undefined)?.capacity;
  return larger(inventory.cvc.spec.capacity, typeof served === "string" ? served : undefined);
}

/** `wanted`, or `other` where it is a larger size; an unreadable one loses. */
function larger(wanted: string, other: string | undefined): string {
  const otherBytes = quantityBytes(other);
  const wantedBytes = quantityBytes(wanted);
  return otherBytes !== undefined && wantedBytes !== undefined && otherBytes > wantedBytes ? other! : wanted;
}

export const DISRUPTION_BUDGET_CONDITION = "DisruptionBudget";

export interface BudgetPlan {
  budget?: KubeObject;
  condition: ConditionInput;
}

/**
 * At three replicas or more, at most replicationFactor − consistencyFactor of the volume's pool pods may be
 * evicted at once (replicationFactor: the replicas that are not rebuilding, as the CStorVolume counts them) (drains, autoscalers), so a voluntary disruption never takes the volume below its quorum.
 * Kubernetes refuses to evict a pod that two budgets select (the eviction API answers 500 "more than one
 * PodDisruptionBudget"), which would stop every drain of a node whose pool holds two such volumes. So a volume
 * makes its budget only when no other volume's budget selects one of its pools; if two appear at once, the
 * volume whose name sorts later gives its own up. The condition says which budget, if any, protects it.
 */
export function planDisruptionBudget(
  inventory: VolumeInventory,
  pools: readonly string[],
  replicas: number,
): BudgetPlan {
  const type = DISRUPTION_BUDGET_CONDITION;
  if (replicas < 3 || pools.length < 3) {
    return {
      condition: {
        type,
        status: "False",
        reason: "FewerThanThreeReplicas",
        message: `no budget for a volume of ${replicas} replica(s): losing any one pool already stops its writes`,
      },
    };
  }
  const maxUnavailable = replicas - consistencyFactor(replicas);
  const mine = new Set(pools);
  const overlapping = inventory.otherBudgets.filter((b) => b.pools.some((p) => mine.has(p)));
  const yieldTo = overlapping.filter((b) => inventory.pdb === undefined || b.volume < inventory.volume);
  if (yieldTo.length === 0) {
    const name = poolsDisruptionBudgetName(inventory.volume);
    return {
      budget: {
        apiVersion: "policy/v1",
        kind: KIND.podDisruptionBudget,
        metadata: { name, namespace: inventory.namespace, labels: volumeLabels(inventory) },
        spec: {
          maxUnavailable,
          selector: {
            matchExpressions: [{ key: LABEL.cspi, operator: "In", values: [...pools].sort() }],
            matchLabels: { [LABEL.app]: POOL_APP },
          },
        },
      },
      condition: {
        type,
        status: "True",
        reason: "Protected",
        message: `PodDisruptionBudget ${name} lets at most ${maxUnavailable} of the pool pods of ${[...pools].sort().join(", ")} be evicted at once`,
      },
    };
  }
  const cover = yieldTo.find(
    (b) =>
      pools.every((p) => b.pools.includes(p)) &&
      b.maxUnavailable !== undefined &&
      b.maxUnavailable <= maxUnavailable,
  );
  if (cover) {
    return {
      condition: {
        type,
        status: "True",
        reason: "CoveredByOtherBudget",
        message: `PodDisruptionBudget ${cover.name} of volume ${cover.volume} already protects every pool of this volume`,
      },
    };
  }
  const names = yieldTo.map((b) => `${b.name} (volume ${b.volume})`).join(", ");
  return {
    condition: {
      type,
      status: "False",
      reason: "PoolsShareBudget",
      message:
        `pool pods of this volume are already selected by ${names}; Kubernetes cannot evict a pod two budgets select, so this volume has ` +
        `none of its own: drain the nodes of ${[...pools].sort().join(", ")} one at a time`,
    },
  };
}
