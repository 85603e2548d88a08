// The CSI driver's process (docs/adr/0047-the-csi-driver-one-writer-per-volume.md): --mode=controller serves
// Identity and Controller in the controller Deployment, --mode=node serves Identity and Node in the node
// DaemonSet, on the unix socket the sidecars dial (--endpoint). /healthz and /metrics on METRICS_PORT. SIGTERM
// stops taking calls, lets running ones finish (DRAIN_SECONDS), removes the socket and exits.
import { KubeConfig } from "@kubernetes/client-node";
import { createRunner } from "../process/runner.js";
import { isEntryPoint } from "../runtime/entry.js";
import { createLogger, type Logger, type LogLevel } from "../runtime/log.js";
import { packageVersion } from "../runtime/package-version.js";
import { probeServer } from "../runtime/probe-server.js";
import { loadCsiConfig, type CsiConfig } from "./config.js";
import { kubeController } from "./controller/kube.js";
import { controllerService } from "./controller/service.js";
import { CsiError, describeError } from "./errors.js";
import { identityService } from "./identity.js";
import { nodeHost } from "./node/host.js";
import { nodeService } from "./node/service.js";
import { createCsiMetrics } from "./metrics.js";
import { startCsiServer, type CsiServices } from "./server.js";
import { status } from "@grpc/grpc-js";

/** How long CreateVolume and ControllerExpandVolume wait inside one call, whatever the caller's deadline. */
const WAIT = { maxMs: 120_000, intervalMs: 500 };

/** The services of the mode, and what Probe asks. */
function servicesFor(config: CsiConfig): CsiServices {
  // The node: iscsiadm, mount and mkfs run in the plugin's container, which has the host's network (iscsid's
  // socket), /dev, /sys and the kubelet's directory (docs/csi-node.md). Ready once it serves.
  if (config.mode === "node")
    return {
      Identity: identityService({ version: packageVersion(), probe: async () => {} }),
      Node: nodeService({ host: nodeHost(createRunner(), config.iscsiadm), nodeName: config.nodeName! }),
    };
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromDefault();
  const kube = kubeController(kubeConfig, config.namespace);
  const probe = async (): Promise<void> => {
    await kube.reachable().catch((error: unknown) => {
      throw new CsiError(
        status.FAILED_PRECONDITION,
        `the API server does not answer the controller (listing CStorVolumeConfigs in ${config.namespace}): ${describeError(error)}`,
      );
    });
  };
  return {
    Identity: identityService({ version: packageVersion(), probe }),
    Controller: controllerService({ kube, wait: WAIT }),
  };
}

export async function main(argv: readonly string[] = process.argv.slice(2)): Promise<void> {
  const config = loadCsiConfig(argv, process.env);
  const level = (process.env.LOG_LEVEL as LogLevel | undefined) ?? "info";
  const logger: Logger = createLogger({ level, base: { component: "csi", mode: config.mode } });
  const metrics = createCsiMetrics();
  const server = await startCsiServer({
    endpoint: config.endpoint,
    services: servicesFor(config),
    logger,
    metrics,
  });
  let stopping = false;
  const http = probeServer(metrics.registry, {
    "/healthz": () => (stopping ? { ok: false, message: "stopping" } : { ok: true, message: "ok" }),
  }).listen(config.metricsPort);
  const stop = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    logger.info("stopping: running calls finish, then the socket goes", { signal });
    await server.stop(config.drainMs);
    http.close();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));
  logger.info("CSI driver serving", {
    socket: server.socket,
    metricsPort: config.metricsPort,
    namespace: config.namespace,
    ...(config.nodeName ? { node: config.nodeName } : {}),
  });
}

if (isEntryPoint(import.meta.url)) {
  main().catch((error: Error) => {
    process.stderr.write(`CSI driver failed: ${error.message}\n`);
    process.exit(1);
  });
}
