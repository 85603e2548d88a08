// The CSI driver as a real process (`node --import tsx csi/main.ts`) on a unix socket of the test's, acting as the
// identity whose kubeconfig it is given (the shipped ServiceAccount, so the RBAC is tested too). Resolves once it
// serves; the socket is what csi-sanity and the sidecars dial.
import { join } from "node:path";
import { freePorts, REPO_ROOT, waitUntil } from "./kube.js";
import { LoggedProcess } from "./logged-process.js";

export interface CsiDriverOptions {
  mode: "controller" | "node";
  /** Where the socket goes: <dir>/csi.sock. */
  dir: string;
  /** The identity it acts as (the controller); the node mode has no API access. */
  kubeconfig?: string;
  namespace: string;
  /** Added to (or replacing) the environment. */
  env?: Record<string, string>;
}

export class CsiDriverProcess extends LoggedProcess {
  private constructor(
    readonly socket: string,
    readonly metricsPort: number,
    args: string[],
    env: Record<string, string>,
  ) {
    super(`CSI driver (${args[0]})`, process.execPath, ["--import", "tsx", "csi/main.ts", ...args], {
      cwd: REPO_ROOT,
      env,
    });
  }

  static async start(options: CsiDriverOptions): Promise<CsiDriverProcess> {
    const socket = join(options.dir, "csi.sock");
    const [metricsPort] = await freePorts(1);
    const driver = new CsiDriverProcess(
      socket,
      metricsPort,
      [`--mode=${options.mode}`, `--endpoint=unix://${socket}`],
      {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
        ...(options.kubeconfig ? { KUBECONFIG: options.kubeconfig } : {}),
        NAMESPACE: options.namespace,
        METRICS_PORT: String(metricsPort),
        LOG_LEVEL: "debug",
        ...options.env,
      },
    );
    await waitUntil(
      async () => {
        if (driver.ended()) throw new Error(`the CSI driver exited at start: ${driver.tail()}`);
        return driver.lines.some((l) => l.msg === "CSI driver serving");
      },
      60_000,
      () => `the CSI driver did not start: ${driver.tail()}`,
    ).catch(async (error: unknown) => {
      await driver.kill();
      throw error;
    });
    return driver;
  }
}
