// The admission verdict for a CStorPoolCluster: a pure function of the request and the cluster facts.
// It runs cspc-sync's own planner (planChildren) on the proposed object, so the webhook refuses exactly what
// the sync hook would refuse, with the same messages: one rule set, never two opinions.
//
// An UPDATE is refused only for problems it introduces: a pool spec that is byte-for-byte what it was is not
// re-judged against the cluster (its node may be down or a disk failed, which is exactly when other pools
// still need editing); its standing problems come back as warnings.
import { ANNOTATION, KIND, LABEL, TYPE_KEY } from "../../api/constants.js";
import type { CSPC, CSPI, KubeObject, PoolSpec } from "../../api/types.js";
import { canonicalJson } from "../canonical.js";
import {
  indexReplicas,
  inventoryOfLists,
  isTerminating,
  type Inventory,
  type ObjectLists,
  type ReplicaIndex,
} from "../inventory.js";
import { checkCspcShape } from "../rules/admission-shape.js";
import { selectorKeyCaseWarnings } from "../rules/admission-warnings.js";
import {
  describeHeld,
  heldPredicate,
  heldVolumes,
  heldVolumesFix,
  type HeldVolumes,
} from "../rules/held-volumes.js";
import type { Violation } from "../rules/pool-spec.js";
import { devicesOf, isMarkedForRemoval } from "../cspc/build.js";
import { planChildren } from "../cspc/sync.js";
import type { SyncFindings } from "../cspc/status.js";
import type { ClusterFacts, FactName, LookupError } from "./lookup.js";
import type { AdmissionRequest, Operation, Verdict } from "./review.js";

export interface AdmissionInput {
  operation: Operation;
  namespace: string;
  name: string;
  /** The proposed CSPC (CREATE, UPDATE). */
  object?: KubeObject | null;
  /** The stored CSPC (UPDATE, DELETE). */
  oldObject?: KubeObject | null;
}

export interface Judgement extends Verdict {
  /** Problems this request introduces: any of them refuses it. */
  violations: Violation[];
}

/** Kubernetes status codes and reasons of a refusal, as `kubectl` prints them ("Error from server (Invalid)"). */
export const REFUSAL = {
  invalid: { code: 422, reason: "Invalid" },
  forbidden: { code: 403, reason: "Forbidden" },
  lookupFailed: { code: 503, reason: "ServiceUnavailable" },
} as const;

/** The apiserver keeps 4 KiB of warnings intact; beyond that it cuts each to 256 characters. */
const MAX_WARNINGS = 12;
const MAX_LISTED = 25;

export function admissionInput(request: AdmissionRequest): AdmissionInput {
  const subject = request.object ?? request.oldObject;
  return {
    operation: request.operation,
    namespace: request.namespace ?? subject?.metadata.namespace ?? "default",
    name: request.name ?? subject?.metadata.name ?? "",
    object: request.object ?? null,
    oldObject: request.oldObject ?? null,
  };
}

export function isCspcReview(request: AdmissionRequest): boolean {
  return request.kind.kind === KIND.cspc;
}

function specOf(obj: KubeObject | null | undefined): unknown {
  return (obj as { spec?: unknown } | null | undefined)?.spec;
}

/** Per review: factsNeeded and judgeCspc both ask, and a 1,000-pool spec takes milliseconds to serialise twice. */
const unchangedSpecs = new WeakMap<AdmissionInput, boolean>();

function specUnchanged(input: AdmissionInput): boolean {
  let unchanged = unchangedSpecs.get(input);
  if (unchanged === undefined) {
    unchanged =
      input.operation === "UPDATE" &&
      canonicalJson(specOf(input.object) ?? null) === canonicalJson(specOf(input.oldObject) ?? null);
    unchangedSpecs.set(input, unchanged);
  }
  return unchanged;
}

/** Which lookups the verdict depends on; none when it can be given from the request alone. */
export function factsNeeded(input: AdmissionInput): FactName[] {
  switch (input.operation) {
    case "DELETE":
      return ["cspis", "replicas"];
    case "CREATE":
    case "UPDATE":
      if (specUnchanged(input) || checkCspcShape(withNamespace(input)).length > 0) return [];
      // CSPIs for a CREATE too: a CSPC re-created under its old name finds its old pools, as cspc-sync will.
      return ["blockDevices", "claims", "nodes", "cspis", "replicas"];
    default:
      return [];
  }
}

