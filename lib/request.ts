// Shape checks for Metacontroller hook requests. What Metacontroller could never send is a 400 naming what is
// wrong; a child or related object that does not fit its current schema is set aside in `unreadable`.
import type {
  BlockDevice,
  BlockDeviceClaim,
  CompositeSyncRequest,
  CSPC,
  CSPI,
  CustomizeRequest,
  CV,
  CVC,
  CVR,
  CVSnap,
  DecoratorSyncRequest,
  KubeObject,
  ObjectMap,
  UnreadableObject,
} from "../api/types.js";
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import { KIND, TYPE_KEY } from "../api/constants.js";
import {
  BlockDeviceClaimSchema,
  BlockDeviceSchema,
  CSPCSchema,
  CSPISchema,
  ObjectMetaSchema,
} from "../api/schema.js";
import { CVCSchema, CVRSchema, CVSchema, CVSnapSchema } from "../api/volume-schema.js";
import { BadRequestError } from "./errors.js";
import {
  PersistentVolumeClaimSchema,
  PersistentVolumeSchema,
  type PersistentVolume,
  type PersistentVolumeClaim,
} from "../api/core-schema.js";

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// Objects in a real request were stored by the API server, so they had the types of their schema when they
// were stored. The hooks rely on those types; an object without them is never a TypeError deep inside a hook:
// a parent is a 400 naming the field, a child or related object is left out and named in the status (its CRD
// may have changed since). Only types and required fields are checked here: enums and bounds are the rules'
// business, which judge them with messages about pools and devices.
const VALUE_CONSTRAINTS = new Set([
  "minItems",
  "maxItems",
  "minLength",
  "maxLength",
  "minimum",
  "maximum",
  "minProperties",
  "format",
  "x-kubernetes-validations",
]);

/** The schema with its value constraints removed: literal unions become their type, closed objects open. */
function typesOnly(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(typesOnly);
  if (!isRecord(schema)) return schema;
  const literals = Array.isArray(schema.anyOf) ? (schema.anyOf as unknown[]) : undefined;
  if (literals?.every((s) => isRecord(s) && "const" in s))
    return { type: typeof (literals[0] as { const: unknown }).const };
  if ("const" in schema) return { type: typeof schema.const };
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (VALUE_CONSTRAINTS.has(key) || (key === "additionalProperties" && value === false)) continue;
    out[key] =
      key === "properties" && isRecord(value)
        ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, typesOnly(v)]))
        : typesOnly(value);
  }
  return out;
}

/**
 * The schema with nothing required under `status`. The API server does not re-validate stored objects when a
 * CRD is upgraded, so a status written under an older schema may miss a field the current one requires (a
 * condition without `message`); the hooks read only a few status fields, each checked where it is read.
 */
function statusOptional(schema: unknown): unknown {
  // A list-map item keeps its keys (a condition's type): the API server never stores an item without them.
  const dropRequired = (node: unknown, keep: readonly string[] = []): unknown => {
    if (Array.isArray(node)) return node.map((item) => dropRequired(item));
    if (!isRecord(node)) return node;
    const keys = Array.isArray(node["x-kubernetes-list-map-keys"])
      ? (node["x-kubernetes-list-map-keys"] as string[])
      : [];
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === "required") {
        const kept = (value as string[]).filter((field) => keep.includes(field));
        if (kept.length > 0) out.required = kept;
      } else out[key] = dropRequired(value, key === "items" ? keys : []);
    }
    return out;
  };
  const root = schema as { properties: Record<string, unknown> };
  if (!root.properties.status) return schema;
  return { ...root, properties: { ...root.properties, status: dropRequired(root.properties.status) } };
}

const ajv = new Ajv({ strict: false, validateFormats: false });
const shapeOf = (schema: unknown): ValidateFunction =>
  ajv.compile(typesOnly(statusOptional(schema)) as object);
