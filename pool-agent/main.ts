// The pool pod's entrypoint (docs/adr/0010-the-hosts-zfs-owns-the-pool-the-pool-pod-runs.md and docs/adr/0032-the-pool-agent-what-it-reads-how-it-exports.md): the configuration from the environment, the loop,
// and a thin HTTP side on PORT: /readyz (the pool imported here and ONLINE or DEGRADED), /healthz (the loop
// is alive), /metrics. SIGTERM stops the loop, lets a running command finish and exits; tgtd's exports stay
// (they end with the pod, and a restarted agent adopts them).
import { isEntryPoint } from "../runtime/entry.js";
import { createLogger } from "../runtime/log.js";
import { runAgentProcess } from "../runtime/agent-process.js";
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
  await runAgentProcess({
    agent,
    registry: metrics.registry,
    port: config.port,
    idle: () => runner.idle(),
    logger,
    stalledMessage: "the agent's loop has not completed a pass for three intervals",
    stoppingMessage: "stopping: the running pass finishes, exports stay with tgtd",
  });
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
