// Kubernetes Events, as the node daemon (on CSPIs and CVRs) and the hook server (on CSPCs) write them
// (docs/adr/0029-events-on-the-cspc-computed-by-cspc-sync-as-data.md). An Event seen again is the same Event counted up (count, lastTimestamp and its latest
// message), not a new one: a Warning is one per object and reason, whatever its message says, and is written
// again at most once per repeatAfterMs; a Normal Event is one per object, reason and message. Every write takes
// a token from its object's bucket, so a storm of syncs cannot flood the apiserver. Memory is bounded.
import { KIND } from "../../api/constants.js";
import type { ObjectMeta } from "../../api/types.js";
import { ExpiringKeys } from "../expiring-keys.js";

/** What an Event is about: a CSPC, CSPI or CVR (kind absent: a CSPI). */
export interface EventSubject {
  kind?: string;
  metadata: ObjectMeta;
}

export interface CoreEvent {
  type: "Normal" | "Warning";
  reason: string;
  message: string;
}

/** Longest message written: the apiserver takes more, but `kubectl describe` lines do not. */
export const MAX_EVENT_MESSAGE = 1024;

/** Who writes an Event: its source.component and source.host (core/v1 EventSource). */
export interface EventSource {
  component: string;
  host: string;
}

/** Where Events go: the apiserver (runtime/kube-event-writer.ts), or a test's memory. */
export interface EventWriter {
  /** Creates the Event; resolves to its name. */
  createEvent(subject: EventSubject, event: CoreEvent, source: EventSource, now: Date): Promise<string>;
  /** The Event `name` happened again: its count, message and lastTimestamp. Rejects with code 404 when it is gone. */
  repeatEvent(
    namespace: string,
    name: string,
    repeat: { count: number; message: string; now: Date },
  ): Promise<void>;
}

/** What became of one Event: written (created, or counted up), held back (suppressed, throttled) or failed. */
export type EventOutcome = "created" | "incremented" | "suppressed" | "throttled" | "failed";

export interface EventRecorderOptions {
  writer: EventWriter;
  /** source.component and reportingComponent of the Events. */
  component: string;
  /** source.host and reportingInstance: the node, or the hook server's pod. */
  host: string;
  clock: () => Date;
  /** Told of an Event that could not be written (runtime/log.ts's Logger is one). */
  logger: { warn(msg: string, fields?: Record<string, unknown>): void };
  /** A Warning (same object and reason) is written again only after this long; default 10 minutes, 0: each time. */
  repeatAfterMs?: number;
  /** How long a written Event is counted up rather than created again: below the apiserver's Event TTL (1 h). */
  rememberMs?: number;
  /** Most Events (and buckets) remembered; default 10,000. */
  maxKeys?: number;
  /** Writes one object may take at once; default 25 (client-go's). */
  burst?: number;
  /** One more write per object after this long; default 30 s. */
  refillMs?: number;
}

interface Written {
  name: string;
  count: number;
  at: number;
}

interface Bucket {
  tokens: number;
  at: number;
}

export class EventRecorder {
  private readonly written: ExpiringKeys<Written>;
  private readonly buckets: ExpiringKeys<Bucket>;
  private readonly repeatAfterMs: number;
  private readonly rememberMs: number;
  private readonly burst: number;
  private readonly refillMs: number;

  constructor(private readonly options: EventRecorderOptions) {
    this.repeatAfterMs = options.repeatAfterMs ?? 10 * 60_000;
    this.rememberMs = Math.max(options.rememberMs ?? 50 * 60_000, this.repeatAfterMs);
    this.burst = options.burst ?? 25;
    this.refillMs = options.refillMs ?? 30_000;
    this.written = new ExpiringKeys(options.maxKeys);
    this.buckets = new ExpiringKeys(options.maxKeys);
  }

  /** Writes the Events in order; never rejects: a failure is logged and is an outcome. */
  async record(subject: EventSubject, events: readonly CoreEvent[]): Promise<EventOutcome[]> {
    const outcomes: EventOutcome[] = [];
    for (const event of events) outcomes.push(await this.recordOne(subject, event));
    return outcomes;
  }

  private async recordOne(subject: EventSubject, event: CoreEvent): Promise<EventOutcome> {
    const now = this.options.clock();
    const ms = now.getTime();
    const object = objectKey(subject);
    const key = `${object}\u0000${event.reason}${event.type === "Warning" ? "" : `\u0000${event.message}`}`;
    const before = this.written.get(key, ms);
    if (before && event.type === "Warning" && ms < before.at + this.repeatAfterMs) return "suppressed";
    if (!this.take(object, ms)) return "throttled";
    const remember = (name: string, count: number): void =>
      this.written.add(key, ms + this.rememberMs, ms, { name, count, at: ms });
    const failed = (error: Error): EventOutcome => {
      this.options.logger.warn("event not recorded", {
        object: subject.metadata.name,
        reason: event.reason,
        error: error.message,
      });
      return "failed";
    };
    if (before) {
      try {
        await this.options.writer.repeatEvent(subject.metadata.namespace ?? "", before.name, {
          count: before.count + 1,
          message: event.message,
          now,
        });
        remember(before.name, before.count + 1);
        return "incremented";
      } catch (error) {
        // Gone (the apiserver's TTL, or deleted by hand): it is created again below.
        if ((error as { code?: number }).code !== 404) return failed(error as Error);
      }
    }
    try {
      const { component, host } = this.options;
      remember(await this.options.writer.createEvent(subject, event, { component, host }, now), 1);
      return "created";
    } catch (error) {
      return failed(error as Error);
    }
  }

  /** A token from the object's bucket, if it has one. A bucket is forgotten once it would be full again. */
  private take(object: string, now: number): boolean {
    const bucket = this.buckets.get(object, now);
    const tokens = bucket
      ? Math.min(this.burst, bucket.tokens + (now - bucket.at) / this.refillMs)
      : this.burst;
    if (tokens < 1) return false;
    this.buckets.add(object, now + (this.burst - tokens + 1) * this.refillMs, now, {
      tokens: tokens - 1,
      at: now,
    });
    return true;
  }

  /** The object (a CSPI unless said otherwise) is gone: its Events need not be remembered. */
  forget(name: string, kind: string = KIND.cspi): void {
    this.written.forgetWhere((key) => key.startsWith(`${kind}\u0000${name}\u0000`));
  }

  /** Events remembered now: bounded by maxKeys. */
  get remembered(): number {
    return this.written.size;
  }
}

/** Kind, name and uid: an object deleted and created again under the same name is another object. */
function objectKey(subject: EventSubject): string {
  return `${subject.kind ?? KIND.cspi}\u0000${subject.metadata.name ?? ""}\u0000${subject.metadata.uid ?? ""}`;
}
