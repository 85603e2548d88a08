// Metacontroller's part, played for tests against the real apiserver (Metacontroller itself cannot run here).
// Test-only: never shipped, never a runtime. Faithful to Metacontroller v4.17.2 with hook version v2 and the
// default dynamic-apply strategy (pkg/controller/composite and pkg/controller/decorator of its source):
//
// - the controllers are read from the apiserver (the CompositeController/DecoratorController we ship), so
//   hook paths, child types, update strategies and generateSelector come from the real manifests;
// - CompositeController: finalizer metacontroller.io/compositecontroller-<name> (when a finalize hook exists),
//   children claimed by controllerRef + selector (orphans adopted, non-matching released), customize → related
//   objects, sync or finalize hook over HTTP with v2 keys ("Kind.group/version" → "namespace/name"), children
//   applied by 3-way merge with the last-applied annotation (created with a controllerRef, controller-uid
//   label under generateSelector), omitted children deleted (Background, UID precondition), status replaced
//   through /status with observedGeneration injected, finalizer removed on finalized: true;
// - DecoratorController: attachments are objects controlled by the target and annotated
//   metacontroller.k8s.io/decorator-controller=<name>; labels/annotations merged (null deletes), status
//   replaced unless null, finalizer metacontroller.io/decoratorcontroller-<name>. A conflict (or NotFound) on
//   the target's status or update write gives the whole sync up before attachments are managed, with no
//   retry: only the next watch event or a resync brings another sync (see metacontroller-loop.ts).
//
// Differences, on purpose: here syncs run when a test asks (metacontroller-loop.ts adds the informers, the
// workqueue and the resyncs, on a virtual clock); a hook error, an unknown response field or a child of an
// unlisted type throws instead of only logging, so tests see it.
import { once } from "node:events";
import type { AddressInfo } from "node:net";
import { isDeepStrictEqual } from "node:util";
import { makeApp } from "../hooks/http/app.js";
import { hookRoutes } from "../hooks/routes.js";
import { TEST_HOOK_CONFIG } from "./hook-config.js";
import { createLogger } from "../runtime/log.js";
import type { ApiResponse, Identity, KubeCluster } from "./kube.js";
import { onStop } from "./processes.js";

export type Obj = Record<string, any>;

const COMPOSITE_API = "/apis/metacontroller.k8s.io/v1alpha1/compositecontrollers";
const DECORATOR_API = "/apis/metacontroller.k8s.io/v1alpha1/decoratorcontrollers";
export const LAST_APPLIED = "metacontroller.k8s.io/last-applied-configuration";
export const DECORATOR_ANNOTATION = "metacontroller.k8s.io/decorator-controller";
export const CONTROLLER_UID = "controller-uid";
const GC_FINALIZERS = ["foregroundDeletion", "orphan"];
const DEFAULT_TIMEOUT_MS = 10_000;

export class HookCallError extends Error {
  override readonly name = "HookCallError";
  constructor(
    readonly url: string,
    readonly status: number,
    readonly body: string,
  ) {
    super(`hook ${url} answered ${status}: ${body.slice(0, 2000)}`);
  }
}

class ConflictError extends Error {
  override readonly name = "ConflictError";
}

export interface SyncOutcome {
  /** Which hook was called, or why none was. */
  hook: "sync" | "finalize" | "none";
  /**
   * Every write this sync made, e.g. "create CStorPoolInstance openebs/x", and "conflict: …" for one that lost
   * a race and must be retried; empty when nothing changed.
   */
  writes: string[];
  response?: Obj;
  /** The sync ended in an error Metacontroller requeues with backoff (a lost race it does not swallow). */
  requeue?: boolean;
}

export interface ResourceInfo {
  apiVersion: string;
  group: string;
  version: string;
  resource: string;
  kind: string;
  namespaced: boolean;
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

export interface DriverOptions {
  cluster: KubeCluster;
  /** Base URL of the hook server under test; every hook's service or URL is sent here, path kept. */
  hookServer: string;
  /** Who Metacontroller acts as (its ClusterRole is `*`): the admin by default. */
  as?: Identity;
  /** Called before each hook request is sent, with the hook's path: a test changes the cluster mid-sync here. */
  onHookCall?: (path: string, request: Obj) => Promise<void>;
}

export class MetacontrollerDriver {
  private readonly cluster: KubeCluster;
  private readonly as: Identity;
  private readonly hookServer: URL;
  private readonly onHookCall: NonNullable<DriverOptions["onHookCall"]>;
  private readonly discovery = new Map<string, ResourceInfo[]>();
  private readonly customizeCache = new Map<string, Obj[]>();

  constructor(options: DriverOptions) {
    this.cluster = options.cluster;
    this.as = options.as ?? options.cluster.admin;
    this.hookServer = new URL(options.hookServer);
    this.onHookCall = options.onHookCall ?? (async () => undefined);
  }

