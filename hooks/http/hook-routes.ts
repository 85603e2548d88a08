// The hooks' routes: each POST runs its hook on the admitted body and answers the canonical JSON of its
// result; the Events the hook emitted go to the recorder once the answer is sent (docs/adr/0029-events-on-the-cspc-computed-by-cspc-sync-as-data.md).
import type { Express, Request, RequestHandler, Response } from "express";
import type { Clock } from "../../api/types.js";
import { canonicalize } from "../../lib/canonical.js";
import type { CoreEvent, EventOutcome, EventSubject } from "../../lib/events/recorder.js";
import type { Logger } from "../../runtime/log.js";
import { answerHookError } from "./error-response.js";
import type { CloseIfDraining } from "./probes.js";
import type { EmittedOutcome, HookMetrics } from "./request-metrics.js";

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

export interface HookRoutesOptions {
  routes: readonly HookRoute[];
  clock: Clock;
  log: Logger;
  /** The middlewares that admit and parse a body (hooks/http/body-admission.ts). */
  admitBody: readonly RequestHandler[];
  closeIfDraining: CloseIfDraining;
  metrics: HookMetrics;
  /** Where emitted Events go; without it they are dropped (and counted as such). */
  events?: EventSink;
}

interface Emitted {
  subject: EventSubject;
  events: readonly CoreEvent[];
}

export function mountHookRoutes(app: Express, options: HookRoutesOptions): void {
  for (const route of options.routes) {
    app.post(route.path, ...options.admitBody, answerHook(route, options));
    app.all(route.path, (req, res) => {
      res.setHeader("Allow", "POST");
      res
        .status(405)
        .json({ error: `${req.method} is not allowed on ${route.path}; Metacontroller sends POST` });
    });
  }
}

function answerHook(
  route: HookRoute,
  options: HookRoutesOptions,
): (req: Request, res: Response) => Promise<void> {
  return async (req, res) => {
    const requestId = res.locals.requestId as string;
    const log = options.log.child({ requestId, hook: route.name, ...parentRef(req.body) });
    let code = 200;
    const emitted: Emitted[] = [];
    const emit = (subject: EventSubject, events: readonly CoreEvent[]): void => {
      if (events.length > 0) emitted.push({ subject, events });
    };
    try {
      const result = await route.handle(req.body, { clock: options.clock, log, emit });
      // A request under way when the drain began: answered in full, and its connection closed after.
      options.closeIfDraining(res);
      res.status(200).json(canonicalize(result));
      void recordEmitted(route.name, emitted, options);
    } catch (err) {
      options.closeIfDraining(res);
      code = answerHookError(res, err, route.name, log);
    } finally {
      log.debug("hook answered", { code });
    }
  };
}

/** After the answer: each Event's outcome counted; nothing here can fail the request. */
async function recordEmitted(
  hook: string,
  emitted: readonly Emitted[],
  options: Pick<HookRoutesOptions, "events" | "metrics">,
): Promise<void> {
  for (const { subject, events } of emitted) {
    const outcomes = options.events
      ? await options.events.record(subject, events)
      : events.map((): EmittedOutcome => "dropped");
    for (const outcome of outcomes) options.metrics.countEvent(hook, outcome);
  }
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
