// The hook server process: configuration from the environment, HTTP (and HTTPS for admission) listeners,
// and a graceful drain on SIGTERM: /readyz turns 503, in-flight requests finish, then the process exits.
import { createLogger, type LogLevel } from "../runtime/log.js";
import { makeApp } from "./http/app.js";
import { listen, tlsFromEnv } from "./http/listen.js";
import { loadHookConfig } from "../lib/hook-config.js";
import { hookRoutes } from "./routes.js";
import { hookEventRecorder } from "./events.js";

const log = createLogger({
  level: (process.env.LOG_LEVEL as LogLevel | undefined) ?? "info",
  base: { component: "hook-server" },
});

async function main(): Promise<void> {
  let draining = false;
  const app = makeApp({
    routes: hookRoutes(loadHookConfig(process.env)),
    clock: () => new Date(),
    log,
    bodyLimit: process.env.BODY_LIMIT ?? undefined,
    memoryLimit: process.env.MEMORY_LIMIT ?? undefined,
    isReady: () => !draining,
    events: hookEventRecorder(log),
  });
  const listening = await listen(app, {
    port: Number(process.env.PORT ?? 8080),
    tls: tlsFromEnv(process.env),
    log,
  });

  const shutdown = (signal: string): void => {
    if (draining) return;
    draining = true;
    log.info("draining", { signal });
    const seconds = Number(process.env.DRAIN_SECONDS ?? 20);
    setTimeout(() => {
      log.warn("drain deadline reached with requests still open; exiting", { seconds });
      process.exit(1);
    }, seconds * 1000).unref();
    void listening.close().then(() => {
      log.info("stopped");
      process.exit(0);
    });
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

// A bug that escapes every handler ends the process (Kubernetes restarts it), as one JSON log line with its stack.
process.on("uncaughtException", (err: Error) => {
  log.error("hook server crashed", { error: err.message, stack: err.stack });
  process.exit(1);
});

main().catch((err: unknown) => {
  log.error("hook server failed to start", { error: err instanceof Error ? err.message : String(err) });
  process.exit(1);
});