  /**
   * Syncs every parent of every CompositeController and every target of every DecoratorController in a
   * namespace, round after round, until a round writes nothing. A hook whose answer keeps changing the
   * cluster never gets there: that is the hot loop real Metacontroller would run, and it fails here.
   */
  async converge(namespace: string, maxRounds = 8): Promise<string[][]> {
    const rounds: string[][] = [];
    for (let round = 0; round < maxRounds; round++) {
      const writes: string[] = [];
      for (const cc of (await this.read(COMPOSITE_API)).items as Obj[]) {
        const info = await this.resourceInfo(
          cc.spec.parentResource.apiVersion,
          cc.spec.parentResource.resource,
        );
        for (const parent of await this.list(info, namespace)) {
          writes.push(
            ...(await this.syncComposite(cc.metadata.name, parent.metadata.namespace, parent.metadata.name))
              .writes,
          );
        }
      }
      for (const dc of (await this.read(DECORATOR_API)).items as Obj[]) {
        for (const rule of dc.spec.resources as Obj[]) {
          const info = await this.resourceInfo(rule.apiVersion, rule.resource);
          for (const target of await this.list(info, namespace)) {
            const outcome = await this.syncDecorator(
              dc.metadata.name,
              rule.apiVersion,
              rule.resource,
              target.metadata.namespace,
              target.metadata.name,
            );
            writes.push(...outcome.writes);
          }
        }
      }
      rounds.push(writes);
      if (writes.length === 0) return rounds;
    }
    throw new Error(
      `no fixed point after ${maxRounds} rounds; the last one wrote:\n  ${rounds.at(-1)!.join("\n  ")}`,
    );
  }

  // ---------------------------------------------------------------- CompositeController

  /**
   * One sync of one parent, as Metacontroller's parentController.syncParentObject does it. A write that loses
   * a race (409 Conflict) ends the sync early, as Metacontroller's requeue would; `writes` then names it, so
   * converge() runs another round.
   */
  async syncComposite(
    controllerName: string,
    namespace: string,
    name: string,
    cached?: Obj,
  ): Promise<SyncOutcome> {
    const writes: string[] = [];
    return this.retryingOnConflict(writes, () =>
      this.compositeSync(writes, controllerName, namespace, name, cached),
    );
  }

  /** `cached`: the parent as the informer cache holds it (it may lag the apiserver); read afresh without it. */
  private async compositeSync(
    writes: string[],
    controllerName: string,
    namespace: string,
    name: string,
    cached?: Obj,
  ): Promise<SyncOutcome> {
    const cc = await this.read(`${COMPOSITE_API}/${controllerName}`);
    const parentInfo = await this.resourceInfo(
      cc.spec.parentResource.apiVersion,
      cc.spec.parentResource.resource,
    );
    let parent = cached ?? (await this.get(parentInfo, namespace, name));
    if (!parent) return { hook: "none", writes };
    const finalizer = `metacontroller.io/compositecontroller-${controllerName}`;
    const hasFinalizeHook = Boolean(cc.spec.hooks?.finalize);
    const parentSelector: LabelSelector | undefined = cc.spec.parentResource.labelSelector;
    const outOfScope = () =>
      parentSelector !== undefined && !selectorMatches(parentSelector, parent!.metadata.labels);
    if (outOfScope() && !hasFinalizer(parent, finalizer)) return { hook: "none", writes };

    parent = await this.syncFinalizer(
      parentInfo,
      parent,
      finalizer,
      hasFinalizeHook && !outOfScope(),
      writes,
    );
    if (outOfScope() && !hasFinalizer(parent, finalizer)) return { hook: "none", writes };

    const selector = compositeSelector(cc, parent);
    const ruleTypes = new Map<string, { info: ResourceInfo; method: string }>();
    const children: Record<string, Record<string, Obj>> = {};
    for (const rule of cc.spec.childResources ?? []) {
      const info = await this.resourceInfo(rule.apiVersion, rule.resource);
      ruleTypes.set(typeKey(info.apiVersion, info.kind), {
        info,
        method: rule.updateStrategy?.method ?? "OnDelete",
      });
      const claimed = await this.claimChildren(info, parent, parentInfo, selector, writes);
      children[typeKey(info.apiVersion, info.kind)] = Object.fromEntries(
        claimed.map((o) => [objectKey(o), o]),
      );
    }
    const related = await this.relatedObjects(cc, parent);

    const finalizing = Boolean(parent.metadata.deletionTimestamp || outOfScope()) && hasFinalizeHook;
    const hook = finalizing ? cc.spec.hooks.finalize : cc.spec.hooks?.sync;
    if (!hook) throw new Error(`CompositeController ${controllerName} has no sync hook`);
    const response = await this.callHook(
      hook,
      { controller: cc, parent, children, related, finalizing },
      COMPOSITE_RESPONSE,
    );

    if (response.finalized === true) {
      parent = await this.removeFinalizer(parentInfo, parent, finalizer, writes);
    }
    const desired = this.desiredChildren(
      response.children ?? [],
      parent,
      ruleTypes,
      `CompositeController ${controllerName}`,
    );
    for (const child of desired) {
      const labels = (child.metadata.labels ??= {});
      if (cc.spec.generateSelector === true && !(CONTROLLER_UID in labels))
        labels[CONTROLLER_UID] = parent.metadata.uid;
      if (!selectorMatches(selector, labels)) {
        throw new Error(
          `labels on desired child ${child.kind} ${objectKey(child)} don't match parent selector`,
        );
      }
    }
    if (!parent.metadata.deletionTimestamp || shouldFinalize(parent, finalizer, hasFinalizeHook)) {
      await this.manageChildren(parent, children, desired, ruleTypes, writes);
    }
    await this.updateParentStatus(parentInfo, parent, response.status ?? {}, writes);
    return { hook: finalizing ? "finalize" : "sync", writes, response };
  }

