// The node daemon as a real process (`node --import tsx node-daemon/main.ts`), started the way the shipped
// DaemonSet starts it: the container's environment read from the DaemonSet as the apiserver stores it, its
// downward-API fields resolved as the kubelet would, and a kubeconfig in place of the in-cluster token. Only
// what cannot be the same on a test host is overridden (see DaemonOptions). Stopped with SIGTERM.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePorts, REPO_ROOT, waitUntil, type KubeCluster } from "./kube.js";
import { onStop } from "./processes.js";
import { SANDBOX_DEVICE_ROOTS } from "./zfs.js";

/** Daemons still running: killed if the test process exits without stopping them (e.g. mocha interrupted). */
const running = new Set<ChildProcess>();
process.once("exit", () => running.forEach((child) => child.kill("SIGKILL")));

/** One JSON log line of the daemon (lib/log.ts). */
export interface DaemonLogLine {
  level: string;
  msg: string;
  [field: string]: unknown;
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string }; configMapKeyRef?: { name: string; key: string } };
}

/** ConfigMaps' data by name, as the kubelet reads them for configMapKeyRef. */
export type ConfigMapData = Record<string, Record<string, string>>;

/**
 * A DaemonSet's first container's env as the kubelet resolves it for a pod on `nodeName` in the DaemonSet's
 * namespace: fieldRefs, and configMapKeyRefs from `configMaps` (a missing one fails, as the pod would not start).
 */
function resolvedContainerEnv(daemonSet: any, nodeName: string, configMaps: ConfigMapData = {}): Record<string, string> {
  const fields: Record<string, string> = { "spec.nodeName": nodeName, "metadata.namespace": daemonSet.metadata.namespace };
  const env: Record<string, string> = {};
  for (const variable of (daemonSet.spec.template.spec.containers[0].env ?? []) as EnvVar[]) {
    const path = variable.valueFrom?.fieldRef?.fieldPath;
    const ref = variable.valueFrom?.configMapKeyRef;
    const resolved = variable.value ?? (path !== undefined ? fields[path] : ref ? configMaps[ref.name]?.[ref.key] : undefined);
    if (resolved === undefined) throw new Error(`env ${variable.name}: cannot resolve ${JSON.stringify(variable.valueFrom)} outside a kubelet`);
    env[variable.name] = resolved;
  }
  return env;
}

/** The installed DaemonSet, and its env resolved per node with the namespace's ConfigMaps (what a kubelet would do). */
export async function shippedDaemonEnv(cluster: KubeCluster, namespace: string): Promise<(nodeName: string) => Record<string, string>> {
  const daemonSet = JSON.parse((await cluster.kubectl(["get", "daemonset", "cstor-pool-node", "-n", namespace, "-o", "json"])).stdout);
  const list = JSON.parse((await cluster.kubectl(["get", "configmaps", "-n", namespace, "-o", "json"])).stdout) as {
    items: { metadata: { name: string }; data?: Record<string, string> }[];
  };
  const configMaps: ConfigMapData = Object.fromEntries(list.items.map((c) => [c.metadata.name, c.data ?? {}]));
  return (nodeName) => resolvedContainerEnv(daemonSet, nodeName, configMaps);
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

export class DaemonProcess {
  readonly lines: DaemonLogLine[] = [];
  /** Output that is not a JSON log line (e.g. "node daemon failed: ..." on stderr). */
  readonly otherOutput: string[] = [];
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private readonly child: ChildProcess;

  private constructor(
    readonly nodeName: string,
    readonly metricsPort: number,
    private readonly lockDir: string,
    env: Record<string, string>,
  ) {
    this.child = spawn(process.execPath, ["--import", "tsx", join(REPO_ROOT, "node-daemon/main.ts")], {
      cwd: REPO_ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    running.add(this.child);
    this.exited = new Promise((resolve) =>
      this.child.once("exit", (code, signal) => {
        running.delete(this.child);
        rmSync(this.lockDir, { recursive: true, force: true });
        resolve({ code, signal });
      }),
    );
    this.collect(this.child.stdout!);
    this.collect(this.child.stderr!);
  }

  /** Starts a daemon; resolves once it has listed its CSPIs and started watching ("node daemon started"). */
  static async start(options: DaemonOptions): Promise<DaemonProcess> {
    const daemon = await DaemonProcess.spawn(options);
    await waitUntil(
      async () => {
        if (daemon.ended()) throw new Error(`node daemon ${daemon.nodeName} exited at start: ${daemon.tail()}`);
        return daemon.lines.some((l) => l.msg === "node daemon started");
      },
      60_000,
      () => `node daemon ${daemon.nodeName} did not start: ${daemon.tail()}`,
    );
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
    const daemon = new DaemonProcess(nodeName, port!, lockDir, env);
    onStop(() => daemon.kill());
    return daemon;
  }

  /** SIGTERM, as the kubelet stops a pod; resolves with how the process ended. */
  async stop(timeoutMs = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (!this.ended()) this.child.kill("SIGTERM");
    const timer = setTimeout(() => this.child.kill("SIGKILL"), timeoutMs);
    const result = await this.exited;
    clearTimeout(timer);
    return result;
  }

  /** How the process ended, or undefined while it still runs after timeoutMs. */
  async exitWithin(timeoutMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)));
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Log lines at warn or error level, and anything printed that is not a log line. */
  problems(): string[] {
    return [...this.lines.filter((l) => l.level === "warn" || l.level === "error").map((l) => JSON.stringify(l)), ...this.otherOutput];
  }

  /** The last lines of output, for failure messages. */
  tail(count = 20): string {
    const all = [...this.lines.map((l) => JSON.stringify(l)), ...this.otherOutput];
    return `\n--- node daemon ${this.nodeName}, last ${count} lines:\n${all.slice(-count).join("\n")}`;
  }

  private async kill(): Promise<void> {
    if (this.ended()) return;
    this.child.kill("SIGKILL");
    await this.exited;
  }

  private ended(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  private collect(stream: NodeJS.ReadableStream): void {
    let pending = "";
    stream.setEncoding("utf8");
    stream.on("data", (chunk: string) => {
      pending += chunk;
      const parts = pending.split("\n");
      pending = parts.pop() ?? "";
      for (const text of parts) {
        if (!text.trim()) continue;
        try {
          this.lines.push(JSON.parse(text) as DaemonLogLine);
        } catch {
          this.otherOutput.push(text);
        }
      }
    });
  }
}
