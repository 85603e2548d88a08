// Kubernetes Events for a CSPI or a CVR. A Warning is sent once per object and reason within a TTL, whatever its
// message says, so a condition that lasts (a migration waiting for the other node's export) is one Event, not
// one per pass; Normal Events (an action done) are always sent.
import { KIND } from "../api/constants.js";
import type { Logger } from "../lib/log.js";
import { ExpiringKeys } from "./expiring-keys.js";
import type { CoreEvent, EventSubject, KubeApi } from "./kube.js";

export const COMPONENT = "cstor-pool-node-daemon";

export interface EventRecorderOptions {
  kube: KubeApi;
  /** source.host of the Events. */
  nodeName: string;
  clock: () => Date;
  logger: Logger;
  /** A repeated Warning (same object and reason) is sent again only after this long; default 10 minutes. */
  repeatAfterMs?: number;
  /** Most (object, reason) pairs remembered; default 10,000. */
  maxKeys?: number;
}

export class EventRecorder {
  private readonly sent: ExpiringKeys;
  private readonly repeatAfterMs: number;

  constructor(private readonly options: EventRecorderOptions) {
    this.repeatAfterMs = options.repeatAfterMs ?? 10 * 60_000;
    this.sent = new ExpiringKeys(options.maxKeys);
  }

  async record(subject: EventSubject, events: readonly CoreEvent[]): Promise<void> {
    for (const event of events) {
      const now = this.options.clock().getTime();
      if (event.type === "Warning") {
        const key = `${objectKey(subject)}\u0000${event.reason}`;
        if (this.sent.has(key, now)) continue;
        this.sent.add(key, now + this.repeatAfterMs, now);
      }
      await this.options.kube
        .createEvent(subject, event, COMPONENT, this.options.nodeName, this.options.clock())
        .catch((error: Error) => this.options.logger.warn("event not recorded", { object: subject.metadata.name, error: error.message }));
    }
  }

  /** The object (a CSPI unless said otherwise) is gone: its Warnings need not be remembered. */
  forget(name: string, kind: string = KIND.cspi): void {
    this.sent.forgetWhere((key) => key.startsWith(`${kind}\u0000${name}\u0000`));
  }

  /** (object, reason) pairs remembered now: bounded by maxKeys. */
  get remembered(): number {
    return this.sent.size;
  }
}

/** Kind, name and uid: an object deleted and created again under the same name is another object. */
function objectKey(subject: EventSubject): string {
  return `${subject.kind ?? KIND.cspi}\u0000${subject.metadata.name ?? ""}\u0000${subject.metadata.uid ?? ""}`;
}
