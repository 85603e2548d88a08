// The DaemonSet process: NODE_NAME and NAMESPACE from the environment (downward API), /metrics and /healthz
// on METRICS_PORT, a host lock so that one daemon per node acts, and SIGTERM that lets a running zpool
// command finish before exiting.
import type { Server } from "node:http";
import { isEntryPoint } from "../runtime/entry.js";
import { createLogger } from "../runtime/log.js";
import { probeServer } from "../runtime/probe-server.js";
import { staleStatusSeconds } from "../lib/settings.js";
import { createRunner } from "../process/runner.js";
import { NodeDaemon } from "./daemon.js";
import { commandsFromEnv, inspectDevice, ZfsHost } from "../zfs/host.js";
import { createKubeApi } from "./kube.js";
import { tryLock, type HostLock } from "./lock.js";
import { createMetrics, type DaemonMetrics } from "./metrics.js";
import { replicaBackendFromEnv } from "./replicas.js";
import { deviceRootsFromEnv } from "./validate.js";

const LOCK_RETRY_MS = 5_000;

function required(name: string): string {
  const value = process.env[name];
  if (!value)
    throw new Error(
      `${name} is not set: the DaemonSet sets it (NODE_NAME from spec.nodeName, NAMESPACE from metadata.namespace)`,
    );
  return value;
}

/** /metrics, and /healthz that fails when the resync loop has not completed for three intervals. */
export function metricsServer(metrics: DaemonMetrics, healthy: () => boolean): Server {
  return probeServer(metrics.registry, {
    "/healthz": () =>
      healthy() ? { ok: true, message: "ok" } : { ok: false, message: "resync loop stalled" },
  });
}

export async function main(): Promise<void> {
  const logger = createLogger({ base: { component: "node-daemon" } });
  const nodeName = required("NODE_NAME");
  const namespace = required("NAMESPACE");
  // Checked before anything starts: a wrong value must not mean "no limit" or "no device".
  const deviceRoots = deviceRootsFromEnv(process.env.DEVICE_ROOTS);
  const replicaBackend = replicaBackendFromEnv(process.env);
  const intervalMs = Number(process.env.STATUS_INTERVAL_SECONDS ?? 30) * 1000;
  // The hooks read the same variable: one setting says when a heartbeat is stale, for both.
  const staleSeconds = staleStatusSeconds(process.env);
  const metrics = createMetrics();
  const runner = createRunner(metrics.onCommand);
  const host = new ZfsHost(runner, commandsFromEnv());
  const startedAt = Date.now();
  let daemon: NodeDaemon | undefined;
  const healthy = () => {
    const last = daemon?.lastResyncAt?.getTime() ?? startedAt;
    return Date.now() - last < intervalMs * 3 + 60_000;
  };
  const server = metricsServer(metrics, healthy).listen(Number(process.env.METRICS_PORT ?? 9500));

  let stopping = false;
  let lock: HostLock | undefined;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info("stopping: letting the running command finish", { signal });
    await daemon?.stop();
    await runner.idle();
    server.close();
    await lock?.release();
    process.exit(0);
  };
  process.on("SIGTERM", () => void stop("SIGTERM"));
  process.on("SIGINT", () => void stop("SIGINT"));

  const lockDir = process.env.LOCK_DIR ?? "/var/openebs/node-daemon";
  lock = (await tryLock({ dir: lockDir })).lock;
  while (!lock && !stopping) {
    logger.warn("another node daemon holds the host lock; waiting", { lockDir });
    await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
    lock = (await tryLock({ dir: lockDir })).lock;
  }
  if (stopping) return;
  const held = setInterval(() => {
    void lock?.held().then((ok) => {
      if (!ok) {
        logger.error("host lock taken over by another daemon; exiting so only one acts");
        process.exit(1);
      }
    });
  }, 10_000);
  held.unref();

  daemon = new NodeDaemon({
    kube: createKubeApi(),
    host,
    inspect: inspectDevice,
    nodeName,
    hostName: process.env.HOST_NAME || nodeName,
    namespace,
    deviceRoots,
    replicaBackend,
    logger,
    metrics,
    statusIntervalMs: intervalMs,
    staleStatusSeconds: staleSeconds,
  });
  await daemon.start();
  logger.info("node daemon started", {
    nodeName,
    namespace,
    commands: host.commands,
    deviceRoots,
    staleStatusSeconds: staleSeconds,
    replicaBackend: replicaBackend.name,
  });
}

if (isEntryPoint(import.meta.url)) {
  main().catch((error: Error) => {
    process.stderr.write(`node daemon failed: ${error.message}\n`);
    process.exit(1);
  });
}
