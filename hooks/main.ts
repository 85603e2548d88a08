// The hook server process: configuration from the environment, HTTP timeouts that outlive Metacontroller's
// Go client (90 s idle keep-alive), and a graceful drain on SIGTERM.
import type { Server } from "node:http";
import { createLogger, type LogLevel } from "../lib/log.js";
import { makeApp } from "./http/app.js";
import { loadHookConfig } from "./config.js";
import { hookRoutes } from "./routes.js";

const port = Number(process.env.PORT ?? 8080);
const log = createLogger({ level: (process.env.LOG_LEVEL as LogLevel | undefined) ?? "info", base: { component: "hook-server" } });
let draining = false;

const app = makeApp({
  routes: hookRoutes(loadHookConfig(process.env)),
  clock: () => new Date(),
  log,
  bodyLimit: process.env.BODY_LIMIT ?? undefined,
  isReady: () => !draining,
});

const server: Server = app.listen(port, () => log.info("hook server listening", { port }));
// Go's http.Transport keeps idle connections for 90 s; closing ours first makes Metacontroller reuse a dead socket.
server.keepAliveTimeout = 95_000;
server.headersTimeout = 100_000;
server.requestTimeout = 30_000;

function shutdown(signal: string): void {
  if (draining) return;
  draining = true;
  log.info("draining", { signal });
  server.close(() => {
    log.info("stopped");
    process.exit(0);
  });
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), Number(process.env.DRAIN_SECONDS ?? 20) * 1000).unref();
}
process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));
