// The pool Deployment of a CSPI: one pod on the CSPI's node that serves the pool's data plane. It never
// creates, imports or changes the zpool (the node daemon does). Its first container is the project's pool
// agent (docs/adr/0010-the-hosts-zfs-owns-the-pool-the-pool-pod-runs.md and docs/adr/0032-the-pool-agent-what-it-reads-how-it-exports.md): ready only when the pool is imported on the node and healthy, the
// pool's metrics, and the replicas' iSCSI exports, made in the second container's tgtd.
//
// Every field is written the way the API server stores it (defaults explicit, quantities canonical, no
// empty strings, lists or nulls the server would drop), so Metacontroller's 3-way merge finds nothing to
// change once the Deployment exists. Anything that follows from the CSPI's node, resources or tolerations
// lives in the pod template, so changing it rolls the pod (Recreate: the old pod stops before the new one
// starts, as two pods must never serve one pool).
import { API_VERSION, KIND, LABEL, TYPE_KEY } from "../../api/constants.js";
import type { CSPI, DecoratorSyncRequest, KubeObject } from "../../api/types.js";
import { BadRequestError } from "../errors.js";
import { shortHash } from "../hash.js";
import { isDnsSubdomain, isValidLabelValue, poolDeploymentName, zpoolName } from "../names.js";
import { objectsOf } from "../request.js";
import type { PoolPodConfig } from "../hook-config.js";
import { canonicalResources, withoutEmptyFields } from "../pod-template.js";
import { CHAP_KEY_ENV, CHAP_KEY_SECRET, CHAP_KEY_SECRET_KEY } from "../volume/chap.js";

export const POOL_APP = "cstor-pool";
/** The pool agent (pool-agent/main.ts, the image's entrypoint). */
export const POOL_CONTAINER = "cstor-pool";
/** tgtd, from the same image: serves the agent's exports on the iSCSI port. */
export const TGT_CONTAINER = "tgtd";
const MANAGED_BY = "cstor-pool-operator";
/** The agent's /readyz, /healthz and /metrics (pool-agent/config.ts AGENT_DEFAULTS.port). */
const AGENT_PORT = 9500;
const ISCSI_PORT = 3260;
/** The pool's own host directory (BASE_DIR/cstor-pool/<cspi>). */
const POOL_STATE_PATH = "/var/openebs/cstor-pool";
/** tgtd's control socket, shared by the two containers: the agent's tgtadm talks to tgtd through it. */
const TGT_SOCKET_PATH = "/var/run/tgtd";
/** The host's zpool and zfs: the node daemon's prefix, so both run the same ZFS (hostPID makes PID 1 the host's). */
const HOST_ZFS_PREFIX = JSON.stringify(["nsenter", "-t", "1", "-m", "--"]);
const POOL_FIX = "fix it in the CStorPoolCluster's poolConfig";
/**
 * Where the agent container sees a device-set PVC (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md). Not under /dev: the container's
 * /dev is the host's, and the runtime must not make device nodes there.
 */
const DEVICE_SET_DIR = "/cstor-sets";

/** A CSPI whose name and node have been checked, as its pool pod is built from it. */
interface PoolOf {
  cspi: CSPI;
  name: string;
  /** "CStorPoolInstance <namespace>/<name>", to start a refusal with. */
  where: string;
  hostName: string;
}

/** What a CSPI gives its Deployment; everything else about the Deployment is fixed or configured. */
export function poolDeployment(cspi: CSPI, config: PoolPodConfig): KubeObject {
  const pool = checkedPool(cspi);
  const { name } = pool;
  const labels: Record<string, string> = {
    [LABEL.app]: POOL_APP,
    [LABEL.managedBy]: MANAGED_BY,
    [LABEL.cspi]: name,
  };
  const cspc = cspcOf(cspi);
  if (cspc) labels[LABEL.cspc] = cspc;
  return {
    apiVersion: "apps/v1",
    kind: KIND.deployment,
    metadata: { name: poolDeploymentName(name), namespace: cspi.metadata.namespace ?? "default", labels },
    spec: {
      progressDeadlineSeconds: 600,
      replicas: 1,
      revisionHistoryLimit: 10,
      // Only this CSPI's pod: a namespace-wide app label would let Deployments adopt each other's pods.
      selector: { matchLabels: { [LABEL.cspi]: name } },
      strategy: { type: "Recreate" },
      template: {
        metadata: {
          labels,
          annotations: {
            "cluster-autoscaler.kubernetes.io/safe-to-evict": "false",
            "prometheus.io/path": "/metrics",
            "prometheus.io/port": String(AGENT_PORT),
            "prometheus.io/scrape": "true",
          },
        },
        spec: poolPodSpec(pool, config),
      },
    },
  };
}

