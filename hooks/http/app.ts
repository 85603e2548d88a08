// The one express adapter. Hooks are pure functions (body, context) → response; this file only moves
// JSON in and out, maps errors to status codes, owns /healthz, /readyz and /metrics, and hands the Events a
// hook emitted to the recorder once the answer is sent (docs/decisions.md, 29).
import { randomUUID } from "node:crypto";
import express, { type NextFunction, type Request, type Response } from "express";
import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { Clock } from "../../api/types.js";
import { canonicalize } from "../../lib/canonical.js";
import { BadRequestError } from "../../lib/errors.js";
import type { CoreEvent, EventOutcome, EventSubject } from "../../lib/events/recorder.js";
import type { Logger } from "../../runtime/log.js";
import { MemoryBudget, parseCost, RAW_COPIES } from "./body-cost.js";

export interface HookContext {
  clock: Clock;
  log: Logger;
  /** Events the hook wants on an object: written after the answer is sent, and only if it is a success. */
  emit(subject: EventSubject, events: readonly CoreEvent[]): void;
}

/** Writes Events; never rejects (lib/events/recorder.ts). */
export interface EventSink {
  record(subject: EventSubject, events: readonly CoreEvent[]): Promise<EventOutcome[]>;
}

export interface HookRoute {
  /** URL path, e.g. /hooks/cspc-sync. Always POST. */
  path: string;
  /** Short label for metrics and logs. */
  name: string;
  handle(body: unknown, context: HookContext): unknown;
}

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
/** Seconds a client turned away for lack of room is asked to wait: about the time one large request takes. */
const RETRY_AFTER_SECONDS = 1;