const SHAPES: Record<string, ValidateFunction> = {
  [KIND.cspc]: shapeOf(CSPCSchema),
  [KIND.cspi]: shapeOf(CSPISchema),
  [KIND.blockDevice]: shapeOf(BlockDeviceSchema),
  [KIND.blockDeviceClaim]: shapeOf(BlockDeviceClaimSchema),
  [KIND.cvc]: shapeOf(CVCSchema),
  [KIND.cv]: shapeOf(CVSchema),
  [KIND.cvr]: shapeOf(CVRSchema),
  [KIND.cvsnap]: shapeOf(CVSnapSchema),
  [KIND.persistentVolumeClaim]: shapeOf(PersistentVolumeClaimSchema),
  [KIND.persistentVolume]: shapeOf(PersistentVolumeSchema),
};
const anyObject = shapeOf({
  type: "object",
  required: ["apiVersion", "kind", "metadata"],
  properties: { apiVersion: { type: "string" }, metadata: ObjectMetaSchema },
});
const metadataOnly = shapeOf({ type: "object", properties: { metadata: ObjectMetaSchema } });

/** "/spec/pools/0/raidGroups" → "spec.pools[0].raidGroups" */
function fieldOf(error: ErrorObject): string {
  const path = error.instancePath
    .split("/")
    .slice(1)
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
    .reduce((out, part) => (/^\d+$/.test(part) ? `${out}[${part}]` : out ? `${out}.${part}` : part), "");
  const missing =
    error.keyword === "required"
      ? String((error.params as { missingProperty: unknown }).missingProperty)
      : "";
  return [path, missing].filter(Boolean).join(".") || "the object";
}

interface ShapeProblem {
  /** "spec.hostName is missing" */
  text: string;
  /** In spec or status, which the object's CRD governs (and an upgrade may change); else in what every object has. */
  underCrd: boolean;
}

/** What makes the object unusable to the hooks, or undefined if nothing does. */
function shapeProblem(
  obj: Record<string, unknown>,
  kind: string,
  validate = SHAPES[kind] ?? anyObject,
): ShapeProblem | undefined {
  if (validate(obj)) return undefined;
  const errors = validate.errors!;
  // Validation stops at the first failure; an int-or-string reports each type it tried, then the anyOf.
  const error = errors[errors.length - 1];
  const types = errors
    .filter((e) => e.keyword === "type" && e.instancePath === error.instancePath)
    .map((e) => String((e.params as { type: unknown }).type));
  const problem =
    error.keyword === "required"
      ? "is missing"
      : types.length > 0
        ? `must be of type ${types.join(" or ")}`
        : "is not valid";
  const field = fieldOf(error);
  return { text: `${field} ${problem}`, underCrd: kind in SHAPES && /^(spec|status)\b/.test(field) };
}

function requireShape(
  obj: Record<string, unknown>,
  kind: string,
  where: () => string,
  validate?: ValidateFunction,
): void {
  const refusal = shapeRefusal(obj, kind, where, validate);
  if (refusal) throw refusal;
}

function shapeRefusal(
  obj: Record<string, unknown>,
  kind: string,
  where: () => string,
  validate?: ValidateFunction,
): BadRequestError | undefined {
  const problem = shapeProblem(obj, kind, validate);
  if (!problem) return undefined;
  const why = problem.underCrd
    ? "the hook cannot act on it: fix the object"
    : "the API server never stores such an object";
  return new BadRequestError(`request ${where()} (${kind}): ${problem.text}; ${why}`);
}

/** What a JSON value is, for a message that says why it is not what was expected. */
export function jsonKind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

/** The request's parent or object: an object of `kind` with a name; its shape is checked by the caller. */
function requireNamed(value: unknown, field: string, kind: string): Named {
  if (value === undefined || value === null)
    throw new BadRequestError(`request has no ${field}: Metacontroller always sends it`);
  if (!isRecord(value))
    throw new BadRequestError(`request ${field} is ${jsonKind(value)}; it must be an object (the ${kind})`);
  if (value.kind !== kind) {
    throw new BadRequestError(
      `request ${field} is a ${quote(value.kind)}, this hook serves ${kind}: check the controller's resource`,
    );
  }
  if (!isNamed(value)) throw new BadRequestError(`request ${field} has no metadata.name`);
  return value;
}

