// Shape checks for Metacontroller hook requests. Anything that fails becomes a 400 naming what is wrong.
import type {
  CompositeSyncRequest,
  CustomizeRequest,
  DecoratorSyncRequest,
  KubeObject,
  ObjectMap,
} from "../api/types.js";
import { BadRequestError } from "./errors.js";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function requireObject(value: unknown, field: string, kind: string): KubeObject {
  if (!isRecord(value)) throw new BadRequestError(`request has no ${field}: Metacontroller always sends it`);
  if (value.kind !== kind) {
    throw new BadRequestError(
      `request ${field} is a ${JSON.stringify(value.kind ?? null)}, this hook serves ${kind}: check the controller's resource`,
    );
  }
  if (!isRecord(value.metadata) || typeof value.metadata.name !== "string" || value.metadata.name === "") {
    throw new BadRequestError(`request ${field} has no metadata.name`);
  }
  return value as unknown as KubeObject;
}

function objectMap(value: unknown, field: string): ObjectMap {
  if (value === undefined || value === null) return {};
  if (!isRecord(value)) throw new BadRequestError(`request ${field} must be an object of type keys`);
  for (const [typeKey, objects] of Object.entries(value)) {
    if (objects === null) continue;
    if (!isRecord(objects)) throw new BadRequestError(`request ${field}["${typeKey}"] must be an object keyed by namespace/name`);
    for (const [key, obj] of Object.entries(objects)) {
      if (!isRecord(obj) || !isRecord(obj.metadata)) {
        throw new BadRequestError(`request ${field}["${typeKey}"]["${key}"] is not a Kubernetes object`);
      }
    }
  }
  return value as ObjectMap;
}

function requireBody(body: unknown): Record<string, unknown> {
  if (!isRecord(body)) throw new BadRequestError("request body must be a JSON object");
  return body;
}

export function parseCompositeRequest(body: unknown, parentKind: string): CompositeSyncRequest {
  const b = requireBody(body);
  return {
    controller: (isRecord(b.controller) ? b.controller : {}) as KubeObject,
    parent: requireObject(b.parent, "parent", parentKind),
    children: objectMap(b.children, "children"),
    related: objectMap(b.related, "related"),
    finalizing: b.finalizing === true,
  };
}

export function parseDecoratorRequest(body: unknown, objectKind: string): DecoratorSyncRequest {
  const b = requireBody(body);
  return {
    controller: (isRecord(b.controller) ? b.controller : {}) as KubeObject,
    object: requireObject(b.object, "object", objectKind),
    attachments: objectMap(b.attachments, "attachments"),
    related: objectMap(b.related, "related"),
    finalizing: b.finalizing === true,
  };
}

export function parseCustomizeRequest(body: unknown, parentKind: string): CustomizeRequest {
  const b = requireBody(body);
  return {
    controller: (isRecord(b.controller) ? b.controller : {}) as KubeObject,
    parent: requireObject(b.parent, "parent", parentKind),
  };
}

/** The objects of one type in a Metacontroller object map, in a stable order (by namespace/name). */
export function objectsOf<T = KubeObject>(map: ObjectMap, typeKey: string): T[] {
  const objects = map[typeKey];
  if (!objects) return [];
  return Object.keys(objects)
    .sort()
    .map((key) => objects[key] as unknown as T);
}
