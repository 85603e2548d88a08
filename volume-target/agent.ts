// The target agent's loops (docs/adr/0039-the-volume-target-md-raid1-served-by-lio.md,
// docs/adr/0040-the-target-agent-credentials-names-and-status.md). A pass reads the volume from the API and the
// kernel, plans (volume-target/plan.ts), applies the steps, serves the array through LIO and writes what it saw.
// Beside it a fast, fork-free watch counts the legs in sync against the consistency factor and switches the LUN's
// write protection, so the window in which writes reach fewer legs than the factor stays a fraction of a second.
// After the array's work, each pass takes the volume's snapshots' next step (volume-target/snapshotter.ts).
// stop() is SIGTERM's order: stop serving (LIO), stop the array (md flushes), then log out of the legs.
import type { CV, CVTargetStatus } from "../api/types.js";
import type { Logger } from "../runtime/log.js";
import type { TargetConfig } from "./config.js";
import { admittedInitiators, desiredVolume, replicasToConfirm } from "./desired.js";
import type { ArrayState, Kernel, SessionView } from "./kernel.js";
import { REPLICA_DATA_LUN } from "../lib/volume/iqn.js";
import type { TargetKube } from "./kube.js";
import type { TargetMetrics } from "./metrics.js";
import {
  caughtUpReplicas,
  planTarget,
  type DesiredVolume,
  type Examined,
  type KernelView,
  type Step,
  type TargetPlan,
} from "./plan.js";
import { Snapshotter, systemClock, type AgentClock } from "./snapshotter.js";
import { statusPatch, targetState, targetStatus, type TargetState } from "./status.js";

export interface TargetDeps {
  config: TargetConfig;
  kernel: Kernel;
  kube: TargetKube;
  metrics: TargetMetrics;
  logger: Logger;
  /** Default: the system's. */
  clock?: AgentClock;
}

export class TargetAgent {
  private state: TargetState = "Starting";
  private desired: DesiredVolume | undefined;
  private lun: string | undefined;
  /** The initiators the LUN admits now (one ACL each): the published node's, the client's, or none. */
  private initiators: string[] = [];
  private writeProtected: boolean | undefined;
  private lastStatus: CVTargetStatus | undefined;
  private lastPassAt = Date.now();
  private passTimer: NodeJS.Timeout | undefined;
  private watchTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private ifaceReady = false;
  /** Sessions rescanned since they logged in: one rescan each, not one a pass. */
  private rescanned = new Set<number>();
  /** Portals logged out so that their pool reopens a grown replica, and when they may log in again. */
  private heldOut = new Map<string, number>();
  private readonly clock: AgentClock;
  private readonly snapshotter: Snapshotter;

  constructor(private readonly deps: TargetDeps) {
    this.clock = deps.clock ?? systemClock;
    this.snapshotter = new Snapshotter({
      kube: deps.kube,
      arrays: deps.kernel.arrays,
      clock: this.clock,
      metrics: deps.metrics,
      logger: deps.logger,
      volume: deps.config.volume,
      holdBoundMs: deps.config.snapshotHoldMs,
    });
  }

  /** Ready while the LUN is served (writable or read-only): the Service then sends initiators here. */
  readiness(): { ready: boolean; reason: string } {
    const ready = this.state === "Serving" || this.state === "ReadOnly";
    return { ready, reason: this.lastStatus?.message ?? this.state };
  }

  healthy(now = Date.now()): boolean {
    return now - this.lastPassAt < this.deps.config.passIntervalMs * 5 + 120_000;
  }

  start(): void {
    const tick = (): void => {
      this.running = this.pass()
        .catch((error: Error) => this.deps.logger.warn("pass failed", { error: error.message }))
        .finally(() => {
          this.running = undefined;
          if (!this.stopped) this.passTimer = setTimeout(tick, this.deps.config.passIntervalMs);
        });
    };
    tick();
    const watch = (): void => {
      void this.watchConsistency().finally(() => {
        if (!this.stopped) this.watchTimer = setTimeout(watch, this.deps.config.watchIntervalMs);
      });
    };
    watch();
  }

