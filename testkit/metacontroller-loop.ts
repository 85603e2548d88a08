// Metacontroller's event side, played for tests: the informer caches, the workqueue and the resyncs that decide
// WHEN a parent is synced, on top of MetacontrollerDriver's syncs (WHAT a sync does). Faithful to v4.17.2
// (pkg/controller/composite and pkg/controller/decorator, controller.go):
//
// - a parent is enqueued on its add and delete, and on an update unless its controller sets
//   ignoreStatusChanges and generation, labels, annotations and deletionTimestamp are all unchanged;
// - a child or attachment enqueues the parent its controllerRef resolves to (UID checked) when it is added,
//   changed (new resourceVersion) or deleted; an orphan child enqueues every parent whose selector matches it;
// - a related object enqueues every parent whose customize rules select it;
// - resyncAfterSeconds in a hook answer enqueues that parent once after the delay, the earliest delay winning;
//   resyncPeriodSeconds enqueues every parent periodically (a resync passes the ignoreStatusChanges filter);
// - a sync that ends in an error is requeued; one that Metacontroller ends quietly (a decorator's conflict on
//   its target) is not;
// - the sync runs on the parent as the cache holds it, which may lag the apiserver (children and related
//   objects are listed afresh by the driver, a lag of less than one relist).
//
// Informers are replaced by relisting when the test calls run() or advance(): each relist diffs against the
// cache by resourceVersion, so writes between two relists arrive as one event. Time is virtual: advance() moves
// it, so a test can tell a sync that comes in seconds from one that comes in a minute without waiting either.
import { isDeepStrictEqual } from "node:util";
import type { MetacontrollerDriver, Obj, ResourceInfo, SyncOutcome } from "./metacontroller-driver.js";
import {
  compositeSelector,
  controllerRef,
  decoratorMatches,
  hasFinalizer,
  ruleSelects,
  selectorMatches,
} from "./metacontroller-driver.js";

type Event = { type: "add" | "update" | "delete"; old?: Obj; cur: Obj };

interface Controller {
  kind: "composite" | "decorator";
  object: Obj;
  name: string;
  finalizer: string;
  /** The parent (target) types: one for a CompositeController, resources[] for a DecoratorController. */
  parents: { info: ResourceInfo; rule: Obj; ignoreStatusChanges: boolean }[];
  children: ResourceInfo[];
}

/** One sync the loop ran: at which virtual second, of which controller and parent, and what it did. */
export interface LoopSync {
  at: number;
  controller: string;
  parent: string;
  outcome: SyncOutcome;
}

export class MetacontrollerLoop {
  /** Virtual seconds since start(). */
  now = 0;
  readonly syncs: LoopSync[] = [];
  private controllers: Controller[] = [];
  private readonly caches = new Map<string, Map<string, Obj>>();
  private readonly queue = new Set<string>();
  private readonly delayed = new Map<string, number>();
  private readonly nextPeriodic = new Map<string, number>();
  /** Wall-clock milliseconds the virtual clock stood at 0, once runInRealTime() was first called. */
  private wallClockZero: number | undefined;

  /** `only`: the names of the controllers to run; all installed ones by default. */
  constructor(
    private readonly driver: MetacontrollerDriver,
    private readonly namespace: string,
    private readonly only?: readonly string[],
  ) {}

  /** Reads the controllers and fills the caches: every parent present is an add event, as at informer start. */
  async start(): Promise<void> {
    const chosen = (c: Obj) => !this.only || this.only.includes(c.metadata.name);
    const installed = await this.driver.controllers();
    const [composites, decorators] = [
      installed.composites.filter(chosen),
      installed.decorators.filter(chosen),
    ];
    const info = (rule: Obj) => this.driver.resourceInfo(rule.apiVersion, rule.resource);
    this.controllers = [];
    for (const cc of composites) {
      const parent = cc.spec.parentResource;
      this.controllers.push({
        kind: "composite",
        object: cc,
        name: cc.metadata.name,
        finalizer: `metacontroller.io/compositecontroller-${cc.metadata.name}`,
        parents: [
          {
            info: await info(parent),
            rule: parent,
            ignoreStatusChanges: parent.ignoreStatusChanges === true,
          },
        ],
        children: await Promise.all((cc.spec.childResources ?? []).map(info)),
      });
    }
    for (const dc of decorators) {
      this.controllers.push({
        kind: "decorator",
        object: dc,
        name: dc.metadata.name,
        finalizer: `metacontroller.io/decoratorcontroller-${dc.metadata.name}`,
        parents: await Promise.all(
          (dc.spec.resources as Obj[]).map(async (rule) => ({
            info: await info(rule),
            rule,
            ignoreStatusChanges: rule.ignoreStatusChanges === true,
          })),
        ),
        children: await Promise.all((dc.spec.attachments ?? []).map(info)),
      });
    }
    for (const c of this.controllers) {
      const period = c.object.spec.resyncPeriodSeconds;
      if (typeof period === "number") this.nextPeriodic.set(c.name, this.now + Math.max(1, period));
    }
    await this.observe();
  }