  private async claimChildren(
    info: ResourceInfo,
    parent: Obj,
    parentInfo: ResourceInfo,
    selector: LabelSelector,
    writes: string[],
  ): Promise<Obj[]> {
    const all = await this.list(info, parentInfo.namespaced ? parent.metadata.namespace : undefined);
    const owned: Obj[] = [];
    for (const object of all) {
      const ref = controllerRef(object);
      const matches = selectorMatches(selector, object.metadata.labels);
      if (ref?.uid === parent.metadata.uid) {
        if (matches) {
          owned.push(object);
        } else if (!object.metadata.deletionTimestamp) {
          // Release: an owned child that no longer matches the selector loses its controllerRef.
          const refs = object.metadata.ownerReferences.filter((r: Obj) => r.uid !== parent.metadata.uid);
          await this.write(
            writes,
            `release ${info.kind} ${objectKey(object)}`,
            "PATCH",
            objectPath(info, object),
            { metadata: { ownerReferences: refs, uid: object.metadata.uid } },
            "application/merge-patch+json",
          );
        }
      } else if (
        !ref &&
        matches &&
        !object.metadata.deletionTimestamp &&
        !parent.metadata.deletionTimestamp
      ) {
        // Adopt an orphan that matches: Metacontroller then treats it as its own (and deletes it if not desired).
        const refs = [...(object.metadata.ownerReferences ?? []), makeControllerRef(parent)];
        const adopted = await this.write(
          writes,
          `adopt ${info.kind} ${objectKey(object)}`,
          "PATCH",
          objectPath(info, object),
          { metadata: { ownerReferences: refs, uid: object.metadata.uid } },
          "application/merge-patch+json",
        );
        owned.push(withType(adopted.body, info));
      }
    }
    return owned;
  }

  private async relatedObjects(controller: Obj, parent: Obj): Promise<Record<string, Record<string, Obj>>> {
    const related: Record<string, Record<string, Obj>> = {};
    const customize = controller.spec.hooks?.customize;
    if (!customize) return related;
    // Metacontroller caches the customize answer per parent UID and generation.
    const cacheKey = customizeCacheKey(controller, parent);
    let rules = this.customizeCache.get(cacheKey);
    if (!rules) {
      const answer = await this.callHook(customize, { controller, parent }, CUSTOMIZE_RESPONSE);
      rules = (answer.relatedResources ?? []) as Obj[];
      this.customizeCache.set(cacheKey, rules);
    }
    for (const rule of rules) {
      if (rule.names && (rule.labelSelector || rule.namespaceSelector)) {
        throw new Error(
          `customize rule for ${rule.resource}: names cannot be combined with labelSelector or namespaceSelector`,
        );
      }
      if (rule.namespace && rule.namespaceSelector) {
        throw new Error(
          `customize rule for ${rule.resource}: namespace cannot be combined with namespaceSelector`,
        );
      }
      const info = await this.resourceInfo(rule.apiVersion, rule.resource);
      const key = typeKey(info.apiVersion, info.kind);
      related[key] ??= {};
      const namespaces =
        rule.namespaceSelector && info.namespaced
          ? await this.namespacesSelectedBy(rule.namespaceSelector)
          : undefined;
      const objects = (await this.list(info, info.namespaced ? rule.namespace : undefined)).filter((o) =>
        ruleSelects(rule, o, namespaces),
      );
      for (const object of objects) related[key][objectKey(object)] = object;
    }
    return related;
  }

  private async namespacesSelectedBy(selector: LabelSelector): Promise<Set<string>> {
    const namespaces = await this.list(await this.resourceInfo("v1", "namespaces"));
    return new Set(
      namespaces.filter((n) => selectorMatches(selector, n.metadata.labels)).map((n) => n.metadata.name),
    );
  }

  /** The customize answer cached for this parent's generation, if the customize hook was called for it. */
  cachedRelatedRules(controller: Obj, parent: Obj): Obj[] | undefined {
    return this.customizeCache.get(customizeCacheKey(controller, parent));
  }

  /** The CompositeControllers and DecoratorControllers installed. */
  async controllers(): Promise<{ composites: Obj[]; decorators: Obj[] }> {
    return {
      composites: (await this.read(COMPOSITE_API)).items,
      decorators: (await this.read(DECORATOR_API)).items,
    };
  }

  private async updateParentStatus(
    info: ResourceInfo,
    parent: Obj,
    status: Obj,
    writes: string[],
  ): Promise<void> {
    const desired = { ...status, observedGeneration: parent.metadata.generation };
    // AtomicStatusUpdate: an uncached read, the UID checked, written; a conflict reads and tries again
    // (client-go's retry.DefaultBackoff: 4 attempts), after which it is left to the next sync.
    for (let attempt = 0; attempt < 4; attempt++) {
      const live = await this.get(info, parent.metadata.namespace, parent.metadata.name);
      if (!live || live.metadata.uid !== parent.metadata.uid) return;
      if (isDeepStrictEqual(live.status ?? null, desired)) return;
      const written = await this.write(
        writes,
        `status ${info.kind} ${objectKey(live)}`,
        "PUT",
        `${objectPath(info, live)}/status`,
        { ...live, status: desired },
        "application/json",
        [404, 409],
      );
      if (written.status !== 409) return;
    }
  }

