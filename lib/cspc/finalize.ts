// POST /hooks/cspc-finalize (CompositeController finalize): the CSPC is being deleted. Teardown runs in
// the order the node daemon needs, one observed step at a time, and is idempotent:
//   1. every CSPI is marked openebs.io/pool-removal=requested (the node daemon may destroy its pool);
//   2. marked CSPIs are omitted, so Metacontroller deletes them; each stays until its pool is destroyed;
//   3. once no CSPI is observed, the BlockDeviceClaims are omitted and NDM releases the devices;
//   4. finalized: true once neither a CSPI nor a claim is observed.
// PVCs of device sets are kept throughout, with their Namespace as second owner, so they outlive the CSPC; those
// whose set says claimRetention: Delete go with the claims, once no CSPI is left (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md).
// A pool that holds volumes, or may (lib/rules/held-volumes.ts), stops all of it: every CSPI and claim is
// kept, that pool loses its removal mark, and the status names the pool.
import { KIND, TYPE_KEY } from "../../api/constants.js";
import type {
  BlockDeviceClaim,
  Clock,
  CompositeSyncRequest,
  CompositeSyncResponse,
  Condition,
  CSPC,
  CSPCStatus,
  CSPI,
  KubeObject,
} from "../../api/types.js";
import { mergeConditions, nextCondition, phaseWithTime, type ConditionInput } from "../conditions.js";
import { buildInventory, isTerminating, type Inventory } from "../inventory.js";
import { objectsOf } from "../request.js";
import type { HookConfig } from "../hook-config.js";
import { describeHeld, heldVolumes, heldVolumesFix } from "../rules/held-volumes.js";
import {
  claimObject,
  devicesOf,
  isMarkedForRemoval,
  markedForRemoval,
  ownedView,
  withoutRemovalMark,
} from "./build.js";
import {
  CSPC_CONDITION,
  destroyRefusedPools,
  destroyRefusedText,
  isCspiHealthy,
  joinMessages,
  type RemovalBlocked,
} from "./status.js";
import { hasUnreadableChild, heldChildren, unreadableCondition } from "./unreadable.js";
import { goesWithPool, pvcsAsObserved } from "./device-sets.js";

/** Written only while the CSPC is being deleted: which teardown step it is in and what it waits for. */
export const DELETING_CONDITION = "Deleting";

export function answerCspcFinalize(
  request: CompositeSyncRequest<CSPC>,
  clock: Clock,
  config: HookConfig,
): CompositeSyncResponse {
  const inventory = buildInventory(request.parent, request.children, request.related, request.unreadable);
  const claims = objectsOf(request.children, TYPE_KEY.blockDeviceClaim);
  const teardown = planTeardown(inventory, claims);
  const unreadable = request.unreadable ?? [];
  // A child the hook cannot read still exists: it is kept, and the CSPC waits for it to be fixed.
  const finalized =
    inventory.cspis.size === 0 && teardown.releasing.length === 0 && !hasUnreadableChild(unreadable);
  const response: CompositeSyncResponse = {
    status: teardownStatus(request, inventory, teardown, clock()),
    children: hasUnreadableChild(unreadable)
      ? heldChildren(request.children, unreadable, (device, cspi) => claimObject(device, inventory, { cspi }))
      : [
          ...teardown.children,
          ...pvcsAsObserved(inventory, (pvc) => !goesWithPool(pvc) || inventory.cspis.size > 0),
        ],
    finalized,
  };
  if (!finalized) response.resyncAfterSeconds = config.resyncSeconds;
  return response;
}

interface Teardown {
  children: KubeObject[];
  /** CSPIs whose pools hold volumes, or may: nothing is removed while there is one. */
  holdingVolumes: RemovalBlocked[];
  markedNow: string[];
  removedNow: string[];
  /** Deleted, waiting for their finalizers (the node daemon destroying the pool, the pool Deployment going). */
  terminating: CSPI[];
  /** The BlockDeviceClaims, and the PVCs of device sets that go with their pools. */
  releasing: KubeObject[];
}

function planTeardown(inventory: Inventory, claims: readonly BlockDeviceClaim[]): Teardown {
  const cspis = [...inventory.cspis.values()];
  const holdingVolumes = cspis.flatMap((cspi) => {
    const held = heldVolumes(cspi, inventory.replicas);
    return held ? [{ cspi, held }] : [];
  });
  const holding = new Set(holdingVolumes.map((h) => h.cspi.metadata.name));
  const live = cspis.filter((c) => !isTerminating(c));
  const teardown: Teardown = {
    children: [],
    holdingVolumes,
    markedNow: [],
    removedNow: [],
    terminating: cspis.filter((c) => isTerminating(c)),
    releasing: [...claims, ...[...inventory.pvcs.values()].filter(goesWithPool)],
  };

  for (const cspi of live) {
    const name = cspi.metadata.name!;
    if (holding.has(name)) teardown.children.push(withoutRemovalMark(cspi));
    else if (holding.size > 0) teardown.children.push(ownedView(cspi));
    else if (!isMarkedForRemoval(cspi)) {
      teardown.children.push(markedForRemoval(cspi));
      teardown.markedNow.push(name);
    } else teardown.removedNow.push(name);
  }

  // Claims outlive every CSPI: a pool being destroyed still sits on its devices, and NDM must not hand them
  // to anyone else before that. A claim deleted by hand comes back for the same reason.
  if (cspis.length > 0) {
    const kept: KubeObject[] = [];
    const observed = new Set<string>();
    for (const claim of claims) {
      if (isTerminating(claim)) continue;
      kept.push(ownedView(claim));
      if (claim.spec?.blockDeviceName) observed.add(claim.spec.blockDeviceName);
    }
    for (const cspi of cspis) {
      for (const device of devicesOf(cspi.spec?.raidGroups)) {
        if (observed.has(device) || inventory.setDevices.has(device)) continue;
        observed.add(device);
        kept.push(claimObject(device, inventory, { cspi: cspi.metadata.name! }));
      }
    }
    teardown.children.push(
      ...kept.sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? "")),
    );
  }
  return teardown;
}