function checkedPool(cspi: CSPI): PoolOf {
  const name = requireName(cspi);
  const where = `CStorPoolInstance ${cspi.metadata.namespace ?? "default"}/${name}`;
  const hostName = cspi.spec?.hostName;
  if (typeof hostName !== "string" || !isValidLabelValue(hostName) || hostName === "") {
    throw new BadRequestError(
      `${where} spec.hostName ${JSON.stringify(hostName ?? null)} is not a node hostname label value: cspc-sync sets it to the node of the pool's block devices; recreate the CSPI from its CStorPoolCluster`,
    );
  }
  return { cspi, name, where, hostName };
}

function poolPodSpec(pool: PoolOf, config: PoolPodConfig): Record<string, unknown> {
  const { cspi, name, where, hostName } = pool;
  const poolConfig = cspi.spec.poolConfig ?? {};
  const claims = deviceSetClaims(cspi, where);
  const podSpec: Record<string, unknown> = {
    automountServiceAccountToken: false,
    containers: poolContainers(pool, config, claims.volumeDevices),
    dnsPolicy: "ClusterFirst",
    enableServiceLinks: true,
    hostPID: true,
    nodeSelector: {
      ...stringMap(cspi.spec.nodeSelector, `${where} spec.nodeSelector`),
      [LABEL.hostname]: hostName,
    },
    restartPolicy: "Always",
    schedulerName: "default-scheduler",
    securityContext: {},
    terminationGracePeriodSeconds: 30,
    volumes: [
      { name: "device", hostPath: { path: "/dev", type: "Directory" } },
      {
        name: "storagepath",
        hostPath: { path: `${config.baseDir}/cstor-pool/${name}`, type: "DirectoryOrCreate" },
      },
      { name: "tgt-socket", emptyDir: {} },
      ...claims.volumes,
    ],
  };
  if (poolConfig.priorityClassName) podSpec.priorityClassName = poolConfig.priorityClassName;
  const tolerations = (poolConfig.tolerations ?? []).map(withoutEmptyFields);
  if (tolerations.length > 0) podSpec.tolerations = tolerations;
  if (config.imagePullSecrets.length > 0)
    podSpec.imagePullSecrets = config.imagePullSecrets.map((secret) => ({ name: secret }));
  return podSpec;
}

/** The pool agent, with the device-set PVCs as block devices, and tgtd beside it. */
function poolContainers(
  { cspi, name, where }: PoolOf,
  config: PoolPodConfig,
  volumeDevices: object[],
): object[] {
  const poolConfig = cspi.spec.poolConfig ?? {};
  return [
    {
      ...poolImageContainer(POOL_CONTAINER, config),
      ...(volumeDevices.length > 0 ? { volumeDevices } : {}),
      env: [
        { name: "OPENEBS_IO_CSPI_NAME", value: name },
        { name: "OPENEBS_IO_ZPOOL_NAME", value: zpoolName(name) },
        { name: "ZFS_COMMAND_PREFIX", value: HOST_ZFS_PREFIX },
        { name: "PORT", value: String(AGENT_PORT) },
        // The key every export's CHAP password derives from (ADR 0040). Not optional: without the Secret the
        // pod does not start, and the agent refuses an unusable key, so nothing is ever served without CHAP.
        {
          name: CHAP_KEY_ENV,
          valueFrom: { secretKeyRef: { key: CHAP_KEY_SECRET_KEY, name: CHAP_KEY_SECRET } },
        },
      ],
      ports: [{ containerPort: AGENT_PORT, name: "metrics", protocol: "TCP" }],
      // Ready once the pool is imported on this node and ONLINE or DEGRADED (the agent's /readyz says why not).
      readinessProbe: agentProbe("/readyz", 10),
      livenessProbe: agentProbe("/healthz", 30),
      resources: canonicalResources(poolConfig.resources, `${where} spec.poolConfig.resources`, POOL_FIX),
    },
    {
      ...poolImageContainer(TGT_CONTAINER, config),
      command: ["tgtd", "-f", "--iscsi", `portal=0.0.0.0:${ISCSI_PORT}`],
      ports: [{ containerPort: ISCSI_PORT, name: "iscsi", protocol: "TCP" }],
      resources: canonicalResources(
        poolConfig.auxResources,
        `${where} spec.poolConfig.auxResources`,
        POOL_FIX,
      ),
    },
  ];
}

/** What both containers share: the pool image, privileged, with /dev, the pool's directory and tgtd's socket. */
function poolImageContainer(containerName: string, config: PoolPodConfig): Record<string, unknown> {
  return {
    name: containerName,
    image: config.poolImage,
    imagePullPolicy: "IfNotPresent",
    volumeMounts: [
      { mountPath: "/dev", name: "device" },
      { mountPath: POOL_STATE_PATH, name: "storagepath" },
      { mountPath: TGT_SOCKET_PATH, name: "tgt-socket" },
    ],
    terminationMessagePath: "/dev/termination-log",
    terminationMessagePolicy: "File",
    // The agent reaches the host's ZFS through nsenter; tgtd opens the replicas' zvols under the host's /dev.
    securityContext: { privileged: true },
  };
}

