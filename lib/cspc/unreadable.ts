// Objects of a request the hooks cannot use (stored under an older schema, say, with a field they need
// missing or of another type): named in the CSPC status, and the rest of the sync proceeds as far as it
// safely can (docs/adr/0016-read-tolerantly-what-the-api-server-stores-hold.md). A related object is not used, so whatever needs it waits. An
// unreadable child holds the CSPC's children as they are: what that CSPI or claim holds cannot be known, so
// nothing is created, changed or deleted until it is fixed, except that every device a CSPI lists keeps (or
// gets) its claim.
import { TYPE_KEY } from "../../api/constants.js";
import type { BlockDeviceClaim, KubeObject, ObjectMap, UnreadableObject } from "../../api/types.js";
import type { ConditionInput } from "../conditions.js";
import { ownedView } from "./build.js";

export const UNREADABLE_CONDITION = "ObjectsUnreadable";

export function hasUnreadableChild(unreadable: readonly UnreadableObject[] = []): boolean {
  return unreadable.some((u) => u.field === "children");
}

/**
 * Every observed child (the unreadable ones too) as observed, plus a claim for each device a CSPI lists that
 * has none: the answer while a child is unreadable.
 */
export function heldChildren(
  observed: ObjectMap,
  unreadable: readonly UnreadableObject[],
  claimFor: (device: string, cspi: string) => BlockDeviceClaim,
): KubeObject[] {
  const all = [
    ...Object.values(observed).flatMap((objects) => Object.values(objects ?? {})),
    ...unreadable.filter((u) => u.field === "children").map((u) => u.object),
  ];
  const out = all.map(ownedView);
  const claimed = new Set(
    all
      .filter((o) => o.kind === claimKind)
      .map((o) => (o.spec as { blockDeviceName?: unknown } | undefined)?.blockDeviceName),
  );
  for (const cspi of all.filter((o) => o.kind === cspiKind)) {
    for (const device of listedDevices(cspi)) {
      if (claimed.has(device)) continue;
      claimed.add(device);
      out.push(claimFor(device, cspi.metadata.name!));
    }
  }
  const rank = (o: KubeObject) => (o.kind === cspiKind ? 0 : 1);
  return out.sort(
    (a, b) => rank(a) - rank(b) || (a.metadata.name ?? "").localeCompare(b.metadata.name ?? ""),
  );
}

const cspiKind = TYPE_KEY.cspi.split(".")[0];
const claimKind = TYPE_KEY.blockDeviceClaim.split(".")[0];

/** The device names a CSPI lists, read defensively: it may be one the hooks could not read. */
function listedDevices(cspi: KubeObject): string[] {
  const groups = (cspi.spec as { raidGroups?: unknown } | undefined)?.raidGroups;
  if (!Array.isArray(groups)) return [];
  return groups.flatMap((group) => {
    const devices = (group as { blockDevices?: unknown } | null)?.blockDevices;
    if (!Array.isArray(devices)) return [];
    return devices
      .map((d) => (d as { blockDeviceName?: unknown } | null)?.blockDeviceName)
      .filter((n): n is string => typeof n === "string" && n !== "");
  });
}

export function unreadableCondition(
  unreadable: readonly UnreadableObject[] = [],
  join: (messages: string[]) => string,
): ConditionInput {
  const type = UNREADABLE_CONDITION;
  if (unreadable.length === 0)
    return { type, status: "False", reason: "AllObjectsRead", message: "every object of the sync was read" };
  const held = hasUnreadableChild(unreadable)
    ? ["until then no CStorPoolInstance or BlockDeviceClaim is created, changed or deleted"]
    : [];
  // A claim is both a child and a related object: named once, as the child.
  const childIds = new Set(
    unreadable
      .filter((u) => u.field === "children")
      .map((u) => `${u.object.kind}/${u.object.metadata.namespace}/${u.object.metadata.name}`),
  );
  const named = unreadable.filter(
    (u) =>
      u.field === "children" ||
      !childIds.has(`${u.object.kind}/${u.object.metadata.namespace}/${u.object.metadata.name}`),
  );
  const messages = named.map(({ field, object, problem }) => {
    const what = `${object.kind} ${object.metadata.namespace ? `${object.metadata.namespace}/` : ""}${object.metadata.name}`;
    const effect = field === "related" ? "it is not used, so what needs it waits" : "it is left as it is";
    return `${what}: ${problem}; ${effect}: fix it to match the installed CRD (kubectl edit)`;
  });
  return { type, status: "True", reason: "ObjectsSkipped", message: join([...messages, ...held]) };
}
