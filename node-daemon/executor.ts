// The executor: carries out one planned action on the host (zpool/zfs) or on the API (finalizer, claim).
import type { CSPI } from "../api/types.js";
import type { ZfsHost } from "../zfs/host.js";
import type { Action } from "./planner.js";

/** What the executor needs from the API side; absent in local mode. */
export interface ApiActions {
  /** Returns the CSPI as the API server has it afterwards. */
  addFinalizer(cspi: CSPI): Promise<CSPI>;
  /** Returns the CSPI afterwards, or undefined when removing the last finalizer let it go. */
  removeFinalizer(cspi: CSPI): Promise<CSPI | undefined>;
  clearPredecessor(namespace: string, claim: string): Promise<void>;
  /** The pool no longer has the claim's device: removes the claim's removal mark. */
  confirmRemoval(namespace: string, claim: string): Promise<void>;
}

/** Runs one action; returns the CSPI afterwards (changed only by finalizer actions; undefined once deleted). */
export async function execute(
  action: Action,
  cspi: CSPI,
  host: ZfsHost,
  api?: ApiActions,
): Promise<CSPI | undefined> {
  switch (action.kind) {
    case "add-finalizer":
      return requireApi(api, action).addFinalizer(cspi);
    case "remove-finalizer":
      return requireApi(api, action).removeFinalizer(cspi);
    case "clear-predecessor":
      await requireApi(api, action).clearPredecessor(cspi.metadata.namespace ?? "", action.claim);
      return cspi;
    case "confirm-removal":
      await requireApi(api, action).confirmRemoval(cspi.metadata.namespace ?? "", action.claim);
      return cspi;
    default:
      await executeOnHost(action, host);
      return cspi;
  }
}

async function executeOnHost(action: Action, host: ZfsHost): Promise<void> {
  switch (action.kind) {
    case "import":
      return host.import(action);
    case "create":
      return host.create(action.pool, action.vdevs, action);
    case "add":
      return host.add(action.pool, action.vdevs, action.force);
    case "replace":
      return host.replace(action.pool, action.old, action.newDevice);
    case "remove":
      return host.remove(action.pool, action.device);
    case "grow":
      return host.grow(action.pool, action.devices);
    case "scrub":
      return host.scrub(action.pool);
    case "set-pool-property":
      return host.setPoolProperty(action.pool, action.property, action.value);
    case "set-dataset-property":
      return host.setDatasetProperty(action.dataset, action.property, action.value);
    case "export":
      return host.export(action.pool);
    case "destroy": {
      await host.destroy(action.pool);
      for (const device of action.clearLabels) await host.clearLabel(device);
      return;
    }
    default:
      throw new Error(`${action.kind} is not a host action`);
  }
}

function requireApi(api: ApiActions | undefined, action: Action): ApiActions {
  if (!api) throw new Error(`${action.kind} needs the Kubernetes API, which local mode does not have`);
  return api;
}

/** Event reasons per action: Normal on success, Warning on failure. */
export const EVENT_REASONS: Record<Action["kind"], { done: string; failed: string }> = {
  "add-finalizer": { done: "FinalizerAdded", failed: "FinalizerFailed" },
  "remove-finalizer": { done: "FinalizerRemoved", failed: "FinalizerFailed" },
  "clear-predecessor": { done: "ReplacementCompleted", failed: "ReplacementCleanupFailed" },
  "confirm-removal": { done: "RemovalCompleted", failed: "RemovalCleanupFailed" },
  import: { done: "PoolImported", failed: "ImportFailed" },
  create: { done: "PoolCreated", failed: "PoolCreateFailed" },
  add: { done: "PoolExpanded", failed: "PoolExpansionFailed" },
  replace: { done: "BlockDeviceReplacement", failed: "BlockDeviceReplacementFailed" },
  remove: { done: "DeviceRemoved", failed: "DeviceRemoveFailed" },
  grow: { done: "PoolGrown", failed: "PoolGrowFailed" },
  scrub: { done: "ScrubStarted", failed: "ScrubFailed" },
  "set-pool-property": { done: "PoolPropertySet", failed: "PoolPropertyFailed" },
  "set-dataset-property": { done: "PoolPropertySet", failed: "PoolPropertyFailed" },
  export: { done: "PoolExported", failed: "ExportFailed" },
  destroy: { done: "PoolDestroyed", failed: "DestroyFailed" },
};

/** One line a user reads in `kubectl describe cspi`. */
export function describeAction(action: Action): string {
  const devices = action.blockDevices?.length ? ` [${action.blockDevices.join(", ")}]` : "";
  switch (action.kind) {
    case "add-finalizer":
    case "remove-finalizer":
      return `${action.kind === "add-finalizer" ? "added" : "removed"} finalizer openebs.io/pool-protection`;
    case "clear-predecessor":
      return `replacement of${devices} completed: removed openebs.io/bd-predecessor from claim ${action.claim}`;
    case "confirm-removal":
      return `removal of${devices} from the pool completed: removed openebs.io/bd-removal from claim ${action.claim}, which cspc-sync now releases`;
    case "import":
      return `imported pool ${action.pool}${action.renamedFrom ? ` (until now ${action.renamedFrom})` : ""}${action.force ? " (forced)" : ""} from ${action.from.cachefile ? `cachefile ${action.from.cachefile}` : `a scan of ${action.from.dirs?.join(", ")}`}`;
    case "create":
      return `created pool ${action.pool} with${devices}`;
    case "add":
      return `expanded pool ${action.pool} by adding${devices} (${action.vdevs.map((v) => `${v.role} ${v.type}`).join(", ")})`;
    case "replace":
      return `replacing ${action.oldDevice} with ${action.newDevice}${devices} in pool ${action.pool}; resilver started`;
    case "remove":
      return `removed ${action.device} from pool ${action.pool}`;
    case "grow":
      return `expanded ${action.devices.join(", ")} of pool ${action.pool} to the devices' new size`;
    case "scrub":
      return `started a scrub of pool ${action.pool}: poolConfig.scrub.interval is ${action.interval} and ${action.lastEnd ? `the last scrub ended at ${action.lastEnd}` : "no scrub of the pool is known"}`;
    case "set-pool-property":
      return `set ${action.property}=${action.value} on pool ${action.pool}`;
    case "set-dataset-property":
      return `set ${action.property}=${action.value} on ${action.dataset}`;
    case "export":
      return `exported pool ${action.pool}; data kept on the devices`;
    case "destroy":
      return `destroyed pool ${action.pool} and cleared the labels of ${action.clearLabels.join(", ")}`;
  }
}
