// The target agent's snapshot pass (docs/adr/0050-a-snapshot-is-taken-while-md-holds-the-volumes-writes.md,
// docs/adr/0054-the-targets-snapshot-pass-one-at-a-time-a-bound-kept-by-a-timer.md): reads the volume's
// snapshots and replicas, asks the pure plan (volume-target/snapshots.ts) what to do, and does it. A hold is one
// call: md holds the writes, the replicas in sync are asked, the replicas are read again every HOLD_POLL_MS
// until the plan releases, and the release runs in a finally raced against a timer set for the bound, so no
// apiserver call that hangs keeps a writer waiting past it.
import type { CVR, CVSnap } from "../api/types.js";
import { ANNOTATION } from "../api/constants.js";
import { snapshotListValue } from "../lib/volume/replica-snapshots.js";
import type { Logger } from "../runtime/log.js";
import type { Arrays } from "./kernel.js";
import type { TargetKube } from "./kube.js";
import type { TargetMetrics } from "./metrics.js";
import { holdFailed, planSnapshots, type SnapshotStep, type SnapshotWorld } from "./snapshots.js";

/** How often the replicas are read while writes are held: what a confirmation may wait beyond its arrival. */
export const HOLD_POLL_MS = 100;

/** Time as the agent sees it: injected, so that tests can move it. */
export interface AgentClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: AgentClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export interface SnapshotterDeps {
  kube: Pick<
    TargetKube,
    "snapshots" | "replicas" | "annotateReplica" | "writeSnapshotStatus" | "removeSnapshotFinalizer"
  >;
  arrays: Pick<Arrays, "holdWrites" | "releaseWrites" | "writesHeld">;
  clock: AgentClock;
  metrics: Pick<TargetMetrics, "snapshotHold" | "snapshotOutcome">;
  logger: Logger;
  volume: string;
  holdBoundMs: number;
}

/** The volume as the agent's pass left it. */
export interface VolumeState {
  /** The CStorVolume's spec.capacity. */
  capacity: string;
  consistencyFactor: number;
  /** The array's kernel name ("md127") while it is assembled. */
  array?: string;
  /** The replica ids (spec.replicaId) whose leg md has in sync, session and disk up. */
  inSync: readonly string[];
}

/** What the agent last read or wrote of the volume's snapshots and replicas, by name. */
interface Known {
  snapshots: Map<string, CVSnap>;
  replicas: Map<string, CVR>;
}

export class Snapshotter {
  /** The hold this run made and has not released yet. */
  private held: { snapshot: string; since: number } | undefined;

  constructor(private readonly deps: SnapshotterDeps) {}

  async pass(volume: VolumeState): Promise<void> {
    const { arrays, clock } = this.deps;
    const heldNow = volume.array ? await arrays.writesHeld(volume.array) : false;
    const known = await this.read(heldNow ? volume.array : undefined);
    if (known.snapshots.size === 0 && !heldNow) return;
    const now = clock.now();
    const held = heldNow ? this.heldAsKnown() : undefined;
    const steps = planSnapshots(this.world(volume, known, now, held));
    const holdAt = steps.findIndex((step) => step.kind === "hold");
    await this.apply(holdAt < 0 ? steps : steps.slice(0, holdAt), volume, known);
    const hold = steps[holdAt];
    if (hold?.kind === "hold" && volume.array)
      await this.hold(hold.snapshot, steps.slice(holdAt + 1), { volume, known, since: now });
  }

  /**
   * The volume's snapshots and replicas. While md holds writes (`heldArray`), an apiserver that does not answer
   * releases them: no plan could.
   */
  private async read(heldArray: string | undefined): Promise<Known> {
    const { kube } = this.deps;
    try {
      const snapshots = byName(await kube.snapshots());
      return {
        snapshots,
        replicas: snapshots.size > 0 ? byName(await kube.replicas()) : new Map<string, CVR>(),
      };
    } catch (error) {
      if (heldArray) await this.release(heldArray, "the apiserver does not answer");
      throw error;
    }
  }

  /** What md holds for, as far as this run knows: nothing it knows of after a restart. */
  private heldAsKnown(): NonNullable<SnapshotWorld["held"]> {
    return this.held ? { snapshot: this.held.snapshot, since: new Date(this.held.since) } : {};
  }

  private world(volume: VolumeState, known: Known, now: number, held: SnapshotWorld["held"]): SnapshotWorld {
    const inSync = new Set(volume.inSync);
    const replicas = [...known.replicas.values()];
    return {
      volume: this.deps.volume,
      capacity: volume.capacity,
      consistencyFactor: volume.consistencyFactor,
      assembled: volume.array !== undefined,
      inSync: replicas.filter((r) => inSync.has(r.spec.replicaId)).map((r) => r.metadata.name!),
      snapshots: [...known.snapshots.values()],
      replicas,
      ...(held ? { held } : {}),
      now: new Date(now),
      holdBoundMs: this.deps.holdBoundMs,
    };
  }

