// A workload's pod started by podman as a kubelet starts it (docs/adr/0049-the-images-built-by-buildah-from-the-dockerfile.md),
// from the pod template the manifests or the hooks write: one podman pod (its containers share the network, as a
// pod's do), and per container its image, user and group (runAsNonRoot refused as the kubelet refuses it), read-only
// root, privileged, capabilities, allowPrivilegeEscalation, hostPID, command and args, environment (references
// resolved as the kubelet resolves them), volumes, memory limit and container ports. Probes are answered to the
// test, which polls them where a kubelet would; SIGTERM and the grace period as the kubelet stops a pod.
//
// What cannot be the same on a test host is given by the test, never guessed: the directory each hostPath stands
// for, paths of this host mounted at the same path (stand-ins for a node's devices), environment overrides, the
// host's network with the ports the containers then listen on, and the ServiceAccount token the kubelet mounts.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { quantityBytes } from "../lib/quantity.js";
import { containerEnvironment } from "../scripts/images.js";
import { waitUntil } from "./kube.js";
import { resolvedContainerEnv, type ConfigMapData, type SecretData } from "./node-daemon-process.js";
import { onStop } from "./processes.js";

const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

let environment: Promise<NodeJS.ProcessEnv> | undefined;

/** podman with the project's container configuration and storage (scripts/image-env.sh). */
export async function podman(args: readonly string[], timeoutMs = 120_000): Promise<RunResult> {
  environment ??= containerEnvironment();
  const env = await environment;
  return new Promise((resolve) => {
    execFile(
      "podman",
      args,
      { env, timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 64 * 1024 * 1024, encoding: "utf8" },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === "number" ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

async function mustPodman(args: readonly string[], timeoutMs?: number): Promise<string> {
  const result = await podman(args, timeoutMs);
  if (result.code !== 0)
    throw new Error(`podman ${args.join(" ")} exited ${result.code}: ${result.stderr.trim()}`);
  return result.stdout;
}

export interface PodOptions {
  /** Part of the pod's name and of failure messages. */
  label: string;
  /** The Deployment or DaemonSet whose pod template is started. */
  workload: any;
  nodeName: string;
  /**
   * The directory on this host each hostPath volume stands for, by the path the pod spec names; null for one this
   * machine cannot give (the test says why), whose mounts are left out.
   */
  hostPaths: Record<string, string | null>;
  configMaps?: ConfigMapData;
  secrets?: SecretData;
  /** Per container name: variables set over the spec's, for what cannot be the same on a test host. */
  env?: Record<string, Record<string, string>>;
  /** Per container name: a command instead of the spec's (what `kubectl exec` would run in it). */
  commands?: Record<string, string[]>;
  /** Paths of this host mounted at the same path in every container: stand-ins for a node's devices. */
  samePaths?: string[];
  /** The host's network, the address it gives status.podIP and where each container port is then served. */
  hostNetwork?: { podIP: string; ports: Record<number, number> };
  /** The ServiceAccount token and CA the kubelet mounts, and the apiserver (https://host:port) they are for. */
  serviceAccount?: { token: string; caFile: string; server: string };
}

interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: unknown[];
  ports?: { name?: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  securityContext?: any;
  resources?: { limits?: Record<string, string> };
  readinessProbe?: any;
  livenessProbe?: any;
}

export interface Probe {
  status: number;
  body: string;
}

export class PodmanPod {
  private hostPorts = new Map<number, number>();

  private constructor(
    readonly name: string,
    private readonly options: PodOptions,
    private readonly dir: string,
  ) {}

  private get spec(): any {
    return this.options.workload.spec.template.spec;
  }

  private container(name: string): Container {
    const found = (this.spec.containers as Container[]).find((c) => c.name === name);
    if (!found) throw new Error(`${this.options.label}: the pod has no container ${name}`);
    return found;
  }

  /** Creates the pod and starts every container, in the spec's order, detached. */
  static async start(options: PodOptions): Promise<PodmanPod> {
    const pod = await PodmanPod.create(options);
    for (const container of pod.spec.containers as Container[])
      await mustPodman(["run", "--detach", ...(await pod.runArguments(container))]);
    await pod.readPorts();
    return pod;
  }

  /** Runs one container of the pod to its end, attached; the pod is removed afterwards. */
  static async run(options: PodOptions, container: string, timeoutMs = 120_000): Promise<RunResult> {
    const pod = await PodmanPod.create(options);
    try {
      return await podman(["run", ...(await pod.runArguments(pod.container(container)))], timeoutMs);
    } finally {
      await pod.remove();
    }
  }

  private static async create(options: PodOptions): Promise<PodmanPod> {
    const name = `cstor-test-${options.label}-${randomBytes(3).toString("hex")}`;
    const dir = mkdtempSync(join(tmpdir(), `${name}-`));
    const pod = new PodmanPod(name, options, dir);
    onStop(() => pod.remove());
    const published = options.hostNetwork
      ? ["--network", "host"]
      : (pod.spec.containers as Container[]).flatMap((c) =>
          (c.ports ?? []).flatMap((p) => ["--publish", `127.0.0.1::${p.containerPort}`]),
        );
    await mustPodman(["pod", "create", "--name", name, ...published]);
    return pod;
  }

  private async readPorts(): Promise<void> {
    for (const container of this.spec.containers as Container[]) {
      for (const { containerPort } of container.ports ?? []) {
        const mapped = this.options.hostNetwork
          ? this.options.hostNetwork.ports[containerPort]
          : Number(
              /:(\d+)\s*$/.exec(
                await mustPodman(["port", `${this.name}-${container.name}`, `${containerPort}/tcp`]),
              )?.[1],
            );
        if (mapped) this.hostPorts.set(containerPort, mapped);
      }
    }
  }

  /** `podman run` arguments (after run or run --detach) for one container of the pod. */
  private async runArguments(container: Container): Promise<string[]> {
    const command = this.options.commands?.[container.name] ?? container.command;
    const args = this.options.commands?.[container.name] ? [] : (container.args ?? []);
    return [
      "--pod",
      this.name,
      "--name",
      `${this.name}-${container.name}`,
      ...(await this.securityArguments(container)),
      ...this.mountArguments(container),
      ...this.envArguments(container).flatMap((pair) => ["--env", pair]),
      ...this.memoryArguments(container),
      ...(command ? ["--entrypoint", JSON.stringify(command)] : []),
      container.image,
      ...args,
    ];
  }

  private async securityArguments(container: Container): Promise<string[]> {
    const pod = this.spec.securityContext ?? {};
    const own = container.securityContext ?? {};
    const user = own.runAsUser ?? pod.runAsUser;
    const group = own.runAsGroup ?? pod.runAsGroup;
    if (own.runAsNonRoot ?? pod.runAsNonRoot) await this.refuseRoot(container, user);
    const seccomp = own.seccompProfile?.type ?? pod.seccompProfile?.type;
    return [
      ...(user !== undefined ? ["--user", group !== undefined ? `${user}:${group}` : String(user)] : []),
      ...(own.readOnlyRootFilesystem ? ["--read-only", "--read-only-tmpfs=false"] : []),
      ...(own.privileged ? ["--privileged"] : []),
      ...((own.capabilities?.drop ?? []) as string[]).flatMap((cap) => ["--cap-drop", cap]),
      ...((own.capabilities?.add ?? []) as string[]).flatMap((cap) => ["--cap-add", cap]),
      ...(own.allowPrivilegeEscalation === false ? ["--security-opt", "no-new-privileges"] : []),
      // A kubelet without a profile runs a container unconfined; podman's default is RuntimeDefault's.
      ...(seccomp === "RuntimeDefault" || own.privileged ? [] : ["--security-opt", "seccomp=unconfined"]),
      ...(this.spec.hostPID ? ["--pid", "host"] : []),
    ];
  }

  /** As the kubelet: a root user, or an image user it cannot tell is not root, is refused under runAsNonRoot. */
  private async refuseRoot(container: Container, user: number | undefined): Promise<void> {
    const imageUser = (
      await mustPodman(["image", "inspect", "--format", "{{.Config.User}}", container.image])
    ).trim();
    const uid = user ?? (/^\d+/.test(imageUser) ? Number(/^\d+/.exec(imageUser)![0]) : undefined);
    if (uid === undefined || uid === 0)
      throw new Error(
        `${this.options.label}: container ${container.name} has runAsNonRoot and would run as ${uid === 0 ? "root" : `image user ${JSON.stringify(imageUser)}, not a numeric uid`}: the kubelet refuses to start it`,
      );
  }

  private mountArguments(container: Container): string[] {
    const volumes = new Map<string, any>((this.spec.volumes ?? []).map((v: any) => [v.name, v]));
    const mounts = (container.volumeMounts ?? []).flatMap((mount) => {
      const volume = volumes.get(mount.name);
      if (!volume)
        throw new Error(
          `${this.options.label}: ${container.name} mounts ${mount.name}, which the pod does not have`,
        );
      if (volume.emptyDir?.medium === "Memory") {
        const size = quantityBytes(volume.emptyDir.sizeLimit);
        return [
          `type=tmpfs,destination=${mount.mountPath}${size !== undefined ? `,tmpfs-size=${size}` : ""}`,
        ];
      }
      const source = this.volumeSource(volume);
      const ro = mount.readOnly ? ",ro" : "";
      return source === null ? [] : [`type=bind,source=${source},destination=${mount.mountPath}${ro}`];
    });
    for (const path of this.options.samePaths ?? [])
      mounts.push(`type=bind,source=${path},destination=${path}`);
    if (this.options.serviceAccount && this.spec.automountServiceAccountToken !== false)
      mounts.push(`type=bind,source=${this.serviceAccountDir()},destination=${SERVICE_ACCOUNT_DIR},ro`);
    return mounts.flatMap((mount) => ["--mount", mount]);
  }

  /** A hostPath volume's stand-in; an emptyDir on disk is a directory of the pod, shared by its containers. */
  private volumeSource(volume: any): string | null {
    if (volume.hostPath) {
      const source = this.options.hostPaths[volume.hostPath.path];
      if (source === undefined)
        throw new Error(
          `${this.options.label}: the test gives no directory for hostPath ${volume.hostPath.path}`,
        );
      return source;
    }
    if (volume.emptyDir) {
      const source = join(this.dir, "volumes", volume.name);
      mkdirSync(source, { recursive: true });
      // The kubelet makes an emptyDir world-writable, so a container of any user writes there.
      chmodSync(source, 0o777);
      return source;
    }
    throw new Error(`${this.options.label}: volume ${volume.name} is of a kind this stand-in does not mount`);
  }

  /** The token, CA and namespace files the kubelet mounts for the pod's ServiceAccount. */
  private serviceAccountDir(): string {
    const dir = join(this.dir, "serviceaccount");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "token"), this.options.serviceAccount!.token);
    copyFileSync(this.options.serviceAccount!.caFile, join(dir, "ca.crt"));
    writeFileSync(join(dir, "namespace"), this.options.workload.metadata.namespace);
    return dir;
  }

  private envArguments(container: Container): string[] {
    const { nodeName, configMaps = {}, secrets = {}, serviceAccount, hostNetwork } = this.options;
    const podIP = hostNetwork?.podIP;
    const resolved = resolvedContainerEnv(this.options.workload, nodeName, configMaps, secrets, {
      container: container.name,
      ...(podIP ? { podIP } : {}),
    });
    // The kubelet gives every container the address of the apiserver's Service.
    const api = serviceAccount ? new URL(serviceAccount.server) : undefined;
    const apiEnv = api ? { KUBERNETES_SERVICE_HOST: api.hostname, KUBERNETES_SERVICE_PORT: api.port } : {};
    const all = { ...apiEnv, ...resolved, ...this.options.env?.[container.name] };
    return Object.entries(all).map(([name, value]) => `${name}=${value}`);
  }

  private memoryArguments(container: Container): string[] {
    const limit = quantityBytes(container.resources?.limits?.memory);
    return limit !== undefined ? ["--memory", String(limit)] : [];
  }

  /** Where an emptyDir volume of the pod is on this host (a CSI socket, say). */
  emptyDirPath(volume: string): string {
    const found = ((this.options.workload.spec?.template?.spec?.volumes ?? []) as any[]).find(
      (v) => v.name === volume && v.emptyDir,
    );
    if (!found) throw new Error(`${this.options.label}: the pod has no emptyDir volume ${volume}`);
    return join(this.dir, "volumes", volume);
  }

  /** Where this host reaches a container port of the pod. */
  hostPort(containerPort: number): number {
    const port = this.hostPorts.get(containerPort);
    if (port === undefined)
      throw new Error(`${this.options.label}: no container of the pod declares port ${containerPort}`);
    return port;
  }

  /** A container's readiness or liveness probe (httpGet), answered as the kubelet would read it. */
  async probe(container: string, kind: "readinessProbe" | "livenessProbe"): Promise<Probe> {
    const probe = this.container(container)[kind];
    if (!probe?.httpGet) throw new Error(`${this.options.label}: ${container} has no httpGet ${kind}`);
    const { path, port } = probe.httpGet as { path: string; port: number | string };
    const containerPort =
      typeof port === "number"
        ? port
        : this.container(container).ports?.find((p) => p.name === port)?.containerPort;
    if (containerPort === undefined)
      throw new Error(`${this.options.label}: ${container} has no port named ${port}`);
    try {
      const response = await fetch(`http://127.0.0.1:${this.hostPort(containerPort)}${path}`);
      return { status: response.status, body: await response.text() };
    } catch (error) {
      return { status: 0, body: (error as Error).message };
    }
  }

  /** Waits until a probe answers `status` with a body matching `body`; returns the body. */
  async awaitProbe(
    container: string,
    kind: "readinessProbe" | "livenessProbe",
    status: number,
    body: RegExp = /.*/s,
    timeoutMs = 60_000,
  ): Promise<string> {
    let last: Probe | undefined;
    try {
      await waitUntil(
        async () => {
          last = await this.probe(container, kind);
          return last.status === status && body.test(last.body);
        },
        timeoutMs,
        () => `${container}'s ${kind} never answered ${status} ${body}: last ${JSON.stringify(last)}`,
      );
    } catch (error) {
      throw new Error(`${(error as Error).message}${await this.tail(container)}`, { cause: error });
    }
    return last!.body;
  }

  exec(container: string, argv: readonly string[]): Promise<RunResult> {
    return podman(["exec", `${this.name}-${container}`, ...argv]);
  }

  /** A container's output so far (stdout and stderr), for assertions. */
  async logs(container: string): Promise<string> {
    const result = await podman(["logs", `${this.name}-${container}`]);
    return result.stdout + result.stderr;
  }

  /** The last lines of a container's output, for failure messages. */
  async tail(container: string, lines = 30): Promise<string> {
    const output = (await this.logs(container)).trimEnd().split("\n").slice(-lines).join("\n");
    return `\n--- ${this.options.label} ${container}, last ${lines} lines:\n${output}`;
  }

  /**
   * Stops one container as the kubelet stops a pod's: SIGTERM, SIGKILL after the pod's grace period; resolves with
   * its exit code (137 when it had to be killed).
   */
  async stop(container: string): Promise<number> {
    const grace = String(this.spec.terminationGracePeriodSeconds ?? 30);
    await mustPodman(["stop", "--time", grace, `${this.name}-${container}`], (Number(grace) + 30) * 1000);
    return Number(
      (await mustPodman(["inspect", "--format", "{{.State.ExitCode}}", `${this.name}-${container}`])).trim(),
    );
  }

  /** Removes the pod, its containers (killed if they run) and its directories. */
  async remove(): Promise<void> {
    await podman(["pod", "rm", "--force", "--time", "0", this.name]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