function agentProbe(path: string, periodSeconds: number): object {
  return {
    httpGet: { path, port: AGENT_PORT, scheme: "HTTP" },
    failureThreshold: 3,
    periodSeconds,
    successThreshold: 1,
    timeoutSeconds: 5,
  };
}

/** The observed pool Deployment of the request's CSPI, if Metacontroller sent one. */
export function observedPoolDeployment(request: DecoratorSyncRequest): KubeObject | undefined {
  const name = poolDeploymentName(request.object.metadata.name ?? "");
  return objectsOf(request.attachments, TYPE_KEY.deployment).find((d) => d.metadata.name === name);
}

/**
 * Whether Metacontroller has applied the desired Deployment: it exists, is not being deleted, and holds every
 * field of the answer with the same value (lists item by item). The answer is written the way the API server
 * stores it, so an applied Deployment contains it whatever the server and other controllers add.
 */
export function isApplied(desired: KubeObject, observed: KubeObject | undefined): boolean {
  return observed !== undefined && !observed.metadata.deletionTimestamp && hasEveryFieldOf(observed, desired);
}

/** Whether `observed` holds every field of `desired` with the same value (lists item by item). */
export function hasEveryFieldOf(observed: unknown, desired: unknown): boolean {
  if (Array.isArray(desired)) {
    return (
      Array.isArray(observed) &&
      observed.length === desired.length &&
      desired.every((item, i) => hasEveryFieldOf(observed[i], item))
    );
  }
  if (typeof desired === "object" && desired !== null) {
    if (typeof observed !== "object" || observed === null || Array.isArray(observed)) return false;
    return Object.entries(desired).every(([key, value]) =>
      hasEveryFieldOf((observed as Record<string, unknown>)[key], value),
    );
  }
  return observed === desired;
}

function requireName(cspi: CSPI): string {
  const name = cspi.metadata.name ?? "";
  if (!isValidLabelValue(name) || name === "") {
    throw new BadRequestError(
      `CStorPoolInstance ${cspi.metadata.namespace ?? ""}/${name} has a name longer than 63 characters or not a label value: its pool Deployment selects its pod by it; rename the CStorPoolCluster to at most 56 characters`,
    );
  }
  return name;
}

/**
 * A pool on device sets mounts its PVCs (its devices' names) as block devices in the agent container: the
 * scheduler then keeps the pod on the PVs' node, and each PVC is in use (pvc-protection) while the pool runs.
 * Sorted, so the template is the same whatever the raid groups' order; volume names are hashes, as a PVC name
 * can be longer than a volume name may be. Empty for every other pool.
 */
function deviceSetClaims(cspi: CSPI, where: string): { volumes: object[]; volumeDevices: object[] } {
  if (cspi.metadata.labels?.[LABEL.onDeviceSets] !== "true") return { volumes: [], volumeDevices: [] };
  const names = [
    ...new Set(cspi.spec.raidGroups.flatMap((g) => g.blockDevices.map((d) => d.blockDeviceName))),
  ].sort();
  const bad = names.find((claim) => !isDnsSubdomain(claim));
  if (bad !== undefined) {
    throw new BadRequestError(
      `${where} is labelled ${LABEL.onDeviceSets}=true but its raid groups name ${JSON.stringify(bad)}, which is not a PVC name: cspc-sync names a device-set pool's devices by their PVCs; recreate the CSPI from its CStorPoolCluster`,
    );
  }
  const volume = (claim: string) => `pvc-${shortHash([claim], 10)}`;
  return {
    volumes: names.map((claim) => ({ name: volume(claim), persistentVolumeClaim: { claimName: claim } })),
    volumeDevices: names.map((claim) => ({ devicePath: `${DEVICE_SET_DIR}/${claim}`, name: volume(claim) })),
  };
}

function cspcOf(cspi: CSPI): string | undefined {
  const fromLabel = cspi.metadata.labels?.[LABEL.cspc];
  if (fromLabel) return fromLabel;
  const owner = cspi.metadata.ownerReferences?.find(
    (ref) => ref.kind === KIND.cspc && ref.apiVersion === API_VERSION,
  );
  return typeof owner?.name === "string" && isValidLabelValue(owner.name) ? owner.name : undefined;
}

function stringMap(map: Record<string, string> | undefined, field: string): Record<string, string> {
  for (const [key, value] of Object.entries(map ?? {})) {
    if (typeof value !== "string")
      throw new BadRequestError(`${field}["${key}"] must be a string label value`);
  }
  return { ...map };
}
