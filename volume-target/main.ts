// The target pod's entrypoint (docs/adr/0039-the-volume-target-md-raid1-served-by-lio.md,
// docs/adr/0040-the-target-agent-credentials-names-and-status.md): configuration from the environment, the
// agent's loops, and a thin HTTP side on PORT (9500): /readyz (the LUN is served), /healthz (the loop is alive),
// /metrics (the volume's). SIGTERM stops serving, stops the array and logs out, then exits.
import { KubeConfig } from "@kubernetes/client-node";
import { IscsiInitiator } from "../iscsi/initiator.js";
import { Lio } from "../iscsi/lio.js";
import { targetInitiatorIqn } from "../lib/volume/iqn.js";
import { Mdadm } from "../md/mdadm.js";
import { createRunner } from "../process/runner.js";
import { isEntryPoint } from "../runtime/entry.js";
import { createLogger } from "../runtime/log.js";
import { runAgentProcess } from "../runtime/agent-process.js";
import { TargetAgent } from "./agent.js";
import { loadTargetConfig } from "./config.js";
import { kubeTarget } from "./kube.js";
import { createTargetMetrics } from "./metrics.js";

export async function main(): Promise<void> {
  const config = loadTargetConfig(process.env);
  const logger = createLogger({ base: { component: "volume-target", volume: config.volume } });
  const runner = createRunner();
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const metrics = createTargetMetrics(config.volume, config.namespace);
  const agent = new TargetAgent({
    config,
    kernel: {
      legs: new IscsiInitiator(runner, {
        iscsiadm: config.iscsiadm,
        sysfs: "/sys",
        iface: config.names.iface,
        initiatorIqn: targetInitiatorIqn(config.volume),
        replacementTimeoutSeconds: config.legTimeoutSeconds,
      }),
      arrays: new Mdadm(runner, { mdadm: config.mdadm, sysfs: "/sys", dev: "/dev" }),
      exports: new Lio(),
    },
    kube: kubeTarget(kubeConfig, config.namespace, config.volume),
    metrics,
    logger,
  });
  await runAgentProcess({
    agent,
    registry: metrics.registry,
    port: config.port,
    idle: () => runner.idle(),
    logger,
    stalledMessage: "the agent's loop has not completed a pass in five intervals",
    stoppingMessage: "stopping: the LUN stops, the array stops, the legs log out",
  });
  logger.info("volume target started", { portal: config.portal, port: config.port, node: config.node });
}

if (isEntryPoint(import.meta.url)) {
  main().catch((error: Error) => {
    process.stderr.write(`volume target failed: ${error.message}\n`);
    process.exit(1);
  });
}