export function makeApp(options: AppOptions): express.Express {
  const registry = options.registry ?? new Registry();
  if (!options.registry) collectDefaultMetrics({ register: registry });
  const duration = new Histogram({
    name: "cstor_hook_duration_seconds",
    help: "Time to answer a hook request, by hook and HTTP status.",
    labelNames: ["hook", "code"],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const eventsCounted = new Counter({
    name: "cstor_hook_events_total",
    help: "Events the hooks emitted, by hook and outcome: created, incremented (an Event counted up), suppressed, throttled, failed, dropped (no recorder).",
    labelNames: ["hook", "outcome"],
    registers: [registry],
  });
  const isReady = options.isReady ?? (() => true);
  const bodyLimit = options.bodyLimit ?? DEFAULT_BODY_LIMIT;
  const bodyLimitBytes = parseByteSize(bodyLimit);
  const memoryLimit = options.memoryLimit ?? DEFAULT_MEMORY_LIMIT;
  const memory = new MemoryBudget(parseByteSize(memoryLimit));

  /** While draining, an answer is its connection's last: the client reconnects (to another replica) and the drain can end. */
  const lastIfDraining = (res: Response): void => {
    if (!isReady()) res.setHeader("Connection", "close");
  };

  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);

  const routeOf = new Map(options.routes.map((route) => [route.path, route]));
  app.use((req, res, next) => {
    // Metacontroller's and the kubelet's own id if they send one, else ours; echoed so both sides can be matched.
    const given = req.get("x-request-id");
    res.locals.requestId = given && REQUEST_ID.test(given) ? given : randomUUID();
    res.setHeader("X-Request-Id", res.locals.requestId as string);
    lastIfDraining(res);
    // Every answer of a hook counts, including bodies refused before the hook ran (400, 413, 415).
    const route = req.method === "POST" ? routeOf.get(req.path) : undefined;
    if (route) {
      const started = process.hrtime.bigint();
      res.on("finish", () => {
        duration.observe(
          { hook: route.name, code: String(res.statusCode) },
          Number(process.hrtime.bigint() - started) / 1e9,
        );
      });
    }
    next();
  });

  const getOnly = (path: string, handler: (req: Request, res: Response) => void | Promise<void>): void => {
    app.get(path, handler);
    app.all(path, (req, res) => {
      res.setHeader("Allow", "GET, HEAD");
      res.status(405).json({ error: `${req.method} is not allowed on ${path}; use GET` });
    });
  };
  getOnly("/healthz", (_req, res) => {
    res.json({ status: "ok" });
  });
  getOnly("/readyz", (_req, res) => {
    if (isReady()) res.json({ status: "ready" });
    else res.status(503).json({ status: "draining" });
  });
  getOnly("/metrics", async (_req, res) => {
    res.setHeader("Content-Type", registry.contentType);
    res.send(await registry.metrics());
  });

  const busy = (): Error & { status: number; type: string } =>
    Object.assign(
      new Error(
        `the hook server is busy with other large requests (${memoryLimit} of estimated memory in flight, MEMORY_LIMIT): retry in ${RETRY_AFTER_SECONDS} s`,
      ),
      {
        status: 503,
        type: "memory.busy",
      },
    );

  /**
   * Room for the body before it is read: its declared length (the limit when it is compressed or not declared),
   * as bytes and their copies. Released when the answer is sent or the connection goes.
   */
  const reserve = (req: Request, res: Response, next: NextFunction): void => {
    const declared = req.get("content-encoding") ? NaN : Number(req.get("content-length"));
    const held =
      RAW_COPIES *
      (Number.isInteger(declared) && declared >= 0 ? Math.min(declared, bodyLimitBytes) : bodyLimitBytes);
    if (!memory.take(held)) {
      next(busy());
      return;
    }
    res.locals.memoryHeld = held;
    res.once("close", () => memory.give(res.locals.memoryHeld as number));
    next();
  };

  /** The body is read, not yet parsed: what parsing it would cost, against the room reserved for it. */
  const verify = (_req: Request, res: Response, body: Buffer): void => {
    const cost = parseCost(body);
    const held = res.locals.memoryHeld as number;
    if (cost > memory.limit) {
      throw Object.assign(
        new Error(
          `request body of ${body.length} bytes would take about ${mebibytes(cost)} MiB once parsed, far more than Kubernetes objects of its size, ` +
            `and more than the ${memoryLimit} the hook server gives the requests in flight (MEMORY_LIMIT)`,
        ),
        { status: 413, type: "memory.too.large" },
      );
    }
    if (cost > held) {
      if (!memory.take(cost - held)) throw busy();
      res.locals.memoryHeld = cost;
    }
  };

  // strict: false, so that a body of JSON null or a bare value reaches the hook, which says what is wrong with it.
  const json = express.json({ limit: bodyLimitBytes, strict: false, type: () => true, verify });

  for (const route of options.routes) {
    app.post(route.path, reserve, json, async (req: Request, res: Response) => {
      const requestId = res.locals.requestId as string;
      const log = options.log.child({ requestId, hook: route.name, ...parentRef(req.body) });
      let code = 200;
      const emitted: { subject: EventSubject; events: readonly CoreEvent[] }[] = [];
      const emit = (subject: EventSubject, events: readonly CoreEvent[]): void => {
        if (events.length > 0) emitted.push({ subject, events });
      };
      try {
        const result = await route.handle(req.body, { clock: options.clock, log, emit });
        // A request under way when the drain began: answered in full, and its connection closed after.
        lastIfDraining(res);
        res.status(200).json(canonicalize(result));
        void recordEmitted(route.name, emitted);
      } catch (err) {
        lastIfDraining(res);
        code = err instanceof BadRequestError ? 400 : 500;
        const message = err instanceof Error ? err.message : String(err);
        if (code === 500) log.error("hook failed", { error: message, stack: (err as Error)?.stack });
        else log.warn("bad hook request", { error: brief(message) });
        res
          .status(code)
          .json({ error: brief(code === 400 ? message : `internal error in ${route.name}: ${message}`) });
      } finally {
        log.debug("hook answered", { code });
      }
    });
    app.all(route.path, (req, res) => {
      res.setHeader("Allow", "POST");
      res
        .status(405)
        .json({ error: `${req.method} is not allowed on ${route.path}; Metacontroller sends POST` });
    });
  }

  /** After the answer: each Event's outcome counted; nothing here can fail the request. */
  async function recordEmitted(
    hook: string,
    emitted: readonly { subject: EventSubject; events: readonly CoreEvent[] }[],
  ): Promise<void> {
    for (const { subject, events } of emitted) {
      const outcomes = options.events
        ? await options.events.record(subject, events)
        : events.map((): EventOutcome | "dropped" => "dropped");
      for (const outcome of outcomes) eventsCounted.inc({ hook, outcome });
    }
  }

  app.use((req, res) => {
    res.status(404).json({ error: `no route for ${req.method} ${req.path}` });
  });

  // Body-parser failures carry a status and a type; nothing else reaches here because routes catch their own.
  app.use(
    (
      err: Error & { status?: number; type?: string; limit?: number },
      req: Request,
      res: Response,
      _next: NextFunction,
    ) => {
      const status = err.status && err.status >= 400 && err.status < 500 ? err.status : 500;
      const log = options.log.child({ requestId: res.locals.requestId, path: req.path.slice(0, 200) });
      lastIfDraining(res);
      if (err.type === "memory.busy") {
        log.warn("busy", { code: 503, error: err.message });
        res.setHeader("Retry-After", String(RETRY_AFTER_SECONDS));
        // The body may not have been read: the connection cannot carry another request.
        res.setHeader("Connection", "close");
        res.status(503).json({ error: err.message });
        return;
      }
      if (status === 500) log.error("request failed", { error: brief(err.message), stack: err.stack });
      else log.warn("bad request", { code: status, error: brief(err.message) });
      if (err.type === "memory.too.large") {
        res.status(413).json({ error: err.message });
        return;
      }
      if (err.type === "entity.too.large") {
        res.status(413).json({
          error: `request body is larger than the ${bodyLimit} limit; raise BODY_LIMIT on the hook server`,
        });
        return;
      }
      if (err.type === "entity.parse.failed") {
        res.status(400).json({ error: brief(`request body is not valid JSON: ${err.message}`) });
        return;
      }
      // Anything else body-parser refuses: an unknown charset or Content-Encoding, a body that does not inflate.
      res.status(status).json({
        error: status === 500 ? "internal error" : brief(`request body could not be read: ${err.message}`),
      });
    },
  );

  return app;
}

const MAX_ERROR_MESSAGE = 2048;
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const BYTE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 };

function mebibytes(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(0);
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

/**
 * An error message quotes what the client sent, which may be megabytes; the start (what is wrong) and the end
 * (how to fix it) are kept, the middle is left out.
 */
export function brief(message: string): string {
  if (message.length <= MAX_ERROR_MESSAGE) return message;
  const keep = MAX_ERROR_MESSAGE / 2;
  return `${message.slice(0, keep)} … (${message.length - 2 * keep} characters left out) … ${message.slice(-keep)}`;
}

/** namespace/name of the object a hook request is about, for log lines. */
function parentRef(body: unknown): Record<string, string> {
  if (!body || typeof body !== "object") return {};
  const b = body as {
    parent?: { metadata?: { namespace?: string; name?: string } };
    object?: typeof b.parent;
  };
  const meta = b.parent?.metadata ?? b.object?.metadata;
  if (!meta) return {};
  // Only what could be a Kubernetes name (253 characters at most) goes into a log line.
  const part = (value: unknown): string => (typeof value === "string" ? value.slice(0, 253) : "");
  return { object: `${part(meta.namespace)}/${part(meta.name)}` };
}