  /**
   * Holds the writes for `snapshot`, asks the replicas (`asks`), and reads them again until the plan releases or
   * the bound passes; the release is certain, then the outcome is written.
   */
  private async hold(
    snapshot: string,
    asks: readonly SnapshotStep[],
    { volume, known, since }: { volume: VolumeState; known: Known; since: number },
  ): Promise<void> {
    const { arrays, clock, holdBoundMs, kube, logger } = this.deps;
    const array = volume.array!;
    const held = { snapshot, since: new Date(since) };
    let cancelled = false;
    let decided: SnapshotStep[] | undefined;
    const work = async (): Promise<void> => {
      await arrays.holdWrites(array, holdBoundMs);
      if (cancelled) return;
      await this.apply(asks, volume, known);
      while (!cancelled) {
        await clock.sleep(HOLD_POLL_MS);
        if (cancelled) return;
        try {
          known.replicas = byName(await kube.replicas());
        } catch (error) {
          logger.warn("reading the replicas during a snapshot's hold failed", {
            snapshot,
            error: message(error),
          });
        }
        const steps = planSnapshots(this.world(volume, known, clock.now(), held));
        if (steps[0]?.kind === "release") decided = steps;
        else await this.apply(steps, volume, known);
        if (decided) return;
      }
    };
    this.held = { snapshot, since };
    const holding = work().then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    let failure: Error | undefined;
    try {
      const bound = clock.sleep(Math.max(0, since + holdBoundMs - clock.now())).then(() => undefined);
      failure = await Promise.race([holding, bound]);
    } finally {
      cancelled = true;
      await this.release(array, `snapshot ${snapshot}`);
    }
    const outcome = failure
      ? holdFailure(known, snapshot, failure, new Date(clock.now()))
      : (decided ?? planSnapshots(this.world(volume, known, clock.now(), held)));
    await this.apply(
      outcome.filter((step) => step.kind !== "release"),
      volume,
      known,
    );
  }

  /** Lets the writes through; a failure leaves the hold recorded, and the next pass releases it. */
  private async release(array: string, what: string): Promise<void> {
    const { arrays, clock, logger, metrics } = this.deps;
    const since = this.held?.since;
    try {
      await arrays.releaseWrites(array);
    } catch (error) {
      logger.error("the volume's writes could not be released; the next pass tries again", {
        array,
        error: message(error),
      });
      return;
    }
    this.held = undefined;
    if (since === undefined) return;
    const seconds = (clock.now() - since) / 1000;
    metrics.snapshotHold(seconds);
    logger.info("the volume's writes are released", { for: what, heldSeconds: seconds });
  }

  /**
   * A release first; then the writes at once (one per object). A failed write is logged; the next plan sees what
   * it did not change.
   */
  private async apply(steps: readonly SnapshotStep[], volume: VolumeState, known: Known): Promise<void> {
    for (const step of steps)
      if (step.kind === "release") {
        this.deps.logger.warn("releasing the volume's writes", { why: step.why });
        await this.release(volume.array!, step.why);
      }
    await Promise.all(steps.filter(isWrite).map((step) => this.write(step, known)));
  }

  private async write(step: WriteStep, known: Known): Promise<void> {
    const { kube, logger, metrics } = this.deps;
    try {
      switch (step.kind) {
        case "annotate": {
          const replica = known.replicas.get(step.replica)!;
          const written = await kube.annotateReplica(replica, {
            [ANNOTATION.snapshotNow]: step.snapshotNow ?? null,
            [ANNOTATION.replicaSnapshots]: snapshotListValue(step.snapshots),
          });
          known.replicas.set(step.replica, written);
          return;
        }
        case "status": {
          const before = known.snapshots.get(step.snapshot)!;
          known.snapshots.set(step.snapshot, await kube.writeSnapshotStatus(before, step.status));
          const { phase, attempts } = step.status;
          const ended = phase === "ReadyToUse" || phase === "Failed";
          if (ended && (before.status?.phase !== phase || before.status.attempts !== attempts)) {
            metrics.snapshotOutcome(phase);
            if (phase === "ReadyToUse")
              logger.info(`snapshot ${step.snapshot} ReadyToUse`, { ...step.status });
            else logger.warn(`snapshot ${step.snapshot} Failed`, { ...step.status });
          }
          return;
        }
        case "removeFinalizer":
          await kube.removeSnapshotFinalizer(known.snapshots.get(step.snapshot)!);
          logger.info(`snapshot ${step.snapshot}: no replica keeps it; its finalizer is removed`);
          return;
      }
    } catch (error) {
      logger.warn(`snapshot step ${step.kind} failed`, { ...step, error: message(error) });
    }
  }
}

/** A step that writes an object: what the apiserver does, not md. */
type WriteStep = Exclude<SnapshotStep, { kind: "hold" | "release" }>;
const isWrite = (step: SnapshotStep): step is WriteStep => step.kind !== "hold" && step.kind !== "release";

/** md did not hold: the attempt fails, and nothing was asked of the replicas. */
function holdFailure(known: Known, snapshot: string, error: Error, now: Date): SnapshotStep[] {
  const object = known.snapshots.get(snapshot);
  if (!object) return [];
  const reason = `md did not hold the volume's writes: ${error.message}`;
  return [{ kind: "status", snapshot, status: holdFailed(object, reason, now) }];
}

function byName<T extends { metadata: { name?: string } }>(objects: readonly T[]): Map<string, T> {
  return new Map(objects.map((object) => [object.metadata.name!, object]));
}

const message = (error: unknown) => (error as Error).message;
