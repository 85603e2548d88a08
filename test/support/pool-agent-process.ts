// The pool agent as a real process (`node --import tsx pool-agent/main.ts`), started the way the pool
// Deployment starts it: its first container's env as cspi-sync renders it for the CSPI (the hooks' default
// configuration), resolved as the kubelet would. Only what cannot be the same on a test host is overridden:
// ZFS_COMMAND_PREFIX (the simulated node instead of PID 1), PORT (a free one) and TGT_CONTROL_PORT (the
// test's own tgtd), and a short POLL_INTERVAL_SECONDS. The Secret with the CHAP key holds a key made for this
// test run (POOL_AGENT_CHAP_KEY). Stopped with SIGTERM.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import type { CSPI } from "../../api/types.js";
import { poolDeployment } from "../../lib/cspi/deployment.js";
import { DEFAULT_HOOK_CONFIG } from "../../lib/hook-config.js";
import { CHAP_KEY_SECRET, CHAP_KEY_SECRET_KEY } from "../../lib/volume/chap.js";
import { freePorts, REPO_ROOT, waitUntil } from "../../testkit/kube.js";
import { LoggedProcess } from "../../testkit/logged-process.js";
import { resolvedContainerEnv } from "../../testkit/node-daemon-process.js";

/** The cluster's CHAP key as the agents of this test run read it from their Secret: volumeChap derives from it. */
export const POOL_AGENT_CHAP_KEY = randomBytes(32).toString("hex");

export interface Probe {
  status: number;
  body: string;
}

export class PoolAgentProcess extends LoggedProcess {
  private constructor(
    readonly cspi: string,
    readonly port: number,
    env: Record<string, string>,
  ) {
    super(
      `pool agent ${cspi}`,
      process.execPath,
      ["--import", "tsx", join(REPO_ROOT, "pool-agent/main.ts")],
      { cwd: REPO_ROOT, env },
    );
  }

  /** Starts the agent of `cspi` on `nodeName`; resolves once it listens ("pool agent started"). */
  static async start(
    cspi: CSPI,
    nodeName: string,
    overrides: Record<string, string>,
  ): Promise<PoolAgentProcess> {
    const agent = await PoolAgentProcess.spawn(cspi, nodeName, overrides);
    await agent.logged("pool agent started");
    return agent;
  }

  /** Spawns the agent without waiting for it; `chapKey` is what its Secret holds (this run's key by default). */
  static async spawn(
    cspi: CSPI,
    nodeName: string,
    overrides: Record<string, string>,
    chapKey = POOL_AGENT_CHAP_KEY,
  ): Promise<PoolAgentProcess> {
    const [port] = await freePorts(1);
    const deployment = poolDeployment(cspi, DEFAULT_HOOK_CONFIG.poolPod);
    const env = {
      PATH: process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin",
      HOME: process.env.HOME ?? "/root",
      ...resolvedContainerEnv(
        deployment,
        nodeName,
        {},
        { [CHAP_KEY_SECRET]: { [CHAP_KEY_SECRET_KEY]: chapKey } },
      ),
      PORT: String(port),
      POLL_INTERVAL_SECONDS: "1",
      ...overrides,
    };
    return new PoolAgentProcess(cspi.metadata.name ?? "", port, env);
  }

  async get(path: string): Promise<Probe> {
    const response = await fetch(`http://127.0.0.1:${this.port}${path}`);
    return { status: response.status, body: await response.text() };
  }

  /** Waits until /readyz answers `status` with a body matching `reason`; returns the body. */
  async readyz(status: number, reason: RegExp, timeoutMs = 60_000): Promise<string> {
    let last: Probe | undefined;
    await waitUntil(
      async () => {
        last = await this.get("/readyz");
        return last.status === status && reason.test(last.body);
      },
      timeoutMs,
      () =>
        `/readyz of ${this.cspi} never answered ${status} ${reason}: last ${JSON.stringify(last)}${this.tail()}`,
    );
    return last!.body;
  }

  /** The value of one series of /metrics (exact labels, in the order prom-client prints them); undefined if absent. */
  async metric(series: string): Promise<number | undefined> {
    const body = (await this.get("/metrics")).body;
    const line = body.split("\n").find((l) => l.startsWith(`${series} `));
    return line === undefined ? undefined : Number(line.slice(series.length + 1));
  }
}