  // ---------------------------------------------------------------- DecoratorController

  /** One sync of one target object, as Metacontroller's decoratorController.syncParentObject does it. */
  async syncDecorator(
    controllerName: string,
    apiVersion: string,
    resource: string,
    namespace: string,
    name: string,
    cached?: Obj,
  ): Promise<SyncOutcome> {
    const writes: string[] = [];
    return this.retryingOnConflict(writes, () =>
      this.decoratorSync(writes, controllerName, apiVersion, resource, namespace, name, cached),
    );
  }

  private async retryingOnConflict(writes: string[], sync: () => Promise<SyncOutcome>): Promise<SyncOutcome> {
    try {
      return await sync();
    } catch (error) {
      if (error instanceof ConflictError) return { hook: "none", writes, requeue: true };
      throw error;
    }
  }

  private async decoratorSync(
    writes: string[],
    controllerName: string,
    apiVersion: string,
    resource: string,
    namespace: string,
    name: string,
    cached?: Obj,
  ): Promise<SyncOutcome> {
    const dc = await this.read(`${DECORATOR_API}/${controllerName}`);
    const info = await this.resourceInfo(apiVersion, resource);
    let target = cached ?? (await this.get(info, namespace, name));
    if (!target) return { hook: "none", writes };
    const rule = (dc.spec.resources as Obj[]).find(
      (r) => r.apiVersion === apiVersion && r.resource === resource,
    );
    if (!rule)
      throw new Error(`DecoratorController ${controllerName} does not decorate ${resource}.${apiVersion}`);
    const finalizer = `metacontroller.io/decoratorcontroller-${controllerName}`;
    const hasFinalizeHook = Boolean(dc.spec.hooks?.finalize);
    const matches = () => decoratorMatches(rule, target!);
    if (!matches() && !hasFinalizer(target, finalizer)) return { hook: "none", writes };
    target = await this.syncFinalizer(info, target, finalizer, hasFinalizeHook && matches(), writes);
    if (!matches() && !hasFinalizer(target, finalizer)) return { hook: "none", writes };

    const ruleTypes = new Map<string, { info: ResourceInfo; method: string }>();
    const attachments: Record<string, Record<string, Obj>> = {};
    for (const attachment of dc.spec.attachments ?? []) {
      const attachmentInfo = await this.resourceInfo(attachment.apiVersion, attachment.resource);
      const key = typeKey(attachmentInfo.apiVersion, attachmentInfo.kind);
      ruleTypes.set(key, { info: attachmentInfo, method: attachment.updateStrategy?.method ?? "OnDelete" });
      const all = await this.list(attachmentInfo, target.metadata.namespace);
      attachments[key] = Object.fromEntries(
        all
          .filter(
            (o) =>
              controllerRef(o)?.uid === target.metadata.uid &&
              o.metadata.annotations?.[DECORATOR_ANNOTATION] === controllerName,
          )
          .map((o) => [objectKey(o), o]),
      );
    }
    const related = await this.relatedObjects(dc, target);

    const finalizing = hasFinalizeHook && Boolean(target.metadata.deletionTimestamp || !matches());
    const hook = finalizing ? dc.spec.hooks.finalize : dc.spec.hooks?.sync;
    if (!hook) throw new Error(`DecoratorController ${controllerName} has no sync hook`);
    const response = await this.callHook(
      hook,
      { controller: dc, object: target, attachments, related, finalizing },
      DECORATOR_RESPONSE,
    );

    const updated = structuredClone(target);
    const labels = (updated.metadata.labels ??= {});
    const annotations = (updated.metadata.annotations ??= {});
    const status =
      response.status === null || response.status === undefined ? target.status : response.status;
    const labelsChanged = mergeStringMap(labels, response.labels);
    const annotationsChanged = mergeStringMap(annotations, response.annotations);
    const statusChanged = !isDeepStrictEqual(target.status ?? null, status ?? null);
    const removeFinalizer = response.finalized === true && hasFinalizer(target, finalizer);
    const given = { hook: finalizing ? "finalize" : "sync", writes, response } as const;
    if (labelsChanged || annotationsChanged || statusChanged || removeFinalizer) {
      updated.status = status;
      if (statusChanged && (await this.hasStatusSubresource(info))) {
        const written = await this.write(
          writes,
          `status ${info.kind} ${objectKey(target)}`,
          "PUT",
          `${objectPath(info, target)}/status`,
          updated,
          "application/json",
          [404, 409],
        );
        // A conflict or NotFound ends the sync with no error: attachments are not managed, nothing is requeued.
        if (written.status !== 200) return given;
        updated.metadata.resourceVersion = written.body.metadata.resourceVersion;
      }
      if (removeFinalizer)
        updated.metadata.finalizers = updated.metadata.finalizers.filter((f: string) => f !== finalizer);
      // Metacontroller updates the whole object after a status write too (labels, annotations, finalizer).
      const written = await this.write(
        writes,
        `update ${info.kind} ${objectKey(target)}`,
        "PUT",
        objectPath(info, target),
        updated,
        "application/json",
        [404, 409],
      );
      if (written.status !== 200) return given;
    }

    const desired = this.desiredChildren(
      response.attachments ?? [],
      target,
      ruleTypes,
      `DecoratorController ${controllerName}`,
    );
    for (const child of desired) {
      const childAnnotations = (child.metadata.annotations ??= {});
      childAnnotations[DECORATOR_ANNOTATION] = controllerName;
    }
    if (!target.metadata.deletionTimestamp || shouldFinalize(target, finalizer, hasFinalizeHook)) {
      await this.manageChildren(target, attachments, desired, ruleTypes, writes);
    }
    return given;
  }