  /** Syncs whatever is queued, relisting before each sync, until nothing is queued. Returns what ran. */
  async run(maxSyncs = 50): Promise<LoopSync[]> {
    const ran: LoopSync[] = [];
    for (;;) {
      await this.observe();
      const key = this.queue.values().next().value;
      if (key === undefined) return ran;
      if (ran.length >= maxSyncs)
        throw new Error(
          `still busy after ${maxSyncs} syncs: a hot loop; queued: ${[...this.queue].join(", ")}`,
        );
      this.queue.delete(key);
      ran.push(await this.sync(key));
    }
  }

  /**
   * Runs what is queued, then moves the virtual clock up to the whole seconds really passed since the first call:
   * a running Metacontroller's delayed and periodic resyncs fire while a test waits on real processes.
   */
  async runInRealTime(maxSyncs = 50, now = Date.now()): Promise<LoopSync[]> {
    this.wallClockZero ??= now - this.now * 1000;
    const ran = await this.run(maxSyncs);
    const passed = Math.floor((now - this.wallClockZero) / 1000) - this.now;
    if (passed > 0) ran.push(...(await this.advance(passed)));
    return ran;
  }

  /** Moves the virtual clock, second by second, running what falls due. */
  async advance(seconds: number): Promise<LoopSync[]> {
    const ran: LoopSync[] = [];
    const until = this.now + seconds;
    for (;;) {
      const due = [...this.delayed.values(), ...this.nextPeriodic.values()].filter((t) => t <= until);
      if (due.length === 0) break;
      this.now = Math.max(this.now, Math.min(...due));
      for (const [key, at] of this.delayed) {
        if (at <= this.now) {
          this.delayed.delete(key);
          this.queue.add(key);
        }
      }
      for (const [name, at] of this.nextPeriodic) {
        if (at > this.now) continue;
        const c = this.controllers.find((x) => x.name === name)!;
        for (const { info, rule } of c.parents) {
          for (const parent of this.cache(info).values())
            if (cares(c, rule, parent)) this.queue.add(keyOf(c, info, parent));
        }
        this.nextPeriodic.set(name, at + Math.max(1, c.object.spec.resyncPeriodSeconds));
      }
      ran.push(...(await this.run()));
    }
    this.now = until;
    return ran;
  }

  /** Keys waiting for a resync, with the virtual time each is due. */
  pending(): Record<string, number> {
    return Object.fromEntries(this.delayed);
  }

  private async sync(key: string): Promise<LoopSync> {
    const [kind, name, apiVersion, resource, namespace, objectName] = key.split("\t") as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const c = this.controllers.find((x) => x.kind === kind && x.name === name)!;
    const info = c.parents.find(
      (p) => p.info.apiVersion === apiVersion && p.info.resource === resource,
    )!.info;
    const cached = this.cache(info).get(`${namespace}/${objectName}`);
    let outcome: SyncOutcome = { hook: "none", writes: [] };
    // A parent gone from the cache is forgotten, as Metacontroller swallows NotFound.
    if (cached) {
      outcome =
        kind === "composite"
          ? await this.driver.syncComposite(name, namespace, objectName, cached)
          : await this.driver.syncDecorator(name, apiVersion, resource, namespace, objectName, cached);
    }
    const after = outcome.response?.resyncAfterSeconds;
    if (typeof after === "number" && after > 0) {
      const at = this.now + after;
      const waiting = this.delayed.get(key);
      if (waiting === undefined || at < waiting) this.delayed.set(key, at);
    }
    if (outcome.requeue) this.queue.add(key);
    const record = { at: this.now, controller: name, parent: `${namespace}/${objectName}`, outcome };
    this.syncs.push(record);
    return record;
  }

  private cache(info: ResourceInfo): Map<string, Obj> {
    const id = `${info.apiVersion}/${info.resource}`;
    let cache = this.caches.get(id);
    if (!cache) this.caches.set(id, (cache = new Map()));
    return cache;
  }

  /** Relists every watched type and hands each difference to the controllers, as informer events. */
  private async observe(): Promise<void> {
    const watched = new Map<string, ResourceInfo>();
    for (const c of this.controllers) {
      for (const { info } of c.parents) watched.set(`${info.apiVersion}/${info.resource}`, info);
      for (const info of c.children) watched.set(`${info.apiVersion}/${info.resource}`, info);
      for (const rule of this.relatedRules(c)) {
        const info = await this.driver.resourceInfo(rule.apiVersion, rule.resource);
        watched.set(`${info.apiVersion}/${info.resource}`, info);
      }
    }
    // Parents first, so a child's event resolves against a parent cache as fresh as the child's.
    const ordered = [...watched.values()].sort(
      (a, b) => Number(this.isParentType(b)) - Number(this.isParentType(a)),
    );
    for (const info of ordered) {
      const cache = this.cache(info);
      const listed = await this.driver.list(info, info.namespaced ? this.namespace : undefined);
      const seen = new Set<string>();
      const events: Event[] = [];
      for (const cur of listed) {
        const id = `${cur.metadata.namespace ?? ""}/${cur.metadata.name}`;
        seen.add(id);
        const old = cache.get(id);
        if (!old || old.metadata.uid !== cur.metadata.uid) events.push({ type: "add", cur });
        else if (old.metadata.resourceVersion !== cur.metadata.resourceVersion)
          events.push({ type: "update", old, cur });
        cache.set(id, cur);
      }
      for (const [id, old] of cache) {
        if (seen.has(id)) continue;
        cache.delete(id);
        events.push({ type: "delete", cur: old });
      }
      for (const event of events) for (const c of this.controllers) await this.dispatch(c, info, event);
    }
  }

