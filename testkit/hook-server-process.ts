// The hook server as a real process (`node --import tsx hooks/main.ts`), with the environment of the shipped
// Deployment (metacontroller/base/hook-server.yaml) as the apiserver stores it; only PORT is a free loopback port.
// It acts as its ServiceAccount (a kubeconfig holding that account's token): its Events are written as in a pod.
import { freePorts, REPO_ROOT, waitUntil, type KubeCluster } from "./kube.js";
import { LoggedProcess } from "./logged-process.js";
import { shippedEnv } from "./node-daemon-process.js";

export class HookServerProcess extends LoggedProcess {
  private constructor(
    readonly url: string,
    env: Record<string, string>,
  ) {
    super("hook server", process.execPath, ["--import", "tsx", "hooks/main.ts"], { cwd: REPO_ROOT, env });
  }

  /** Starts the hook server of the installed Deployment `namespace/name`; resolves once it listens. */
  static async start(
    cluster: KubeCluster,
    namespace: string,
    name = "cstor-pool-hooks",
  ): Promise<HookServerProcess> {
    const envOn = await shippedEnv(cluster, namespace, "deployment", name);
    const [port] = await freePorts(1);
    const identity = await cluster.serviceAccount(namespace, name);
    const env = {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      ...envOn("hook-node"),
      PORT: String(port),
      KUBECONFIG: identity.kubeconfig,
    };
    const server = new HookServerProcess(`http://127.0.0.1:${port}`, env);
    await waitUntil(
      async () => {
        if (server.ended()) throw new Error(`the hook server exited at start: ${server.tail()}`);
        return server.lines.some((l) => l.msg === "hook server listening");
      },
      60_000,
      () => `the hook server did not start: ${server.tail()}`,
    ).catch(async (error: unknown) => {
      // Stopped, not left running beside the next one.
      await server.kill();
      throw error;
    });
    return server;
  }

  /** Requests it refused (400) or failed (500), as it logged them. */
  refusals(): string[] {
    return this.lines.filter((l) => l.level === "warn" || l.level === "error").map((l) => JSON.stringify(l));
  }
}
