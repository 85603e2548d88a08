// The agent's loop: read the pool, keep the readiness and the metrics from that read, and reconcile the iSCSI
// exports against it. One pass at a time; a pass that fails leaves the exports as they are (an unknown pool
// is not an empty one) and makes the agent not ready, with the reason.
import type { Logger } from "../runtime/log.js";
import type { ZfsHost } from "../zfs/host.js";
import { ACTION_MESSAGES, actionFields, reconcileExports } from "./exports.js";
import type { AgentMetrics } from "./metrics.js";
import { observeAgentPool } from "./observe.js";
import { readiness, type LastRead, type Readiness } from "./readiness.js";
import type { Tgt } from "../iscsi/tgt.js";

export interface AgentDeps {
  pool: string;
  host: ZfsHost;
  tgt: Tgt;
  metrics: AgentMetrics;
  logger: Logger;
  pollIntervalMs: number;
  /** The cluster's CHAP key: each export's password is derived from it (never logged). */
  chapKey: string;
}

export class PoolAgent {
  private last: LastRead;
  private lastPassAt = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private lastReason = "";

  constructor(private readonly deps: AgentDeps) {}

  readiness(): Readiness {
    return readiness(this.deps.pool, this.last);
  }

  /** The loop has completed a pass within three intervals (plus a command's timeout). */
  healthy(now = Date.now()): boolean {
    return now - this.lastPassAt < this.deps.pollIntervalMs * 3 + 60_000;
  }

  start(): void {
    const tick = (): void => {
      this.running = this.pass().finally(() => {
        this.running = undefined;
        if (!this.stopped) this.timer = setTimeout(tick, this.deps.pollIntervalMs);
      });
    };
    tick();
  }

  /** No new pass; the running one finishes (its tgtadm or zfs command is not cut half way). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  async pass(): Promise<void> {
    const { pool, host, tgt, metrics, logger, chapKey } = this.deps;
    let observation;
    try {
      observation = await observeAgentPool(host, pool);
      this.last = { observation };
      metrics.observed(observation);
    } catch (error) {
      this.last = { error: (error as Error).message };
      logger.warn("pool could not be read; exports left as they are", { error: (error as Error).message });
    }
    if (observation) {
      try {
        const result = await reconcileExports(tgt, observation, chapKey);
        metrics.exported(result.served);
        for (const action of result.done)
          logger.info(ACTION_MESSAGES[action.kind].done, actionFields(action));
        for (const { action, error } of result.failed)
          logger.warn(ACTION_MESSAGES[action.kind].failed, {
            ...actionFields(action),
            error,
          });
        for (const reason of result.refused) logger.warn("replica not exported", { reason });
      } catch (error) {
        logger.warn("tgtd could not be read; exports left as they are", { error: (error as Error).message });
      }
    }
    this.lastPassAt = Date.now();
    const now = this.readiness();
    if (now.reason !== this.lastReason)
      logger.info(now.ready ? "ready" : "not ready", { reason: now.reason });
    this.lastReason = now.reason;
  }
}
