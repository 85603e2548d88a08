// What a pod's agent process shares (the pool agent, the volume target): its probes and /metrics on one port,
// and SIGTERM or SIGINT that stop the agent, let a running command finish, close the port and exit 0.
import type { Registry } from "prom-client";
import type { Logger } from "./log.js";
import { probeServer } from "./probe-server.js";

/** An agent's loop as its process supervises it. */
export interface SupervisedAgent {
  readiness(): { ready: boolean; reason: string };
  /** False once the loop has stopped completing passes: /healthz fails and the kubelet restarts the pod. */
  healthy(): boolean;
  start(): void;
  stop(): Promise<void>;
}

export interface AgentProcessOptions {
  agent: SupervisedAgent;
  registry: Registry;
  port: number;
  /** Resolves once no command runs. */
  idle: () => Promise<void>;
  logger: Logger;
  /** What /healthz answers while the loop is stalled. */
  stalledMessage: string;
  /** What the log says the process does on the way out. */
  stoppingMessage: string;
}

/** Serves the probes, then starts the agent; resolves once both run. */
export async function runAgentProcess(options: AgentProcessOptions): Promise<void> {
  const { agent, logger } = options;
  const server = probeServer(options.registry, {
    "/readyz": () => {
      const { ready, reason } = agent.readiness();
      return { ok: ready, message: reason };
    },
    "/healthz": () =>
      agent.healthy() ? { ok: true, message: "ok" } : { ok: false, message: options.stalledMessage },
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, resolve);
  });

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info(options.stoppingMessage, { signal });
    await agent.stop();
    await options.idle();
    server.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  agent.start();
}