export function judgeCspc(input: AdmissionInput, facts: Partial<ClusterFacts>): Judgement {
  switch (input.operation) {
    case "DELETE":
      return judgeDelete(input, facts.cspis ?? [], indexReplicas(facts.replicas ?? []));
    case "CREATE":
    case "UPDATE": {
      if (specUnchanged(input)) return allow([]);
      const shape = checkCspcShape(withNamespace(input));
      if (shape.length > 0) return refuse(input, REFUSAL.invalid, shape, []);
      return judgeSpec(input, facts);
    }
    default:
      return allow([]);
  }
}

/** The review could not be judged: refuse, say which lookup failed and what to check. Never a guess. */
export function lookupFailed(input: AdmissionInput, failure: LookupError): Judgement {
  const message =
    `${subject(input)} was not checked: could not ${failure.attempted}: ${failure.cause}. ` +
    `The request is refused rather than judged on a guess, and nothing was changed: ${failure.hint}`;
  return { allowed: false, status: { ...REFUSAL.lookupFailed, message }, warnings: [], violations: [] };
}

function judgeSpec(input: AdmissionInput, facts: Partial<ClusterFacts>): Judgement {
  const proposed = withNamespace(input) as CSPC;
  const old = input.operation === "UPDATE" ? (input.oldObject as CSPC | null) : null;
  const paused = proposed.metadata.annotations?.[ANNOTATION.reconcilePaused] === "true";
  // Judged as the sync will see it once unpaused: a pause defers a change, it does not make it valid.
  const judged = paused ? unpaused(proposed) : proposed;
  const inventory = inventoryOf(judged, facts);
  const { children, findings } = planChildren(judged, inventory);
  const changed = changedPools(proposed.spec.pools, old?.spec?.pools);
  const { introduced, standing } = attributeRefusals(findings, changed, old?.spec?.pools ?? []);
  const warnings = [
    ...movingPoolWarnings(findings),
    ...(paused
      ? [
          `${ANNOTATION.reconcilePaused} is "true": cspc-sync holds this change until the annotation is removed`,
        ]
      : []),
    ...proposed.spec.pools.flatMap((pool: PoolSpec, i: number) => {
      // A selector that finds no node is refused with the same hint; the warning is for one that does.
      const unresolved = introduced.some((v) => v.pool === i && v.reason === "NodeNotFound");
      return changed[i] && !unresolved ? selectorKeyCaseWarnings(pool, i, facts.nodes ?? []) : [];
    }),
    ...destroyWarnings(children, inventory, findings),
    ...findings.progressing.waiting.map((waiting) => `not carried out yet: ${waiting}`),
    ...standingWarnings(introduced, standing),
  ];
  if (introduced.length > 0) return refuse(input, REFUSAL.invalid, introduced, warnings);
  return allow(warnings);
}

/**
 * The sync's refusals, split into those this edit introduced (about a changed pool, or the CSPC as a whole, or
 * the removal of a pool holding volumes that the stored spec still listed) and those that stand from before.
 */
function attributeRefusals(
  findings: SyncFindings,
  changed: readonly boolean[],
  oldPools: readonly PoolSpec[],
): { introduced: Violation[]; standing: Violation[] } {
  const oldDevices = new Set(devicesOf(oldPools.flatMap((p) => p.raidGroups ?? [])));
  const introduced: Violation[] = [];
  const standing: Violation[] = [];
  for (const v of [...findings.blocked, ...findings.rejected])
    (v.pool < 0 || changed[v.pool] ? introduced : standing).push(v);
  for (const { cspi, held, moving } of findings.removalBlocked) {
    if (moving) continue;
    const removal = removalWithVolumes(cspi, held);
    // Removed by this edit if the stored spec still listed one of its devices; otherwise an old story.
    (devicesOf(cspi.spec?.raidGroups).some((d) => oldDevices.has(d)) ? introduced : standing).push(removal);
  }
  return { introduced, standing };
}

