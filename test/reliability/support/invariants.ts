// What every hook answer must respect, whatever the request was. Each check returns the broken promises as
// sentences (empty = fine), so a fuzz failure reads like a bug report.
import {
  ANNOTATION,
  LABEL,
  POOL_REMOVAL_REQUESTED,
  REPLICA_LOST_CONFIRM,
  TYPE_KEY,
} from "../../../api/constants.js";
import { CV_PHASES } from "../../../api/volume-schema.js";
import { canonicalize } from "../../../lib/canonical.js";
import { hasEveryFieldOf } from "../../../lib/cspi/deployment.js";

type Obj = Record<string, unknown>;

function isRecord(value: unknown): value is Obj {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function field(value: unknown, ...path: string[]): unknown {
  let cur = value;
  for (const step of path) cur = isRecord(cur) ? cur[step] : undefined;
  return cur;
}

/** The objects of one type in a request's object map, as the hook would see them (records with metadata). */
function observed(map: unknown, typeKey: string): Obj[] {
  const objects = field(map, typeKey);
  if (!isRecord(objects)) return [];
  return Object.values(objects).filter((o): o is Obj => isRecord(o) && isRecord(o.metadata));
}

function nameOf(obj: unknown): string | undefined {
  const name = field(obj, "metadata", "name");
  return typeof name === "string" ? name : undefined;
}

function isTerminating(obj: Obj): boolean {
  return Boolean(field(obj, "metadata", "deletionTimestamp"));
}

function isMarked(obj: Obj): boolean {
  return field(obj, "metadata", "annotations", ANNOTATION.poolRemoval) === POOL_REMOVAL_REQUESTED;
}

/** Device names per raid group, or undefined when the CSPI's spec is not a list of groups of named devices. */
function devicesByGroup(cspi: unknown): string[][] | undefined {
  const groups = field(cspi, "spec", "raidGroups");
  if (!Array.isArray(groups)) return undefined;
  const out: string[][] = [];
  for (const group of groups) {
    const devices = field(group, "blockDevices");
    if (!Array.isArray(devices)) return undefined;
    const names = devices.map((d) => field(d, "blockDeviceName"));
    if (!names.every((n): n is string => typeof n === "string" && n !== "")) return undefined;
    out.push(names);
  }
  return out;
}

function children(response: unknown, kind: string): Obj[] {
  const list = field(response, "children");
  return Array.isArray(list) ? list.filter((c): c is Obj => isRecord(c) && c.kind === kind) : [];
}

/** Nothing in a hook answer is null: Metacontroller's strict v2 decoding and SSA both trip on nulls. */
export function nullsIn(value: unknown, path = "$"): string[] {
  if (value === null) return [`${path} is null`];
  if (Array.isArray(value)) return value.flatMap((v, i) => nullsIn(v, `${path}[${i}]`));
  if (isRecord(value)) return Object.entries(value).flatMap(([k, v]) => nullsIn(v, `${path}.${k}`));
  return [];
}

/**
 * A parent's children after a sync or finalize: no observed CSPI disappears unless it was already marked for
 * removal (or is already being deleted), no device leaves a CSPI except through a replacement whose successor
 * sits in the same group, or as a spare or read cache device whose claim is kept with the removal mark (the
 * node daemon confirms `zpool remove` before the claim goes), every device of every observed CSPI keeps
 * its claim (its BlockDeviceClaim, or its PVC for a pool on device sets), and at most one CSPI carries a
 * rollout permit, for the template hash its CSPI reports pending.
 */
export function compositeChildrenProblems(request: unknown, response: unknown): string[] {
  const problems: string[] = [];
  const permitted = children(response, "CStorPoolInstance").filter(
    (c) => field(c, "metadata", "annotations", ANNOTATION.rolloutPermit) !== undefined,
  );
  if (permitted.length > 1)
    problems.push(
      `${permitted.length} CSPIs carry a rollout permit (${permitted.map(nameOf).join(", ")}), want at most 1`,
    );
  const observedCspis = observed(field(request, "children"), TYPE_KEY.cspi);
  const returned = new Map(children(response, "CStorPoolInstance").map((c) => [nameOf(c), c]));
  const claims = children(response, "BlockDeviceClaim");
  const claimed = new Set(claims.map((c) => field(c, "spec", "blockDeviceName")));
  // A device set's PVC is its device's claim (docs/adr/0033-pools-on-pvcs-device-sets-lowered-to-raid-groups.md): an observed one is never dropped, and a
  // missing one is never made again (a new PVC would bind another PV, without the pool's data).
  const observedPvcs = new Set(observed(field(request, "children"), "PersistentVolumeClaim.v1").map(nameOf));
  for (const name of children(response, "PersistentVolumeClaim").map(nameOf)) claimed.add(name);
  const successorOf = new Map<unknown, string>();
  const removing = new Set(
    claims
      .filter((c) => typeof field(c, "metadata", "annotations", ANNOTATION.bdRemoval) === "string")
      .map((c) => field(c, "spec", "blockDeviceName")),
  );
  for (const c of claims) {
    const predecessor = field(c, "metadata", "annotations", ANNOTATION.bdPredecessor);
    const successor = field(c, "spec", "blockDeviceName");
    if (predecessor && typeof successor === "string") successorOf.set(predecessor, successor);
  }

  for (const cspi of observedCspis) {
    const name = nameOf(cspi);
    if (name === undefined) continue;
    const before = devicesByGroup(cspi);
    for (const device of before?.flat() ?? []) {
      const onSets = field(cspi, "metadata", "labels", "openebs.io/on-device-sets") === "true";
      if (!claimed.has(device) && (!onSets || observedPvcs.has(device)))
        problems.push(`claim of device ${device} of observed CSPI ${name} is missing`);
    }
    const now = returned.get(name);
    const permit = field(now, "metadata", "annotations", ANNOTATION.rolloutPermit);
    if (permit !== undefined && permit !== field(cspi, "status", "pendingRollout")) {
      problems.push(
        `CSPI ${name} got rollout permit ${JSON.stringify(permit)} for a template it does not report pending`,
      );
    }
    if (!now) {
      if (!isMarked(cspi) && !isTerminating(cspi))
        problems.push(`observed CSPI ${name} was dropped without being marked for removal`);
      continue;
    }
    const after = devicesByGroup(now) ?? [];
    const groups = field(cspi, "spec", "raidGroups") as unknown[];
    const holdsNoData = (g: number): boolean =>
      field(groups[g], "isSpare") === true || field(groups[g], "isReadCache") === true;
    before?.forEach((devices, g) => {
      // The group as it is now: the one that kept any of its devices (a group emptied by a removal before it
      // shifts the later groups' indexes), else the same index.
      const kept = after.findIndex((group) => devices.some((d) => group.includes(d)));
      const current = after[kept >= 0 ? kept : g];
      for (const device of devices) {
        if (
          current?.includes(device) ||
          (holdsNoData(g) && removing.has(device) && !after.flat().includes(device))
        )
          continue;
        const successor = successorOf.get(device);
        if (successor === undefined)
          problems.push(`device ${device} left raidGroups[${g}] of CSPI ${name} without a replacement`);
        else if (!current?.includes(successor))
          problems.push(
            `device ${device} of CSPI ${name} was replaced by ${successor}, which is not in its group`,
          );
      }
    });
  }
  return problems;
}

/**
 * cspc-finalize: nothing is removed while a pool holds volumes, and finalized only once nothing is left. A pool
 * holds volumes unless its node daemon reported 0 replicas and no CStorVolumeReplica names it (fail closed).
 */
export function finalizeCspcProblems(request: unknown, response: unknown): string[] {
  const problems = compositeChildrenProblems(request, response);
  const cspis = observed(field(request, "children"), TYPE_KEY.cspi);
  const claims = observed(field(request, "children"), TYPE_KEY.blockDeviceClaim);
  const named = new Set(
    observed(field(request, "related"), TYPE_KEY.cvr).map((r) =>
      field(r, "metadata", "labels", LABEL.replicaPool),
    ),
  );
  const holding = cspis.some((c) => field(c, "status", "provisionedReplicas") !== 0 || named.has(nameOf(c)));
  const returned = new Set(children(response, "CStorPoolInstance").map(nameOf));
  if (holding) {
    for (const c of cspis) {
      if (!isTerminating(c) && !returned.has(nameOf(c)))
        problems.push(`CSPI ${nameOf(c)} was removed while a pool holds volumes`);
    }
  }
  if (field(response, "finalized") === true && (cspis.length > 0 || claims.length > 0)) {
    problems.push(`finalized with ${cspis.length} CSPI(s) and ${claims.length} claim(s) still observed`);
  }
  return problems;
}

/**
 * cspi-sync: a live CSPI always gets its one pool Deployment back (omitting it would delete the pool pod), and
 * an available pool pod keeps its template unless the CSPI carries a rollout permit or the pool moved to
 * another node.
 */
export function cspiSyncProblems(request: unknown, response: unknown): string[] {
  if (field(request, "finalizing") === true) return cspiFinalizeProblems(request, response);
  const attachments = field(response, "attachments");
  const deployments = Array.isArray(attachments)
    ? attachments.filter((a) => field(a, "kind") === "Deployment")
    : [];
  if (deployments.length !== 1) return [`answer has ${deployments.length} pool Deployments, want exactly 1`];
  const running = observed(field(request, "attachments"), TYPE_KEY.deployment).find(
    (d) => nameOf(d) === nameOf(deployments[0]),
  );
  const permit = field(request, "object", "metadata", "annotations", ANNOTATION.rolloutPermit);
  if (!running || isTerminating(running) || permit !== undefined || !isAvailable(running)) return [];
  // A pool moved to another node: its pod leaves the old node without a permit (ADR 43).
  const node = (d: unknown) => field(d, "spec", "template", "spec", "nodeSelector", LABEL.hostname);
  if (typeof node(running) === "string" && node(running) !== node(deployments[0])) return [];
  // As a hook answer carries it: without nulls (a null list item too), which the server never stores.
  const before = canonicalize(field(running, "spec", "template"));
  return hasEveryFieldOf(before, field(deployments[0], "spec", "template"))
    ? []
    : [`the available pool pod of ${nameOf(running)} got a new template without a rollout permit`];
}

function isAvailable(deployment: Obj): boolean {
  const count = (...path: string[]) => {
    const value = field(deployment, "status", ...path);
    return typeof value === "number" ? value : 0;
  };
  const generation = field(deployment, "metadata", "generation");
  return (
    count("availableReplicas") >= 1 &&
    count("updatedReplicas") >= 1 &&
    count("observedGeneration") >= (typeof generation === "number" ? generation : 0)
  );
}

/** cspi-finalize: finalized only once Metacontroller observes no attachment. */
export function cspiFinalizeProblems(request: unknown, response: unknown): string[] {
  const attachments = field(request, "attachments");
  const remaining = isRecord(attachments)
    ? Object.values(attachments).reduce<number>(
        (n, objects) => n + (isRecord(objects) ? Object.keys(objects).length : 0),
        0,
      )
    : 0;
  return field(response, "finalized") === true && remaining > 0
    ? [`finalized while ${remaining} attachment(s) are observed`]
    : [];
}

export function customizeProblems(_request: unknown, response: unknown): string[] {
  const related = field(response, "relatedResources");
  return Array.isArray(related) && related.length > 0 ? [] : ["customize answer has no relatedResources"];
}

/**
 * cvc-sync: an observed replica is dropped (Metacontroller deletes it and its data) only when it is already
 * being deleted, declared lost (openebs.io/replica-lost=confirm) and not reported Healthy, or removed by a
 * scale-down or a move (docs/adr/0027-volume-day-2-a-new-replica-is-rebuilding.md): then one at most, never a replica made by hand under another name, and
 * only while every replica that stays exists, is Healthy and caught up, and they are at least replicaCount.
 * No new replica goes to a pool that already holds one of the volume.
 */
export function cvcSyncProblems(request: unknown, response: unknown): string[] {
  if (field(request, "finalizing") === true) return cvcFinalizeProblems(request, response);
  const problems: string[] = [];
  const returned = children(response, "CStorVolumeReplica");
  const names = new Set(returned.map(nameOf));
  const volume = field(request, "parent", "metadata", "name");
  const poolOf = (c: Obj): unknown => field(c, "metadata", "labels", LABEL.replicaPool);
  const annotation = (c: Obj, key: string): unknown => field(c, "metadata", "annotations", key);
  const healthy = (c: Obj): boolean => field(c, "status", "phase") === "Healthy";
  const caughtUp = (c: Obj): boolean =>
    healthy(c) &&
    (annotation(c, ANNOTATION.rebuildingSince) === undefined ||
      annotation(c, ANNOTATION.replicaCaughtUp) === "true");
  const observedReplicas = observed(field(request, "children"), TYPE_KEY.cvr);
  const removed = observedReplicas.filter((cvr) => {
    if (names.has(nameOf(cvr)) || field(cvr, "metadata", "deletionTimestamp") !== undefined) return false;
    return !(annotation(cvr, ANNOTATION.replicaLost) === REPLICA_LOST_CONFIRM && !healthy(cvr));
  });
  for (const cvr of removed) {
    if (nameOf(cvr) !== `${String(volume)}-${String(poolOf(cvr))}`)
      problems.push(`replica ${nameOf(cvr)}, made by hand under another name, was dropped`);
  }
  if (removed.length > 1)
    problems.push(`${removed.length} replicas dropped at once: ${removed.map(nameOf).join(", ")}`);
  if (removed.length > 0) {
    const stay = observedReplicas.filter((cvr) => names.has(nameOf(cvr)));
    const unsafe = stay.filter((cvr) => !caughtUp(cvr)).map(nameOf);
    if (unsafe.length > 0)
      problems.push(
        `${removed.map(nameOf).join(", ")} dropped while ${unsafe.join(", ")} are not Healthy and caught up`,
      );
    if (stay.length < returned.length)
      problems.push(`${removed.map(nameOf).join(", ")} dropped while a new replica is being made`);
    const count = field(request, "parent", "spec", "replicaCount");
    if (typeof count === "number" && stay.length < count)
      problems.push(`${removed.map(nameOf).join(", ")} dropped, leaving ${stay.length} of ${count} replicas`);
  }
  const observedNames = new Set(observedReplicas.map(nameOf));
  for (const made of returned.filter((c) => !observedNames.has(nameOf(c)))) {
    if (returned.some((other) => other !== made && poolOf(other) === poolOf(made))) {
      problems.push(
        `new replica ${nameOf(made)} is on pool ${String(poolOf(made))}, which already holds one of the volume`,
      );
    }
  }
  return problems;
}

/** cvc-finalize: finalized only once no replica is observed (their data is gone from the pools). */
export function cvcFinalizeProblems(request: unknown, response: unknown): string[] {
  const replicas = observed(field(request, "children"), TYPE_KEY.cvr);
  return field(response, "finalized") === true && replicas.length > 0
    ? [`finalized while ${replicas.length} replica(s) are observed`]
    : [];
}

/** cv-status: the phase is one of the CStorVolume's, and no more replicas are healthy than are related. */
export function cvStatusProblems(request: unknown, response: unknown): string[] {
  const problems: string[] = [];
  const phase = field(response, "status", "phase");
  if (phase !== undefined && !(CV_PHASES as readonly unknown[]).includes(phase))
    problems.push(`phase ${JSON.stringify(phase)} is not a CStorVolume phase`);
  const healthy = field(response, "status", "healthyReplicas");
  const related = observed(field(request, "related"), TYPE_KEY.cvr).length;
  if (typeof healthy === "number" && healthy > related)
    problems.push(`${healthy} healthy replicas reported, ${related} related`);
  return problems;
}