  // ---------------------------------------------------------------- children (shared)

  private desiredChildren(list: Obj[], parent: Obj, ruleTypes: Map<string, unknown>, who: string): Obj[] {
    const seen = new Set<string>();
    return list.map((raw) => {
      const child = structuredClone(raw);
      const key = typeKey(child.apiVersion, child.kind);
      if (!ruleTypes.has(key)) {
        throw new Error(
          `${who}: the hook returned a ${key}, which is not a listed child type (Metacontroller would create it and never manage it)`,
        );
      }
      if (parent.metadata.namespace && !child.metadata.namespace)
        child.metadata.namespace = parent.metadata.namespace;
      const id = `${key} ${objectKey(child)}`;
      if (seen.has(id)) throw new Error(`${who}: the hook returned ${id} twice`);
      seen.add(id);
      return child;
    });
  }

  /** common.ManageChildren: delete observed children that are not desired, then create or update desired ones. */
  private async manageChildren(
    parent: Obj,
    observed: Record<string, Record<string, Obj>>,
    desired: Obj[],
    ruleTypes: Map<string, { info: ResourceInfo; method: string }>,
    writes: string[],
  ): Promise<void> {
    const desiredKeys = new Set(desired.map((c) => `${typeKey(c.apiVersion, c.kind)} ${objectKey(c)}`));
    for (const [type, objects] of Object.entries(observed)) {
      const { info } = ruleTypes.get(type)!;
      for (const object of Object.values(objects)) {
        if (object.metadata.deletionTimestamp || desiredKeys.has(`${type} ${objectKey(object)}`)) continue;
        await this.deleteChild(info, object, writes);
      }
    }
    for (const child of desired) {
      const type = typeKey(child.apiVersion, child.kind);
      const { info, method } = ruleTypes.get(type)!;
      const current = observed[type]?.[objectKey(child)];
      if (!current) {
        delete child.metadata.annotations?.[LAST_APPLIED];
        const lastApplied = structuredClone(child);
        (child.metadata.annotations ??= {})[LAST_APPLIED] = goJson(lastApplied);
        child.metadata.ownerReferences = [
          ...(child.metadata.ownerReferences ?? []),
          makeControllerRef(parent),
        ];
        // AlreadyExists (someone else's object of that name) is swallowed, as Metacontroller does.
        await this.write(
          writes,
          `create ${info.kind} ${objectKey(child)}`,
          "POST",
          collectionPath(info, child.metadata.namespace),
          child,
          "application/json",
          [409],
        );
        continue;
      }
      const merged = applyUpdate(current, child);
      if (isDeepStrictEqual(merged, current) || current.metadata.deletionTimestamp) continue;
      switch (method) {
        case "OnDelete":
          break;
        case "Recreate":
        case "RollingRecreate":
          await this.deleteChild(info, current, writes);
          break;
        case "InPlace":
        case "RollingInPlace":
          await this.write(
            writes,
            `update ${info.kind} ${objectKey(current)}`,
            "PUT",
            objectPath(info, current),
            merged,
            "application/json",
            [404, 409],
          );
          break;
        default:
          throw new Error(`invalid update strategy for ${info.kind}: unknown method ${method}`);
      }
    }
  }

  private async deleteChild(info: ResourceInfo, object: Obj, writes: string[]): Promise<void> {
    await this.write(
      writes,
      `delete ${info.kind} ${objectKey(object)}`,
      "DELETE",
      objectPath(info, object),
      {
        apiVersion: "v1",
        kind: "DeleteOptions",
        propagationPolicy: "Background",
        preconditions: { uid: object.metadata.uid },
      },
      "application/json",
      [404],
    );
  }

  // ---------------------------------------------------------------- finalizers

  private async syncFinalizer(
    info: ResourceInfo,
    object: Obj,
    finalizer: string,
    wanted: boolean,
    writes: string[],
  ): Promise<Obj> {
    const present = hasFinalizer(object, finalizer);
    if (wanted && !present && !object.metadata.deletionTimestamp) {
      const finalizers = [...(object.metadata.finalizers ?? []), finalizer];
      const written = await this.write(
        writes,
        `add finalizer ${finalizer} to ${info.kind} ${objectKey(object)}`,
        "PATCH",
        objectPath(info, object),
        { metadata: { finalizers, resourceVersion: object.metadata.resourceVersion } },
        "application/merge-patch+json",
      );
      return withType(written.body, info);
    }
    if (!wanted && present && !object.metadata.deletionTimestamp)
      return this.removeFinalizer(info, object, finalizer, writes);
    return object;
  }

  private async removeFinalizer(
    info: ResourceInfo,
    object: Obj,
    finalizer: string,
    writes: string[],
  ): Promise<Obj> {
    if (!hasFinalizer(object, finalizer)) return object;
    const finalizers = object.metadata.finalizers.filter((f: string) => f !== finalizer);
    const written = await this.write(
      writes,
      `remove finalizer ${finalizer} from ${info.kind} ${objectKey(object)}`,
      "PATCH",
      objectPath(info, object),
      { metadata: { finalizers, resourceVersion: object.metadata.resourceVersion } },
      "application/merge-patch+json",
      [404],
    );
    return written.status === 200 ? withType(written.body, info) : object;
  }