/** Removed pools holding volumes that move their replicas off first. */
function movingPoolWarnings(findings: SyncFindings): string[] {
  return findings.removalBlocked
    .filter(({ moving }) => moving)
    .map(
      ({ cspi, held }) =>
        `spec.pools no longer lists pool ${cspi.metadata.name} (node ${cspi.spec?.hostName}), which ${heldPredicate(held)}: its volumes move their replicas to other pools first, one at a time; the pool is destroyed only once it holds none`,
    );
}

/** Pools this edit marks for removal: cspc-sync will destroy them, unless their volumes are moving off. */
function destroyWarnings(
  children: readonly KubeObject[],
  inventory: Inventory,
  findings: SyncFindings,
): string[] {
  return children.flatMap((child) => {
    const observed = inventory.cspis.get(child.metadata.name ?? "");
    const moving = findings.removalBlocked.some(
      (b) => b.moving && b.cspi.metadata.name === child.metadata.name,
    );
    if (
      child.kind !== KIND.cspi ||
      !observed ||
      moving ||
      !isMarkedForRemoval(child as CSPI) ||
      isMarkedForRemoval(observed)
    )
      return [];
    return [
      `pool ${observed.metadata.name} on node ${observed.spec?.hostName} is no longer in spec.pools: cspc-sync will destroy it and the data on it`,
    ];
  });
}

/** Refusals from before this edit, as warnings; a problem shared with a changed pool (a device this edit listed twice) is this edit's doing. */
function standingWarnings(introduced: readonly Violation[], standing: readonly Violation[]): string[] {
  const madeByThisEdit = new Set(introduced.map((v) => v.message));
  return standing
    .filter((v) => !madeByThisEdit.has(v.message))
    .map((v) => `unchanged by this edit and still refused by cspc-sync: ${v.message}`);
}

function judgeDelete(input: AdmissionInput, cspis: readonly CSPI[], replicas: ReplicaIndex): Judgement {
  const sorted = [...cspis].sort((a, b) => (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""));
  // A pool already on its way out still holds its volumes until it is gone: it counts too.
  const holding = sorted.flatMap((cspi) => {
    const held = heldVolumes(cspi, replicas);
    return held ? [heldWithFix(cspi, held)] : [];
  });
  const live = sorted.filter((c) => !isTerminating(c));
  if (holding.length > 0) {
    const message =
      `${subject(input)} cannot be deleted while its pools hold volumes: ${holding.join("; ")}. ` +
      "Deleting it would destroy those pools and every volume on them: move or delete those volumes first, then delete the CStorPoolCluster";
    return { allowed: false, status: { ...REFUSAL.forbidden, message }, warnings: [], violations: [] };
  }
  if (live.length === 0) return allow([]);
  return allow([
    `deleting ${subject(input)} destroys its pools ${live.map((c) => `${c.metadata.name} (node ${c.spec?.hostName})`).join(", ")} and the data on them`,
  ]);
}

/** What a pool holds and, when its count is unknown, how to settle it (the ValidatingAdmissionPolicy says the same). */
function heldWithFix(cspi: CSPI, held: HeldVolumes): string {
  const unknown = held.replicas.length === 0 && held.reported === undefined;
  return unknown ? `${describeHeld(cspi, held)} (${heldVolumesFix(cspi, held)})` : describeHeld(cspi, held);
}

function removalWithVolumes(cspi: CSPI, held: HeldVolumes): Violation {
  return {
    pool: -1,
    reason: "PoolRemovalWithVolumes",
    message:
      `spec.pools no longer lists pool ${cspi.metadata.name} (node ${cspi.spec?.hostName}), which ${heldPredicate(held)}: ` +
      `removing it would destroy them; put its pool spec back, or ${heldVolumesFix(cspi, held)}`,
  };
}

/** Per new pool: true unless an identical pool spec was in the stored CSPC (order does not matter). */
function changedPools(pools: readonly PoolSpec[], oldPools: readonly PoolSpec[] | undefined): boolean[] {
  if (!oldPools) return pools.map(() => true);
  const remaining = new Map<string, number>();
  for (const p of oldPools) {
    const key = canonicalJson(p);
    remaining.set(key, (remaining.get(key) ?? 0) + 1);
  }
  return pools.map((p) => {
    const key = canonicalJson(p);
    const left = remaining.get(key) ?? 0;
    if (left === 0) return true;
    remaining.set(key, left - 1);
    return false;
  });
}

