// The hook server's own metrics: how long each hook took to answer, by status code, and what became of the
// Events it emitted.
import type { RequestHandler } from "express";
import { Counter, Histogram, type Registry } from "prom-client";
import type { EventOutcome } from "../../lib/events/recorder.js";

/** What the recorder made of an Event, or "dropped" when the server has no recorder. */
export type EmittedOutcome = EventOutcome | "dropped";

export interface HookMetrics {
  /** Middleware: times each answer to a hook's POST, refusals before the hook ran (400, 413, 415) too. */
  timeAnswers: RequestHandler;
  countEvent(hook: string, outcome: EmittedOutcome): void;
}

export function hookMetrics(
  registry: Registry,
  routes: readonly { path: string; name: string }[],
): HookMetrics {
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
  const hookAt = new Map(routes.map((route) => [route.path, route.name]));
  return {
    timeAnswers: (req, res, next) => {
      const hook = req.method === "POST" ? hookAt.get(req.path) : undefined;
      if (hook !== undefined) {
        const started = process.hrtime.bigint();
        res.on("finish", () => {
          duration.observe(
            { hook, code: String(res.statusCode) },
            Number(process.hrtime.bigint() - started) / 1e9,
          );
        });
      }
      next();
    },
    countEvent: (hook, outcome) => eventsCounted.inc({ hook, outcome }),
  };
}