  // ---------------------------------------------------------------- hooks over HTTP

  private async callHook(hook: Obj, request: Obj, allowed: ResponseShape): Promise<Obj> {
    if (hook.version !== "v2")
      throw new Error(
        `this driver speaks hook version v2 only; the controller asks for ${hook.version ?? "v1"}`,
      );
    const webhook = hook.webhook ?? {};
    const path = webhook.url ? new URL(webhook.url).pathname : (webhook.path ?? "/");
    const url = new URL(path, this.hookServer).toString();
    await this.onHookCall(path, request);
    const response = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(request),
      signal: AbortSignal.timeout(parseGoDuration(webhook.timeout) ?? DEFAULT_TIMEOUT_MS),
    });
    const text = await response.text();
    // Only 200 is success; anything else aborts the sync before any write.
    if (response.status !== 200) throw new HookCallError(url, response.status, text);
    const body = JSON.parse(text);
    checkResponse(body, allowed, url);
    return body;
  }

  // ---------------------------------------------------------------- API access

  async resourceInfo(apiVersion: string, resource: string): Promise<ResourceInfo> {
    if (!this.discovery.has(apiVersion)) {
      const path = apiVersion.includes("/") ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
      const list = await this.read(path);
      const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
      this.discovery.set(
        apiVersion,
        (list.resources as Obj[]).map((r) => ({
          apiVersion,
          group: group,
          version: version,
          resource: r.name,
          kind: r.kind,
          namespaced: r.namespaced,
        })),
      );
    }
    const found = this.discovery.get(apiVersion)!.find((r) => r.resource === resource);
    if (!found) throw new Error(`can't find resource ${resource} in apiVersion ${apiVersion}`);
    return found;
  }

  private async hasStatusSubresource(info: ResourceInfo): Promise<boolean> {
    await this.resourceInfo(info.apiVersion, info.resource);
    return this.discovery.get(info.apiVersion)!.some((r) => r.resource === `${info.resource}/status`);
  }

  private async read(path: string): Promise<Obj> {
    const response = await this.cluster.request(this.as, "GET", path);
    if (response.status !== 200)
      throw new Error(`GET ${path} answered ${response.status}: ${JSON.stringify(response.body)}`);
    return response.body;
  }

  private async get(
    info: ResourceInfo,
    namespace: string | undefined,
    name: string,
  ): Promise<Obj | undefined> {
    const response = await this.cluster.request(this.as, "GET", `${collectionPath(info, namespace)}/${name}`);
    if (response.status === 404) return undefined;
    if (response.status !== 200)
      throw new Error(
        `GET ${info.kind} ${namespace}/${name} answered ${response.status}: ${JSON.stringify(response.body)}`,
      );
    return withType(response.body, info);
  }

  async list(info: ResourceInfo, namespace?: string): Promise<Obj[]> {
    const list = await this.read(collectionPath(info, namespace));
    return (list.items as Obj[]).map((item) => withType(item, info));
  }

  private async write(
    writes: string[],
    what: string,
    method: string,
    path: string,
    body: unknown,
    contentType: string,
    tolerated: number[] = [],
  ): Promise<ApiResponse> {
    const response = await this.cluster.request(this.as, method, path, body, contentType);
    if (response.status >= 200 && response.status < 300) {
      writes.push(what);
      return response;
    }
    // A lost race on an existing object (not AlreadyExists on create): the cluster moved on, sync again.
    if (response.status === 409 && method !== "POST") {
      writes.push(`conflict: ${what}`);
      if (tolerated.includes(409)) return response;
      throw new ConflictError(what);
    }
    if (tolerated.includes(response.status)) return response;
    throw new Error(
      `${what}: ${method} ${path} answered ${response.status}: ${JSON.stringify(response.body)}`,
    );
  }
}

// ---------------------------------------------------------------- pure helpers

type ResponseShape = Record<string, "object" | "array" | "number" | "boolean" | "stringMap">;
const COMPOSITE_RESPONSE: ResponseShape = {
  status: "object",
  children: "array",
  resyncAfterSeconds: "number",
  finalized: "boolean",
};
const DECORATOR_RESPONSE: ResponseShape = {
  labels: "stringMap",
  annotations: "stringMap",
  status: "object",
  attachments: "array",
  resyncAfterSeconds: "number",
  finalized: "boolean",
};
const CUSTOMIZE_RESPONSE: ResponseShape = { relatedResources: "array" };