type Named = Record<string, unknown> & { metadata: Record<string, unknown> & { name: string } };

function isNamed(value: Record<string, unknown>): value is Named {
  return isRecord(value.metadata) && typeof value.metadata.name === "string" && value.metadata.name !== "";
}

function requireObject(value: unknown, field: string, kind: string): KubeObject {
  const named = requireNamed(value, field, kind);
  requireShape(named, kind, () => field);
  return requireKubeObject(named, kind, () => field);
}

const objectMeta = TypeCompiler.Compile(ObjectMetaSchema);

/** What every object of a request has, of the types KubeObject says. */
export function isKubeObject(value: Record<string, unknown>): value is KubeObject {
  return (
    typeof value.apiVersion === "string" && typeof value.kind === "string" && objectMeta.Check(value.metadata)
  );
}

/** The object, once its apiVersion, kind and metadata are of their types; else a 400 naming the field Ajv finds. */
function requireKubeObject(value: Record<string, unknown>, kind: string, where: () => string): KubeObject {
  if (isKubeObject(value)) return value;
  throw (
    shapeRefusal(value, kind, where, anyObject) ??
    new BadRequestError(`request ${where()} is not a Kubernetes object (apiVersion, kind and metadata)`)
  );
}

/** The kind of a Metacontroller type key: "CStorPoolInstance.openebs.io/v1alpha1" → "CStorPoolInstance". */
function kindOfTypeKey(typeKey: string): string {
  return typeKey.split(".")[0];
}

/**
 * An object map of the request. `ownNamespace`: the map holds a namespaced parent's own children, which are in
 * its namespace (owner references never cross namespaces), so the hooks may know them by name alone.
 */
function objectMap(
  value: unknown,
  field: UnreadableObject["field"],
  unreadable: UnreadableObject[],
  ownNamespace?: string,
): ObjectMap {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) throw new BadRequestError(`request ${field} must be an object of type keys`);
  const skipped = new Map<string, Set<string>>();
  for (const [typeKey, objects] of Object.entries(value)) {
    if (objects === null) continue;
    if (!isRecord(objects))
      throw new BadRequestError(`request ${field}["${typeKey}"] must be an object keyed by namespace/name`);
    const kind = kindOfTypeKey(typeKey);
    // Two entries for one object would let one silently shadow the other. Entries keyed by their own
    // namespace/name, as Metacontroller keys them, cannot collide with each other, so ids are collected only
    // from the first entry keyed otherwise: a request of 1,000 pools has thousands of entries.
    let names: Map<string, string> | undefined;
    const keys = Object.keys(objects);
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const obj = objects[key];
      // Built only for an error: a valid request (the usual case) never needs it.
      const where = (): string => `${field}["${typeKey}"]["${key}"]`;
      const entry = requireEntry(obj, typeKey, where);
      const problem = unreadableProblem(entry, kind, where);
      if (problem) {
        unreadable.push({ field, typeKey, object: requireKubeObject(entry, kind, where), problem });
        if (!skipped.has(typeKey)) skipped.set(typeKey, new Set());
        skipped.get(typeKey)!.add(key);
      }
      const namespace = entry.metadata.namespace;
      if (ownNamespace !== undefined) requireOwnNamespace(namespace, ownNamespace, where);
      if (!names && isOwnKey(key, entry.metadata.namespace, entry.metadata.name)) continue;
      names ??= new Map(keys.slice(0, i).map((k) => [k, k]));
      const id = `${typeof namespace === "string" ? namespace : ""}/${entry.metadata.name}`;
      const other = names.get(id);
      if (other !== undefined)
        throw new BadRequestError(
          `request ${field}["${typeKey}"] lists ${id} twice, under "${other}" and "${key}"`,
        );
      names.set(id, key);
    }
  }
  return skipped.size === 0 ? (value as ObjectMap) : withoutEntries(value as ObjectMap, skipped);
}