  async pass(): Promise<void> {
    const { kube, kernel } = this.deps;
    const cv = await kube.volume();
    if (!cv) {
      this.deps.logger.warn("the CStorVolume is gone; nothing served until it returns");
      return;
    }
    const desired = desiredVolume(cv, await kube.poolAddresses());
    if (!desired.arrayUuid)
      throw new Error(`CStorVolume ${cv.metadata.name} has no uid: the array cannot be named`);
    this.desired = desired;
    if (!this.ifaceReady) {
      await kernel.legs.ensureIface();
      this.ifaceReady = true;
    }
    let view = await this.observe(desired);
    let plan = planTarget(desired, view);
    const failures = await this.applySteps(plan.steps, desired, cv);
    if (plan.steps.length > 0) {
      view = await this.observe(desired);
      plan = planTarget(desired, view);
    }
    await this.serve(cv, desired, plan, view.array);
    await this.report(cv, desired, { plan, array: view.array, failures });
    await this.snapshot(cv, desired, plan, view.array);
    this.lastPassAt = Date.now();
  }

  /** The snapshots' part of the pass; its failure is logged and leaves the volume's data path alone. */
  private async snapshot(
    cv: CV,
    desired: DesiredVolume,
    plan: TargetPlan,
    array: ArrayState | undefined,
  ): Promise<void> {
    try {
      await this.snapshotter.pass({
        capacity: cv.spec.capacity,
        consistencyFactor: desired.consistencyFactor,
        ...(plan.assembled && array ? { array: array.kernelName } : {}),
        inSync: plan.replicas.filter((r) => r.state === "InSync").map((r) => r.replicaId),
      });
    } catch (error) {
      this.deps.logger.warn("the snapshot pass failed", { error: (error as Error).message });
    }
  }

  /**
   * The kernel as it is now; the sessions the plan wants rescanned are rescanned (then read again), and the
   * disks it needs examined are examined (a read that fails: "unreadable").
   */
  private async observe(desired: DesiredVolume): Promise<KernelView> {
    const { kernel, config } = this.deps;
    const now = Date.now();
    for (const [portal, until] of this.heldOut) if (until <= now) this.heldOut.delete(portal);
    const read = async (): Promise<KernelView> => {
      const sessions = (await kernel.legs.sessions()).filter((s) => this.isOurs(s));
      const live = new Set(sessions.map((s) => s.sid));
      for (const sid of this.rescanned) if (!live.has(sid)) this.rescanned.delete(sid);
      const name = await kernel.arrays.find(config.names.array);
      return {
        sessions,
        examined: {},
        rescanned: [...this.rescanned],
        heldOut: [...this.heldOut.keys()],
        ...(name ? { array: await kernel.arrays.state(name) } : {}),
      };
    };
    let view = await read();
    const rescan = planTarget(desired, view).rescan;
    for (const sid of rescan) await this.rescan(sid);
    if (rescan.length > 0) view = await read();
    for (const disk of planTarget(desired, view).examine) view.examined[disk] = await this.examine(disk);
    return view;
  }

  private async rescan(sid: number): Promise<void> {
    try {
      await this.deps.kernel.legs.rescan(sid);
    } catch (error) {
      this.deps.logger.warn("a leg's session could not be rescanned", {
        sid,
        error: (error as Error).message,
      });
    }
    this.rescanned.add(sid);
  }

  private isOurs(session: SessionView): boolean {
    return session.iface === this.deps.config.names.iface;
  }

  private async examine(disk: string): Promise<Examined> {
    try {
      return (await this.deps.kernel.arrays.examine(disk)) ?? "none";
    } catch (error) {
      this.deps.logger.warn("a leg's md superblock could not be read; it is assumed to hold data", {
        disk,
        error: (error as Error).message,
      });
      return "unreadable";
    }
  }

  /**
   * Logins first and at once (each takes seconds, and a new volume waits for every leg), then the other steps in
   * order; a failed step is logged and said in the status, and the next pass tries again.
   */
  private async applySteps(steps: readonly Step[], desired: DesiredVolume, cv: CV): Promise<string[]> {
    const failures: string[] = [];
    const apply = async (step: Step): Promise<boolean> => {
      try {
        await this.applyStep(step, desired, cv);
        this.deps.logger.info(`${step.kind} done`, { ...step });
        return true;
      } catch (error) {
        const message = (error as Error).message;
        this.deps.logger.warn(`${step.kind} failed`, { ...step, error: message });
        failures.push(
          `${step.kind} ${"disk" in step ? step.disk : "portal" in step ? step.portal : ""} failed: ${message}`,
        );
        return false;
      }
    };
    await Promise.all(steps.filter((step) => step.kind === "login").map(apply));
    for (const step of steps.filter((s) => s.kind !== "login"))
      if (!(await apply(step)) && ["create", "assemble", "assembleClones"].includes(step.kind)) break;
    return failures;
  }

