// JSON merge patch (RFC 7386) with one extension for lists of Kubernetes objects: the edit language of the
// test fixtures, where a case's request is a shared world plus a patch (test/fixtures/README.md).
//
// RFC 7386: a map in the patch merges into the map it lands on, key by key; null removes the key; anything
// else (a string, a number, a list) replaces what was there. The extension: where the patch puts a map on a
// list whose items are Kubernetes objects (the admission lookups' `objects`), the map is keyed by each
// object's identity, `Kind/namespace/name` (`Kind/name` if cluster-scoped): an entry merges into the object
// of that identity, null removes it, and a new identity inserts the object after the last one of its kind
// (at the end if there is none), in the order the patch lists them.

export type PatchValue = null | boolean | number | string | PatchValue[] | { [key: string]: PatchValue };
type PatchMap = { [key: string]: PatchValue };

const isMap = (value: unknown): value is PatchMap =>
  typeof value === "object" && value !== null && !Array.isArray(value);

interface KubeLike {
  kind: string;
  metadata: { name: string; namespace?: string };
}
type KubeMap = PatchMap & KubeLike;

export const isKubeObject = (value: unknown): value is KubeMap =>
  isMap(value) &&
  typeof value.kind === "string" &&
  isMap(value.metadata) &&
  typeof value.metadata.name === "string";

/** `Kind/namespace/name`, or `Kind/name` for a cluster-scoped object. */
export function identityOf(object: KubeLike): string {
  const { name, namespace } = object.metadata;
  return namespace ? `${object.kind}/${namespace}/${name}` : `${object.kind}/${name}`;
}

const clone = <T>(value: T): T => structuredClone(value);

/** The document `patch` makes of `target`; neither is modified. `where` names the spot in errors. */
export function applyMergePatch(target: unknown, patch: PatchValue, where = "$"): PatchValue {
  if (!isMap(patch)) return clone(patch);
  if (Array.isArray(target)) return patchObjectList(target, patch, where);
  const result: PatchMap = isMap(target) ? clone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value, `${where}.${key}`);
  }
  return result;
}

function patchObjectList(list: unknown[], patch: PatchMap, where: string): PatchValue[] {
  const items = list.map((item, index) => {
    if (!isKubeObject(item))
      throw new Error(
        `${where}[${index}]: a map patches only a list of Kubernetes objects (kind and metadata.name)`,
      );
    return clone<KubeMap>(item);
  });
  const indexOf = (identity: string) => items.findIndex((item) => identityOf(item) === identity);
  for (const [identity, value] of Object.entries(patch)) {
    const at = indexOf(identity);
    if (value === null) {
      if (at < 0) throw new Error(`${where}: cannot remove ${identity}, no such object in the list`);
      items.splice(at, 1);
    } else if (at >= 0) {
      items[at] = applyMergePatch(items[at], value, `${where}[${identity}]`) as KubeMap;
    } else {
      if (!isKubeObject(value) || identityOf(value) !== identity) {
        throw new Error(
          `${where}: the new object under ${identity} must be a whole object of that kind, namespace and name`,
        );
      }
      const lastOfKind = items.findLastIndex((item) => item.kind === value.kind);
      items.splice(lastOfKind < 0 ? items.length : lastOfKind + 1, 0, clone(value));
    }
  }
  return items;
}

/** Equal as JSON documents: map keys in any order, list items in order. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, i) => deepEqual(item, b[i]))
    );
  }
  if (isMap(a) && isMap(b)) {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length && keys.every((key) => key in b && deepEqual(a[key], b[key]))
    );
  }
  return a === b;
}

/**
 * The smallest patch that turns `base` into `target` under applyMergePatch (undefined if they are equal), its
 * map keys sorted. Throws where no patch can: the target holds a null (a merge patch reads it as "remove"),
 * or a list becomes a map (a map patched onto a list edits the list's objects).
 */
export function diffMergePatch(base: unknown, target: PatchValue): PatchValue | undefined {
  if (deepEqual(base, target)) return undefined;
  if (Array.isArray(base) && isMap(target)) throw new Error("a merge patch cannot turn a list into a map");
  if (isMap(base) && isMap(target)) {
    const patch: PatchMap = {};
    for (const key of [...new Set([...Object.keys(base), ...Object.keys(target)])].sort()) {
      if (!(key in target)) patch[key] = null;
      else {
        const entry = diffMergePatch(base[key], target[key]);
        if (entry !== undefined) patch[key] = entry;
      }
    }
    return patch;
  }
  if (Array.isArray(base) && Array.isArray(target)) {
    const keyed = diffObjectList(base, target);
    if (keyed !== undefined) return keyed;
  }
  if (containsNull(target)) throw new Error("a merge patch cannot write null: the target holds one");
  return clone(target);
}

/**
 * A keyed patch between two lists of Kubernetes objects (removals, then the target's objects in its order),
 * if it reproduces `target` exactly, order included.
 */
function diffObjectList(base: unknown[], target: PatchValue[]): PatchMap | undefined {
  if (base.length === 0 || !base.every(isKubeObject) || !target.every(isKubeObject)) return undefined;
  const before = new Map(base.map((object) => [identityOf(object), object]));
  const after = new Map(target.map((object) => [identityOf(object), object]));
  if (before.size !== base.length || after.size !== target.length) return undefined;
  const patch: PatchMap = {};
  for (const identity of before.keys()) if (!after.has(identity)) patch[identity] = null;
  for (const [identity, object] of after) {
    const entry = before.has(identity) ? diffMergePatch(before.get(identity), object) : clone(object);
    if (entry !== undefined) patch[identity] = entry;
  }
  return deepEqual(applyMergePatch(base, patch), target) ? patch : undefined;
}

function containsNull(value: unknown): boolean {
  if (value === null) return true;
  if (Array.isArray(value)) return value.some(containsNull);
  if (isMap(value)) return Object.values(value).some(containsNull);
  return false;
}
