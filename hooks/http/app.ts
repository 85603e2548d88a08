// The one express adapter. Hooks are pure functions (body, context) → response; this file composes the parts
// that move JSON in and out: request ids, the request metrics (request-metrics.ts), /healthz, /readyz and
// /metrics and the drain (probes.ts), the memory budget's admission of bodies (body-admission.ts), the hooks'
// routes and their Events (hook-routes.ts), and the mapping of errors to status codes (error-response.ts).
import { randomUUID } from "node:crypto";
import express, { type NextFunction, type Request, type Response } from "express";
import { Registry, collectDefaultMetrics } from "prom-client";
import type { Clock } from "../../api/types.js";
import type { Logger } from "../../runtime/log.js";
import { bodyAdmission } from "./body-admission.js";
import { bodyErrorHandler } from "./error-response.js";
import { mountHookRoutes, type EventSink, type HookRoute } from "./hook-routes.js";
import { closeIfDraining, mountProbes } from "./probes.js";
import { hookMetrics } from "./request-metrics.js";

export type { EventSink, HookContext, HookRoute } from "./hook-routes.js";

export interface AppOptions {
  routes: readonly HookRoute[];
  clock: Clock;
  log: Logger;
  /** Largest accepted request body (bytes, after any Content-Encoding). Default DEFAULT_BODY_LIMIT. */
  bodyLimit?: string;
  /**
   * Estimated heap (hooks/http/body-cost.ts) the requests in flight may take together; one request may take
   * all of it. Past it a request waits outside: 503 with Retry-After. Default DEFAULT_MEMORY_LIMIT.
   */
  memoryLimit?: string;
  registry?: Registry;
  /** False while draining on SIGTERM: /readyz answers 503 so no new traffic arrives. */
  isReady?: () => boolean;
  /** Where emitted Events go; without it they are dropped (and counted as such). */
  events?: EventSink;
}

/** docs/reliability.md derives it: the cspc-sync request of the largest CSPC the CRD admits, with room to spare. */
export const DEFAULT_BODY_LIMIT = "40mb";
/**
 * The pod's 512 Mi, less what the idle server holds (85 MB, 140 MB with the Kubernetes client of the admission lookups and Events) and the heap
 * the hooks build while answering: docs/reliability.md.
 */
export const DEFAULT_MEMORY_LIMIT = "192mb";

export function makeApp(options: AppOptions): express.Express {
  const registry = options.registry ?? registryWithProcessMetrics();
  const metrics = hookMetrics(registry, options.routes);
  const isReady = options.isReady ?? (() => true);
  const lastIfDraining = closeIfDraining(isReady);
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const memoryLimit = options.memoryLimit ?? DEFAULT_MEMORY_LIMIT;
  const admitBody = bodyAdmission({
    bodyLimitBytes: parseByteSize(bodyLimit),
    memoryLimitBytes: parseByteSize(memoryLimit),
    memoryLimit,
  });

  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.use(tagRequest, (_req: Request, res: Response, next: NextFunction) => {
    lastIfDraining(res);
    next();
  });
  app.use(metrics.timeAnswers);
  mountProbes(app, { registry, isReady });
  mountHookRoutes(app, { ...options, admitBody, closeIfDraining: lastIfDraining, metrics });
  app.use((req, res) => {
    res.status(404).json({ error: `no route for ${req.method} ${req.path}` });
  });
  app.use(bodyErrorHandler({ log: options.log, bodyLimit, closeIfDraining: lastIfDraining }));
  return app;
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const BYTE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

/** A registry of its own also carries the process's default metrics; a given one is the caller's to fill. */
function registryWithProcessMetrics(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** Metacontroller's and the kubelet's own id if they send one, else ours; echoed so both sides can be matched. */
function tagRequest(req: Request, res: Response, next: NextFunction): void {
  const given = req.get("x-request-id");
  res.locals.requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
  res.setHeader("X-Request-Id", res.locals.requestId as string);
  next();
}

/**
 * "32mb" → bytes. Unlike body-parser, which reads a value it cannot parse as "no limit at all", a setting
 * that is not a size stops the server from starting.
 */
export function parseByteSize(text: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?\s*$/i.exec(text);
  const bytes = match ? Math.floor(Number(match[1]) * BYTE_UNITS[(match[2] ?? "b").toLowerCase()]) : NaN;
  if (!(bytes > 0))
    throw new Error(`body limit ${JSON.stringify(text)} is not a size: use e.g. 32mb (units b, kb, mb, gb)`);
  return bytes;
}
