// The pool pod's entrypoint (docs/adr/0010-the-hosts-zfs-owns-the-pool-the-pool-pod-runs.md and docs/adr/0032-the-pool-agent-what-it-reads-how-it-exports.md): the configuration from the environment, the loop,
// and a thin HTTP side on PORT: /readyz (the pool imported here and ONLINE or DEGRADED), /healthz (the loop
// is alive), /metrics. SIGTERM stops the loop, lets a running command finish and exits; tgtd's exports stay
// (they end with the pod, and a restarted agent adopts them).
import { isEntryPoint } from "../runtime/entry.js";
import { createLogger } from "../runtime/log.js";
import { probeServer } from "../runtime/probe-server.js";
import { createRunner } from "../process/runner.js";
import { ZfsHost } from "../zfs/host.js";
import { PoolAgent } from "./agent.js";
import { loadAgentConfig } from "./config.js";
import { createAgentMetrics } from "./metrics.js";
import { Tgt } from "../iscsi/tgt.js";

export async function main(): Promise<void> {
  const config = loadAgentConfig(process.env);
  const logger = createLogger({ base: { component: "pool-agent", cspi: config.cspi } });
  const runner = createRunner();
  const metrics = createAgentMetrics(config.pool, config.cspi);
  const agent = new PoolAgent({
    pool: config.pool,
    host: new ZfsHost(runner, config.zfs),
    tgt: new Tgt(runner, config.tgtadm),
    metrics,
    logger,
    pollIntervalMs: config.pollIntervalMs,
    chapKey: config.chapKey,
  });
  const server = probeServer(metrics.registry, {
    "/readyz": () => {
      const { ready, reason } = agent.readiness();
      return { ok: ready, message: reason };
    },
    "/healthz": () =>
      agent.healthy()
        ? { ok: true, message: "ok" }
        : { ok: false, message: "the agent's loop has not completed a pass for three intervals" },
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(config.port, resolve);
  });

  let stopping = false;
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info("stopping: the running pass finishes, exports stay with tgtd", { signal });
    await agent.stop();
    await runner.idle();
    server.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));

  agent.start();
  logger.info("pool agent started", {
    pool: config.pool,
    port: config.port,
    zpool: config.zfs.zpool,
    tgtadm: config.tgtadm,
  });
}

if (isEntryPoint(import.meta.url)) {
  main().catch((error: Error) => {
    process.stderr.write(`pool agent failed: ${error.message}\n`);
    process.exit(1);
  });
}