function teardownStatus(
  request: CompositeSyncRequest<CSPC>,
  inventory: Inventory,
  teardown: Teardown,
  now: Date,
): CSPCStatus {
  const cspc = request.parent;
  const cspis = [...inventory.cspis.values()];
  const where = `CStorPoolCluster ${inventory.namespace}/${inventory.cspcName}`;
  const blocked = [
    ...teardown.holdingVolumes.map(
      ({ cspi, held }) =>
        `${describeHeld(cspi, held)}: ${heldVolumesFix(cspi, held)}; deletion continues by itself once no pool holds volumes`,
    ),
    ...destroyRefusedPools(teardown.terminating).map(destroyRefusedText),
  ];
  const removal: ConditionInput =
    blocked.length > 0
      ? {
          type: CSPC_CONDITION.removalBlocked,
          status: "True",
          reason: "PoolHoldsVolumes",
          message: `${where} is being deleted, but ${joinMessages(blocked)}`,
        }
      : {
          type: CSPC_CONDITION.removalBlocked,
          status: "False",
          reason: "NoneBlocked",
          message: "no pool holds volumes",
        };

  const deleting = deletingCondition(teardown, teardown.holdingVolumes.length > 0);
  const ready: ConditionInput = {
    type: CSPC_CONDITION.ready,
    status: "False",
    reason: blocked.length > 0 ? "PoolHoldsVolumes" : deleting.reason,
    message: blocked.length > 0 ? removal.message : `${where} is being deleted: ${deleting.message}`,
  };
  const generation = cspc.metadata.generation;
  const previous = cspc.status?.conditions;
  const unreadable = unreadableCondition(request.unreadable ?? [], joinMessages);
  const updates: Condition[] = [removal, deleting, ready, unreadable].map((input) =>
    nextCondition(previous, input, now, generation),
  );
  const status: CSPCStatus = {
    desiredInstances: cspc.spec?.pools?.length ?? 0,
    provisionedInstances: cspis.length,
    healthyInstances: cspis.filter(isCspiHealthy).length,
    conditions: mergeConditions(previous, updates),
    ...phaseWithTime(cspc.status, "Deleting", now),
  };
  if (generation !== undefined) status.observedGeneration = generation;
  return status;
}

function deletingCondition(teardown: Teardown, blocked: boolean): ConditionInput {
  const claims = teardown.releasing;
  const type = DELETING_CONDITION;
  if (blocked) {
    return {
      type,
      status: "True",
      reason: "BlockedByVolumes",
      message: "no pool or claim is removed while a pool holds volumes (see PoolRemovalBlocked)",
    };
  }
  const waiting = teardown.terminating.map((c) => {
    const finalizers = (c.metadata.finalizers ?? []).slice().sort();
    const on = `${c.metadata.name} on ${c.spec?.hostName ?? "unknown node"}`;
    return finalizers.length > 0 ? `${on} (finalizers ${finalizers.join(", ")})` : on;
  });
  const steps = [
    teardown.markedNow.length
      ? `marking pools for removal (openebs.io/pool-removal=requested): ${nameList(teardown.markedNow)}`
      : "",
    teardown.removedNow.length ? `deleting pools: ${nameList(teardown.removedNow)}` : "",
    waiting.length ? `waiting for deleted pools to be destroyed on their nodes: ${nameList(waiting)}` : "",
  ].filter(Boolean);
  if (steps.length > 0) return { type, status: "True", reason: "RemovingPools", message: steps.join("; ") };
  const names = claims.map((c) => c.metadata.name ?? "").sort();
  if (names.length > 0) {
    const what = claims.some((c) => c.kind !== KIND.blockDeviceClaim)
      ? "BlockDeviceClaims and the PVCs of device sets with claimRetention: Delete"
      : "BlockDeviceClaims";
    return {
      type,
      status: "True",
      reason: "ReleasingClaims",
      message: `releasing ${what} (no pool is left): ${nameList(names)}`,
    };
  }
  return { type, status: "True", reason: "Finalized", message: "every pool and BlockDeviceClaim is gone" };
}

const LISTED_NAMES = 20;

/** A readable list for a condition message: a CSPC of 1,000 pools must not produce a 30 kB message. */
function nameList(names: readonly string[]): string {
  const shown = names.slice(0, LISTED_NAMES).join(", ");
  return names.length > LISTED_NAMES ? `${shown} and ${names.length - LISTED_NAMES} more` : shown;
}
