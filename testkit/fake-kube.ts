// An in-memory API server for the daemon's KubeApi interface, with the semantics the daemon relies on:
// resourceVersions, watch events, merge-patched status (null removes), finalizers that hold a deleted
// object until the last one is removed, Events, and claim annotations. Real-apiserver tests come with
// testkit/kube.ts.
import type { CSPI, CVR } from "../api/types.js";
import type { CoreEvent, EventSource, EventSubject } from "../lib/events/recorder.js";
import type {
  CvrStatusPatch,
  KubeApi,
  NodeLease,
  Scope,
  StatusPatch,
  WatchEventType,
} from "../node-daemon/kube.js";

type Listener = (type: WatchEventType, cspi: CSPI, previous: CSPI | undefined) => void;

/** Equality terms ("a=b,c=d"), the only selectors the daemon sends; anything else is a test's mistake. */
export function matchesSelector(labels: Record<string, string> | undefined, selector?: string): boolean {
  if (!selector) return true;
  return selector.split(",").every((term) => {
    const match = /^([^=!\s]+)=([^=\s]*)$/.exec(term.trim());
    if (!match)
      throw new Error(`the fake apiserver takes equality selectors only, not ${JSON.stringify(term)}`);
    return labels?.[match[1]] === match[2];
  });
}

/**
 * What a watch with this selector is sent for a change from `previous` to `next` (the apiserver's rule): an
 * object that starts to match is ADDED, one that stops is DELETED, one that never matched is not sent.
 */
function selectedEvent<T extends { metadata: { labels?: Record<string, string> } }>(
  type: WatchEventType,
  next: T,
  previous: T | undefined,
  selector?: string,
): WatchEventType | undefined {
  const now = type !== "DELETED" && matchesSelector(next.metadata.labels, selector);
  const before =
    type === "DELETED"
      ? matchesSelector(next.metadata.labels, selector)
      : previous !== undefined && matchesSelector(previous.metadata.labels, selector);
  if (now) return before ? type : "ADDED";
  return before ? "DELETED" : undefined;
}

interface OpenWatch {
  listener: Listener;
  end: (error?: Error) => void;
}

/** One Event write: a creation (count 1) or a repeat counted up on the Event of that name. */
export interface RecordedEvent extends CoreEvent {
  cspi: string;
  host: string;
  name: string;
  count: number;
}

export class FakeKube implements KubeApi {
  private readonly objects = new Map<string, CSPI>();
  private readonly watches = new Set<OpenWatch>();
  /** Lists that fail before one answers again (the apiserver away), and how they fail. */
  failingLists = 0;
  listFailure: () => Error = () => new Error("connect ECONNREFUSED 127.0.0.1:6443");
  lists = 0;
  private version = 1;
  readonly events: RecordedEvent[] = [];
  readonly statusPatches: { name: string; patch: StatusPatch }[] = [];
  readonly claims = new Map<
    string,
    { blockDeviceName: string; cspi: string; annotations: Record<string, string> }
  >();
  /** How often the daemon listed claims: it should not on every pass once they are settled. */
  claimLists = 0;

  get(name: string): CSPI | undefined {
    const found = this.objects.get(name);
    return found && structuredClone(found);
  }

  /** What a user or the hooks do: create or replace the spec/metadata (status is kept). */
  apply(cspi: CSPI): void {
    const existing = this.objects.get(cspi.metadata.name ?? "");
    const next = structuredClone(cspi);
    if (existing?.status) next.status = existing.status;
    this.store(next, existing ? "MODIFIED" : "ADDED");
  }

  /** kubectl delete: sets deletionTimestamp while finalizers remain. */
  delete(name: string): void {
    const existing = this.objects.get(name);
    if (!existing) return;
    if ((existing.metadata.finalizers ?? []).length === 0) return this.remove(name);
    this.store(
      { ...existing, metadata: { ...existing.metadata, deletionTimestamp: new Date().toISOString() } },
      "MODIFIED",
    );
  }

  private store(cspi: CSPI, type: WatchEventType): CSPI {
    const previous = this.objects.get(cspi.metadata.name ?? "");
    cspi.metadata.resourceVersion = String(++this.version);
    this.objects.set(cspi.metadata.name ?? "", cspi);
    for (const watch of this.watches) watch.listener(type, structuredClone(cspi), previous);
    return structuredClone(cspi);
  }

  private remove(name: string): void {
    const existing = this.objects.get(name);
    this.objects.delete(name);
    if (existing)
      for (const watch of this.watches) watch.listener("DELETED", structuredClone(existing), existing);
  }

  async getCspi(namespace: string, name: string) {
    const found = this.objects.get(name);
    return found && found.metadata.namespace === namespace ? structuredClone(found) : undefined;
  }