  private isParentType(info: ResourceInfo): boolean {
    return this.controllers.some((c) =>
      c.parents.some((p) => p.info.apiVersion === info.apiVersion && p.info.resource === info.resource),
    );
  }

  private async dispatch(c: Controller, info: ResourceInfo, event: Event): Promise<void> {
    const parentRule = c.parents.find(
      (p) => p.info.apiVersion === info.apiVersion && p.info.resource === info.resource,
    );
    if (parentRule) {
      const { cur, old } = event;
      if (event.type === "update" && parentRule.ignoreStatusChanges && onlyStatusChanged(old!, cur)) return;
      if (!cares(c, parentRule.rule, cur)) return;
      this.queue.add(keyOf(c, info, cur));
    }
    if (
      c.children.some((child) => child.apiVersion === info.apiVersion && child.resource === info.resource)
    ) {
      for (const parent of this.ownersOf(c, event.cur, event.type !== "delete")) this.queue.add(parent);
    }
    for (const parent of await this.selectingParents(c, info, event)) this.queue.add(parent);
  }

  /** The parent a child's controllerRef resolves to; for a composite's orphan, every parent that would adopt it. */
  private ownersOf(c: Controller, child: Obj, orphansToo: boolean): string[] {
    const ref = controllerRef(child);
    const parentsOf = c.parents.map(({ info, rule }) => ({ info, rule, cache: this.cache(info) }));
    if (ref) {
      for (const { info, rule, cache } of parentsOf) {
        if (info.kind !== ref.kind || info.group !== String(ref.apiVersion).split("/").slice(0, -1).join("/"))
          continue;
        const parent = cache.get(`${info.namespaced ? child.metadata.namespace : ""}/${ref.name}`);
        if (!parent || parent.metadata.uid !== ref.uid) continue;
        if (!cares(c, rule, parent)) continue;
        return [keyOf(c, info, parent)];
      }
      return [];
    }
    if (c.kind !== "composite" || !orphansToo) return [];
    const { info, cache } = parentsOf[0];
    return [...cache.values()]
      .filter((p) => selectorMatches(compositeSelector(c.object, p), child.metadata.labels))
      .map((p) => keyOf(c, info, p));
  }

  /** Every customize rule the controller's cached parents were answered. */
  private relatedRules(c: Controller): Obj[] {
    return c.parents.flatMap(({ info }) =>
      [...this.cache(info).values()].flatMap(
        (parent) => this.driver.cachedRelatedRules(c.object, parent) ?? [],
      ),
    );
  }

  private async selectingParents(c: Controller, info: ResourceInfo, event: Event): Promise<string[]> {
    const out: string[] = [];
    for (const { info: parentInfo } of c.parents) {
      for (const parent of this.cache(parentInfo).values()) {
        const rules = this.driver.cachedRelatedRules(c.object, parent) ?? [];
        const selects = rules.some(
          (rule) =>
            rule.apiVersion === info.apiVersion &&
            rule.resource === info.resource &&
            [event.cur, event.old].some((o) => o && ruleSelects(rule, o)),
        );
        if (selects) out.push(keyOf(c, parentInfo, parent));
      }
    }
    return out;
  }
}

/** A decorator ignores a target that neither matches its selectors nor carries its finalizer. */
function cares(c: Controller, rule: Obj, parent: Obj): boolean {
  return c.kind !== "decorator" || decoratorMatches(rule, parent) || hasFinalizer(parent, c.finalizer);
}

function keyOf(c: Controller, info: ResourceInfo, parent: Obj): string {
  return [
    c.kind,
    c.name,
    info.apiVersion,
    info.resource,
    parent.metadata.namespace ?? "",
    parent.metadata.name,
  ].join("\t");
}

/** updateParentObject's ignoreStatusChanges filter. */
function onlyStatusChanged(old: Obj, cur: Obj): boolean {
  const same = (a: unknown, b: unknown) => isDeepStrictEqual(a ?? {}, b ?? {});
  return (
    old.metadata.generation === cur.metadata.generation &&
    same(old.metadata.labels, cur.metadata.labels) &&
    same(old.metadata.annotations, cur.metadata.annotations) &&
    !cur.metadata.deletionTimestamp
  );
}
