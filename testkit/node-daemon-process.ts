// The node daemon as a real process (`node --import tsx node-daemon/main.ts`), started the way the shipped
// DaemonSet starts it: the container's environment read from the DaemonSet as the apiserver stores it, its
// downward-API fields resolved as the kubelet would, and a kubeconfig in place of the in-cluster token. Only
// what cannot be the same on a test host is overridden (see DaemonOptions). Stopped with SIGTERM.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePorts, REPO_ROOT, waitUntil, type KubeCluster } from "./kube.js";
import { LoggedProcess } from "./logged-process.js";
import { SANDBOX_DEVICE_ROOTS } from "./zfs.js";

interface KeyRef {
  name: string;
  key: string;
  optional?: boolean;
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string }; configMapKeyRef?: KeyRef; secretKeyRef?: KeyRef };
}

/** ConfigMaps' data by name, as the kubelet reads them for configMapKeyRef. */
export type ConfigMapData = Record<string, Record<string, string>>;
/** Secrets' data by name, decoded, as the kubelet gives them to secretKeyRef. */
export type SecretData = Record<string, Record<string, string>>;

/** Which container of the pod, and the pod's address (status.podIP), for resolvedContainerEnv. */
export interface PodOf {
  /** The container's name; the first container when absent. */
  container?: string;
  podIP?: string;
}

/**
 * A workload's (DaemonSet's or Deployment's) container's env as the kubelet resolves it for a pod on
 * `nodeName` in the workload's namespace: fieldRefs, configMapKeyRefs from `configMaps` and secretKeyRefs from
 * `secrets`. A missing one fails, as the pod would not start, unless it is optional: then the variable is not
 * set.
 */
export function resolvedContainerEnv(
  workload: any,
  nodeName: string,
  configMaps: ConfigMapData,
  secrets: SecretData = {},
  pod: PodOf = {},
): Record<string, string> {
  const fields: Record<string, string> = {
    "spec.nodeName": nodeName,
    "metadata.namespace": workload.metadata.namespace,
    ...(pod.podIP ? { "status.podIP": pod.podIP } : {}),
  };
  const containers = workload.spec.template.spec.containers as { name: string; env?: EnvVar[] }[];
  const container = pod.container ? containers.find((c) => c.name === pod.container) : containers[0];
  if (!container) throw new Error(`${workload.metadata.name} has no container ${pod.container}`);
  const env: Record<string, string> = {};
  for (const variable of container.env ?? []) {
    const resolved = resolvedValue(variable, fields, { configMaps, secrets });
    const ref = variable.valueFrom?.configMapKeyRef ?? variable.valueFrom?.secretKeyRef;
    if (resolved === undefined && ref?.optional === true) continue;
    if (resolved === undefined)
      throw new Error(
        `env ${variable.name}: cannot resolve ${JSON.stringify(variable.valueFrom)} outside a kubelet`,
      );
    env[variable.name] = resolved;
  }
  return env;
}

function resolvedValue(
  variable: EnvVar,
  fields: Record<string, string>,
  { configMaps, secrets }: { configMaps: ConfigMapData; secrets: SecretData },
): string | undefined {
  if (variable.value !== undefined) return variable.value;
  const from = variable.valueFrom;
  if (from?.fieldRef) return fields[from.fieldRef.fieldPath];
  if (from?.configMapKeyRef) return configMaps[from.configMapKeyRef.name]?.[from.configMapKeyRef.key];
  if (from?.secretKeyRef) return secrets[from.secretKeyRef.name]?.[from.secretKeyRef.key];
  return undefined;
}

/** An installed workload's env, resolved per node with the namespace's ConfigMaps and Secrets (what a kubelet would do). */
export async function shippedEnv(
  cluster: KubeCluster,
  namespace: string,
  kind: "daemonset" | "deployment",
  name: string,
): Promise<(nodeName: string) => Record<string, string>> {
  const workload = JSON.parse(
    (await cluster.kubectl(["get", kind, name, "-n", namespace, "-o", "json"])).stdout,
  );
  const data = async (type: "configmaps" | "secrets") => {
    const list = JSON.parse((await cluster.kubectl(["get", type, "-n", namespace, "-o", "json"])).stdout) as {
      items: { metadata: { name: string }; data?: Record<string, string> }[];
    };
    return Object.fromEntries(list.items.map((c) => [c.metadata.name, c.data ?? {}]));
  };
  const configMaps: ConfigMapData = await data("configmaps");
  const secrets: SecretData = Object.fromEntries(
    Object.entries(await data("secrets")).map(([name, values]) => [name, decodedSecretData(values)]),
  );
  return (nodeName) => resolvedContainerEnv(workload, nodeName, configMaps, secrets);
}