  private async applyStep(step: Step, desired: DesiredVolume, cv: CV): Promise<void> {
    const { kernel, config } = this.deps;
    const arrays = kernel.arrays;
    const named = { name: config.names.array, uuid: desired.arrayUuid };
    const member = async () => {
      const found = await arrays.find(config.names.array);
      if (!found) throw new Error("the array is not assembled");
      return found;
    };
    switch (step.kind) {
      case "login":
        return kernel.legs.login({ targetIqn: desired.replicaIqn, portal: step.portal, ...config.chap });
      case "logout":
        await kernel.legs.logout(step.targetIqn, step.portal);
        if (step.holdOut) this.heldOut.set(step.portal, Date.now() + config.growthLogoutMs);
        return;
      case "create":
        await arrays.create({ ...named, disks: step.disks });
        return this.recordArray(cv, desired);
      case "assembleClones":
        await arrays.assembleWithNewUuid({ ...named, disks: step.disks });
        return this.recordArray(cv, desired);
      case "assemble":
        await arrays.assemble({ ...named, disks: step.disks });
        return;
      case "grow":
        return arrays.grow(await member(), step.raidDevices);
      case "growSize":
        return arrays.growSize(await member());
      case "add":
        return arrays.add(await member(), step.disk);
      case "reAdd":
        return arrays.reAdd(await member(), step.disk);
      case "remove":
        return arrays.remove(await member(), step.disk);
    }
  }

  /**
   * status.target.arrayUUID, written once the volume's first array exists and before anything is served: from
   * now on this volume is only ever assembled, by its own UUID.
   */
  private recordArray(cv: CV, desired: DesiredVolume): Promise<void> {
    return this.writeStatus(cv, {
      ...(this.lastStatus ?? { state: "Starting" }),
      arrayUUID: desired.arrayUuid,
    });
  }

  /** The LUN follows the array: served while it is assembled, with the write protection the plan implies. */
  private async serve(
    cv: CV,
    desired: DesiredVolume,
    plan: TargetPlan,
    array: ArrayState | undefined,
  ): Promise<void> {
    const { kernel, config } = this.deps;
    const targetIqn = cv.spec.iqn;
    if (!plan.assembled || !array) {
      // Also what a crashed target left on this node: no LUN is served without its array.
      if (this.lun || (await kernel.exports.read(targetIqn)))
        await kernel.exports.remove(targetIqn, config.names.backstore);
      this.lun = undefined;
      this.initiators = [];
      return;
    }
    const writeProtect = plan.healthy < desired.consistencyFactor;
    // The ACLs are replaced as a whole: a node no longer admitted loses its ACL (and its session) before the
    // next one's is made, so two nodes are never admitted at once.
    const initiators = admittedInitiators(cv);
    await kernel.exports.ensure({
      targetIqn,
      backstore: config.names.backstore,
      device: `/dev/${array.kernelName}`,
      portal: config.portal,
      acls: initiators.map((initiatorIqn) => ({ initiatorIqn, ...config.chap, writeProtect })),
    });
    this.lun = targetIqn;
    this.initiators = initiators;
    this.writeProtected = writeProtect;
  }