/** The map without the entries skipped as unreadable, by type key. */
function withoutEntries(map: ObjectMap, skipped: ReadonlyMap<string, ReadonlySet<string>>): ObjectMap {
  return Object.fromEntries<ObjectMap[string]>(
    Object.entries(map).map(([typeKey, objects]) => [
      typeKey,
      objects &&
        Object.fromEntries(Object.entries(objects).filter(([key]) => !skipped.get(typeKey)?.has(key))),
    ]),
  );
}

/** A child's namespace, when it says one, is its parent's. */
function requireOwnNamespace(namespace: unknown, ownNamespace: string, where: () => string): void {
  if (namespace === undefined || namespace === ownNamespace) return;
  throw new BadRequestError(
    `request ${where()} is in namespace ${quote(namespace)}, not its owner's ${ownNamespace}: Metacontroller sends only an object's own children`,
  );
}

/** An entry of an object map: an object with a name, of the kind its type key says; anything else is a 400. */
function requireEntry(
  obj: unknown,
  typeKey: string,
  where: () => string,
): Record<string, unknown> & { metadata: Record<string, unknown> & { name: string } } {
  if (!isRecord(obj) || !isRecord(obj.metadata))
    throw new BadRequestError(`request ${where()} is not a Kubernetes object`);
  if (typeof obj.metadata.name !== "string" || obj.metadata.name === "")
    throw new BadRequestError(`request ${where()} has no metadata.name`);
  // Children are returned as observed where nothing changes, so a child without its kind would come back without one.
  if (obj.kind !== kindOfTypeKey(typeKey))
    throw new BadRequestError(`request ${where()} is a ${quote(obj.kind)} listed under ${typeKey}`);
  return obj as Record<string, unknown> & { metadata: Record<string, unknown> & { name: string } };
}

/**
 * Why an entry the API server may have stored (under an older schema, say) cannot be used; the rest of the
 * request still is (docs/adr/0016-read-tolerantly-what-the-api-server-stores-hold.md). A problem outside
 * spec and status, or a null (the API server drops or refuses them), was never stored so: a 400.
 */
function unreadableProblem(
  obj: Record<string, unknown>,
  kind: string,
  where: () => string,
): string | undefined {
  const problem = shapeProblem(obj, kind);
  if (problem && (!problem.underCrd || holdsNull(obj))) requireShape(obj, kind, where);
  return problem?.text;
}

function holdsNull(value: unknown): boolean {
  if (value === null) return true;
  if (typeof value !== "object") return false;
  return Object.values(value).some(holdsNull);
}

/** key === `${namespace ?? ""}/${name}`, without building that string. */
function isOwnKey(key: string, namespace: unknown, name: string): boolean {
  const ns = namespace === undefined || namespace === null ? "" : namespace;
  if (typeof ns !== "string") return false;
  return (
    key.length === ns.length + 1 + name.length &&
    key.charCodeAt(ns.length) === 47 &&
    key.startsWith(ns) &&
    key.endsWith(name)
  );
}