/** The cluster as cspc-sync would observe it: this CSPC's CSPIs and claims as children, the rest as related. */
export function inventoryOf(cspc: CSPC, facts: Partial<ClusterFacts>): Inventory {
  const namespace = cspc.metadata.namespace!;
  const claims = inRequestOrder(facts.claims);
  const own = claims.filter(
    (c) =>
      c.metadata.labels?.[LABEL.cspc] === cspc.metadata.name &&
      (c.metadata.namespace ?? namespace) === namespace,
  );
  const lists = (byTypeKey: Record<string, readonly KubeObject[]>): ObjectLists =>
    ((typeKey: string) => byTypeKey[typeKey] ?? []) as ObjectLists;
  return inventoryOfLists(
    cspc,
    lists({ [TYPE_KEY.cspi]: inRequestOrder(facts.cspis), [TYPE_KEY.blockDeviceClaim]: own }),
    lists({
      [TYPE_KEY.blockDevice]: inRequestOrder(facts.blockDevices),
      [TYPE_KEY.blockDeviceClaim]: claims,
      [TYPE_KEY.node]: inRequestOrder(facts.nodes),
      [TYPE_KEY.cvr]: inRequestOrder(facts.replicas),
    }),
  );
}

/**
 * Listed objects in the order cspc-sync's request gives them (objectsOf: by namespace/name), so the webhook
 * plans exactly as the sync will. A list names each object once, so no two share a key.
 */
function inRequestOrder(objects: readonly KubeObject[] | undefined): KubeObject[] {
  const keyed = (objects ?? []).map((o) => ({
    key: o.metadata.namespace ? `${o.metadata.namespace}/${o.metadata.name}` : (o.metadata.name ?? ""),
    o,
  }));
  return keyed.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map((k) => k.o);
}

function withNamespace(input: AdmissionInput): KubeObject {
  const obj = input.object as KubeObject;
  if (!obj || typeof obj !== "object" || !obj.metadata || obj.metadata.namespace) return obj;
  return { ...obj, metadata: { ...obj.metadata, namespace: input.namespace } };
}

function unpaused(cspc: CSPC): CSPC {
  const annotations = { ...cspc.metadata.annotations };
  delete annotations[ANNOTATION.reconcilePaused];
  return { ...cspc, metadata: { ...cspc.metadata, annotations } };
}

function subject(input: AdmissionInput): string {
  return `CStorPoolCluster ${input.namespace}/${input.name}`;
}

function allow(warnings: readonly string[]): Judgement {
  return { allowed: true, warnings: [...new Set(warnings)], violations: [] };
}

function refuse(
  input: AdmissionInput,
  refusal: { code: number; reason: string },
  violations: readonly Violation[],
  warnings: readonly string[],
): Judgement {
  const messages = [...new Set(violations.map((v) => v.message))];
  const listed = messages.slice(0, MAX_LISTED);
  const more = messages.length - listed.length;
  const message =
    messages.length === 1
      ? `${subject(input)}: ${messages[0]}`
      : `${subject(input)} has ${messages.length} problems:\n${listed.map((m) => `- ${m}`).join("\n")}` +
        (more > 0 ? `\n- and ${more} more (cstor-pool validate -f <file> lists them all)` : "");
  return {
    allowed: false,
    status: { ...refusal, message },
    warnings: [...new Set(warnings)],
    violations: [...violations],
  };
}

/** Warnings as the API server passes them on: one line each, a bounded number (the CLI prints them all). */
export function capWarnings(warnings: readonly string[]): string[] {
  const unique = [...new Set(warnings.map((w) => w.replace(/\s*\n\s*/g, " ")))];
  if (unique.length <= MAX_WARNINGS) return unique;
  return [
    ...unique.slice(0, MAX_WARNINGS - 1),
    `and ${unique.length - MAX_WARNINGS + 1} more warnings (cstor-pool validate -f <file> lists them all)`,
  ];
}