  /**
   * Fork-free: md's and the sessions' sysfs only. A leg counts when md has it in sync and its session and disk
   * are up (md fails a leg only once I/O to it fails, so a silent replica would otherwise count).
   */
  async watchConsistency(): Promise<void> {
    const { kernel, config, logger } = this.deps;
    if (!this.lun || !this.desired) return;
    try {
      const name = await kernel.arrays.find(config.names.array);
      if (!name) return;
      const [array, sessions] = await Promise.all([kernel.arrays.state(name), kernel.legs.sessions()]);
      const up = new Set(
        sessions
          .filter((s) => this.isOurs(s) && s.state === "LOGGED_IN")
          .map((s) => s.luns[REPLICA_DATA_LUN])
          .filter((lun) => lun?.state === "running")
          .map((lun) => lun.disk),
      );
      const healthy = array.legs.filter((leg) => leg.states.includes("in_sync") && up.has(leg.disk)).length;
      const protect = healthy < this.desired.consistencyFactor;
      if (protect === this.writeProtected) return;
      for (const initiator of this.initiators)
        await kernel.exports.setWriteProtect(this.lun, initiator, protect);
      this.writeProtected = protect;
      logger.info(protect ? "LUN read-only" : "LUN writable", {
        healthy,
        consistencyFactor: this.desired.consistencyFactor,
      });
    } catch (error) {
      logger.warn("consistency watch failed", { error: (error as Error).message });
    }
  }

  private async report(
    cv: CV,
    desired: DesiredVolume,
    { plan, array, failures }: { plan: TargetPlan; array: ArrayState | undefined; failures: string[] },
  ): Promise<void> {
    const { kube, config, metrics, logger } = this.deps;
    const state = targetState(plan, desired.consistencyFactor);
    if (state !== this.state) logger.info(`target ${state}`, { message: plan.refusal ?? plan.waiting });
    this.state = state;
    const status = targetStatus(
      {
        plan,
        state,
        node: config.node,
        ...this.served(plan, desired, array),
        consistencyFactor: desired.consistencyFactor,
        failures,
        now: new Date(this.clock.now()).toISOString(),
      },
      this.lastStatus ?? cv.status?.target,
    );
    await this.writeStatus(cv, status);
    metrics.update({
      state,
      replicas: plan.replicas,
      consistencyFactor: desired.consistencyFactor,
      writeProtected: this.writeProtected ?? false,
      ...(array ? { stat: array.stat } : {}),
      ...(array?.syncCompleted && array.syncCompleted.total > 0
        ? { rebuildRatio: array.syncCompleted.done / array.syncCompleted.total }
        : {}),
    });
    const confirm = replicasToConfirm(await kube.replicas(), caughtUpReplicas(plan, array));
    for (const replica of confirm) {
      await kube.markCaughtUp(replica);
      logger.info("replica caught up: md reports its leg in sync", { replica });
    }
  }

  /** What the status says of the array and the LUN: its UUID once it exists, its size, whom the LUN admits. */
  private served(
    plan: TargetPlan,
    desired: DesiredVolume,
    array: ArrayState | undefined,
  ): { arrayUuid?: string; arraySizeBytes?: number; initiators?: string[] } {
    return {
      ...(plan.assembled ? { arrayUuid: desired.arrayUuid } : {}),
      ...(array ? { arraySizeBytes: array.sizeBytes } : {}),
      ...(this.lun ? { initiators: this.initiators } : {}),
    };
  }

  private async writeStatus(cv: CV, status: CVTargetStatus): Promise<void> {
    const patch = statusPatch(status, this.lastStatus ?? cv.status?.target);
    if (!patch) return;
    await this.deps.kube.patchVolumeStatus(patch);
    this.lastStatus = status;
  }

  /** SIGTERM: no new pass; the LUN stops being served, md stops (flushing), the legs log out. */
  async stop(): Promise<void> {
    const { kernel, config, logger } = this.deps;
    this.stopped = true;
    clearTimeout(this.passTimer);
    clearTimeout(this.watchTimer);
    await this.running;
    const step = async (what: string, action: () => Promise<void>) => {
      try {
        await action();
      } catch (error) {
        logger.warn(`${what} failed while stopping`, { error: (error as Error).message });
      }
    };
    if (this.lun)
      await step("removing the LUN", () => kernel.exports.remove(this.lun!, config.names.backstore));
    const name = await kernel.arrays.find(config.names.array).catch(() => undefined);
    if (name) await step("stopping the array", () => kernel.arrays.stop(name));
    for (const session of (await kernel.legs.sessions().catch(() => [])).filter((s) => this.isOurs(s)))
      if (session.portal)
        await step("logging out", () => kernel.legs.logout(session.targetIqn, session.portal!));
    this.state = "Stopped";
    if (this.lastStatus)
      await step("writing the status", () =>
        this.deps.kube.patchVolumeStatus({
          status: { target: { state: "Stopped", message: `stopped on ${config.node}` } },
        }),
      );
  }
}