/** A Secret's data as the kubelet hands it to a container or a CSI call: each value decoded from base64. */
export function decodedSecretData(data: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(data).map(([key, value]) => [key, Buffer.from(value, "base64").toString("utf8")]),
  );
}

/** The installed node daemon's env per node. */
export function shippedDaemonEnv(
  cluster: KubeCluster,
  namespace: string,
): Promise<(nodeName: string) => Record<string, string>> {
  return shippedEnv(cluster, namespace, "daemonset", "cstor-pool-node");
}

/**
 * What a test node's daemon runs with on zfs-fuse: the node's own ZFS, replicas on the file backend (zfs-fuse has
 * no zvols; chosen by configuration as an operator would) under `replicaDir`, and a 3 s status interval.
 */
export function zfsFuseNodeOverrides(
  node: { commandPrefixEnv: string },
  replicaDir: string,
): Record<string, string> {
  return {
    ZFS_COMMAND_PREFIX: node.commandPrefixEnv,
    STATUS_INTERVAL_SECONDS: "3",
    CSTOR_REPLICA_BACKEND: "file",
    CSTOR_REPLICA_FILE_DIR: replicaDir,
  };
}

export interface DaemonOptions {
  /** The DaemonSet's container env, resolved (resolvedContainerEnv). */
  env: Record<string, string>;
  /** Who the daemon is: a kubeconfig holding its ServiceAccount token. */
  kubeconfig: string;
  /**
   * Test-host overrides: METRICS_PORT (a free port; several daemons share this host), LOCK_DIR (per daemon: two
   * daemons for two "nodes" on one host must not share the host lock), DEVICE_ROOTS (the devices here are sparse
   * files in the temp dir; the shipped DaemonSet keeps /dev/), and whatever the test adds (e.g.
   * ZFS_COMMAND_PREFIX: entering PID 1's mount namespace is refused here).
   */
  overrides?: Record<string, string>;
}

export class DaemonProcess extends LoggedProcess {
  private constructor(
    readonly nodeName: string,
    readonly metricsPort: number,
    lockDir: string,
    env: Record<string, string>,
  ) {
    super(
      `node daemon ${nodeName}`,
      process.execPath,
      ["--import", "tsx", join(REPO_ROOT, "node-daemon/main.ts")],
      { cwd: REPO_ROOT, env },
    );
    void this.exited.then(() => rmSync(lockDir, { recursive: true, force: true }));
  }

  /** Starts a daemon; resolves once it has listed its CSPIs and started watching ("node daemon started"). */
  static async start(options: DaemonOptions): Promise<DaemonProcess> {
    const daemon = await DaemonProcess.spawn(options);
    // A daemon that did not start is stopped, not left running beside the next one (on a loaded machine).
    await waitUntil(
      async () => {
        if (daemon.ended())
          throw new Error(`node daemon ${daemon.nodeName} exited at start: ${daemon.tail()}`);
        return daemon.lines.some((l) => l.msg === "node daemon started");
      },
      60_000,
      () => `node daemon ${daemon.nodeName} did not start: ${daemon.tail()}`,
    ).catch(async (error: unknown) => {
      await daemon.kill();
      throw error;
    });
    return daemon;
  }

  /** Spawns a daemon without waiting for it to start (for a daemon expected to fail). */
  static async spawn(options: DaemonOptions): Promise<DaemonProcess> {
    const nodeName = options.env.NODE_NAME;
    if (!nodeName) throw new Error("the DaemonSet env has no NODE_NAME");
    const [port] = await freePorts(1);
    const lockDir = mkdtempSync(join(tmpdir(), "cstor-nd-lock-"));
    const env = {
      PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin",
      HOME: process.env.HOME ?? "/root",
      ...options.env,
      KUBECONFIG: options.kubeconfig,
      METRICS_PORT: String(port),
      LOCK_DIR: lockDir,
      DEVICE_ROOTS: JSON.stringify(SANDBOX_DEVICE_ROOTS),
      ...options.overrides,
    };
    return new DaemonProcess(nodeName, port, lockDir, env);
  }

  /** Log lines at warn or error level, and anything printed that is not a log line. */
  problems(): string[] {
    return [
      ...this.lines.filter((l) => l.level === "warn" || l.level === "error").map((l) => JSON.stringify(l)),
      ...this.otherOutput,
    ];
  }
}
