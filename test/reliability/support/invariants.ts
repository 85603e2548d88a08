// What every hook answer must respect, whatever the request was. Each check returns the broken promises as
// sentences (empty = fine), so a fuzz failure reads like a bug report.
import { ANNOTATION, POOL_REMOVAL_REQUESTED, TYPE_KEY } from "../../../api/constants.js";

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
 * node daemon confirms `zpool remove` before the claim goes), and every device of every observed CSPI keeps
 * its claim.
 */
export function compositeChildrenProblems(request: unknown, response: unknown): string[] {
  const problems: string[] = [];
  const observedCspis = observed(field(request, "children"), TYPE_KEY.cspi);
  const returned = new Map(children(response, "CStorPoolInstance").map((c) => [nameOf(c), c]));
  const claims = children(response, "BlockDeviceClaim");
  const claimed = new Set(claims.map((c) => field(c, "spec", "blockDeviceName")));
  const successorOf = new Map<unknown, string>();
  const removing = new Set(claims.filter((c) => typeof field(c, "metadata", "annotations", ANNOTATION.bdRemoval) === "string").map((c) => field(c, "spec", "blockDeviceName")));
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
      if (!claimed.has(device)) problems.push(`claim of device ${device} of observed CSPI ${name} is missing`);
    }
    const now = returned.get(name);
    if (!now) {
      if (!isMarked(cspi) && !isTerminating(cspi)) problems.push(`observed CSPI ${name} was dropped without being marked for removal`);
      continue;
    }
    const after = devicesByGroup(now) ?? [];
    const groups = field(cspi, "spec", "raidGroups") as unknown[];
    const holdsNoData = (g: number): boolean => field(groups[g], "isSpare") === true || field(groups[g], "isReadCache") === true;
    before?.forEach((devices, g) => {
      for (const device of devices) {
        if (after[g]?.includes(device) || (holdsNoData(g) && removing.has(device) && !after.flat().includes(device))) continue;
        const successor = successorOf.get(device);
        if (successor === undefined) problems.push(`device ${device} left raidGroups[${g}] of CSPI ${name} without a replacement`);
        else if (!after[g]?.includes(successor)) problems.push(`device ${device} of CSPI ${name} was replaced by ${successor}, which is not in its group`);
      }
    });
  }
  return problems;
}

/** cspc-finalize: nothing is removed while a pool holds volumes, and finalized only once nothing is left. */
export function finalizeCspcProblems(request: unknown, response: unknown): string[] {
  const problems = compositeChildrenProblems(request, response);
  const cspis = observed(field(request, "children"), TYPE_KEY.cspi);
  const claims = observed(field(request, "children"), TYPE_KEY.blockDeviceClaim);
  const holding = cspis.some((c) => Number(field(c, "status", "provisionedVolumes") ?? 0) > 0);
  const returned = new Set(children(response, "CStorPoolInstance").map(nameOf));
  if (holding) {
    for (const c of cspis) {
      if (!isTerminating(c) && !returned.has(nameOf(c))) problems.push(`CSPI ${nameOf(c)} was removed while a pool holds volumes`);
    }
  }
  if (field(response, "finalized") === true && (cspis.length > 0 || claims.length > 0)) {
    problems.push(`finalized with ${cspis.length} CSPI(s) and ${claims.length} claim(s) still observed`);
  }
  return problems;
}

/** cspi-sync: a live CSPI always gets its one pool Deployment back (omitting it would delete the pool pod). */
export function cspiSyncProblems(request: unknown, response: unknown): string[] {
  if (field(request, "finalizing") === true) return cspiFinalizeProblems(request, response);
  const attachments = field(response, "attachments");
  const deployments = Array.isArray(attachments) ? attachments.filter((a) => field(a, "kind") === "Deployment") : [];
  return deployments.length === 1 ? [] : [`answer has ${deployments.length} pool Deployments, want exactly 1`];
}

/** cspi-finalize: finalized only once Metacontroller observes no attachment. */
export function cspiFinalizeProblems(request: unknown, response: unknown): string[] {
  const attachments = field(request, "attachments");
  const remaining = isRecord(attachments)
    ? Object.values(attachments).reduce<number>((n, objects) => n + (isRecord(objects) ? Object.keys(objects).length : 0), 0)
    : 0;
  return field(response, "finalized") === true && remaining > 0 ? [`finalized while ${remaining} attachment(s) are observed`] : [];
}

export function customizeProblems(_request: unknown, response: unknown): string[] {
  const related = field(response, "relatedResources");
  return Array.isArray(related) && related.length > 0 ? [] : ["customize answer has no relatedResources"];
}