/** v2 hooks are decoded strictly: an unknown field or a wrong type fails the sync. */
function checkResponse(body: unknown, shape: ResponseShape, url: string): void {
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new Error(`hook ${url} answered a non-object`);
  for (const [field, value] of Object.entries(body)) {
    const expected = shape[field];
    if (!expected)
      throw new Error(`hook ${url}: unknown field "${field}" (v2 responses are decoded strictly)`);
    if (value === null) continue;
    const ok =
      expected === "array"
        ? Array.isArray(value)
        : expected === "object"
          ? typeof value === "object" && !Array.isArray(value)
          : expected === "stringMap"
            ? typeof value === "object" &&
              !Array.isArray(value) &&
              Object.values(value).every((v) => v === null || typeof v === "string")
            : typeof value === expected;
    if (!ok)
      throw new Error(
        `hook ${url}: field "${field}" must be ${expected}, got ${JSON.stringify(value).slice(0, 200)}`,
      );
  }
  for (const child of [...((body as Obj).children ?? []), ...((body as Obj).attachments ?? [])] as Obj[]) {
    if (
      typeof child?.apiVersion !== "string" ||
      typeof child?.kind !== "string" ||
      typeof child?.metadata?.name !== "string"
    ) {
      throw new Error(
        `hook ${url}: every child needs apiVersion, kind and metadata.name: ${JSON.stringify(child).slice(0, 200)}`,
      );
    }
  }
}

/** "Kind.group/version", core group "Kind.version". */
export function typeKey(apiVersion: string, kind: string): string {
  return `${kind}.${apiVersion}`;
}

/** v2 object keys: "namespace/name" for namespaced objects, "name" for cluster-scoped ones. */
export function objectKey(object: Obj): string {
  return object.metadata.namespace
    ? `${object.metadata.namespace}/${object.metadata.name}`
    : object.metadata.name;
}

function collectionPath(info: ResourceInfo, namespace?: string): string {
  const base = info.group ? `/apis/${info.apiVersion}` : `/api/${info.apiVersion}`;
  return info.namespaced && namespace
    ? `${base}/namespaces/${namespace}/${info.resource}`
    : `${base}/${info.resource}`;
}

function objectPath(info: ResourceInfo, object: Obj): string {
  return `${collectionPath(info, object.metadata.namespace)}/${object.metadata.name}`;
}

/** Objects from a list carry no apiVersion/kind; client-go's unstructured decoding fills them in. */
function withType(object: Obj, info: ResourceInfo): Obj {
  return { ...object, apiVersion: info.apiVersion, kind: info.kind };
}

export function controllerRef(object: Obj): Obj | undefined {
  return (object.metadata.ownerReferences as Obj[] | undefined)?.find((r) => r.controller === true);
}

function makeControllerRef(parent: Obj): Obj {
  return {
    apiVersion: parent.apiVersion,
    kind: parent.kind,
    name: parent.metadata.name,
    uid: parent.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}

export function hasFinalizer(object: Obj, finalizer: string): boolean {
  return (object.metadata.finalizers ?? []).includes(finalizer);
}

function shouldFinalize(object: Obj, finalizer: string, hasFinalizeHook: boolean): boolean {
  const finalizers: string[] = object.metadata.finalizers ?? [];
  return (
    hasFinalizeHook && finalizers.includes(finalizer) && !finalizers.some((f) => GC_FINALIZERS.includes(f))
  );
}

export function compositeSelector(cc: Obj, parent: Obj): LabelSelector {
  if (cc.spec.generateSelector === true) return { matchLabels: { [CONTROLLER_UID]: parent.metadata.uid } };
  const selector: LabelSelector | undefined = parent.spec?.selector;
  if (
    !selector ||
    (!Object.keys(selector.matchLabels ?? {}).length && !(selector.matchExpressions ?? []).length)
  ) {
    throw new Error(".spec.selector must have either matchLabels, matchExpressions, or both");
  }
  return selector;
}

export function selectorMatches(
  selector: LabelSelector,
  labels: Record<string, string> | undefined = {},
): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    if (labels[key] !== value) return false;
  for (const { key, operator, values = [] } of selector.matchExpressions ?? []) {
    const has = key in labels;
    const ok =
      operator === "In"
        ? has && values.includes(labels[key])
        : operator === "NotIn"
          ? !has || !values.includes(labels[key])
          : operator === "Exists"
            ? has
            : operator === "DoesNotExist"
              ? !has
              : false;
    if (!ok) return false;
  }
  return true;
}

export function decoratorMatches(rule: Obj, object: Obj): boolean {
  if (rule.labelSelector && !selectorMatches(rule.labelSelector, object.metadata.labels)) return false;
  const annotations = rule.annotationSelector;
  if (annotations) {
    const selector: LabelSelector = {
      matchLabels: annotations.matchAnnotations,
      matchExpressions: annotations.matchExpressions,
    };
    if (!selectorMatches(selector, object.metadata.annotations)) return false;
  }
  return true;
}

function customizeCacheKey(controller: Obj, parent: Obj): string {
  return `${controller.metadata.uid}/${parent.metadata.uid}/${parent.metadata.generation}`;
}

/** Whether a customize rule selects an object; `namespaces`: those its namespaceSelector chose. */
export function ruleSelects(rule: Obj, object: Obj, namespaces?: Set<string>): boolean {
  if (rule.namespace && object.metadata.namespace && object.metadata.namespace !== rule.namespace)
    return false;
  if (rule.names && !rule.names.includes(object.metadata.name)) return false;
  if (rule.labelSelector && !selectorMatches(rule.labelSelector, object.metadata.labels)) return false;
  return !namespaces || namespaces.has(object.metadata.namespace);
}

/** updateStringMap: a null value deletes the key. Returns whether anything changed. */
function mergeStringMap(
  target: Record<string, string>,
  updates: Record<string, string | null> | null | undefined,
): boolean {
  let changed = false;
  for (const [key, value] of Object.entries(updates ?? {})) {
    if (value === null) {
      if (key in target) {
        delete target[key];
        changed = true;
      }
    } else if (target[key] !== value) {
      target[key] = value;
      changed = true;
    }
  }
  return changed;
}