  private must(namespace: string, name: string): CSPI {
    const found = this.objects.get(name);
    if (!found || found.metadata.namespace !== namespace)
      throw Object.assign(new Error(`cstorpoolinstances ${name} not found`), { code: 404 });
    return found;
  }

  /** Watches open now. */
  get openWatches(): number {
    return this.watches.size;
  }

  /**
   * The apiserver ends every open watch: cleanly (its request timeout) or with an error (a connection lost,
   * 410 Gone). Changes made before the daemon watches again reach it only through its next list.
   */
  endWatches(error?: Error): void {
    for (const watch of [...this.watches]) watch.end(error);
  }

  /** A change no watch delivers (an event lost on the way). */
  applyUnseen(cspi: CSPI): void {
    const watches = [...this.watches];
    this.watches.clear();
    try {
      this.apply(cspi);
    } finally {
      watches.forEach((watch) => this.watches.add(watch));
    }
  }

  async listCspis({ namespace, labelSelector }: Scope) {
    this.lists++;
    if (this.failingLists > 0) {
      this.failingLists--;
      throw this.listFailure();
    }
    return {
      items: [...this.objects.values()]
        .filter(
          (c) => c.metadata.namespace === namespace && matchesSelector(c.metadata.labels, labelSelector),
        )
        .map((c) => structuredClone(c)),
      resourceVersion: String(this.version),
    };
  }

  async watchCspis(
    { namespace, labelSelector }: Scope,
    _resourceVersion: string,
    onEvent: (type: WatchEventType, cspi: CSPI) => void,
  ) {
    let end!: (error?: Error) => void;
    const done = new Promise<void>(
      (resolve, reject) => (end = (error) => (error ? reject(error) : resolve())),
    );
    const watch: OpenWatch = {
      listener: (type, cspi, previous) => {
        const sent = selectedEvent(type, cspi, previous, labelSelector);
        if (cspi.metadata.namespace === namespace && sent) onEvent(sent, cspi);
      },
      end: (error) => {
        this.watches.delete(watch);
        end(error);
      },
    };
    this.watches.add(watch);
    return { stop: () => watch.end(), done };
  }