/** A value for an error message: quoted, and cut short, since the value may be anything the client sent. */
function quote(value: unknown): string {
  const text = JSON.stringify(value ?? null) ?? "null";
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

function namespaceOf(owner: unknown): string | undefined {
  const namespace = (owner as KubeObject).metadata.namespace;
  return typeof namespace === "string" ? namespace : undefined;
}

function requireBody(body: unknown): Record<string, unknown> {
  if (!isRecord(body))
    throw new BadRequestError(
      `request body is ${jsonKind(body)}; it must be a JSON object (a Metacontroller hook request)`,
    );
  return body;
}

/**
 * The kinds a hook acts on, and the type a parent or object of that kind has once it passed its schema check
 * (requireObject). Only status fields are not required: a status written by an older release is still read.
 */
interface CheckedKinds {
  [KIND.cspc]: CSPC;
  [KIND.cspi]: CSPI;
  [KIND.cvc]: CVC;
  [KIND.cv]: CV;
}

export function parseCompositeRequest<K extends keyof CheckedKinds>(
  body: unknown,
  parentKind: K,
): CompositeSyncRequest<CheckedKinds[K]> {
  const b = requireBody(body);
  const unreadable: UnreadableObject[] = [];
  return {
    controller: (isRecord(b.controller) ? b.controller : {}) as KubeObject,
    parent: requireObject(b.parent, "parent", parentKind) as CheckedKinds[K],
    children: objectMap(b.children, "children", unreadable, namespaceOf(b.parent)),
    related: objectMap(b.related, "related", unreadable),
    finalizing: b.finalizing === true,
    unreadable,
  };
}

export function parseDecoratorRequest<K extends keyof CheckedKinds>(
  body: unknown,
  objectKind: K,
): DecoratorSyncRequest<CheckedKinds[K]> {
  const b = requireBody(body);
  const unreadable: UnreadableObject[] = [];
  return {
    controller: (isRecord(b.controller) ? b.controller : {}) as KubeObject,
    object: requireObject(b.object, "object", objectKind) as CheckedKinds[K],
    attachments: objectMap(b.attachments, "attachments", unreadable, namespaceOf(b.object)),
    related: objectMap(b.related, "related", unreadable),
    finalizing: b.finalizing === true,
    unreadable,
  };
}

export function parseCustomizeRequest(body: unknown, parentKind: string): CustomizeRequest {
  const b = requireBody(body);
  return {
    controller: (isRecord(b.controller) ? b.controller : {}) as KubeObject,
    // Customize reads the parent's metadata only, so only that has to be well formed.
    parent: requireParentMetadata(b.parent, parentKind),
  };
}

/** The type keys whose objects objectMap checks against their schema's types (SHAPES), and those types. */
export interface CheckedTypeKeys {
  [TYPE_KEY.cspc]: CSPC;
  [TYPE_KEY.cspi]: CSPI;
  [TYPE_KEY.cvc]: CVC;
  [TYPE_KEY.cv]: CV;
  [TYPE_KEY.cvr]: CVR;
  [TYPE_KEY.cvsnap]: CVSnap;
  [TYPE_KEY.blockDevice]: BlockDevice;
  [TYPE_KEY.blockDeviceClaim]: BlockDeviceClaim;
  [TYPE_KEY.persistentVolumeClaim]: PersistentVolumeClaim;
  [TYPE_KEY.persistentVolume]: PersistentVolume;
}

/** Why an object is not of its schema's types as the hooks read it (for the CLI's files), or undefined. */
export function readProblem(obj: KubeObject): string | undefined {
  return shapeProblem(obj, obj.kind)?.text;
}

/** The object is of the types its type key stands for, as objectMap keeps it in a request. */
export function isReadableAs<K extends keyof CheckedTypeKeys>(
  obj: KubeObject,
  typeKey: K,
): obj is KubeObject & CheckedTypeKeys[K] {
  return obj.kind === kindOfTypeKey(typeKey) && readProblem(obj) === undefined;
}

function requireParentMetadata(value: unknown, kind: string): CustomizeRequest["parent"] {
  const parent = requireNamed(value, "parent", kind);
  const metadata = parent.metadata;
  if (objectMeta.Check(metadata)) return { ...parent, kind, metadata };
  throw (
    shapeRefusal(parent, kind, () => "parent", metadataOnly) ??
    new BadRequestError("request parent.metadata is not an ObjectMeta")
  );
}

/** The objects of one type in a Metacontroller object map, in a stable order (by namespace/name). */
export function objectsOf<K extends keyof CheckedTypeKeys>(map: ObjectMap, typeKey: K): CheckedTypeKeys[K][];
export function objectsOf(map: ObjectMap, typeKey: string): KubeObject[];
export function objectsOf(map: ObjectMap, typeKey: string): KubeObject[] {
  const objects = map[typeKey];
  if (!objects) return [];
  // Typed by the overload above: objectMap set aside every object of a checked type key without its types.
  return Object.keys(objects)
    .sort()
    .map((key) => objects[key]);
}