function parseGoDuration(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text);
  if (!match) throw new Error(`can't parse webhook timeout ${JSON.stringify(text)}`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[match[2] as "ms" | "s" | "m" | "h"];
  const ms = Number(match[1]) * unit;
  return ms > 0 ? ms : undefined;
}

/** Go's encoding/json of a map: keys sorted, so the same desired object always gives the same annotation. */
function goJson(value: unknown): string {
  const sort = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sort)
      : v && typeof v === "object"
        ? Object.fromEntries(
            Object.keys(v)
              .sort()
              .map((k) => [k, sort((v as Obj)[k])]),
          )
        : v;
  return JSON.stringify(sort(value));
}

const SYSTEM_METADATA = [
  "selfLink",
  "uid",
  "resourceVersion",
  "generation",
  "creationTimestamp",
  "deletionTimestamp",
  "deletionGracePeriodSeconds",
];

/** common.ApplyUpdate: 3-way merge of observed, last applied and desired; system metadata and status reverted. */
export function applyUpdate(observed: Obj, desired: Obj): Obj {
  const lastAppliedText = observed.metadata?.annotations?.[LAST_APPLIED];
  const lastApplied = lastAppliedText ? JSON.parse(lastAppliedText) : undefined;
  const update = structuredClone(desired);
  if (update.metadata?.annotations) delete update.metadata.annotations[LAST_APPLIED];
  const merged = mergeValue(structuredClone(observed), lastApplied, update) as Obj;
  for (const field of SYSTEM_METADATA) revert(merged, observed, ["metadata", field]);
  revert(merged, observed, ["status"]);
  ((merged.metadata ??= {}).annotations ??= {})[LAST_APPLIED] = goJson(update);
  return merged;
}

function revert(target: Obj, source: Obj, path: string[]): void {
  let from: any = source;
  for (const key of path) from = from?.[key];
  let into: any = target;
  for (const key of path.slice(0, -1)) into = into[key] ??= {};
  const last = path.at(-1)!;
  if (from === undefined) delete into[last];
  else into[last] = structuredClone(from);
}

const isObject = (v: unknown): v is Obj => typeof v === "object" && v !== null && !Array.isArray(v);

function mergeValue(destination: unknown, lastApplied: unknown, desired: unknown): unknown {
  if (isObject(destination)) {
    if (desired !== null && desired !== undefined && !isObject(desired))
      throw new Error("desired: expecting an object");
    return mergeObject(destination, isObject(lastApplied) ? lastApplied : undefined, desired ?? undefined);
  }
  if (Array.isArray(destination)) {
    if (desired !== null && desired !== undefined && !Array.isArray(desired))
      throw new Error("desired: expecting an array");
    return mergeArray(
      destination,
      Array.isArray(lastApplied) ? lastApplied : [],
      (desired ?? []) as unknown[],
    );
  }
  return desired;
}

function mergeObject(destination: Obj, lastApplied: Obj | undefined, desired: Obj | undefined): Obj {
  for (const key of Object.keys(lastApplied ?? {}))
    if (!desired || !(key in desired)) delete destination[key];
  for (const [key, value] of Object.entries(desired ?? {}))
    destination[key] = mergeValue(destination[key], lastApplied?.[key], value);
  return destination;
}

const MERGE_KEYS = ["containerPort", "port", "mountPath", "name", "uid", "ip", "path"];

function mergeArray(destination: unknown[], lastApplied: unknown[], desired: unknown[]): unknown[] {
  const key = listMapKey(destination, lastApplied, desired);
  if (!key) return desired;
  const asMap = (list: unknown[]) =>
    Object.fromEntries(list.map((item) => [String((item as Obj)[key]), item]));
  const merged = mergeObject(asMap(destination), asMap(lastApplied), asMap(desired));
  const out: unknown[] = [];
  const added = new Set<string>();
  for (const item of [...destination, ...desired]) {
    const id = String((item as Obj)[key]);
    if (added.has(id) || !(id in merged)) continue;
    out.push(merged[id]);
    added.add(id);
  }
  return out;
}

/** A list is merged as a map when every item is an object and all share a conventional key. */
function listMapKey(...lists: unknown[][]): string | undefined {
  let common: Set<string> | undefined;
  for (const list of lists) {
    for (const item of list) {
      if (!isObject(item)) return undefined;
      const keys = Object.keys(item);
      common = common ? new Set([...common].filter((k) => keys.includes(k))) : new Set(keys);
    }
  }
  return MERGE_KEYS.find((k) => common?.has(k));
}

/**
 * The project's hook server, in this process, on a free loopback port, configured as the test install's (its
 * CHAP key); stopped at the end of the run.
 */
export async function serveHooks(clock: () => Date = () => new Date()): Promise<string> {
  const app = makeApp({
    routes: hookRoutes(TEST_HOOK_CONFIG),
    clock,
    log: createLogger({ level: "silent" }),
  });
  const server = app.listen(0, "127.0.0.1");
  await once(server, "listening");
  onStop(() => new Promise<void>((resolve) => server.close(() => resolve())));
  server.closeIdleConnections();
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