  async patchCspiStatus(namespace: string, name: string, patch: StatusPatch, resourceVersion?: string) {
    const existing = this.must(namespace, name);
    if (resourceVersion !== undefined && existing.metadata.resourceVersion !== resourceVersion) {
      throw Object.assign(
        new Error(
          `Operation cannot be fulfilled on cstorpoolinstances "${name}": the object has been modified`,
        ),
        { code: 409 },
      );
    }
    this.statusPatches.push({ name, patch: structuredClone(patch) });
    const status: Record<string, unknown> = { ...existing.status };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete status[key];
      else status[key] = value;
    }
    return this.store({ ...existing, status: status }, "MODIFIED");
  }

  async addFinalizer(cspi: CSPI, finalizer: string) {
    const existing = this.must(cspi.metadata.namespace ?? "", cspi.metadata.name ?? "");
    if (
      !existing.metadata.finalizers &&
      existing.metadata.resourceVersion !== cspi.metadata.resourceVersion
    ) {
      throw Object.assign(new Error("test operation failed: resourceVersion changed"), { code: 422 });
    }
    return this.store(
      {
        ...existing,
        metadata: { ...existing.metadata, finalizers: [...(existing.metadata.finalizers ?? []), finalizer] },
      },
      "MODIFIED",
    );
  }

  async removeFinalizer(cspi: CSPI, finalizer: string) {
    const existing = this.objects.get(cspi.metadata.name ?? "");
    if (!existing) return undefined;
    const finalizers = (existing.metadata.finalizers ?? []).filter((f) => f !== finalizer);
    if (finalizers.length === 0 && existing.metadata.deletionTimestamp) {
      this.remove(cspi.metadata.name ?? "");
      return undefined;
    }
    return this.store({ ...existing, metadata: { ...existing.metadata, finalizers } }, "MODIFIED");
  }

  async createEvent(subject: EventSubject, event: CoreEvent, { host }: EventSource) {
    const name = `${subject.metadata.name ?? ""}.${this.events.length + 1}`;
    this.events.push({ ...event, cspi: subject.metadata.name ?? "", host, name, count: 1 });
    return name;
  }

  async repeatEvent(_namespace: string, name: string, repeat: { count: number; message: string }) {
    const first = this.events.find((e) => e.name === name);
    if (!first) throw Object.assign(new Error(`events "${name}" not found`), { code: 404 });
    this.events.push({ ...first, message: repeat.message, count: repeat.count });
  }

  /** CStorVolumeReplicas by name: what a test puts there (the daemon's own changes are status and finalizer). */
  readonly cvrs = new Map<string, CVR>();
  private readonly cvrWatches = new Set<(type: WatchEventType, cvr: CVR) => void>();

  /** What cvc-sync does: create or replace a CVR (status kept). */
  applyCvr(cvr: CVR): void {
    const existing = this.cvrs.get(cvr.metadata.name ?? "");
    const next = structuredClone(cvr);
    if (existing?.status) next.status = existing.status;
    this.storeCvr(next, existing ? "MODIFIED" : "ADDED");
  }

  private storeCvr(cvr: CVR, type: WatchEventType): CVR {
    cvr.metadata.resourceVersion = String(++this.version);
    this.cvrs.set(cvr.metadata.name ?? "", cvr);
    for (const listener of this.cvrWatches) listener(type, structuredClone(cvr));
    return structuredClone(cvr);
  }

  async listCvrs({ namespace, labelSelector }: Scope) {
    return {
      items: [...this.cvrs.values()]
        .filter(
          (c) => c.metadata.namespace === namespace && matchesSelector(c.metadata.labels, labelSelector),
        )
        .map((c) => structuredClone(c)),
      resourceVersion: String(this.version),
    };
  }

  async watchCvrs(
    { namespace }: Scope,
    _resourceVersion: string,
    onEvent: (type: WatchEventType, cvr: CVR) => void,
  ) {
    let end!: () => void;
    const done = new Promise<void>((resolve) => (end = resolve));
    const listener = (type: WatchEventType, cvr: CVR) => {
      if (cvr.metadata.namespace === namespace) onEvent(type, cvr);
    };
    this.cvrWatches.add(listener);
    return {
      stop: () => {
        this.cvrWatches.delete(listener);
        end();
      },
      done,
    };
  }

  async patchCvrStatus(_namespace: string, name: string, patch: CvrStatusPatch) {
    const existing = this.cvrs.get(name);
    if (!existing) throw Object.assign(new Error(`cstorvolumereplicas ${name} not found`), { code: 404 });
    const status: Record<string, unknown> = { ...existing.status };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete status[key];
      else status[key] = value;
    }
    return this.storeCvr({ ...existing, status }, "MODIFIED");
  }

  async removeCvrFinalizer(cvr: CVR, finalizer: string) {
    const existing = this.cvrs.get(cvr.metadata.name ?? "");
    if (!existing) return undefined;
    const finalizers = (existing.metadata.finalizers ?? []).filter((f) => f !== finalizer);
    if (finalizers.length === 0 && existing.metadata.deletionTimestamp) {
      this.cvrs.delete(cvr.metadata.name ?? "");
      for (const listener of this.cvrWatches) listener("DELETED", structuredClone(existing));
      return undefined;
    }
    return this.storeCvr({ ...existing, metadata: { ...existing.metadata, finalizers } }, "MODIFIED");
  }

  async listClaimAnnotations(_namespace: string, cspi: string) {
    this.claimLists++;
    const out: Record<string, Record<string, string>> = {};
    for (const claim of this.claims.values())
      if (claim.cspi === cspi) out[claim.blockDeviceName] = { ...claim.annotations };
    return out;
  }

  async removeClaimAnnotation(_namespace: string, claim: string, annotation: string) {
    const found = this.claims.get(claim);
    if (!found) throw Object.assign(new Error(`blockdeviceclaims ${claim} not found`), { code: 404 });
    delete found.annotations[annotation];
  }

  /** Leases by name, and how often the daemon wrote one (created or renewed). */
  readonly leases = new Map<string, NodeLease>();
  leaseWrites = 0;

  async getLease(namespace: string, name: string) {
    const found = this.leases.get(name);
    return found && found.metadata.namespace === namespace ? structuredClone(found) : undefined;
  }

  async createLease(lease: NodeLease) {
    const name = lease.metadata.name ?? "";
    if (this.leases.has(name))
      throw Object.assign(new Error(`leases "${name}" already exists`), { code: 409 });
    this.leaseWrites++;
    this.leases.set(name, {
      ...structuredClone(lease),
      metadata: { ...lease.metadata, resourceVersion: String(++this.version) },
    });
    return structuredClone(this.leases.get(name)!);
  }

  async renewLease({ metadata, spec }: NodeLease) {
    const found = this.leases.get(metadata.name ?? "");
    if (!found || found.metadata.namespace !== metadata.namespace)
      throw Object.assign(new Error(`leases "${metadata.name ?? ""}" not found`), { code: 404 });
    this.leaseWrites++;
    found.metadata.labels = { ...found.metadata.labels, ...metadata.labels };
    found.spec = { ...found.spec, ...spec };
    found.metadata.resourceVersion = String(++this.version);
    return structuredClone(found);
  }
}
